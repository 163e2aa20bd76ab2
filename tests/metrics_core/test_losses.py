"""The per-row losses of binary probability scores (metrics_core.losses) against scikit-learn."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn import metrics as skm

from metrics_core.losses import binned_loss_sums, loss_terms

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
