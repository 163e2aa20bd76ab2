"""Drift between a reference and a current distribution, from rows or from mergeable statistics.

Every test accepts raw samples (list, numpy, polars Series, pyarrow Array) or statistics that
merge across partitions: :class:`~metrics_core.counts.ScoreCounts` (the exact value
distribution: distinct values with counts) or a :class:`Histogram` over reference-derived
edges, so a 100M-row reference is summarised once and never held as rows. Raw samples are
summarised first (``ScoreCounts.of_values``), so rows and statistics share one code path.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

import numpy as np
import polars as pl
from scipy import special, stats

from metrics_core.counts import ScoreCounts
from metrics_core.errors import InputError
from metrics_core.significance import NAN, TestResult, _check_alpha, _sample, _verdict, chi_squared, correct

__all__ = ["Histogram", "PSI_FLOOR", "value_distribution", "psi", "ks", "wasserstein", "jensen_shannon",
           "hellinger", "chi_squared_counts", "two_proportion_z", "compare", "drift_table"]

#: Proportion given to an empty bin in PSI (a common choice in PSI practice), so ln(q/p) is finite.
PSI_FLOOR = 1e-4


# ---------------------------------------------------------------- statistics
def _edges(edges: Any) -> np.ndarray:
    e = np.asarray(edges, dtype=np.float64)
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


def value_distribution(values, sample_weight=None) -> ScoreCounts:
    """The exact value distribution of raw samples as a :class:`ScoreCounts` (all in ``pos``).

    ``ScoreCounts.of_values`` after the input check: NaN or infinite values (and negative
    weights) are an error naming the row; -0.0 counts as 0.0.

    >>> sc = value_distribution([0.3, 0.1, 0.3])
    >>> sc.scores.tolist(), sc.pos.tolist()
    ([0.1, 0.3], [1, 2])
    """
    v = _sample(values, "values")
    if sample_weight is None:
        return ScoreCounts.of_values(v)
    w = _sample(sample_weight, "sample_weight")
    if w.size != v.size or w.min() < 0:
        raise InputError(f"sample_weight: needs one weight >= 0 per value ({v.size}), got {w.size} "
                         f"weights with minimum {w.min()!r}.")
    return ScoreCounts.of_values(v, w)


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
    virtual = (total - 1) * q
    prev = np.floor(virtual)
    nxt = prev + 1
    top = virtual >= total - 1
    prev[top], nxt[top] = total - 1, total - 1
    gamma = virtual - prev
    a = sc.scores[np.searchsorted(cum, prev.astype(np.int64), side="right")]
    b = sc.scores[np.searchsorted(cum, nxt.astype(np.int64), side="right")]
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
    """Counts per bin over fixed edges: bin i holds values in ``[edges[i], edges[i+1])`` (the last
    bin is closed). ``counts`` is int64, or float64 when weighted.

    Merge = element-wise sum, edges must be equal; so a reference summarised partition by
    partition gives the histogram of all rows. Edges normally come from the reference with
    :meth:`edges_from_reference` (outer edges -inf and +inf, so every current value has a bin).

    >>> h = Histogram.from_values([0.1, 0.2, 0.7, 0.9], [-np.inf, 0.5, np.inf])
    >>> h.counts.tolist(), h.merge(h).counts.tolist()
    ([2, 2], [4, 4])
    """

    edges: np.ndarray
    counts: np.ndarray

    @staticmethod
    def edges_from_reference(values, bins: int = 10) -> np.ndarray:
        """Quantile edges of the reference: ``[-inf, q_1/b, ..., q_(b-1)/b, +inf]``.

        ``values`` are raw samples or a ScoreCounts; the quantiles equal ``np.quantile`` on the
        rows (linear method; weighted counts: inverted CDF). Repeated quantiles (a point mass,
        discrete scores) are merged, so fewer than ``bins`` bins may result.

        >>> Histogram.edges_from_reference(np.arange(100.0), bins=4).tolist()
        [-inf, 24.75, 49.5, 74.25, inf]
        """
        if not isinstance(bins, (int, np.integer)) or bins < 1:
            raise InputError(f"bins: must be a positive integer, got {bins!r}.")
        inner = np.unique(_quantiles(_dist(values, "reference"), np.linspace(0.0, 1.0, int(bins) + 1)[1:-1]))
        return np.concatenate(([-np.inf], inner, [np.inf]))

    @classmethod
    def from_values(cls, values, edges, sample_weight=None) -> "Histogram":
        """Bin raw values (finite numbers) over ``edges``; values outside the edges are an error."""
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
        w = _sample(sample_weight, "sample_weight")
        if w.size != v.size or w.min() < 0:
            raise InputError(f"sample_weight: needs one weight >= 0 per value ({v.size}), got {w.size} "
                             f"weights with minimum {w.min()!r}.")
        return cls(e, np.bincount(idx, weights=w, minlength=e.size - 1))

    @classmethod
    def from_counts(cls, score_counts: ScoreCounts, edges) -> "Histogram":
        """Bin an exact value distribution over ``edges`` (no rows needed)."""
        e = _edges(edges)
        return cls(e, _bin(_from_score_counts(score_counts, "score_counts"), e))

    def merge(self, other: "Histogram") -> "Histogram":
        if not np.array_equal(self.edges, other.edges):
            raise InputError("Cannot merge histograms with different edges; bin every partition over the "
                             "reference edges.")
        return Histogram(self.edges, self.counts + other.counts)

    @property
    def total(self):
        return self.counts.sum()


# ---------------------------------------------------------------- binned distributions
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


def _threshold_verdict(name: str, value: float, threshold: float | None) -> str:
    if not np.isfinite(value):
        return f"undefined: {name} is {value}"
    if threshold is None or not np.isfinite(threshold):
        return f"{name} = {value:.4g} (no threshold given)"
    if value >= threshold:
        return f"drift: {name} = {value:.4g} >= threshold {threshold:g}"
    return f"no drift: {name} = {value:.4g} < threshold {threshold:g}"


def _distance(test: str, name: str, value: float, threshold, details: dict) -> TestResult:
    thr = NAN if threshold is None else float(threshold)
    return TestResult(test, value, NAN, value, name, _threshold_verdict(name, value, thr),
                      details={**details, "threshold": thr})


# ---------------------------------------------------------------- distances and tests
def psi(reference, current, bins=10, *, threshold: float | None = 0.25) -> TestResult:
    """Population stability index: sum over bins of (q - p) ln(q / p).

    p, q are the reference and current proportions per bin. Bins: ``bins`` reference quantiles
    (equal-frequency bins, :meth:`Histogram.edges_from_reference`, outer edges +-inf), explicit
    edges, the union of distinct values when ``bins=None`` (discrete data), the histogram's
    edges when a :class:`Histogram` is given, or categories for two mappings. An empty bin's
    proportion is raised to ``PSI_FLOOR`` = 1e-4 (without renormalising) so the log is finite.
    Conventional reading: < 0.1 no shift, 0.1-0.25 moderate, >= 0.25 significant (the default
    threshold). No p-value (nan).

    >>> r = psi({"a": 50, "b": 50}, {"a": 60, "b": 40})
    >>> round(r.statistic, 4), r.verdict
    (0.0405, 'no drift: PSI = 0.04055 < threshold 0.25')
    """
    return _psi(*_binned(reference, current, bins), threshold)


def _psi(r: np.ndarray, c: np.ndarray, info: dict, threshold) -> TestResult:
    p = np.maximum(r / r.sum(), PSI_FLOOR)
    q = np.maximum(c / c.sum(), PSI_FLOOR)
    value = float(np.sum((q - p) * np.log(q / p)))
    return _distance("population stability index", "PSI", value, threshold,
                     {**info, "empty_bins": int(np.sum((r == 0) | (c == 0)))})


def jensen_shannon(reference, current, bins=10, *, threshold: float | None = 0.1) -> TestResult:
    """Jensen-Shannon distance (base 2, in [0, 1]) between the binned distributions.

    sqrt((KL(p || m) + KL(q || m)) / 2), m = (p + q) / 2, logs base 2; equal to
    ``scipy.spatial.distance.jensenshannon(p, q, base=2)``. Bins as in :func:`psi`; empty bins
    need no floor. No p-value (nan); default threshold 0.1.

    >>> round(jensen_shannon({"a": 50, "b": 50}, {"a": 60, "b": 40}).statistic, 4)
    0.0854
    """
    return _jensen_shannon(*_binned(reference, current, bins), threshold)


def _jensen_shannon(r: np.ndarray, c: np.ndarray, info: dict, threshold) -> TestResult:
    p, q = r / r.sum(), c / c.sum()
    m = (p + q) / 2
    js = float(np.sum(special.rel_entr(p, m)) + np.sum(special.rel_entr(q, m))) / (2 * math.log(2))
    return _distance("Jensen-Shannon distance", "Jensen-Shannon distance", float(math.sqrt(max(js, 0.0))),
                     threshold, info)


def hellinger(reference, current, bins=10, *, threshold: float | None = 0.1) -> TestResult:
    """Hellinger distance sqrt(1 - sum sqrt(p q)) (in [0, 1]) between the binned distributions.

    Computed as ||sqrt(p) - sqrt(q)||_2 / sqrt(2) (no cancellation near 0). Bins as in
    :func:`psi`. No p-value (nan); default threshold 0.1.

    >>> round(hellinger({"a": 50, "b": 50}, {"a": 60, "b": 40}).statistic, 4)
    0.0712
    """
    return _hellinger(*_binned(reference, current, bins), threshold)


def _hellinger(r: np.ndarray, c: np.ndarray, info: dict, threshold) -> TestResult:
    p, q = r / r.sum(), c / c.sum()
    value = float(np.linalg.norm(np.sqrt(p) - np.sqrt(q)) / math.sqrt(2))
    return _distance("Hellinger distance", "Hellinger distance", value, threshold, info)


def _padded_cumsum(counts: np.ndarray) -> np.ndarray:
    out = np.empty(counts.size + 1, dtype=counts.dtype)
    out[0] = 0
    np.cumsum(counts, out=out[1:])
    return out


_CHUNK = 1 << 20  # rows per chunk when walking merged ECDFs (keeps buffers small and warm)


class _Merged(NamedTuple):
    """Two sorted value runs merged: ``points`` ascending and ``from_ref`` (the point's origin).

    A value present in both samples appears twice, reference first; ``tie_first`` holds the
    index of each first copy (None without ties). ``ref_cum``/``cur_cum`` are the padded
    cumulative counts of each sample (None for unit counts, where the rank is the count).
    """

    points: np.ndarray
    from_ref: np.ndarray
    ref_cum: np.ndarray | None
    cur_cum: np.ndarray | None
    tie_first: np.ndarray | None

    def chunks(self, stop: int | None = None):
        """Yield ``(lo, hi, cum_ref, cum_cur)``: each sample's cumulative count at points[lo:hi]."""
        stop = self.points.size if stop is None else stop
        carry = 0
        for lo in range(0, stop, _CHUNK):
            hi = min(lo + _CHUNK, stop)
            k_ref = np.cumsum(self.from_ref[lo:hi])
            k_ref += carry
            carry = int(k_ref[-1])
            k_cur = np.arange(lo + 1, hi + 1)
            k_cur -= k_ref
            yield (lo, hi, k_ref if self.ref_cum is None else self.ref_cum[k_ref],
                   k_cur if self.cur_cum is None else self.cur_cum[k_cur])


def _merge(ref: _Dist, cur: _Dist) -> _Merged:
    """Merge two sorted runs in linear time (numpy's stable sort detects and merges runs)."""
    nr, nc = ref.scores.size, cur.scores.size
    if ref.scores[0] >= 0 and cur.scores[0] >= 0:
        # Non-negative floats order as their bits: pack (bits << 1 | origin) and sort once.
        key = np.empty(nr + nc, dtype=np.uint64)
        np.left_shift(ref.scores.view(np.uint64), np.uint64(1), out=key[:nr])
        np.left_shift(cur.scores.view(np.uint64), np.uint64(1), out=key[nr:])
        key[nr:] |= np.uint64(1)
        key.sort(kind="stable")
        low = key.view(np.uint8)[:: key.itemsize] if np.little_endian else key.view(np.uint8)[7::8]
        from_ref = (low & np.uint8(1)) == 0
        key >>= np.uint64(1)
        points = key.view(np.float64)
    else:
        points = np.concatenate((ref.scores, cur.scores))
        from_ref = np.argsort(points, kind="stable") < nr
        points.sort(kind="stable")
    unit = [c.dtype.kind != "f" and c.size == c.sum() for c in (ref.counts, cur.counts)]
    ties = np.flatnonzero(points[1:] == points[:-1])
    return _Merged(points, from_ref, None if unit[0] else _padded_cumsum(ref.counts),
                   None if unit[1] else _padded_cumsum(cur.counts), ties if ties.size else None)


def _ks_pvalue(d: float, n1: int, n2: int) -> tuple[float, float, str]:
    """scipy.stats.ks_2samp's two-sided p-value with method='auto': (d, p, method).

    Exact when max(n1, n2) <= 10000 (scipy's MAX_AUTO_N; the exact method also rounds d to a
    multiple of 1/lcm(n1, n2)), else the asymptotic Kolmogorov distribution kstwo(round(m n /
    (m + n))). Uses scipy's own exact routine, falling back to asymptotic with a warning as
    ks_2samp does when the exact computation fails.
    """
    from scipy.stats import _stats_py

    exact = getattr(_stats_py, "_attempt_exact_2kssamp", None)  # private: the tests pin the agreement
    method = "exact" if max(n1, n2) <= 10000 else "asymp"
    if method == "exact":
        ok, d, p = exact(n1, n2, math.gcd(n1, n2), d, "two-sided") if exact else (False, d, NAN)
        if not ok:
            warnings.warn("ks: exact calculation unsuccessful; switching to the asymptotic p-value.",
                          RuntimeWarning, stacklevel=4)
            method = "asymp"
    if method == "asymp":
        m, n = sorted([float(n1), float(n2)], reverse=True)
        p = stats.distributions.kstwo.sf(d, np.round(m * n / (m + n)))
    return float(d), float(np.clip(p, 0, 1)), method


def ks(reference, current, *, alpha: float = 0.05, threshold: float | None = None) -> TestResult:
    """Two-sample Kolmogorov-Smirnov test: D = max |F_ref(x) - F_cur(x)| over all values.

    Computed from the exact value distributions (ScoreCounts; raw samples are summarised
    first), with the same float operations and p-value rules as ``scipy.stats.ks_2samp`` (two-
    sided, method='auto'), so statistic and p-value equal scipy's on the rows, ties included.
    Needs unweighted (integer) counts. Effect size: D. ``threshold`` (on D) is optional: with
    millions of rows any tiny shift is significant, so a drift run may demand D >= threshold.

    >>> r = ks([0.1, 0.2, 0.3, 0.4], [0.3, 0.5, 0.6, 0.7])
    >>> r.statistic, round(r.p_value, 4)
    (0.75, 0.2286)
    """
    alpha = _check_alpha(alpha)
    ref, cur = _integer_counts(_dist(reference, "reference"), _dist(current, "current"))
    return _ks(_merge(ref, cur), (int(ref.total), int(cur.total)), alpha, threshold)


def _integer_counts(*dists: _Dist) -> list[_Dist]:
    out = []
    for sc, name in zip(dists, ("reference", "current")):
        if sc.counts.dtype.kind == "f" and np.any(sc.counts != np.round(sc.counts)):
            raise InputError(f"{name}: the KS test needs unweighted (integer) counts; this statistic is "
                             f"weighted. Use wasserstein for weighted distributions.")
        out.append(_Dist(sc.scores, sc.counts.astype(np.int64, copy=False)))
    return out


def _ks(m: _Merged, n: tuple[int, int], alpha: float, threshold: float | None) -> TestResult:
    n1, n2 = n
    # ECDF differences at every observed value with ks_2samp's float operations (count / n).
    max_s, min_s = -math.inf, math.inf
    for lo, hi, cum_ref, cum_cur in m.chunks():
        diffs = np.divide(cum_ref, n1)
        np.subtract(diffs, np.divide(cum_cur, n2), out=diffs)
        if m.tie_first is not None:  # first copies are not right-continuous; 0 never changes max >= 0 >= min
            a, b = np.searchsorted(m.tie_first, [lo, hi])
            diffs[m.tie_first[a:b] - lo] = 0.0
        max_s, min_s = max(max_s, float(diffs.max())), min(min_s, float(diffs.min()))
    min_s = float(np.clip(-min_s, 0, 1))
    d, p, method = _ks_pvalue(min_s if min_s > max_s else max_s, n1, n2)
    thr = NAN if threshold is None else float(threshold)
    return TestResult("two-sample Kolmogorov-Smirnov", d, p, d, "KS D",
                      _verdict(p, alpha, f"the distributions differ (D = {d:.4g})"), alpha,
                      details={"n_reference": n1, "n_current": n2, "method": method, "threshold": thr})


def wasserstein(reference, current, *, threshold: float | None = 0.1) -> TestResult:
    """Wasserstein-1 distance: the integral of |F_ref(x) - F_cur(x)| dx.

    Summed over the merged distinct values (weighted counts allowed), equal to
    ``scipy.stats.wasserstein_distance`` on the rows. The effect size is the distance divided by
    the reference standard deviation (population, ddof=0), a scale-free reading whose default
    threshold is 0.1; when the reference is constant it is inf (or 0 when the distance is 0).
    No p-value (nan).

    >>> r = wasserstein([0.0, 1.0, 3.0], [5.0, 6.0, 8.0])
    >>> r.statistic, round(r.effect_size, 4)
    (5.0, 4.0089)
    """
    ref, cur = _dist(reference, "reference"), _dist(current, "current")
    return _wasserstein(ref, cur, _merge(ref, cur), threshold)


def _wasserstein(ref: _Dist, cur: _Dist, m: _Merged, threshold: float | None) -> TestResult:
    # Ties between the samples sit next to each other with a zero gap: they add nothing.
    tot_ref, tot_cur = ref.total, cur.total
    dist = 0.0
    for lo, hi, cum_ref, cum_cur in m.chunks(m.points.size - 1):
        f = np.divide(cum_ref, tot_ref)
        np.subtract(f, np.divide(cum_cur, tot_cur), out=f)
        np.abs(f, out=f)
        f *= m.points[lo + 1:hi + 1] - m.points[lo:hi]
        dist += float(np.sum(f))
    total = float(ref.total)
    mean = float(np.dot(ref.counts, ref.scores)) / total
    dev = ref.scores - mean
    np.square(dev, out=dev)
    std = math.sqrt(float(np.dot(ref.counts, dev)) / total)
    effect = dist / std if std > 0 else (math.inf if dist > 0 else 0.0)
    thr = NAN if threshold is None else float(threshold)
    return TestResult("Wasserstein distance", dist, NAN, effect, "Wasserstein / reference std",
                      _threshold_verdict("normalised Wasserstein", effect, thr),
                      details={"reference_std": std, "threshold": thr})


def chi_squared_counts(reference_counts, current_counts, *, alpha: float = 0.05,
                       threshold: float | None = None) -> TestResult:
    """Chi-squared test of homogeneity between reference and current category counts.

    The 2 x K table [reference; current] goes to :func:`metrics_core.significance.chi_squared`
    (categories empty in both are dropped; Yates' correction when K = 2, as scipy). Inputs:
    aligned 1-D count arrays, two mappings category -> count (union of keys, missing = 0), two
    Histograms over the same edges, or ScoreCounts (union of distinct values). Effect size:
    Cramer's V.

    >>> r = chi_squared_counts({"a": 50, "b": 50}, {"a": 60, "b": 40})
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (1.6364, 0.2008)
    """
    if isinstance(reference_counts, (Mapping, Histogram, ScoreCounts)):
        r, c, _ = _binned(reference_counts, current_counts, None)
    else:
        r = _count_vector(reference_counts, "reference_counts")
        c = _count_vector(current_counts, "current_counts")
        if r.size != c.size:
            raise InputError(f"reference_counts and current_counts: one count per category in each; got "
                             f"{r.size} and {c.size} categories.")
    res = chi_squared(np.vstack((r, c)), alpha=alpha)
    return dataclasses.replace(res, test="chi-squared homogeneity (reference vs current)",
                               details={**res.details, "threshold": NAN if threshold is None else threshold})


def two_proportion_z(k1, n1, k2, n2, *, alpha: float = 0.05, threshold: float | None = None) -> TestResult:
    """Two-proportion z-test (pooled variance) of reference k1/n1 against current k2/n2.

    z = (p2 - p1) / sqrt(p (1 - p) (1/n1 + 1/n2)), p = (k1 + k2) / (n1 + n2), two-sided normal
    p-value; statsmodels' proportions_ztest gives the same with the samples swapped. When p is
    0 or 1 (both proportions equal at 0 or 1) z = 0 and p = 1 (statsmodels: nan; Fisher's exact
    test agrees with 1). Effect size: p2 - p1; ``threshold`` applies to its absolute value.

    >>> r = two_proportion_z(50, 100, 60, 100)
    >>> round(r.statistic, 4), round(r.p_value, 4), round(r.effect_size, 2)
    (1.4213, 0.1552, 0.1)
    """
    alpha = _check_alpha(alpha)
    for name, value in (("k1", k1), ("n1", n1), ("k2", k2), ("n2", n2)):
        if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value) or value < 0:
            raise InputError(f"{name}: must be a finite count >= 0, got {value!r}.")
    for k, n, kn, nn in ((k1, n1, "k1", "n1"), (k2, n2, "k2", "n2")):
        if n == 0:
            raise InputError(f"{nn}: the sample is empty (0 rows); a proportion needs n > 0.")
        if k > n:
            raise InputError(f"{kn}: {k!r} successes is more than {nn} = {n!r}.")
    p1, p2 = k1 / n1, k2 / n2
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    z = (p2 - p1) / se if se > 0 else 0.0
    p = float(2 * stats.norm.sf(abs(z))) if se > 0 else 1.0
    thr = NAN if threshold is None else float(threshold)
    return TestResult("two-proportion z-test", z, p, p2 - p1, "difference in proportions (current - reference)",
                      _verdict(p, alpha, f"the proportion changed ({p1:.4g} -> {p2:.4g})"), alpha,
                      details={"p_reference": p1, "p_current": p2, "threshold": thr})


BINNED, EXACT = ("psi", "jensen_shannon", "hellinger"), ("ks", "wasserstein")


def compare(reference, current, tests=("psi", "ks", "wasserstein", "jensen_shannon", "hellinger"), *,
            bins=10, alpha: float = 0.05, thresholds: Mapping[str, float | None] | None = None
            ) -> dict[str, TestResult]:
    """Several drift tests on one reference/current pair, sharing the work.

    Each input is summarised once, KS and Wasserstein share one merge, PSI, Jensen-Shannon and
    Hellinger one binning; the results equal the single functions' (``thresholds`` name ->
    value overrides their defaults). Feed the dict, or several merged, to :func:`drift_table`.

    >>> sorted(compare([0.1, 0.2, 0.3, 0.4], [0.3, 0.5, 0.6, 0.7], bins=2))
    ['hellinger', 'jensen_shannon', 'ks', 'psi', 'wasserstein']
    """
    alpha = _check_alpha(alpha)
    unknown = set(tests) - set(BINNED + EXACT)
    if unknown:
        raise InputError(f"tests: unknown test(s) {sorted(unknown)!r}; choose from {list(BINNED + EXACT)!r}.")
    thr = {"psi": 0.25, "jensen_shannon": 0.1, "hellinger": 0.1, "wasserstein": 0.1, "ks": None,
           **(thresholds or {})}
    exact = any(t in EXACT for t in tests)
    ref, cur = (x if isinstance(x, (Histogram, Mapping)) and not exact else _dist(x, name)
                for x, name in ((reference, "reference"), (current, "current")))
    out = {}
    if exact:
        m = _merge(*(_integer_counts(ref, cur) if "ks" in tests else (ref, cur)))
        if "ks" in tests:
            out["ks"] = _ks(m, (int(ref.total), int(cur.total)), alpha, thr["ks"])
        if "wasserstein" in tests:
            out["wasserstein"] = _wasserstein(ref, cur, m, thr["wasserstein"])
    if any(t in BINNED for t in tests):
        binned = _binned(ref, cur, bins)
        for name, fn in (("psi", _psi), ("jensen_shannon", _jensen_shannon), ("hellinger", _hellinger)):
            if name in tests:
                out[name] = fn(*binned, thr[name])
    return {t: out[t] for t in tests}


def drift_table(tests: Mapping[str, TestResult], thresholds: Mapping[str, float] | None = None,
                correction: str = "bh", alpha: float = 0.05) -> pl.DataFrame:
    """One row per drift test, p-values corrected together (``correction``: bh, holm, bonferroni).

    ``thresholds`` (name -> value) override each result's own ``details['threshold']`` and
    apply to |effect_size|. A row is drift when every available criterion holds: the adjusted
    p-value <= alpha (tests with a p-value) and |effect| >= threshold (where one is set); with
    neither, ``drift`` is null ("not judged"). Tests without a p-value (PSI, distances) do not
    enter the correction. Columns: name, test, statistic, p_value, p_adjusted, effect_size,
    effect_name, threshold, drift, verdict.

    >>> t = drift_table({"psi": psi({"a": 5, "b": 5}, {"a": 9, "b": 1}),
    ...                  "z": two_proportion_z(5, 10, 9, 10)})
    >>> t["drift"].to_list()
    [True, False]
    """
    alpha = _check_alpha(alpha)
    thresholds = dict(thresholds or {})
    unknown = set(thresholds) - set(tests)
    if unknown:
        raise InputError(f"thresholds: no test named {sorted(unknown)!r}; tests are {sorted(tests)!r}.")
    names = list(tests)
    for name in names:
        if not isinstance(tests[name], TestResult):
            raise InputError(f"tests[{name!r}]: expected a TestResult, got {type(tests[name]).__name__}.")
    p = np.array([tests[k].p_value for k in names], dtype=np.float64)
    has_p = np.isfinite(p)
    p_adj = np.full(p.size, np.nan)
    if has_p.any():
        p_adj[has_p] = correct(p[has_p], correction, alpha).p_adjusted
    rows = []
    for i, name in enumerate(names):
        r = tests[name]
        thr = thresholds.get(name, r.details.get("threshold", NAN))
        thr = NAN if thr is None else float(thr)
        effect = abs(r.effect_size)
        parts, decisions = [], []
        if has_p[i]:
            decisions.append(p_adj[i] <= alpha)
            parts.append(f"p_adj = {p_adj[i]:.3g} {'<=' if decisions[-1] else '>'} {alpha:g}")
        if np.isfinite(thr):
            decisions.append(effect >= thr)
            parts.append(f"|{r.effect_name}| = {effect:.4g} {'>=' if decisions[-1] else '<'} {thr:g}")
        if not decisions:
            drift, verdict = None, "not judged: no p-value and no threshold"
        elif np.isnan(effect) and np.isfinite(thr):
            drift, verdict = None, f"undefined: {r.effect_name} is nan"
        else:
            drift = bool(all(decisions))
            verdict = ("drift: " if drift else "no drift: ") + " and ".join(parts)
        rows.append({"name": name, "test": r.test, "statistic": float(r.statistic), "p_value": float(r.p_value),
                     "p_adjusted": float(p_adj[i]), "effect_size": float(r.effect_size),
                     "effect_name": r.effect_name, "threshold": thr, "drift": drift, "verdict": verdict})
    schema = {"name": pl.String, "test": pl.String, "statistic": pl.Float64, "p_value": pl.Float64,
              "p_adjusted": pl.Float64, "effect_size": pl.Float64, "effect_name": pl.String,
              "threshold": pl.Float64, "drift": pl.Boolean, "verdict": pl.String}
    return pl.DataFrame(rows, schema=schema)
