"""Metric dictionaries from statistics: the 'compute' step of every report (ISO 4213 clause 6).

Each function takes confusion arrays with optional leading replicate axes, so the point
estimate and every bootstrap replicate come from the same formula.
"""

from __future__ import annotations

import numpy as np

from metrics_core import formulas as f
from metrics_core.curves import probability_losses, ranking_areas
from metrics_core.counts import ScoreCounts


def binary_confusion_metrics(m, beta: float = 1.0, cost_matrix=None) -> dict:
    """Threshold metrics from a ``(..., 2, 2)`` confusion (labels ``[negative, positive]``)."""
    m = np.asarray(m, dtype=np.float64)
    tn, fp, fn, tp = m[..., 0, 0], m[..., 0, 1], m[..., 1, 0], m[..., 1, 1]
    n = tp + fp + fn + tn
    recall = f.ratio(tp, tp + fn)
    specificity = f.ratio(tn, tn + fp)
    ba, _ = f.nanmean_count(np.stack([np.asarray(recall) * np.ones_like(n), np.asarray(specificity) * np.ones_like(n)], -1))
    out = {
        "n": n, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "prevalence": f.ratio(tp + fn, n),
        "accuracy": f.ratio(tp + tn, n),
        "error_rate": f.ratio(fp + fn, n),
        "precision": f.ratio(tp, tp + fp),
        "recall": recall,
        "specificity": specificity,
        "fpr": f.ratio(fp, fp + tn),
        "fnr": f.ratio(fn, fn + tp),
        "npv": f.ratio(tn, tn + fn),
        "f1": f.fbeta(tp, fp, fn, 1.0),
        "fbeta": f.fbeta(tp, fp, fn, beta),
        "balanced_accuracy": ba,
        "mcc": f.mcc(m),
        "cohen_kappa": f.cohen_kappa(m),
        "kl_divergence": f.kl_divergence(m),
    }
    out.update(cost_metrics(m, cost_matrix))
    return out


def cost_metrics(m, cost_matrix) -> dict:
    """``total_cost`` = sum of C[actual, predicted] over rows and ``mean_cost`` per row."""
    if cost_matrix is None:
        return {}
    total = f.total_cost(m, cost_matrix)
    return {"total_cost": total, "mean_cost": f.ratio(total, np.asarray(m, float).sum(axis=(-2, -1)))}


def multiclass_confusion_metrics(m, beta: float = 1.0, cost_matrix=None) -> tuple[dict, dict]:
    """(metrics, per-class arrays) from a ``(..., K, K)`` confusion.

    Micro averages pool the one-vs-rest counts (equal to accuracy for single-label data);
    macro averages are the mean over classes skipping undefined ones (``n_undefined_*`` say how
    many); weighted averages weight each class by its support; ``*_of_macro`` /
    ``*_of_weighted`` are F of the averaged precision and recall (ONS Annex C).
    """
    m = np.asarray(m, dtype=np.float64)
    pc = f.per_class(m, beta)
    tp, fp, fn, _ = f.one_vs_rest(m)
    support = pc["support"]
    acc = f.accuracy(m)
    out = {"n": m.sum(axis=(-2, -1)), "accuracy": acc, "error_rate": 1.0 - np.asarray(acc)}
    ba, _ = f.nanmean_count(pc["recall"])
    out["balanced_accuracy"] = ba
    out["cohen_kappa"] = f.cohen_kappa(m)
    out["mcc"] = f.mcc(m)
    out["kl_divergence"] = f.kl_divergence(m)
    csmf = f.csmf_accuracy(m)
    out["csmf_accuracy"] = csmf
    out["cccsmf_accuracy"] = f.cccsmf_accuracy(csmf)
    micro_p = f.ratio(tp.sum(-1), (tp + fp).sum(-1))
    micro_r = f.ratio(tp.sum(-1), (tp + fn).sum(-1))
    micro = {"precision": micro_p, "recall": micro_r,
             "f1": f.fbeta(tp.sum(-1), fp.sum(-1), fn.sum(-1), 1.0),
             "fbeta": f.fbeta(tp.sum(-1), fp.sum(-1), fn.sum(-1), beta)}
    for name in ("precision", "recall", "f1", "fbeta"):
        out[f"{name}_micro"] = micro[name]
        macro, skipped = f.nanmean_count(pc[name])
        out[f"{name}_macro"] = macro
        out[f"n_undefined_{name}"] = skipped.astype(np.float64)
        out[f"{name}_weighted"], _ = f.nanmean_count(pc[name], support)
    out["f1_of_macro"] = f.f_of(out["precision_macro"], out["recall_macro"], 1.0)
    out["fbeta_of_macro"] = f.f_of(out["precision_macro"], out["recall_macro"], beta)
    out["fbeta_of_weighted"] = f.f_of(out["precision_weighted"], out["recall_weighted"], beta)
    out["balanced_accuracy_micro"] = f.balanced_accuracy_micro(m)
    out.update(cost_metrics(m, cost_matrix))
    return out, pc


def score_metrics(sc: ScoreCounts | None, prob_scores: bool = True) -> dict:
    """Threshold-free binary metrics from exact score counts: auroc, average_precision,
    auprc_trapezoid (:func:`metrics_core.curves.ranking_areas`), log_loss and brier
    (:func:`metrics_core.curves.probability_losses`)."""
    if sc is None:
        return {}
    out = ranking_areas(sc.pos, sc.neg)
    ll, brier = probability_losses(sc) if prob_scores else (float("nan"), float("nan"))
    out["log_loss"], out["brier"] = ll, brier
    return out


def as_floats(d: dict) -> dict:
    """Scalars of a metric dict as Python floats (0-d arrays and numpy scalars included)."""
    return {k: float(v) for k, v in d.items()}
