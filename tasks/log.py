"""Prefect task that logs a monitored period to MLflow: the parent run, the period's run, the parent's time series."""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
from prefect import task

from metrics_core.monitoring import KINDS, AlertPolicy
from metrics_core.monitoring.kinds import PanelSpec
from metrics_core.monitoring.estimate import PREFIX as ESTIMATE_PREFIX
from tasks import IO
from tasks.alerts import alert_tags, logged_alert, verdict
from tasks.config import sources
from tasks.config.spec import RunSpec
from tasks.metric_names import mlflow_metrics
from tasks.monitor import Assessment, History, Logged, Plan
from tasks.render.feature_panel import FEATURE_PLOT, PANELS, feature_frame, plot_features
from tasks.render.markdown import alert_markdown, parent_note, period_note, summary_markdown
from tasks.render.report_page import parent_report, period_report
from tasks.store.keys import MAP_FILE, map_text
from tasks.store.mlflow import MlflowStore, RunContent, ui_link

#: MLflow's run description (shown on the run page's Overview).
NOTE = "mlflow.note.content"
#: The report page's artifact name, on the period's run and on the parent run (across periods).
REPORT_PAGE = "report.html"


@dataclass(frozen=True)
class Panel:
    """One panel of monitoring_over_time.png: the column drawn, its label in words, its threshold
    (a number or a per-period column), the test kinds whose alerts it marks, further lines."""

    column: str
    label: str
    threshold: object
    kinds: tuple[str, ...]
    legend: str | None = None
    extra: tuple[tuple[str, str], ...] = ()
    band: tuple[str, str] | None = None
    threshold_legend: str = "practical threshold"


def panels(policy: AlertPolicy, headline: str) -> list[Panel]:
    """The watched quantities of the over-time plot, each with its threshold under ``policy``: the
    panels the registered test kinds declare (:attr:`metrics_core.monitoring.Kind.panel`), top to
    bottom, each marking the alerts of the kinds that share it.

    >>> [p.column for p in panels(AlertPolicy(), "f1")][::5], panels(AlertPolicy(psi=0.2), "f1")[1].threshold
    (['prevalence_change', 'f1'], 0.2)
    """
    out = []
    for spec in _panel_specs(headline):
        threshold = spec.threshold_column if spec.threshold is None else getattr(policy, spec.threshold) * spec.scale
        out.append(Panel(spec.column, spec.label, threshold, _panel_kinds(spec), spec.legend,
                         tuple((column, legend) for column, _, legend in spec.extra), spec.band,
                         spec.threshold_legend))
    return out


def _panel_specs(headline: str) -> list[PanelSpec]:
    """The kinds' panels, one per column, top to bottom, named for ``headline``."""
    specs = {k.panel.column: k.panel for k in KINDS.values() if k.panel is not None}
    names = {"headline": headline, "estimated": f"{ESTIMATE_PREFIX}{headline}"}
    return [s.named(**names) for s in sorted(specs.values(), key=lambda s: s.position)]


def _panel_kinds(spec: PanelSpec) -> tuple[str, ...]:
    """The kinds whose alerts a panel marks: those declaring it."""
    return tuple(k.name for k in KINDS.values() if k.panel is not None and k.panel.position == spec.position)


def over_time(history: History, period: str, metrics: dict, reasons, headline: str,
              policy: AlertPolicy | None = None) -> tuple[pl.DataFrame, list[Panel], dict]:
    """The over-time plot's table: one row per logged period (from ``history``, metrics read back
    under their semantic keys) and the period at hand (``metrics``, ``reasons``), in time order;
    the panels with data; per panel, the periods whose alert a test of that panel raised.

    The frame's column ``<panel>_in_segment`` says per period whether only tests within segments
    raised the panel's alert (its whole-period line need not cross the threshold then), and
    ``<panel>_alert_at`` holds the height of the panel's alert mark:
    the value of the line whose metric raised the alert (the headline's reason names its metric, the
    measured ``f1`` or the estimated ``estimated/f1``; another kind's its summary metric,
    :attr:`~metrics_core.monitoring.Kind.worst`; the higher when two lines did), else (error cells
    drawn by no line, a run logged without reason records) the highest line of the panel; nan
    without an alert.

    >>> h = History("2024-02", "p", "p|2024-02")
    >>> frame, shown, alerts = over_time(h, "2024-02", {"alert": 1.0, "max_score_wasserstein": 0.1}, (), "f1")
    >>> [p.column for p in shown], frame["period"].to_list(), alerts
    (['max_score_wasserstein'], ['2024-02'], {'max_score_wasserstein': ['2024-02']})
    >>> frame["max_score_wasserstein_alert_at"].to_list()
    [0.1]
    """
    policy = policy or AlertPolicy()
    logged = history.with_period(period, metrics, metrics.get("alert") == 1.0, reasons)
    rows = {p: (m, why) for p, (m, _, why) in logged}
    periods = list(rows)

    def col(key: str, scale: float = 1.0) -> list[float]:
        return [float(rows[p][0].get(key, math.nan)) * scale for p in periods]

    columns = {"period": periods}
    specs = {s.column: s for s in _panel_specs(headline)}
    for spec in specs.values():  # each panel's lines, interval and per-period threshold
        for column, metric in ((spec.column, spec.metric), *((c, m) for c, m, _ in spec.extra)):
            columns[column] = col(metric, spec.scale)
        for column in (*(spec.band or ()), *([spec.threshold_column] if spec.threshold_column else [])):
            columns[column] = col(column)
    frame = pl.DataFrame(columns)
    shown = [p for p in panels(policy, headline)
             if any(math.isfinite(v) for c in (p.column, *(e for e, _ in p.extra)) for v in frame[c])]
    alerts: dict[str, list[str]] = {p.column: [] for p in shown}
    marks = {p.column: [math.nan] * len(periods) for p in shown}
    inside = {p.column: [False] * len(periods) for p in shown}
    for i, period_ in enumerate(periods):
        m, why = rows[period_]
        kinds = {r.kind for r in why}
        for p in shown:  # an alert without its records (logged before they existed) is marked on every panel
            if (kinds & set(p.kinds)) or (m.get("alert") == 1.0 and not why):
                alerts[p.column].append(period_)
                raised = [r for r in why if r.kind in p.kinds]
                marks[p.column][i] = _mark_height(frame, i, specs[p.column], raised)
                inside[p.column][i] = bool(raised) and all(r.key.segment for r in raised)
    frame = frame.with_columns([*(pl.Series(f"{c}_alert_at", v, dtype=pl.Float64) for c, v in marks.items()),
                                *(pl.Series(f"{c}_in_segment", v, dtype=pl.Boolean) for c, v in inside.items())])
    return frame, shown, alerts


def _mark_height(frame: pl.DataFrame, row: int, spec: PanelSpec, reasons: list) -> float:
    """Where a panel's alert mark sits in period ``row``: on the highest of the lines whose metric one
    of ``reasons`` names (the headline's by its metric, another kind's by its summary metric), else
    on the highest finite line of the panel."""
    lines = [(spec.column, spec.metric), *((c, m) for c, m, _ in spec.extra)]
    named = {r.key.cls if r.kind == "headline" else KINDS[r.kind].worst for r in reasons}
    def finite(columns):
        return [v for v in (frame[c][row] for c in columns) if v is not None and math.isfinite(v)]

    heights = finite(c for c, m in lines if m in named) or finite(c for c, _ in lines)
    return max(heights) if heights else math.nan


def _plot(spec: RunSpec, history: History, period: str, a: Assessment, folder: Path) -> Path:
    from tasks.render.timeseries import plot_time_series

    frame, shown, alerts = over_time(history, period, a.metrics, a.assessment.reasons, a.assessment.headline_metric,
                                     AlertPolicy.of(spec.alerts))
    n_alerts = len({p for v in alerts.values() for p in v})
    return plot_time_series(
        frame, [p.column for p in shown], folder / "monitoring_over_time.png", alerts=alerts,
        labels={p.column: p.label for p in shown}, thresholds={p.column: p.threshold for p in shown},
        legends={p.column: p.legend for p in shown if p.legend}, extra={p.column: p.extra for p in shown},
        bands={p.column: p.band for p in shown if p.band}, xlabel="period (month)",
        threshold_legends={p.column: p.threshold_legend for p in shown},
        marks={p.column: f"{p.column}_alert_at" for p in shown},
        within={p.column: f"{p.column}_in_segment" for p in shown},
        title=f"{spec.name}: monitoring over periods, {n_alerts} with an alert\n"
              "dashed: practical threshold; red: alert raised by this panel's test (hollow: within a segment)")


def feature_series(history: History, period: str, a: Assessment) -> pl.DataFrame | None:
    """The input features' summary per period (:func:`tasks.render.feature_panel.feature_frame`): the
    logged periods' metrics read back under their semantic keys and their reason records (from
    ``history``), and the period at hand; None when no period watched features."""
    rows = history.with_period(period, a.metrics, a.assessment.alert, a.assessment.reasons)
    return feature_frame([p for p, _ in rows], [m for _, (m, _, _) in rows], [why for _, (_, _, why) in rows])


def _feature_plot(spec: RunSpec, frame: pl.DataFrame | None, folder: Path) -> Path | None:
    if frame is None:
        return None
    policy = AlertPolicy.of(spec.alerts)
    alerting = int((frame["n_features_alerting"].fill_nan(0) > 0).sum())
    return plot_features(frame, {p.metric: getattr(policy, p.policy_field) for p in PANELS}, folder / FEATURE_PLOT,
                         title=f"{spec.name}: input features over periods, {alerting} with a feature alerting\n"
                               "largest effect of each family of tests; red: alert, with the features it names")


def _period_ms(period: str) -> int:
    start = sources.period_bounds(period)[0]  # the first day of a month, ISO week or day
    return int(datetime(start.year, start.month, start.day, tzinfo=timezone.utc).timestamp() * 1000)


def period_run_name(model: str, period: str, alert: bool) -> str:
    """The period run's name: period first, then the verdict, in the 13 characters the runs table
    shows of a child run's name (MLflow 3.17 at its default column width).

    >>> period_run_name("price-classifier", "2024-08", True), period_run_name("m", "2024-07", False)
    ('2024-08 ALERT · price-classifier', '2024-07 ok · m')
    """
    return f"{period} {'ALERT' if alert else 'ok'} · {model}"


def period_content(spec: RunSpec, plan: Plan, a: Assessment) -> RunContent:
    """The period run's params, metrics (under their MLflow names), tags, description, tables,
    summary and, when a class's key differs from its name, the map of keys to classes
    (:data:`tasks.store.keys.MAP_FILE`); the alert markdown is added once the run id is known."""
    judged = a.assessment
    tags = {"classwatch.kind": "monitor", "classwatch.model": spec.name, "classwatch.period": plan.period,
            **alert_tags(judged.decision), NOTE: period_note(plan, judged)}
    return RunContent(
        period_run_name(spec.name, plan.period, judged.alert),
        params={"period": plan.period, "current_source": plan.current, "reference_source": plan.reference,
                "labels": json.dumps(plan.labels, default=str, ensure_ascii=False),
                "headline_metric": judged.headline_metric,
                "spec_fingerprint": spec.fingerprint()},
        metrics=dict(sorted(mlflow_metrics(a.metrics, judged.headline_metric).items())), tags=tags,
        tables=dict(judged.tables),
        texts={"monitoring_summary.md": summary_markdown(plan, judged, spec.columns.period, spec.alerts),
               **({MAP_FILE: map_text(a.class_keys)} if a.class_keys else {})},
        step=sources.period_step(plan.period), timestamp_ms=_period_ms(plan.period))


def parent_series(series: dict, headline: str) -> dict:
    """The parent's time series under their MLflow names, in chart order, without the headline's floor
    and reference value (constant under one reference window; they stay in the period runs).

    >>> list(parent_series({"n_rows": 5, "f1": 0.8, "f1_floor": 0.7, "alert": 0.0}, "f1"))
    ['1 headline and alert/alert', '1 headline and alert/f1', '6 counts/rows']
    """
    kept = {k: v for k, v in series.items() if k not in (f"{headline}_floor", f"{headline}_reference")}
    return dict(sorted(mlflow_metrics(kept, headline).items()))


def _parent_tags(spec: RunSpec, plan: Plan, history: History, alert: bool, run_id: str | None = None,
                 experiment_id: str | None = None) -> dict:
    """The parent's description: its periods, each linked to its run (``run_id``: this period's)."""
    verdicts = {p: logged_alert(run.tags) for p, run in history.periods.items()}
    verdicts[plan.period] = alert
    runs = {p: run.run_id for p, run in history.periods.items()} | ({plan.period: run_id} if run_id else {})
    links = {p: ui_link(experiment_id, r) for p, r in runs.items()} if experiment_id else {}
    return {NOTE: parent_note(spec.name, plan.reference, verdicts, links)}


@task(name="log-monitoring", **IO)
def log_period(spec: RunSpec, store: MlflowStore, plan: Plan, a: Assessment, history: History) -> Logged:
    """Parent run (model + reference window, created once), the period's run (replacing any earlier
    run of the period), the parent's time series, description and over-time plot: FINISHED only
    when all is logged.

    The plot is drawn from ``history`` (the periods logged before, found by
    :func:`tasks.monitor.monitoring_history`) and this period's metrics: nothing is read back.
    """
    tags = {"classwatch.kind": "monitor", "classwatch.model": spec.name, "classwatch.reference": plan.reference}
    parent_id = store.ensure_parent(history.parent_key, f"{spec.name} monitoring",
                                    {**spec.flat_params(), "reference_source": plan.reference}, tags,
                                    existing=history.parent.run_id if history.parent else None)
    content = period_content(spec, plan, a)
    text = None
    with store.new_run(history.child_key, content.name, parent_run_id=parent_id, replaces=history.leftovers) as run_id, \
            tempfile.TemporaryDirectory(prefix="classwatch-plot-") as tmp:
        if a.assessment.alert:
            text = content.texts["alert.md"] = alert_markdown(spec.name, plan.period, a.assessment.decision, run_id,
                                                               store.tracking_uri, store.experiment_id())
        plot = _plot(spec, history, plan.period, a, Path(tmp))
        features = feature_series(history, plan.period, a)
        feature_plot = _feature_plot(spec, features, Path(tmp))
        content.texts[REPORT_PAGE] = period_report(spec.name, plan.period, a.assessment, a.metrics, plot, feature_plot)
        store.write(run_id, content)
        store.log_batches(parent_id, parent_series(a.series, a.assessment.headline_metric),
                          tags=_parent_tags(spec, plan, history, a.assessment.alert, run_id, store.experiment_id()),
                          step=content.step, timestamp_ms=content.timestamp_ms)
        page = parent_report(spec.name, period_rows(history, plan.period, a), plot, features, feature_plot)
        texts = {REPORT_PAGE: page} | ({MAP_FILE: map_text(a.class_keys)} if a.class_keys else {})  # its series' keys
        store.log_artifacts(parent_id, texts=texts,
                            files={plot.name: plot} | ({feature_plot.name: feature_plot} if feature_plot else {}))
    return Logged(run_id, parent_id, store.experiment_id(), text)


def period_rows(history: History, period: str, a: Assessment) -> list[dict]:
    """One row per period for the page across periods, in time order: the logged periods (from
    ``history``) and the period at hand (verdict, rows, headline or its estimate, reasons, the
    strongest reason, the segments its reasons name)."""
    metric = a.assessment.headline_metric
    rows = []
    for p, (m, alert, why) in history.with_period(period, a.metrics, a.assessment.alert, a.assessment.reasons):
        rows.append({"period": p, "verdict": verdict(alert, m), "rows": m.get("n_rows"),
                     metric: m.get(metric), f"estimated {metric}": m.get(f"{ESTIMATE_PREFIX}{metric}"),
                     "reasons": len(why), "strongest reason": why[0].summary if why else "",
                     "segments": ", ".join(dict.fromkeys(r.key.segment_text for r in why if r.key.segment))})
    return rows
