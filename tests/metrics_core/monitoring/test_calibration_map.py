"""The reference's calibration map: each isotonic fit equals scipy's, the bootstrap's refits equal fresh fits,
and one fit per reference window's content."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression

from flow_data import LABELS, scored_rows
from metrics_core import monitoring as mon
from metrics_core.monitoring import calibration_map
from metrics_core.monitoring.bins import Bins
from metrics_core.monitoring.period import update


def test_each_bootstrap_replicate_is_the_map_refitted_on_redrawn_positives():
    """``bootstrap_conditionals`` draws each replicate from the generator when asked: replicate r is the
    per-predicted-class map refitted on the positives Binomial(rows, observed frequency) drawn r-th, after
    whatever the caller drew in between (the estimate draws its counts from the same generator)."""
    rng = np.random.default_rng(5)
    y = (rng.random(4000) < 0.3).astype(int)
    s = np.clip(0.3 + 0.4 * (y - 0.3) + 0.2 * rng.standard_normal(4000), 0, 1)
    ref = update("binary", np.array([0, 1]), Bins(), (s >= 0.5).astype(int), label_idx=y, scores=s[:, None])
    cal_map = calibration_map.fit_calibration_map(ref, n_boot=0)
    rng, got = np.random.default_rng(11), []
    for cond in cal_map.bootstrap_conditionals(rng, 3):
        got.append(cond)
        rng.standard_normal(7)  # the caller's own draw between two replicates
    assert len(got) == 3 and not np.array_equal(got[0], got[1])
    draws = np.random.default_rng(11)
    freq = np.divide(cal_map.pos, cal_map.n, out=np.zeros(cal_map.n.shape), where=cal_map.n > 0)
    for cond in got:
        pos = draws.binomial(np.rint(cal_map.n).astype(np.int64), freq).astype(np.float64)
        draws.standard_normal(7)
        np.testing.assert_array_equal(cond, cal_map.conditional(pos=pos))


def test_a_remembered_bootstrap_stack_gives_the_draws_and_the_generator_of_drawing_it_anew(monkeypatch):
    """The label-shift estimate draws the reference maps' replicates first, from a new generator: a
    remembered stack is those replicates and comes with the generator in the state they left it in;
    another map, seed or size is drawn anew; a byte limit drops the oldest stacks."""
    pred, y, s = _binary_rows(4000, 5)
    ref = update("binary", np.array([0, 1]), Bins(), pred, label_idx=y, scores=s)
    cal_map = calibration_map.fit_calibration_map(ref, n_boot=0)
    calibration_map._STACKS.clear()

    def anew(seed, n_boot):
        rng = np.random.default_rng(seed)
        return np.stack(list(cal_map.bootstrap_conditionals(rng, n_boot))), rng

    for _ in range(2):  # drawn, then remembered
        (stack, rng), (want, want_rng) = calibration_map.bootstrap_stack(cal_map, 3, 4), anew(3, 4)
        np.testing.assert_array_equal(stack, want)
        np.testing.assert_array_equal(rng.standard_normal(5), want_rng.standard_normal(5))
    assert len(calibration_map._STACKS) == 1 and not stack.flags.writeable
    np.testing.assert_array_equal(calibration_map.bootstrap_stack(cal_map, 4, 4)[0], anew(4, 4)[0])
    assert calibration_map.bootstrap_stack(cal_map, 3, 2)[0].shape[0] == 2 and len(calibration_map._STACKS) == 3
    monkeypatch.setattr(calibration_map, "STACK_CACHE_BYTES", stack.nbytes)
    calibration_map.bootstrap_stack(cal_map, 5, 4)
    assert list(calibration_map._STACKS) == [(id(cal_map), 5, 4)]


def _binary_rows(n: int, seed: int):
    """Predictions, labels and scores of ``n`` binary rows whose scores are informative."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    s = np.clip(0.3 + 0.4 * (y - 0.3) + 0.2 * rng.standard_normal(n), 0, 1)
    return (s >= 0.5).astype(int), y, s[:, None]


def test_the_reference_map_is_fitted_once_per_reference_content():
    ref, cur = scored_rows(6_000, 0, "2023-12"), scored_rows(3_000, 1, "2024-01")
    calibration_map._FITTED.clear()
    first = mon.assess_period(ref, cur, task="multiclass", labels=LABELS)
    (key, fitted), = calibration_map._FITTED.items()
    again = mon.assess_period(ref, cur, task="multiclass", labels=LABELS)  # the remembered map: same values
    assert list(calibration_map._FITTED) == [key] and calibration_map._FITTED[key] is fitted
    assert again.metrics == pytest.approx(first.metrics, nan_ok=True)
    fresh = calibration_map.fit_calibration_map(first.reference, n_boot=100, seed=0)
    np.testing.assert_array_equal(fresh.cond, fitted.cond)
    mon.assess_period(scored_rows(6_000, 7, "2023-12"), cur, task="multiclass", labels=LABELS)  # another reference
    assert len(calibration_map._FITTED) == 2


def test_the_content_key_matches_equal_content_and_tells_moved_counts_apart():
    """The cache's key reads integer counts by their non-zero entries: equal content gives the same key; a
    count moved to another bin, another shape, other values or another head give other keys."""
    rng = np.random.default_rng(3)
    counts = np.zeros((3, 2, 50), np.int64)
    counts.ravel()[rng.choice(300, 40, replace=False)] = rng.integers(1, 9, 40)
    floats = rng.random(50)
    key = calibration_map._content_key("h", [floats, counts])
    assert key == calibration_map._content_key("h", [floats.copy(), counts.copy()])
    moved = counts.copy().ravel()
    full, empty = np.flatnonzero(moved)[0], np.flatnonzero(moved == 0)[0]
    moved[empty], moved[full] = moved[full], 0  # the same values, one in another bin
    others = [moved.reshape(counts.shape), counts.reshape(2, 3, 50), counts + (counts > 0), counts[::-1].copy(),
              counts + 2**32 * (counts > 0)]  # values past 32 bits (read in a narrower type when they fit)
    keys = {calibration_map._content_key("h", [floats, c]) for c in others}
    assert len(keys | {key, calibration_map._content_key("g", [floats, counts])}) == 7


def test_the_remembered_maps_are_bounded_by_their_memory_not_their_number(monkeypatch):
    """Every segment of a watched reference has its map: 60 maps stay remembered by default (a
    count limit of 4 refitted them all for every period); under a small byte limit the oldest go."""
    calibration_map._FITTED.clear()
    refs = [mon.scan_period(scored_rows(400, seed, "2023-12").to_arrow(), "multiclass", LABELS, label="label",
                            prediction=None, scores=[f"score_{c}" for c in LABELS]) for seed in range(60)]
    maps = [calibration_map.cached_calibration_map(r, 5, 0) for r in refs]
    assert len(calibration_map._FITTED) == 60
    assert calibration_map.cached_calibration_map(refs[0], 5, 0) is maps[0]
    size = calibration_map._nbytes(maps[0])
    monkeypatch.setattr(calibration_map, "CACHE_BYTES", int(size * 3.5))
    calibration_map.cached_calibration_map(mon.scan_period(scored_rows(400, 99, "2023-12").to_arrow(), "multiclass", LABELS,
                                                           label="label", prediction=None,
                                                           scores=[f"score_{c}" for c in LABELS]), 5, 0)
    assert len(calibration_map._FITTED) == 3


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.floats(0, 1)), min_size=1, max_size=120), st.booleans())
def test_each_isotonic_fit_equals_scipys_isotonic_regression_exactly(bins, float_rows):
    """The bootstrap's fits call scipy's compiled PAVA step directly; the values must be those of the
    public ``isotonic_regression`` bit for bit (empty bins interpolated, all nan without rows)."""
    n = np.array([b[0] for b in bins], dtype=np.float64)
    if float_rows:  # weighted rows: fractional counts
        n = n * 0.37
    pos = np.floor(n * np.array([b[1] for b in bins]))
    keys = (np.arange(n.size) + 0.5) / n.size
    got = calibration_map._isotonic_fitter(keys, n)(pos)
    full = n > 0
    if not full.any():
        assert np.isnan(got).all() and got.shape == n.shape
        return
    fit = isotonic_regression(pos[full] / n[full], weights=n[full], increasing=True).x
    assert np.array_equal(got, np.interp(keys, keys[full], fit))
    assert np.array_equal(n[full], np.array([b[0] for b in bins], dtype=np.float64)[full] * (0.37 if float_rows else 1))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(2, 30), st.integers(0, 2**31))
def test_the_bootstraps_refits_equal_fresh_fits_replicate_after_replicate(k, s, b, seed):
    """The per-(k, j) fits prepared once for the rows and reused for every replicate's positives give,
    replicate after replicate, exactly the fits made afresh (a cell without rows: the fallback row)."""
    rng = np.random.default_rng(seed)
    n = rng.integers(0, 20, (k, s, b)).astype(np.float64) * (rng.random((k, s, b)) < 0.7)
    n[0, 0] = 0.0  # one cell without rows
    keys = (np.arange(b) + 0.5) / b
    fallback = rng.random((s, b))
    refit = calibration_map._conditional_fitter(keys, n, fallback)
    for _ in range(3):
        pos = rng.binomial(n.astype(np.int64), rng.random((k, s, b))).astype(np.float64)
        want = np.empty(n.shape)
        for i in range(k):
            for j in range(s):
                full = n[i, j] > 0
                want[i, j] = fallback[j] if not full.any() else np.interp(
                    keys, keys[full], isotonic_regression(pos[i, j][full] / n[i, j][full], weights=n[i, j][full]).x)
        assert np.array_equal(refit(pos), want)
