"""The public reports: validate -> format -> update (statistics) -> compute, one per task kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import polars as pl

from metrics_core import _validate as v
from metrics_core.contract import binary_classes, check_label_kinds, class_rows, predicted_class, same_kind
from metrics_core.compute import as_floats, binary_confusion_metrics, multiclass_confusion_metrics, score_metrics
from metrics_core.counts import BinnedScoreCounts, ConfusionCounts, ScoreCounts, auroc_counts
from metrics_core.curves import _fractions, _precision, auroc_from_counts, lift_of_gain, pr_curve, roc_curve
from metrics_core.errors import InputError
from metrics_core.losses import clip_probability
from metrics_core.stats import BinaryStats, LossSums, MulticlassStats
from metrics_core.misread import warn_misread
from metrics_core.undefined import warn_undefined


def _curve_dict(sc) -> dict:
    """The ROC, PR, gain and lift curves of one statistic, as :func:`roc_curve` and the others return them."""
    if isinstance(sc, BinnedScoreCounts):
        sc = sc.as_score_counts()
    fpr, tpr, thresholds = roc_curve(sc)
    frac = _fractions(sc)
    if tpr.size > 1 and not np.isnan(tpr[-1]):
        recall, precision, ascending = tpr[::-1], _precision(sc), thresholds[::-1]
    else:  # without positives recall is 1 (scikit-learn), not the TPR's nan
        recall, precision, ascending = pr_curve(sc)
    # Equal arrays are shared, as views, not copies (at 20M distinct scores each is 160 MB): the
    # gain's TPR is the ROC's; the PR curve's recall and thresholds are the ROC's TPR and
    # thresholds reversed; the lift's fractions and thresholds are the gain's without the first.
    lift_x, lift, lift_t = lift_of_gain(frac, tpr, thresholds, sc=sc)
    return {"roc": {"x": fpr, "y": tpr, "thresholds": thresholds},
            "pr": {"x": recall, "y": precision, "thresholds": ascending},
            "gain": {"x": frac, "y": tpr, "thresholds": thresholds},
            "lift": {"x": lift_x, "y": lift, "thresholds": lift_t}}


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
            # min and max occur: test the few values between them (no int64 copy of the rows);
            # int(), as numpy bools do not subtract
            if int(hi) - int(lo) < 4:
                between = [v for v in range(int(lo) + 1, int(hi)) if (y == v).any()]
                return np.array([lo, *between, hi] if hi > lo else [lo], dtype=y.dtype)
            return np.flatnonzero(np.bincount(y.astype(np.intp, copy=False))).astype(y.dtype)
    return np.unique(y)


def _binary_target(y_true: np.ndarray, y_pred: np.ndarray | None, pos_label, given: dict,
                   keep: np.ndarray | None) -> np.ndarray:
    """The label order [negative, positive] of a binary report (the classes of ``y_true``, and of
    ``y_pred`` when of the same kind; rows of positive weight), named by :func:`metrics_core.contract.binary_classes`;
    a third class is an error that says where each class of ``given`` (the arguments' rows ``keep``) is.
    """
    values = _distinct(y_true)
    if y_pred is not None:
        check_label_kinds(values.dtype, y_pred.dtype)
        if same_kind(values.dtype, y_pred.dtype):
            values = np.unique(np.concatenate((values, _distinct(y_pred))))
    try:
        # The negative class may be absent from a partition: None until a merge meets it.
        return np.array(binary_classes(values.tolist(), pos_label, absent=None), dtype=object)
    except InputError as exc:
        if len(values) <= 2:
            raise
        raise InputError(f"{exc} {class_rows(given, keep)}.") from None


def binary_stats(y_true, y_score=None, y_pred=None, *, threshold=0.5, pos_label=1, sample_weight=None,
                 bins=None, twin_weight=None) -> BinaryStats:
    """Validate inputs and compute :class:`BinaryStats` (the 'update' step of a binary report).

    Parameters
    ----------
    y_true : array-like
        Labels (list, numpy, polars, pyarrow); at most two classes.
    y_score : array-like, optional
        The positive class's score per row (any finite numbers; probabilities for the losses).
    y_pred : array-like, optional
        Predicted classes; when given they decide the confusion instead of ``y_score >= threshold``.
    threshold : float
        A row is predicted positive when its score is >= ``threshold``
        (:func:`metrics_core.contract.predicted_class`).
    pos_label
        The positive class (matched by value, else by its text).
    sample_weight : array-like, optional
        Row weights (real, finite, >= 0). Scale-free: multiplying every weight by a constant
        changes only the counts. A row of weight 0 is validated, then dropped: it is an absent
        row for every metric, interval and the class names.
    bins : array-like, optional
        Score bin edges: :class:`BinnedScoreCounts` of constant size instead of exact counts.
    twin_weight : array-like, optional
        E.g. expenditure: a confusion weighted by it, in the same pass, for the ``weighted/<key>``
        twin of every count-based metric.

    Returns
    -------
    BinaryStats
        Confusion over ``[negative, positive]`` (:func:`metrics_core.contract.binary_classes`; the
        negative class is None when no row holds it, filled in by a merge), score counts.

    Raises
    ------
    InputError
        Bad rows or arguments, named by argument with the count and an example
        (:mod:`metrics_core.contract` rules): nulls, NaN labels, NaN/inf scores, bad weights,
        mismatched lengths, a third class, a positive class that is not among the labels.

    Examples
    --------
    >>> binary_stats([0, 1, 1], y_score=[0.2, 0.7, 0.4]).confusion.matrix.tolist()
    [[1, 0], [1, 1]]
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
    yp = v.to_labels(y_pred, "y_pred", "prediction") if y_pred is not None else None
    n = v.check_lengths(y_true=yt, y_score=ys, y_pred=yp)
    w = v.check_weights(sample_weight, n)
    tw = None if twin_weight is None else v.check_weights(twin_weight, n)
    keep = v.weighted_rows(w)
    given = {"y_true": yt, **({} if yp is None or not same_kind(yt.dtype, yp.dtype) else {"y_pred": yp})}
    if keep is not None:  # a row of weight 0 is an absent row (validated all the same)
        yt, ys, yp, w, tw = (None if a is None else a[keep] for a in (yt, ys, yp, w, tw))
        n = int(np.count_nonzero(keep))
    labels = _binary_target(yt, yp, pos_label, given, keep)
    pos_label = labels[1]  # as the data writes it
    pos = yt == pos_label
    if ys is not None:
        if bins is not None:
            sc = BinnedScoreCounts.from_arrays(pos, ys, bins, w, losses=True)
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
        # Counted rows: the class totals from the labels (10M distinct scores: 7 ms against 17 ms).
        positives = np.count_nonzero(pos) if w is None else sc.pos.sum()
        negatives = n - positives if w is None else sc.neg.sum()
        m = np.array([[negatives - fp, fp], [positives - tp, tp]])
        conf = ConfusionCounts(m.astype(sc.pos.dtype), labels)
    else:
        conf = ConfusionCounts.from_indices(pos.astype(np.int64), predicted_class(ys, "binary", threshold), labels, w)
    twin = None
    if tw is not None:
        pred_pos = (yp == pos_label).astype(np.int64) if yp is not None else predicted_class(ys, "binary", threshold)
        twin = ConfusionCounts.from_indices(pos.astype(np.int64), pred_pos, labels, tw)
    return BinaryStats(conf, sc, n, threshold, weighted_confusion=twin)


def binary_report(y_true, y_score=None, y_pred=None, *, threshold=0.5, beta=1.0, pos_label=1, sample_weight=None,
                  cost_matrix=None, level=0.95, n_boot=1000, seed=0, bins=None) -> Report:
    """Every binary metric of the catalogue (ISO/IEC TS 4213 names) with lazy curves, intervals and baselines.

    A row is predicted positive when ``y_score >= threshold``, unless ``y_pred`` (predicted
    labels) is given, which then decides. Threshold metrics come from the 2 x 2 confusion,
    threshold-free ones (auroc, average_precision, auprc_trapezoid, log_loss, brier) from the
    exact :class:`ScoreCounts` (or binned, with ``bins=`` edges).

    Parameters
    ----------
    y_true, y_score, y_pred, threshold, pos_label, sample_weight, bins
        As for :func:`binary_stats`.
    beta : float
        The beta of F-beta.
    cost_matrix : array-like, optional
        2 x 2 costs ``C[actual, predicted]`` over ``[negative, positive]``.
    level : float
        Confidence level of the intervals.
    n_boot, seed : int
        Bootstrap replicates and seed of the non-proportion intervals.

    Returns
    -------
    Report
        Undefined values are nan with a warning (precision with no predicted positives, AUROC
        with one class, MCC/kappa with a constant column); log_loss and brier are nan with a
        warning when a score is outside [0, 1].

    Raises
    ------
    InputError
        As :func:`binary_stats`; a cost matrix of the wrong shape.

    Examples
    --------
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
    """The 'compute' step of :func:`binary_report`: a report from (merged) statistics.

    Parameters
    ----------
    stats : BinaryStats
        From :func:`binary_stats`, merged, or streamed (:func:`metrics_core.dataset.scan_stats`).
    beta, cost_matrix, level, n_boot, seed
        As for :func:`binary_report`.

    Returns
    -------
    Report

    Raises
    ------
    InputError
        A cost matrix that is not 2 x 2 and finite.

    Examples
    --------
    >>> binary_from_stats(binary_stats([0, 1, 1], y_score=[0.2, 0.7, 0.4])).metrics["recall"]
    0.5
    """
    cost = _check_cost(cost_matrix, 2)
    metrics = binary_confusion_metrics(stats.confusion.matrix, beta, cost)
    sc = stats.scores
    metrics.update(score_metrics(sc))
    if isinstance(sc, BinnedScoreCounts):
        metrics["auroc_error_bound"] = sc.auroc_error_bound()
    if stats.weighted_confusion is not None:
        twin = binary_confusion_metrics(stats.weighted_confusion.matrix, beta, cost)
        metrics.update({f"weighted/{k}": val for k, val in twin.items()})
    options = {"beta": beta, "threshold": stats.threshold, "cost_matrix": cost, "level": level,
               "n_boot": n_boot, "seed": seed}
    return warn_misread(warn_undefined(Report("binary", as_floats(metrics), stats, None, options)))


def multiclass_stats(y_true, y_pred=None, *, y_score=None, labels=None, sample_weight=None,
                     bins=None, twin_weight=None, score_counts: bool = True) -> MulticlassStats:
    """Validate inputs and compute :class:`MulticlassStats` (the 'update' step).

    Parameters
    ----------
    y_true : array-like
        Labels.
    y_pred : array-like, optional
        Predicted classes; without them the argmax of ``y_score``
        (:func:`metrics_core.contract.predicted_class`).
    y_score : array-like, optional
        N x K scores, columns in the order of ``labels``.
    labels : sequence, optional
        The class list; None: the sorted distinct values of ``y_true`` (and ``y_pred`` when of
        the same kind).
    sample_weight : array-like, optional
        Row weights (real, finite, >= 0); a row of weight 0 is validated, then dropped (an absent
        row, also for the class list inferred from the data).
    bins : array-like, optional
        Score bin edges: one-vs-rest :class:`BinnedScoreCounts` of constant size.
    twin_weight : array-like, optional
        As in :func:`binary_stats`.
    score_counts : bool
        False leaves the one-vs-rest statistics out (``scores`` None) but still uses the scores
        for the prediction and log loss: the first pass of a class-at-a-time scan
        (:func:`metrics_core.dataset.scan_stats`).

    Returns
    -------
    MulticlassStats

    Raises
    ------
    InputError
        Bad rows or arguments named by argument (:mod:`metrics_core.contract` rules): nulls, NaN
        labels, labels outside ``labels``, NaN/inf scores, score columns that do not match the
        classes, bad weights, mixed label types.

    Examples
    --------
    >>> multiclass_stats(["a", "b", "b"], ["a", "b", "a"]).confusion.matrix.tolist()
    [[1, 0], [1, 1]]
    """
    yt = v.to_labels(y_true, "y_true")
    if y_pred is None and y_score is None:
        raise InputError("multiclass_report needs y_pred (predicted labels) or y_score (N x K scores).")
    yp = v.to_labels(y_pred, "y_pred", "prediction") if y_pred is not None else None
    if yp is not None:
        check_label_kinds(yt.dtype, yp.dtype)
    ys = None
    if y_score is not None:
        ys = v.to_numpy(y_score, "y_score", ndim=2)
        ys = v.check_scores(ys)
    n = v.check_lengths(y_true=yt, y_pred=yp, y_score=ys)
    w = v.check_weights(sample_weight, n)
    tw = None if twin_weight is None else v.check_weights(twin_weight, n)
    keep = v.weighted_rows(w)
    if keep is not None:  # a row of weight 0 is an absent row (validated all the same)
        yt, ys, yp, w, tw = (None if a is None else a[keep] for a in (yt, ys, yp, w, tw))
        n = int(np.count_nonzero(keep))
        if n == 0 and labels is None:
            raise InputError("sample_weight: every row has weight 0, so no row is left to evaluate (rows of weight "
                             "0 count as absent). Give some rows a positive weight, or pass labels=.")
    if labels is None:
        pool = yt if yp is None else np.concatenate((yt, yp)) if same_kind(yt.dtype, yp.dtype) else yt
        _, labels_arr = v.encode(pool, None, "y_true")
        if ys is not None and ys.shape[1] != labels_arr.size:
            raise InputError(f"y_score: has {ys.shape[1]} columns but the data has {labels_arr.size} classes "
                             f"{labels_arr.tolist()[:20]!r}. Pass labels= in the order of the score columns.")
    else:
        labels_arr = np.asarray(list(labels))
        if labels_arr.size:
            check_label_kinds(yt.dtype, labels_arr.dtype, prediction="labels", rule="a class of the class list")
    k = labels_arr.size
    if ys is not None and ys.shape[1] != k:
        raise InputError(f"y_score: has {ys.shape[1]} columns but labels has {k} classes; the columns must "
                         "follow the order of labels.")
    ti, labels_arr = v.encode(yt, labels_arr, "y_true")
    if yp is not None:
        pi, _ = v.encode(yp, labels_arr, "y_pred", "prediction")
    else:
        pi = predicted_class(ys, "multiclass")
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
        row_loss = -np.log(clip_probability(p_true))
        ww = np.ones(n) if w is None else w
        prob = bool(ys.min() >= 0 and ys.max() <= 1)
        loss = LossSums(float(row_loss @ ww), float((row_loss * row_loss) @ ww), float(ww.sum())) if prob else \
            LossSums(float("nan"), float("nan"), float(ww.sum()))
    twin = None if tw is None else ConfusionCounts.from_indices(ti, pi, labels_arr, tw)
    return MulticlassStats(conf, scores, loss, n, weighted_confusion=twin)


def multiclass_report(y_true, y_pred=None, *, y_score=None, labels=None, beta=1.0, sample_weight=None,
                      cost_matrix=None, level=0.95, n_boot=1000, seed=0, bins=None) -> Report:
    """Every multiclass metric of the catalogue (ISO/IEC TS 4213 names) with per-class table and lazy extras.

    ``y_score`` is N x K with columns ordered as ``labels``; with only ``y_score`` the
    predicted class is the argmax (first column on ties).

    Parameters
    ----------
    y_true, y_pred, y_score, labels, sample_weight, bins
        As for :func:`multiclass_stats`.
    beta : float
        The beta of F-beta.
    cost_matrix : array-like, optional
        K x K costs ``C[actual, predicted]`` over ``labels``.
    level : float
        Confidence level of the intervals.
    n_boot, seed : int
        Bootstrap replicates and seed.

    Returns
    -------
    Report
        Macro averages skip undefined classes (``n_undefined_<metric>`` counts them, with a
        warning); ``kl_divergence`` is inf when a labelled class is never predicted; ``log_loss``
        is -mean log p(true class) clipped to [eps, 1 - eps], nan with a warning when a score is
        outside [0, 1].

    Raises
    ------
    InputError
        As :func:`multiclass_stats`; a cost matrix of the wrong shape.

    Examples
    --------
    >>> r = multiclass_report(["a", "b", "c", "a"], ["a", "b", "b", "a"])
    >>> r.metrics["accuracy"], r.metrics["recall_macro"], r.metrics["n_undefined_precision"]
    (0.75, 0.6666666666666666, 1.0)
    """
    stats = multiclass_stats(y_true, y_pred, y_score=y_score, labels=labels, sample_weight=sample_weight,
                             bins=bins)
    return multiclass_from_stats(stats, beta=beta, cost_matrix=cost_matrix, level=level, n_boot=n_boot, seed=seed)


def multiclass_from_stats(stats: MulticlassStats, *, beta=1.0, cost_matrix=None, level=0.95, n_boot=1000,
                          seed=0) -> Report:
    """The 'compute' step of :func:`multiclass_report`: a report from (merged) statistics.

    Parameters
    ----------
    stats : MulticlassStats
        From :func:`multiclass_stats`, merged, or streamed.
    beta, cost_matrix, level, n_boot, seed
        As for :func:`multiclass_report`.

    Returns
    -------
    Report

    Raises
    ------
    InputError
        A cost matrix that is not K x K and finite.

    Examples
    --------
    >>> multiclass_from_stats(multiclass_stats([0, 1, 1], [0, 1, 0])).metrics["accuracy"]
    0.6666666666666666
    """
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
    import polars as pl  # (only here: a binary report does not load polars)

    per_class = pl.DataFrame({"class": labels.tolist(), **{k: np.asarray(val, float) for k, val in pc.items()},
                              "auroc": auroc})
    options = {"beta": beta, "cost_matrix": cost, "level": level, "n_boot": n_boot, "seed": seed}
    return warn_undefined(Report("multiclass", as_floats(metrics), stats, per_class, options))
