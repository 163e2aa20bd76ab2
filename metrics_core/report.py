"""The public reports: validate -> format -> update (statistics) -> compute, one per task kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from metrics_core import _validate as v
from metrics_core.compute import as_floats, binary_confusion_metrics, multiclass_confusion_metrics, score_metrics
from metrics_core.counts import BinnedScoreCounts, ConfusionCounts, ScoreCounts, auroc_counts
from metrics_core.curves import auroc_from_counts, gain_curve, lift_curve, pr_curve, roc_curve
from metrics_core.errors import InputError
from metrics_core.stats import BinaryStats, LossSums, MulticlassStats

CURVES = ("roc", "pr", "gain", "lift")


def _curve_dict(sc) -> dict:
    if isinstance(sc, BinnedScoreCounts):
        sc = sc.as_score_counts()
    out = {}
    for name, fn in (("roc", roc_curve), ("pr", pr_curve), ("gain", gain_curve), ("lift", lift_curve)):
        x, y, t = fn(sc)
        out[name] = {"x": x, "y": y, "thresholds": t}
    return out


@dataclass
class Report:
    """A classification report: ``metrics`` (catalogue keys -> float), lazy ``curves``,
    ``per_class`` (multiclass/multilabel), lazy ``intervals`` and ``baselines``.

    ``stats`` holds the mergeable statistics everything is computed from; ``options`` the
    arguments (beta, threshold, cost matrix, level, n_boot, seed).
    """

    task: str
    metrics: dict[str, float]
    stats: Any
    per_class: pl.DataFrame | None = None
    options: dict = field(default_factory=dict)

    @cached_property
    def curves(self) -> dict:
        """Binary: {"roc","pr","gain","lift"} -> {"x","y","thresholds"}; multiclass: per class label."""
        s = self.stats
        if isinstance(s, BinaryStats):
            return _curve_dict(s.scores) if s.scores is not None else {}
        if isinstance(s, MulticlassStats) and s.scores is not None:
            return {label.item() if hasattr(label, "item") else label: _curve_dict(sc)
                    for label, sc in zip(s.confusion.labels, s.scores)}
        return {}

    @cached_property
    def intervals(self) -> dict[str, tuple[float, float]]:
        """key -> (low, high) at ``options["level"]``: Wilson for proportions, bootstrap otherwise."""
        from metrics_core.intervals import report_intervals

        return report_intervals(self)

    @cached_property
    def baselines(self) -> dict[str, dict[str, float]]:
        """{"majority": metrics, "random": metrics}: analytic expected values (ISO 5.3.13, ONS Annex D)."""
        from metrics_core.baselines import report_baselines

        return report_baselines(self)


def _distinct(y: np.ndarray) -> np.ndarray:
    """Sorted distinct values; small non-negative integers by counting (no sort, no hash)."""
    if y.dtype.kind in "iub" and y.size:
        lo, hi = y.min(), y.max()
        if lo >= 0 and hi < 1 << 16:
            return np.flatnonzero(np.bincount(y.astype(np.intp, copy=False))).astype(y.dtype)
    return np.unique(y)


def _binary_target(y_true: np.ndarray, y_pred: np.ndarray | None, pos_label):
    """The label order [negative, positive] of a binary report; errors for a third class or a
    pos_label that is not among the labels."""
    values = _distinct(y_true)
    if y_pred is not None and (values.dtype == y_pred.dtype or values.dtype.kind == y_pred.dtype.kind):
        values = np.unique(np.concatenate((values, _distinct(y_pred))))
    try:
        is_pos_value = values == pos_label
    except Exception:  # noqa: BLE001 - incomparable types
        is_pos_value = np.zeros(values.size, bool)
    others = values[~np.asarray(is_pos_value, bool)]
    if not np.asarray(is_pos_value).any() and values.size >= 2:
        raise InputError(f"pos_label={pos_label!r} is not one of the labels {values[:10].tolist()!r}. "
                         f"Pass pos_label= with the positive class value.")
    if others.size > 1:
        raise InputError(f"y_true: a binary report needs at most two classes, found {values.size}: "
                         f"{values[:10].tolist()!r}. Use multiclass_report, or map the labels to two classes.")
    # The negative class may be absent from a partition: None until a merge meets it.
    neg_label = others[0].item() if others.size and hasattr(others[0], "item") else (others[0] if others.size else None)
    return np.array([neg_label, pos_label], dtype=object)


def binary_stats(y_true, y_score=None, y_pred=None, *, threshold=0.5, pos_label=1, sample_weight=None,
                 bins=None, twin_weight=None) -> BinaryStats:
    """Validate inputs and compute :class:`BinaryStats` (the 'update' step of a binary report).

    ``twin_weight`` (e.g. expenditure) adds a confusion weighted by it, in the same pass, for the
    ``weighted/<key>`` twin of every count-based metric.
    """
    yt = v.to_labels(y_true, "y_true")
    if y_score is None and y_pred is None:
        raise InputError("binary_report needs y_score (scores) or y_pred (predicted labels); both are None.")
    ys = None
    if y_score is not None:
        ys = v.to_numpy(y_score, "y_score", ndim=None)
        if ys.ndim != 1:
            raise InputError(f"y_score: a binary report takes one score per row (1-D), got shape {ys.shape}. "
                             "Pass the positive-class column, or use multiclass_report for N x K scores.")
        ys = v.check_scores(ys)
    yp = v.to_labels(y_pred, "y_pred") if y_pred is not None else None
    n = v.check_lengths(y_true=yt, y_score=ys, y_pred=yp)
    w = v.check_weights(sample_weight, n)
    labels = _binary_target(yt, yp, pos_label)
    pos = yt == pos_label
    if ys is not None:
        if bins is not None:
            sc = BinnedScoreCounts.from_arrays(pos, ys, bins, w)
        else:
            sc = ScoreCounts.from_arrays(pos, ys, w)
    else:
        sc = None
    if yp is not None:
        pred_pos = yp == pos_label
        conf = ConfusionCounts.from_indices(pos.astype(np.int64), pred_pos.astype(np.int64), labels, w)
    elif isinstance(sc, ScoreCounts):
        i = np.searchsorted(sc.scores, threshold, side="left")
        tp, fp = sc.pos[i:].sum(), sc.neg[i:].sum()
        m = np.array([[sc.neg.sum() - fp, fp], [sc.pos.sum() - tp, tp]])
        conf = ConfusionCounts(m.astype(sc.pos.dtype), labels)
    else:
        conf = ConfusionCounts.from_indices(pos.astype(np.int64), (ys >= threshold).astype(np.int64), labels, w)
    twin = None
    if twin_weight is not None:
        tw = v.check_weights(twin_weight, n)
        pred_pos = yp == pos_label if yp is not None else ys >= threshold
        twin = ConfusionCounts.from_indices(pos.astype(np.int64), pred_pos.astype(np.int64), labels, tw)
    return BinaryStats(conf, sc, n, threshold, weighted_confusion=twin)


def binary_report(y_true, y_score=None, y_pred=None, *, threshold=0.5, beta=1.0, pos_label=1, sample_weight=None,
                  cost_matrix=None, level=0.95, n_boot=1000, seed=0, bins=None) -> Report:
    """Every binary metric of the catalogue (SPEC) with lazy curves, intervals and baselines.

    A row is predicted positive when ``y_score >= threshold``, unless ``y_pred`` (predicted
    labels) is given, which then decides. Threshold metrics come from the 2 x 2 confusion,
    threshold-free ones (auroc, average_precision, auprc_trapezoid, log_loss, brier) from the
    exact :class:`ScoreCounts` (or binned, with ``bins=`` edges). Undefined values are nan:
    precision with no predicted positives, AUROC with one class, MCC/kappa with a constant
    column; log_loss and brier are nan with a warning when a score is outside [0, 1].

    >>> r = binary_report([0, 0, 1, 1], y_score=[0.1, 0.4, 0.35, 0.8])
    >>> r.metrics["auroc"], r.metrics["tp"], r.metrics["precision"]
    (0.75, 1.0, 1.0)
    """
    stats = binary_stats(y_true, y_score, y_pred, threshold=threshold, pos_label=pos_label,
                         sample_weight=sample_weight, bins=bins)
    return binary_from_stats(stats, beta=beta, cost_matrix=cost_matrix, level=level, n_boot=n_boot, seed=seed)


def _check_cost(cost_matrix, k: int):
    if cost_matrix is None:
        return None
    c = np.asarray(cost_matrix, dtype=np.float64)
    if c.shape != (k, k):
        raise InputError(f"cost_matrix: expected shape ({k}, {k}) (C[actual, predicted] over the labels), "
                         f"got {c.shape}.")
    if not np.isfinite(c).all():
        raise InputError("cost_matrix: every cost must be finite.")
    return c


def binary_from_stats(stats: BinaryStats, *, beta=1.0, cost_matrix=None, level=0.95, n_boot=1000, seed=0) -> Report:
    """The 'compute' step of :func:`binary_report`: a report from (merged) statistics."""
    cost = _check_cost(cost_matrix, 2)
    metrics = binary_confusion_metrics(stats.confusion.matrix, beta, cost)
    sc = stats.scores
    if isinstance(sc, BinnedScoreCounts):
        metrics.update(score_metrics(sc.as_score_counts()))
        metrics["auroc_error_bound"] = sc.auroc_error_bound()
    else:
        metrics.update(score_metrics(sc))
    if stats.weighted_confusion is not None:
        twin = binary_confusion_metrics(stats.weighted_confusion.matrix, beta, cost)
        metrics.update({f"weighted/{k}": val for k, val in twin.items()})
    options = {"beta": beta, "threshold": stats.threshold, "cost_matrix": cost, "level": level,
               "n_boot": n_boot, "seed": seed}
    return Report("binary", as_floats(metrics), stats, None, options)


def multiclass_stats(y_true, y_pred=None, *, y_score=None, labels=None, sample_weight=None,
                     bins=None, twin_weight=None, score_counts: bool = True) -> MulticlassStats:
    """Validate inputs and compute :class:`MulticlassStats` (the 'update' step).

    With ``bins`` (score bin edges) the one-vs-rest score statistics are
    :class:`BinnedScoreCounts` of constant size instead of exact :class:`ScoreCounts`.
    ``twin_weight`` as in :func:`binary_stats`. ``score_counts=False`` leaves the one-vs-rest
    statistics out (``scores`` None) but still uses the scores for the prediction and log loss:
    the first pass of a class-at-a-time scan (:func:`metrics_core.dataset.scan_stats`).
    """
    yt = v.to_labels(y_true, "y_true")
    if y_pred is None and y_score is None:
        raise InputError("multiclass_report needs y_pred (predicted labels) or y_score (N x K scores).")
    yp = v.to_labels(y_pred, "y_pred") if y_pred is not None else None
    ys = None
    if y_score is not None:
        ys = v.to_numpy(y_score, "y_score", ndim=2)
        ys = v.check_scores(ys)
    n = v.check_lengths(y_true=yt, y_pred=yp, y_score=ys)
    w = v.check_weights(sample_weight, n)
    if labels is None:
        pool = yt if yp is None else np.concatenate((yt, yp)) if yt.dtype.kind == yp.dtype.kind else yt
        _, labels_arr = v.encode(pool, None, "y_true")
        if ys is not None and ys.shape[1] != labels_arr.size:
            raise InputError(f"y_score: has {ys.shape[1]} columns but the data has {labels_arr.size} classes "
                             f"{labels_arr.tolist()[:20]!r}. Pass labels= in the order of the score columns.")
    else:
        labels_arr = np.asarray(list(labels))
    k = labels_arr.size
    if ys is not None and ys.shape[1] != k:
        raise InputError(f"y_score: has {ys.shape[1]} columns but labels has {k} classes; the columns must "
                         "follow the order of labels.")
    ti, labels_arr = v.encode(yt, labels_arr, "y_true")
    if yp is not None:
        pi, _ = v.encode(yp, labels_arr, "y_pred")
    else:
        pi = np.argmax(ys, axis=1)
    conf = ConfusionCounts.from_indices(ti, pi, labels_arr, w)
    scores = loss = None
    if ys is not None:
        if not score_counts:
            pass
        elif bins is None:
            scores = tuple(ScoreCounts.from_arrays(ti == j, ys[:, j], w) for j in range(k))
        else:
            scores = tuple(BinnedScoreCounts.from_arrays(ti == j, ys[:, j], bins, w) for j in range(k))
        p_true = ys[np.arange(n), ti].astype(np.float64)
        eps = np.finfo(np.float64).eps
        row_loss = -np.log(np.clip(p_true, eps, 1 - eps))
        ww = np.ones(n) if w is None else w
        prob = bool(ys.min() >= 0 and ys.max() <= 1)
        loss = LossSums(float(row_loss @ ww), float((row_loss * row_loss) @ ww), float(ww.sum())) if prob else \
            LossSums(float("nan"), float("nan"), float(ww.sum()))
    twin = None if twin_weight is None else ConfusionCounts.from_indices(
        ti, pi, labels_arr, v.check_weights(twin_weight, n))
    return MulticlassStats(conf, scores, loss, n, weighted_confusion=twin)


def multiclass_report(y_true, y_pred=None, *, y_score=None, labels=None, beta=1.0, sample_weight=None,
                      cost_matrix=None, level=0.95, n_boot=1000, seed=0, bins=None) -> Report:
    """Every multiclass metric of the catalogue (SPEC) with per-class table and lazy extras.

    ``y_score`` is N x K with columns ordered as ``labels``; with only ``y_score`` the
    predicted class is the argmax (first column on ties). Macro averages skip undefined classes
    (``n_undefined_<metric>`` counts them); ``kl_divergence`` is inf when a labelled class is
    never predicted; ``log_loss`` is -mean log p(true class) clipped to [eps, 1 - eps], nan
    with a warning when a score is outside [0, 1].

    >>> r = multiclass_report(["a", "b", "c", "a"], ["a", "b", "b", "a"])
    >>> r.metrics["accuracy"], r.metrics["recall_macro"], r.metrics["n_undefined_precision"]
    (0.75, 0.6666666666666666, 1.0)
    """
    stats = multiclass_stats(y_true, y_pred, y_score=y_score, labels=labels, sample_weight=sample_weight,
                             bins=bins)
    return multiclass_from_stats(stats, beta=beta, cost_matrix=cost_matrix, level=level, n_boot=n_boot, seed=seed)


def multiclass_from_stats(stats: MulticlassStats, *, beta=1.0, cost_matrix=None, level=0.95, n_boot=1000,
                          seed=0) -> Report:
    """The 'compute' step of :func:`multiclass_report`: a report from (merged) statistics."""
    import warnings

    from metrics_core.formulas import nanmean_count

    labels = stats.confusion.labels
    cost = _check_cost(cost_matrix, labels.size)
    metrics, pc = multiclass_confusion_metrics(stats.confusion.matrix, beta, cost)
    auroc = np.full(labels.size, np.nan)
    if stats.scores is not None:
        # From the folded counts (same AUROC, smaller): one-vs-rest statistics from a single pass
        # and from a class-at-a-time scan (already folded) then give identical values.
        auroc = np.array([auroc_from_counts(c.pos, c.neg) for c in map(auroc_counts, stats.scores)],
                         dtype=np.float64)
        metrics["auroc_ovr_macro"], skipped = nanmean_count(auroc)
        metrics["auroc_ovr_weighted"], _ = nanmean_count(auroc, pc["support"])
        metrics["n_undefined_auroc"] = float(skipped)
        if isinstance(stats.scores[0], BinnedScoreCounts):
            metrics["auroc_error_bound"] = float(np.nanmax([sc.auroc_error_bound() for sc in stats.scores]))
    if stats.log_loss is not None:
        if np.isnan(stats.log_loss.total):
            warnings.warn("Scores outside [0, 1] are not probabilities: log_loss is nan.", RuntimeWarning,
                          stacklevel=2)
        metrics["log_loss"] = stats.log_loss.mean
    if stats.weighted_confusion is not None:
        twin, _ = multiclass_confusion_metrics(stats.weighted_confusion.matrix, beta, cost)
        metrics.update({f"weighted/{k}": val for k, val in twin.items()})
    per_class = pl.DataFrame({"class": labels.tolist(), **{k: np.asarray(val, float) for k, val in pc.items()},
                              "auroc": auroc})
    options = {"beta": beta, "cost_matrix": cost, "level": level, "n_boot": n_boot, "seed": seed}
    return Report("multiclass", as_floats(metrics), stats, per_class, options)
