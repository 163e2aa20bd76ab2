"""Benchmark: KS + PSI + Wasserstein on 10M reference vs 10M current scores, metrics_core vs scipy on rows.

metrics_core builds each exact value distribution once (``drift.value_distribution``: the input
check and ``ScoreCounts.of_values``, one sort of packed keys and a run-length pass, timed as
part of our side) and computes all
three statistics from the two statistics with ``drift.drift_tests`` (one merge shared by KS and
Wasserstein; the three separate calls are timed too); scipy
gets the rows for ``ks_2samp`` and ``wasserstein_distance``, and PSI is the plain numpy recipe
(reference quantile edges, searchsorted, bincount). Prints the best of two wall times per side, the
speed-up, whether the values agree, and each side's peak traced memory (tracemalloc sees numpy's
buffers, not the input arrays allocated before it starts).

Then the KS p-value alone at three effective sample sizes, against scipy.stats.kstwo.sf.

Usage: python benchmarks/bench_drift.py [n_rows]   (default 10_000_000)
"""

from __future__ import annotations

import math
import sys
import time
import tracemalloc

import numpy as np
import scipy.stats as st

from metrics_core import drift
from metrics_core.counts import ScoreCounts

BINS = 10


def numpy_psi(ref: np.ndarray, cur: np.ndarray, bins: int = BINS) -> float:
    """PSI the usual way on rows: quantile edges of the reference, empty bins floored at 1e-4."""
    inner = np.unique(np.quantile(ref, np.linspace(0.0, 1.0, bins + 1)[1:-1]))
    r = np.bincount(np.searchsorted(inner, ref, side="right"), minlength=inner.size + 1) / ref.size
    c = np.bincount(np.searchsorted(inner, cur, side="right"), minlength=inner.size + 1) / cur.size
    r, c = np.maximum(r, drift.PSI_FLOOR), np.maximum(c, drift.PSI_FLOOR)
    return float(np.sum((c - r) * np.log(c / r)))


def from_statistics(r: ScoreCounts, c: ScoreCounts) -> dict:
    """The three tests in one call: the statistics are validated once and KS/Wasserstein share a merge."""
    t = drift.drift_tests(r, c, ("ks", "psi", "wasserstein"), bins=BINS)
    return {"ks_d": t["ks"].statistic, "ks_p": t["ks"].p_value, "psi": t["psi"].statistic,
            "wasserstein": t["wasserstein"].statistic}


def run_ours(ref: np.ndarray, cur: np.ndarray) -> dict:
    return from_statistics(drift.value_distribution(ref), drift.value_distribution(cur))


def run_ours_separately(ref: np.ndarray, cur: np.ndarray) -> dict:
    r, c = drift.value_distribution(ref), drift.value_distribution(cur)
    k = drift.ks(r, c)
    return {"ks_d": k.statistic, "ks_p": k.p_value, "psi": drift.psi(r, c, BINS).statistic,
            "wasserstein": drift.wasserstein(r, c).statistic}


def build(ref: np.ndarray, cur: np.ndarray) -> tuple:
    return drift.value_distribution(ref), drift.value_distribution(cur)


def run_scipy(ref: np.ndarray, cur: np.ndarray) -> dict:
    k = st.ks_2samp(ref, cur)
    return {"ks_d": float(k.statistic), "ks_p": float(k.pvalue), "psi": numpy_psi(ref, cur),
            "wasserstein": float(st.wasserstein_distance(ref, cur))}


def measure(fn, *args, repeat: int = 2) -> tuple[dict, float, float]:
    """(result, best wall time of ``repeat`` runs, peak traced MiB of the first run).

    The best of two runs, because the first touch of freshly mapped memory costs either side
    more the first time it is used in the process.
    """
    best, peak = math.inf, 0.0
    for i in range(repeat):
        if i == 0:
            tracemalloc.start()
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
        if i == 0:
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    return out, best, peak


def main(n: int = 10_000_000) -> None:
    rng = np.random.default_rng(20240601)
    ref = rng.beta(2.0, 5.0, n)
    cur = rng.beta(2.003, 5.0, n)  # a small shift, so the KS p-value is not simply 0
    print(f"KS + PSI ({BINS} quantile bins) + Wasserstein, {n:,} reference vs {n:,} current float64 scores")
    print(f"input arrays: {2 * ref.nbytes / 2**20:.0f} MiB")
    run_ours(ref[:1000], cur[:1000]), run_scipy(ref[:1000], cur[:1000])  # warm-up: imports, dispatch
    a, t_ours, m_ours = measure(run_ours, ref, cur)
    b, t_scipy, m_scipy = measure(run_scipy, ref, cur)
    print(f"metrics_core (ScoreCounts built inside): {t_ours:7.2f} s, peak traced memory {m_ours:7.0f} MiB")
    print(f"scipy/numpy on rows:                     {t_scipy:7.2f} s, peak traced memory {m_scipy:7.0f} MiB")
    print(f"speed-up: {t_scipy / t_ours:.1f}x (target >= 5x)")
    separate, t_sep, _ = measure(run_ours_separately, ref, cur, repeat=1)
    assert separate == a
    print(f"metrics_core with three separate calls (ks, psi, wasserstein): {t_sep:.2f} s "
          f"({t_scipy / t_sep:.1f}x)")
    (r, c), t_build, _ = measure(build, ref, cur)
    print(f"of which building the two statistics: {t_build:.2f} s; they hold {r.scores.size + c.scores.size:,} "
          f"distinct values ({(r.scores.nbytes + r.pos.nbytes + r.neg.nbytes) * 2 / 2**20:.0f} MiB)")
    for key in a:
        same = a[key] == b[key]
        rel = abs(a[key] - b[key]) / max(abs(b[key]), 1e-300)
        print(f"  {key:12s} ours={a[key]!r:<24} scipy={b[key]!r:<24} "
              f"{'identical' if same else f'relative difference {rel:.1e}'}")
    ok = a["ks_d"] == b["ks_d"] and abs(a["ks_p"] - b["ks_p"]) <= 1e-6 and a["psi"] == b["psi"] and \
        abs(a["wasserstein"] - b["wasserstein"]) <= 1e-12 * abs(b["wasserstein"])
    print("values agree (KS D and PSI bit-identical, KS p within 1e-6, Wasserstein within 1e-12 relative):", ok)
    ks_pvalues()


def ks_pvalues(c2: float = 9.0) -> None:
    """The asymptotic KS p-value alone, scipy's kstwo.sf against kolmogorov.kstwo_sf, where both
    sum Smirnov's formula (n d^2 = c2, p about 2 exp(-2 c2))."""
    from metrics_core.drift import kolmogorov

    print(f"\nKS p-value alone (kstwo.sf at n d^2 = {c2:g}; n is the effective size m n / (m + n)):")
    for n_eff in (kolmogorov.SMIRNOV_FAST_N, 100_000, kolmogorov.SCIPY_SMIRNOV_MAX_N):  # above: scipy's closed form
        d = math.sqrt(c2 / n_eff)
        t0 = time.perf_counter()
        ours = kolmogorov.kstwo_sf(d, n_eff)
        t1 = time.perf_counter()
        theirs = float(st.kstwo.sf(d, n_eff))
        t2 = time.perf_counter()
        print(f"  n = {n_eff:>9,}: ours {t1 - t0:6.3f} s, scipy {t2 - t1:6.3f} s ({(t2 - t1) / (t1 - t0):4.1f}x), "
              f"p = {ours:.6e}, relative difference {abs(ours - theirs) / theirs:.1e}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
