"""Mergeable statistics of a period's labelled sample (stratum, predicted class, score bin, label) and its weights.

A monitored delivery holds all the period's rows, with a label on a sample of them. The
estimators of :mod:`metrics_core.monitoring.survey` need, per stratum, the labelled rows'
design-weighted counts per (predicted class, score bin, label) cell with their sums of squared
weights, and the weight of every row (labelled or not) per (predicted class, score bin): this
module holds those statistics (:class:`SampleStats`), their per-batch update
(:func:`sample_update`), the weight each labelled row carries in the estimate
(:func:`expansion`) and Kish's effective sample size (:func:`effective_sample_size`); the
labelled rows' design-weighted Annex E price cells (:class:`CellSums`, :func:`expanded_cells`)
and whether the weights are unequal (:func:`unequal`); and, in the same layout, each row's score
bin (:func:`score_bin`) and the reference calibration map's P(label | predicted class, score bin)
(:func:`conditional_from_map`) for the model-assisted estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metrics_core.errors import InputError, bad_rows
from metrics_core.monitoring.bins import Bins

__all__ = ["SampleStats", "CellSums", "sample_update", "merged", "expansion", "effective_sample_size", "score_bin",
           "conditional_from_map", "DEFF_LIMIT", "unequal", "expanded_cells"]


@dataclass(frozen=True)
class CellSums:
    """Mergeable sparse sums over a labelled sample's rows per cell of a dense layout ``shape``.

    Parameters
    ----------
    shape : tuple of int
        The dense layout, e.g. (label, predicted class, price bin) for the Annex E price cells.
    code : numpy.ndarray of int64, shape (m,)
        Flat index (``numpy.ravel_multi_index``) of each non-empty cell, sorted and unique.
    rows, dw, dw2 : numpy.ndarray, shape (m,)
        Labelled rows, Σ d·w and Σ (d·w)² per cell (d the design weight, w the row weight).

    Merge adds the cells by code: the sums of two batches' rows are those of their union.

    Examples
    --------
    >>> a = CellSums.of((np.array([0, 1]), np.array([2, 2])), np.array([2.0, 3.0]), (2, 3))
    >>> m = a.merge(a)
    >>> [x.tolist() for x in m.index()], m.dw.tolist(), m.dw2.tolist()
    ([[0, 1], [2, 2]], [4.0, 6.0], [8.0, 18.0])
    """

    shape: tuple[int, ...]
    code: np.ndarray
    rows: np.ndarray
    dw: np.ndarray
    dw2: np.ndarray

    @classmethod
    def of(cls, index: tuple, dw: np.ndarray, shape: tuple[int, ...]) -> "CellSums":
        """The sums of rows at ``index`` (one int array per axis of ``shape``) with weights ``dw``."""
        code = np.ravel_multi_index(tuple(np.asarray(i, np.int64) for i in index), shape).astype(np.int64)
        dw = np.asarray(dw, dtype=np.float64)
        return cls._sum(tuple(shape), code, np.ones(code.size), dw, dw * dw)

    @classmethod
    def _sum(cls, shape, code, rows, dw, dw2, runs: bool = False) -> "CellSums":
        uniq, inv = _cells(code, runs)
        m = uniq.size
        return cls(shape, uniq.astype(np.int64), np.bincount(inv, weights=rows, minlength=m).astype(np.int64),
                   np.bincount(inv, weights=dw, minlength=m), np.bincount(inv, weights=dw2, minlength=m))

    def merge(self, other: "CellSums") -> "CellSums":
        """Both batches' sums (cells added by code); an InputError when the layouts differ."""
        if self.shape != other.shape:
            raise InputError(f"CellSums.merge: the layouts differ ({self.shape} against {other.shape}).")
        return CellSums._sum(self.shape, *(np.concatenate([getattr(self, f), getattr(other, f)])
                                           for f in ("code", "rows", "dw", "dw2")), runs=True)

    def index(self) -> tuple[np.ndarray, ...]:
        """The cells' index along each axis of ``shape``."""
        return tuple(np.asarray(i, np.int64) for i in np.unravel_index(self.code, self.shape))


@dataclass(frozen=True)
class SampleStats:
    """Mergeable statistics of a period's labelled sample, keyed by (stratum, pred, bin, label), sparse.

    Parameters
    ----------
    strata : tuple of str
        Stratum names (default: the predicted classes).
    n_classes : int
        K, classes (labels and predictions share the class list).
    n_bins : int
        B, coarse score bins of the predicted class's score (the calibration map's resolution).
    key : numpy.ndarray of int64, shape (m, 4)
        Stratum, predicted class, score bin and label of each labelled cell, sorted and unique.
    rows : numpy.ndarray of int64, shape (m,)
        Labelled rows per cell.
    dw : numpy.ndarray of float64, shape (m,)
        Sum of ``design_weight * weight`` per cell.
    dw2 : numpy.ndarray of float64, shape (m,)
        Sum of ``(design_weight * weight) ** 2`` per cell.
    population : numpy.ndarray of float64, shape (H, K, B)
        Sum of ``weight`` over ALL rows (labelled or not) by stratum, predicted class and bin.
    population_rows : numpy.ndarray of int64, shape (H,)
        All rows per stratum.
    price_cells : CellSums, optional
        The labelled rows' Σ d·w and Σ (d·w)² per (label, predicted class, log10 price bin) when
        prices exist: the Annex E price cells weighted by the design (:func:`expanded_cells`).
        Strata are then the predicted classes.

    Notes
    -----
    Rows of weight 0 are absent rows (as everywhere in classwatch): they count nowhere. Every
    field is a sum over rows, so :meth:`merge` adds them (the cells of the sparse table by key):
    the merge of two batches' statistics equals the statistics of their union.
    """

    strata: tuple[str, ...]
    n_classes: int
    n_bins: int
    key: np.ndarray
    rows: np.ndarray
    dw: np.ndarray
    dw2: np.ndarray
    population: np.ndarray
    population_rows: np.ndarray
    price_cells: CellSums | None = None

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(H, K, B, K): the dense shape of the cells."""
        return len(self.strata), self.n_classes, self.n_bins, self.n_classes

    @property
    def n_labelled(self) -> int:
        """Labelled rows of positive weight."""
        return int(self.rows.sum())

    def merge(self, other: "SampleStats") -> "SampleStats":
        """The statistics of both batches' rows (cells added by key); the layouts must match.

        Raises
        ------
        InputError
            When the strata, classes or bins differ (the cells would not mean the same).
        """
        return merged([self, other])


def merged(parts: list[SampleStats]) -> SampleStats:
    """``functools.reduce(SampleStats.merge, parts)`` in one aggregation: the same values to the last bit.

    Each cell's sums are added in the parts' order from 0, as the merges one by one add them (a
    merge's sum is ``(0 + a) + b``, and ``0 + s`` is ``s``); one sort of every part's cells instead
    of one per merge (a batch's 50 segments: a fraction of the time).

    Parameters
    ----------
    parts : list of SampleStats
        One or more statistics of one layout, in the order their rows were read.

    Returns
    -------
    SampleStats
        The statistics of all the parts' rows.

    Raises
    ------
    InputError
        When the strata, classes or bins differ (the cells would not mean the same), or some parts
        have prices and others not.

    Examples
    --------
    >>> parts = [sample_update([0, 0], [0, 1], [0, 1], [0, i % 2 - 1], [2.0, 2.0], [0.1 * i, 1.0], strata=("a",),
    ...                        n_classes=2, n_bins=2) for i in range(1, 5)]
    >>> a, b = merged(parts), parts[0].merge(parts[1]).merge(parts[2]).merge(parts[3])
    >>> a.key.tolist() == b.key.tolist() and a.dw.tobytes() == b.dw.tobytes()
    True
    """
    first = parts[0]
    for other in parts[1:]:
        for name in ("strata", "n_classes", "n_bins"):
            if getattr(first, name) != getattr(other, name):
                raise InputError(f"SampleStats.merge: the {name} differ ({getattr(first, name)!r} against "
                                 f"{getattr(other, name)!r}); only statistics of one layout merge.")
        if (first.price_cells is None) != (other.price_cells is None):
            raise InputError("SampleStats.merge: one part has prices and the other not; the schema changed "
                             "between parts.")

    def joined(values) -> np.ndarray:
        return np.concatenate(list(values))

    population, population_rows = first.population, first.population_rows
    for other in parts[1:]:  # in order, as the merges one by one add them
        population, population_rows = population + other.population, population_rows + other.population_rows
    prices = None
    if first.price_cells is not None:
        cells = [p.price_cells for p in parts]
        if any(c.shape != cells[0].shape for c in cells):
            raise InputError(f"CellSums.merge: the layouts differ ({[c.shape for c in cells][:3]}).")
        prices = CellSums._sum(cells[0].shape, *(joined(getattr(c, f) for c in cells)
                                                 for f in ("code", "rows", "dw", "dw2")), runs=True)
    return _aggregate(first, joined(_encode(p.key, p.shape) for p in parts), joined(p.rows for p in parts),
                      joined(p.dw for p in parts), joined(p.dw2 for p in parts), population, population_rows, prices,
                      runs=True)


def _encode(key: np.ndarray, shape: tuple) -> np.ndarray:
    return np.ravel_multi_index(tuple(key.T), shape).astype(np.int64) if key.size else np.empty(0, np.int64)


def _cells(code: np.ndarray, runs: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.unique(code, return_inverse=True)``; ``runs``: ``code`` is a few sorted runs (merged
    tables' cells), which numpy's stable sort (timsort) takes as runs where ``numpy.unique``'s
    quicksort sorts them anew: about half the time for two tables."""
    if not runs:
        return np.unique(code, return_inverse=True)
    order = np.argsort(code, kind="stable")
    ordered = code[order]
    first = np.empty(ordered.size, bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inv = np.empty(code.size, np.intp)
    inv[order] = np.cumsum(first) - 1
    return ordered[first], inv


def _aggregate(like: SampleStats, code, rows, dw, dw2, population, population_rows, price_cells=None,
               runs: bool = False) -> SampleStats:
    """Cells with the same code summed, sorted by key (``runs``: ``code`` is a few sorted runs, :func:`_cells`)."""
    uniq, inv = _cells(code, runs)
    m = uniq.size
    key = np.stack(np.unravel_index(uniq, like.shape), axis=1).astype(np.int64) if m else np.empty((0, 4), np.int64)
    return SampleStats(like.strata, like.n_classes, like.n_bins, key,
                       np.bincount(inv, weights=rows, minlength=m).astype(np.int64),
                       np.bincount(inv, weights=dw, minlength=m), np.bincount(inv, weights=dw2, minlength=m),
                       population, population_rows, price_cells)


def _index(name: str, values, n: int, size: int, low: int = 0, hint: str = "") -> np.ndarray:
    """An integer index column of ``size`` rows with values in [low, n); anything else is an error."""
    x = np.asarray(values)
    if x.shape != (size,):
        raise InputError(f"{name}: expected {size} values (one per row), got shape {x.shape}.")
    if x.dtype.kind not in "iu":
        raise InputError(f"{name}: expected integer indices, got dtype {x.dtype}.")
    bad = (x < low) | (x >= n)
    if bad.any():
        raise bad_rows(name, f"index outside [{low}, {n - 1}]", bad, x, hint)
    return x.astype(np.int64)


def _weights(name: str, values, size: int, mask: np.ndarray, positive: bool) -> np.ndarray:
    """A float weight column (None: ones); on the rows of ``mask``, NaN, inf and negative (or 0) are errors."""
    if values is None:
        return np.ones(size)
    w = np.asarray(values, dtype=np.float64)
    if w.shape != (size,):
        raise InputError(f"{name}: expected {size} values (one per row), got shape {w.shape}.")
    bad = mask & ~(np.isfinite(w) & ((w > 0) if positive else (w >= 0)))
    if bad.any():
        what = "missing, infinite or not positive" if positive else "missing, infinite or negative"
        hint = ("Give every labelled row its design weight, 1 / its inclusion probability."
                if positive else "Weights must be finite and >= 0.")
        raise bad_rows(name, f"{what} value", bad, w, hint)
    return w


def sample_update(stratum_idx, pred_idx, bin_idx, label_idx, design_weight=None, weight=None, *,
                  strata, n_classes: int, n_bins: int, price_idx=None, n_price_bins: int = 0) -> SampleStats:
    """The statistics of one batch of a period's rows, labelled or not.

    Parameters
    ----------
    stratum_idx, pred_idx, bin_idx : array-like of int, shape (n,)
        Each row's stratum (index into ``strata``), predicted class and coarse score bin (of the
        predicted class's score).
    label_idx : array-like of int, shape (n,)
        Each row's label; -1 for an unlabelled row.
    design_weight : array-like of float, optional
        Each labelled row's design weight, 1 / its inclusion probability (ignored on unlabelled
        rows, where it may be NaN). None: 1 for every row (the labelled rows are a simple random
        sample within each stratum; only the weights' ratios within a stratum matter,
        :func:`expansion`).
    weight : array-like of float, optional
        Each row's weight (e.g. expenditure); None: 1. Rows of weight 0 count nowhere.
    strata : sequence of str
        Stratum names.
    n_classes, n_bins : int
        K and B.
    price_idx : array-like of int, shape (n,), optional
        Each row's log10 price bin (:meth:`Bins.price_index`), in [0, ``n_price_bins``): the
        labelled rows' price cells (``price_cells``) are kept.
    n_price_bins : int
        Price bins, overflow bins included.

    Returns
    -------
    SampleStats

    Raises
    ------
    InputError
        Naming the column, the count of bad rows and the first one: an index out of range, a
        labelled row without a finite positive design weight, a NaN, infinite or negative weight.

    Examples
    --------
    >>> s = sample_update([0, 0, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1], [0, -1, 1, 0], [2.0, None, 4.0, 4.0],
    ...                   strata=("a", "b"), n_classes=2, n_bins=2)
    >>> s.key.tolist(), s.dw.tolist(), s.population_rows.tolist()
    ([[0, 0, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], [2.0, 4.0, 4.0], [2, 2])
    """
    strata = tuple(str(s) for s in strata)
    h_n, k_n, b_n = len(strata), int(n_classes), int(n_bins)
    if h_n < 1 or k_n < 1 or b_n < 1:
        raise InputError(f"sample_update: need at least one stratum, class and bin; got {h_n}, {k_n}, {b_n}.")
    if np.ndim(pred_idx) != 1:
        raise InputError(f"pred: expected one predicted class per row (1-D), got shape {np.shape(pred_idx)}.")
    size = len(pred_idx)
    h = _index("stratum", stratum_idx, h_n, size)
    k = _index("pred", pred_idx, k_n, size)
    b = _index("score bin", bin_idx, b_n, size)
    y = _index("label", label_idx, k_n, size, low=-1, hint="Use -1 for an unlabelled row.")
    w = _weights("weight", weight, size, np.ones(size, bool), positive=False)
    labelled = (y >= 0) & (w > 0)
    d = _weights("design_weight", design_weight, size, labelled, positive=True)
    counted = w > 0
    shape = (h_n, k_n, b_n)
    population = np.bincount(np.ravel_multi_index((h[counted], k[counted], b[counted]), shape),
                             weights=w[counted], minlength=h_n * k_n * b_n).reshape(shape)
    population_rows = np.bincount(h[counted], minlength=h_n).astype(np.int64)
    dw = d[labelled] * w[labelled]
    empty = SampleStats(strata, k_n, b_n, np.empty((0, 4), np.int64), np.empty(0, np.int64), np.empty(0),
                        np.empty(0), population, population_rows)
    code = np.ravel_multi_index((h[labelled], k[labelled], b[labelled], y[labelled]), empty.shape).astype(np.int64)
    prices = None
    if price_idx is not None:
        p = _index("price bin", price_idx, int(n_price_bins), size)
        prices = CellSums.of((y[labelled], k[labelled], p[labelled]), dw, (k_n, k_n, int(n_price_bins)))
    return _aggregate(empty, code, np.ones(code.size), dw, dw * dw, population, population_rows, prices)


def expansion(sample: SampleStats) -> tuple[np.ndarray, np.ndarray]:
    """Per stratum, the known total weight W_h and the factor that expands its labelled rows to it.

    Parameters
    ----------
    sample : SampleStats

    Returns
    -------
    (total, factor) : numpy.ndarray, shape (H,)
        ``total[h]`` = W_h, the weight of all the stratum's rows (``population``); ``factor[h]`` =
        W_h / D_h with D_h the stratum's sum of ``design_weight * weight`` over its labelled rows:
        a labelled row i of stratum h stands for ``factor[h] * d_i * w_i`` of the delivery's
        weight. 0 for a stratum without labelled rows.

    Notes
    -----
    Expanding each stratum's design-weighted sample to its known total is post-stratification
    (Holt and Smith 1979; Särndal, Swensson and Wretman 1992, section 7.6): for a stratified simple
    random sample (d_i = N_h / n_h, unit weights) the factor is 1 and the estimates are the
    Horvitz-Thompson ones; otherwise it makes them invariant to the scale of the design weights
    within a stratum and exact on each stratum's total, and it makes design weights of 1 right
    for a sample that is simple random within each stratum.

    Examples
    --------
    >>> s = sample_update([0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 0], [0, -1, -1, 1],
    ...                   strata=("a", "b"), n_classes=2, n_bins=1)
    >>> [x.tolist() for x in expansion(s)]
    [[3.0, 1.0], [3.0, 1.0]]
    """
    total = sample.population.sum(axis=(1, 2))
    d = np.bincount(sample.key[:, 0], weights=sample.dw, minlength=len(sample.strata))
    factor = np.divide(total, d, out=np.zeros_like(total), where=d > 0)
    return total, factor


def effective_sample_size(sample: SampleStats) -> float:
    """Kish's effective sample size of the labelled rows: (Σ a_i)² / Σ a_i².

    Parameters
    ----------
    sample : SampleStats

    Returns
    -------
    float
        With a_i the weight labelled row i carries in the estimate of the delivery: its design
        weight times its weight (``design_weight * weight``), expanded to its stratum's total
        (:func:`expansion`). The number of labelled rows for equal a_i (a simple random sample
        without weights, or a proportionate stratified one); fewer the more unequal they are
        (Kish 1965, section 11.7: the design effect of unequal weighting). 0 without labelled rows.

    Examples
    --------
    >>> s = sample_update([0] * 4 + [1] * 4, [0] * 4 + [1] * 4, [0] * 8, [0, 0, -1, -1, 1, -1, -1, -1],
    ...                   strata=("a", "b"), n_classes=2, n_bins=1)
    >>> round(effective_sample_size(s), 4)  # a: 2 rows of 2, b: 1 row of 4 -> 8^2 / (4 + 4 + 16)
    2.6667
    """
    _, factor = expansion(sample)
    f = factor[sample.key[:, 0]]
    total = float(np.sum(f * sample.dw))
    square = float(np.sum(f * f * sample.dw2))
    return total * total / square if square > 0 else 0.0


#: Kish's design effect of a labelled sample (labelled rows over the effective sample size) above
#: which its rows, taken as they are, no longer stand for the delivery: a simple random sample
#: gives about 1 (1.004 for 5 % of 30,000 rows in eight classes), a sample of 3 % of the common
#: predicted classes and 25 % of the rare ones about 1.5.
DEFF_LIMIT = 1.1


def unequal(sample: SampleStats | None) -> bool:
    """Whether the labelled rows stand for unequal shares of the delivery: Kish's design effect
    (labelled rows over :func:`effective_sample_size`) over :data:`DEFF_LIMIT`, from design
    weights or from sampling rates that differ by stratum. False without labelled rows.

    >>> s = sample_update([0] * 4 + [1] * 4, [0] * 4 + [1] * 4, [0] * 8, [0, 0, -1, -1, 1, -1, -1, -1],
    ...                   strata=("a", "b"), n_classes=2, n_bins=1)
    >>> unequal(s)  # 3 rows over an effective 2.67: design effect 1.125
    True
    """
    if sample is None or sample.rows.sum() == 0:
        return False
    n_eff = effective_sample_size(sample)
    return not n_eff > 0 or float(sample.rows.sum()) / n_eff > DEFF_LIMIT


def expanded_cells(sample: SampleStats, cells: CellSums) -> CellSums:
    """Cells keyed (label, predicted class, ...) with Σ a and Σ a², a = (W_h / D_h) d w the weight
    a labelled row carries in the estimate of the delivery (:func:`expansion`; the stratum h is
    the predicted class, axis 1).

    Parameters
    ----------
    sample : SampleStats
        The labelled sample (strata: the predicted classes).
    cells : CellSums
        Its cells of Σ d·w and Σ (d·w)², e.g. ``sample.price_cells``.

    Returns
    -------
    CellSums
        The same cells, ``dw`` and ``dw2`` multiplied by the factor and its square: summed over a
        group of cells they give its design-weighted histogram and Kish's effective size
        (Σ a)² / Σ a² (Kish 1965, 11.7). A cell of a stratum without labelled rows has factor 0.

    Examples
    --------
    >>> s = sample_update([0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 0], [0, -1, -1, 1], strata=("a", "b"),
    ...                   n_classes=2, n_bins=1, price_idx=[3, 3, 3, 5], n_price_bins=8)
    >>> e = expanded_cells(s, s.price_cells)
    >>> [x.tolist() for x in e.index()], e.dw.tolist(), e.dw2.tolist()
    ([[0, 1], [0, 1], [3, 5]], [3.0, 1.0], [9.0, 1.0])
    """
    _, factor = expansion(sample)
    f = factor[cells.index()[1]]
    return CellSums(cells.shape, cells.code, cells.rows, cells.dw * f, cells.dw2 * f * f)


def score_bin(score, n_bins: int, bins: Bins | None = None) -> np.ndarray:
    """The coarse score bin of each row, as the calibration map bins it.

    Parameters
    ----------
    score : array-like of float, shape (n,)
        Multiclass: each row's predicted class's own score; binary: the positive class's score (the
        score column of ``PeriodStats.score_by_pred``, on which the map is fitted).
    n_bins : int
        Coarse bins: the map's resolution, ``cal_map.cond.shape[-1]`` (100 by default).
    bins : Bins, optional
        The period's fine bins (default ``Bins()``); ``n_bins`` must divide their number.

    Returns
    -------
    numpy.ndarray of int64
        The fine bin (:meth:`Bins.score_index`) summed into runs as
        :func:`~metrics_core.monitoring.calibration_map.coarsen` sums them, so a row's bin is the
        map's bin for it; scores outside the range fall in the first or last bin.

    Examples
    --------
    >>> score_bin([0.0, 0.29, 0.995, 1.0], 100).tolist()
    [0, 29, 99, 99]
    """
    bins = bins or Bins()
    if n_bins < 1 or bins.score_bins % n_bins:
        raise InputError(f"n_bins: {n_bins} does not divide the {bins.score_bins} score bins of the period.")
    fine = bins.score_index(np.asarray(score, dtype=np.float64))
    return np.clip(fine - 1, 0, bins.score_bins - 1) // (bins.score_bins // n_bins)


def conditional_from_map(cal_map, task: str) -> np.ndarray:
    """P(label | predicted class, score bin) [pred, bin, label] from the reference's calibration map.

    Parameters
    ----------
    cal_map : CalibrationMap
        :func:`~metrics_core.monitoring.calibration_map.fit_calibration_map` of the reference.
    task : {"binary", "multiclass"}

    Returns
    -------
    numpy.ndarray of float64, shape (K, B, K)
        Binary: P(positive | pred k, positive score in bin b) = ``cal_map.cond[k, 0, b]``, the
        negative its complement: the label-lag estimate's probabilities
        (:func:`~metrics_core.monitoring.estimate.expected_confusion`). Multiclass: P(label = k |
        pred k, own score in bin b) = ``cal_map.cond[k, k, b]`` (the label-lag estimate's diagonal);
        the rest of the row shared among the other labels as the reference's rows predicted k and
        labelled otherwise are (``cal_map.pos`` summed over bins; evenly when the reference has no
        such row). Each row sums to 1.
    """
    cond = np.asarray(cal_map.cond, dtype=np.float64)
    if task == "binary":
        p = cond[:, 0, :]
        return np.stack([1.0 - p, p], axis=-1)
    k = cond.shape[0]
    eye = np.eye(k, dtype=bool)
    right = cond[np.arange(k), np.arange(k), :]
    wrong = np.where(eye, 0.0, np.asarray(cal_map.pos, dtype=np.float64).sum(axis=-1))
    total = wrong.sum(axis=1, keepdims=True)
    even = np.where(eye, 0.0, 1.0 / max(k - 1, 1))
    share = np.divide(wrong, total, out=even.copy(), where=total > 0)
    out = (1.0 - right)[:, :, None] * share[:, None, :]
    out[np.arange(k), :, np.arange(k)] = right
    return out
