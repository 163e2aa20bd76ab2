"""tasks.store.keys: class keys readable, unique in a set, the same whatever the set, accepted by MLflow."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, _validate_metric_name

from tasks.metric_names import _class_prefixes
from tasks.store import keys as K
from tasks.store.keys import CLASS_KEY_LIMIT, class_key, class_keys, safe_keys

LONG_A, LONG_B = "x" * 300 + "a", "x" * 300 + "b"
NAMES = ["面包", "牛奶", "啤酒", "café", "cafè", "cafe\u0301", "tea/coffee", "tea_coffee", "tea:coffee", LONG_A, LONG_B,
         "wine ", "wine", "batch 123456", "..", "", "a//b", "1/2"]
#: The longest logged name a class key is appended to (a kind's metric per class, or a test's p-value).
LONGEST_PREFIX = max(len(logged) for _, logged in _class_prefixes())


def _accepted(key: str) -> None:
    """MLflow's own check of a metric name, on the longest prefix a class key gets."""
    name = " " * LONGEST_PREFIX + key
    _validate_metric_name(name)
    assert len(name) <= MAX_ENTITY_KEY_LENGTH and "/" not in key and ":" not in key


def test_every_name_gets_its_own_readable_key():
    keys = class_keys(NAMES)
    assert len(set(keys.values())) == len(NAMES)
    for name in ("面包", "牛奶", "啤酒", "café", "cafè", "tea_coffee", "wine"):  # MLflow takes them as they are
        assert keys[name] == name
    assert keys["tea/coffee"].startswith("tea_coffee ") and keys["tea:coffee"].startswith("tea_coffee ")
    assert keys["cafe\u0301"].startswith("café ")  # NFC, then a suffix: it is not the same text as "café"
    assert keys[LONG_A][:-7] == keys[LONG_B][:-7] == "x" * (CLASS_KEY_LIMIT - 7) and keys[LONG_A] != keys[LONG_B]
    assert keys["wine "] != keys["wine"] and keys["batch 123456"].startswith("batch 123456 ")
    for key in keys.values():
        _accepted(key)


def test_a_key_depends_on_its_name_alone():
    """The parent's series stays one line per class whatever classes a period has."""
    alone = {n: class_keys([n])[n] for n in NAMES}
    assert class_keys(NAMES) == alone == class_keys(reversed(NAMES))
    assert class_key("tea/coffee") == class_key("tea/coffee") == class_keys(["tea/coffee", "x"])["tea/coffee"]


def test_clashing_suffixes_get_the_whole_hash(monkeypatch):
    """Names with one readable part ('a_b') whose short suffixes clash (1 digit here) get 64 digits."""
    monkeypatch.setattr(K, "DIGITS", 1)
    names = [f"a{c}b" for c in "/:&#@!?*+=%$^~|<>;,"]
    short = [class_key(n) for n in names]
    assert len(set(short)) < len(names)  # 19 names, 16 suffixes
    keys = class_keys(names)
    assert len(set(keys.values())) == len(names)
    clashed = {n for n, k in zip(names, short) if short.count(k) > 1}
    assert {n for n in names if len(keys[n]) == len("a_b ") + 64} == clashed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(codec="utf-8"), max_size=300), min_size=1, max_size=6))
def test_random_unicode_names_get_distinct_keys_mlflow_accepts(names):
    keys = class_keys(names)
    assert set(keys) == set(names) and len(set(keys.values())) == len(keys)
    for name, key in keys.items():
        _accepted(key)
        assert key == class_key(name)  # no 6-digit clash among so few names
        if K.plain(name):
            assert key == name
        else:
            readable, text = key[:-7], unicodedata.normalize("NFC", name).strip(" ")
            assert key[-7] == " " and key != name  # readable: the name's characters in place, "_" for the refused
            assert readable == "_" or all(a == b or a == "_" for a, b in zip(readable, text, strict=False))
            assert len(readable) <= max(len(text), 1)


def test_two_keys_made_one_are_refused():
    with pytest.raises(ValueError, match=r"metrics 'prevalence_label:wine' and 'prevalence_label_wine' .* one MLflow"):
        safe_keys({"prevalence_label:wine": 0.1, "prevalence_label_wine": 0.2}, "metrics")
    assert safe_keys({"a:b": 1, "面包": 2}, "params") == {"a_b": 1, "面包": 2}
