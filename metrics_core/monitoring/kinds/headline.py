"""The period-level kinds: the headline metric's drop and a new class; neither is made by run_tests.

The headline test needs the period's and the reference's reports
(:func:`metrics_core.monitoring.decision.headline_test`, inside ``decide_alert``); a new class is
counted while the period is read, not tested. Both are reasons of an alert all the same.
"""

from __future__ import annotations

from metrics_core.monitoring.kinds.base import HEADLINE as HEADLINE_SECTION
from metrics_core.monitoring.kinds.base import Kind, Metric, PanelSpec

__all__ = ["HEADLINE", "NEW_CLASS"]


def _render_headline(r, tail: str) -> tuple[str, str]:
    metric = r.key.cls
    if r.threshold > 0:
        return (f"{metric} fell {r.effect:.3f} below the reference {r.reference:.3f} (now {r.current:.3f})",
                f"threshold {r.threshold:.3g}; {tail}")
    return f"{metric} {r.current:.3f} is under the floor {r.reference:.3f}", tail


def _render_new_class(r, tail: str) -> tuple[str, str]:
    return f"class {r.key.cls!r} appeared: {int(r.current):,} rows ({r.effect:.1%} of the period)", ""


HEADLINE = Kind("headline", "metric_drop", _render_headline, ("reference", "value"), tier=1,
                panel=PanelSpec(6, "{headline}", "{headline}", "{headline}\n(headline metric)",
                                threshold_column="{headline}_floor", legend="measured (labels)",
                                # the label-lag estimate: beside the measured value, and alone in months without labels
                                extra=(("{headline}_estimated", "{estimated}",
                                        "estimated from the scores (no labels needed)"),),
                                band=("{headline}_ci_low", "{headline}_ci_high"),
                                threshold_legend="floor: reference minus the practical drop (alert: under it, test "
                                                 "rejects)"))
NEW_CLASS = Kind("new_class", None, _render_new_class, tier=0,
                 logged=(Metric("new_class_rows", f"{HEADLINE_SECTION}/rows of new classes"),))
