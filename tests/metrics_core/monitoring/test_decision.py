"""metrics_core.monitoring.decision: decide_alert's thresholds and correction, its typed reasons, the headline test."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from flow_data import three_class_period
from monitoring_data import PRIOR, period_stats
from scipy import stats

from metrics_core import drift, monitoring as mon
from metrics_core.errors import InputError


def test_significant_but_small_wobble_does_not_alert():
    """A year of 200,000-row periods as reference, one period with class 0 at +0.3 points: the test
    rejects (p < 0.05) and still no alert, because 0.3 points is under the practical threshold."""
    n_ref, n_cur = 12 * 200_000, 200_000
    ref = np.round(PRIOR * n_ref).astype(int)
    share = PRIOR.copy()
    share[0] += 0.003
    share[1:] *= (1 - share[0]) / share[1:].sum()
    cur = np.round(share * n_cur).astype(int)
    key = mon.TestKey("prevalence_label", "c0")
    tests = {key: drift.two_proportion_z(ref[0], ref.sum(), cur[0], cur.sum())}
    assert tests[key].p_value < 0.05
    decision = mon.decide_alert(tests)
    assert decision.table["p_adjusted"][0] < 0.05 and not decision.table["drift"][0]
    assert not decision.alert


def test_effect_without_rejection_does_not_alert():
    """Small periods: a 3-point change of a small class passes the threshold but the test cannot reject."""
    ref = period_stats(300, 1)
    cur = period_stats(300, 2, prevalence=(6, 0.03))
    decision = mon.decide_alert(mon.run_tests(ref, cur))
    row = decision.table.filter(pl.col("name") == "prevalence_label:c6").row(0, named=True)
    assert abs(row["effect_size"]) >= 0.02 or row["p_adjusted"] > 0.05
    assert not row["drift"]


def test_policy_thresholds_and_correction_are_used(reference):
    current = period_stats(200_000, 9, prevalence=(3, 0.05))
    strict = mon.decide_alert(mon.run_tests(reference, current), {"prevalence_change": 0.2, "psi": 5.0,
                                                                 "score_shift": 0.5})
    assert not strict.alert
    table = mon.decide_alert(mon.run_tests(reference, current), {"correction": "bonferroni"}).table
    p, p_adj = table["p_value"].to_numpy(), table["p_adjusted"].to_numpy()
    np.testing.assert_allclose(p_adj, np.minimum(p * len(p), 1.0))


@pytest.mark.parametrize("low, floor, fails", [(0.78, 0.80, True), (0.81, 0.80, False), (float("nan"), 0.9, True)])
def test_headline_check_is_the_plain_bound(low, floor, fails):
    assert mon.headline_check("balanced_accuracy", 0.85, (low, 0.9), floor).fails is fails


def test_no_floor_no_check():
    assert mon.headline_check("accuracy", 0.9, (0.8, 0.95), None) is None
    no_ref = mon.Headline("balanced_accuracy", 0.80, (0.77, 0.83))
    assert mon.decide_alert({}, None, no_ref).headline is None


def _wald(p, n, z=stats.norm.isf(0.025)):
    half = z * np.sqrt(p * (1 - p) / n)
    return (p - half, p + half)


@pytest.mark.parametrize("value, n_cur, ref, n_ref", [(0.80, 1500, 0.85, 40_000), (0.84, 300, 0.85, 5_000),
                                                      (0.90, 2000, 0.85, 40_000)])
def test_headline_test_is_the_one_sided_z_test_of_the_drop(value, n_cur, ref, n_ref):
    """Oracle: scipy's normal distribution on the drop over the pooled standard error; power and n needed."""
    h = mon.Headline("accuracy", value, _wald(value, n_cur), ref, _wald(ref, n_ref), n_cur)
    test, threshold, floor = mon.headline_test(h)
    se = np.hypot(np.sqrt(value * (1 - value) / n_cur), np.sqrt(ref * (1 - ref) / n_ref))
    assert test.effect_size == pytest.approx(ref - value) and threshold == 0.05 and floor == pytest.approx(ref - 0.05)
    assert test.p_value == pytest.approx(stats.norm.sf((ref - value) / se), rel=1e-6, abs=0)
    power = stats.norm.cdf(0.05 / se - stats.norm.isf(0.05))
    assert test.details["power"] == pytest.approx(power)
    check = mon.decide_alert({}, None, h).headline
    assert check.p_adjusted == pytest.approx(test.p_value, rel=1e-6, abs=0)  # alone: nothing to correct
    assert check.fails is bool(test.p_value <= 0.05 and ref - value >= 0.05)
    if power >= mon.POWER:
        assert check.enough_labels and check.n_needed is None
        return
    # n needed: with that many rows the test has 80 % power, with 5 % fewer it has not
    need = check.n_needed
    bigger = mon.Headline("accuracy", value, _wald(value, need), ref, _wald(ref, n_ref), need)
    smaller = mon.Headline("accuracy", value, _wald(value, int(need * 0.95)), ref, _wald(ref, n_ref), int(need * 0.95))
    assert mon.headline_test(bigger)[0].details["power"] >= mon.POWER > mon.headline_test(smaller)[0].details["power"]


def test_labelled_rows_needed_is_the_ons_sample_size_for_a_proportion():
    """Against a fixed floor (no reference interval), accuracy with a normal interval: the rows needed
    are metrics_core.sampling.sample_size at margin z * se* (se* the standard error with 80 % power)."""
    from metrics_core.sampling import sample_size

    h = mon.Headline("accuracy", 0.9, _wald(0.9, 200), None, None, 200)
    check = mon.decide_alert({}, {"metric_floor": 0.88}, h).headline
    # no reference: the test is against the floor itself with threshold 0, so power is undefined
    assert check.threshold == 0 and np.isnan(check.power) and check.enough_labels
    h = mon.Headline("accuracy", 0.9, _wald(0.9, 200), 0.9, (0.9, 0.9), 200)  # a reference without uncertainty
    check = mon.decide_alert({}, {"metric_drop": 0.03}, h).headline
    se_star = 0.03 / (stats.norm.isf(0.05) + stats.norm.isf(0.2))
    assert check.n_needed == sample_size(stats.norm.isf(0.025) * se_star, 0.95, 0.9)[0]
    assert "not enough labels to judge accuracy" in mon.decide_alert({}, {"metric_drop": 0.03}, h).notes[0]


def test_decide_alert_owns_the_floor():
    """The threshold is metric_drop against the reference unless metric_floor is set; the test is
    one more row of the drift table, corrected with the rest."""
    headline = mon.Headline("balanced_accuracy", 0.78, (0.77, 0.79), 0.85, (0.845, 0.855), 20_000)
    a = mon.decide_alert({}, None, headline)
    assert a.alert and a.headline.floor == pytest.approx(0.80) and a.verdict == "retrain"
    assert a.reasons[0].key == mon.TestKey("headline", "balanced_accuracy")
    assert a.reasons[0].text.startswith("balanced_accuracy fell 0.070 below the reference 0.850 (now 0.780)")
    floor = mon.decide_alert({}, {"metric_floor": 0.8}, headline)
    assert floor.alert and floor.texts[0].startswith("balanced_accuracy 0.780 is under the floor 0.800 (p_adj=")
    assert not mon.decide_alert({}, {"metric_drop": 0.1}, headline).alert
    assert mon.decide_alert({}, {"metric_floor": 0.5}, headline).headline.floor == 0.5
    better = mon.Headline("balanced_accuracy", 0.95, None, 0.85, None, 20_000)  # no intervals: the values decide
    assert not mon.decide_alert({}, None, better).alert
    worse = mon.Headline("balanced_accuracy", 0.75, None, 0.85, None, 20_000)
    assert mon.decide_alert({}, None, worse).alert
    tests = {mon.TestKey("prevalence_pred", "a"): drift.two_proportion_z(1000, 10000, 1030, 10000)}
    table = mon.decide_alert(tests, {"correction": "bonferroni"}, headline).table
    assert table.height == 2 and table["p_adjusted"].to_list() == pytest.approx(
        np.minimum(2 * table["p_value"].to_numpy(), 1.0))


def test_a_collapsed_interval_takes_the_reference_spread_at_the_period_size():
    """100 labelled rows, all right: the bootstrap interval is (1, 1); power comes from the reference's
    standard error scaled to 100 rows, not from a standard error of 0 (power 1, "no alert")."""
    h = mon.Headline("balanced_accuracy", 1.0, (1.0, 1.0), 0.89, (0.88, 0.90), 100, 3000)
    test, _, _ = mon.headline_test(h)
    se_r = 0.02 / (2 * stats.norm.isf(0.025))
    se = np.hypot(se_r, se_r * np.sqrt(3000 / 100))
    assert test.details["power"] == pytest.approx(stats.norm.cdf(0.05 / se - stats.norm.isf(0.05)), rel=1e-12)
    assert test.p_value == pytest.approx(stats.norm.sf(-0.11 / se), rel=1e-12)
    wide = mon.Headline("balanced_accuracy", 0.9, (0.7, 1.0), 0.89, (0.88, 0.90), 100, 3000)  # wider: kept
    assert mon.headline_test(wide)[0].details["se_current"] == pytest.approx(0.3 / (2 * stats.norm.isf(0.025)))
    ref = three_class_period()
    cur = pl.DataFrame({"label": ["a"] * 50 + ["b"] * 30 + ["c"] * 20}).with_columns(prediction=pl.col("label"))
    out = mon.assess_period(ref, cur)
    assert (out.metrics["balanced_accuracy_ci_low"], out.metrics["balanced_accuracy_ci_high"]) == (1.0, 1.0)
    assert out.decision.verdict == "not enough labels to judge" and out.decision.headline.power < mon.POWER


def test_reasons_are_typed_and_round_trip(reference):
    decision = mon.decide_alert(mon.run_tests(reference, period_stats(200_000, 51, prevalence=(3, 0.05))))
    first = decision.reasons[0]
    assert first.key == mon.TestKey("prevalence_label", "c3") and first.threshold == 0.02
    assert first.current - first.reference == pytest.approx(first.effect)
    assert decision.figures[first.key.name] == first.effect
    assert first.text.startswith(first.summary) and "p_adj" in first.text and "p_adj" not in first.summary
    assert [mon.Reason.from_dict(r.to_dict()) for r in decision.reasons] == list(decision.reasons)
    with pytest.raises(InputError, match="unknown test kind"):
        mon.TestKey("prevalence")


@pytest.mark.parametrize("p_adjusted, shown", [(0.0, "p_adj<1e-300"), (3.2e-9, "p_adj=3.2e-09"), (0.012, "p_adj=0.012")])
def test_a_reason_shows_an_underflowed_p_value_as_a_bound(p_adjusted, shown):
    reason = mon.Reason(mon.TestKey("prevalence_label", "c3"), 0.044, 0.02, p_adjusted, 0.085, 0.129)
    assert reason.text.endswith(f"threshold 2; {shown})")
