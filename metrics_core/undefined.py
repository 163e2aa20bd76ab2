"""Warnings of a report: undefined metrics (each nan metric, each average that skipped parts, and why).
Inputs that look misread (reversed scores, a threshold on another scale) are warned of in :mod:`metrics_core.misread`."""

from __future__ import annotations

import inspect
import math
import os
import warnings

import numpy as np

from metrics_core import formulas as f
from metrics_core.stats import BinaryStats, MulticlassStats, MultilabelStats

NO_ROWS = "no rows (the total count or weight is 0)"
NOT_PROBABILITIES = "scores outside [0, 1] are not probabilities"
ZERO_OVER_ZERO = "a 0/0 in its formula"
_SHOWN = 5  # class names listed in a reason before "..."

_CLASS_REASONS = {  # why a per-class (one-vs-rest) value is nan
    "precision": "no predicted rows",
    "recall": "no actual rows",
    "f1": "no actual or predicted rows",
    "fbeta": "no actual or predicted rows",
    "auroc": "one class only in its one-vs-rest table",
}
_ROW_REASONS = {  # why an example-based (per-row) multilabel value is undefined
    "jaccard": "empty true and predicted label sets",
    "precision": "empty predicted label set",
    "recall": "empty true label set",
    "f1": "empty true and predicted label sets",
}
_AVERAGES = {  # multiclass average key -> (per-class metric, weighted by support)
    **{f"{m}_{avg}": (m, avg == "weighted") for m in ("precision", "recall", "f1", "fbeta")
       for avg in ("macro", "weighted")},
    "balanced_accuracy": ("recall", False),
    "auroc_ovr_macro": ("auroc", False),
    "auroc_ovr_weighted": ("auroc", True),
}


class UndefinedMetricWarning(RuntimeWarning):
    """A report holds undefined (nan) metrics, or averages that skipped undefined classes or rows.

    Raised at most once per report call, like scikit-learn's ``UndefinedMetricWarning``, but naming
    every affected catalogue key with the reason in plain words. Undefined values are nan, never 0.

    Parameters
    ----------
    message : str
        The text shown to the user (one line per group of keys with the same reason).
    reasons : dict of str to str, optional
        Catalogue key -> reason, also available as the ``reasons`` attribute.

    Examples
    --------
    >>> w = UndefinedMetricWarning("precision: no predicted positives", {"precision": "no predicted positives"})
    >>> str(w), w.reasons["precision"]
    ('precision: no predicted positives', 'no predicted positives')
    """

    def __init__(self, message: str, reasons: dict[str, str] | None = None):
        super().__init__(message)
        self.reasons = dict(reasons or {})


# --------------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------------
def _is_nan(value) -> bool:
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def _names(labels, mask) -> str:
    """The labels where ``mask`` holds, quoted, at most ``_SHOWN`` of them."""
    chosen = [x.item() if hasattr(x, "item") else x for x in np.asarray(labels, dtype=object)[np.asarray(mask)]]
    # None: the negative class of a binary report whose rows held no negative label value.
    shown = ", ".join("the negative class" if x is None else repr(x) for x in chosen[:_SHOWN])
    return shown + (", ..." if len(chosen) > _SHOWN else "")


def _constant_reason(m: np.ndarray, labels) -> str:
    """Why MCC is nan: the labels, the predictions or both take one value (a marginal is constant)."""
    actual, predicted = m.sum(axis=1) > 0, m.sum(axis=0) > 0
    parts = []
    if actual.sum() <= 1:
        parts.append(f"constant labels (every row is {_names(labels, actual) or 'of no class'})")
    if predicted.sum() <= 1:
        parts.append(f"constant predictions (every row predicted {_names(labels, predicted) or 'no class'})")
    return " and ".join(parts) or "constant labels or predictions"


def _agreement_reason(m: np.ndarray, labels) -> str:
    """Why Cohen's kappa is nan: labels and predictions are all one class, so p_e = 1."""
    one = (m.sum(axis=1) + m.sum(axis=0)) > 0
    return f"labels and predictions are all {_names(labels, one)} (expected agreement p_e = 1)"


def _average_note(value: float, per_part: np.ndarray, reason: str, labels, noun: str,
                  support: np.ndarray | None = None) -> str | None:
    """The reason for an average that skipped nan parts (classes or labels), or None if none was skipped.

    For a support-weighted average only the parts with support > 0 count as skipped.
    """
    skipped = np.isnan(np.asarray(per_part, dtype=np.float64))
    if support is not None:
        skipped &= np.asarray(support) > 0
    k, total = int(skipped.sum()), skipped.size
    if not _is_nan(value):
        if k == 0:
            return None
        return f"averaged over {total - k} of {total} {noun}; {k} skipped ({reason}: {_names(labels, skipped)})"
    if k == total:
        return f"all {total} {noun} skipped ({reason})"
    return f"no {noun} left with a defined value and support > 0 ({k} skipped: {reason})"


def _nan_reasons(metrics: dict, table: dict, default: str, prefix: str = "") -> dict[str, str]:
    """Reason for every nan key that starts with ``prefix`` (and, without one, is not a weighted twin)."""
    out = {}
    for key, value in metrics.items():
        if not key.startswith(prefix) or (not prefix and key.startswith("weighted/")):
            continue
        if _is_nan(value):
            out[key] = table.get(key[len(prefix):], default)
    return out


# --------------------------------------------------------------------------------------------------
# per task
# --------------------------------------------------------------------------------------------------
_SCORE_KEYS = ("auroc", "auroc_error_bound", "average_precision", "auprc_trapezoid", "log_loss", "brier")


def _score_reasons(sc) -> dict[str, str]:
    """Reasons of the threshold-free binary keys (:data:`_SCORE_KEYS`) from exact or binned score counts."""
    pos, neg = float(np.sum(sc.pos)), float(np.sum(sc.neg))
    if pos + neg == 0:
        return dict.fromkeys(_SCORE_KEYS, NO_ROWS)
    one_class = f"only one class present (no {'negatives' if pos else 'positives'} among the scored rows)"
    losses = NOT_PROBABILITIES if getattr(sc, "losses", True) is not None else "binned counts without loss sums"
    return {"auroc": one_class, "auroc_error_bound": one_class,
            "average_precision": "no actual positives (tp + fn = 0)",
            "auprc_trapezoid": "no actual positives (tp + fn = 0)",
            "log_loss": losses, "brier": losses}


def _binary_reasons(metrics: dict, m, labels, scores=None, prefix: str = "") -> dict[str, str]:
    """Reasons for one binary confusion ``[[tn, fp], [fn, tp]]`` (the report's, or its weighted twin)."""
    m = np.asarray(m, dtype=np.float64)
    if m.sum() == 0:
        return _nan_reasons(metrics, {}, NO_ROWS, prefix)
    table = {
        "precision": "no predicted positives (tp + fp = 0)",
        "recall": "no actual positives (tp + fn = 0)",
        "fnr": "no actual positives (tp + fn = 0)",
        "specificity": "no actual negatives (tn + fp = 0)",
        "fpr": "no actual negatives (tn + fp = 0)",
        "npv": "no predicted negatives (tn + fn = 0)",
        "f1": "no actual or predicted positives (tp + fp + fn = 0)",
        "fbeta": "no actual or predicted positives (tp + fp + fn = 0)",
        "mcc": _constant_reason(m, labels),
        "cohen_kappa": _agreement_reason(m, labels),
    }
    # Only when one is undefined: the class totals are two passes over every distinct score.
    if scores is not None and any(_is_nan(metrics.get(prefix + key)) for key in _SCORE_KEYS):
        table.update(_score_reasons(scores))
    out = _nan_reasons(metrics, table, ZERO_OVER_ZERO, prefix)
    key = prefix + "balanced_accuracy"
    tn, fp, fn, tp = m.ravel()
    if key in metrics and not _is_nan(metrics[key]) and (tp + fn == 0 or tn + fp == 0):
        kept, lost = ("specificity", "recall: no actual positives") if tp + fn == 0 else \
            ("recall", "specificity: no actual negatives")
        out[key] = f"{kept} only ({lost})"
    return out


def _of_average_reason(metrics: dict, prefix: str, avg: str) -> str:
    """Why F of the averaged precision and recall is nan."""
    undefined = [f"{m}_{avg}" for m in ("precision", "recall") if _is_nan(metrics.get(f"{prefix}{m}_{avg}"))]
    if undefined:
        return f"{' and '.join(undefined)} undefined"
    return f"precision_{avg} and recall_{avg} are both 0"


def _multiclass_reasons(metrics: dict, m, labels, auroc=None, prefix: str = "") -> dict[str, str]:
    """Reasons for one multiclass confusion (the report's, or its weighted twin) and its per-class AUROC."""
    m = np.asarray(m, dtype=np.float64)
    if m.sum() == 0:
        return _nan_reasons(metrics, {}, NO_ROWS, prefix)
    single = "a single class (the one-vs-rest tables have no negatives)"
    table = {"mcc": _constant_reason(m, labels), "cohen_kappa": _agreement_reason(m, labels),
             "csmf_accuracy": single, "cccsmf_accuracy": single, "balanced_accuracy_micro": single,
             "f1_of_macro": _of_average_reason(metrics, prefix, "macro"),
             "fbeta_of_macro": _of_average_reason(metrics, prefix, "macro"),
             "fbeta_of_weighted": _of_average_reason(metrics, prefix, "weighted"),
             "auroc_error_bound": "every one-vs-rest table holds one class only"}
    out = _nan_reasons(metrics, table, ZERO_OVER_ZERO, prefix)
    per_class = dict(f.per_class(m))
    if auroc is not None:
        per_class["auroc"] = np.asarray(auroc, dtype=np.float64)
    for key, (name, weighted) in _AVERAGES.items():
        if prefix + key not in metrics or name not in per_class:
            continue
        note = _average_note(metrics[prefix + key], per_class[name], _CLASS_REASONS[name], labels, "classes",
                             per_class["support"] if weighted else None)
        if note:
            out[prefix + key] = note
    return out


def _multilabel_reasons(metrics: dict, stats: MultilabelStats) -> dict[str, str]:
    """Reasons for a multilabel report: pooled (micro) counts, per-label averages and per-row averages."""
    m = stats.label_confusion.astype(np.float64)
    if stats.n_rows == 0 or m.size == 0:
        return _nan_reasons(metrics, {}, NO_ROWS)
    table = {"precision_micro": "no predicted labels in any row (tp + fp = 0)",
             "recall_micro": "no true labels in any row (tp + fn = 0)",
             "f1_micro": "no true or predicted labels in any row (tp + fp + fn = 0)"}
    out = _nan_reasons(metrics, table, ZERO_OVER_ZERO)
    tn, fp, fn, tp = m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1]
    per_label = {"precision": f.ratio(tp, tp + fp), "recall": f.ratio(tp, tp + fn), "f1": f.fbeta(tp, fp, fn)}
    label_reasons = {"precision": "never predicted", "recall": "never true", "f1": "never true nor predicted"}
    for name, values in per_label.items():
        note = _average_note(metrics[f"{name}_macro"], values, label_reasons[name], stats.labels, "labels")
        if note:
            out[f"{name}_macro"] = note
    n = stats.n_rows
    for name, reason in _ROW_REASONS.items():
        skipped = int(metrics[f"n_undefined_samples_{name}"])
        if skipped == n:
            out[f"{name}_samples"] = f"all {n} rows skipped ({reason})"
        elif skipped:
            out[f"{name}_samples"] = f"averaged over {n - skipped} of {n} rows; {skipped} skipped ({reason})"
    return out


# --------------------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------------------
def undefined_reasons(report) -> dict[str, str]:
    """Catalogue key -> reason, for every undefined (nan) metric of a report and every average that
    skipped undefined classes, labels or rows.

    Reasons follow the definitions of ISO/IEC TS 4213:2022 (3.2.x, clause 6): a ratio is undefined
    when its denominator is 0, e.g. precision with no predicted positives (tp + fp = 0), AUROC with
    one class only, MCC with constant labels or predictions, Cohen's kappa when expected agreement
    is 1, log loss and Brier score with scores outside [0, 1]. Macro and weighted averages skip
    undefined classes (``n_undefined_<metric>`` counts them): they are listed with the number
    skipped even when the average itself is defined, as scikit-learn warns for ill-defined classes.
    Keys that a report leaves out because an input is missing (no scores: no ``auroc``) are never
    listed: only keys present in ``report.metrics`` are examined.

    Parameters
    ----------
    report : Report
        A finished binary, multiclass or multilabel report (its ``metrics``, ``stats``, ``per_class``).

    Returns
    -------
    dict of str to str
        Empty when every metric is defined and no average skipped anything.

    Examples
    --------
    >>> import warnings
    >>> from metrics_core.report import binary_report
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     r = binary_report([0, 0, 1], y_pred=[0, 0, 0])
    >>> undefined_reasons(r)["precision"]
    'no predicted positives (tp + fp = 0)'
    """
    s, metrics = report.stats, report.metrics
    if isinstance(s, BinaryStats):
        labels = s.confusion.labels
        out = _binary_reasons(metrics, s.confusion.matrix, labels, s.scores)
        if s.weighted_confusion is not None:
            out.update(_binary_reasons(metrics, s.weighted_confusion.matrix, labels, prefix="weighted/"))
        return out
    if isinstance(s, MulticlassStats):
        labels = s.confusion.labels
        auroc = report.per_class["auroc"].to_numpy() if s.scores is not None else None
        out = _multiclass_reasons(metrics, s.confusion.matrix, labels, auroc)
        if "log_loss" in metrics and _is_nan(metrics["log_loss"]):
            out["log_loss"] = NO_ROWS if not s.log_loss.weight else NOT_PROBABILITIES
        if s.weighted_confusion is not None:
            out.update(_multiclass_reasons(metrics, s.weighted_confusion.matrix, labels, prefix="weighted/"))
        return out
    if isinstance(s, MultilabelStats):
        return _multilabel_reasons(metrics, s)
    return _nan_reasons(metrics, {}, ZERO_OVER_ZERO)


def _message(task: str, reasons: dict[str, str], metrics: dict) -> str:
    """One line per group of keys with the same reason, undefined keys first."""
    undefined = [k for k in reasons if _is_nan(metrics.get(k))]
    skipping = [k for k in reasons if k not in undefined]
    head = []
    if undefined:
        head.append(f"{len(undefined)} undefined metric{'s' if len(undefined) > 1 else ''} (nan)")
    if skipping:
        head.append(f"{len(skipping)} average{'s' if len(skipping) > 1 else ''} that skipped undefined parts")
    groups: dict[str, list[str]] = {}
    for key in undefined + skipping:
        groups.setdefault(reasons[key], []).append(key)
    lines = [f"  {', '.join(keys)}: {reason}" for reason, keys in groups.items()]
    return f"{task} report: {' and '.join(head)}:\n" + "\n".join(lines)


def _caller_stacklevel() -> int:
    """The stacklevel of the first frame outside metrics_core, so the warning points at user code."""
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = inspect.currentframe()
    level = 0
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame = frame.f_back
        level += 1
    return max(level, 1)


def warn_undefined(report):
    """Warn once, with an :class:`UndefinedMetricWarning`, when a report has undefined metrics.

    Called at the end of the compute step of each report (``binary_from_stats``,
    ``multiclass_from_stats``, ``multilabel_from_stats``), never for bootstrap replicates or
    baselines. The message lists each key with its reason (see :func:`undefined_reasons`), e.g.
    ``precision: no predicted positives (tp + fp = 0)``; the warning's ``reasons`` attribute holds
    the same as a dict.

    Parameters
    ----------
    report : Report
        A finished report.

    Returns
    -------
    Report
        The same report, so a compute step can end with ``return warn_undefined(Report(...))``.

    Examples
    --------
    >>> import warnings
    >>> from metrics_core.report import binary_report
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     r = binary_report([0, 0, 1], y_pred=[0, 0, 0])
    >>> [type(w.message).__name__ for w in caught]
    ['UndefinedMetricWarning']
    >>> print(caught[0].message)
    binary report: 2 undefined metrics (nan):
      precision: no predicted positives (tp + fp = 0)
      mcc: constant predictions (every row predicted 0)
    >>> sorted(caught[0].message.reasons)
    ['mcc', 'precision']
    """
    reasons = undefined_reasons(report)
    if reasons:
        warnings.warn(UndefinedMetricWarning(_message(report.task, reasons, report.metrics), reasons),
                      stacklevel=_caller_stacklevel())
    return report
