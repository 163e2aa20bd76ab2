"""Tests on exact distributions through their merged ECDFs: Kolmogorov-Smirnov and Wasserstein."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from metrics_core.drift.distances import _threshold_verdict
from metrics_core.drift.distributions import _at_size, _Dist, _dist
from metrics_core.drift.kolmogorov import ks_pvalue
from metrics_core.errors import InputError
from metrics_core.significance.base import NAN, TestResult, _check_alpha, _verdict


def _padded_cumsum(counts: np.ndarray) -> np.ndarray:
    """[0, c_0, c_0 + c_1, ...]: the count of values before each index."""
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
    # Unit counts (every value once) let the rank stand for the cumulative count. The test must be
    # exact: a ScoreCounts may hold a value of count 0, which with a 2 elsewhere keeps size == sum.
    # (one_row_per_score would spare this pass, but _Dist does not carry it; the pass is ~1 % of a merge.)
    unit = [c.dtype.kind != "f" and bool((c == 1).all()) for c in (ref.counts, cur.counts)]
    ties = np.flatnonzero(points[1:] == points[:-1])
    return _Merged(points, from_ref, None if unit[0] else _padded_cumsum(ref.counts),
                   None if unit[1] else _padded_cumsum(cur.counts), ties if ties.size else None)


def ks(reference, current, *, alpha: float = 0.05, threshold: float | None = None,
       n_effective: tuple[float, float] | None = None) -> TestResult:
    """Two-sample Kolmogorov-Smirnov test: D = max |F_ref(x) - F_cur(x)| over all values.

    Parameters
    ----------
    reference, current : array-like or ScoreCounts
        Raw samples or their exact, unweighted value distributions (:func:`value_distribution`);
        with ``n_effective``, weighted ones too.
    alpha : float
        Level of the verdict.
    threshold : float or None
        Optional minimum D for drift, recorded in ``details['threshold']``: with millions of
        rows any tiny shift is significant, so a drift run may demand D >= threshold.
    n_effective : (float, float), optional
        The effective sample sizes of weighted distributions (e.g. Kish's (Σ w)² / Σ w² of a
        design-weighted sample). D is then taken between the weighted ECDFs, and the p-value is
        the one of two unweighted samples of those sizes (rounded, at least 1): each distribution's
        weights are rescaled to sum to its size, and when that gives whole counts (equal weights,
        or an unweighted distribution and its row count) the test is exactly the unweighted one.

    Returns
    -------
    TestResult
        ``statistic`` and ``effect_size`` D, ``p_value`` two-sided; ``details``: n_reference,
        n_current, method ("exact" or "asymp"), threshold.

    Notes
    -----
    Kolmogorov (1933), Smirnov (1948). Computed from the exact value distributions with the
    same float operations and p-value rules as ``scipy.stats.ks_2samp`` (two-sided,
    method='auto'), so statistic and p-value equal scipy's on the rows, ties included, except
    that for an effective sample size m n / (m + n) of :data:`~metrics_core.drift.kolmogorov.SMIRNOV_FAST_N`
    or more the asymptotic p-value's Smirnov sum is taken by
    :func:`~metrics_core.drift.kolmogorov.smirnov_sf` (about 1e-13 relative from scipy's, many
    times faster). Needs unweighted (integer) counts unless ``n_effective`` is given; never
    undefined for non-empty samples. A weighted sample read at its effective size is the usual
    approximation for unequal weights (Kish 1965, 11.7: the variance of a weighted mean, hence of
    each point of the weighted ECDF, is the unweighted one at the effective size).

    Examples
    --------
    >>> r = ks([0.1, 0.2, 0.3, 0.4], [0.3, 0.5, 0.6, 0.7])
    >>> r.statistic, round(r.p_value, 4)
    (0.75, 0.2286)
    """
    alpha = _check_alpha(alpha)
    ref, cur = _dist(reference, "reference"), _dist(current, "current")
    if n_effective is not None:
        ref, cur = (_at_size(d, n, name) for d, n, name in zip((ref, cur), n_effective, ("reference", "current")))
        if ref.counts.dtype.kind == "f" or cur.counts.dtype.kind == "f":
            sizes = tuple(max(1, int(round(float(d.total)))) for d in (ref, cur))
            return _ks(_merge(ref, cur), (float(ref.total), float(cur.total)), alpha, threshold, sizes)
    ref, cur = _integer_counts(ref, cur)
    return _ks(_merge(ref, cur), (int(ref.total), int(cur.total)), alpha, threshold)


def _integer_counts(*dists: _Dist) -> list[_Dist]:
    """The (reference, current) distributions with int64 counts; weighted counts are an error."""
    out = []
    for sc, name in zip(dists, ("reference", "current")):
        if sc.counts.dtype.kind == "f" and np.any(sc.counts != np.round(sc.counts)):
            raise InputError(f"{name}: the KS test needs unweighted (integer) counts; this statistic is "
                             f"weighted. Use wasserstein for weighted distributions, or ks with n_effective= (their "
                             f"effective sample sizes).")
        out.append(_Dist(sc.scores, sc.counts.astype(np.int64, copy=False)))
    return out


def _ks(m: _Merged, n: tuple, alpha: float, threshold: float | None, sizes: tuple[int, int] | None = None
        ) -> TestResult:
    """D between the ECDFs (cumulative counts over the totals ``n``) and its p-value at the sample
    ``sizes`` (default ``n``: unweighted counts)."""
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
    s1, s2 = n if sizes is None else sizes
    return _ks_result(_ks_d(max_s, min_s), s1, s2, alpha, threshold)


def _ks_d(max_s: float, min_s: float) -> float:
    """ks_2samp's D from the largest and smallest ECDF difference (reference minus current)."""
    min_s = min(max(-float(min_s), 0.0), 1.0)  # np.clip's value (nan stays nan), without its call per test
    return min_s if min_s > max_s else max_s


def _ks_result(d: float, s1: int, s2: int, alpha: float, threshold: float | None) -> TestResult:
    """The KS test's result for D between samples of sizes ``s1`` and ``s2`` (its p-value: :func:`ks_pvalue`)."""
    d, p, method = ks_pvalue(d, s1, s2)
    thr = NAN if threshold is None else float(threshold)
    return TestResult("two-sample Kolmogorov-Smirnov", d, p, d, "KS D",
                      _verdict(p, alpha, f"the distributions differ (D = {d:.4g})"), alpha,
                      details={"n_reference": s1, "n_current": s2, "method": method, "threshold": thr})


def ks_wasserstein_rows(points: np.ndarray, reference: np.ndarray, current: np.ndarray, *, alpha: float = 0.05
                        ) -> tuple[list[TestResult], np.ndarray]:
    """KS tests and Wasserstein-1 distances of many pairs of histograms over the same bin points, at once.

    Parameters
    ----------
    points : numpy.ndarray, shape (G,)
        The bins' values, strictly increasing (e.g. bin centres).
    reference, current : numpy.ndarray, shape (P, G)
        Integer counts per bin of P reference and P current histograms (row i of each is a pair);
        every row must count at least one value.
    alpha : float
        Level of the KS verdicts.

    Returns
    -------
    (list of TestResult, numpy.ndarray)
        Per pair, :func:`ks`'s result and :func:`wasserstein`'s statistic on the two histograms
        read as value distributions (each non-empty bin a value, its count the value's count):
        bit for bit the single tests' values, P of them for the Python work of a few.

    Notes
    -----
    The single tests walk the merged non-empty bins of a pair (a bin non-empty in both appears
    twice, reference first). Here every bin of the grid is read at once: a bin empty in both
    repeats the ECDF difference of the bin before it (or 0 before the first), which changes no
    extreme, so D is the same; the Wasserstein terms |F_ref - F_cur| x gap are formed with the
    same float operations at the same merged positions (a bin non-empty in both adds its
    exact-zero term first), and each pair's terms are summed by one ``np.sum`` over the same
    contiguous run, hence the same pairwise summation. The p-values are :func:`ks_pvalue`'s,
    one call per pair.
    """
    alpha = _check_alpha(alpha)
    ref, cur = (np.asarray(x) for x in (reference, current))
    if ref.shape != cur.shape or ref.ndim != 2 or ref.shape[1] != points.size or ref.dtype.kind not in "iu" \
            or cur.dtype.kind not in "iu":
        raise InputError(f"reference and current: expected two integer count arrays of shape (pairs, "
                         f"{points.size}), got {ref.shape} {ref.dtype} and {cur.shape} {cur.dtype}.")
    cum_ref, cum_cur = np.cumsum(ref, axis=1, dtype=np.int64), np.cumsum(cur, axis=1, dtype=np.int64)
    tot_ref, tot_cur = cum_ref[:, -1], cum_cur[:, -1]
    if not (tot_ref.all() and tot_cur.all()) or (ref < 0).any() or (cur < 0).any():
        raise InputError("reference and current: every pair needs counts >= 0 and at least one value on each side.")
    diffs = np.divide(cum_ref, tot_ref[:, None])
    np.subtract(diffs, np.divide(cum_cur, tot_cur[:, None]), out=diffs)
    d = [_ks_d(hi, lo) for hi, lo in zip(diffs.max(axis=1).tolist(), diffs.min(axis=1).tolist())]
    tests = [_ks_result(di, s1, s2, alpha, None) for di, s1, s2 in zip(d, tot_ref.tolist(), tot_cur.tolist())]
    return tests, _wasserstein_rows(points, ref > 0, cur > 0, np.abs(diffs, out=diffs))


def _wasserstein_rows(points: np.ndarray, in_ref: np.ndarray, in_cur: np.ndarray, gaps_f: np.ndarray) -> np.ndarray:
    """Each row's sum of |F_ref - F_cur| x gap over its merged non-empty bins (:func:`ks_wasserstein_rows`)."""
    present = in_ref | in_cur
    tie = (in_ref & in_cur)[present]
    at = np.flatnonzero(present)
    row, col = np.divmod(at, points.size)
    value = gaps_f.ravel()[at]
    last = np.ones(at.size, bool)  # a row's last merged bin: no gap after it
    last[:-1] = row[1:] != row[:-1]
    nxt = np.minimum(np.arange(1, at.size + 1), at.size - 1)
    value *= np.where(last, 0.0, points[col[nxt]] - points[col])
    # merged order: a bin non-empty in both is a zero term (its reference copy), then its own
    slot = np.cumsum(1 + tie) - 1
    terms = np.zeros(int(slot[-1]) + 1 if slot.size else 0)
    terms[slot] = value
    ends = slot[last]  # each row's last slot, left out of its sum
    starts = np.concatenate(([0], ends[:-1] + 1))
    return np.array([float(np.sum(terms[a:b])) for a, b in zip(starts.tolist(), ends.tolist())])


def wasserstein(reference, current, *, threshold: float | None = 0.1) -> TestResult:
    """Wasserstein-1 distance: the integral of |F_ref(x) - F_cur(x)| dx.

    Parameters
    ----------
    reference, current : array-like or ScoreCounts
        Raw samples or their exact value distributions (weighted counts allowed).
    threshold : float or None
        Value of the normalised distance (the effect size) at or above which the verdict says
        drift.

    Returns
    -------
    TestResult
        ``statistic`` the distance, ``effect_size`` the distance divided by the reference
        standard deviation, ``p_value`` nan (none exists); ``details``: reference_std,
        threshold.

    Notes
    -----
    Vaserstein (1969); summed over the merged distinct values, equal to
    ``scipy.stats.wasserstein_distance`` on the rows. The effect size uses the population
    standard deviation (ddof=0) of the reference, a scale-free reading whose default threshold
    is 0.1; when the reference is constant it is inf (or 0 when the distance is 0), and the
    verdict says drift at any threshold.

    Examples
    --------
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
