"""The calibration-change test: quiet on a stable period, said when the model beats its scores, undefined on a
handful of rows, and its vectorised sums equal to one target and one replicate at a time."""

from __future__ import annotations

import numpy as np
import pytest

from flow_data import LABELS, binary_stats, multiclass_stats, period_arrays
from metrics_core.monitoring import TestKey
from metrics_core.monitoring.calibration_change import _binned_rows, calibration_change, calibration_result
from metrics_core.monitoring.calibration_map import fit_calibration_map
from metrics_core.monitoring.bins import Bins
from metrics_core.monitoring.period import update
from metrics_core.monitoring.policy import POLICY


def test_a_model_better_than_its_scores_promise_says_so():
    """The user's month: balanced accuracy rose 0.931 -> 0.962 and the reason read as a fault."""
    ref = multiclass_stats(*period_arrays(20_000, 3))
    y, s = period_arrays(5000, 1003)
    rng = np.random.default_rng(3)
    y = np.where(rng.random(y.size) < 0.3, s.argmax(axis=1), y)  # right more often than the scores promise
    tests = calibration_change(fit_calibration_map(ref, n_boot=50), multiclass_stats(y, s))
    top = tests["top_label"]
    assert top.details["rate_current"] > top.details["rate_expected"] + 0.05
    from metrics_core.monitoring import decide_alert

    decision = decide_alert({TestKey("calibration", c): t for c, t in tests.items()})
    text = next(r.text for r in decision.reasons if r.key.cls == "top_label")
    assert text.startswith("calibration of 'top_label' changed, better than expected: ")
    assert f"predictions right {top.details['rate_expected']:.3f} expected, {top.details['rate_current']:.3f} " \
           "observed" in text


def test_calibration_change_stable_period_is_quiet():
    ref = multiclass_stats(*period_arrays(20000, 7))
    cur = multiclass_stats(*period_arrays(5000, 1007))
    tests = calibration_change(fit_calibration_map(ref, n_boot=50), cur)
    assert set(tests) == {*LABELS, "top_label"}
    assert max(t.effect_size for t in tests.values()) < 0.02 < POLICY.calibration_change
    assert min(t.p_value for t in tests.values()) > 0.05 / len(tests)  # Bonferroni over the classes


@pytest.mark.parametrize("n", [1, 3, 12])
def test_calibration_change_of_a_handful_of_rows_is_undefined_not_an_alert(n):
    """One negative row scored 0.8 against a reference that makes such scores 84-96 % positive gave
    X^2 = 23, p = 2e-6 and "retrain" as a user ran it (an exact binomial test: p = 0.04 for one row);
    a bin now counts only when it expects MIN_EXPECTED positives and negatives."""
    from metrics_core.monitoring import MIN_EXPECTED, decide_alert

    ref = binary_stats(20_000, 1)
    y = np.zeros(n, dtype=int)
    s = np.full(n, 0.8)
    cur = update("binary", np.array([0, 1]), Bins(), (s >= 0.5).astype(int), label_idx=y, scores=s[:, None])
    test = calibration_change(fit_calibration_map(ref, n_boot=50), cur)["1"]
    expected = test.details["expected"]
    assert expected > 0.8 * n and n - expected < MIN_EXPECTED  # too few expected negatives in the one bin
    assert np.isnan(test.p_value) and test.details["df"] == 0.0 and test.verdict.startswith("undefined")
    assert np.isnan(test.effect_size) and test.details["ece"] == pytest.approx(expected / n)  # measured, not judged
    assert not decide_alert({TestKey("calibration", "1"): test}).alert


def assert_same_test(got, expected, rel: float) -> None:
    """Two TestResults alike: the same test and verdict, their numbers (and details') within ``rel``."""
    assert (got.test, got.verdict, got.effect_name, sorted(got.details)) == (
        expected.test, expected.verdict, expected.effect_name, sorted(expected.details))
    pairs = [(got.statistic, expected.statistic), (got.p_value, expected.p_value),
             (got.effect_size, expected.effect_size)]
    for a, b in [*pairs, *((got.details[k], expected.details[k]) for k in got.details)]:
        assert a == pytest.approx(b, rel=rel, abs=0, nan_ok=True)


@pytest.mark.parametrize("sorted_bins", [False, True])
def test_calibration_change_bins_every_replicate_as_a_loop_over_replicates_would(sorted_bins):
    """The replicates' expected positives per bin, binned at once: unsorted bins by one bincount (the
    same sums, in the same order, as one bincount per replicate), sorted bins as runs (within 1e-14)."""

    gen = np.random.default_rng(0)
    bins, weights = gen.integers(0, 10, 1000), gen.random((50, 1000)) * gen.integers(0, 30, 1000)
    if sorted_bins:  # fine bins' atoms: runs of each bin, some bins without atoms (summed as runs)
        bins = np.sort(np.where(bins == 4, 5, bins))
    loop = np.stack([np.bincount(bins, weights=w, minlength=10) for w in weights])
    got = _binned_rows(bins, weights, 10)
    if sorted_bins:
        assert (got[:, 4] == 0).all() and np.allclose(got, loop, rtol=1e-14, atol=0)
    else:
        assert np.array_equal(got, loop)


@pytest.mark.parametrize("n_rows", [300, 6000])
def test_calibration_change_sums_each_target_as_one_target_at_a_time(n_rows):
    """Every target's per-bin sums come from one binning of all targets: each equals the plain sums of
    its own atoms (to a few ulps: the replicates' are summed pairwise) whether most atoms have rows
    (all summed) or few (those summed), and a target with a nan replicate keeps it in its sums (its
    bin then never counts)."""
    import dataclasses

    from metrics_core.monitoring.calibration_map import calibration_targets

    cal_map = fit_calibration_map(multiclass_stats(*period_arrays(3000, 7)), n_boot=20)
    cur = multiclass_stats(*period_arrays(n_rows, 1007))
    filled = np.stack([c.n for c in cur.calibration.targets]) > 0
    assert (filled.mean() > 0.5) == (n_rows > 300)  # most atoms with rows: all of them summed
    reps = cal_map.replicates.copy()
    reps[3, 2, ~filled[2]] = np.nan  # at the atoms without rows
    with_nan = dataclasses.replace(cal_map, replicates=reps)
    assert with_nan.finite_replicates.tolist() == [j != 2 for j in range(len(LABELS) + 1)]
    for m in (cal_map, with_nan):
        found = calibration_change(m, cur)
        for j, (name, cc) in enumerate(calibration_targets(cur.calibration)):
            coarse = np.minimum((cc.keys * 10).astype(np.int64), 9)
            g = m.probs[j]
            obs, exp, var, rows = (np.bincount(coarse, weights=w, minlength=10)
                                   for w in (cc.y, cc.n * g, cc.n * g * (1 - g), cc.n))
            drawn = np.stack([np.bincount(coarse, weights=cc.n * r, minlength=10) for r in m.replicates[:, j]])
            expected = calibration_result(obs, exp, var + drawn.var(axis=0), rows, cc.total)
            # the replicates' sums are pairwise (reduceat), the oracle's running sums: a few ulps apart
            assert_same_test(found[name], expected, rel=1e-11)
    if n_rows == 300:  # an empty atom in every score bin
        assert calibration_change(cal_map, cur)[LABELS[2]].details["df"] > 0 == calibration_change(with_nan, cur)[
            LABELS[2]].details["df"]
