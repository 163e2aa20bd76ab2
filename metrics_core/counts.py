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


def _run_length(sorted_keys: np.ndarray) -> np.ndarray:
    """Start index of each run of equal values in a sorted array."""
    change = np.empty(sorted_keys.size, dtype=bool)
    change[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=change[1:])
    return np.flatnonzero(change)


def _sort_u64(key: np.ndarray) -> np.ndarray:
    """Sort unsigned 64-bit keys; polars' radix sort is 2-4x faster than numpy's here."""
    if key.size < 100_000:
        key.sort()
        return key
    return pl.Series(key).sort(multithreaded=False).to_numpy()


def _packed_counts(scores: np.ndarray, y: np.ndarray):
    """Distinct non-negative scores with positive/negative counts from ONE sort of packed keys.

    For scores >= 0 the float64 bits order as unsigned integers and the sign bit is free, so
    ``bits << 1 | label`` sorts by score and keeps the label in the lowest bit (the shift also
    maps -0.0 onto 0.0).
    """
    key = scores.view(np.uint64) << np.uint64(1)
    np.bitwise_or(key, y, out=key, casting="unsafe")
    key = _sort_u64(key)
    n = key.size
    # A run of one score ends where the keys differ above the label bit: key[i] ^ key[i-1] > 1.
    change = np.empty(n, dtype=bool)
    change[0] = True
    for begin in range(1, n, _BLOCK):
        end = min(begin + _BLOCK, n)
        np.greater(key[begin:end] ^ key[begin - 1:end - 1], 1, out=change[begin:end])
    labels = key & np.uint64(1)
    if change.all():  # every score distinct: no grouping needed
        pos = labels.astype(np.int64)
        return (key >> np.uint64(1)).view(np.float64), pos, 1 - pos
    starts = np.flatnonzero(change)
    del change
    pos = np.add.reduceat(labels, starts).astype(np.int64)
    neg = np.diff(starts, append=n) - pos
    return (key[starts] >> np.uint64(1)).view(np.float64), pos, neg


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
        s = np.asarray(y_score, dtype=np.float64)
        if sample_weight is None:
            negative = s < 0
            if not negative.any():
                return cls(*_packed_counts(s, y))
            # Mixed signs: negate the negative part so it packs too, then reverse it.
            ns, npos, nneg = _packed_counts(-s[negative], y[negative])
            ps, ppos, pneg = _packed_counts(s[~negative], y[~negative]) if (~negative).any() else (
                np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64))
            return cls(np.concatenate((-ns[::-1], ps)), np.concatenate((npos[::-1], ppos)),
                       np.concatenate((nneg[::-1], pneg)))
        w = np.asarray(sample_weight, dtype=np.float64)
        s = s + 0.0  # -0.0 and 0.0 are one score
        order = np.argsort(s, kind="stable")
        ss = s[order]
        starts = _run_length(ss)
        wo = w[order]
        yo = y[order]
        pos = np.add.reduceat(np.where(yo, wo, 0.0), starts)
        neg = np.add.reduceat(np.where(yo, 0.0, wo), starts)
        return cls(ss[starts], pos, neg)

    @classmethod
    def of_values(cls, values, sample_weight=None) -> "ScoreCounts":
        """A plain value distribution (labels unknown): every row is counted in ``pos``.

        Used for drift statistics (KS, Wasserstein) on score or price distributions.
        """
        v = np.asarray(values, dtype=np.float64)
        return cls.from_arrays(np.ones(v.size, dtype=bool), v, sample_weight)

    def merge(self, other: "ScoreCounts") -> "ScoreCounts":
        """Merge two statistics: union of the distinct scores, counts of equal scores added."""
        scores = np.concatenate((self.scores, other.scores))
        distinct, inverse = np.unique(scores, return_inverse=True)
        weighted = self.weighted or other.weighted
        pos_all = np.concatenate((self.pos, other.pos)).astype(np.float64 if weighted else np.int64)
        neg_all = np.concatenate((self.neg, other.neg)).astype(np.float64 if weighted else np.int64)
        pos = np.zeros(distinct.size, dtype=pos_all.dtype)
        neg = np.zeros(distinct.size, dtype=neg_all.dtype)
        np.add.at(pos, inverse, pos_all)
        np.add.at(neg, inverse, neg_all)
        return ScoreCounts(distinct, pos, neg)

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
