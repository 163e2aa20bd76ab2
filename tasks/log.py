"""Prefect task that logs a monitored period to MLflow: the parent run, the period's run, the parent's time series."""

from __future__ import annotations

import json
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
from prefect import task

from tasks import IO
from tasks.alerts import alert_tags
from tasks.config import sources
from tasks.config.spec import RunSpec
from tasks.monitor import Assessment, History, Logged, Plan
from tasks.render.markdown import alert_markdown, summary_markdown
from tasks.store.mlflow import MlflowStore, RunContent

#: Time-series panels of the parent run's plot (plus the headline metric when periods had labels).
PLOT_METRICS = ("max_abs_prevalence_change_pred", "max_score_wasserstein", "max_abs_price_shift")


def over_time(history: History, period: str, metrics: dict, headline: str) -> tuple[pl.DataFrame, list, list]:
    """The parent plot's table: one row per logged period (from ``history``) with the period at
    hand taken from ``metrics``, in time order; the panels to draw; the periods that alerted.

    >>> h = History("2024-02", "p", "p|2024-02")
    >>> frame, keys, alerts = over_time(h, "2024-02", {"alert": 1.0, "max_score_wasserstein": 0.1}, "f1")
    >>> frame.columns, alerts
    (['period', 'max_abs_prevalence_change_pred', 'max_score_wasserstein', 'max_abs_price_shift'], ['2024-02'])
    """
    rows = {p: run.metrics for p, run in history.periods.items() if p != period}
    rows[period] = metrics
    periods = sorted(rows, key=sources.period_index)
    keys = [*PLOT_METRICS] + ([headline] if any(headline in m for m in rows.values()) else [])
    frame = pl.DataFrame({"period": periods, **{k: [float(rows[p].get(k, float("nan"))) for p in periods]
                                                 for k in keys}})
    return frame, keys, [p for p in periods if rows[p].get("alert") == 1.0]


def _plot(history: History, period: str, metrics: dict, headline: str, folder: Path) -> Path:
    from tasks.render.timeseries import plot_time_series

    frame, keys, alerts = over_time(history, period, metrics, headline)
    units = {k: "share" if "prevalence" in k else "relative" if "price" in k else "score units"
             if "wasserstein" in k else "metric" for k in keys}
    return plot_time_series(frame, keys, folder / "monitoring_over_time.png", alerts=alerts, units=units,
                            title=f"Monitoring over periods (alerts marked: {len(alerts)})")


def _period_ms(period: str) -> int:
    return int(datetime.strptime(period + "-01", "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp() * 1000)


def period_content(spec: RunSpec, plan: Plan, a: Assessment) -> RunContent:
    """The period run's params, metrics, tags, tables and summary (the alert markdown is added
    once the run id is known)."""
    tags = {"classwatch.kind": "monitor", "classwatch.model": spec.name, "classwatch.period": plan.period,
            **alert_tags(a.decision)}
    return RunContent(
        f"{spec.name} {plan.period}",
        params={"period": plan.period, "current_source": plan.current, "reference_source": plan.reference,
                "labels": json.dumps(plan.labels, default=str), "headline_metric": a.headline_metric,
                "spec_fingerprint": spec.fingerprint()},
        metrics=a.metrics, tags=tags, tables=dict(a.tables),
        texts={"monitoring_summary.md": summary_markdown(plan, a, spec.columns.period, spec.alerts)},
        step=sources.period_index(plan.period), timestamp_ms=_period_ms(plan.period))


@task(name="log-monitoring", **IO)
def log_period(spec: RunSpec, store: MlflowStore, plan: Plan, a: Assessment, history: History) -> Logged:
    """Parent run (model + reference window, created once), the period's run (replacing any earlier
    run of the period), the parent's time series and over-time plot: FINISHED only when all is logged.

    The plot is drawn from ``history`` (the periods logged before, found by
    :func:`tasks.monitor.logged_period`) and this period's metrics: nothing is read back.
    """
    tags = {"classwatch.kind": "monitor", "classwatch.model": spec.name, "classwatch.reference": plan.reference}
    parent_id = store.ensure_parent(history.parent_key, f"{spec.name} monitoring",
                                    {**spec.flat_params(), "reference_source": plan.reference}, tags,
                                    existing=history.parent.run_id if history.parent else None)
    content = period_content(spec, plan, a)
    text = None
    with store.new_run(history.child_key, content.name, parent_run_id=parent_id, replaces=history.leftovers) as run_id:
        if a.decision.alert:
            text = content.texts["alert.md"] = alert_markdown(spec.name, plan.period, a.decision, run_id,
                                                               store.tracking_uri)
        store.write(run_id, content)
        store.log_batches(parent_id, a.series, step=content.step, timestamp_ms=content.timestamp_ms)
        with tempfile.TemporaryDirectory(prefix="classwatch-plot-") as tmp:
            plot = _plot(history, plan.period, a.metrics, a.headline_metric, Path(tmp))
            store.log_artifacts(parent_id, files={plot.name: plot})
    return Logged(run_id, parent_id, store.experiment_id(), text)
