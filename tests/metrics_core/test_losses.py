"""The per-row losses of binary probability scores (metrics_core.losses) against scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn import metrics as skm

from metrics_core.losses import BLOCK, binned_loss_sums, exact_loss_sums, log_sum, loss_terms

PROBABILITIES = st.floats(0.0, 1.0, allow_subnormal=False)


@given(s=arrays(np.float64, st.integers(2, 60), elements=PROBABILITIES), seed=st.integers(0, 2**32 - 1),
       weighted=st.booleans())
@settings(max_examples=80, deadline=None)
def test_loss_terms_of_rows_are_scikit_learns_log_loss_and_brier(s, seed, weighted):
    rng = np.random.default_rng(seed)
    y = rng.random(s.size) < 0.5
    w = rng.random(s.size) * 3 + 0.1 if weighted else np.ones(s.size)
    terms = loss_terms(s, np.where(y, w, 0.0), np.where(y, 0.0, w))
    yi = y.astype(int)
    np.testing.assert_allclose(terms[:2].sum() / w.sum(), skm.log_loss(yi, s, sample_weight=w, labels=[0, 1]),
                               rtol=1e-12)
    np.testing.assert_allclose(terms[2:].sum() / w.sum(), skm.brier_score_loss(yi, s, sample_weight=w, pos_label=1),
                               rtol=1e-12, atol=1e-15)
    # binned: the same terms, summed per bin
    bins = 5
    idx = rng.integers(0, bins, s.size)
    sums = binned_loss_sums(y, s, idx + bins * y, bins, w if weighted else None)
    want = np.stack([np.bincount(idx, weights=row, minlength=bins) for row in terms])
    np.testing.assert_allclose(sums, want, rtol=1e-12, atol=1e-300)


def test_binned_loss_sums_are_nan_for_a_score_outside_the_unit_interval():
    sums = binned_loss_sums(np.array([True, False]), np.array([0.5, 1.5]), np.array([0, 1]), 2, None)
    assert sums.shape == (4, 2) and np.isnan(sums).all()


# Positive normal doubles, from the clipped probabilities' 2**-52 to far above 1, and the extremes.
POSITIVE_NORMALS = st.one_of(st.floats(2.0**-52, 1.0), st.floats(2.0**-1022, 1e300, allow_subnormal=False),
                             st.sampled_from([2.0**-1022, 2.0**-52, 1 - 2.0**-53, 1.0, 2.0**1023]))


@given(q=arrays(np.float64, st.integers(0, 2100), elements=POSITIVE_NORMALS))
@settings(max_examples=120, deadline=None)
def test_log_sum_is_the_sum_of_the_logarithms(q):
    logs = np.log(q)
    want = math.fsum(logs.tolist())
    got = log_sum(q.copy())
    # one product of up to 512 mantissas per logarithm: <= 511 roundings each, as many as the
    # logarithms' own roundings it replaces
    tolerance = 1e-13 * (q.size // 512 + 1) + 4 * np.finfo(float).eps * math.fsum(np.abs(logs).tolist())
    assert abs(got - want) <= tolerance, (got, want)


# Clipped probabilities and their complements: [2**-52, 1], the ends included.
CLIPPED = st.one_of(st.floats(2.0**-52, 1.0), st.sampled_from([2.0**-52, 2.0**-51, 0.5, 1 - 2.0**-53, 1.0]))


@given(q=arrays(np.float64, st.integers(0, 2100), elements=CLIPPED))
@settings(max_examples=60, deadline=None)
def test_log_sum_of_probabilities_is_the_sum_of_the_logarithms(q):
    """Products of 16 probabilities, each >= 2**-832 (no underflow even at 2**-52 each): within
    the bound of the mantissa path, and the input is left as it was; below 512 values, the
    mantissa path's own result."""
    logs = np.log(q)
    want = math.fsum(logs.tolist())
    before = q.copy()
    got = log_sum(q, probabilities=True)
    tolerance = 1e-13 * (q.size // 512 + 1) + 4 * np.finfo(float).eps * math.fsum(np.abs(logs).tolist())
    assert abs(got - want) <= tolerance, (got, want)
    if q.size >= 512:
        assert np.array_equal(q, before)
    else:
        assert got == log_sum(before)


def test_log_sum_of_the_smallest_probabilities_does_not_underflow():
    q = np.full(16 * 40 + 5, 2.0**-52)
    assert math.isclose(log_sum(q, probabilities=True), q.size * -52 * math.log(2.0), rel_tol=1e-15)


def test_log_sum_overwrites_its_input_with_the_mantissas():
    q = np.array([0.75, 6.0, 2.0**-60])
    log_sum(q)
    assert q.tolist() == [0.75, 0.75, 0.5]


def _counts(rng, n, tied_from):
    """Ascending distinct scores in [0, 1] (0 and 1 included) with one counted row each, and two
    rows (both classes) at each score from position ``tied_from`` on."""
    scores = np.unique(np.concatenate(([0.0, 1.0], rng.random(n - 2))))
    pos = (rng.random(scores.size) < 0.4).astype(np.int64)
    neg = 1 - pos
    pos[tied_from:] = neg[tied_from:] = 1
    return scores, pos, neg


@pytest.mark.parametrize("tied_from", [None, BLOCK + 7, 5], ids=["one row each", "second block tied", "all tied"])
def test_exact_loss_sums_of_one_row_and_counted_blocks_are_scikit_learns(tied_from):
    rng = np.random.default_rng(3)
    scores, pos, neg = _counts(rng, 2 * BLOCK + 300, tied_from)
    rows = np.concatenate((scores[pos > 0], scores[neg > 0]))
    y = np.concatenate((np.ones(int(pos.sum()), int), np.zeros(int(neg.sum()), int)))
    ll, brier = exact_loss_sums(scores, pos, neg)
    total = int(pos.sum() + neg.sum())
    assert math.isclose(ll / total, skm.log_loss(y, rows), rel_tol=1e-14)
    assert math.isclose(brier / total, skm.brier_score_loss(y, rows), rel_tol=1e-14)
    # the same counts as weights take the one-logarithm-per-score path in every block
    ll_w, brier_w = exact_loss_sums(scores, pos.astype(float), neg.astype(float))
    assert math.isclose(ll, ll_w, rel_tol=1e-14) and math.isclose(brier, brier_w, rel_tol=1e-14)


def test_exact_loss_sums_weights_summing_to_one_are_not_one_row():
    # a score holding 0.3 of a positive and 0.7 of a negative: both logarithms count
    ll, brier = exact_loss_sums(np.array([0.4]), np.array([0.3]), np.array([0.7]))
    assert math.isclose(ll, -(0.3 * math.log(0.4) + 0.7 * math.log(0.6)), rel_tol=1e-15)
    assert math.isclose(brier, 0.3 * 0.36 + 0.7 * 0.16, rel_tol=1e-15)


def test_exact_loss_sums_small_unsigned_counts_are_not_wrapped_into_one_row():
    # 255 + 2 is 1 in uint8: the counts are added as int64, so the score holds 257 rows
    ll, brier = exact_loss_sums(np.array([0.1]), np.array([255], np.uint8), np.array([2], np.uint8))
    assert math.isclose(ll, -(255 * math.log(0.1) + 2 * math.log(0.9)), rel_tol=1e-14)
    assert math.isclose(brier, 255 * 0.81 + 2 * 0.01, rel_tol=1e-14)
