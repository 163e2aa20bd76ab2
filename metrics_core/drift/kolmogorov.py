"""The two-sample KS p-value by scipy.stats.ks_2samp's rules, with Smirnov's sum made fast for large samples."""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import stats

try:  # Boost's binomial pmf, as scipy.stats.binom.pmf computes it, without its argument checks (20 % here)
    from scipy.special._ufuncs import _binom_pmf
except ImportError:  # pragma: no cover - a scipy release that renames it: the public function, same values
    def _binom_pmf(v, n, p):
        return stats.binom.pmf(v, n, p)

try:  # the Kolmogorov distribution's survival function as kstwo.sf computes it in its support (0.4 ms of checks
    # and vectorisation a call, paid by each of a period's segments' asymptotic KS p-values)
    from scipy.stats._ksstats import _kolmogn
except ImportError:  # pragma: no cover - a scipy release that renames it: the public function, same values
    def _kolmogn(n, x, cdf=True):
        return stats.distributions.kstwo.sf(x, n) if not cdf else stats.distributions.kstwo.cdf(x, n)

from metrics_core.significance.base import NAN
from metrics_core.threads import in_ranges, kernel_threads

__all__ = ["SCIPY_SMIRNOV_MAX_N", "SMIRNOV_FAST_N", "ks_pvalue", "kstwo_sf", "smirnov_sf"]

#: From this n on, :func:`kstwo_sf` sums Smirnov's formula itself: every n where scipy's asymptotic
#: survival function sums it (its ``n > 140`` branch). scipy's ``smirnov`` spends about 1.2 us a
#: term on this machine (1.1 ms at n = 2,000, 1.2 s at n = 10^6); :func:`smirnov_sf` is faster on one
#: thread by 6x at n = 500, 7.5x at 2,000, 12x at 10,000 and more. A period watched in 50 segments
#: at 1M rows has some 70 such tests of a few thousand terms each, for segments whose scores moved:
#: 0.2 s of its assessment with scipy's sum.
SMIRNOV_FAST_N = 141

#: Above this n scipy's ``smirnov`` does not sum at all: it returns the closed form
#: exp(-(6 n d + 1)^2 / (18 n)) at once (``SMIRNOV_MAX_COMPUTE_N`` in scipy's kolmogorov code;
#: about 3e-5 relative from the sum at n = 10^6). :func:`kstwo_sf` keeps scipy's value there, so
#: a KS p-value equals ``ks_2samp``'s at every size; either is within the O(n^-1/2) of the
#: asymptotic distribution itself.
SCIPY_SMIRNOV_MAX_N = 1_000_000

_TERMS_PER_CHUNK = 1 << 16  # fixed, so the sum is the same for every number of threads
# A term costs about 100 ns, so 131,072 terms are some 13 ms of work: enough for a second thread
# to pay for itself (the kernels' general threshold, PARALLEL_MIN, is set for ops of a few ns).
_PARALLEL_TERMS = 1 << 17


def smirnov_sf(n: int, d: float) -> float:
    """P(D+_n >= d), the one-sided Kolmogorov-Smirnov survival function (``scipy.special.smirnov``).

    Birnbaum and Tingey's form of Smirnov's formula (Smirnov 1944; Birnbaum and Tingey, Ann.
    Math. Statist. 1951)::

        P(D+_n >= d) = sum_{v=0}^{floor(n (1 - d))} C(n, v) d (d + v/n)^(v-1) (1 - d - v/n)^(n-v)

    Each term equals ``(d / p) * Binomial(n, p).pmf(v)`` with ``p = d + v/n``, so the sum is
    taken over Boost's binomial probabilities (the ones ``scipy.stats.binom.pmf`` returns), in
    fixed chunks of terms on up to :func:`metrics_core.threads.kernel_threads` threads (from
    131,072 terms on), the chunk sums added exactly (``math.fsum``): the result does not depend
    on the thread count.
    It agrees with scipy's ``smirnov`` to about 1e-13 relative (tested up to n = 10^6, down to
    probabilities of 1e-280), in a tenth of the time per thread.

    Parameters
    ----------
    n : int
        Sample size, >= 1.
    d : float
        The deviation, 0 < d < 1.

    Returns
    -------
    float
        The probability; 0.0 where every term underflows.

    Examples
    --------
    >>> round(smirnov_sf(50_000, 0.01), 12) == round(float(__import__("scipy").special.smirnov(50_000, 0.01)), 12)
    True
    """
    if not (n >= 1 and 0.0 < d < 1.0):
        raise ValueError(f"smirnov_sf needs n >= 1 and 0 < d < 1 (got n = {n}, d = {d}).")
    terms = int(math.floor(n * (1.0 - d))) + 1
    chunks = -(-terms // _TERMS_PER_CHUNK)

    def chunk_sums(first: int, last: int) -> list[float]:
        out = []
        for c in range(first, last):
            v = np.arange(c * _TERMS_PER_CHUNK, min((c + 1) * _TERMS_PER_CHUNK, terms), dtype=np.float64)
            p = v / n
            p += d
            out.append(float(np.sum(_binom_pmf(v, float(n), p) * (d / p))))
        return out

    sums = in_ranges(chunk_sums, chunks, kernel_threads(terms, _PARALLEL_TERMS))
    return math.fsum(s for part in sums for s in part)


def kstwo_sf(d: float, n: int) -> float:
    """``scipy.stats.kstwo.sf(d, n)``: P(D_n >= d) for the two-sided one-sample KS statistic.

    scipy's own routine (Simard and L'Ecuyer 2011, as scipy implements it), except where it
    returns ``2 * smirnov(n, d)`` (n > 140, 1 < n d < n - 1, d < 0.5, 2.2 <= n d^2 < 370) with
    :data:`SMIRNOV_FAST_N` <= n <= :data:`SCIPY_SMIRNOV_MAX_N`: there the same quantity comes
    from :func:`smirnov_sf`, clipped to [0, 1] as scipy clips it.
    """
    t = n * d
    if SMIRNOV_FAST_N <= n <= SCIPY_SMIRNOV_MAX_N and 1.0 < t < n - 1 and d < 0.5 and 2.2 <= t * d < 370.0:
        return min(max(2.0 * smirnov_sf(n, d), 0.0), 1.0)
    if 0.0 < d < 1.0 and n >= 1:  # inside the support: the routine kstwo.sf calls, without its wrappers
        return float(_kolmogn(int(n), float(d), cdf=False))
    return float(stats.distributions.kstwo.sf(d, n))


def ks_pvalue(d: float, n1: int, n2: int) -> tuple[float, float, str]:
    """scipy.stats.ks_2samp's two-sided p-value with method='auto': (d, p, method).

    Exact when max(n1, n2) <= 10000 (scipy's MAX_AUTO_N; the exact method also rounds d to a
    multiple of 1/lcm(n1, n2)), else the asymptotic Kolmogorov distribution
    :func:`kstwo_sf` (d, round(m n / (m + n))). Uses scipy's own exact routine, falling back to
    asymptotic with a warning as ks_2samp does when the exact computation fails.
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
        p = kstwo_sf(d, round(m * n / (m + n)))  # (round half to even, as np.round)
    return float(d), min(max(float(p), 0.0), 1.0), method  # np.clip's value (nan stays nan), without its call
