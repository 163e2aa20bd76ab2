"""The alert reasons as a reader meets them: the direction of a calibration change, their order by strength."""

from __future__ import annotations

from metrics_core.monitoring import Reason, TestKey, decide_alert
from metrics_core.significance import TestResult


def test_the_direction_of_a_calibration_reason():
    worse = Reason(TestKey("calibration", "top_label"), 0.123, 0.05, 1e-9, 0.851, 0.728)
    better = Reason(TestKey("calibration", "top_label"), 0.061, 0.05, 1e-9, 0.931, 0.962)
    fewer = Reason(TestKey("calibration", "wine"), 0.061, 0.05, 1e-9, 0.12, 0.06)
    assert worse.summary.startswith("calibration of 'top_label' changed, worse than expected: 0.123 >= 0.05")
    assert better.summary.startswith("calibration of 'top_label' changed, better than expected: 0.061 >= 0.05")
    assert fewer.summary.startswith("calibration of 'wine' changed, fewer 'wine' labels than its scores imply")


def _test(effect: float, p: float) -> TestResult:
    return TestResult("t", 1.0, p, effect, "e", "significant", 0.05, None, {})


def test_a_planted_prevalence_shift_comes_before_the_price_of_an_error_cell():
    """The demo's 2024-08: soft drinks +7 points (p_adj 3e-50) was listed after bread_cereals' false
    positives' prices falling 37.6 %, whose effect over threshold (3.76) is larger than 3.5."""
    tests = {TestKey("price_false_positive", "bread_cereals"): _test(-0.376, 1e-6),
             TestKey("prevalence_label", "soft_drinks"): _test(0.07, 3e-50),
             TestKey("price", "tea"): _test(0.12, 1e-4)}
    names = [r.key.name for r in decide_alert(tests).reasons]
    assert names == ["prevalence_label:soft_drinks", "price:tea", "price_false_positive:bread_cereals"]


def test_within_a_tier_reasons_go_by_effect_over_threshold_then_evidence():
    tests = {TestKey("prevalence_pred", "a"): _test(0.05, 1e-3), TestKey("prevalence_pred", "b"): _test(0.09, 0.01),
             TestKey("prevalence_pred", "c"): _test(0.05, 1e-20),
             TestKey("calibration", "top_label"): _test(0.06, 0.01)}
    names = [r.key.name for r in decide_alert(tests).reasons]
    assert names == ["calibration:top_label", "prevalence_pred:b", "prevalence_pred:c", "prevalence_pred:a"]
