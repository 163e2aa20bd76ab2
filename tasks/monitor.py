"""Prefect tasks of monitor_period: find a logged period, plan (metadata only), summarise a source, assess a period."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

import metrics_core as mc
from metrics_core import monitoring as mon
from metrics_core.contract import Layout
from metrics_core.monitoring import DEFAULT_HEADLINE
from tasks import IO
from tasks.alerts import reasons_from_tags
from tasks.config import sources
from tasks.config.spec import RunSpec, fingerprint
from tasks.store.mlflow import RUN_KEY, MlflowStore, RunSummary, safe_key

__all__ = ["Plan", "Assessment", "History", "PeriodResult", "run_keys", "resolve_period",
           "Logged", "bins_of", "logged_period", "plan_period", "summarise", "assess", "open_store"]

#: Metrics of a period that make up the parent's time series (key prefixes; plus the headline metric).
SERIES = ("n_rows", "alert", "max_", "psi_class_mix", "prevalence_pred/", "prevalence_label/")


def bins_of(spec: RunSpec) -> mon.Bins:
    """The fixed bins of the spec's ``monitor`` settings."""
    m = spec.monitor
    return mon.Bins(m.score_bins, tuple(m.score_range), m.price_bins_per_decade, tuple(m.price_range))


def open_store(spec: RunSpec) -> MlflowStore:
    """The MLflow store of a flow run (no call to the store yet)."""
    return MlflowStore(spec.tracking_uri(), spec.mlflow.experiment)


def run_keys(spec: RunSpec, period: str) -> tuple[str, str]:
    """(parent key, child key): model and reference window, then the period; from the spec alone.

    The reference window is its resolved path, the spec's class list (as ordered for the task;
    None when the classes are discovered from the data), the task and the binning, so a period
    is found in MLflow before any data is read.

    >>> parent, child = run_keys(RunSpec(name="m", data={"reference": "/d/ref.parquet"}), "2024-08")
    >>> parent.startswith("monitor|m|"), child == parent + "|2024-08"
    (True, True)
    """
    reference, _ = sources.source_for(spec, "reference")
    labels = sources.class_list(spec, reference) if spec.labels is not None else None
    ref = fingerprint(sources.describe_source(reference), labels, spec.task, spec.monitor.model_dump())
    parent = f"monitor|{spec.name}|{ref}"
    return parent, f"{parent}|{sources.check_period(period)}"


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


@dataclass(frozen=True)
class Logged:
    """Where a period went in MLflow, and the alert markdown logged with it (None without an alert)."""

    run_id: str
    parent_run_id: str
    experiment_id: str
    alert_markdown: str | None = None


@dataclass(frozen=True)
class PeriodResult:
    """What monitor_period returns for one period: where it is logged, the alert and its reasons."""

    model: str
    period: str
    tracking_uri: str
    experiment: str
    experiment_id: str | None
    run_id: str
    parent_run_id: str | None
    created: bool
    alert: bool
    reasons: tuple[mon.Reason, ...]
    metrics: dict
    event_id: str | None = None

    @property
    def labelled(self) -> bool:
        """Whether the period had labels (performance was measured)."""
        return any(k.startswith("perf/") for k in self.metrics)

    @classmethod
    def from_run(cls, spec: RunSpec, store: MlflowStore, period: str, run: RunSummary) -> "PeriodResult":
        """The result of a period logged before (its tags and metrics as the search returned them)."""
        tags = run.tags
        return cls(spec.name, period, store.tracking_uri, store.experiment, run.experiment_id, run.run_id,
                   tags.get("mlflow.parentRunId"), False, tags.get("classwatch.alert") == "retrain",
                   reasons_from_tags(tags), dict(run.metrics))

    @classmethod
    def from_assessment(cls, spec: RunSpec, store: MlflowStore, period: str, logged: Logged, a: "Assessment",
                        event_id: str | None) -> "PeriodResult":
        """The result of a period just assessed and logged."""
        return cls(spec.name, period, store.tracking_uri, store.experiment, logged.experiment_id, logged.run_id,
                   logged.parent_run_id, True, a.decision.alert, a.decision.reasons, dict(a.metrics), event_id)


@dataclass(frozen=True)
class History:
    """A model's monitoring runs under one reference window, from one search: the parent run, the
    FINISHED period runs by period, and every run (any status) of the period at hand."""

    period: str
    parent_key: str
    child_key: str
    parent: RunSummary | None = None
    periods: dict[str, RunSummary] = field(default_factory=dict)
    leftovers: tuple[str, ...] = ()

    @property
    def done(self) -> RunSummary | None:
        """The FINISHED run of the period at hand, if any."""
        return self.periods.get(self.period)


def _history(store: MlflowStore, period: str, parent_key: str, child_key: str) -> History:
    parent, periods, leftovers = None, {}, []
    for run in store.runs_under(parent_key):  # newest first
        key = run.data.tags[RUN_KEY]
        if key == parent_key:
            parent = parent or RunSummary.of(run)
            continue
        logged = run.data.tags.get("classwatch.period", key.rsplit("|", 1)[1])
        if run.info.status == "FINISHED" and logged not in periods:
            periods[logged] = RunSummary.of(run)
        elif key == child_key:
            leftovers.append(run.info.run_id)
    if period in periods:  # a forced re-run replaces every run of the period
        leftovers.append(periods[period].run_id)
    return History(period, parent_key, child_key, parent, periods, tuple(leftovers))


@task(name="find-logged-period", **IO)
def logged_period(spec: RunSpec, store: MlflowStore, period: str) -> History:
    """The model's monitoring runs in MLflow (one search, no data read): the parent, the logged
    periods (the over-time plot's history) and whether ``period`` is logged already."""
    return _history(store, period, *run_keys(spec, period))


@dataclass(frozen=True)
class Plan:
    """What monitor_period will read: sources, row filters, column layouts, class list."""

    model: str
    period: str
    reference: str
    current: str
    current_filter: object
    labels: list
    ref_layout: Layout
    cur_layout: Layout


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
def summarise(spec: RunSpec, source: str, layout: Layout, row_filter=None) -> mon.PeriodStats:
    """One pass over ``source``: the mergeable monitoring statistics (metrics_core.monitoring)."""
    return mon.scan_period(source, spec.task, layout.labels, bins_of(spec), label=layout.label,
                           prediction=layout.prediction, scores=layout.scores, price=layout.price,
                           weight=layout.weight, threshold=spec.threshold, filter=row_filter,
                           batch_rows=spec.monitor.batch_size)


@dataclass(frozen=True)
class Assessment:
    """A period's verdict and everything to log: flat metrics, the parent's series, tables."""

    decision: mon.Alert
    metrics: dict
    series: dict
    tables: dict
    headline_metric: str


def _report(spec: RunSpec, stats: mon.PeriodStats):
    if stats.performance is None:
        return None
    from_stats = mc.binary_from_stats if spec.task == "binary" else mc.multiclass_from_stats
    return from_stats(stats.performance, **spec.report_options())


def _headline(spec: RunSpec, metric: str, ref_report, cur_report) -> mon.Headline | None:
    """The headline metric of the period (value, interval) and of the reference; None without labels."""
    if cur_report is None:
        return None
    if metric not in cur_report.metrics:
        raise ValueError(f"headline_metric: {metric!r} is not a metric of the {spec.task} report; "
                         f"choose one of {sorted(cur_report.metrics)[:30]}.")
    ref_value = ref_report.metrics.get(metric) if ref_report is not None else None
    return mon.Headline(metric, cur_report.metrics[metric], cur_report.intervals.get(metric), ref_value)


def _headline_metrics(headline: mon.Headline | None, floor: float | None) -> dict:
    if headline is None:
        return {}
    m = headline.metric
    out = {m: headline.value}
    if headline.interval is not None:
        out[f"{m}_ci_low"], out[f"{m}_ci_high"] = headline.interval
    if floor is not None:
        out[f"{m}_floor"] = floor
    if headline.reference is not None:
        out[f"{m}_reference"] = headline.reference
    return out


def _test_metrics(tests: dict) -> dict:
    """Per test: the watched value (prevalence, PSI, score shift, median price and its shift)."""
    out = {}
    for key, t in tests.items():
        if key.kind.startswith("prevalence"):
            out[f"{key.kind}/{key.cls}"] = t.details["p_current"]
        elif key.kind.startswith("class_mix"):
            out[f"psi_{key.kind}"] = t.effect_size
        elif key.kind == "score":
            out[f"score_wasserstein/{key.cls}"] = t.effect_size
            out[f"score_psi/{key.cls}"] = t.details["psi"]
        elif key.kind == "price":
            out[f"price_median/{key.cls}"] = t.details["median_current"]
            out[f"price_shift/{key.cls}"] = t.effect_size

    def worst(*kinds: str) -> float:
        vals = [abs(t.effect_size) for k, t in tests.items() if k.kind in kinds and np.isfinite(t.effect_size)]
        return max(vals) if vals else float("nan")

    out.update({"max_abs_prevalence_change_pred": worst("prevalence_pred"),
                "max_abs_prevalence_change_label": worst("prevalence_label"),
                "max_score_wasserstein": worst("score"), "max_abs_price_shift": worst("price")})
    return out


def _per_class(ref: mon.PeriodStats, cur: mon.PeriodStats, tests: dict) -> pl.DataFrame:
    rows = []
    share = cur.weight_by_pred / cur.weight_by_pred.sum() if cur.weight_by_pred is not None \
        and cur.weight_by_pred.sum() > 0 else np.full(cur.labels.size, np.nan)
    for j, name in enumerate(ref.class_names()):
        score = tests.get(mon.TestKey("score", name))
        price = tests.get(mon.TestKey("price", name))
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
            "expenditure_share_current": float(share[j]),
        })
    return pl.DataFrame(rows)


@task(name="assess-period", cache_policy=NO_CACHE)
def assess(spec: RunSpec, reference: mon.PeriodStats, current: mon.PeriodStats) -> Assessment:
    """Tests, headline and alert decision of a period (metrics_core.monitoring), plus what to log."""
    tests = mon.compare(reference, current)
    metric = spec.headline_metric or DEFAULT_HEADLINE
    cur_report = _report(spec, current)
    headline = _headline(spec, metric, _report(spec, reference), cur_report)
    policy = mon.AlertPolicy.of(spec.alerts)
    decision = mon.decide_alert(tests, policy, headline)
    metrics: dict = {"n_rows": current.n_rows, "n_rows_reference": reference.n_rows}
    if cur_report is not None:
        metrics.update({f"perf/{k}": v for k, v in cur_report.metrics.items()})
    metrics.update(_headline_metrics(headline, policy.floor(headline.reference) if headline else None))
    metrics.update({f"p_adj/{name}": p for name, p in zip(decision.table["name"], decision.table["p_adjusted"])})
    metrics.update(_test_metrics(tests))
    metrics.update({"n_tests": decision.table.height, "n_alert_reasons": len(decision.reasons),
                    "alert": float(decision.alert)})
    metrics = {safe_key(k): v for k, v in metrics.items()}
    series = {k: v for k, v in metrics.items() if k.startswith((*SERIES, metric))}
    tables = {"drift_table.json": decision.table, "per_class_monitoring.json": _per_class(reference, current, tests)}
    impact = mon.price_impact_binned(current, policy.alpha)
    if impact is not None:
        tables["price_impact.json"] = impact
    if cur_report is not None and cur_report.per_class is not None:
        tables["per_class_performance.json"] = cur_report.per_class
    return Assessment(decision, metrics, series, tables, metric)
