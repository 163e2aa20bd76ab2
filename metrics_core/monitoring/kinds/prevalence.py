"""The class-mix and prevalence kinds, on labels and on predictions: one family, as they test the same class counts.

Per source (labels, predictions): ``class_mix_<source>`` (3+ classes) tests the whole class
distribution, ``prevalence_<source>`` each class's share (binary: the positive class only).
"""

from __future__ import annotations

from functools import partial

from metrics_core import drift
from metrics_core.monitoring.kinds.base import PREVALENCE, Kind, Metric, PanelSpec, Planned, TestKey
from metrics_core.monitoring.period import PeriodStats
from metrics_core.significance import TestResult

__all__ = ["CLASS_MIX_LABEL", "PREVALENCE_LABEL", "CLASS_MIX_PRED", "PREVALENCE_PRED"]

#: Words of a source in the logged names.
_WORDS = {"label": "labelled", "pred": "predicted"}


def _counts(reference: PeriodStats, current: PeriodStats, source: str):
    if source == "label":
        return reference.label_counts, current.label_counts
    return reference.pred_counts, current.pred_counts


def _class_mix_tests(source: str, reference: PeriodStats, current: PeriodStats) -> Planned:
    """Chi-squared homogeneity test of the class counts (3+ classes); effect = PSI of the class distribution."""
    ref, cur = _counts(reference, current, source)
    if ref is None or cur is None or reference.labels.size <= 2:
        return []
    return [(TestKey(f"class_mix_{source}"), drift.class_mix_test(ref, cur, reference.class_names()))]


def _prevalence_tests(source: str, reference: PeriodStats, current: PeriodStats) -> Planned:
    """Two-proportion z-test of each class's share (binary: the positive class); effect = current minus reference."""
    ref, cur = _counts(reference, current, source)
    if ref is None or cur is None:
        return []
    names = reference.class_names()
    n1, n2 = int(ref.sum()), int(cur.sum())
    classes = [1] if reference.task == "binary" else range(reference.labels.size)
    return [(TestKey(f"prevalence_{source}", names[j]), drift.two_proportion_z(int(ref[j]), n1, int(cur[j]), n2))
            for j in classes]


def _render_prevalence(r, tail: str) -> tuple[str, str]:
    verb = "rose" if r.current > r.reference else "fell"
    return (f"prevalence of {r.key.cls!r} ({r.key.source}) {verb} from {r.reference:.1%} to {r.current:.1%}",
            f"{(r.current - r.reference) * 100:+.1f} points, threshold {r.threshold * 100:g}; {tail}")


def _render_class_mix(r, tail: str) -> tuple[str, str]:
    return f"class distribution ({r.key.source}) shifted: PSI {r.effect:.3f} >= {r.threshold:g}", tail


def _prevalence_metrics(key: TestKey, t: TestResult) -> dict[str, float]:
    return {f"{key.kind}/{key.cls}": t.details["p_current"]}


def _class_mix_metrics(key: TestKey, t: TestResult) -> dict[str, float]:
    return {f"psi_{key.kind}": t.effect_size}


PREVALENCE_PANEL = PanelSpec(1, "prevalence_change", "max_abs_prevalence_change_pred",
                             "largest prevalence change,\npoints", "prevalence_change", scale=100,
                             legend="predicted classes",
                             extra=(("prevalence_change_label", "max_abs_prevalence_change_label",
                                     "labelled classes"),))
CLASS_MIX_PANEL = PanelSpec(2, "psi_class_mix_pred", "psi_class_mix_pred", "class-mix shift\n(PSI)", "psi",
                            legend="predicted classes",
                            extra=(("psi_class_mix_label", "psi_class_mix_label", "labelled classes"),))


def _class_mix(source: str, words: str) -> Kind:
    return Kind(f"class_mix_{source}", "psi", _render_class_mix, source=words,
                tests=partial(_class_mix_tests, source), metrics=_class_mix_metrics,
                logged=(Metric(f"psi_class_mix_{source}", f"{PREVALENCE}/class-mix PSI {_WORDS[source]}", True),),
                panel=CLASS_MIX_PANEL)


def _prevalence(source: str, words: str) -> Kind:
    worst = f"max_abs_prevalence_change_{source}"
    return Kind(f"prevalence_{source}", "prevalence_change", _render_prevalence, ("p_reference", "p_current"),
                words, partial(_prevalence_tests, source), _prevalence_metrics, worst,
                (Metric(f"prevalence_{source}/", f"{PREVALENCE}/{_WORDS[source]} ", True),
                 Metric(worst, f"{PREVALENCE}/largest change {_WORDS[source]}", True)), PREVALENCE_PANEL)


CLASS_MIX_LABEL, PREVALENCE_LABEL = _class_mix("label", "labels"), _prevalence("label", "labels")
CLASS_MIX_PRED, PREVALENCE_PRED = _class_mix("pred", "predictions"), _prevalence("pred", "predictions")
