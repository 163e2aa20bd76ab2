"""MLflow names of a monitored period's metrics: numbered chart sections, headline and alert first, p-values last.

The sections and the names of the test kinds' metrics are declared by the kinds' registry entries
(:data:`metrics_core.monitoring.KINDS`); this module adds the period's own metrics and the rules.

The MLflow UI groups a run's charts by the text before the last "/" of a metric key and shows the
sections in sorted order (then the unprefixed "Model metrics" section). The period result keeps its
semantic keys (``alert``, ``perf/f1_macro``, ``p_adj/<test>``); only the logged keys are renamed, at
logging time (:func:`mlflow_metrics`), and read back with :func:`semantic_metrics`.
"""

from __future__ import annotations

from metrics_core.monitoring.kinds import COUNTS, HEADLINE, KINDS, OTHER, PERFORMANCE, PREVALENCE

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
    names = fixed()
    if key in names:
        return names[key]
    if headline and key in {headline + s for s in HEADLINE_SUFFIXES}:
        return f"{HEADLINE}/{key}"
    if key.startswith(KEPT):
        return key
    for semantic, logged in prefixes():
        if key.startswith(semantic):
            return logged + key[len(semantic):].replace("/", "_")
    return f"8 {key}" if "/" in key else f"{OTHER}/{key}"


def semantic_key(name: str) -> str:
    """The semantic key of a logged name (the inverse of :func:`mlflow_key`; names logged before
    this naming, and unknown ones, come back unchanged).

    >>> [semantic_key(mlflow_key(k, "f1")) for k in ("alert", "f1_floor", "perf/f1", "ece", "a/b", "segments/tested")]
    ['alert', 'f1_floor', 'perf/f1', 'ece', 'a/b', 'segments/tested']
    """
    back = {v: k for k, v in fixed().items()}
    if name in back:
        return back[name]
    for semantic, logged in sorted(prefixes(), key=lambda pair: -len(pair[1])):  # "shift labelled " before "shift "
        if name.startswith(logged):
            return semantic + name[len(logged):]
    for section in (HEADLINE, OTHER):
        if name.startswith(section + "/"):
            return name[len(section) + 1:]
    return name[2:] if name.startswith("8 ") else name


def mlflow_metrics(metrics: dict, headline: str | None = None) -> dict:
    """``metrics`` under their logged names."""
    return {mlflow_key(k, headline): v for k, v in metrics.items()}


def semantic_metrics(metrics: dict) -> dict:
    """Logged metrics (of any period run, old or new) under their semantic keys."""
    return {semantic_key(k): v for k, v in metrics.items()}
