"""Distances between binned distributions: PSI, Jensen-Shannon and Hellinger (no p-value)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from metrics_core.drift.distributions import _binned, quantile_rows
from metrics_core.significance.base import NAN, TestResult

#: Proportion given to an empty bin in PSI (a common choice in PSI practice), so ln(q/p) is finite.
PSI_FLOOR = 1e-4


def _threshold_verdict(name: str, value: float, threshold: float | None) -> str:
    """'drift: name = v >= threshold t', 'no drift: ...', or no verdict without a threshold;
    'undefined: name is nan' for a nan value. An infinite value is judged like any other (the
    normalised Wasserstein distance from a constant reference is inf, as drift_table judges it).
    """
    if np.isnan(value):
        return f"undefined: {name} is {value}"
    if threshold is None or not np.isfinite(threshold):
        return f"{name} = {value:.4g} (no threshold given)"
    if value >= threshold:
        return f"drift: {name} = {value:.4g} >= threshold {threshold:g}"
    return f"no drift: {name} = {value:.4g} < threshold {threshold:g}"


def _distance(test: str, name: str, value: float, threshold, details: dict) -> TestResult:
    """The result of a distance: no p-value, the distance as effect size, judged on the threshold."""
    thr = NAN if threshold is None else float(threshold)
    return TestResult(test, value, NAN, value, name, _threshold_verdict(name, value, thr),
                      details={**details, "threshold": thr})


def psi(reference, current, bins=10, *, threshold: float | None = 0.25) -> TestResult:
    """Population stability index between the binned reference and current distributions.

    Parameters
    ----------
    reference, current : array-like, ScoreCounts, Histogram or mapping
        Raw samples, exact value distributions (:func:`value_distribution`), histograms over
        the same edges, or two mappings category -> count.
    bins : int, array-like or None
        Number of equal-frequency reference-quantile bins
        (:meth:`Histogram.edges_from_reference`, outer edges +-inf), explicit edges, or None
        for the union of distinct values (discrete data). Ignored for histograms (their edges)
        and mappings (their categories).
    threshold : float or None
        Value at or above which the verdict says drift; None for no verdict.

    Returns
    -------
    TestResult
        ``statistic`` and ``effect_size`` the PSI, ``p_value`` nan (PSI has none); ``details``:
        bins, empty_bins, threshold.

    Notes
    -----
    PSI = sum over bins of (q - p) ln(q / p), p and q the reference and current proportions
    per bin (Siddiqi 2006, Credit Risk Scorecards, ch. 8). An empty bin's proportion is raised
    to ``PSI_FLOOR`` = 1e-4 (without renormalising) so the log is finite, so PSI is never
    undefined; a non-empty bin keeps its proportion, however small. Conventional reading: < 0.1
    no shift, 0.1-0.25 moderate, >= 0.25 significant (the default threshold).

    Examples
    --------
    >>> r = psi({"a": 50, "b": 50}, {"a": 60, "b": 40})
    >>> round(r.statistic, 4), r.verdict
    (0.0405, 'no drift: PSI = 0.04055 < threshold 0.25')
    """
    return _psi(*_binned(reference, current, bins), threshold)


def _floored(counts: np.ndarray) -> np.ndarray:
    """The proportions of ``counts``, an empty bin's (exactly 0) raised to :data:`PSI_FLOOR`.

    Only empty bins: a bin holding a sliver of the rows (under PSI_FLOOR) keeps its proportion,
    else its log ratio, the part of PSI that measures it, would be understated.
    """
    p = counts / counts.sum()
    p[counts == 0] = PSI_FLOOR
    return p


def _psi(r: np.ndarray, c: np.ndarray, info: dict, threshold) -> TestResult:
    return _distance("population stability index", "PSI", _psi_value(r, c), threshold,
                     {**info, "empty_bins": int(np.sum((r == 0) | (c == 0)))})


def _psi_value(r: np.ndarray, c: np.ndarray) -> float:
    """PSI of two aligned count vectors (float64), empty bins floored (:func:`_floored`)."""
    p, q = _floored(r), _floored(c)
    return float(np.sum((q - p) * np.log(q / p)))


def psi_rows(points: np.ndarray, reference: np.ndarray, current: np.ndarray, bins: int = 10) -> np.ndarray:
    """PSI over ``bins`` reference-quantile bins of many pairs of integer histograms over the same bin points.

    Row i of ``reference`` and of ``current`` (P, G) is a pair; each histogram is read as the
    value distribution of its non-empty bins (value ``points[j]``, count the bin's). Returns the
    P values of :func:`psi` (``bins`` an int) on the pairs, bit for bit: the same quantiles
    (:func:`~metrics_core.drift.distributions.quantile_rows`), edges and floored proportions,
    for a few numpy calls per pair instead of some thirty.
    """
    cum_ref = np.cumsum(reference, axis=1, dtype=np.int64)
    cum_cur = np.cumsum(current, axis=1, dtype=np.int64)
    quantiles = quantile_rows(points, cum_ref, np.linspace(0.0, 1.0, int(bins) + 1)[1:-1])
    zero = np.zeros((cum_ref.shape[0], 1), np.int64)
    before_ref, before_cur = np.hstack((zero, cum_ref)), np.hstack((zero, cum_cur))  # counts before each point
    out = np.empty(cum_ref.shape[0])
    # Rows whose inner edges are distinct (np.unique keeps them all): every bin at once, summed row by
    # row along the last axis, as np.sum sums each row alone. The others one by one, their edges unique.
    whole = (np.diff(quantiles, axis=1) != 0).all(axis=1) if quantiles.shape[1] > 1 else np.ones(out.size, bool)
    if whole.any():
        cut = np.searchsorted(points, quantiles[whole], side="left")
        ends = np.full((cut.shape[0], 1), points.size)
        edges = np.hstack((np.zeros_like(ends), cut, ends))
        r = np.diff(np.take_along_axis(before_ref[whole], edges, axis=1), axis=1).astype(np.float64)
        c = np.diff(np.take_along_axis(before_cur[whole], edges, axis=1), axis=1).astype(np.float64)
        out[whole] = _psi_rows(r, c)
    for i in np.flatnonzero(~whole):
        cut = np.searchsorted(points, np.unique(quantiles[i]), side="left")
        r = np.diff(before_ref[i, np.concatenate(([0], cut, [points.size]))]).astype(np.float64)
        c = np.diff(before_cur[i, np.concatenate(([0], cut, [points.size]))]).astype(np.float64)
        out[i] = _psi_value(r, c)
    return out


def _psi_rows(r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """:func:`_psi_value` of each row of two (P, B) count arrays (float64), in the same float operations."""
    p = r / r.sum(axis=1, keepdims=True)
    q = c / c.sum(axis=1, keepdims=True)
    p[r == 0] = PSI_FLOOR
    q[c == 0] = PSI_FLOOR
    return np.sum((q - p) * np.log(q / p), axis=1)


def jensen_shannon(reference, current, bins=10, *, threshold: float | None = 0.1) -> TestResult:
    """Jensen-Shannon distance (base 2, in [0, 1]) between the binned distributions.

    Parameters
    ----------
    reference, current : array-like, ScoreCounts, Histogram or mapping
        Raw samples, exact value distributions (:func:`value_distribution`), histograms over
        the same edges, or two mappings category -> count.
    bins : int, array-like or None
        Number of equal-frequency reference-quantile bins
        (:meth:`Histogram.edges_from_reference`, outer edges +-inf), explicit edges, or None
        for the union of distinct values (discrete data). Ignored for histograms (their edges)
        and mappings (their categories).
    threshold : float or None
        Value at or above which the verdict says drift; None for no verdict.

    Returns
    -------
    TestResult
        ``statistic`` and ``effect_size`` the distance, ``p_value`` nan.

    Notes
    -----
    sqrt((KL(p || m) + KL(q || m)) / 2), m = (p + q) / 2, logs base 2 (Lin 1991; Endres &
    Schindelin 2003), equal to ``scipy.spatial.distance.jensenshannon(p, q, base=2)``. Empty
    bins need no floor, so the distance is never undefined; default threshold 0.1.

    Examples
    --------
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
    """Hellinger distance (in [0, 1]) between the binned distributions.

    Parameters
    ----------
    reference, current : array-like, ScoreCounts, Histogram or mapping
        Raw samples, exact value distributions (:func:`value_distribution`), histograms over
        the same edges, or two mappings category -> count.
    bins : int, array-like or None
        Number of equal-frequency reference-quantile bins
        (:meth:`Histogram.edges_from_reference`, outer edges +-inf), explicit edges, or None
        for the union of distinct values (discrete data). Ignored for histograms (their edges)
        and mappings (their categories).
    threshold : float or None
        Value at or above which the verdict says drift; None for no verdict.

    Returns
    -------
    TestResult
        ``statistic`` and ``effect_size`` the distance, ``p_value`` nan.

    Notes
    -----
    H = sqrt(1 - sum sqrt(p q)) (Hellinger 1909), computed as ||sqrt(p) - sqrt(q)||_2 / sqrt(2)
    (no cancellation near 0); never undefined. Default threshold 0.1.

    Examples
    --------
    >>> round(hellinger({"a": 50, "b": 50}, {"a": 60, "b": 40}).statistic, 4)
    0.0712
    """
    return _hellinger(*_binned(reference, current, bins), threshold)


def _hellinger(r: np.ndarray, c: np.ndarray, info: dict, threshold) -> TestResult:
    p, q = r / r.sum(), c / c.sum()
    value = float(np.linalg.norm(np.sqrt(p) - np.sqrt(q)) / math.sqrt(2))
    return _distance("Hellinger distance", "Hellinger distance", value, threshold, info)
