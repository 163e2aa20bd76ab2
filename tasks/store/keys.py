"""MLflow keys of class names: readable where MLflow allows, unique always, the same in every run.

A class name becomes part of a metric key (``2 prevalence/labelled <class key>``). MLflow 3 accepts
in a metric, param or tag key the characters of ``[/\\w.\\- ]`` (``\\w`` is Unicode: Chinese,
accented, Arabic letters and digits pass; a colon only off Windows), at most 250 of them, and no
path that ``posixpath.normpath`` would change (``mlflow/utils/validation.py``). Its UI groups a run's
charts by the text before the last ``/``, so a ``/`` inside a class name would open a chart section.

:func:`class_key` keeps a *plain* name as it is: one made of ``\\w . -`` and spaces only, in Unicode
NFC form, without spaces at its ends, at most :data:`CLASS_KEY_LIMIT` characters and not ending like
a suffix (a space and 6 or more hex digits). Any other name is *altered*: it keeps its readable
part (NFC, each character MLflow refuses, ``/`` among them, made ``_``, cut to the limit) and gets a
space and the first 6 hex digits of the SHA-256 of the name as suffix: ``tea/coffee`` ->
``tea_coffee 13b516``. The key depends on the name alone, so a class has the same key in every
period and the parent run's time series stays one line per class. Two plain names are two keys; a
plain name never ends like a suffix, so it is never the key of an altered one; two altered names
share a key only when their readable parts and 6 hex digits agree, and :func:`class_keys` then
gives those names 64 digits (their keys then depend on which names clashed, a clash of hashes
being the only case).

:func:`safe_key` makes any other key acceptable, and :func:`safe_keys` refuses two keys that it
would make one, rather than let MLflow keep one value and drop the other.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

#: The characters of a class key: MLflow's key characters on every OS, without the "/" of a chart section.
KEY_CHARACTER = re.compile(r"[\w.\- ]")
_PLAIN = re.compile(r"[\w.\- ]+")
_SUFFIX = re.compile(r" [0-9a-f]{6,64}$")
#: The longest class key: with the longest logged prefix (about 40 characters) a metric key stays
#: within MLflow's 250.
CLASS_KEY_LIMIT = 180
DIGITS, ALL_DIGITS = 6, 64
_BAD_KEY = re.compile(r"[^\w\-. /]")
#: The artifact of a run whose keys differ from their class names: {key: class name}, as JSON.
MAP_FILE = "class_keys.json"


def plain(name: str) -> bool:
    """Whether ``name`` is its own class key (see the module's docstring).

    >>> plain("面包"), plain("café"), plain("tea/coffee"), plain("batch 123456"), plain("wine ")
    (True, True, False, False, False)
    """
    return (len(name) <= CLASS_KEY_LIMIT and _PLAIN.fullmatch(name) is not None and name == name.strip()
            and name.strip(".") != "" and unicodedata.normalize("NFC", name) == name and not _SUFFIX.search(name))


def class_key(name: str, digits: int | None = None, escape: bool = False) -> str:
    """The MLflow key of class ``name``: the name when :func:`plain`, else its readable part and a
    suffix of ``digits`` hex digits of its SHA-256; ``escape`` (a key that would read as another
    metric's, see :func:`tasks.metric_names.class_keyed`) prefixes ``_`` and always adds the suffix.

    Parameters
    ----------
    name : str
        The class as text (:func:`metrics_core.monitoring.class_name`).
    digits : int, optional
        Hex digits of the suffix: :data:`DIGITS` (6) by default, 64 after a clash (:func:`class_keys`).
    escape : bool
        Give the altered form even to a plain name, behind a ``_``.

    Returns
    -------
    str
        At most :data:`CLASS_KEY_LIMIT` characters of ``[\\w.\\- ]``, never empty.

    Examples
    --------
    >>> class_key("面包"), class_key("tea_coffee"), class_key("tea/coffee"), class_key("cafe\\u0301")
    ('面包', 'tea_coffee', 'tea_coffee 13b516', 'café 81ef06')
    >>> len(class_key("x" * 301)), class_key("x" * 301)[-10:]
    (180, 'xxx e4c11e')
    """
    name = str(name)
    if plain(name) and not escape:
        return name
    text = "".join(ch if KEY_CHARACTER.fullmatch(ch) else "_" for ch in unicodedata.normalize("NFC", name)).strip()
    digits = digits or DIGITS
    suffix = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:digits]
    readable = (("_" if escape else "") + text)[:CLASS_KEY_LIMIT - digits - 1].rstrip() or "_"
    return f"{readable} {suffix}"


def class_keys(names: Iterable) -> dict[str, str]:
    """Each distinct name of ``names`` (as text) with its key (:func:`class_key`), all keys distinct:
    names whose 6-digit keys clash get 64 digits.

    >>> class_keys(["面包", "牛奶", "tea/coffee", "tea_coffee"])
    {'面包': '面包', '牛奶': '牛奶', 'tea/coffee': 'tea_coffee 13b516', 'tea_coffee': 'tea_coffee'}
    """
    texts = list(dict.fromkeys(str(n) for n in names))
    keys = {n: class_key(n) for n in texts}
    counts = Counter(keys.values())
    for n in [n for n in texts if counts[keys[n]] > 1]:
        keys[n] = class_key(n, ALL_DIGITS)
    if len(set(keys.values())) < len(keys):  # two names with one SHA-256: never seen
        clash = [n for n in texts if Counter(keys.values())[keys[n]] > 1]
        raise ValueError(f"class names {clash[:2]!r} get one MLflow key {keys[clash[0]]!r}; rename one of them.")
    return keys


def map_text(renamed: dict) -> str:
    """The text of :data:`MAP_FILE`: {key: class name}, sorted, names as written (not escaped).

    >>> print(map_text({"tea_coffee 13b516": "tea/coffee"}))
    {
      "tea_coffee 13b516": "tea/coffee"
    }
    """
    return json.dumps(dict(sorted(renamed.items())), ensure_ascii=False, indent=2)


def safe_key(name: str) -> str:
    """An MLflow metric/param key: characters other than letters and digits (Unicode ones too, as
    MLflow's ``\\w``), ``_ - . /`` and space become ``_`` (a colon too: Windows refuses it); cut at
    250 characters. Class names get their keys before this (:func:`class_keys`), so that two
    classes never share one.

    >>> safe_key("prevalence_label:wine & beer"), safe_key("2 prevalence/labelled 面包")
    ('prevalence_label_wine _ beer', '2 prevalence/labelled 面包')
    """
    return _BAD_KEY.sub("_", str(name))[:250]


def safe_keys(values: dict, what: str) -> dict:
    """``values`` under :func:`safe_key` of their keys; a ValueError naming both when two keys would
    become one (MLflow would keep one value and drop the other without a word)."""
    out: dict = {}
    for key, value in values.items():
        safe = safe_key(key)
        if safe in out:
            first = next(k for k in values if safe_key(k) == safe)
            raise ValueError(f"{what} {first!r} and {key!r} would be logged under one MLflow key {safe!r}; "
                             "nothing was logged for them.")
        out[safe] = value
    return out
