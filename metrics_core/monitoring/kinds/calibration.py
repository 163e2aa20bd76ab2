"""The calibration kind: a labelled period's calibration against the reference's calibration map.

Its own module: unlike the distribution kinds its test needs the reference's fitted calibration
map, so it is made with the label-lag estimate
(:func:`metrics_core.monitoring.estimate.assess_estimate` calls
:func:`~metrics_core.monitoring.estimate.calibration_change`), not by
:func:`~metrics_core.monitoring.kinds.run_tests`; what it logs is declared here, as for every kind.
"""

from __future__ import annotations

from metrics_core.monitoring.kinds.base import SCORES, Kind, Metric, PanelSpec, TestKey
from metrics_core.significance import TestResult

__all__ = ["CALIBRATION"]


def _render(r, tail: str) -> tuple[str, str]:
    return (f"calibration of {r.key.cls!r} changed: {r.effect:.3f} >= {r.threshold:g} (observed vs expected "
            f"by the reference's calibration)", f"rate {r.reference:.3f} expected, {r.current:.3f} observed; {tail}")


def _metrics(key: TestKey, t: TestResult) -> dict[str, float]:
    return {f"calibration_change/{key.cls}": t.effect_size}


CALIBRATION = Kind("calibration", "calibration_change", _render, ("rate_expected", "rate_current"),
                   metrics=_metrics, worst="max_calibration_change",
                   logged=(Metric("calibration_change/", f"{SCORES}/calibration change "),
                           Metric("max_calibration_change", f"{SCORES}/largest calibration change", True)),
                   panel=PanelSpec(5, "calibration_change", "max_calibration_change",
                                   "largest calibration change\n(positives per row)", "calibration_change",
                                   legend="largest over classes"))
