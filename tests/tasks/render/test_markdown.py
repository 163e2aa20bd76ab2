"""tasks.render.markdown: the period run's description says what the verdict was."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl
import pytest
from flow_data import three_class_period

from metrics_core import monitoring as mon
from tasks.render.markdown import period_note


@pytest.mark.parametrize("current, opening", [
    (pl.DataFrame({"label": ["a"], "prediction": ["b"]}),
     "2024-10, m: no alert, but not enough labels to judge balanced_accuracy: 1 labelled row(s) are too few"),
    (three_class_period(seed=2), "2024-10, m: no alert: no corrected test passed its practical threshold and the headline "
                         "metric stayed above its floor."),
])
def test_the_period_note_opens_with_the_verdict(current, opening):
    """A month with one labelled row said the headline "stayed above its floor" though it was never judged."""
    a = mon.assess_period(three_class_period(), current)
    note = period_note(SimpleNamespace(period="2024-10", model="m"), a)
    assert note.startswith(opening), note


def test_the_policy_sentence_names_every_threshold_the_spec_can_set():
    """The summary listed five thresholds by hand and left out calibration_change; now it reads every field."""
    from metrics_core.monitoring.policy import POLICY_FIELDS
    from tasks.render.markdown import policy_sentence

    text = policy_sentence({"calibration_change": 0.07, "metric_floor": 0.8})
    assert "calibration_change 0.07" in text and "metric_floor 0.8" in text
    for f in POLICY_FIELDS:
        if f.name not in ("alpha", "correction", "level"):
            assert f"{f.name} " in text
    assert "metric_floor" not in policy_sentence(None)  # unset: the floor follows the reference


def test_the_period_note_says_when_the_estimate_is_unreliable():
    """Under input corruption the estimate read 0.902 [0.886, 0.925] with no caveat; the labels later showed 0.510."""
    m = {"n_rows": 3000, "n_rows_reference": 7452, "estimated/balanced_accuracy": 0.902,
         "estimated/balanced_accuracy_ci_low": 0.886, "estimated/balanced_accuracy_ci_high": 0.925,
         "estimated/score_shift": 0.097, "estimated/support_share": 0.98}
    decision = mon.decide_alert({})

    def note(reliable):
        a = SimpleNamespace(metrics={**m, "estimated/reliable": reliable}, decision=decision,
                            headline_metric="balanced_accuracy")
        return period_note(SimpleNamespace(period="2024-11", model="m"), a)

    assert "UNRELIABLE" not in note(1.0) and "0.902 (95 % interval 0.886 to 0.925)." in note(1.0)
    assert ("0.902 (95 % interval 0.886 to 0.925), UNRELIABLE: the period's scores moved beyond what the "
            "reference's calibration vouches for (shift of the predicted classes' own scores 0.097, 98% of rows in "
            "score bins the reference covers)") in note(0.0)


def test_the_period_note_says_which_shift_the_estimate_assumed_and_flags_degenerate_scores():
    """Under label shift the note says the priors were re-estimated and why; a broken scoring step
    (every row scored alike) read as a plain 0.0 [0.0, 0.0]."""
    m = {"n_rows": 3000, "estimated/accuracy": 0.853, "estimated/accuracy_ci_low": 0.843,
         "estimated/accuracy_ci_high": 0.862, "estimated/label_shift": 1.0, "estimated/covariate_shift": 0.0,
         "estimated/no_shift_p": 1e-12, "estimated/label_shift_p": 0.4, "estimated/label_shift_unexplained": 0.01,
         "estimated/reliable": 1.0, "estimated/degenerate": 0.0}

    def note(**extra):
        a = SimpleNamespace(metrics={**m, **extra}, decision=mon.decide_alert({}), headline_metric="accuracy")
        return period_note(SimpleNamespace(period="2024-11", model="m"), a)

    assert ("0.853 (95 % interval 0.843 to 0.862); label shift assumed: the scores moved as a change of the class "
            "mix explains (p = 1e-12 without a shift, 0.4 with the class priors re-estimated from the scores)") \
        in note()
    covariate = note(**{"estimated/label_shift": 0.0, "estimated/covariate_shift": 1.0,
                        "estimated/label_shift_unexplained": 0.83})
    assert "covariate shift assumed" in covariate and "83% of the discrepancy left" in covariate
    broken = note(**{"estimated/reliable": 0.0, "estimated/degenerate": 1.0})
    assert "UNRELIABLE: most of the period's rows have the same scores" in broken


def test_the_summary_lists_the_segments_and_the_tests_not_given_under_their_own_headings():
    """A note of a segment not tested and one of a test the period's data cannot give each go under
    their own heading of monitoring_summary.md, once."""
    from tasks.render.markdown import summary_markdown

    d = mon.decide_alert({}, segment_notes=("retailer=shop_9: 12 rows, too few to test",),
                         untested_notes=("the price-impact table is not given",))
    plan = SimpleNamespace(model="m", period="2024-10", reference="ref.parquet", current="cur.parquet",
                           current_filter=None, cur_layout=SimpleNamespace(label="label"))
    text = summary_markdown(plan, SimpleNamespace(decision=d, metrics={"n_rows": 10}), "period", None)
    assert "## Segments not tested\n\n- retailer=shop_9: 12 rows, too few to test\n" in text
    assert "## Not tested\n\n- the price-impact table is not given\n" in text and text.count("price-impact") == 1
    assert d.notes == ["retailer=shop_9: 12 rows, too few to test", "the price-impact table is not given"]
