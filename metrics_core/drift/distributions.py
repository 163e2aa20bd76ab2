"""Value distributions for drift tests: exact (ScoreCounts) or binned (Histogram), and their alignment."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

import numpy as np

from metrics_core.counts import ScoreCounts
from metrics_core.errors import InputError
from metrics_core.significance.base import _sample


def _edges(edges: Any) -> np.ndarray:
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim == 0:  # a number of bins given as a float (10.0), not edges
        hint = f"; use {int(e)}" if float(e).is_integer() else ""
        raise InputError(f"bins: expected an int (the number of reference-quantile bins) or a strictly increasing "
                         f"1-D array of bin edges, got {edges!r}{hint}.")
    if e.ndim != 1 or e.size < 2 or np.isnan(e).any() or np.any(np.diff(e) <= 0):
        raise InputError(f"edges: bin edges must be a strictly increasing 1-D array of at least 2 numbers "
                         f"(-inf/+inf allowed at the ends), got {e.tolist()[:10]!r}.")
    return e


class _Dist(NamedTuple):
    """A validated value distribution: distinct ascending finite ``scores`` and their ``counts``."""

    scores: np.ndarray
    counts: np.ndarray

    @property
    def total(self):
        return self.counts.sum()


def _from_score_counts(sc: ScoreCounts, name: str) -> _Dist:
    """Validate a ScoreCounts (finite ascending scores, counts >= 0, total > 0): linear, no copies."""
    counts = sc.pos if not sc.neg.any() else sc.pos + sc.neg
    scores = np.asarray(sc.scores, dtype=np.float64)  # float32 statistics widen exactly
    if counts.size == 0 or counts.shape != scores.shape or not counts.sum() > 0:
        raise InputError(f"{name}: the statistic is empty (total count 0). Summarise at least one row.")
    if counts.min() < 0 or (counts.dtype.kind == "f" and not np.isfinite(counts).all()):
        i = int(np.flatnonzero(~(counts >= 0))[0])
        raise InputError(f"{name}: negative or NaN count at score {scores[i]!r} ({counts[i]!r}). "
                         f"Counts must be >= 0.")
    if not (np.isfinite(scores[0]) and np.isfinite(scores[-1]) and np.all(scores[1:] > scores[:-1])):
        raise InputError(f"{name}: scores must be finite, distinct and ascending (build the statistic with "
                         f"value_distribution, ScoreCounts.of_values or merge).")
    return _Dist(scores, counts)


def _at_size(d: _Dist, n: float, name: str) -> _Dist:
    """The distribution's counts rescaled to sum to ``n`` (an effective sample size); int64 when
    that makes them whole numbers (to 1e-9), so equal weights give the unweighted test exactly."""
    n = float(n)
    if not (math.isfinite(n) and n > 0):
        raise InputError(f"n_effective: the {name} effective sample size must be finite and > 0, got {n!r}.")
    counts = d.counts * (n / float(d.total))
    whole = np.rint(counts)
    if np.all(np.abs(counts - whole) <= 1e-9 * max(n, 1.0)):
        return _Dist(d.scores, whole.astype(np.int64))
    return _Dist(d.scores, counts)


def at_effective_size(distribution, n: float) -> ScoreCounts:
    """A weighted value distribution with its counts rescaled to sum to its effective sample size.

    Parameters
    ----------
    distribution : array-like or ScoreCounts
        Raw samples or a (weighted) value distribution.
    n : float
        Its effective sample size (e.g. Kish's (Σ w)² / Σ w² of a design-weighted sample), > 0.

    Returns
    -------
    ScoreCounts
        The same values, counts ``c * n / Σ c``: the distribution is unchanged, its total is ``n``.
        The counts are integers when that makes them whole numbers (to 1e-9 of ``n``: equal
        weights, or an unweighted distribution at its row count), so a test on them is exactly
        the unweighted test.

    Examples
    --------
    >>> at_effective_size(ScoreCounts(np.array([1.0, 2.0]), np.array([20.0, 60.0]), np.zeros(2, np.int64)), 4).pos
    array([1, 3])
    """
    d = _at_size(_dist(distribution, "distribution"), n, "distribution")
    return ScoreCounts(d.scores, d.counts, np.zeros(d.counts.size, np.int64))


def _weights(sample_weight: Any, v: np.ndarray) -> np.ndarray:
    """One finite weight >= 0 per value of ``v``."""
    w = _sample(sample_weight, "sample_weight")
    if w.size != v.size or w.min() < 0:
        raise InputError(f"sample_weight: needs one weight >= 0 per value ({v.size}), got {w.size} "
                         f"weights with minimum {w.min()!r}.")
    return w


def value_distribution(values, sample_weight=None) -> ScoreCounts:
    """The exact value distribution of raw samples, the mergeable statistic of the exact tests.

    Parameters
    ----------
    values : array-like of float
        Raw samples (list, numpy, polars Series, pyarrow Array); NaN or infinite values are an
        error naming the row.
    sample_weight : array-like of float, optional
        One weight >= 0 per value.

    Returns
    -------
    ScoreCounts
        Distinct ascending values in ``scores`` and their counts (or summed weights) in
        ``pos``; merge partitions with ``ScoreCounts.merge``.

    Notes
    -----
    ``ScoreCounts.of_values`` after the input check; -0.0 counts as 0.0. Every test of
    :mod:`metrics_core.drift` accepts this statistic in place of the rows.

    Examples
    --------
    >>> sc = value_distribution([0.3, 0.1, 0.3])
    >>> sc.scores.tolist(), sc.pos.tolist()
    ([0.1, 0.3], [1, 2])
    """
    v = _sample(values, "values")
    if sample_weight is None:
        return ScoreCounts.of_values(v)
    return ScoreCounts.of_values(v, _weights(sample_weight, v))


def _dist(x: Any, name: str) -> _Dist:
    """Exact value distribution of raw samples (validated) or of a given ScoreCounts."""
    if isinstance(x, _Dist):
        return x
    if isinstance(x, ScoreCounts):
        return _from_score_counts(x, name)
    if isinstance(x, (Histogram, Mapping)):
        raise InputError(f"{name}: this test needs the exact values (raw samples or ScoreCounts), not a "
                         f"{type(x).__name__}; binned data cannot give an exact KS or Wasserstein distance.")
    sc = ScoreCounts.of_values(_sample(x, name))
    return _Dist(sc.scores, sc.pos)


def _quantiles(sc: _Dist, q: np.ndarray) -> np.ndarray:
    """Quantiles of the distribution in ``sc``, equal to ``np.quantile`` on the rows.

    Unweighted (integer counts): numpy's default 'linear' method (virtual index (n - 1) q,
    interpolated with numpy's own lerp); weighted: 'inverted_cdf' (numpy's weighted method).
    """
    counts = sc.counts
    cum = np.cumsum(counts)
    total = cum[-1]
    if counts.dtype.kind == "f":
        idx = np.searchsorted(cum / total, q, side="left")
        return sc.scores[np.minimum(idx, sc.scores.size - 1)]
    return quantile_rows(sc.scores, cum[None, :], q)[0]


def quantile_rows(points: np.ndarray, cum: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Quantiles ``q`` of each row of integer cumulative counts ``cum`` (P, G) over the values ``points`` (G,).

    numpy's default 'linear' method on the rows the counts stand for (virtual index (n - 1) q,
    interpolated with numpy's own lerp), as :func:`_quantiles`: a value of count 0 is never
    returned (the search finds the first value whose cumulative count passes the index), so
    the rows may hold the empty bins of a histogram. Returns (P, len(q)).
    """
    rows = cum.shape[0]
    total = cum[:, -1:]
    virtual = (total - 1) * q
    prev = np.floor(virtual)
    nxt = prev + 1
    top = virtual >= total - 1
    prev[top], nxt[top] = np.broadcast_to(total - 1, top.shape)[top], np.broadcast_to(total - 1, top.shape)[top]
    gamma = virtual - prev
    # one search over the rows laid end to end: row i's counts shifted past row i - 1's
    shift = np.arange(rows)[:, None] * (int(cum[:, -1].max(initial=0)) + 1)
    flat = (cum + shift).ravel()
    base = np.arange(rows)[:, None] * points.size
    a = points[np.searchsorted(flat, prev.astype(np.int64) + shift, side="right") - base]
    b = points[np.searchsorted(flat, nxt.astype(np.int64) + shift, side="right") - base]
    diff = b - a
    out = a + diff * gamma
    upper = gamma >= 0.5
    out[upper] = (b - diff * (1 - gamma))[upper]
    return out


def _bin(sc: _Dist, edges: np.ndarray) -> np.ndarray:
    """Counts of a validated distribution per bin ``[e_i, e_i+1)`` (last bin closed)."""
    if sc.scores[0] < edges[0] or sc.scores[-1] > edges[-1]:
        raise InputError(f"values span [{sc.scores[0]}, {sc.scores[-1]}], outside the edges "
                         f"[{edges[0]}, {edges[-1]}]. Use outer edges -inf and +inf.")
    cum = np.concatenate((np.zeros(1, sc.counts.dtype), np.cumsum(sc.counts)))
    cut = np.searchsorted(sc.scores, edges, side="left")
    cut[-1] = sc.scores.size  # the last bin is closed
    return np.diff(cum[cut])


@dataclass(frozen=True)
class Histogram:
    """Counts per bin over fixed edges: a mergeable statistic for the binned drift tests.

    Parameters
    ----------
    edges : numpy.ndarray
        Strictly increasing bin edges; bin i holds values in ``[edges[i], edges[i+1])``, the
        last bin is closed. They normally come from the reference with
        :meth:`edges_from_reference` (outer edges -inf and +inf, so every current value has a
        bin).
    counts : numpy.ndarray
        Rows per bin: int64, or float64 when weighted.

    Notes
    -----
    Merge = element-wise sum over equal edges, so a reference summarised partition by
    partition gives the histogram of all rows. Build one with :meth:`from_values` or
    :meth:`from_counts`.

    Examples
    --------
    >>> h = Histogram.from_values([0.1, 0.2, 0.7, 0.9], [-np.inf, 0.5, np.inf])
    >>> h.counts.tolist(), h.merge(h).counts.tolist()
    ([2, 2], [4, 4])
    """

    edges: np.ndarray
    counts: np.ndarray

    @staticmethod
    def edges_from_reference(values, bins: int = 10) -> np.ndarray:
        """Quantile edges of the reference: ``[-inf, q_1/b, ..., q_(b-1)/b, +inf]``.

        Parameters
        ----------
        values : array-like or ScoreCounts
            The reference: raw samples or its exact value distribution.
        bins : int
            Number of equal-frequency bins wanted.

        Returns
        -------
        numpy.ndarray
            The edges. The quantiles equal ``np.quantile`` on the rows (linear method; weighted
            counts: inverted CDF). Repeated quantiles (a point mass, discrete scores) are
            merged, so fewer than ``bins`` bins may result.

        Examples
        --------
        >>> Histogram.edges_from_reference(np.arange(100.0), bins=4).tolist()
        [-inf, 24.75, 49.5, 74.25, inf]
        """
        if not isinstance(bins, (int, np.integer)) or bins < 1:
            raise InputError(f"bins: must be a positive integer, got {bins!r}.")
        inner = np.unique(_quantiles(_dist(values, "reference"), np.linspace(0.0, 1.0, int(bins) + 1)[1:-1]))
        return np.concatenate(([-np.inf], inner, [np.inf]))

    @classmethod
    def from_values(cls, values, edges, sample_weight=None) -> "Histogram":
        """Bin raw values (finite numbers) over ``edges``; values outside the edges are an error.

        Parameters
        ----------
        values : array-like of float
            Raw samples.
        edges : array-like of float
            Strictly increasing edges (outer edges -inf/+inf allowed).
        sample_weight : array-like of float, optional
            One weight >= 0 per value; the counts are then float64 sums of weights.

        Returns
        -------
        Histogram

        Examples
        --------
        >>> Histogram.from_values([1.0, 2.0, 2.0], [0.0, 1.5, 3.0]).counts.tolist()
        [1, 2]
        """
        e = _edges(edges)
        v = _sample(values, "values")
        outside = (v < e[0]) | (v > e[-1])
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise InputError(f"values: {int(outside.sum())} value(s) outside the edges [{e[0]}, {e[-1]}], "
                             f"e.g. row {i} = {v[i]!r}. Use outer edges -inf and +inf.")
        idx = np.minimum(np.searchsorted(e, v, side="right") - 1, e.size - 2)
        if sample_weight is None:
            return cls(e, np.bincount(idx, minlength=e.size - 1).astype(np.int64))
        return cls(e, np.bincount(idx, weights=_weights(sample_weight, v), minlength=e.size - 1))

    @classmethod
    def from_counts(cls, score_counts: ScoreCounts, edges) -> "Histogram":
        """Bin an exact value distribution over ``edges`` (no rows needed).

        Parameters
        ----------
        score_counts : ScoreCounts
            Exact value distribution, e.g. from :func:`value_distribution`.
        edges : array-like of float
            Strictly increasing edges covering every value.

        Returns
        -------
        Histogram

        Examples
        --------
        >>> Histogram.from_counts(value_distribution([1.0, 2.0, 2.0]), [0.0, 1.5, 3.0]).counts.tolist()
        [1, 2]
        """
        e = _edges(edges)
        return cls(e, _bin(_from_score_counts(score_counts, "score_counts"), e))

    def merge(self, other: "Histogram") -> "Histogram":
        """Element-wise sum with a histogram over the same edges (another partition of the rows)."""
        if not np.array_equal(self.edges, other.edges):
            raise InputError("Cannot merge histograms with different edges; bin every partition over the "
                             "reference edges.")
        return Histogram(self.edges, self.counts + other.counts)

    @property
    def total(self):
        """Total count (or weight) over all bins."""
        return self.counts.sum()


def _count_vector(x: Any, name: str) -> np.ndarray:
    c = np.asarray(x, dtype=np.float64)
    if c.ndim != 1 or c.size == 0:
        raise InputError(f"{name}: expected a non-empty 1-D array of counts, got shape {c.shape}.")
    bad = ~np.isfinite(c) | (c < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{name}: {int(bad.sum())} negative, NaN or infinite count(s), e.g. category {i} = "
                         f"{c[i]!r}. Counts must be finite and >= 0.")
    if not c.sum() > 0:
        raise InputError(f"{name}: all counts are zero; nothing to compare.")
    return c


def _binned(reference: Any, current: Any, bins) -> tuple[np.ndarray, np.ndarray, dict]:
    """Aligned (reference, current) counts per bin or category, and a description of the bins."""
    if isinstance(reference, Mapping) or isinstance(current, Mapping):
        if not (isinstance(reference, Mapping) and isinstance(current, Mapping)):
            raise InputError("reference and current: category counts must both be mappings "
                             "(category -> count).")
        keys = list(dict.fromkeys([*reference, *current]))
        r = _count_vector([reference.get(k, 0) for k in keys], "reference")
        c = _count_vector([current.get(k, 0) for k in keys], "current")
        return r, c, {"bins": len(keys)}
    if isinstance(reference, Histogram) or isinstance(current, Histogram):
        hist = reference if isinstance(reference, Histogram) else current
        edges = hist.edges
        r, c = (x if isinstance(x, Histogram) else Histogram(edges, _bin(_dist(x, name), edges))
                for x, name in ((reference, "reference"), (current, "current")))
        if not np.array_equal(r.edges, c.edges):
            raise InputError("reference and current: histograms over different edges; bin the current data "
                             "over the reference edges (Histogram.from_values(values, reference.edges)).")
        return (_count_vector(r.counts, "reference"), _count_vector(c.counts, "current"),
                {"bins": edges.size - 1})
    ref, cur = _dist(reference, "reference"), _dist(current, "current")
    if bins is None:  # the exact distributions over the union of distinct values (discrete data)
        union = np.union1d(ref.scores, cur.scores)
        r, c = np.zeros(union.size), np.zeros(union.size)
        r[np.searchsorted(union, ref.scores)] = ref.counts
        c[np.searchsorted(union, cur.scores)] = cur.counts
        return r, c, {"bins": union.size}
    edges = Histogram.edges_from_reference(ref, bins) if isinstance(bins, (int, np.integer)) else _edges(bins)
    return _bin(ref, edges).astype(np.float64), _bin(cur, edges).astype(np.float64), {"bins": edges.size - 1}
