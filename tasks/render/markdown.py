"""Markdown of a monitored period: its summary and its retraining alert (MLflow and Prefect artifacts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metrics_core.monitoring import Alert, AlertPolicy

if TYPE_CHECKING:  # the tasks import this module, not the other way round
    from tasks.monitor import Assessment, Plan


def alert_markdown(model: str, period: str, decision: Alert, run_id: str | None, tracking_uri: str | None) -> str:
    """The alert: its reasons, the table of the tests that passed their thresholds and the MLflow run.

    >>> from metrics_core import drift
    >>> from metrics_core.monitoring import TestKey, decide_alert
    >>> d = decide_alert({TestKey("prevalence_pred", "a"): drift.two_proportion_z(1000, 10000, 1500, 10000)})
    >>> alert_markdown("m", "2024-08", d, "r1", "sqlite:///x.db").splitlines()[0]
    '# Retraining alert: m, 2024-08'
    """
    lines = [f"# Retraining alert: {model}, {period}", "",
             f"{len(decision.reasons)} reason(s) (corrected tests that reject AND pass their practical threshold, "
             "or the headline metric's lower bound under its floor):", ""]
    lines += [f"- {r}" for r in decision.texts]
    rows = decision.table.filter(decision.table["drift"].fill_null(False)) if decision.table.height else None
    if rows is not None and rows.height:
        lines += ["", "| test | effect | threshold | p (adjusted) |", "|---|---|---|---|"]
        for r in rows.iter_rows(named=True):
            lines.append(f"| {r['name']} | {r['effect_size']:.4g} | {r['threshold']:g} | {r['p_adjusted']:.2g} |")
    if run_id:
        lines += ["", f"MLflow run `{run_id}` in `{tracking_uri}`: open it with `classwatch ui`."]
    return "\n".join(lines) + "\n"


def summary_markdown(plan: "Plan", a: "Assessment", period_column: str, policy) -> str:
    """The period's monitoring summary: sources, rows, labels, the alert and its reasons, the policy."""
    d = a.decision
    lines = [f"# Monitoring {plan.model}, period {plan.period}", "",
             f"- reference: `{plan.reference}`", f"- current: `{plan.current}`"
             + (f" (rows where {period_column} = {plan.period})" if plan.current_filter is not None else ""),
             f"- rows: {a.metrics.get('n_rows')} (reference {a.metrics.get('n_rows_reference')})",
             f"- labels in this period: {'yes' if plan.cur_layout.label else 'no (performance not measured)'}",
             f"- alert: **{'RETRAIN' if d.alert else 'none'}**", ""]
    if d.reasons:
        lines += ["## Reasons", ""] + [f"- {r}" for r in d.texts] + [""]
    if d.headline:
        h = d.headline
        lines += [f"Headline {h.metric}: {h.value:.4f} (interval {h.low:.4f} - {h.high:.4f}), floor {h.floor:.4f}.", ""]
    p = AlertPolicy.of(policy)
    lines += ["## Policy", "", f"Tests corrected with {p.correction} at alpha {p.alpha}; practical thresholds: "
              f"prevalence change {p.prevalence_change:g}, class-mix PSI {p.psi:g}, score shift (Wasserstein) "
              f"{p.score_shift:g}, price shift {p.price_change:.0%}, headline drop {p.metric_drop:g}."]
    return "\n".join(lines) + "\n"
