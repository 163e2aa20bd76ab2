"""Prefect tasks of monitor_period: plan (metadata only), summarise a source in one pass, assess a period."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

import metrics_core as mc
from metrics_core import monitoring as mon
from tasks.config import sources
from tasks.store.mlflow import safe_key
from tasks.config.spec import RunSpec

DEFAULT_HEADLINE = "balanced_accuracy"


def transient(task, task_run, state) -> bool:
    """Retry condition: retry I/O failures, never bad input or a bad spec (ValueError)."""
    exc = state.data if isinstance(state.data, BaseException) else None
    if exc is None:
        try:
            exc = state.result(raise_on_failure=False)
        except Exception:  # noqa: BLE001 - an unreadable result: retry is the safe default
            return True
    return not isinstance(exc, ValueError)


IO = {"retries": 2, "retry_delay_seconds": 1, "retry_condition_fn": transient, "cache_policy": NO_CACHE}


def bins_of(spec: RunSpec) -> mon.Bins:
    m = spec.monitor
    return mon.Bins(m.score_bins, tuple(m.score_range), m.price_bins_per_decade, tuple(m.price_range))


@dataclass(frozen=True)
class Plan:
    """What monitor_period will read: sources, row filters, column layouts, class list."""

    model: str
    period: str
    reference: str
    current: str
    current_filter: object
    labels: list
    ref_layout: sources.Layout
    cur_layout: sources.Layout


@task(name="plan-period", **IO)
def plan_period(spec: RunSpec, period: str) -> Plan:
    """Resolve the sources of ``period`` and check both schemas against the spec (metadata only)."""
    sources.check_period(period)
    reference, _ = sources.source_for(spec, "reference")
    current, cur_filter = sources.source_for(spec, "current", period)
    labels = sources.class_list(spec, reference)
    ref_layout = sources.layout(spec, reference, labels, require_labels=False)
    cur_layout = sources.layout(spec, current, labels, require_labels=False)
    sources.check_same_schema(reference, current, ref_layout, cur_layout)
    return Plan(spec.name, period, reference, current, cur_filter, labels, ref_layout, cur_layout)


@task(name="summarise", **IO)
def summarise(spec: RunSpec, source: str, layout: sources.Layout, row_filter=None) -> mon.PeriodStats:
    """One pass over ``source``: the mergeable monitoring statistics (metrics_core.monitoring)."""
    return mon.scan_period(source, spec.task, layout.labels, bins_of(spec), label=layout.label,
                           prediction=layout.prediction, scores=layout.scores, price=layout.price,
                           weight=layout.weight, threshold=spec.threshold, filter=row_filter,
                           batch_rows=spec.monitor.batch_size)


@dataclass(frozen=True)
class Assessment:
    """A period's verdict and everything to log: flat metrics, tables, the headline check."""

    decision: mon.Alert
    metrics: dict
    series: dict
    tables: dict
    headline: dict | None
    headline_metric: str


def _report(spec: RunSpec, stats: mon.PeriodStats):
    if stats.performance is None:
        return None
    kw = {"beta": spec.beta, "level": spec.alerts.level, "n_boot": spec.n_boot, "seed": spec.seed}
    if spec.task == "binary":
        return mc.binary_from_stats(stats.performance, **kw)
    return mc.multiclass_from_stats(stats.performance, **kw)


def _per_class(ref: mon.PeriodStats, cur: mon.PeriodStats, tests: dict) -> pl.DataFrame:
    names = [mon._fmt_label(x) for x in ref.labels]
    rows = []
    for j, name in enumerate(names):
        score = tests.get(f"score:{name}")
        price = tests.get(f"price:{name}")
        rows.append({
            "class": name,
            "prevalence_label_reference": float(ref.prevalence("label")[j]),
            "prevalence_label_current": float(cur.prevalence("label")[j]),
            "prevalence_pred_reference": float(ref.prevalence("pred")[j]),
            "prevalence_pred_current": float(cur.prevalence("pred")[j]),
            "score_mean_reference": score.details["mean_reference"] if score else np.nan,
            "score_mean_current": score.details["mean_current"] if score else np.nan,
            "score_wasserstein": score.effect_size if score else np.nan,
            "score_psi": score.details["psi"] if score else np.nan,
            "price_median_reference": price.details["median_reference"] if price else np.nan,
            "price_median_current": price.details["median_current"] if price else np.nan,
            "price_shift": price.effect_size if price else np.nan,
            "expenditure_share_current": float(cur.weight_by_pred[j] / cur.weight_by_pred.sum())
            if cur.weight_by_pred is not None and cur.weight_by_pred.sum() > 0 else np.nan,
        })
    return pl.DataFrame(rows)


@task(name="assess-period", cache_policy=NO_CACHE)
def assess(spec: RunSpec, reference: mon.PeriodStats, current: mon.PeriodStats) -> Assessment:
    """Tests, headline check and alert decision of a period, plus the flat metrics to log."""
    policy = spec.alerts
    tests = mon.compare(reference, current)
    headline_metric = spec.headline_metric or DEFAULT_HEADLINE
    ref_report, cur_report = _report(spec, reference), _report(spec, current)
    headline = None
    metrics: dict = {"n_rows": current.n_rows, "n_rows_reference": reference.n_rows}
    if cur_report is not None:
        metrics.update({f"perf/{k}": v for k, v in cur_report.metrics.items()})
        if headline_metric not in cur_report.metrics:
            raise ValueError(f"headline_metric: {headline_metric!r} is not a metric of the {spec.task} report; "
                             f"choose one of {sorted(cur_report.metrics)[:30]}.")
        ref_value = ref_report.metrics.get(headline_metric) if ref_report is not None else None
        floor = policy.metric_floor if policy.metric_floor is not None else (
            None if ref_value is None or not np.isfinite(ref_value) else ref_value - policy.metric_drop)
        interval = cur_report.intervals.get(headline_metric)
        headline = mon.headline_check(headline_metric, cur_report.metrics[headline_metric], interval, floor)
        metrics[headline_metric] = cur_report.metrics[headline_metric]
        if interval is not None:
            metrics[f"{headline_metric}_ci_low"], metrics[f"{headline_metric}_ci_high"] = interval
        if floor is not None:
            metrics[f"{headline_metric}_floor"] = floor
        if ref_value is not None:
            metrics[f"{headline_metric}_reference"] = ref_value
    decision = mon.decide_alert(tests, policy, headline)
    table = decision.table
    for row in table.iter_rows(named=True):
        metrics[f"p_adj/{row['name']}"] = row["p_adjusted"]
    for name, t in tests.items():
        kind, _, cls = name.partition(":")
        if kind.startswith("prevalence"):
            metrics[f"{kind}/{cls}"] = t.details["p_current"]
        elif kind.startswith("class_mix"):
            metrics[f"psi_{kind}"] = t.effect_size
        elif kind == "score":
            metrics[f"score_wasserstein/{cls}"] = t.effect_size
            metrics[f"score_psi/{cls}"] = t.details["psi"]
        elif kind == "price":
            metrics[f"price_median/{cls}"] = t.details["median_current"]
            metrics[f"price_shift/{cls}"] = t.effect_size

    def worst(prefix: str) -> float:
        vals = [abs(t.effect_size) for n, t in tests.items() if n.startswith(prefix) and np.isfinite(t.effect_size)]
        return max(vals) if vals else float("nan")

    metrics.update({"max_abs_prevalence_change_pred": worst("prevalence_pred"),
                    "max_abs_prevalence_change_label": worst("prevalence_label"),
                    "max_score_wasserstein": worst("score:"), "max_abs_price_shift": worst("price:"),
                    "n_tests": table.height, "n_alert_reasons": len(decision.reasons), "alert": float(decision.alert)})
    metrics = {safe_key(k): v for k, v in metrics.items()}
    keep = ("n_rows", "alert", "max_", "psi_class_mix", "prevalence_pred/", "prevalence_label/", headline_metric)
    series = {k: v for k, v in metrics.items() if k.startswith(keep)}
    tables = {"drift_table.json": table, "per_class_monitoring.json": _per_class(reference, current, tests)}
    impact = mon.price_impact_binned(current, policy.alpha)
    if impact is not None:
        tables["price_impact.json"] = impact
    if cur_report is not None and cur_report.per_class is not None:
        tables["per_class_performance.json"] = cur_report.per_class
    return Assessment(decision, metrics, series, tables, headline, headline_metric)


def summary_markdown(spec: RunSpec, plan: Plan, a: Assessment) -> str:
    """The period's monitoring summary (MLflow text artifact)."""
    d = a.decision
    lines = [f"# Monitoring {plan.model}, period {plan.period}", "",
             f"- reference: `{plan.reference}`", f"- current: `{plan.current}`"
             + (f" (rows where {spec.columns.period} = {plan.period})" if plan.current_filter is not None else ""),
             f"- rows: {a.metrics.get('n_rows')} (reference {a.metrics.get('n_rows_reference')})",
             f"- labels in this period: {'yes' if plan.cur_layout.label else 'no (performance not measured)'}",
             f"- alert: **{'RETRAIN' if d.alert else 'none'}**", ""]
    if d.reasons:
        lines += ["## Reasons", ""] + [f"- {r}" for r in d.reasons] + [""]
    if a.headline:
        h = a.headline
        lines += [f"Headline {h['metric']}: {h['value']:.4f} (interval {h['low']:.4f} - {h['high']:.4f}), "
                  f"floor {h['floor']:.4f}.", ""]
    p = spec.alerts
    lines += ["## Policy", "", f"Tests corrected with {p.correction} at alpha {p.alpha}; practical thresholds: "
              f"prevalence change {p.prevalence_change:g}, class-mix PSI {p.psi:g}, score shift (Wasserstein) "
              f"{p.score_shift:g}, price shift {p.price_change:.0%}, headline drop {p.metric_drop:g}."]
    return "\n".join(lines) + "\n"
