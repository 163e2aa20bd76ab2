"""MLflow names of a monitored period's metrics: numbered chart sections, headline and alert first, p-values last.

The sections and the names of the test kinds' metrics are declared by the kinds' registry entries
(:data:`metrics_core.monitoring.KINDS`); this module adds the period's own metrics and the rules.

The MLflow UI groups a run's charts by the text before the last "/" of a metric key and shows the
sections in sorted order (then the unprefixed "Model metrics" section). The period result keeps its
semantic keys (``alert``, ``perf/f1_macro``, ``p_adj/<test>``); only the logged keys are renamed, at
logging time (:func:`mlflow_metrics`), and read back with :func:`semantic_metrics`. A class name in a
key is replaced by its MLflow key first (:func:`class_keyed`, :mod:`tasks.store.keys`).
"""

from __future__ import annotations

from metrics_core.monitoring.kinds import COUNTS, HEADLINE, KINDS, OTHER, PERFORMANCE, PREVALENCE
from tasks.store.keys import class_key, class_keys, safe_key

#: Kept as they are: E's estimated performance (``estimated/<key>``), a labelled sample's estimates
#: (``sample/<key>``) and the adjusted p-values, whose lowercase prefixes sort after every numbered
#: section, so p-values come last.
KEPT = ("estimated/", "sample/")
P_VALUES = "p-values adjusted"
#: The summary of the per-segment tests (segments tested and alerting, each kind's worst segment).
SEGMENTS = "9 segments"

#: The period's own metrics (the test kinds' come from their registry entries).
_PERIOD = {
    "alert": f"{HEADLINE}/alert",
    "n_alert_reasons": f"{HEADLINE}/alert reasons",
    "n_rows": f"{COUNTS}/rows",
    "n_rows_reference": f"{COUNTS}/rows in reference",
    "n_tests": f"{COUNTS}/tests",
}
_PERIOD_PREFIXES = (("perf/", f"{PERFORMANCE}/"), ("p_adj/", f"{P_VALUES}/"), ("segments/", f"{SEGMENTS}/"),
                    # the label-lag estimate's share of each class among the labels, beside the predictions'
                    ("prevalence_estimated/", f"{PREVALENCE}/estimated "))


def fixed() -> dict[str, str]:
    """Semantic key -> logged name of the metrics logged once a period: the period's own and
    those the registered test kinds declare (:attr:`metrics_core.monitoring.Kind.logged`)."""
    kinds = {m.key: m.name for kind in KINDS.values() for m in kind.logged if not m.per_class}
    return {**_PERIOD, **kinds}


def prefixes() -> tuple[tuple[str, str], ...]:
    """(semantic prefix, logged prefix) of the metrics logged once per class or per metric."""
    kinds = tuple((m.key, m.name) for kind in KINDS.values() for m in kind.logged if m.per_class)
    return (*dict.fromkeys(kinds), *_PERIOD_PREFIXES)


def series_keys() -> tuple[str, ...]:
    """Semantic keys (or prefixes) of the parent run's time series, besides the headline metric's:
    the row counts, the alert, and what the test kinds mark as series."""
    return ("n_rows", "alert", *dict.fromkeys(m.key for kind in KINDS.values() for m in kind.logged if m.series))


HEADLINE_SUFFIXES = ("", "_ci_low", "_ci_high", "_floor", "_reference")


def mlflow_key(key: str, headline: str | None = None) -> str:
    """The logged name of the semantic metric ``key`` (``headline``: the period's headline metric).

    >>> mlflow_key("alert"), mlflow_key("p_adj/score_tea"), mlflow_key("f1_macro_ci_low", "f1_macro")
    ('1 headline and alert/alert', 'p-values adjusted/score_tea', '1 headline and alert/f1_macro_ci_low')
    >>> mlflow_key("estimated/f1_macro"), mlflow_key("calibration/ece"), mlflow_key("ece")
    ('estimated/f1_macro', '8 calibration/ece', '7 other/ece')
    >>> mlflow_key("segments/score_worst_effect")
    '9 segments/score_worst_effect'

    """
    return _mlflow_key(key, headline, fixed(), prefixes())


def _mlflow_key(key: str, headline: str | None, names: dict, pairs: tuple) -> str:
    if key in names:
        return names[key]
    if headline and key in {headline + s for s in HEADLINE_SUFFIXES}:
        return f"{HEADLINE}/{key}"
    if key.startswith(KEPT):
        return key
    for semantic, logged in pairs:
        if key.startswith(semantic):
            return logged + key[len(semantic):].replace("/", "_")
    return f"8 {key}" if "/" in key else f"{OTHER}/{key}"


def semantic_key(name: str) -> str:
    """The semantic key of a logged name (the inverse of :func:`mlflow_key`; names logged before
    this naming, and unknown ones, come back unchanged).

    >>> [semantic_key(mlflow_key(k, "f1")) for k in ("alert", "f1_floor", "perf/f1", "ece", "a/b", "segments/tested")]
    ['alert', 'f1_floor', 'perf/f1', 'ece', 'a/b', 'segments/tested']
    >>> semantic_key(safe_key(mlflow_key("max_feature_shift")))  # as the store writes it: "(" and ")" become "_"
    'max_feature_shift'
    """
    return _semantic_key(name, *_semantic_tables())


def _semantic_tables() -> tuple[dict, list]:
    """The logged names of the fixed metrics back to their keys, and the prefix pairs longest logged
    prefix first ("shift labelled " before "shift "): built once per call of the public functions.
    A name is found as logged and as the store writes it (:func:`safe_key`)."""
    names = fixed()
    back = {safe_key(v): k for k, v in names.items()} | {v: k for k, v in names.items()}
    return back, sorted(prefixes(), key=lambda pair: -len(pair[1]))


def _semantic_key(name: str, back: dict, pairs: list) -> str:
    if name in back:
        return back[name]
    for semantic, logged in pairs:
        if name.startswith(logged):
            return semantic + name[len(logged):]
    for section in (HEADLINE, OTHER):
        if name.startswith(section + "/"):
            return name[len(section) + 1:]
    return name[2:] if name.startswith("8 ") else name


def mlflow_metrics(metrics: dict, headline: str | None = None) -> dict:
    """``metrics`` under their logged names."""
    names, pairs = fixed(), prefixes()
    return {_mlflow_key(k, headline, names, pairs): v for k, v in metrics.items()}


def semantic_metrics(metrics: dict) -> dict:
    """Logged metrics (of any period run, old or new) under their semantic keys."""
    back, pairs = _semantic_tables()
    return {_semantic_key(k, back, pairs): v for k, v in metrics.items()}


def _class_prefixes() -> tuple[tuple[str, str], ...]:
    """(semantic prefix, logged prefix) of every key that ends in a class name: the kinds' metrics
    per class, and the adjusted p-value of a test of one class (``p_adj/<kind>:<class>``, logged
    ``p-values adjusted/<kind>_<class>``)."""
    kinds = tuple((m.key, m.name) for kind in KINDS.values() for m in kind.logged if m.per_class)
    return (*dict.fromkeys(kinds), *((f"p_adj/{k}:", f"{P_VALUES}/{k}_") for k in KINDS), *_ESTIMATE_CLASSES)


#: Estimates per class outside the kinds: the label-lag share of each class among the labels (its
#: interval's ends end in ``_ci_low``/``_ci_high`` after the class), a labelled sample's shares and
#: the rows to label next per stratum (a predicted class).
_ESTIMATE_CLASSES = (("prevalence_estimated/", f"{PREVALENCE}/estimated "),
                     ("sample/prevalence_label/", "sample/prevalence_label/"), ("sample/next_rows/", "sample/next_rows/"))
_SUFFIXED = ("prevalence_estimated/",)


#: Ends of a per-class key after its class name: an estimate's interval (``<class>_ci_low``).
_CLASS_SUFFIXES = ("_ci_low", "_ci_high")


def _split(key: str) -> tuple[str, str, str, str] | None:
    """(semantic prefix as keyed, logged prefix, class name, suffix) of a per-class key, else None."""
    for semantic, logged in _class_prefixes():
        if key.startswith(semantic):
            cls = key[len(semantic):]
            end = next((e for e in _CLASS_SUFFIXES if semantic in _SUFFIXED and cls.endswith(e)), "")
            return semantic.replace(":", "_"), logged, cls[:len(cls) - len(end)], end
    return None


def _reads_as_another(logged: str, key: str) -> bool:
    """Whether ``logged + key`` starts like a longer per-class name or is another metric's name
    (``5 prices/relative shift`` + ``labelled x`` reads as the labelled shift of ``x``)."""
    name = logged + key
    longer = any(other != logged and other.startswith(logged) and name.startswith(other)
                 for _, other in _class_prefixes())
    return longer or name in set(fixed().values()) or name in {f"{P_VALUES}/{k}" for k in KINDS}


def class_keyed(metrics: dict) -> tuple[dict, dict]:
    """A period's semantic metrics with each class name replaced by its MLflow key, and the map
    {key: class name} of the keys that differ from their name.

    A class's key is :func:`tasks.store.keys.class_key` of its name, the same in every period;
    where the logged name would read as another metric's (:func:`_reads_as_another`), the escaped
    key (``_`` first, with the suffix) instead. The colon of a test key (``p_adj/score:tea``) becomes
    ``_`` (Windows refuses it). Other keys go through :func:`tasks.store.keys.safe_key`. Raises
    ValueError naming two metrics that would still share a key (only a clash of hashes could).

    >>> keyed, renamed = class_keyed({"prevalence_label/tea/coffee": 0.2, "prevalence_label/面包": 0.3,
    ...                               "p_adj/score:tea/coffee": 0.5, "alert": 0.0})
    >>> list(keyed)
    ['prevalence_label/tea_coffee 13b516', 'prevalence_label/面包', 'p_adj/score_tea_coffee 13b516', 'alert']
    >>> renamed
    {'tea_coffee 13b516': 'tea/coffee'}
    """
    parts = {k: _split(k) for k in metrics}
    keys = class_keys(p[2] for p in parts.values() if p is not None)
    out, renamed, source = {}, {}, {}
    for k, v in metrics.items():
        if parts[k] is None:
            name = safe_key(k)
        else:
            semantic, logged, cls, end = parts[k]
            key = keys[cls]
            if _reads_as_another(logged, key):
                key = class_key(cls, escape=True)
            if key != cls:
                renamed[key] = cls
            name = semantic + key + end
        if name in out:
            raise ValueError(f"metrics {source[name]!r} and {k!r} would be logged under one MLflow key {name!r}.")
        out[name], source[name] = v, k
    return out, dict(sorted(renamed.items()))
