"""Confidence intervals for a proportion: the one Wilson score interval of metrics_core, and Wald."""

from __future__ import annotations

import math

import numpy as np

from metrics_core.errors import InputError
from metrics_core.significance.base import NAN, TestResult, _check_alpha, _check_count

#: ``z_critical`` of the usual levels: the values ``-scipy.special.ndtri((1 - level) / 2)`` gives,
#: bit for bit (a test compares every entry). At these levels scipy.special is never loaded: its
#: import (0.3 s, most of it scipy's array-API layer cloning numpy) was a tenth of a 1,000-row
#: ``classwatch evaluate``.
_Z_OF_LEVEL = {0.8: 1.2815515655446004, 0.9: 1.6448536269514729, 0.95: 1.959963984540054,
               0.98: 2.3263478740408408, 0.99: 2.5758293035489004, 0.995: 2.807033768343804,
               0.999: 3.2905267314918945}


def z_critical(level):
    """Two-sided normal critical value z = Phi^-1(1 - (1 - level) / 2), as statsmodels computes it.

    The one normal quantile of metrics_core: Wilson and normal (CLT) intervals, sample sizes.

    Parameters
    ----------
    level : float or array-like
        Confidence level(s) in (0, 1).

    Returns
    -------
    numpy.float64 or numpy.ndarray
        z: a scalar for one level, else the shape of ``level``.

    >>> round(float(z_critical(0.95)), 6)
    1.959964
    """
    level = np.asarray(level, dtype=np.float64)
    if level.ndim == 0 and float(level) in _Z_OF_LEVEL:
        return np.float64(_Z_OF_LEVEL[float(level)])
    if not np.all((level > 0) & (level < 1)):
        bad = level.ravel()[~((level.ravel() > 0) & (level.ravel() < 1))][0]
        hint = f" (a percentage? use {bad / 100:g})" if 50 <= bad < 100 else ""
        raise InputError(f"level: a confidence level must be in (0, 1), e.g. 0.95; got {bad:g}{hint}.")
    # -ndtri(q) is how scipy.stats.norm.isf(q) is computed; scipy.special loads in a tenth of the time.
    from scipy.special import ndtri

    return -ndtri((1 - level) / 2)


def wilson(successes, n, level: float = 0.95):
    """Wilson score interval for a proportion, clipped to [0, 1]; vectorised over arrays.

    Parameters
    ----------
    successes : float or array-like
        Number of successes k (a weighted or effective count may be fractional).
    n : float or array-like
        Number of trials, broadcast against ``successes``.
    level : float
        Confidence level, e.g. 0.95.

    Returns
    -------
    (float, float) or (ndarray, ndarray)
        Lower and upper bounds; a pair of floats for scalar input. nan where ``n == 0`` (the
        proportion of an empty set is undefined).

    Raises
    ------
    InputError
        A count outside 0 <= successes <= n (beyond a rounding error), or a level outside (0, 1).

    Notes
    -----
    Wilson (1927): with p = k / n and z = Phi^-1(1 - (1 - level) / 2),
    ``(p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)``, clipped to [0, 1] (the
    bounds can leave it by a rounding error at p = 0 or 1), as
    ``statsmodels.stats.proportion.proportion_confint(method="wilson")``. Used for every
    proportion metric of a report (ISO/IEC TS 4213 clause 7) and by :func:`proportion_interval`.

    Examples
    --------
    >>> tuple(round(x, 6) for x in wilson(8, 10))
    (0.490162, 0.943318)
    >>> wilson(0, 0)
    (nan, nan)
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = z_critical(level)
    # (a weighted count may pass n, or 0, by a rounding error: only a clear excess is an error)
    slack = 1e-9 * np.maximum(np.abs(n), 1.0)
    outside = (k < -slack) | (k > n + slack) | (n < 0)
    if np.any(outside):
        kb, nb = np.broadcast_arrays(k, n)
        i = np.flatnonzero(np.broadcast_to(outside, kb.shape))[0]
        raise InputError(f"successes, n: {kb.ravel()[i]:g} successes of n = {nb.ravel()[i]:g}; a proportion needs "
                         "0 <= successes <= n.")
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4.0 * n * n)) / denom
        lo = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
        hi = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


def _normal(q: float, n: float, level: float) -> tuple[float, float]:
    """Normal (Wald) interval p +- z sqrt(p (1 - p) / n), clipped to [0, 1]."""
    half = float(z_critical(level)) * math.sqrt(q * (1 - q) / n)
    return min(max(q - half, 0.0), 1.0), min(max(q + half, 0.0), 1.0)


def _check_counts(successes, n) -> None:
    _check_count("successes", successes)
    _check_count("n", n)
    if n == 0:
        raise InputError("n: the proportion of an empty set is undefined; need n > 0.")
    if successes > n:
        raise InputError(f"successes: {successes!r} is more than n = {n!r}.")


def proportion_interval(successes, n, level: float = 0.95, method: str = "wilson") -> TestResult:
    """Confidence interval for a proportion: Wilson score (default) or normal (Wald).

    Parameters
    ----------
    successes : float
        Number of successes (>= 0, at most ``n``).
    n : float
        Number of trials (> 0).
    level : float
        Confidence level, strictly between 0 and 1.
    method : {"wilson", "normal"}
        :func:`wilson`, or the normal approximation p +- z sqrt(p (1 - p) / n).

    Returns
    -------
    TestResult
        ``statistic`` and ``effect_size`` the proportion successes / n, ``interval`` the bounds,
        ``p_value`` nan (an interval has none), ``alpha`` = 1 - level.

    Notes
    -----
    z = Phi^-1(1 - (1 - level) / 2); both intervals are clipped to [0, 1], as
    ``statsmodels.stats.proportion.proportion_confint``. ``n = 0`` is an error (undefined).

    Examples
    --------
    >>> r = proportion_interval(81, 100)
    >>> [round(x, 4) for x in r.interval]
    [0.7222, 0.8749]
    """
    level = _check_alpha(level, "level")
    if method not in ("wilson", "normal"):
        raise InputError(f"method: must be 'wilson' or 'normal', got {method!r}.")
    _check_counts(successes, n)
    q = successes / n
    lo, hi = wilson(successes, n, level) if method == "wilson" else _normal(q, n, level)
    label = "Wilson" if method == "wilson" else "normal"
    return TestResult(f"{label} interval for a proportion", q, NAN, q, "proportion",
                      f"{q:.4g} ({level:.0%} {label} interval {lo:.4g} to {hi:.4g}, n={n:g})",
                      1 - level, interval=(lo, hi), details={"n": n, "successes": successes})
