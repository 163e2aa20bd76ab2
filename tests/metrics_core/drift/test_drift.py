"""Oracle tests of metrics_core.drift against scipy.stats, scipy.spatial and statsmodels on rows."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import scipy.special as sp
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy.spatial.distance import euclidean, jensenshannon
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportions_ztest

from metrics_core import drift
from metrics_core.counts import ScoreCounts
from metrics_core.drift import Histogram, kolmogorov
from metrics_core.errors import InputError
from metrics_core.threads import one_kernel_thread

SETTINGS = settings(max_examples=60, deadline=None)
# Few distinct values on both sides of zero, so ties across samples are common and both merge
# paths (non-negative packed keys, signed values) are exercised.
tied = hs.sampled_from([-2.5, -1.0, -0.0, 0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 3.0])
continuous = hs.floats(-50, 50, allow_nan=False)
samples = hs.lists(hs.one_of(tied, continuous), min_size=1, max_size=60)
nonneg = hs.lists(hs.one_of(hs.sampled_from([0.0, 0.1, 0.5, 1.0]), hs.floats(0, 1)), min_size=1, max_size=60)


def numpy_psi(ref, cur, bins=10):
    inner = np.unique(np.quantile(ref, np.linspace(0, 1, bins + 1)[1:-1]))
    r = np.bincount(np.searchsorted(inner, ref, side="right"), minlength=inner.size + 1) / len(ref)
    c = np.bincount(np.searchsorted(inner, cur, side="right"), minlength=inner.size + 1) / len(cur)
    r, c = np.where(r == 0, 1e-4, r), np.where(c == 0, 1e-4, c)  # only empty bins are floored
    return float(np.sum((c - r) * np.log(c / r)))


def parts(values, k=3):
    """ScoreCounts of the rows built partition by partition and merged."""
    chunks = np.array_split(np.asarray(values, dtype=float), k)
    out = ScoreCounts.of_values(chunks[0])
    for c in chunks[1:]:
        if c.size:
            out = out.merge(ScoreCounts.of_values(c))
    return out


# ---------------------------------------------------------------- KS and Wasserstein: exact


@SETTINGS
@given(hs.integers(1, 40), hs.integers(1, 6), hs.integers(0, 2**32 - 1), hs.sampled_from([0.1, 0.5, 1.0]))
def test_rows_of_histograms_equal_the_single_tests_bit_for_bit(bins, pairs, seed, fill):
    """Histograms over shared bin points (sparse and dense, ties between the two sides): each pair's
    KS result, Wasserstein distance and PSI equal drift_tests' on the pair's non-empty bins exactly."""
    rng = np.random.default_rng(seed)
    points = np.sort(rng.choice(np.linspace(-3.0, 5.0, 200), bins, replace=False))
    ref = (rng.random((pairs, bins)) < fill) * rng.integers(0, 30, (pairs, bins))
    cur = (rng.random((pairs, bins)) < fill) * rng.integers(0, 400, (pairs, bins))
    ref[np.arange(pairs), rng.integers(0, bins, pairs)] += 1
    cur[np.arange(pairs), rng.integers(0, bins, pairs)] += 1
    tests, w1 = drift.ks_wasserstein_rows(points, ref, cur)
    psi = drift.psi_rows(points, ref, cur, bins=10)
    for i in range(pairs):
        one = [ScoreCounts(points[x > 0], x[x > 0], np.zeros(int((x > 0).sum()), np.int64)) for x in (ref[i], cur[i])]
        single = drift.drift_tests(*one, ("ks", "wasserstein", "psi"), thresholds={"wasserstein": None})
        assert tests[i] == single["ks"] and w1[i] == single["wasserstein"].statistic
        assert psi[i] == single["psi"].statistic


@pytest.mark.parametrize("ref, cur", [(np.zeros((1, 3), np.int64), np.ones((1, 3), np.int64)),
                                      (np.ones((2, 3)), np.ones((2, 3))), (np.ones((1, 4), np.int64),
                                                                          np.ones((1, 3), np.int64))])
def test_ks_wasserstein_rows_reject_empty_weighted_or_unlike_histograms(ref, cur):
    with pytest.raises(InputError, match="reference and current"):
        drift.ks_wasserstein_rows(np.arange(3.0), ref, cur)
@pytest.mark.filterwarnings("ignore:.*xact calculation unsuccessful")
@SETTINGS
@given(hs.one_of(samples, nonneg), hs.one_of(samples, nonneg))
def test_ks_equals_ks_2samp_from_rows_and_merged_statistics(a, b):
    ref = st.ks_2samp(a, b)
    for r, c in ((a, b), (parts(a), parts(b)), (drift.value_distribution(a), np.array(b))):
        res = drift.ks(r, c)
        assert res.statistic == ref.statistic
        assert abs(res.p_value - ref.pvalue) <= 1e-6


@pytest.mark.parametrize("n1, n2", [(10_001, 12_000), (300, 15_000), (20_000, 20_000), (9_000, 10_000)])
def test_ks_large_samples_use_scipys_rule(n1, n2):
    rng = np.random.default_rng(n1 + n2)
    a, b = np.round(rng.normal(size=n1), 2), np.round(rng.normal(0.03, size=n2), 2)  # many ties
    res, ref = drift.ks(a, b), st.ks_2samp(a, b)
    assert res.statistic == ref.statistic and abs(res.p_value - ref.pvalue) <= 1e-6
    assert res.details["method"] == ("exact" if max(n1, n2) <= 10_000 else "asymp")


def test_ks_chunk_boundaries(monkeypatch):
    monkeypatch.setattr(drift.ecdf, "_CHUNK", 3)
    rng = np.random.default_rng(0)
    for a, b in ((rng.integers(0, 5, 40) / 4, rng.integers(0, 6, 33) / 4),
                 (rng.normal(size=50), rng.normal(size=47))):
        ref = st.ks_2samp(a, b)
        assert drift.ks(a, b).statistic == ref.statistic
        assert drift.wasserstein(a, b).statistic == pytest.approx(st.wasserstein_distance(a, b), rel=1e-12)


@SETTINGS
@given(hs.one_of(samples, nonneg), hs.one_of(samples, nonneg))
def test_wasserstein_equals_scipy(a, b):
    ref = st.wasserstein_distance(a, b)
    for r, c in ((a, b), (parts(a), parts(b))):
        assert drift.wasserstein(r, c).statistic == pytest.approx(ref, rel=1e-9, abs=1e-12)


def _counts(scores, counts):
    return ScoreCounts(np.array(scores, dtype=float), np.array(counts, dtype=np.int64), np.zeros(len(counts), np.int64))


# Statistics holding a value of count 0 whose counts still sum to their size (a 2 elsewhere): they
# are not unit counts, so the rank of a value is not its cumulative count.
ZERO_COUNTS = [
    pytest.param(_counts([1.0, 2.0, 3.0], [2, 0, 1]), [1.5, 2.5, 3.5], id="reference, middle"),
    pytest.param(_counts([0.1, 0.2, 0.3, 0.4], [0, 2, 1, 1]), [0.15, 0.2, 0.35, 0.5, 0.6], id="reference, first"),
    pytest.param([0.0, 0.5, 0.5, 3.0], _counts([-1.0, 0.5, 2.0], [2, 1, 0]), id="current, last, signed"),
    pytest.param(_counts([0.0, 1.0, 4.0], [1, 0, 2]), _counts([-2.0, 1.0, 3.0, 4.0], [0, 2, 1, 1]), id="both"),
]


def _rows(x):
    return np.repeat(x.scores, x.pos) if isinstance(x, ScoreCounts) else np.asarray(x, dtype=float)


@pytest.mark.parametrize("ref, cur", ZERO_COUNTS)
def test_ks_and_wasserstein_of_statistics_with_a_zero_count_equal_scipy_on_the_rows(ref, cur):
    r_rows, c_rows = _rows(ref), _rows(cur)
    want_ks, want_w = st.ks_2samp(r_rows, c_rows), st.wasserstein_distance(r_rows, c_rows)
    got_ks, got_w = drift.ks(ref, cur), drift.wasserstein(ref, cur)
    assert got_ks.statistic == want_ks.statistic and got_ks.p_value == pytest.approx(want_ks.pvalue, abs=1e-12)
    assert got_w.statistic == pytest.approx(want_w, rel=1e-12)
    both = drift.drift_tests(ref, cur, ("ks", "wasserstein"))  # the shared merge
    assert both["ks"] == got_ks and both["wasserstein"] == got_w


@SETTINGS
@given(hs.lists(hs.tuples(hs.one_of(tied, continuous), hs.floats(0.01, 10)), min_size=1, max_size=40),
       samples)
def test_weighted_wasserstein_equals_scipy(weighted, b):
    v, w = map(np.array, zip(*weighted))
    res = drift.wasserstein(ScoreCounts.of_values(v, w), b)
    assert res.statistic == pytest.approx(st.wasserstein_distance(v, b, u_weights=w), rel=1e-9, abs=1e-12)
    std = math.sqrt(np.cov(v, aweights=w, ddof=0)) if v.size > 1 else 0.0
    if std > 1e-6:
        assert res.effect_size == pytest.approx(res.statistic / std, rel=1e-9)


def test_float32_score_statistics_widen_exactly():
    rng = np.random.default_rng(8)
    a, b = rng.random(3000).astype(np.float32), rng.random(2000).astype(np.float32)
    r, c = ScoreCounts.from_arrays(a > 0.5, a), ScoreCounts.from_arrays(b > 0.5, b)  # labels ignored: pos + neg
    assert drift.ks(r, c).statistic == st.ks_2samp(a, b).statistic
    assert drift.wasserstein(r, c).statistic == pytest.approx(st.wasserstein_distance(a, b), rel=1e-9)


def test_ks_and_wasserstein_accept_polars_and_arrow():
    a, b = [0.1, 0.4, 0.4, 0.9], [0.2, 0.4, 0.8]
    for r, c in ((pl.Series(a), pa.array(b)), (pa.chunked_array([a[:2], a[2:]]), np.array(b))):
        assert drift.ks(r, c).statistic == st.ks_2samp(a, b).statistic
        assert drift.wasserstein(r, c).statistic == pytest.approx(st.wasserstein_distance(a, b))


# ---------------------------------------------------------------- KS p-values for large samples
@settings(max_examples=80, deadline=None)
@given(hs.one_of(hs.integers(1, 300), hs.integers(kolmogorov.SMIRNOV_FAST_N, 60_000)), hs.floats(0.05, 25))
def test_smirnov_sf_equals_scipys_smirnov(n, c):
    d = min(c / math.sqrt(n), 1 - 1e-9)
    # below 1e-300 the two differ in the last bits of denormals
    assert kolmogorov.smirnov_sf(n, d) == pytest.approx(float(sp.smirnov(n, d)), rel=1e-12, abs=1e-300)


@pytest.mark.slow
@pytest.mark.parametrize("n", [kolmogorov.SCIPY_SMIRNOV_MAX_N, kolmogorov.SCIPY_SMIRNOV_MAX_N + 1, 5_000_000])
@pytest.mark.parametrize("c2", [2.2, 9.0, 40.0])
def test_kstwo_sf_at_a_million_rows_and_beyond(n, c2):
    """Up to scipy's limit our sum; beyond it scipy's closed form (3e-5 from the sum), kept to equal ks_2samp."""
    d = math.sqrt(c2 / n)
    assert kolmogorov.kstwo_sf(d, n) == pytest.approx(float(st.kstwo.sf(d, n)), rel=1e-12, abs=0)


@pytest.mark.parametrize("n", [kolmogorov.SMIRNOV_FAST_N - 1, kolmogorov.SMIRNOV_FAST_N, 45_001])
@pytest.mark.parametrize("c2", [0.3, 2.1999, 2.2, 2.2001, 100.0, 369.99, 370.0, 500.0])
def test_kstwo_sf_equals_scipy_on_both_sides_of_every_branch(n, c2):
    d = math.sqrt(c2 / n)
    assert kolmogorov.kstwo_sf(d, n) == pytest.approx(float(st.kstwo.sf(d, n)), rel=1e-12, abs=1e-300)
    for edge in (1 / n, 1.5 / n, 0.5, 0.7, 1 - 1 / n, 1.0):
        assert kolmogorov.kstwo_sf(edge, n) == pytest.approx(float(st.kstwo.sf(edge, n)), rel=1e-12, abs=1e-300)


@settings(max_examples=200, deadline=None)
@given(hs.one_of(
    hs.tuples(hs.integers(1, kolmogorov.SMIRNOV_FAST_N - 1), hs.floats(0.0, 1.0)),
    # above it, a shift too weak for Smirnov's sum (n d^2 < 2.2: most tests of a stable period)
    hs.integers(kolmogorov.SMIRNOV_FAST_N, 30_000).flatmap(
        lambda n: hs.tuples(hs.just(n), hs.floats(0.0, 2.1999).map(lambda q: math.sqrt(q / n)))),
    hs.tuples(hs.integers(1, 30_000), hs.sampled_from([0.0, 1.0]))))
def test_kstwo_sf_is_scipys_bit_for_bit_outside_the_smirnov_sum(n_d):
    """Where scipy does not sum Smirnov's formula (below SMIRNOV_FAST_N, a weak shift, the support's
    edges) kstwo_sf calls the routine kstwo.sf calls: the same float."""
    n, d = n_d
    assert kolmogorov.kstwo_sf(d, n) == float(st.kstwo.sf(d, n))


def test_the_private_binomial_pmf_is_scipys_public_one():
    v, n = np.arange(0, 5_000, dtype=np.float64), 50_000
    p = v / n + 0.004
    assert np.array_equal(kolmogorov._binom_pmf(v, float(n), p), st.binom.pmf(v, n, p))


@pytest.mark.parametrize("threads", [2, 3, 5])
def test_smirnov_sf_is_the_same_on_any_number_of_threads(monkeypatch, threads):
    n, d = 30_000, 0.02
    monkeypatch.setattr(kolmogorov, "_TERMS_PER_CHUNK", 1000)  # 30 chunks
    with one_kernel_thread():
        alone = kolmogorov.smirnov_sf(n, d)
    monkeypatch.setattr(kolmogorov, "_PARALLEL_TERMS", 1)
    monkeypatch.setenv("CLASSWATCH_SCAN_THREADS", str(threads))
    assert kolmogorov.smirnov_sf(n, d) == alone


@pytest.mark.parametrize("bad", [(0, 0.1), (10, 0.0), (10, 1.0), (10, math.nan)])
def test_smirnov_sf_outside_its_domain_is_an_error(bad):
    with pytest.raises(ValueError, match="n >= 1 and 0 < d < 1"):
        kolmogorov.smirnov_sf(*bad)


def test_ks_of_large_shifted_samples_equals_ks_2samp():
    rng = np.random.default_rng(11)
    a, b = rng.normal(size=60_000), rng.normal(0.05, size=50_000)
    res, ref = drift.ks(a, b), st.ks_2samp(a, b)
    n_eff = round(60_000 * 50_000 / 110_000)
    assert n_eff >= kolmogorov.SMIRNOV_FAST_N and 2.2 <= n_eff * res.statistic**2 < 370  # the fast branch
    assert res.statistic == ref.statistic
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-12, abs=0)


# ---------------------------------------------------------------- binned distances
@SETTINGS
@given(hs.lists(hs.one_of(tied, continuous), min_size=2, max_size=80), samples, hs.integers(1, 12))
def test_psi_equals_numpy_recipe_on_rows(a, b, bins):
    res = drift.psi(a, b, bins)
    assert res.statistic == pytest.approx(numpy_psi(np.array(a), np.array(b), bins), rel=1e-12, abs=1e-15)
    assert drift.psi(parts(a), parts(b), bins).statistic == pytest.approx(res.statistic, rel=1e-12, abs=1e-15)
    assert math.isnan(res.p_value) and res.effect_size == res.statistic


@SETTINGS
@given(hs.lists(hs.one_of(tied, continuous), min_size=1, max_size=80), hs.integers(1, 12))
def test_quantile_edges_equal_np_quantile(a, bins):
    edges = Histogram.edges_from_reference(parts(a), bins)
    inner = np.unique(np.quantile(np.array(a) + 0.0, np.linspace(0, 1, bins + 1)[1:-1]))
    np.testing.assert_array_equal(edges[1:-1], inner)
    assert edges[0] == -np.inf and edges[-1] == np.inf


def test_weighted_quantile_edges_equal_numpy_inverted_cdf():
    rng = np.random.default_rng(4)
    v, w = rng.normal(size=200).round(1), rng.random(200)
    q = np.linspace(0, 1, 6)[1:-1]
    expected = np.unique(np.quantile(v, q, method="inverted_cdf", weights=w))
    np.testing.assert_array_equal(Histogram.edges_from_reference(ScoreCounts.of_values(v, w), 5)[1:-1], expected)


@SETTINGS
@given(samples, hs.lists(hs.floats(-10, 10), min_size=1, max_size=5, unique=True))
def test_histogram_counts_merge_and_match_np_histogram(a, cuts):
    edges = np.concatenate(([-np.inf], np.sort(cuts), [np.inf]))
    whole = Histogram.from_values(a, edges)
    np.testing.assert_array_equal(whole.counts, np.histogram(a, edges)[0])
    half = len(a) // 2
    if half:
        merged = Histogram.from_values(a[:half], edges).merge(Histogram.from_values(a[half:], edges))
        np.testing.assert_array_equal(merged.counts, whole.counts)
    np.testing.assert_array_equal(Histogram.from_counts(parts(a), edges).counts, whole.counts)


def _props(a, b, bins):
    edges = Histogram.edges_from_reference(a, bins)
    p, q = np.histogram(a, edges)[0], np.histogram(b, edges)[0]
    return p / p.sum(), q / q.sum(), edges


@SETTINGS
@given(hs.lists(continuous, min_size=2, max_size=80), samples, hs.integers(2, 10))
def test_jensen_shannon_and_hellinger_equal_scipy(a, b, bins):
    p, q, edges = _props(a, b, bins)
    js, h = drift.jensen_shannon(a, b, bins), drift.hellinger(a, b, bins)
    assert js.statistic == pytest.approx(jensenshannon(p, q, base=2), rel=1e-9, abs=1e-9)
    assert h.statistic == pytest.approx(euclidean(np.sqrt(p), np.sqrt(q)) / math.sqrt(2), rel=1e-9, abs=1e-12)
    # precomputed histograms over the reference edges give the same numbers
    hr, hc = Histogram.from_values(a, edges), Histogram.from_values(b, edges)
    assert drift.jensen_shannon(hr, hc).statistic == pytest.approx(js.statistic, abs=1e-15)
    assert drift.hellinger(hr, b).statistic == pytest.approx(h.statistic, abs=1e-15)


def test_category_mappings_and_psi_floor():
    ref, cur = {"a": 80, "b": 20}, {"a": 70, "b": 25, "c": 5}
    p, q = np.array([0.8, 0.2, 1e-4]), np.array([0.7, 0.25, 0.05])
    assert drift.psi(ref, cur).statistic == pytest.approx(np.sum((q - p) * np.log(q / p)), rel=1e-12)
    assert drift.psi(ref, cur).details["empty_bins"] == 1
    assert drift.jensen_shannon(ref, cur).statistic == pytest.approx(
        jensenshannon([0.8, 0.2, 0], [0.7, 0.25, 0.05], base=2), rel=1e-12)
    assert drift.psi(ref, ref).statistic == 0.0 and drift.hellinger(ref, ref).statistic == 0.0


@pytest.mark.parametrize("ref, cur", [
    ({"a": 1, "b": 99_999}, {"a": 50_000, "b": 50_000}),                 # a sliver: kept, not floored
    ({"a": 0, "b": 3, "c": 99_997}, {"a": 40_000, "b": 30_000, "c": 30_000}),  # an empty bin and a sliver
    ({"a": 50_000, "b": 50_000}, {"a": 2, "b": 299_998}),                # a sliver in the current
])
def test_psi_floors_only_empty_bins(ref, cur):
    p = np.array([ref.get(k, 0) for k in cur], dtype=float)
    q = np.array([cur[k] for k in cur], dtype=float)
    p, q = p / p.sum(), q / q.sum()
    p[p == 0], q[q == 0] = drift.PSI_FLOOR, drift.PSI_FLOOR  # the docstring: an EMPTY bin's proportion
    want = float(np.sum((q - p) * np.log(q / p)))
    got = drift.psi(ref, cur)
    assert got.statistic == pytest.approx(want, rel=1e-12)
    assert got.details["empty_bins"] == sum(1 for k in cur if ref.get(k, 0) == 0 or cur[k] == 0)
    assert drift.drift_tests(ref, cur, ("psi",))["psi"] == got


def test_discrete_bins_none_uses_distinct_values():
    a, b = [0, 0, 1, 2, 2, 2], [0, 1, 1, 3]
    # union of values 0, 1, 2, 3 -> reference [2, 1, 3, 0], current [1, 2, 0, 1]
    assert drift.jensen_shannon(a, b, bins=None).statistic == pytest.approx(
        jensenshannon([2, 1, 3, 0], [1, 2, 0, 1], base=2), rel=1e-12)


# ---------------------------------------------------------------- count tests
@SETTINGS
@given(hs.integers(2, 6).flatmap(lambda k: hs.tuples(*[hs.lists(hs.integers(0, 60), min_size=k, max_size=k)] * 2)))
def test_chi_squared_counts_matches_chi2_contingency(rc):
    r, c = rc
    if sum(r) == 0 or sum(c) == 0:
        with pytest.raises(InputError, match="all counts are zero"):
            drift.chi_squared_counts(r, c)
        return
    t = np.array([r, c])
    t = t[:, t.sum(0) > 0]
    with pytest.warns(RuntimeWarning) if t.shape[1] < len(r) or t.shape[1] < 2 else _nothing():
        res = drift.chi_squared_counts(r, c)
    if t.shape[1] < 2:
        assert math.isnan(res.p_value)
        return
    ref = st.chi2_contingency(t)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-9, abs=1e-12)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12)
    keys = [f"k{i}" for i in range(len(r))]
    as_maps = drift.chi_squared_counts(dict(zip(keys, r)), dict(zip(keys, c))) if t.shape[1] == len(r) else res
    assert as_maps.statistic == pytest.approx(res.statistic, rel=1e-12)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@SETTINGS
@given(hs.integers(1, 500).flatmap(lambda n: hs.tuples(hs.integers(0, n), hs.just(n))),
       hs.integers(1, 500).flatmap(lambda n: hs.tuples(hs.integers(0, n), hs.just(n))))
def test_two_proportion_z_matches_statsmodels(kn1, kn2):
    (k1, n1), (k2, n2) = kn1, kn2
    res = drift.two_proportion_z(k1, n1, k2, n2)
    assert res.effect_size == pytest.approx(k2 / n2 - k1 / n1)
    pooled = (k1 + k2) / (n1 + n2)
    if pooled in (0.0, 1.0):  # both proportions 0 or both 1: no change (statsmodels divides 0 by 0)
        assert (res.statistic, res.p_value) == (0.0, 1.0)
        return
    z, p = proportions_ztest([k2, k1], [n2, n1])
    assert res.statistic == pytest.approx(z, rel=1e-9, abs=1e-12)
    assert res.p_value == pytest.approx(p, rel=1e-9, abs=1e-12)


# ---------------------------------------------------------------- the drift table
def test_drift_table_corrects_together_and_judges():
    rng = np.random.default_rng(1)
    ref, cur, same = rng.normal(size=2000), rng.normal(0.3, 1, 2000), rng.normal(size=2000)
    tests = {"ks_shift": drift.ks(ref, cur), "ks_same": drift.ks(ref, same), "psi_shift": drift.psi(ref, cur),
             "z": drift.two_proportion_z(100, 1000, 130, 1000), "wasserstein": drift.wasserstein(ref, same)}
    assert tests["ks_same"].p_value > 0.5 and tests["ks_shift"].p_value < 1e-6  # this seed's samples
    t = drift.drift_table(tests, thresholds={"ks_shift": 0.05}, correction="bh")
    assert t.columns == ["name", "test", "statistic", "p_value", "p_adjusted", "effect_size", "effect_name",
                         "threshold", "drift", "verdict"]
    p = np.array([tests[k].p_value for k in ("ks_shift", "ks_same", "z")])
    expected = multipletests(p, method="fdr_bh")[1]
    got = t.filter(pl.col("p_adjusted").is_not_nan())["p_adjusted"].to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    row = {r["name"]: r for r in t.iter_rows(named=True)}
    assert row["ks_shift"]["drift"] is True and row["ks_shift"]["threshold"] == 0.05
    assert row["ks_same"]["drift"] is False and row["ks_same"]["verdict"].startswith("no drift")
    assert row["psi_shift"]["drift"] is (tests["psi_shift"].statistic >= 0.25)
    assert math.isnan(row["psi_shift"]["p_adjusted"])
    assert row["wasserstein"]["drift"] is False  # normalised distance below its 0.1 default
    undecided = drift.drift_table({"chi": drift.chi_squared_counts([5, 5], [5, 5]),
                                   "w": drift.wasserstein([1.0, 2.0], [1.0, 3.0], threshold=None)})
    assert undecided["drift"].to_list() == [False, None]
    assert undecided["verdict"][1] == "not judged: no p-value and no threshold"
    plain = drift.drift_table({"chi": drift.chi_squared_counts([5, 5], [9, 1])}, thresholds={"chi": None})
    assert plain["threshold"].is_nan().all() and plain["verdict"][0].startswith("no drift: p_adj")


def test_drift_tests_equal_the_single_functions():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=500).round(2), rng.normal(0.1, 1.1, 400).round(2)
    both = drift.drift_tests(a, b, bins=8, thresholds={"ks": 0.05})
    singles = {"psi": drift.psi(a, b, 8), "ks": drift.ks(a, b, threshold=0.05), "wasserstein": drift.wasserstein(a, b),
               "jensen_shannon": drift.jensen_shannon(a, b, 8), "hellinger": drift.hellinger(a, b, 8)}
    assert list(both) == ["psi", "ks", "wasserstein", "jensen_shannon", "hellinger"]
    assert both == singles
    hist = Histogram.from_values(a, Histogram.edges_from_reference(a, 8))
    assert drift.drift_tests(hist, b, ("psi",))["psi"] == singles["psi"]
    with pytest.raises(InputError, match="reference: this test needs the exact values"):
        drift.drift_tests(hist, b, ("psi", "ks"))
    with pytest.raises(InputError, match=r"tests: unknown test\(s\) \['kl'\]"):
        drift.drift_tests(a, b, ("kl",))


def test_value_distribution_equals_score_counts_of_values():
    v = np.array([0.5, -0.0, 0.0, 0.25, 0.5, -3.0, 0.5])
    ours, theirs = drift.value_distribution(v), ScoreCounts.of_values(v)
    np.testing.assert_array_equal(ours.scores, theirs.scores)
    np.testing.assert_array_equal(ours.counts, theirs.counts)
    assert ours.scores.tolist() == [-3.0, 0.0, 0.25, 0.5] and ours.counts.tolist() == [1, 2, 1, 3]


def test_identical_distributions_show_no_drift():
    a = np.linspace(0, 1, 501)
    assert drift.ks(a, a).statistic == 0.0 and drift.ks(a, a).p_value == 1.0
    assert drift.wasserstein(a, a).statistic == 0.0 and drift.psi(a, a).statistic == 0.0
    assert drift.wasserstein([2.0, 2.0], [2.0]).effect_size == 0.0  # constant reference, no distance
    assert drift.wasserstein([2.0, 2.0], [3.0]).effect_size == math.inf


@pytest.mark.parametrize("ref, cur", [([1.0, 1.0], [2.0, 3.0]), ([5.0], [4.0, 5.0]), ([0.0, 0.0, 0.0], [1e-9])])
def test_wasserstein_from_a_constant_reference_is_inf_and_drift(ref, cur):
    dist = st.wasserstein_distance(ref, cur)  # > 0 and the reference std is 0: the docstring's inf
    r = drift.wasserstein(ref, cur)
    assert r.statistic == pytest.approx(dist, rel=1e-12) and r.effect_size == math.inf
    assert r.verdict == "drift: normalised Wasserstein = inf >= threshold 0.1"
    assert drift.drift_table({"w": r})["drift"].to_list() == [True]  # the table judges it drift too
    plain = drift.wasserstein(ref, cur, threshold=None)
    assert plain.verdict == "normalised Wasserstein = inf (no threshold given)"


# ---------------------------------------------------------------- bad input
BAD = [
    (lambda: drift.ks([0.1, np.nan, 0.3], [0.2]), r"reference: NaN or infinite value in 1 row\(s\), e.g. row 1"),
    (lambda: drift.ks([0.1], []), "current: the input is empty"),
    (lambda: drift.ks(Histogram.from_values([0.1], [0, 1]), [0.2]), "reference: this test needs the exact"),
    (lambda: drift.ks(ScoreCounts(np.array([0.1, 0.2]), np.array([3, -1]), np.zeros(2, np.int64)), [0.1]),
     "reference: negative or NaN count"),
    (lambda: drift.ks(ScoreCounts.of_values([0.1, 0.2], [0.5, 1.5]), [0.1]), "reference: the KS test needs unw"),
    (lambda: drift.wasserstein(ScoreCounts(np.array([0.2, 0.1]), np.ones(2, np.int64), np.zeros(2, np.int64)),
                               [0.1]), "reference: scores must be finite, distinct and ascending"),
    (lambda: drift.psi({"a": 3, "b": -1}, {"a": 2}), r"reference: 1 negative, NaN or infinite count"),
    (lambda: drift.psi({"a": 3}, [0.1, 0.2]), "category counts must both be mappings"),
    (lambda: drift.psi([0.1, 0.2], [0.3], bins=0), "bins: must be a positive integer"),
    (lambda: drift.psi([0.1, 0.2], [0.3], bins=10.0), r"bins: expected an int .* got 10\.0; use 10\."),
    (lambda: drift.jensen_shannon([0.1, 0.2], [0.3], bins=2.5), r"bins: expected an int .* got 2\.5\.$"),
    (lambda: Histogram.from_values([0.5], 1.0), r"bins: expected an int .* got 1\.0; use 1\."),
    (lambda: drift.chi_squared_counts([1, 2, 3], [1, 2]), "one count per category in each"),
    (lambda: drift.chi_squared_counts([[1, 2]], [1, 2]), "reference_counts: expected a non-empty 1-D"),
    (lambda: drift.two_proportion_z(11, 10, 1, 10), "k1: 11 successes is more than n1 = 10"),
    (lambda: drift.two_proportion_z(0, 0, 1, 10), "n1: the sample is empty"),
    (lambda: drift.two_proportion_z(-1, 10, 1, 10), "k1: must be a finite count >= 0"),
    (lambda: Histogram.from_values([0.5], [0.0, 1.0, 0.5]), "edges: bin edges must be a strictly increasing"),
    (lambda: Histogram.from_values([1.5], [0.0, 1.0]), r"values: 1 value\(s\) outside the edges"),
    (lambda: Histogram.from_values([0.5], [0, 1]).merge(Histogram.from_values([0.5], [0, 2])),
     "different edges"),
    (lambda: drift.drift_table({"a": drift.ks([0.1], [0.2])}, thresholds={"b": 0.1}), "thresholds: no test named"),
    (lambda: drift.drift_table({"a": drift.ks([0.1], [0.2])}, correction="fdr"), "method: must be 'bh'"),
    (lambda: drift.drift_table({"a": 0.3}), r"tests\['a'\]: expected a TestResult"),
]


@pytest.mark.parametrize("call, message", BAD)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(InputError, match=message):
        call()
