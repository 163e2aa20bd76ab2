"""Flow monitor_period: one period against the reference window -> drift, performance, alert -> MLflow, Prefect."""

from __future__ import annotations

import json
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from prefect import flow, task

from tasks.config import sources
from tasks.alerts import alert_tags, markdown, raise_alert
from tasks.store.mlflow import RunContent, client, ensure_parent, experiment_id, finished_run, log_run, log_series
from tasks import IO
from tasks.monitor import Assessment, Plan, assess, plan_period, summarise, summary_markdown
from tasks.config.spec import RunSpec, fingerprint, load_spec

PLOT_METRICS = ("max_abs_prevalence_change_pred", "max_score_wasserstein", "max_abs_price_shift")


def run_keys(spec: RunSpec, plan: Plan) -> tuple[str, str]:
    """(parent key, child key): model and reference window, then the period."""
    ref = fingerprint(sources.describe_source(plan.reference), plan.labels, spec.task, spec.monitor.model_dump())
    parent = f"monitor|{spec.name}|{ref}"
    return parent, f"{parent}|{plan.period}"


def resolve_period(period: str, now: datetime | None = None) -> str:
    """``YYYY-MM`` as given, or ``"previous"`` (or ``""``): the month before the flow run's scheduled start
    (what a monthly schedule passes), else before ``now`` (UTC).

    >>> resolve_period("previous", datetime(2026, 1, 2, tzinfo=timezone.utc))
    '2025-12'
    """
    if period not in ("", "previous"):
        return sources.check_period(period)
    if now is None:
        from prefect.runtime import flow_run

        now = flow_run.scheduled_start_time or datetime.now(timezone.utc)
    y, m = now.year, now.month - 1
    return f"{y - 1}-12" if m == 0 else f"{y}-{m:02d}"


def _period_of(step: int) -> str:
    return f"{1970 + step // 12}-{step % 12 + 1:02d}"


def _parent_plot(uri: str, parent_id: str, headline: str) -> None:
    """Redraw the parent's time-series PNG from its metric history (alerts marked)."""
    import polars as pl

    from tasks.render.timeseries import plot_time_series

    c = client(uri)
    keys = [k for k in (*PLOT_METRICS, headline) if c.get_metric_history(parent_id, k)]
    history = {k: {m.step: m.value for m in c.get_metric_history(parent_id, k)} for k in (*keys, "alert")}
    steps = sorted(history["alert"])
    if not steps or not keys:
        return
    frame = pl.DataFrame({"period": [_period_of(s) for s in steps],
                          **{k: [history[k].get(s, float("nan")) for s in steps] for k in keys}})
    alerts = [_period_of(s) for s in steps if history["alert"].get(s) == 1.0]
    units = {k: "share" if "prevalence" in k else "relative" if "price" in k else "score units"
             if "wasserstein" in k else "metric" for k in keys}
    with tempfile.TemporaryDirectory() as tmp:
        path = plot_time_series(frame, keys, Path(tmp) / "monitoring_over_time.png", alerts=alerts, units=units,
                                title=f"Monitoring over periods (alerts marked: {len(alerts)})")
        c.log_artifact(parent_id, str(path))


@task(name="log-monitoring", **IO)
def log_monitoring(spec: RunSpec, plan: Plan, a: Assessment, force: bool) -> dict:
    """Parent run (model + reference window), child run for the period, parent time series: one unit."""
    uri = spec.tracking_uri()
    parent_key, child_key = run_keys(spec, plan)
    tags = {"classwatch.kind": "monitor", "classwatch.model": spec.name}
    parent_id = ensure_parent(uri, spec.mlflow.experiment, parent_key, f"{spec.name} monitoring",
                              {**spec.flat_params(), "reference_source": plan.reference},
                              {**tags, "classwatch.reference": plan.reference})
    step = sources.period_index(plan.period)
    ts = int(datetime.strptime(plan.period + "-01", "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp() * 1000)
    texts = {"monitoring_summary.md": summary_markdown(spec, plan, a)}
    if a.decision.alert:
        texts["alert.md"] = markdown(spec.name, plan.period, a.decision, None, uri)
    content = RunContent(
        f"{spec.name} {plan.period}",
        params={"period": plan.period, "current_source": plan.current, "reference_source": plan.reference,
                "labels": json.dumps(plan.labels, default=str), "headline_metric": a.headline_metric,
                "spec_fingerprint": spec.fingerprint()},
        metrics=a.metrics, tags={**tags, "classwatch.period": plan.period, **alert_tags(a.decision)},
        tables=a.tables, texts=texts, step=step, timestamp_ms=ts)

    def parent_series(_run_id: str) -> None:
        log_series(uri, parent_id, a.series, step, ts)
        _parent_plot(uri, parent_id, a.headline_metric)

    run_id, created = log_run(uri, spec.mlflow.experiment, child_key, content, parent_run_id=parent_id, force=force,
                              before_finish=parent_series)
    return {"run_id": run_id, "parent_run_id": parent_id, "created": created,
            "experiment_id": client(uri).get_run(run_id).info.experiment_id}


def _existing(spec: RunSpec, plan: Plan) -> dict | None:
    return finished_run(spec.tracking_uri(), spec.mlflow.experiment, run_keys(spec, plan)[1])


@flow(name="monitor_period")
def monitor_period(spec: Any = None, period: str = "", current: str | None = None, force: bool = False) -> dict:
    """Monitor one period of production data against the reference window.

    Parameters (JSON-able, for deployments): ``spec`` a YAML path or a dict (see RunSpec),
    ``period`` "YYYY-MM" or "previous" (the month before the scheduled start), ``current`` overrides ``data.current`` (may contain ``{period}``),
    ``force`` recomputes and re-logs a period that is already logged (the alert event keeps its
    deterministic id, so Prefect still delivers it once).

    Order: plan and check both sources (metadata) -> one pass over reference and current
    (concurrently) -> tests, headline check, alert decision -> MLflow (child run per period under
    a parent per model and reference window; FINISHED only when complete) -> alert event and
    artifact when the period alerts for the first time. Returns a summary dict.
    """
    s = load_spec(spec, data={"current": current})
    period = resolve_period(period)
    plan = plan_period(s, period)
    uri = s.tracking_uri()
    base = {"model": s.name, "period": period, "experiment": s.mlflow.experiment, "tracking_uri": uri}
    if not force:
        done = _existing(s, plan)
        if done is not None:
            tags = done["tags"]
            return {**base, "run_id": done["run_id"], "parent_run_id": tags.get("mlflow.parentRunId"),
                    "created": False, "alert": tags.get("classwatch.alert") == "retrain",
                    "reasons": [] if tags.get("classwatch.alert.reasons", "none") == "none"
                    else tags["classwatch.alert.reasons"].split("; "), "event_id": None,
                    "metrics": done["metrics"]}
    ref_future = summarise.submit(s, plan.reference, plan.ref_layout)
    cur_future = summarise.submit(s, plan.current, plan.cur_layout, plan.current_filter)
    a = assess(s, ref_future.result(), cur_future.result())
    logged = log_monitoring(s, plan, a, force)
    event = None
    if logged["created"] and a.decision.alert:
        event = raise_alert(s.name, period, a.decision, logged["run_id"], uri, logged["experiment_id"])
    return {**base, **logged, "alert": a.decision.alert, "reasons": list(a.decision.reasons), "event_id": event,
            "metrics": a.metrics}


__all__ = ["monitor_period", "run_keys", "experiment_id"]
