"""Performance while labels lag: expected confusion from calibrated scores, its interval's coverage over seeds,
its error under prevalence, score and concept shifts, and the calibration-change test."""

from __future__ import annotations

import numpy as np
import pytest

from flow_data import LABELS, scored_rows
from metrics_core import drift
from metrics_core.compute import binary_confusion_metrics, multiclass_confusion_metrics
from metrics_core.monitoring import TestKey
from metrics_core.monitoring.calibration_map import fit_calibration_map
from metrics_core.monitoring.estimate import (MIN_SUPPORT_SHARE, PREFIX, assess_estimate, calibration_change,
                                             estimate_period, expected_confusion, support)
from metrics_core.monitoring.period import Bins, update
from metrics_core.monitoring.policy import POLICY

NAMES = np.array(LABELS)


def _arrays(n, seed, **kw):
    df = scored_rows(n, seed, "p", **kw)
    idx = {c: i for i, c in enumerate(LABELS)}
    y = np.array([idx[c] for c in df["label"]])
    s = df.select([f"score_{c}" for c in LABELS]).to_numpy()
    return y, s


def _multiclass(y, s, labelled=True):
    return update("multiclass", NAMES, Bins(), s.argmax(axis=1), label_idx=y if labelled else None, scores=s)


def _binary(n, seed, prev=0.12, signal=1.8):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prev).astype(int)
    s = 1 / (1 + np.exp(-(1.3 * (rng.standard_normal(n) + signal * y) - 2.2)))
    return update("binary", np.array([0, 1]), Bins(), (s >= 0.5).astype(int), label_idx=y, scores=s[:, None])


def _realised(stats):
    m = stats.performance.confusion.matrix
    return binary_confusion_metrics(m) if stats.task == "binary" else multiclass_confusion_metrics(m)[0]


def test_expected_confusion_binary_is_the_sum_of_probabilities():
    bins = Bins(score_bins=4)
    h = np.zeros((2, 1, 6))
    h[0, 0, 1:3] = [10, 20]  # predicted negative: 10 rows in bin 0, 20 in bin 1
    h[1, 0, 3:5] = [5, 15]
    cond = np.array([[[0.1, 0.2, 0.5, 0.6]], [[0.1, 0.2, 0.7, 0.9]]])
    e, v = expected_confusion("binary", cond, h)
    assert e[1, 0] == pytest.approx(10 * 0.1 + 20 * 0.2) and e[1, 1] == pytest.approx(5 * 0.7 + 15 * 0.9)
    assert e[:, 0].sum() == 30 and e[:, 1].sum() == 20
    assert v[1, 1] == pytest.approx(5 * 0.21 + 15 * 0.09)
    assert bins.score_bins == cond.shape[-1]


def test_estimate_of_a_calibrated_binary_model_and_no_estimate_without_reference_labels():
    rng = np.random.default_rng(0)
    s = rng.random(40000)
    y = (rng.random(40000) < s).astype(int)  # perfectly calibrated
    ref = update("binary", np.array([0, 1]), Bins(), (s >= 0.5).astype(int), label_idx=y, scores=s[:, None])
    cur = update("binary", np.array([0, 1]), Bins(), (s[:5000] >= 0.5).astype(int), scores=s[:5000, None])
    e = estimate_period(ref, cur, n_boot=50)
    expected_tp = s[:5000][s[:5000] >= 0.5].sum()
    assert e.expected[1, 1] == pytest.approx(expected_tp, rel=0.01)
    assert set(e.metrics) >= {f"{PREFIX}accuracy", f"{PREFIX}accuracy_ci_low", f"{PREFIX}accuracy_ci_high"}
    lo, hi = e.interval("accuracy")
    assert lo < e.metrics[f"{PREFIX}accuracy"] < hi
    assert estimate_period(cur, cur) is None  # a reference without labels has no calibration map


@pytest.mark.slow
def test_realised_metric_inside_estimated_95_interval_over_seeds():
    """Stable periods: the reference (20,000 rows) and the period (5,000 rows) drawn anew for each seed."""
    cover = {}
    for seed in range(40):
        for task in ("multiclass", "binary"):
            ref = _multiclass(*_arrays(20000, seed)) if task == "multiclass" else _binary(20000, seed)
            cur = _multiclass(*_arrays(5000, 1000 + seed)) if task == "multiclass" else _binary(5000, 1000 + seed)
            e = estimate_period(ref, cur, n_boot=100, seed=seed)
            real = _realised(cur)
            for k in ("accuracy", "balanced_accuracy", "mcc"):
                lo, hi = e.interval(k)
                cover.setdefault((task, k), []).append(lo <= real[k] <= hi)
    rates = {k: float(np.mean(v)) for k, v in cover.items()}
    print("coverage", rates)
    assert min(rates.values()) >= 0.9, rates


def _shifted_errors(kind, seeds=range(10)):
    out = []
    for seed in seeds:
        ref = _multiclass(*_arrays(20000, seed))
        if kind == "prevalence":
            y, s = _arrays(5000, 1000 + seed, prevalence=(3, 0.10))  # class 3: 10 points more
        else:
            y, s = _arrays(8000, 1000 + seed)
            rng = np.random.default_rng(seed)
            if kind == "covariate":  # keep hard rows (low top score) more: P(label | score) unchanged
                keep = rng.random(y.size) < 1.0 - 0.7 * s.max(axis=1)
                y, s = y[keep], s[keep]
            elif kind == "concept":  # 15 % of the labels move to another class; scores unchanged
                flip = rng.random(y.size) < 0.15
                y = np.where(flip, (y + rng.integers(1, len(LABELS), y.size)) % len(LABELS), y)
        cur = _multiclass(y, s)
        e = estimate_period(ref, cur, n_boot=50, seed=seed)
        real = _realised(cur)
        lo, hi = e.interval("balanced_accuracy")
        ba = real["balanced_accuracy"]
        out.append((ba - e.metrics[f"{PREFIX}balanced_accuracy"], lo <= ba <= hi,
                    ref, cur))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("kind, max_error", [("covariate", 0.02), ("prevalence", 0.05), ("concept", 1.0)])
def test_error_under_shifts(kind, max_error):
    errs = _shifted_errors(kind, range(6))
    err = np.array([e[0] for e in errs])
    print(kind, "mean error", err.mean(), "coverage", np.mean([e[1] for e in errs]))
    assert np.abs(err.mean()) <= max_error
    if kind == "concept":  # the estimate cannot see it: far off, and the calibration test says so
        assert err.mean() < -0.1
        ref, cur = errs[0][2], errs[0][3]
        tests = calibration_change(fit_calibration_map(ref, n_boot=50), cur)
        assert all(t.p_value < 1e-6 and t.effect_size > 0.02 for t in tests.values())
        assert tests["top_label"].effect_size > 2 * POLICY.calibration_change


def test_a_model_better_than_its_scores_promise_says_so():
    """The user's month: balanced accuracy rose 0.931 -> 0.962 and the reason read as a fault."""
    ref = _multiclass(*_arrays(20_000, 3))
    y, s = _arrays(5000, 1003)
    rng = np.random.default_rng(3)
    y = np.where(rng.random(y.size) < 0.3, s.argmax(axis=1), y)  # right more often than the scores promise
    tests = calibration_change(fit_calibration_map(ref, n_boot=50), _multiclass(y, s))
    top = tests["top_label"]
    assert top.details["rate_current"] > top.details["rate_expected"] + 0.05
    from metrics_core.monitoring import decide_alert

    decision = decide_alert({TestKey("calibration", c): t for c, t in tests.items()})
    text = next(r.text for r in decision.reasons if r.key.cls == "top_label")
    assert text.startswith("calibration of 'top_label' changed, better than expected: ")
    assert f"predictions right {top.details['rate_expected']:.3f} expected, {top.details['rate_current']:.3f} " \
           "observed" in text


def _corrupted(y, s, seed, weight=0.3):
    """Input corruption as the scores see it: each row's scores mixed with noise, the labels kept."""
    rng = np.random.default_rng(seed)
    return _multiclass(y, (1 - weight) * s + weight * rng.dirichlet(np.ones(s.shape[1]), size=y.size),
                       labelled=False)


def test_an_estimate_from_moved_scores_says_it_is_unreliable():
    """Under noise on the features the estimate said 0.902 [0.886, 0.925] where the labels showed 0.510,
    with no caveat: a period whose scores left the reference's carries estimated/reliable 0."""
    ref = _multiclass(*_arrays(20000, 4))
    y, s = _arrays(5000, 1004)
    stable = assess_estimate(ref, _multiclass(y, s, labelled=False), "balanced_accuracy", n_boot=20).metrics
    corrupted = assess_estimate(ref, _corrupted(y, s, 4), "balanced_accuracy", n_boot=20).metrics
    assert stable[f"{PREFIX}reliable"] == 1.0 and stable[f"{PREFIX}score_shift"] < POLICY.score_shift
    assert stable[f"{PREFIX}support_share"] >= MIN_SUPPORT_SHARE
    assert corrupted[f"{PREFIX}reliable"] == 0.0 and corrupted[f"{PREFIX}score_shift"] > 2 * POLICY.score_shift
    assert np.isfinite(corrupted[f"{PREFIX}balanced_accuracy"])  # still given, with its caveat
    assert assess_estimate(ref, _corrupted(y, s, 4), "balanced_accuracy", n_boot=20,
                           score_shift=0.5).metrics[f"{PREFIX}reliable"] == 1.0


def test_a_prevalence_shift_leaves_the_estimate_reliable():
    """The demo's planted shift (one class's share up 7 points) moved that class's score column by
    0.056 and flagged estimates that were right; the rule reads each predicted class's own score."""
    ref = _multiclass(*_arrays(20000, 6))
    y, s = _arrays(5000, 1006, prevalence=(3, 0.10))
    cur = _multiclass(y, s, labelled=False)
    column = max(drift.wasserstein(ref.score_distribution(j), cur.score_distribution(j), threshold=None).statistic
                 for j in range(len(LABELS)))
    out = support(ref, cur)
    assert column > POLICY.score_shift > out[f"{PREFIX}score_shift"] and out[f"{PREFIX}reliable"] == 1.0


def test_scores_where_the_reference_had_few_rows_make_the_estimate_unreliable():
    """The support rule alone: the scores of the period sit where the reference scored almost no rows."""
    rng = np.random.default_rng(5)
    s = rng.beta(8, 1, 20000)  # the reference: nearly all scores above 0.5
    y = (rng.random(s.size) < s).astype(int)
    ref = update("binary", np.array([0, 1]), Bins(), (s >= 0.5).astype(int), label_idx=y, scores=s[:, None])
    low = np.concatenate([s[:4000], rng.uniform(0.1, 0.3, 1000)])  # a fifth of the rows in sparse bins
    cur = update("binary", np.array([0, 1]), Bins(), (low >= 0.5).astype(int), scores=low[:, None])
    out = support(ref, cur, score_shift=1.0)  # the shift rule out of the way
    assert out[f"{PREFIX}support_share"] < MIN_SUPPORT_SHARE and out[f"{PREFIX}reliable"] == 0.0
    assert support(ref, update("binary", np.array([0, 1]), Bins(), (s[:5000] >= 0.5).astype(int),
                               scores=s[:5000, None]))[f"{PREFIX}reliable"] == 1.0


def test_calibration_change_stable_period_is_quiet():
    ref = _multiclass(*_arrays(20000, 7))
    cur = _multiclass(*_arrays(5000, 1007))
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
    from metrics_core.monitoring.estimate import calibration_change

    ref = _binary(20_000, 1)
    y = np.zeros(n, dtype=int)
    s = np.full(n, 0.8)
    cur = update("binary", np.array([0, 1]), Bins(), (s >= 0.5).astype(int), label_idx=y, scores=s[:, None])
    test = calibration_change(fit_calibration_map(ref, n_boot=50), cur)["1"]
    expected = test.details["expected"]
    assert expected > 0.8 * n and n - expected < MIN_EXPECTED  # too few expected negatives in the one bin
    assert np.isnan(test.p_value) and test.details["df"] == 0.0 and test.verdict.startswith("undefined")
    assert np.isnan(test.effect_size) and test.details["ece"] == pytest.approx(expected / n)  # measured, not judged
    assert not decide_alert({TestKey("calibration", "1"): test}).alert


def test_period_statistics_of_two_batches_merge_to_those_of_one_pass():
    y, s = _arrays(3000, 3)
    whole = _multiclass(y, s)
    parts = _multiclass(y[:1000], s[:1000]).merge(_multiclass(y[1000:], s[1000:]))
    np.testing.assert_array_equal(parts.score_by_pred, whole.score_by_pred)
    np.testing.assert_array_equal(parts.positives_by_pred, whole.positives_by_pred)
    for a, b in zip(parts.calibration.targets + (parts.calibration.top_label,),
                    whole.calibration.targets + (whole.calibration.top_label,)):
        np.testing.assert_allclose(a.n, b.n) and np.testing.assert_allclose(a.sy, b.sy)
    assert whole.positives_by_pred[:, :, :].sum() == y.size  # each row is positive for its own class's column


def test_known_counts_of_a_fully_labelled_part_give_the_measured_metric():
    from metrics_core.monitoring.estimate import estimate_performance

    ref = _multiclass(*_arrays(5000, 4))
    cur = _multiclass(*_arrays(2000, 5))
    cal_map = fit_calibration_map(ref, n_boot=20)
    nothing = np.zeros_like(cur.score_by_pred)  # every row of the period is labelled already
    e = estimate_performance("multiclass", cal_map, nothing, known=cur.performance.confusion.matrix, n_boot=20)
    real = _realised(cur)
    assert e.metrics[f"{PREFIX}accuracy"] == pytest.approx(real["accuracy"])
    assert e.interval("accuracy") == pytest.approx((real["accuracy"], real["accuracy"]))


@pytest.mark.slow
def test_an_unlabelled_period_alerts_on_an_estimated_drop_and_a_stable_one_does_not():
    from metrics_core.monitoring import assess_stats

    ref = _multiclass(*_arrays(20000, 9))
    y, s = _arrays(5000, 1009)
    stable = assess_stats(ref, _multiclass(y, s, labelled=False))
    assert not any("estimated" in t for t in stable.decision.texts)
    assert f"{PREFIX}balanced_accuracy_ci_low" in stable.metrics and stable.headline is None
    # the floor the estimate was tested against is logged (the plot draws it), nothing measured is
    labelled = assess_stats(ref, _multiclass(y, s))
    assert stable.metrics["balanced_accuracy_floor"] == labelled.metrics["balanced_accuracy_floor"] \
        == pytest.approx(labelled.metrics["balanced_accuracy_reference"] - POLICY.metric_drop, abs=1e-15)
    assert not {"balanced_accuracy", "balanced_accuracy_ci_low", "balanced_accuracy_drop"} & set(stable.metrics)
    y, s = _arrays(30000, 2009)
    keep = np.random.default_rng(0).random(y.size) < (1.0 - s.max(axis=1)) ** 1.5  # mostly hard rows
    hard = assess_stats(ref, _multiclass(y[keep], s[keep], labelled=False))
    texts = [r.text for r in hard.decision.reasons if r.kind == "headline"]
    assert texts and texts[0].startswith("estimated/balanced_accuracy fell"), hard.decision.texts
    real = _realised(_multiclass(y[keep], s[keep]))["balanced_accuracy"]
    lo, hi = (hard.metrics[f"{PREFIX}balanced_accuracy_ci_{b}"] for b in ("low", "high"))
    assert lo <= real <= hi  # covariate shift: the estimate follows the real drop


def test_the_reliability_rule_takes_the_policys_score_shift():
    """assess_stats passed no score_shift to the estimate, so a spec's own threshold was ignored there."""
    from metrics_core.monitoring import assess_stats

    ref = _multiclass(*_arrays(20000, 4))
    y, s = _arrays(5000, 1004)
    cur = _corrupted(y, s, 4)
    assert assess_stats(ref, cur).metrics[f"{PREFIX}reliable"] == 0.0
    assert assess_stats(ref, cur, {"score_shift": 0.5}).metrics[f"{PREFIX}reliable"] == 1.0


def test_calibration_change_bins_every_replicate_as_a_loop_over_replicates_would():
    """The replicates' expected positives per bin come from one bincount: the same sums, in the same
    order, as one bincount per replicate."""
    from metrics_core.monitoring.estimate import _binned_rows

    gen = np.random.default_rng(0)
    bins, weights = gen.integers(0, 10, 1000), gen.random((50, 1000)) * gen.integers(0, 30, 1000)
    loop = np.stack([np.bincount(bins, weights=w, minlength=10) for w in weights])
    assert np.array_equal(_binned_rows(bins, weights, 10), loop)


@pytest.mark.parametrize("n_rows", [300, 6000])
def test_calibration_change_sums_each_target_as_one_target_at_a_time(n_rows):
    """Every target's per-bin sums come from one bincount: each equals the plain sums of its own atoms
    (bit for bit) whether most atoms have rows (all summed) or few (those summed), and a target with a
    nan replicate keeps it in its sums (its bin then never counts)."""
    import dataclasses

    from metrics_core.monitoring.calibration_map import calibration_targets
    from metrics_core.monitoring.estimate import calibration_result

    cal_map = fit_calibration_map(_multiclass(*_arrays(3000, 7)), n_boot=20)
    cur = _multiclass(*_arrays(n_rows, 1007))
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
            assert repr(found[name]) == repr(calibration_result(obs, exp, var + drawn.var(axis=0), rows, cc.total))
    if n_rows == 300:  # an empty atom in every score bin
        assert calibration_change(cal_map, cur)[LABELS[2]].details["df"] > 0 == calibration_change(with_nan, cur)[
            LABELS[2]].details["df"]
