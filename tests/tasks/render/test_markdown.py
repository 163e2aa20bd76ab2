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
