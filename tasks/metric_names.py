"""MLflow names of a monitored period's metrics: numbered chart sections, headline and alert first, p-values last.

The MLflow UI groups a run's charts by the text before the last "/" of a metric key and shows the
sections in sorted order (then the unprefixed "Model metrics" section). The period result keeps its
semantic keys (``alert``, ``perf/f1_macro``, ``p_adj/<test>``); only the logged keys are renamed, at
logging time (:func:`mlflow_metrics`), and read back with :func:`semantic_metrics`.
"""

from __future__ import annotations

#: Chart sections in the order the UI shows them (digits sort before letters).
HEADLINE, PREVALENCE, PERFORMANCE, SCORES, PRICES, COUNTS, OTHER = (
    "1 headline and alert", "2 prevalence", "3 performance", "4 scores", "5 prices", "6 counts", "7 other")
#: Kept as they are: E's estimated performance (``estimated/<key>``) and the adjusted p-values,
#: whose lowercase prefixes sort after every numbered section, so p-values come last.
KEPT = ("estimated/",)
P_VALUES = "p-values adjusted"

FIXED = {
    "alert": f"{HEADLINE}/alert",
    "n_alert_reasons": f"{HEADLINE}/alert reasons",
    "new_class_rows": f"{HEADLINE}/rows of new classes",
    "max_abs_prevalence_change_pred": f"{PREVALENCE}/largest change predicted",
    "max_abs_prevalence_change_label": f"{PREVALENCE}/largest change labelled",
    "psi_class_mix_pred": f"{PREVALENCE}/class-mix PSI predicted",
    "psi_class_mix_label": f"{PREVALENCE}/class-mix PSI labelled",
    "max_score_wasserstein": f"{SCORES}/largest shift Wasserstein",
    "max_abs_price_shift": f"{PRICES}/largest relative shift",
    "max_abs_price_shift_label": f"{PRICES}/largest relative shift labelled",
    "max_abs_price_shift_cells": f"{PRICES}/largest relative shift misclassified",
    "max_calibration_change": f"{SCORES}/largest calibration change",
    "n_rows": f"{COUNTS}/rows",
    "n_rows_reference": f"{COUNTS}/rows in reference",
    "n_tests": f"{COUNTS}/tests",
}
PREFIXES = (
    ("prevalence_pred/", f"{PREVALENCE}/predicted "),
    ("prevalence_label/", f"{PREVALENCE}/labelled "),
    ("perf/", f"{PERFORMANCE}/"),
    ("score_wasserstein/", f"{SCORES}/Wasserstein "),
    ("score_psi/", f"{SCORES}/PSI "),
    ("price_median/", f"{PRICES}/median "),
    ("price_shift/", f"{PRICES}/relative shift "),
    ("price_label_shift/", f"{PRICES}/relative shift labelled "),
    ("price_false_positive_shift/", f"{PRICES}/relative shift false positives "),
    ("price_false_negative_shift/", f"{PRICES}/relative shift false negatives "),
    ("calibration_change/", f"{SCORES}/calibration change "),
    ("p_adj/", f"{P_VALUES}/"),
)
_BACK = {v: k for k, v in FIXED.items()}
HEADLINE_SUFFIXES = ("", "_ci_low", "_ci_high", "_floor", "_reference")


def mlflow_key(key: str, headline: str | None = None) -> str:
    """The logged name of the semantic metric ``key`` (``headline``: the period's headline metric).

    >>> mlflow_key("alert"), mlflow_key("p_adj/score_tea"), mlflow_key("f1_macro_ci_low", "f1_macro")
    ('1 headline and alert/alert', 'p-values adjusted/score_tea', '1 headline and alert/f1_macro_ci_low')
    >>> mlflow_key("estimated/f1_macro"), mlflow_key("calibration/ece"), mlflow_key("ece")
    ('estimated/f1_macro', '8 calibration/ece', '7 other/ece')
    """
    if key in FIXED:
        return FIXED[key]
    if headline and key in {headline + s for s in HEADLINE_SUFFIXES}:
        return f"{HEADLINE}/{key}"
    if key.startswith(KEPT):
        return key
    for semantic, logged in PREFIXES:
        if key.startswith(semantic):
            return logged + key[len(semantic):].replace("/", "_")
    return f"8 {key}" if "/" in key else f"{OTHER}/{key}"


def semantic_key(name: str) -> str:
    """The semantic key of a logged name (the inverse of :func:`mlflow_key`; names logged before
    this naming, and unknown ones, come back unchanged).

    >>> [semantic_key(mlflow_key(k, "f1")) for k in ("alert", "f1_floor", "perf/f1", "ece", "a/b", "n_rows")]
    ['alert', 'f1_floor', 'perf/f1', 'ece', 'a/b', 'n_rows']
    """
    if name in _BACK:
        return _BACK[name]
    for semantic, logged in sorted(PREFIXES, key=lambda pair: -len(pair[1])):  # "shift labelled " before "shift "
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
