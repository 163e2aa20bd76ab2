"""tasks.render.markdown: the period run's description says what the verdict was."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from metrics_core import monitoring as mon
from tasks.render.markdown import period_note


def _reference(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    names = np.array(["a", "b", "c"])
    y = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    pred = np.where(rng.random(n) < 0.85, y, rng.choice(3, n))
    return pl.DataFrame({"label": names[y], "prediction": names[pred]})


@pytest.mark.parametrize("current, opening", [
    (pl.DataFrame({"label": ["a"], "prediction": ["b"]}),
     "2024-10, m: no alert, but not enough labels to judge balanced_accuracy: 1 labelled row(s) are too few"),
    (_reference(seed=2), "2024-10, m: no alert: no corrected test passed its practical threshold and the headline "
                         "metric stayed above its floor."),
])
def test_the_period_note_opens_with_the_verdict(current, opening):
    """A month with one labelled row said the headline "stayed above its floor" though it was never judged."""
    a = mon.assess_period(_reference(), current)
    note = period_note(SimpleNamespace(period="2024-10", model="m"), a)
    assert note.startswith(opening), note
