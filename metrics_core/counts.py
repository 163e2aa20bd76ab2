"""Mergeable sufficient statistics: confusion counts, exact and binned score counts.

Every metric of metrics_core is computed from these; each documents how it merges, and
merging the statistics of any partition of the rows gives the statistic of all rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from metrics_core.errors import InputError

_BLOCK = 1 << 20  # rows per block in run detection: bounds the temporaries
_MERGE_PIECE = 1 << 18  # entries per piece of a large ScoreCounts merge (2 MB arrays)


@dataclass(frozen=True)
class ConfusionCounts:
    """K x K counts, rows = actual class, columns = predicted class (ISO 4213 3.2.1).

    ``matrix`` is int64 when unweighted and float64 when weighted; ``labels`` holds the class
    values in index order. Merge = element-wise sum (labels must match).
    """

    matrix: np.ndarray
    labels: np.ndarray

    @classmethod
    def from_indices(cls, true_idx: np.ndarray, pred_idx: np.ndarray, labels, sample_weight=None
                     ) -> "ConfusionCounts":
        """Count (actual, predicted) index pairs; indices are in ``0..len(labels)-1``."""
        labels = np.asarray(labels)
        k = labels.size
        flat = true_idx.astype(np.int64) * k + pred_idx
        if sample_weight is None:
            m = np.bincount(flat, minlength=k * k).astype(np.int64)
        else:
            m = np.bincount(flat, weights=sample_weight, minlength=k * k)
        return cls(m.reshape(k, k), labels)

    def merge(self, other: "ConfusionCounts") -> "ConfusionCounts":
        """Sum of two confusion matrices over the same labels."""
        if not np.array_equal(self.labels, other.labels):
            raise InputError(f"Cannot merge confusion counts over different labels: "
                             f"{self.labels.tolist()} vs {other.labels.tolist()}.")
        return ConfusionCounts(self.matrix + other.matrix, self.labels)

    @property
    def weighted(self) -> bool:
        return self.matrix.dtype.kind == "f"

    @property
    def total(self) -> float:
        return self.matrix.sum()


def _sort_keys(key: np.ndarray, w: np.ndarray | None):
    """Sort unsigned keys (carrying weights along); polars' sort is 2-4x faster than numpy's here."""
    if w is None:
        if key.size < 100_000:
            key.sort()
            return key, None
        return pl.Series(key).sort(multithreaded=False).to_numpy(), None
    frame = pl.DataFrame({"k": key, "w": w}).sort("k", multithreaded=False)
    return frame["k"].to_numpy(), frame["w"].to_numpy()


def _changes(key: np.ndarray, ignore_low_bit: bool) -> np.ndarray:
    """Bool mask of the positions where a sorted key starts a new run (computed in blocks)."""
    n = key.size
    change = np.empty(n, dtype=bool)
    change[0] = True
    limit = 1 if ignore_low_bit else 0
    for begin in range(1, n, _BLOCK):
        end = min(begin + _BLOCK, n)
        np.greater(key[begin:end] ^ key[begin - 1:end - 1], limit, out=change[begin:end])
    return change


def _packed_counts(scores: np.ndarray, y: np.ndarray, w: np.ndarray | None = None):
    """Distinct non-negative scores with positive/negative (weighted) counts from ONE sort.

    For scores >= 0 the float bits order as unsigned integers and the sign bit is free, so
    ``bits << 1 | label`` sorts by score and keeps the label in the lowest bit (the shift also
    maps -0.0 onto 0.0). float32 scores pack into 32-bit keys: half the memory and sort time.
    """
    utype = np.uint32 if scores.dtype == np.float32 else np.uint64
    key = scores.view(utype) << utype(1)
    np.bitwise_or(key, y, out=key, casting="unsafe")
    key, w = _sort_keys(key, w)
    n = key.size
    if n == 0:
        empty = np.empty(0, dtype=np.int64 if w is None else np.float64)
        return np.empty(0), empty, empty.copy()

    def as_scores(bits):
        return (bits >> utype(1)).view(np.float32 if utype is np.uint32 else np.float64).astype(np.float64)

    if w is not None:
        # Sum the weights of each (score, label) run, then fold the two labels of a score.
        runs = np.flatnonzero(_changes(key, ignore_low_bit=False))
        wsum = np.add.reduceat(w, runs)
        first = key[runs]
        positive = (first & utype(1)).astype(bool)
        starts = np.flatnonzero(_changes(first, ignore_low_bit=True))
        pos = np.add.reduceat(np.where(positive, wsum, 0.0), starts)
        neg = np.add.reduceat(np.where(positive, 0.0, wsum), starts)
        keep = (pos + neg) > 0  # zero-weight rows are not thresholds (scikit-learn drops them too)
        return as_scores(first[starts])[keep], pos[keep], neg[keep]
    change = _changes(key, ignore_low_bit=True)
    labels = key & utype(1)
    if change.all():  # every score distinct: no grouping needed
        pos = labels.astype(np.int64)
        return as_scores(key), pos, 1 - pos
    starts = np.flatnonzero(change)
    del change
    pos = np.add.reduceat(labels, starts).astype(np.int64)
    neg = np.diff(starts, append=n) - pos
    return as_scores(key[starts]), pos, neg


@dataclass(frozen=True)
class ScoreCounts:
    """Distinct scores (ascending) with the (weighted) number of positive and negative rows at each.

    The exact sufficient statistic of every threshold-free binary metric (ROC, PR, AUROC,
    AP, log loss, Brier): its size is the number of distinct scores, not rows. Merge = merge of
    two sorted runs, adding the counts of equal scores. ``pos``/``neg`` are int64 when
    unweighted and float64 when weighted.
    """

    scores: np.ndarray
    pos: np.ndarray
    neg: np.ndarray

    @classmethod
    def from_arrays(cls, y_true01, y_score, sample_weight=None) -> "ScoreCounts":
        """Build from 0/1 (or bool) labels and finite scores, optionally weighted.

        >>> sc = ScoreCounts.from_arrays(np.array([1, 0, 1, 0]), np.array([0.9, 0.4, 0.4, 0.1]))
        >>> sc.scores.tolist(), sc.pos.tolist(), sc.neg.tolist()
        ([0.1, 0.4, 0.9], [0, 1, 1], [1, 1, 0])
        """
        y = np.asarray(y_true01).astype(bool, copy=False)
        s = np.asarray(y_score)
        if s.dtype != np.float32:
            s = s.astype(np.float64, copy=False)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        negative = s < 0
        if not negative.any():
            return cls(*_packed_counts(s, y, w))
        # Mixed signs: negate the negative part so it packs too, then reverse it.
        keep = ~negative
        ns, npos, nneg = _packed_counts(-s[negative], y[negative], None if w is None else w[negative])
        if keep.any():
            ps, ppos, pneg = _packed_counts(s[keep], y[keep], None if w is None else w[keep])
        else:
            ps, ppos, pneg = np.empty(0), np.empty(0, npos.dtype), np.empty(0, nneg.dtype)
        return cls(np.concatenate((-ns[::-1], ps)), np.concatenate((npos[::-1], ppos)),
                   np.concatenate((nneg[::-1], pneg)))

    @classmethod
    def of_values(cls, values, sample_weight=None) -> "ScoreCounts":
        """A plain value distribution (labels unknown): every row is counted in ``pos``.

        Used for drift statistics (KS, Wasserstein) on score or price distributions.
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
        """:meth:`merge` in one piece.

        Both score arrays are already sorted and distinct, so this is a merge of two sorted runs
        (issue 7: it replaced np.unique + np.add.at, 3-5x slower on tens of millions of scores).
        Disjoint score ranges (range-partitioned data) are concatenated; a small statistic is
        inserted into a large one by binary search (O(m log n) + one copy); similar sizes use
        numpy's stable sort, a timsort that merges the two runs in linear time. Equal scores add
        as ``self + other`` in every case, so results are identical to the old code.
        """
        dtype = np.float64 if (self.weighted or other.weighted) else np.int64
        a, b = (self, other) if self.scores.size >= other.scores.size else (other, self)
        if b.scores.size == 0:
            return ScoreCounts(a.scores, a.pos.astype(dtype, copy=False), a.neg.astype(dtype, copy=False))
        lo, hi = (self, other) if self.scores[-1] < other.scores[0] else (other, self)
        if lo.scores[-1] < hi.scores[0]:
            return ScoreCounts(np.concatenate((lo.scores, hi.scores)), np.concatenate((lo.pos, hi.pos)).astype(dtype),
                               np.concatenate((lo.neg, hi.neg)).astype(dtype))
        if b.scores.size * 16 <= a.scores.size:
            # Insert b into a: where each b score goes, which of them already exist in a.
            at = np.searchsorted(a.scores, b.scores)
            found = at < a.scores.size
            found[found] = a.scores[at[found]] == b.scores[found]
            pos, neg = a.pos.astype(dtype), a.neg.astype(dtype)  # copies
            # a + b in the order self + other (float addition is commutative for two operands)
            pos[at[found]] += b.pos[found]
            neg[at[found]] += b.neg[found]
            new = ~found
            slots = at[new] + np.arange(int(new.sum()))  # final positions of b's new scores
            old = np.ones(a.scores.size + slots.size, dtype=bool)
            old[slots] = False
            out = []
            for av, bv in ((a.scores, b.scores), (pos, b.pos), (neg, b.neg)):
                merged = np.empty(old.size, dtype=av.dtype)
                merged[slots] = bv[new]
                merged[old] = av
                out.append(merged)
            return ScoreCounts(*out)
        scores = np.concatenate((self.scores, other.scores))
        order = np.argsort(scores, kind="stable")  # timsort: finds the two runs and merges them
        scores = scores[order]
        pos = np.concatenate((self.pos, other.pos)).astype(dtype, copy=False)[order]
        neg = np.concatenate((self.neg, other.neg)).astype(dtype, copy=False)[order]
        del order
        # Each side is distinct, so a score occurs at most twice, self's copy first (stable sort).
        first = np.flatnonzero(scores[1:] == scores[:-1])
        if first.size == 0:
            return ScoreCounts(scores, pos, neg)
        pos[first] += pos[first + 1]
        neg[first] += neg[first + 1]
        keep = np.ones(scores.size, dtype=bool)
        keep[first + 1] = False
        return ScoreCounts(scores[keep], pos[keep], neg[keep])

    @property
    def weighted(self) -> bool:
        return self.pos.dtype.kind == "f"

    @property
    def counts(self) -> np.ndarray:
        return self.pos + self.neg

    @property
    def n_pos(self):
        return self.pos.sum()

    @property
    def n_neg(self):
        return self.neg.sum()

    @property
    def total(self):
        return self.n_pos + self.n_neg

    @classmethod
    def empty(cls, weighted: bool = False) -> "ScoreCounts":
        dtype = np.float64 if weighted else np.int64
        return cls(np.empty(0), np.empty(0, dtype), np.empty(0, dtype))


@dataclass(frozen=True)
class FoldedScoreCounts(ScoreCounts):
    """:class:`ScoreCounts` whose runs of consecutive negative-only scores are folded into one entry.

    A final statistic, not a mergeable one: rows of another partition may put a positive inside
    a folded run. Made by :func:`fold_negative_runs`; merging it is an error.
    """

    def merge(self, other):
        raise InputError("These score counts were folded for the report (fold_negative_runs, e.g. by a "
                         "class-at-a-time scan_stats) and can no longer be merged. Merge the statistics of the "
                         "partitions first, or scan with by_class=False.")


def fold_negative_runs(sc: ScoreCounts) -> FoldedScoreCounts:
    """Fold each run of consecutive distinct scores that hold only negatives into one entry.

    The entry keeps the run's lowest score and the sum of its negative counts. A run of negatives
    moves the ROC curve along one horizontal segment and adds nothing to average precision (the
    recall does not change), so AUROC, average precision and the ROC curve's vertices are those of
    ``sc`` in exact arithmetic (integer counts give the identical AUROC; average precision and
    weighted sums may differ in the last bits, as the zeros of the folded runs are no longer added). The size drops to at most 2 x (scores holding a positive) + 1 entries, which
    for one-vs-rest statistics of a class of prevalence p is about 2p of the rows instead of all
    of them. Folding a folded statistic changes nothing.

    >>> sc = ScoreCounts(np.array([0.1, 0.2, 0.3, 0.5, 0.7]), np.array([0, 0, 1, 0, 0]), np.array([1, 2, 1, 1, 1]))
    >>> f = fold_negative_runs(sc)
    >>> f.scores.tolist(), f.pos.tolist(), f.neg.tolist()
    ([0.1, 0.3, 0.5], [0, 1, 0], [3, 1, 2])
    """
    pure = sc.pos == 0
    if pure.size < 2:
        return FoldedScoreCounts(sc.scores, sc.pos, sc.neg)
    starts = np.flatnonzero(np.concatenate(([True], ~(pure[1:] & pure[:-1]))))
    if starts.size == pure.size:
        return FoldedScoreCounts(sc.scores, sc.pos, sc.neg)
    return FoldedScoreCounts(sc.scores[starts], sc.pos[starts], np.add.reduceat(sc.neg, starts))


@dataclass(frozen=True)
class BinnedScoreCounts:
    """Positive and negative (weighted) counts per fixed score bin: constant memory for any stream.

    Bin ``b`` holds scores in ``[edges[b], edges[b+1])`` (the last bin is closed); scores below
    the first edge or above the last fall in the first or last bin. Merge = element-wise sum
    (edges must match). Rows in one bin are treated as tied, so AUROC may differ from the exact
    value by at most :meth:`auroc_error_bound`.
    """

    edges: np.ndarray
    pos: np.ndarray
    neg: np.ndarray

    @classmethod
    def from_arrays(cls, y_true01, y_score, edges, sample_weight=None) -> "BinnedScoreCounts":
        edges = np.asarray(edges, dtype=np.float64)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise InputError("edges: bin edges must be a strictly increasing 1-D array of at least 2 values.")
        b = edges.size - 1
        idx = np.clip(np.searchsorted(edges, np.asarray(y_score, dtype=np.float64), side="right") - 1, 0, b - 1)
        y = np.asarray(y_true01).astype(bool, copy=False)
        if sample_weight is None:
            pos = np.bincount(idx[y], minlength=b).astype(np.int64)
            neg = np.bincount(idx[~y], minlength=b).astype(np.int64)
        else:
            w = np.asarray(sample_weight, dtype=np.float64)
            pos = np.bincount(idx[y], weights=w[y], minlength=b)
            neg = np.bincount(idx[~y], weights=w[~y], minlength=b)
        return cls(edges, pos, neg)

    def merge(self, other: "BinnedScoreCounts") -> "BinnedScoreCounts":
        if not np.array_equal(self.edges, other.edges):
            raise InputError("Cannot merge binned score counts with different bin edges.")
        return BinnedScoreCounts(self.edges, self.pos + other.pos, self.neg + other.neg)

    def as_score_counts(self) -> ScoreCounts:
        """The bins as tied scores at each bin's lower edge (empty bins dropped)."""
        keep = (self.pos + self.neg) > 0
        return ScoreCounts(self.edges[:-1][keep], self.pos[keep], self.neg[keep])

    def auroc_error_bound(self) -> float:
        """Largest possible |AUROC(binned) - AUROC(exact)|: half the within-bin tie mass.

        Pairs (positive, negative) in the same bin are counted 1/2 but may truly be 0 or 1,
        so the error is at most ``sum_b pos_b * neg_b / (2 P N)``; nan with one class only.
        """
        p, n = float(self.pos.sum()), float(self.neg.sum())
        if p == 0 or n == 0:
            return float("nan")
        return float(np.dot(self.pos.astype(np.float64), self.neg.astype(np.float64)) / (2 * p * n))


def auroc_counts(sc) -> "ScoreCounts | BinnedScoreCounts":
    """The counts one-vs-rest AUROC is computed from, so that a one-pass and a class-at-a-time
    scan give bit-identical per-class AUROC: weighted exact counts folded
    (:func:`fold_negative_runs`: float sums round the same way only over the same entries);
    integer counts and binned counts as they are (integer AUROC arithmetic is exact, folded or
    not, and skipping the fold saves about 8% of an in-memory multiclass report)."""
    if isinstance(sc, BinnedScoreCounts) or not sc.weighted:
        return sc
    return fold_negative_runs(sc)
