"""Mergeable sufficient statistics: confusion counts, exact and binned score counts.

Every metric of metrics_core is computed from these; each documents how it merges, and
merging the statistics of any partition of the rows gives the statistic of all rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from metrics_core._score_kernels import lift_depths, merge_sorted_runs, packed_counts
from metrics_core.errors import InputError
from metrics_core.losses import binned_loss_sums

_MERGE_PIECE = 1 << 18  # entries per piece of a large ScoreCounts merge (2 MB arrays)


@dataclass(frozen=True)
class ConfusionCounts:
    """K x K confusion counts, rows = actual class, columns = predicted class.

    The confusion matrix of ISO/IEC TS 4213:2022 (3.2.7, 6.2.2): the statistic of every threshold
    metric. Merge = element-wise sum (labels must match).

    Parameters
    ----------
    matrix : numpy.ndarray, shape (K, K)
        int64 when unweighted, float64 when weighted.
    labels : numpy.ndarray
        The class values in index order.

    Examples
    --------
    >>> a = ConfusionCounts.from_indices(np.array([0, 1, 1]), np.array([0, 1, 0]), ["n", "y"])
    >>> b = ConfusionCounts.from_indices(np.array([0]), np.array([1]), ["n", "y"])
    >>> a.merge(b).matrix.tolist()
    [[1, 1], [1, 1]]
    """

    matrix: np.ndarray
    labels: np.ndarray

    @classmethod
    def from_indices(cls, true_idx: np.ndarray, pred_idx: np.ndarray, labels, sample_weight=None
                     ) -> "ConfusionCounts":
        """Count (actual, predicted) index pairs in one ``bincount``.

        Parameters
        ----------
        true_idx, pred_idx : numpy.ndarray of int
            Class indices in ``0..len(labels)-1`` of the actual and predicted class of each row.
        labels : array_like
            The K class values.
        sample_weight : numpy.ndarray, optional
            Row weights; the matrix is then float64.

        Returns
        -------
        ConfusionCounts
        """
        labels = np.asarray(labels)
        k = labels.size
        flat = true_idx.astype(np.int64) * k + pred_idx
        if sample_weight is None:
            m = np.bincount(flat, minlength=k * k).astype(np.int64)
        else:
            m = np.bincount(flat, weights=sample_weight, minlength=k * k)
        return cls(m.reshape(k, k), labels)

    def merge(self, other: "ConfusionCounts") -> "ConfusionCounts":
        """The counts of the rows of both parts: the element-wise sum.

        Parameters
        ----------
        other : ConfusionCounts
            Counts over the same labels.

        Returns
        -------
        ConfusionCounts

        Raises
        ------
        InputError
            When the labels differ.
        """
        if not np.array_equal(self.labels, other.labels):
            raise InputError(f"Cannot merge confusion counts over different labels: "
                             f"{self.labels.tolist()} vs {other.labels.tolist()}.")
        return ConfusionCounts(self.matrix + other.matrix, self.labels)

    @property
    def weighted(self) -> bool:
        """True when the counts are weights (float64)."""
        return self.matrix.dtype.kind == "f"

    @property
    def total(self) -> float:
        """The number of rows (or their total weight)."""
        return self.matrix.sum()


@dataclass(frozen=True)
class ScoreCounts:
    """Distinct scores (ascending) with the (weighted) number of positive and negative rows at each.

    The exact sufficient statistic of every threshold-free binary metric (ROC and PR curves,
    AUROC and AUPRC of ISO/IEC TS 4213:2022 6.3.6-6.3.7, average precision, log loss, Brier
    score): its size is the number of distinct scores, not rows. Merge = merge of two sorted
    runs, adding the counts of equal scores.

    Parameters
    ----------
    scores : numpy.ndarray of float64
        Distinct scores, strictly ascending.
    pos, neg : numpy.ndarray
        Positive and negative rows at each score: int64 when unweighted, float64 when weighted.
    one_row_per_score : bool
        True when every score is known to hold exactly one counted row (``pos + neg == 1``):
        :meth:`from_arrays` sets it for distinct unweighted scores, so that the report's kernels
        skip checking it block by block. False means unknown (they check); not compared.

    Examples
    --------
    >>> a = ScoreCounts.from_arrays(np.array([1, 0]), np.array([0.9, 0.4]))
    >>> b = ScoreCounts.from_arrays(np.array([1]), np.array([0.4]))
    >>> m = a.merge(b)
    >>> m.scores.tolist(), m.pos.tolist(), m.neg.tolist()
    ([0.4, 0.9], [1, 1], [1, 0])
    """

    scores: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    one_row_per_score: bool = field(default=False, compare=False, repr=False)

    @classmethod
    def from_arrays(cls, y_true01, y_score, sample_weight=None) -> "ScoreCounts":
        """Count the rows at each distinct score, from one sort of packed (score, label) keys.

        Parameters
        ----------
        y_true01 : array_like of bool or 0/1
            True for the positive rows.
        y_score : array_like of float
            Finite scores (float32 scores are sorted as 32-bit keys).
        sample_weight : array_like, optional
            Row weights; rows of weight 0 leave no score.

        Returns
        -------
        ScoreCounts

        Examples
        --------
        >>> sc = ScoreCounts.from_arrays(np.array([1, 0, 1, 0]), np.array([0.9, 0.4, 0.4, 0.1]))
        >>> sc.scores.tolist(), sc.pos.tolist(), sc.neg.tolist()
        ([0.1, 0.4, 0.9], [0, 1, 1], [1, 1, 0])
        """
        y = np.asarray(y_true01).astype(bool, copy=False)
        s = np.asarray(y_score)
        if s.dtype != np.float32:
            s = s.astype(np.float64, copy=False)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if not s.size or s.min() >= 0:  # (no row-sized mask in the usual case)
            return cls._counted(*packed_counts(s, y, w), rows=s.size if w is None else None)
        negative = s < 0
        # Mixed signs: negate the negative part so it packs too, then reverse it.
        keep = ~negative
        ns, npos, nneg = packed_counts(-s[negative], y[negative], None if w is None else w[negative])
        if keep.any():
            ps, ppos, pneg = packed_counts(s[keep], y[keep], None if w is None else w[keep])
        else:
            ps, ppos, pneg = np.empty(0), np.empty(0, npos.dtype), np.empty(0, nneg.dtype)
        return cls._counted(np.concatenate((-ns[::-1], ps)), np.concatenate((npos[::-1], ppos)),
                            np.concatenate((nneg[::-1], pneg)), rows=s.size if w is None else None)

    @classmethod
    def _counted(cls, scores, pos, neg, rows: int | None) -> "ScoreCounts":
        """Score counts of ``rows`` counted rows (None: weighted): as many distinct scores as rows, none
        of them empty, means one row per score."""
        return cls(scores, pos, neg, one_row_per_score=rows is not None and rows > 0 and scores.size == rows)

    @classmethod
    def of_values(cls, values, sample_weight=None) -> "ScoreCounts":
        """A plain value distribution (labels unknown): every row is counted in ``pos``.

        Used for drift statistics (KS, Wasserstein) on score or price distributions.

        Parameters
        ----------
        values : array_like of float
            Finite values.
        sample_weight : array_like, optional
            Row weights.

        Returns
        -------
        ScoreCounts
            ``neg`` is all 0.

        Examples
        --------
        >>> ScoreCounts.of_values([2.0, 1.0, 2.0]).pos.tolist()
        [1, 2]
        """
        v = np.asarray(values, dtype=np.float64)
        return cls.from_arrays(np.ones(v.size, dtype=bool), v, sample_weight)

    def merge(self, other: "ScoreCounts", piece: int = _MERGE_PIECE) -> "ScoreCounts":
        """Merge two statistics: union of the distinct scores, counts of equal scores added.

        Large merges go piece by piece over score ranges of about ``piece`` entries (the ranges
        cut both sides at the same scores, so equal scores meet in one piece) and the pieces are
        concatenated: the temporaries stay small enough to be reused from the heap instead of
        being fresh mappings the kernel must fault in (see
        :class:`metrics_core.dataset.BucketedScoreMerger`). Same result as one piece.

        Parameters
        ----------
        other : ScoreCounts
            Counts of other rows.
        piece : int
            Entries per piece of a large merge.

        Returns
        -------
        ScoreCounts
            float64 counts when either side is weighted, else int64.
        """
        if self.scores.size + other.scores.size <= 4 * piece:
            return self._merge_runs(other)
        big = self if self.scores.size >= other.scores.size else other
        edges = big.scores[piece::piece]
        cut_a = np.concatenate(([0], np.searchsorted(self.scores, edges), [self.scores.size]))
        cut_b = np.concatenate(([0], np.searchsorted(other.scores, edges), [other.scores.size]))
        parts = [ScoreCounts(self.scores[a0:a1], self.pos[a0:a1], self.neg[a0:a1])._merge_runs(
                 ScoreCounts(other.scores[b0:b1], other.pos[b0:b1], other.neg[b0:b1]))
                 for a0, a1, b0, b1 in zip(cut_a[:-1], cut_a[1:], cut_b[:-1], cut_b[1:])]
        return ScoreCounts(*(np.concatenate([getattr(q, name) for q in parts]) for name in ("scores", "pos", "neg")))

    def _merge_runs(self, other: "ScoreCounts") -> "ScoreCounts":
        """:meth:`merge` in one piece: :func:`metrics_core._score_kernels.merge_sorted_runs`."""
        return ScoreCounts(*merge_sorted_runs(self, other))

    @property
    def weighted(self) -> bool:
        """True when the counts are weights (float64)."""
        return self.pos.dtype.kind == "f"

    @property
    def counts(self) -> np.ndarray:
        """Rows (or weight) at each distinct score: ``pos + neg``."""
        return self.pos + self.neg

    @property
    def n_pos(self):
        """Number (or weight) of positive rows."""
        return self.pos.sum()

    @property
    def n_neg(self):
        """Number (or weight) of negative rows."""
        return self.neg.sum()

    @property
    def total(self):
        """Number (or weight) of all rows."""
        return self.n_pos + self.n_neg

    @classmethod
    def empty(cls, weighted: bool = False) -> "ScoreCounts":
        """The statistic of no rows: the identity of :meth:`merge`.

        Parameters
        ----------
        weighted : bool
            float64 counts when True, else int64.

        Returns
        -------
        ScoreCounts
        """
        dtype = np.float64 if weighted else np.int64
        return cls(np.empty(0), np.empty(0, dtype), np.empty(0, dtype))


@dataclass(frozen=True)
class FoldedScoreCounts(ScoreCounts):
    """:class:`ScoreCounts` whose runs of consecutive negative-only scores are folded into one entry.

    A final statistic, not a mergeable one: rows of another partition may put a positive inside
    a folded run. Made by :func:`fold_negative_runs`; merging it is an error.

    ``lift_depths`` (ascending; not compared) are the depths, rows or weight at or above the
    threshold, of the folded-away scores that the lift curve needs to draw as the unfolded
    statistic's (:func:`metrics_core.curves.lift_of_gain`). None: nothing was folded away.

    Examples
    --------
    >>> f = fold_negative_runs(ScoreCounts(np.array([0.1, 0.2]), np.array([0, 0]), np.array([1, 1])))
    >>> f.scores.tolist(), f.neg.tolist()
    ([0.1], [2])
    """

    lift_depths: np.ndarray | None = field(default=None, compare=False, repr=False)

    def merge(self, other):
        """Always raises :class:`InputError`: merge the statistics before folding them."""
        raise InputError("These score counts were folded for the report (fold_negative_runs, e.g. by a "
                         "class-at-a-time scan_stats) and can no longer be merged. Merge the statistics of the "
                         "partitions first, or scan with by_class=False.")


def fold_negative_runs(sc: ScoreCounts) -> FoldedScoreCounts:
    """Fold each run of consecutive distinct scores that hold only negatives into one entry.

    The entry keeps the run's lowest score and the sum of its negative counts. A run of negatives
    moves the ROC curve along one horizontal segment and adds nothing to average precision (the
    recall does not change), so AUROC, average precision and the ROC curve's vertices are those of
    ``sc`` in exact arithmetic (integer counts give the identical AUROC; average precision and
    weighted sums may differ in the last bits, as the zeros of the folded runs are no longer
    added). The size drops to at most 2 x (scores holding a positive) + 1 entries, which for
    one-vs-rest statistics of a class of prevalence p is about 2p of the rows instead of all of
    them. Folding a folded statistic changes nothing.

    A run is one straight segment of the ROC, PR and gain curves, but not of the lift curve
    (TPR / depth with the TPR fixed: a hyperbola). So the depths of some folded-away scores are
    kept (``lift_depths``): the two scores about each depth T / :data:`LIFT_STEP` ** k (T the
    total), so that between two kept neighbours the depth grows at most by the factor
    ``LIFT_STEP`` and the straight line between them departs from the unfolded curve by at most
    (LIFT_STEP - 1)**2 / 4 of its value (2.5e-7). At most 2 log(T / smallest depth) / log(LIFT_STEP)
    depths: about 37,000 for 100 million rows.

    Parameters
    ----------
    sc : ScoreCounts
        Final (merged) score counts.

    Returns
    -------
    FoldedScoreCounts
        Not mergeable any more.

    Examples
    --------
    >>> sc = ScoreCounts(np.array([0.1, 0.2, 0.3, 0.5, 0.7]), np.array([0, 0, 1, 0, 0]), np.array([1, 2, 1, 1, 1]))
    >>> f = fold_negative_runs(sc)
    >>> f.scores.tolist(), f.pos.tolist(), f.neg.tolist()
    ([0.1, 0.3, 0.5], [0, 1, 0], [3, 1, 2])
    """
    if isinstance(sc, FoldedScoreCounts):
        return sc
    pure = sc.pos == 0
    if pure.size < 2:
        return FoldedScoreCounts(sc.scores, sc.pos, sc.neg)
    starts = np.flatnonzero(np.concatenate(([True], ~(pure[1:] & pure[:-1]))))
    if starts.size == pure.size:
        return FoldedScoreCounts(sc.scores, sc.pos, sc.neg)
    return FoldedScoreCounts(sc.scores[starts], sc.pos[starts], np.add.reduceat(sc.neg, starts),
                             lift_depths=lift_depths(sc.pos, sc.neg, starts, LIFT_STEP))


#: The largest factor between the depths of two neighbouring points of a folded statistic's lift
#: curve inside a folded run (:func:`fold_negative_runs`): the line drawn between them departs
#: from the unfolded curve by at most (LIFT_STEP - 1)**2 / 4 = 2.5e-7 of its value.
LIFT_STEP = 1.001


_BIN_BLOCK = 1 << 16  # scores per block of bin_index


def bin_index(edges: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The bin of each score: ``clip(searchsorted(edges, s, side="right") - 1, 0, B - 1)``.

    Bin ``b`` is ``[edges[b], edges[b+1])``, the last one closed; scores outside the edges go to
    the end bins. Each score's bin is first guessed from its position between the end edges
    (right when the edges are equally spaced, but for rounding next to an edge), then checked
    against the edges; only the scores the guess missed are binary-searched. The result is
    searchsorted's for any edges, and for equal bins the check is several times faster than
    a binary search, whose random steps miss the cache.

    Examples
    --------
    >>> bin_index(np.array([0.0, 0.5, 1.0]), np.array([-1.0, 0.0, 0.5, 0.7, 1.0, 2.0])).tolist()
    [0, 0, 1, 1, 1, 1]
    >>> bin_index(np.array([-np.inf, 0.5, np.inf]), np.array([-1.0, 0.5])).tolist()
    [0, 1]
    """
    last = edges.size - 2
    with np.errstate(over="ignore"):
        scale = (last + 1) / (edges[-1] - edges[0])
    if not (np.isfinite(edges[0]) and np.isfinite(scale) and scale > 0):  # infinite outer edges: no position
        return np.clip(np.searchsorted(edges, s, side="right") - 1, 0, last)
    idx = np.empty(s.size, dtype=np.intp)
    size = min(s.size, _BIN_BLOCK)
    # Reused cache-sized buffers: fresh row-sized temporaries cost more in page faults than the work.
    guess, edge = np.empty(size), np.empty(size)
    right, above = np.empty(size, dtype=bool), np.empty(size, dtype=bool)
    for begin in range(0, s.size, _BIN_BLOCK):
        sb = s[begin:begin + _BIN_BLOCK]
        m = sb.size
        g, e, r, a, ib = guess[:m], edge[:m], right[:m], above[:m], idx[begin:begin + m]
        with np.errstate(over="ignore"):  # a far outside score: inf, clipped to the end bin
            np.subtract(sb, edges[0], out=g)
            g *= scale
        np.clip(g, 0, last, out=g)
        np.copyto(ib, g, casting="unsafe")  # truncation: the floor of a non-negative guess
        np.greater_equal(sb, np.take(edges, ib, out=e), out=r)
        r &= np.less(sb, np.take(edges[1:], ib, out=e), out=a)  # a score on the last edge is searched
        if not r.all():
            missed = np.flatnonzero(~r)
            ib[missed] = np.clip(np.searchsorted(edges, sb[missed], side="right") - 1, 0, last)
    return idx


@dataclass(frozen=True)
class BinnedScoreCounts:
    """Positive and negative (weighted) counts per fixed score bin: constant memory for any stream.

    Bin ``b`` holds scores in ``[edges[b], edges[b+1])`` (the last bin is closed); scores below
    the first edge or above the last fall in the first or last bin. Merge = element-wise sum
    (edges must match). Rows in one bin are treated as tied, so AUROC may differ from the exact
    value by at most :meth:`auroc_error_bound`.

    Parameters
    ----------
    edges : numpy.ndarray
        Strictly increasing bin edges (B + 1 values).
    pos, neg : numpy.ndarray, shape (B,)
        Positive and negative rows per bin: int64 when unweighted, float64 when weighted.
    losses : numpy.ndarray, shape (4, B), optional
        Per bin, the (weighted) sums of its rows' log loss and squared error, positives and
        negatives apart (:func:`metrics_core.losses.binned_loss_sums`): the log loss and Brier
        score of a binned statistic are those of its rows, not of its bin edges. All nan once a
        score fell outside [0, 1]; None when not collected (the one-vs-rest counts of a
        multiclass statistic, whose log loss is a :class:`metrics_core.stats.LossSums`).

    Examples
    --------
    >>> b = BinnedScoreCounts.from_arrays([1, 0, 1], [0.9, 0.2, 0.4], [0.0, 0.5, 1.0])
    >>> b.pos.tolist(), b.neg.tolist(), b.merge(b).pos.tolist()
    ([1, 1], [1, 0], [2, 2])
    """

    edges: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    losses: np.ndarray | None = None

    @classmethod
    def from_arrays(cls, y_true01, y_score, edges, sample_weight=None, losses: bool = False) -> "BinnedScoreCounts":
        """Count the positive and negative rows of each bin (and sum their losses).

        Parameters
        ----------
        y_true01 : array_like of bool or 0/1
            True for the positive rows.
        y_score : array_like of float
            Scores.
        edges : array_like
            Strictly increasing bin edges, at least 2.
        sample_weight : array_like, optional
            Row weights.
        losses : bool
            Also sum the rows' log loss and squared error per bin (``losses``): a binary statistic.

        Returns
        -------
        BinnedScoreCounts

        Raises
        ------
        InputError
            When the edges are not strictly increasing or fewer than 2.
        """
        edges = np.asarray(edges, dtype=np.float64)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise InputError("edges: bin edges must be a strictly increasing 1-D array of at least 2 values.")
        b = edges.size - 1
        s = np.asarray(y_score, dtype=np.float64)
        y = np.asarray(y_true01).astype(bool, copy=False)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        cell = bin_index(edges, s)
        cell += b * y  # the negatives' bins, then the positives': one count for both classes
        counts = np.bincount(cell, weights=w, minlength=2 * b)
        if w is None:
            counts = counts.astype(np.int64, copy=False)
        return cls(edges, counts[b:], counts[:b], binned_loss_sums(y, s, cell, b, w) if losses else None)

    def merge(self, other: "BinnedScoreCounts") -> "BinnedScoreCounts":
        """The counts of the rows of both parts: the element-wise sum (edges must match).

        Parameters
        ----------
        other : BinnedScoreCounts

        Returns
        -------
        BinnedScoreCounts

        Raises
        ------
        InputError
            When the edges differ.
        """
        if not np.array_equal(self.edges, other.edges):
            raise InputError("Cannot merge binned score counts with different bin edges.")
        if (self.losses is None) != (other.losses is None):
            raise ValueError("Cannot merge binned score counts with and without loss sums.")
        losses = None if self.losses is None else self.losses + other.losses
        return BinnedScoreCounts(self.edges, self.pos + other.pos, self.neg + other.neg, losses)

    def as_score_counts(self) -> ScoreCounts:
        """The bins as tied scores at each bin's lower edge (empty bins dropped).

        Returns
        -------
        ScoreCounts
            For the curves and threshold-free metrics of a binned report.
        """
        keep = (self.pos + self.neg) > 0
        return ScoreCounts(self.edges[:-1][keep], self.pos[keep], self.neg[keep])

    def auroc_error_bound(self) -> float:
        """Largest possible |AUROC(binned) - AUROC(exact)|: half the within-bin tie mass.

        Pairs (positive, negative) in the same bin are counted 1/2 but may truly be 0 or 1,
        so the error is at most ``sum_b pos_b * neg_b / (2 P N)``.

        Returns
        -------
        float
            In [0, 1/2]; nan with one class only (P = 0 or N = 0), like the AUROC.

        Examples
        --------
        >>> BinnedScoreCounts.from_arrays([1, 0, 1, 0], [0.9, 0.8, 0.2, 0.1], [0.0, 0.5, 1.0]).auroc_error_bound()
        0.25
        """
        p, n = float(self.pos.sum()), float(self.neg.sum())
        if p == 0 or n == 0:
            return float("nan")
        return float(np.dot(self.pos.astype(np.float64), self.neg.astype(np.float64)) / (2 * p * n))


def auroc_counts(sc) -> "ScoreCounts | BinnedScoreCounts":
    """The counts one-vs-rest AUROC is computed from, the same in a one-pass and a class-at-a-time scan.

    Weighted exact counts are folded (:func:`fold_negative_runs`: float sums round the same way
    only over the same entries), so both scans give bit-identical per-class AUROC; integer and
    binned counts are returned as they are (integer AUROC arithmetic is exact, folded or not,
    and skipping the fold saves about 8% of an in-memory multiclass report).

    Parameters
    ----------
    sc : ScoreCounts or BinnedScoreCounts
        Final one-vs-rest score counts of a class.

    Returns
    -------
    ScoreCounts or BinnedScoreCounts

    Examples
    --------
    >>> sc = ScoreCounts.from_arrays([1, 0, 0], [0.9, 0.2, 0.1], [1.0, 1.0, 1.0])
    >>> type(auroc_counts(sc)).__name__, auroc_counts(sc).scores.tolist()
    ('FoldedScoreCounts', [0.1, 0.9])
    """
    if isinstance(sc, BinnedScoreCounts) or not sc.weighted:
        return sc
    return fold_negative_runs(sc)
