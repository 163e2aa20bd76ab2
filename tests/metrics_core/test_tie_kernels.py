"""The sort-free counts of tie-heavy scores (metrics_core._tie_kernels) against the sort they skip.

Oracle: the packed-key sort (`_score_kernels._sorted_counts`, the only path before) and
np.unique; counts must be identical, in value and dtype, for ties, zeros of both signs,
subnormal and extreme scores, scores the sample misses and table cells holding several scores.
The weighted runs' sums that skip reduceat for single-row runs are checked against it too.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metrics_core as mc
from metrics_core import _score_kernels as kernels
from metrics_core import _tie_kernels as ties

_POOL = [0.0, -0.0, 5e-324, 1e-300, 1e-5, 0.1, 0.25, 0.5, np.nextafter(0.5, 1), 0.75, 1.0, 3.0, 1e30, 1e300]


def _unique_counts(s, y):
    scores, inv = np.unique(np.asarray(s, dtype=np.float64) + 0.0, return_inverse=True)
    pos = np.bincount(inv, weights=y, minlength=scores.size).astype(np.int64)
    return scores, pos, np.bincount(inv, minlength=scores.size) - pos


def _equal(a, b):
    return all(x.dtype == z.dtype and np.array_equal(x, z) for x, z in zip(a, b))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pool=st.lists(st.sampled_from(_POOL), min_size=1, max_size=len(_POOL)),
       draws=st.lists(st.integers(0, 100), min_size=1, max_size=3000),
       labels=st.integers(0, 2**32 - 1), float32=st.booleans())
def test_tie_counts_plus_the_sorted_misses_equal_the_sort(monkeypatch, pool, draws, labels, float32):
    dtype = np.float32 if float32 else np.float64
    pool = [v for v in pool if not float32 or abs(v) < 1e38] or [0.5]
    s = np.array([pool[i % len(pool)] for i in draws], dtype=dtype)
    y = np.random.default_rng(labels).random(s.size) < 0.4
    tied = ties.tied_counts(s, y, threads=1)
    if tied is not None:
        d, pos, neg, missed = tied
        assert np.all(np.diff(d) > 0) and np.all(pos + neg > 0) and np.unique(missed).size == missed.size
        counted = np.ones(s.size, bool)
        counted[missed] = False
        assert _equal((d, pos, neg), _unique_counts(s[counted], y[counted]))
    monkeypatch.setattr(kernels, "MIN_ROWS", 1)  # the same value in every example
    assert _equal(kernels.packed_counts(s, y), kernels._sorted_counts(s, y, None, 1))
    assert _equal(kernels.packed_counts(s, y), _unique_counts(s, y))


@pytest.mark.parametrize("kind", ["4 decimals", "3 decimals float32", "zeros and -0.0", "few values, far apart",
                                  "missed by the sample"])
def test_large_tie_heavy_inputs_take_the_lookup_and_equal_the_sort(kind):
    rng = np.random.default_rng(7)
    n = 400_000
    s = rng.beta(2, 5, n)
    if kind == "4 decimals":
        s = np.round(s, 4)
    elif kind == "3 decimals float32":
        s = np.round(s, 3).astype(np.float32)
    elif kind == "zeros and -0.0":
        s = np.round(s, 2) * (rng.random(n) < 0.5)
        s[rng.random(n) < 0.1] = -0.0
    elif kind == "few values, far apart":  # a 2**18-cell table over 1e-300..1e300: cells hold several
        s = rng.choice(np.array([1e-300, 1e-300 * (1 + 2**-52), 0.5, np.nextafter(0.5, 1), 1e300]), n)
    else:  # the sample sees about 1 in 6 rows: rare scores are counted by the sort
        s = np.round(s, 2)
        s[rng.choice(n, 5000, replace=False)] = rng.random(5000)
    y = rng.random(n) < 0.3
    tied = ties.tied_counts(s, y, threads=2)
    if kind == "few values, far apart":
        assert tied is None  # most rows would miss: the sort counts them all
    else:
        assert tied is not None and tied[3].size < n // 10
        assert _equal(ties.tied_counts(s, y, threads=1), tied)  # counts do not depend on the threads
    assert _equal(kernels.packed_counts(s, y), kernels._sorted_counts(s, y, None, 1))
    assert _equal(kernels.packed_counts(s, y), _unique_counts(s, y))


def test_distinct_or_weighted_scores_keep_the_sort():
    rng = np.random.default_rng(3)
    s = rng.random(400_000)
    assert ties.tied_counts(s, s > 0.5) is None  # the probe of 4,096 rows sees distinct scores
    assert ties.tied_counts(np.round(s, 5), s > 0.5) is None  # 100,000 values: not tie-heavy


def test_report_of_tie_heavy_scores_equals_the_sorted_path(monkeypatch):
    rng = np.random.default_rng(11)
    y = rng.random(300_000) < 0.3
    s = np.round(np.clip(rng.normal(0.3 + 0.3 * y, 0.2), 0, 1), 4)
    fast = mc.binary_report(y, s).metrics
    monkeypatch.setattr(kernels, "MIN_ROWS", 1 << 62)
    slow = mc.binary_report(y, s).metrics
    assert fast.keys() == slow.keys()
    for key in fast:
        assert fast[key] == slow[key] or (np.isnan(fast[key]) and np.isnan(slow[key])), key


@settings(max_examples=150, deadline=None)
@given(lengths=st.lists(st.integers(1, 20), min_size=1, max_size=60), seed=st.integers(0, 2**32 - 1))
def test_run_sums_equal_reduceat_bit_for_bit(lengths, seed):
    """The weighted runs' sums: single-row runs take their weight, longer runs reduceat's own sum."""
    w = np.random.default_rng(seed).gamma(0.5, 3.0, sum(lengths))
    change = np.zeros(w.size, bool)
    change[np.cumsum([0] + lengths[:-1])] = True
    runs, sums = kernels._run_sums(w, change)
    assert np.array_equal(runs, np.flatnonzero(change))
    assert np.array_equal(sums, np.add.reduceat(w, runs))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weighted_counts_equal_the_two_reduceats_they_replace(dtype):
    """Weighted packed counts (labels folded by position, not by two reduceats) against the earlier
    formula, bit for bit and sign of zero included, with ties, zero and -0.0 weights."""
    rng = np.random.default_rng(9)
    n = 60_000
    y = rng.random(n) < 0.4
    s = np.round(rng.random(n), 3).astype(dtype)
    s[: n // 2] = rng.random(n // 2)  # half distinct, half tied
    w = rng.gamma(2.0, 0.5, n)
    w[rng.random(n) < 0.2] = 0.0
    w[rng.random(n) < 0.05] = -0.0
    utype = np.uint32 if dtype == np.float32 else np.uint64
    key, _ = kernels._packed_keys(s, y, utype, 1)
    key, ws = kernels._sort_keys(key, w, None)
    runs = np.flatnonzero(kernels._changes(key, ignore_low_bit=False))
    wsum = np.add.reduceat(ws, runs)
    first = key[runs]
    positive = (first & utype(1)).astype(bool)
    starts = np.flatnonzero(kernels._changes(first, ignore_low_bit=True))
    pos = np.add.reduceat(np.where(positive, wsum, 0.0), starts)
    neg = np.add.reduceat(np.where(positive, 0.0, wsum), starts)
    keep = pos + neg > 0
    got = kernels.packed_counts(s, y, w)
    for a, b in zip(got, (kernels._as_scores(first[starts], utype)[keep], pos[keep], neg[keep])):
        assert a.dtype == b.dtype and np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))
