"""The calibration kind: a labelled period's calibration against the reference's calibration map.

Its own module: unlike the distribution kinds its test needs the reference's fitted calibration
map, so it is made with the label-lag estimate
(:func:`metrics_core.monitoring.estimate.assess_estimate` calls
:func:`~metrics_core.monitoring.calibration_change.calibration_change`), not by
:func:`~metrics_core.monitoring.kinds.run_tests`; what it logs is declared here, as for every kind.

The test is two-sided, and both directions alert: a period whose labels come out better than its
scores promise (the top label right more often than the reference's calibration expects) alerts as
one that comes out worse. Either way the reference's calibration map no longer describes the model,
so every label-free estimate made from it (the unlabelled periods' ``estimated/...`` metrics, and the
alerts on them) is off by as much; the remedy is a new reference window (a recent labelled sample),
which is what the alert asks for, even when the model itself needs no retraining. The reason says
which direction it is (docs/alerts.md, "Calibration: better or worse than expected").
"""

from __future__ import annotations

from metrics_core.calibration import TOP_LABEL
from metrics_core.monitoring.kinds.base import SCORES, Kind, Metric, PanelSpec, TestKey
from metrics_core.significance import TestResult

__all__ = ["CALIBRATION", "direction"]


def direction(cls: str | None, expected: float, observed: float) -> str:
    """The direction of a calibration change in words: for the top label, whether the predictions were
    right more often than the reference's calibration expects ("better than expected") or less often;
    for a class, whether it was labelled more or less often than its scores imply.

    >>> direction("top_label", 0.931, 0.962), direction("top_label", 0.851, 0.728)
    ('better than expected', 'worse than expected')
    >>> direction("wine", 0.10, 0.13)
    "more 'wine' labels than its scores imply"
    """
    if cls == TOP_LABEL:
        return "better than expected" if observed > expected else "worse than expected"
    return f"{'more' if observed > expected else 'fewer'} {cls!r} labels than its scores imply"


def _render(r, tail: str) -> tuple[str, str]:
    what = ("predictions right" if r.key.cls == TOP_LABEL else "rate")
    return (f"calibration of {r.key.cls!r} changed, {direction(r.key.cls, r.reference, r.current)}: "
            f"{r.effect:.3f} >= {r.threshold:g} (observed vs expected by the reference's calibration)",
            f"{what} {r.reference:.3f} expected, {r.current:.3f} observed; {tail}")


def _metrics(key: TestKey, t: TestResult) -> dict[str, float]:
    return {f"calibration_change/{key.cls}": t.effect_size}


CALIBRATION = Kind("calibration", "calibration_change", _render, ("rate_expected", "rate_current"), tier=1,
                   metrics=_metrics, worst="max_calibration_change",
                   logged=(Metric("calibration_change/", f"{SCORES}/calibration change "),
                           Metric("max_calibration_change", f"{SCORES}/largest calibration change", True)),
                   panel=PanelSpec(5, "calibration_change", "max_calibration_change",
                                   "largest calibration change\n(positives per row)", "calibration_change",
                                   legend="largest over classes"))
