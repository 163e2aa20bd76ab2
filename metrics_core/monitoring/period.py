"""Mergeable per-period monitoring statistics: :class:`PeriodStats` and the per-batch update, over fixed bins."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

import numpy as np

from metrics_core.calibration import CalibrationSet, calibration_set
from metrics_core.counts import BinnedScoreCounts, ConfusionCounts, ScoreCounts
from metrics_core.errors import InputError
from metrics_core.monitoring.bins import Bins
from metrics_core.monitoring.features import FeatureStats, with_features
from metrics_core.monitoring.sample import SampleStats, sample_update, score_bin
from metrics_core.monitoring.sparse import added, histogram
from metrics_core.stats import BinaryStats, MulticlassStats

__all__ = ["PeriodStats", "update", "labelled_sample_stats", "binned", "class_name", "MAX_CELL_CLASSES",
           "SAMPLE_BINS", "sample_bins"]

#: Most classes for which the per-cell price histograms (Annex E) are kept (memory K x K x bins).
MAX_CELL_CLASSES = 30


def class_name(value) -> str:
    """The text form of a class value (numpy scalars unwrapped): test keys, tables, MLflow keys.

    Parameters
    ----------
    value : object
        A class value: a Python or numpy scalar.

    Returns
    -------
    str
        ``str`` of the value; a numpy scalar is unwrapped first, so ``np.int64(3)`` gives ``'3'``.

    Examples
    --------
    >>> class_name(np.int64(3)), class_name("wine")
    ('3', 'wine')
    """
    return str(value.item() if hasattr(value, "item") else value)


def binned(points: np.ndarray, counts: np.ndarray) -> ScoreCounts:
    """A histogram as a :class:`~metrics_core.counts.ScoreCounts` at its bin ``points``, empty bins dropped.

    Parameters
    ----------
    points : numpy.ndarray
        One representative score per bin (the bin's midpoint), increasing.
    counts : numpy.ndarray
        Rows per bin, same length as ``points``.

    Returns
    -------
    ScoreCounts
        The non-empty bins as distinct scores with their counts and zero positives (the
        score-distribution tests read only the counts).
    """
    keep = counts > 0
    return ScoreCounts(points[keep], counts[keep], np.zeros(int(keep.sum()), np.int64))


def _merge_new(a: dict, b: dict) -> dict:
    """New-class counts of two parts, added per class."""
    return {k: tuple(x + y for x, y in zip(a.get(k, (0, 0, 0)), b.get(k, (0, 0, 0)))) for k in {**a, **b}}


def _add(a, b):
    if a is None or b is None:
        if a is not None or b is not None:
            raise InputError("Cannot merge period statistics where one part has a column (labels, scores or "
                             "prices) and the other does not; the schema changed between parts.")
        return None
    return added(a, b)


@dataclass(frozen=True)
class PeriodStats:
    """Mergeable summary of one period (or reference window): the sufficient statistic of monitoring.

    Parameters
    ----------
    task : {"binary", "multiclass"}
        The classification task.
    labels : numpy.ndarray
        The class list (binary: ``[negative, positive]``); every index below refers to it.
    bins : Bins
        The bins of the histograms.
    n_rows : int
        Rows summarised.
    pred_counts, label_counts : numpy.ndarray of int64, shape (K,)
        Rows per predicted / labelled class (``label_counts`` None when the data has no labels).
    score_counts : numpy.ndarray of int64, shape (S, score_bins + 2), optional
        One histogram per score column: multiclass ``score_<class>`` in label order, binary the
        positive-class score.
    price_counts : numpy.ndarray of int64, shape (K, n_price_bins + 2), optional
        Histogram of log10 prices per predicted class (ONS Annex F).
    weight_by_pred : numpy.ndarray of float, shape (K,), optional
        Sum of the row weights (expenditure) per predicted class.
    performance : BinaryStats or MulticlassStats, optional
        Confusion counts (binary: with binned scores) when labels exist.
    overflow : dict
        Rows in the overflow bins: ``scores_outside_range``, ``prices_outside_range``.
    price_cells : numpy.ndarray of int64, shape (K, K, n_price_bins + 2), optional
        Log10 price histogram of every confusion cell (label, predicted) when labels and prices
        exist and K <= ``MAX_CELL_CLASSES``: the input of the ONS Annex E price impact
        (:func:`~metrics_core.price.price_impact_binned`).
    calibration : CalibrationSet, optional
        Calibration statistics (:mod:`metrics_core.calibration`) on the score bins, one target
        per score column (and the top label, multiclass), when labels and scores exist and the
        score range is [0, 1]: the reference's calibration map and the calibration-change test.
    score_by_pred : numpy.ndarray of int64, shape (K, S, score_bins + 2), optional
        Score histograms per predicted class (when scores exist and K <= ``MAX_CELL_CLASSES``):
        the input of the performance estimate without labels (:mod:`.estimate`).
    positives_by_pred : numpy.ndarray of int64, shape (K, S, score_bins + 2), optional
        Of those rows, the ones whose label is the score column's class (labels present): the
        reference's calibration map per predicted class (:mod:`.calibration_map`).

    new_classes : dict
        Classes outside the class list met in the period when the class list is open
        (:func:`~metrics_core.monitoring.scan.scan_period` with ``open_classes=True``): class (as
        text) -> ``(rows, rows labelled so, rows predicted so)``. Those rows are left out of every
        other statistic (``n_rows`` does not count them; :attr:`n_new_class_rows` does).
    sample : SampleStats, optional
        A monitored period's labelled sample (:func:`update` with ``labelled_sample``): its design
        statistics by stratum (the predicted class), predicted class, coarse score bin and label,
        and the rows of every stratum. Then ``label_counts``, ``performance``, ``calibration``,
        ``positives_by_pred`` and ``price_cells`` hold the labelled rows only, every other
        statistic all rows.
    segments : dict
        Per segment, ``(column, value as text)`` -> the :class:`PeriodStats` of its rows (scanned
        with ``segments=`` in the same pass, :mod:`.segments`); empty when no segment column is watched.
    features : FeatureStats, optional
        The watched input features' statistics (:mod:`metrics_core.monitoring.features`), when
        the scan names features.

    Merge (:meth:`merge`) is the element-wise sum, so statistics of batches, files and Dask
    partitions add up to those of one pass; bins, task and class list must agree.
    """

    task: str
    labels: np.ndarray
    bins: Bins
    n_rows: int
    pred_counts: np.ndarray
    label_counts: np.ndarray | None = None
    score_counts: np.ndarray | None = None
    price_counts: np.ndarray | None = None
    weight_by_pred: np.ndarray | None = None
    performance: BinaryStats | MulticlassStats | None = None
    overflow: dict = field(default_factory=dict)
    price_cells: np.ndarray | None = None
    calibration: CalibrationSet | None = None
    score_by_pred: np.ndarray | None = None
    positives_by_pred: np.ndarray | None = None
    new_classes: dict = field(default_factory=dict)
    sample: SampleStats | None = None
    segments: dict = field(default_factory=dict)
    features: FeatureStats | None = None

    def merge(self, other: "PeriodStats") -> "PeriodStats":
        """The statistics of both parts (element-wise sum); an InputError when bins, task or class
        list differ, or when one part has a column (labels, scores, prices) the other lacks."""
        if self.bins != other.bins or self.task != other.task or not np.array_equal(self.labels, other.labels):
            raise InputError("Cannot merge period statistics with different class lists, tasks or bins.")
        perf = None
        if self.performance is not None or other.performance is not None:
            if self.performance is None or other.performance is None:
                raise InputError("Cannot merge period statistics with and without labels.")
            perf = self.performance.merge(other.performance)
        overflow = {k: self.overflow.get(k, 0) + other.overflow.get(k, 0) for k in {*self.overflow, *other.overflow}}
        merged = PeriodStats(self.task, self.labels, self.bins, self.n_rows + other.n_rows,
                             self.pred_counts + other.pred_counts, _add(self.label_counts, other.label_counts),
                             _add(self.score_counts, other.score_counts), _add(self.price_counts, other.price_counts),
                             _add(self.weight_by_pred, other.weight_by_pred), perf, overflow,
                             _add(self.price_cells, other.price_cells),
                             None if self.calibration is None or other.calibration is None
                             else self.calibration.merge(other.calibration),
                             _add(self.score_by_pred, other.score_by_pred),
                             _add(self.positives_by_pred, other.positives_by_pred))
        if self.sample is not None or other.sample is not None:
            if self.sample is None or other.sample is None:
                raise InputError("Cannot merge period statistics with and without a labelled sample.")
            merged = dataclasses.replace(merged, sample=self.sample.merge(other.sample))
        if self.segments or other.segments:  # per segment, the merge of the parts holding it
            merged = dataclasses.replace(merged, segments={
                k: self.segments[k].merge(other.segments[k]) if k in self.segments and k in other.segments
                else self.segments.get(k) or other.segments[k] for k in {**self.segments, **other.segments}})
        if self.features is not None or other.features is not None:
            merged = dataclasses.replace(merged, features=with_features(self.features, other.features))
        if not (self.new_classes or other.new_classes):
            return merged
        return dataclasses.replace(merged, new_classes=_merge_new(self.new_classes, other.new_classes))

    @property
    def n_new_class_rows(self) -> int:
        """Rows left out because their label or prediction is a class outside the class list."""
        return int(sum(v[0] for v in self.new_classes.values()))

    @property
    def has_labels(self) -> bool:
        """Whether the period had labels."""
        return self.label_counts is not None

    @property
    def n_labelled(self) -> int:
        """Labelled rows (all rows of a fully labelled period; 0 without labels)."""
        return 0 if self.label_counts is None else int(self.label_counts.sum())

    def prevalence(self, source: str = "pred") -> np.ndarray:
        """Share of rows per class on ``"label"`` (of the labelled rows) or ``"pred"`` (nan without labels)."""
        counts = self.pred_counts if source == "pred" else self.label_counts
        total = self.n_rows if source == "pred" else self.n_labelled
        if counts is None or total == 0:
            return np.full(self.labels.size, np.nan)
        return counts / total

    def score_distribution(self, s: int) -> ScoreCounts | None:
        """Score column ``s`` as a ScoreCounts at the bin points (empty bins dropped)."""
        if self.score_counts is None:
            return None
        return binned(self.bins.score_points(), self.score_counts[s])

    @functools.cached_property
    def price_cell_margins(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``price_cells`` summed over the predicted classes, over the labels, and its diagonal:
        (K, W) int64 each, per class c the price histogram of the rows labelled c, of those
        predicted c, and of those both (None without ``price_cells``).

        Summed over the price bins some row falls in (a segment's fill a few of the thousands):
        the same integers as summing the whole cells. Computed once per statistics object (a
        period's kinds read it several times; its histograms do not change after the scan).
        """
        cells = self.price_cells
        if cells is None:
            return None
        k, _, width = cells.shape
        used = np.flatnonzero(np.add.reduce(cells.reshape(k * k, width), axis=0))
        sub = cells[:, :, used]
        out = []
        for part in (sub.sum(axis=1), sub.sum(axis=0), sub[np.arange(k), np.arange(k)]):
            full = np.zeros((k, width), np.int64)
            full[:, used] = part
            out.append(full)
        return tuple(out)

    def price_distribution(self, j: int) -> ScoreCounts | None:
        """log10 prices of predicted class ``j`` as a ScoreCounts at the bin points."""
        if self.price_counts is None:
            return None
        return binned(self.bins.price_points(), self.price_counts[j])

    def class_names(self) -> list[str]:
        """The classes as text, in label order (see :func:`class_name`)."""
        return [class_name(x) for x in self.labels]

    def score_names(self) -> list[str]:
        """Class (as text) whose score each score histogram holds."""
        if self.score_counts is None:
            return []
        names = self.class_names()
        return names[1:] if self.task == "binary" else names


#: Coarse score bins of a labelled sample's statistics: the resolution of the reference's per-class
#: calibration map (:func:`~metrics_core.monitoring.calibration_map.fit_calibration_map`), whose
#: probabilities the model-assisted estimate reads per bin.
SAMPLE_BINS = 100


def sample_bins(bins: Bins, scores: np.ndarray | None, pred_idx: np.ndarray, task: str) -> tuple[np.ndarray, int]:
    """Each row's coarse bin of the score its prediction rests on (binary: the positive-class score,
    multiclass: the predicted class's), and the number of bins: the fine bins summed as
    :func:`~metrics_core.monitoring.calibration_map.coarsen` sums them to :data:`SAMPLE_BINS`. One bin
    without scores or with a score range other than [0, 1] (no calibration map there).

    >>> sample_bins(Bins(), np.array([[0.2, 0.8], [0.999, 0.001]]), np.array([1, 0]), "multiclass")[0].tolist()
    [80, 99]
    """
    if scores is None or tuple(bins.score_range) != (0.0, 1.0):
        return np.zeros(pred_idx.size, np.int64), 1
    own = scores[:, 0] if task == "binary" else scores[np.arange(pred_idx.size), pred_idx]
    b = bins.score_bins
    n_bins = SAMPLE_BINS if b % SAMPLE_BINS == 0 and b > SAMPLE_BINS else b
    return score_bin(own, n_bins, bins), n_bins


def update(task: str, labels: np.ndarray, bins: Bins, pred_idx: np.ndarray, *, label_idx: np.ndarray | None = None,
           scores: np.ndarray | None = None, price: np.ndarray | None = None, weight: np.ndarray | None = None,
           threshold: float = 0.5, design_weight: np.ndarray | None = None,
           labelled_sample: bool = False, sparse: bool = False, design: bool = True) -> PeriodStats:
    """The statistics of one batch (the 'update' step of monitoring).

    Parameters
    ----------
    task : {"binary", "multiclass"}
        The classification task.
    labels : numpy.ndarray
        The class list; ``pred_idx`` and ``label_idx`` index it.
    bins : Bins
        The bins of the histograms.
    pred_idx : numpy.ndarray of int, shape (N,)
        Predicted class of each row.
    label_idx : numpy.ndarray of int, shape (N,), optional
        True class of each row; None without labels (no performance, no price cells).
    scores : numpy.ndarray of float, shape (N, S), optional
        Score columns: one per class (multiclass) or the positive-class score (binary, S = 1).
    price : numpy.ndarray of float, shape (N,), optional
        Prices (> 0), binned on the log10 scale.
    weight : numpy.ndarray of float, shape (N,), optional
        Row weights (expenditure), summed per predicted class.
    threshold : float
        Binary: the decision threshold recorded with the performance statistics.
    design_weight : numpy.ndarray of float, shape (N,), optional
        With ``labelled_sample``: each labelled row's design weight (the inverse of its
        inclusion probability); None = 1 (a simple random sample within each predicted class).
    labelled_sample : bool
        A monitored period whose labels may be a sample: a negative ``label_idx`` marks an
        unlabelled row. ``sample`` then holds the design statistics
        (:func:`~metrics_core.monitoring.sample.sample_update`: strata = predicted classes, bins
        of :func:`sample_bins`; with prices and at most ``MAX_CELL_CLASSES`` classes, the price
        cells' design weights too), the label statistics the labelled rows and every other
        statistic all rows. A batch whose rows are all labelled gives the same statistics as without it,
        plus ``sample``.
    sparse : bool
        The histograms (scores, prices, per predicted class and per cell) as
        :class:`~metrics_core.monitoring.sparse.SparseCounts`: a segment's rows of a batch, added up by
        the scan (the same counts).
    design : bool
        With ``labelled_sample``: compute ``sample`` (:func:`labelled_sample_stats`). False leaves
        it None, the labelled rows still counted apart: a segment's statistics, since a segment is
        judged from its labels only when the period is fully labelled with equal weights (and
        without them otherwise), so its design statistics would never be read.

    Returns
    -------
    PeriodStats
        Counts and histograms of the batch; merge batches with :meth:`PeriodStats.merge`. No
        validation happens here: :func:`~metrics_core.monitoring.scan.scan_period` checks every
        batch first.

    Examples
    --------
    >>> s = update("binary", np.array([0, 1]), Bins(score_bins=10), np.array([0, 1, 1]),
    ...            label_idx=np.array([0, 1, 0]), scores=np.array([[0.2], [0.9], [0.6]]))
    >>> s.pred_counts.tolist(), s.label_counts.tolist(), int(s.score_counts.sum())
    ([1, 2], [2, 1], 3)
    """
    if not labelled_sample or label_idx is None:
        return _update(task, labels, bins, pred_idx, label_idx=label_idx, scores=scores, price=price, weight=weight,
                       threshold=threshold, sparse=sparse)
    on = label_idx >= 0
    sample = labelled_sample_stats(task, labels, bins, pred_idx, label_idx, scores, price, design_weight) \
        if design else None
    if on.all():
        out = _update(task, labels, bins, pred_idx, label_idx=label_idx, scores=scores, price=price, weight=weight,
                      threshold=threshold, sparse=sparse)
    else:
        out = _update(task, labels, bins, pred_idx, scores=scores, price=price, weight=weight, threshold=threshold,
                      sparse=sparse)
        lab = _update(task, labels, bins, pred_idx[on], label_idx=label_idx[on],
                      scores=None if scores is None else scores[on], price=None if price is None else price[on],
                      threshold=threshold, sparse=sparse)
        out = dataclasses.replace(out, label_counts=lab.label_counts, performance=lab.performance,
                                  calibration=lab.calibration, positives_by_pred=lab.positives_by_pred,
                                  price_cells=lab.price_cells)
    return dataclasses.replace(out, sample=sample)


def labelled_sample_stats(task: str, labels: np.ndarray, bins: Bins, pred_idx: np.ndarray, label_idx: np.ndarray,
                          scores: np.ndarray | None = None, price: np.ndarray | None = None,
                          design_weight: np.ndarray | None = None) -> SampleStats:
    """The design statistics of one batch's labelled sample (:func:`update` with ``labelled_sample``):
    :func:`~metrics_core.monitoring.sample.sample_update` with the predicted classes as strata, the
    bins of :func:`sample_bins` and, with prices and at most ``MAX_CELL_CLASSES`` classes, the
    price cells; a negative ``label_idx`` is an unlabelled row."""
    on = label_idx >= 0
    bin_idx, n_bins = sample_bins(bins, scores, pred_idx, task)
    prices = {}
    if price is not None and labels.size <= MAX_CELL_CLASSES:  # the Annex E cells, weighted by the design
        price_idx = np.zeros(pred_idx.size, np.int64)
        price_idx[on] = bins.price_index(price[on])
        prices = {"price_idx": price_idx, "n_price_bins": bins.n_price_bins + 2}
    return sample_update(pred_idx, pred_idx, bin_idx, np.where(on, label_idx, -1), design_weight, None,
                         strata=tuple(class_name(x) for x in labels), n_classes=labels.size, n_bins=n_bins, **prices)


def _outside_range(hist, bin_index: np.ndarray) -> int:
    """Rows in the overflow bins (the first and last of each histogram row), read off a dense
    histogram or counted in the rows' ``bin_index`` when the histogram is sparse."""
    if isinstance(hist, np.ndarray):
        return int(hist[..., 0].sum() + hist[..., -1].sum())
    return int(np.count_nonzero(bin_index == 0) + np.count_nonzero(bin_index == hist.shape[-1] - 1))


def _update(task: str, labels: np.ndarray, bins: Bins, pred_idx: np.ndarray, *, label_idx: np.ndarray | None = None,
            scores: np.ndarray | None = None, price: np.ndarray | None = None, weight: np.ndarray | None = None,
            threshold: float = 0.5, sparse: bool = False) -> PeriodStats:
    """:func:`update` of one batch without a labelled sample."""
    k = labels.size
    n = pred_idx.size
    pred_counts = np.bincount(pred_idx, minlength=k).astype(np.int64, copy=False)
    label_counts = None if label_idx is None else np.bincount(label_idx, minlength=k).astype(np.int64, copy=False)
    overflow: dict = {}
    score_counts = score_by_pred = positives_by_pred = None
    if scores is not None:
        s_cols = scores.shape[1]
        width = bins.score_bins + 2
        own = bins.score_index(scores)
        idx = own + np.arange(s_cols) * width
        score_counts = histogram(idx.ravel(), (s_cols, width), sparse)
        overflow["scores_outside_range"] = _outside_range(score_counts, own)
        if k <= MAX_CELL_CLASSES:
            at = (idx + pred_idx[:, None] * (s_cols * width)).ravel()
            score_by_pred = histogram(at, (k, s_cols, width), sparse)
            if label_idx is not None:
                hit = (label_idx[:, None] == (np.arange(s_cols) + (1 if task == "binary" else 0))).ravel()
                positives_by_pred = histogram(at[hit], (k, s_cols, width), sparse)
    price_counts = weight_by_pred = price_cells = None
    if price is not None:
        width = bins.n_price_bins + 2
        pidx = bins.price_index(price)
        if label_idx is not None and k <= MAX_CELL_CLASSES:
            price_cells = histogram((label_idx * k + pred_idx) * width + pidx, (k, k, width), sparse)
        # counted from the rows, not summed over price_cells' labels (the same integers; the cells are
        # a few MB, read once more per segment and batch)
        price_counts = histogram(pidx + pred_idx * width, (k, width), sparse)
        overflow["prices_outside_range"] = _outside_range(price_counts, pidx)
    if weight is not None:
        weight_by_pred = np.bincount(pred_idx, weights=weight, minlength=k)
    perf = calibration = None
    if scores is not None and label_idx is not None and tuple(bins.score_range) == (0.0, 1.0):
        calibration = calibration_set(task, [class_name(x) for x in labels], label_idx, scores, pred_idx=pred_idx,
                                      fine_bins=bins.score_bins)
    if label_idx is not None:
        conf = ConfusionCounts.from_indices(label_idx, pred_idx, labels)
        if task == "binary":
            sc = None if scores is None else BinnedScoreCounts.from_arrays(label_idx == 1, scores[:, 0],
                                                                           bins.score_edges(), losses=True)
            perf = BinaryStats(conf, sc, n, threshold)
        else:
            perf = MulticlassStats(conf, None, None, n)
    return PeriodStats(task, labels, bins, n, pred_counts, label_counts, score_counts, price_counts,
                       weight_by_pred, perf, overflow, price_cells, calibration, score_by_pred,
                       positives_by_pred)
