"""Threshold-free binary metrics and curves from ScoreCounts (ISO 4213 6.3.6-6.3.9).

All work on the distinct scores, never on rows. Conventions follow scikit-learn: ROC from
(0, 0) with first threshold +inf (``roc_curve(drop_intermediate=False)``); PR points ordered as
``precision_recall_curve`` and ending at (recall 0, precision 1); ties are one point.
"""

from __future__ import annotations

import warnings

import numpy as np

from metrics_core.counts import ScoreCounts
from metrics_core.formulas import ratio


def _descending(pos, neg):
    """Cumulative (tps, fps) for thresholds at the distinct scores, highest first (last axis)."""
    pos_d = np.flip(pos, axis=-1)
    neg_d = np.flip(neg, axis=-1)
    return np.cumsum(pos_d, axis=-1), np.cumsum(neg_d, axis=-1), pos_d, neg_d


def auroc_from_counts(pos, neg):
    """AUROC = P(score of a positive > score of a negative) + 1/2 P(tie) (Mann-Whitney, seed 003).

    ``pos``/``neg`` are counts per distinct score in ascending score order (any leading axes).
    Integer counts give the exact rational rounded once. nan when a class is absent.
    """
    pos = np.asarray(pos)
    neg = np.asarray(neg)
    if pos.dtype.kind in "iu" and neg.dtype.kind in "iu" and pos.ndim == 1:
        below = np.cumsum(neg) - neg  # negatives strictly below each score
        num = int(np.dot(pos, 2 * below + neg))  # exact in int64 up to ~3e9 rows
        p, n = int(pos.sum()), int(neg.sum())
        return num / (2 * p * n) if p and n else float("nan")
    pos = pos.astype(np.float64)
    neg = neg.astype(np.float64)
    below = np.cumsum(neg, axis=-1) - neg
    num = (pos * (2 * below + neg)).sum(axis=-1)
    return ratio(num, 2 * pos.sum(axis=-1) * neg.sum(axis=-1))


def average_precision_from_counts(pos, neg):
    """Average precision = sum_k (R_k - R_{k-1}) P_k over thresholds, highest first
    (scikit-learn's step-wise sum); nan with no positives."""
    tps, fps, pos_d, _ = _descending(np.asarray(pos, np.float64), np.asarray(neg, np.float64))
    precision = ratio(tps, tps + fps)
    precision = np.where(np.isnan(precision), 0.0, precision)
    return ratio((pos_d * precision).sum(axis=-1), tps[..., -1] if tps.shape[-1] else 0.0)


def roc_curve(sc: ScoreCounts):
    """(fpr, tpr, thresholds) from (0, 0) with threshold +inf; nan rates when a class is absent."""
    tps, fps, _, _ = _descending(sc.pos, sc.neg)
    p, n = (tps[-1], fps[-1]) if tps.size else (0, 0)
    tpr = np.concatenate(([0.0], np.asarray(ratio(tps, np.full(tps.shape, p)), float).reshape(-1)))
    fpr = np.concatenate(([0.0], np.asarray(ratio(fps, np.full(fps.shape, n)), float).reshape(-1)))
    if p == 0:
        tpr[:] = np.nan
    if n == 0:
        fpr[:] = np.nan
    thresholds = np.concatenate(([np.inf], sc.scores[::-1]))
    return fpr, tpr, thresholds


def pr_curve(sc: ScoreCounts):
    """(recall, precision, thresholds) ordered as scikit-learn's ``precision_recall_curve``.

    Thresholds ascend over the distinct scores; the last point is (recall 0, precision 1) and
    gets threshold +inf so that the three arrays have equal length (``thresholds[:-1]`` equals
    scikit-learn's). With no positives recall is 1 everywhere, as in scikit-learn.
    """
    tps, fps, _, _ = _descending(sc.pos.astype(np.float64), sc.neg.astype(np.float64))
    precision = np.asarray(ratio(tps, tps + fps), float).reshape(-1)
    precision = np.where(np.isnan(precision), 0.0, precision)
    p = tps[-1] if tps.size else 0.0
    recall = tps / p if p else np.ones_like(tps)
    return (np.concatenate((recall[::-1], [0.0])), np.concatenate((precision[::-1], [1.0])),
            np.concatenate((sc.scores, [np.inf])))


def gain_curve(sc: ScoreCounts):
    """Cumulative gain: (fraction of rows predicted positive, TPR, thresholds), from (0, 0)."""
    tps, fps, _, _ = _descending(sc.pos.astype(np.float64), sc.neg.astype(np.float64))
    total = tps[-1] + fps[-1] if tps.size else 0.0
    frac = np.concatenate(([0.0], tps + fps)) / total if total else np.full(tps.size + 1, np.nan)
    tpr = np.concatenate(([0.0], tps / tps[-1])) if tps.size and tps[-1] else np.full(tps.size + 1, np.nan)
    return frac, tpr, np.concatenate(([np.inf], sc.scores[::-1]))


def lift_curve(sc: ScoreCounts):
    """Lift: (fraction predicted positive, TPR / fraction, thresholds); starts at the first
    threshold because lift at fraction 0 is undefined."""
    frac, tpr, thresholds = gain_curve(sc)
    return frac[1:], np.asarray(ratio(tpr[1:], frac[1:]), float).reshape(-1), thresholds[1:]


def trapezoid_area(x, y):
    """Area under the polyline through (x, y) by the trapezoid rule, for either x direction."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size < 2:
        return float("nan")
    return float(abs(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0)))


def confusion_at(sc: ScoreCounts, threshold: float):
    """(tp, fp, fn, tn) when a row is predicted positive iff score >= threshold."""
    i = np.searchsorted(sc.scores, threshold, side="left")
    tp = sc.pos[i:].sum()
    fp = sc.neg[i:].sum()
    return tp, fp, sc.pos.sum() - tp, sc.neg.sum() - fp


def probability_losses(sc: ScoreCounts, pos=None, neg=None):
    """(log_loss, brier) from the distinct scores; nan with a warning when a score is outside [0, 1].

    log loss clips probabilities to [eps, 1 - eps] with eps the float64 machine epsilon, as
    scikit-learn 1.9 does. ``pos``/``neg`` may carry leading replicate axes.
    """
    pos = sc.pos if pos is None else pos
    neg = sc.neg if neg is None else neg
    s = sc.scores
    if s.size and (s[0] < 0 or s[-1] > 1):
        warnings.warn("Scores outside [0, 1] are not probabilities: log_loss and brier are nan "
                      "(ranking metrics are still computed).", RuntimeWarning, stacklevel=3)
        shape = np.asarray(pos).shape[:-1]
        return np.full(shape, np.nan) if shape else float("nan"), np.full(shape, np.nan) if shape else float("nan")
    eps = np.finfo(np.float64).eps
    p = np.clip(s, eps, 1 - eps)
    pos = np.asarray(pos, dtype=np.float64)
    neg = np.asarray(neg, dtype=np.float64)
    total = pos.sum(axis=-1) + neg.sum(axis=-1)
    # log(1 - p) rather than log1p(-p): scikit-learn builds the 1 - p column the same way.
    ll = ratio(pos @ -np.log(p) + neg @ -np.log(1.0 - p), total)
    brier = ratio(pos @ np.square(1.0 - s) + neg @ np.square(s), total)
    return ll, brier


def thin(x, y, thresholds, max_points: int = 1000):
    """At most ``max_points`` points of a curve for plotting and logging, chosen evenly along
    its path length; first and last points always kept. Areas are always computed from the
    full statistic, never from a thinned curve."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size <= max_points:
        return x, y, np.asarray(thresholds)
    fx = np.nan_to_num(x)
    fy = np.nan_to_num(y)
    span_y = np.ptp(fy) or 1.0
    span_x = np.ptp(fx) or 1.0
    step = np.hypot(np.diff(fx) / span_x, np.diff(fy) / span_y)
    path = np.concatenate(([0.0], np.cumsum(step)))
    targets = np.linspace(0.0, path[-1], max_points)
    idx = np.unique(np.concatenate(([0, x.size - 1], np.searchsorted(path, targets).clip(0, x.size - 1))))
    if idx.size > max_points:
        idx = idx[np.linspace(0, idx.size - 1, max_points).round().astype(int)]
    return x[idx], y[idx], np.asarray(thresholds)[idx]
