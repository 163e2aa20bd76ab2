"""Metric dictionaries from statistics: the 'compute' step of every report (ISO 4213 clause 6).

Each function takes confusion arrays with optional leading replicate axes, so the point
estimate and every bootstrap replicate come from the same formula.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from metrics_core import formulas as f
from metrics_core.counts import BinnedScoreCounts, ScoreCounts
from metrics_core.curves import probability_losses, ranking_areas
from metrics_core.threads import kernel_threads, side_thread


def binary_confusion_metrics(m, beta: float = 1.0, cost_matrix=None) -> dict:
    """Threshold metrics of a binary classifier from its confusion matrix.

    Parameters
    ----------
    m : array-like, shape (..., 2, 2)
        Confusion counts, rows = actual, columns = predicted, labels ``[negative, positive]``;
        leading axes are bootstrap replicates.
    beta : float
        Weight of recall in ``fbeta``.
    cost_matrix : array-like, shape (2, 2), optional
        Cost C[actual, predicted]; adds ``total_cost`` and ``mean_cost``.

    Returns
    -------
    dict of str to float or numpy.ndarray
        n, tp, fp, fn, tn, prevalence, accuracy, error_rate, precision, recall, specificity,
        fpr, fnr, npv, f1, fbeta, balanced_accuracy, mcc, cohen_kappa, kl_divergence (and the
        costs). A 0/0 metric is nan, never 0.

    Notes
    -----
    ISO/IEC TS 4213 clause 6 and 3.2.x. The one-vs-rest metrics of the positive class are
    :func:`metrics_core.formulas.per_class` at index 1; specificity is the recall and npv the
    precision of the negative class (index 0); balanced accuracy is the mean of the two recalls
    skipping an undefined one (ONS Annex C).

    Examples
    --------
    >>> out = binary_confusion_metrics([[5, 1], [2, 2]])
    >>> out["precision"], out["recall"], out["specificity"]
    (0.6666666666666666, 0.5, 0.8333333333333334)
    """
    m = np.asarray(m, dtype=np.float64)
    tn, fp, fn, tp = m[..., 0, 0], m[..., 0, 1], m[..., 1, 0], m[..., 1, 1]
    n = tp + fp + fn + tn
    pc = f.per_class(m, beta)  # index 0: the negative class, 1: the positive class
    ba, _ = f.nanmean_count(pc["recall"])
    out = {
        "n": n, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "prevalence": _at(pc["prevalence"], 1),
        "accuracy": f.ratio(tp + tn, n),
        "error_rate": f.ratio(fp + fn, n),
        "precision": _at(pc["precision"], 1),
        "recall": _at(pc["recall"], 1),
        "specificity": _at(pc["recall"], 0),
        "fpr": f.ratio(fp, fp + tn),
        "fnr": f.ratio(fn, fn + tp),
        "npv": _at(pc["precision"], 0),
        "f1": _at(pc["f1"], 1),
        "fbeta": _at(pc["fbeta"], 1),
        "balanced_accuracy": ba,
        "mcc": f.mcc(m),
        "cohen_kappa": f.cohen_kappa(m),
        "kl_divergence": f.kl_divergence(m),
    }
    out.update(cost_metrics(m, cost_matrix))
    return out


def _at(per_class: np.ndarray, index: int):
    """One class's value of a per-class array: a float for one matrix, an array for replicates."""
    value = per_class[..., index]
    return float(value) if value.ndim == 0 else value


def cost_metrics(m, cost_matrix) -> dict:
    """Misclassification cost: the total and the mean per row.

    Parameters
    ----------
    m : array-like, shape (..., K, K)
        Confusion counts, rows = actual, columns = predicted.
    cost_matrix : array-like, shape (K, K) or None
        Cost C[actual, predicted] of one row.

    Returns
    -------
    dict
        ``total_cost`` = sum of C[actual, predicted] over rows
        (:func:`metrics_core.formulas.total_cost`) and ``mean_cost`` = total / rows (nan for an
        empty matrix); empty without a cost matrix.

    Examples
    --------
    >>> as_floats(cost_metrics([[5, 1], [2, 2]], [[0, 1], [5, 0]]))
    {'total_cost': 11.0, 'mean_cost': 1.1}
    """
    if cost_matrix is None:
        return {}
    total = f.total_cost(m, cost_matrix)
    return {"total_cost": total, "mean_cost": f.ratio(total, np.asarray(m, float).sum(axis=(-2, -1)))}


def multiclass_confusion_metrics(m, beta: float = 1.0, cost_matrix=None, keys=None) -> tuple[dict, dict]:
    """Metrics of a multiclass classifier and its per-class arrays, from the confusion matrix.

    Parameters
    ----------
    m : array-like, shape (..., K, K)
        Confusion counts, rows = actual, columns = predicted; leading axes are replicates.
    beta : float
        Weight of recall in the F-beta metrics.
    cost_matrix : array-like, shape (K, K), optional
        Cost C[actual, predicted]; adds ``total_cost`` and ``mean_cost``.
    keys : collection of str, optional
        Only these metrics (default all): each with the value the full result has, the others'
        formulas not run (the bootstrap of one metric's interval needs only its replicates).

    Returns
    -------
    (dict, dict)
        The metrics (accuracy, balanced accuracy, kappa, MCC, KL divergence, CSMF accuracy,
        micro / macro / weighted precision, recall, F1, F-beta, ...) and
        :func:`metrics_core.formulas.per_class`. A metric with a 0/0 is nan.

    Notes
    -----
    ISO/IEC TS 4213 clause 6; ONS Annex C. Micro averages pool the one-vs-rest counts (equal to
    accuracy for single-label data); macro averages are the mean over classes skipping
    undefined ones (``n_undefined_*`` say how many; nan when every class is undefined);
    weighted averages weight each class by its support; ``*_of_macro`` / ``*_of_weighted`` are
    F of the averaged precision and recall.

    Examples
    --------
    >>> out, per_class = multiclass_confusion_metrics([[3, 1, 0], [0, 2, 0], [1, 0, 3]])
    >>> out["accuracy"], round(out["precision_macro"], 4), per_class["recall"].round(2).tolist()
    (0.8, 0.8056, [0.75, 1.0, 0.75])
    >>> multiclass_confusion_metrics([[3, 1, 0], [0, 2, 0], [1, 0, 3]], keys={"accuracy"})[0]
    {'accuracy': 0.8}
    """
    m = np.asarray(m, dtype=np.float64)
    pc = f.per_class(m, beta)

    def overall() -> dict:
        acc = f.accuracy(m)
        return {"n": m.sum(axis=(-2, -1)), "accuracy": acc, "error_rate": 1.0 - np.asarray(acc)}

    def averages() -> dict:
        tp, fp, fn, _ = f.one_vs_rest(m)
        support = pc["support"]
        out = {}
        micro = {"precision": f.ratio(tp.sum(-1), (tp + fp).sum(-1)), "recall": f.ratio(tp.sum(-1), (tp + fn).sum(-1)),
                 "f1": f.fbeta(tp.sum(-1), fp.sum(-1), fn.sum(-1), 1.0),
                 "fbeta": f.fbeta(tp.sum(-1), fp.sum(-1), fn.sum(-1), beta)}
        for name in _AVERAGED:
            out[f"{name}_micro"] = micro[name]
            macro, skipped = f.nanmean_count(pc[name])
            out[f"{name}_macro"] = macro
            out[f"n_undefined_{name}"] = skipped.astype(np.float64)
            out[f"{name}_weighted"], _ = f.nanmean_count(pc[name], support)
        out["f1_of_macro"] = f.f_of(out["precision_macro"], out["recall_macro"], 1.0)
        out["fbeta_of_macro"] = f.f_of(out["precision_macro"], out["recall_macro"], beta)
        out["fbeta_of_weighted"] = f.f_of(out["precision_weighted"], out["recall_weighted"], beta)
        return out

    def csmf() -> dict:
        value = f.csmf_accuracy(m)
        return {"csmf_accuracy": value, "cccsmf_accuracy": f.cccsmf_accuracy(value)}

    # In the order of the result; each step gives the metrics named beside it.
    steps = ((("n", "accuracy", "error_rate"), overall),
             (("balanced_accuracy",), lambda: {"balanced_accuracy": f.nanmean_count(pc["recall"])[0]}),
             (("cohen_kappa",), lambda: {"cohen_kappa": f.cohen_kappa(m)}),
             (("mcc",), lambda: {"mcc": f.mcc(m)}),
             (("kl_divergence",), lambda: {"kl_divergence": f.kl_divergence(m)}),
             (("csmf_accuracy", "cccsmf_accuracy"), csmf),
             (_AVERAGE_KEYS, averages),
             (("balanced_accuracy_micro",), lambda: {"balanced_accuracy_micro": f.balanced_accuracy_micro(m)}),
             (("total_cost", "mean_cost"), lambda: cost_metrics(m, cost_matrix)))
    out = {}
    for names, step in steps:
        if keys is None or any(k in keys for k in names):
            out.update(step())
    return (out if keys is None else {k: v for k, v in out.items() if k in keys}), pc


#: The averaged metrics of :func:`multiclass_confusion_metrics`, and the keys they give.
_AVERAGED = ("precision", "recall", "f1", "fbeta")
_AVERAGE_KEYS = tuple(f"{name}_{kind}" for name in _AVERAGED for kind in ("micro", "macro", "weighted")) + tuple(
    f"n_undefined_{name}" for name in _AVERAGED) + ("f1_of_macro", "fbeta_of_macro", "fbeta_of_weighted")


def score_metrics(sc: ScoreCounts | BinnedScoreCounts | None) -> dict:
    """Threshold-free binary metrics from exact or binned score counts.

    Parameters
    ----------
    sc : ScoreCounts, BinnedScoreCounts or None
        Score counts of the positive class; None gives an empty dict. Binned counts rank as
        ties at their bins' lower edges, and give the log loss and Brier score of their rows.

    Returns
    -------
    dict
        auroc, average_precision, auprc_trapezoid (:func:`metrics_core.curves.ranking_areas`,
        ISO/IEC TS 4213 6.3.6-6.3.9), log_loss and brier
        (:func:`metrics_core.curves.probability_losses`); nan where undefined (a class absent,
        scores outside [0, 1]).

    Examples
    --------
    >>> sc = ScoreCounts.from_arrays(np.array([0, 1, 1]), np.array([0.2, 0.6, 0.9]))
    >>> score_metrics(sc)["auroc"]
    1.0
    """
    if sc is None:
        return {}
    ranked = sc.as_score_counts() if isinstance(sc, BinnedScoreCounts) else sc
    threads = kernel_threads(ranked.scores.size)
    if ranked.pos.dtype.kind in "iu" and ranked.neg.dtype.kind in "iu":
        # Counted rows: each pass shares its blocks among the threads (side by side, the thread of
        # the losses would wait for the longer areas).
        areas = ranking_areas(ranked.pos, ranked.neg, one_row_per_score=ranked.one_row_per_score, threads=threads)
        ll, brier = probability_losses(sc, threads)
        return {**areas, "log_loss": ll, "brier": brier}
    # Weights: the areas run block after block, beside the losses.
    with side_thread(threads) as submit:
        later = submit(partial(ranking_areas, one_row_per_score=ranked.one_row_per_score), ranked.pos, ranked.neg)
        ll, brier = probability_losses(sc)  # here: its warning names the caller
    return {**later.result(), "log_loss": ll, "brier": brier}


def as_floats(d: dict) -> dict:
    """Scalars of a metric dict as Python floats (0-d arrays and numpy scalars included).

    Parameters
    ----------
    d : dict
        Metric name -> scalar (float, numpy scalar or 0-d array).

    Returns
    -------
    dict of str to float

    Examples
    --------
    >>> as_floats({"a": np.float64(0.5), "b": np.array(2)})
    {'a': 0.5, 'b': 2.0}
    """
    return {k: float(v) for k, v in d.items()}
