"""Prefect tasks of monitor_period: find its history, plan (metadata only), scan a source, assess against the reference."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from datetime import datetime, timedelta, timezone

import pyarrow.dataset as pads
from prefect import task
from prefect.cache_policies import NO_CACHE

from metrics_core import monitoring as mon
from metrics_core.contract import Layout, missing_columns
from metrics_core.dataset import Part, open_dataset, partition_groups
from metrics_core.errors import NoRowsError
from metrics_core.monitoring.scan import check_period_stats
from tasks import IO
from tasks.alerts import logged_alert, reasons_from_tags, verdict
from tasks.config import sources
from tasks.config.spec import ColumnMap, RunSpec, fingerprint, spark_master
from tasks.metric_names import class_keyed, semantic_metrics, series_keys
from tasks.spark import period_stats
from tasks.store.mlflow import RUN_KEY, MlflowStore, RunSummary, safe_key

__all__ = ["Plan", "Assessment", "History", "PeriodResult", "run_keys", "resolve_period", "scheduled_period",
           "Logged", "bins_of", "labels_arrived", "monitoring_history", "plan_period", "scan_source_stats",
           "source_groups", "scan_source_part", "checked_source_stats", "assess_against_reference", "open_store"]

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
    """A period as given (``YYYY-MM``, ``YYYY-Www``, ``YYYY-MM-DD``), or the one before the flow run's
    scheduled start (else before ``now``, UTC): ``"previous"`` (or ``""``) the month before (what a
    monthly schedule passes), ``"previous-week"`` the ISO week before, ``"previous-day"`` the day before.

    >>> now = datetime(2026, 1, 2, tzinfo=timezone.utc)
    >>> resolve_period("previous", now), resolve_period("previous-week", now), resolve_period("previous-day", now)
    ('2025-12', '2025-W52', '2026-01-01')
    """
    if period not in ("", "previous", "previous-week", "previous-day"):
        return sources.check_period(period)
    if now is None:
        from prefect.runtime import flow_run

        now = flow_run.scheduled_start_time or datetime.now(timezone.utc)
    if period == "previous-week":
        y, w, _ = (now - timedelta(days=7)).isocalendar()
        return f"{y}-W{w:02d}"
    if period == "previous-day":
        return (now - timedelta(days=1)).strftime("%Y-%m-%d")
    y, m = now.year, now.month - 1
    return f"{y - 1}-12" if m == 0 else f"{y}-{m:02d}"


def scheduled_period(cron: str) -> str:
    """The ``period`` a schedule passes, matched to its cron: daily (day of month and of week both
    ``*``) -> ``"previous-day"``, weekly (day of week set) -> ``"previous-week"``, else the month.

    >>> scheduled_period("0 6 2 * *"), scheduled_period("0 6 * * 1"), scheduled_period("30 5 * * *")
    ('previous', 'previous-week', 'previous-day')
    """
    fields = cron.split()
    if len(fields) != 5:
        raise ValueError(f"cron: expected 5 fields (minute hour day-of-month month day-of-week), got {cron!r}.")
    dom, dow = fields[2], fields[4]
    if dom == "*":
        return "previous-day" if dow == "*" else "previous-week"
    return "previous"


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

    @property
    def verdict(self) -> str:
        """``"retrain"``, ``"not enough labels to judge"`` (the headline test could not see a drop of
        ``metric_drop``: metric ``not_enough_labels``) or ``"no alert"`` (:func:`tasks.alerts.verdict`)."""
        return verdict(self.alert, self.metrics)

    @classmethod
    def from_run(cls, spec: RunSpec, store: MlflowStore, period: str, run: RunSummary) -> "PeriodResult":
        """The result of a period logged before (its tags and metrics as the search returned them)."""
        tags = run.tags
        return cls(spec.name, period, store.tracking_uri, store.experiment, run.experiment_id, run.run_id,
                   tags.get("mlflow.parentRunId"), False, logged_alert(tags),
                   reasons_from_tags(tags), semantic_metrics(run.metrics))

    @classmethod
    def from_assessment(cls, spec: RunSpec, store: MlflowStore, period: str, logged: Logged, a: "Assessment",
                        event_id: str | None) -> "PeriodResult":
        """The result of a period just assessed and logged."""
        decision = a.assessment.decision
        return cls(spec.name, period, store.tracking_uri, store.experiment, logged.experiment_id, logged.run_id,
                   logged.parent_run_id, True, decision.alert, decision.reasons, dict(a.metrics), event_id)


@dataclass(frozen=True)
class History:
    """A model's monitoring runs under one reference window, from one search: the FINISHED parent
    run, the FINISHED period runs by period, and every run (any status) of the period at hand."""

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

    @cached_property
    def read_back(self) -> dict[str, tuple[dict, bool, tuple]]:
        """Each logged period's (metrics under their semantic keys, alert, reason records), read from
        its run once for every panel and page drawn from them."""
        return {p: (semantic_metrics(run.metrics), logged_alert(run.tags), reasons_from_tags(run.tags))
                for p, run in self.periods.items()}

    def with_period(self, period: str, metrics: dict, alert: bool, reasons) -> list[tuple[str, tuple]]:
        """:attr:`read_back` with ``period`` as computed now (its ``metrics``, ``alert``, ``reasons``, in
        place of any run logged before), as (period, (metrics, alert, reasons)) in time order."""
        rows = {**self.read_back, period: (metrics, alert, tuple(reasons))}
        return [(p, rows[p]) for p in sorted(rows, key=sources.period_index)]


def _history(store: MlflowStore, period: str, parent_key: str, child_key: str) -> History:
    parent, periods, leftovers = None, {}, []
    for run in store.runs_under(parent_key):  # newest first
        key = run.data.tags[RUN_KEY]
        if key == parent_key:  # a parent left unfinished by a crash is completed by ensure_parent
            parent = parent or (RunSummary.of(run) if run.info.status == "FINISHED" else None)
            continue
        logged = run.data.tags.get("classwatch.period", key.rsplit("|", 1)[1])
        if run.info.status == "FINISHED" and logged not in periods:
            periods[logged] = RunSummary.of(run)
        elif key == child_key:
            leftovers.append(run.info.run_id)
    if period in periods:  # a forced re-run replaces every run of the period
        leftovers.append(periods[period].run_id)
    return History(period, parent_key, child_key, parent, periods, tuple(leftovers))


@task(name="find-monitoring-history", **IO)
def monitoring_history(spec: RunSpec, store: MlflowStore, period: str) -> History:
    """The model's monitoring runs in MLflow (one search, no data read): the parent, the logged
    periods (the over-time plot's history) and whether ``period`` is logged already."""
    return _history(store, period, *run_keys(spec, period))


@task(name="labels-arrived", **IO)
def labels_arrived(spec: RunSpec, period: str, run: RunSummary) -> bool:
    """Whether ``period``, logged without labels, now has labels in its delivery (a label column
    with a label in it: the column's validity is counted, no other column read): then the period is
    assessed again and its run replaced, so the measured performance takes the place of the
    estimate (which stays logged as ``estimated/<key>``)."""
    if any(k.startswith("perf/") for k in semantic_metrics(run.metrics)):
        return False
    try:
        current, rows = sources.source_for(spec, "current", period)
        data = sources.open_dataset(current)
        if spec.columns.label not in data.schema.names:
            return False
        # a label column without a label (a delivery whose sample is not labelled yet) has not arrived
        labelled = pads.field(spec.columns.label).is_valid()
        return data.count_rows(filter=labelled if rows is None else rows & labelled) > 0
    except (OSError, ValueError):  # the delivery is gone or unreadable: keep the logged run
        return False


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
    # the reference window is fully labelled: a design-weight column there is not read (nor required of the period)
    ref_layout = dataclasses.replace(sources.layout(spec, reference, labels, require_labels=False), design_weight=None)
    cur_layout = sources.layout(spec, current, labels, require_labels=False)
    named = spec.columns.design_weight
    if named and named != ColumnMap.model_fields["design_weight"].default and cur_layout.design_weight is None:
        raise missing_columns(current, {named: "design_weight"}, open_dataset(current).schema.names)
    sources.check_same_schema(reference, current, ref_layout, cur_layout)
    return Plan(spec.name, period, reference, current, cur_filter, labels, ref_layout, cur_layout)


def _scan_options(spec: RunSpec, layout: Layout, current: bool) -> dict:
    """The options of :func:`metrics_core.monitoring.scan_period` for a source of ``spec`` (the
    reference window, or the ``current`` period), the same on every runner."""
    return dict(label=layout.label, prediction=layout.prediction, scores=layout.scores, price=layout.price,
                weight=layout.weight, threshold=spec.threshold, batch_rows=spec.monitor.batch_size,
                open_classes=current and spec.classes == "open", partial_labels=current,
                design_weight=layout.design_weight if current else None, segments=spec.columns.segments,
                features=layout.features)


@task(name="scan-source-stats", **IO)
def scan_source_stats(spec: RunSpec, source: str, layout: Layout, row_filter=None, current: bool = False
                      ) -> mon.PeriodStats:
    """One pass over ``source``: its mergeable monitoring statistics (:func:`metrics_core.monitoring.scan_period`).

    For the ``current`` period with the spec's ``classes: open`` (the default), rows of a class
    outside the class list are counted and left out; the reference always keeps the list closed.
    The ``current`` period's labels may be a sample (a null label marks an unlabelled row, weighted
    by ``columns.design_weight`` when the delivery has it); the reference is fully labelled.
    A period column without a row of the period is an error that shows the column's values.
    """
    options = _scan_options(spec, layout, current)
    try:
        master = spark_master(spec.task_runner)
        if master is not None:  # the map over partitions and the merge tree run on Spark's executors
            return period_stats(master, source, spec.task, layout.labels, bins_of(spec), filter=row_filter, **options)
        return mon.scan_period(source, spec.task, layout.labels, bins_of(spec), filter=row_filter, **options)
    except NoRowsError:
        if row_filter is None:
            raise
        raise sources.no_period_rows(spec, source) from None


@task(name="plan-source-parts", **IO)
def source_groups(source: str, row_filter=None, tasks: int = 2) -> list[list[Part]]:
    """The partition groups of a distributed scan of ``source``, about ``tasks`` of them
    (:func:`metrics_core.dataset.partition_groups`: Parquet metadata only); empty for no rows."""
    return partition_groups(source, filter=row_filter, tasks=tasks)[0]


@task(name="scan-source-part", **IO)
def scan_source_part(spec: RunSpec, source: str, layout: Layout, parts: list[Part], row_filter=None,
                     current: bool = False) -> mon.PeriodStats | None:
    """The map step of a distributed scan: the monitoring statistics of some partitions of
    ``source`` (:func:`metrics_core.monitoring.scan_period` with ``parts``, one thread: the cluster
    runs a task per core); None when they hold no row. The options are :func:`scan_source_stats`'s."""
    return mon.scan_period(source, spec.task, layout.labels, bins_of(spec), filter=row_filter, threads=1,
                           parts=parts, **_scan_options(spec, layout, current))


def checked_source_stats(spec: RunSpec, source: str, layout: Layout, merged: mon.PeriodStats | None,
                         row_filter=None) -> mon.PeriodStats:
    """The merged statistics of a distributed scan after the checks of the whole source
    (:func:`metrics_core.monitoring.scan.check_period_stats`), with :func:`scan_source_stats`'s
    errors: no rows at all, or none of the period in its period column."""
    try:
        return check_period_stats(merged, str(source), spec.task, bins_of(spec), prediction=layout.prediction,
                                  threshold=spec.threshold, filter=row_filter)
    except NoRowsError:
        if row_filter is None:
            raise
        raise sources.no_period_rows(spec, source) from None


@dataclass(frozen=True)
class Assessment:
    """A period judged against its reference, as the flow logs it: the judgement (``assessment``:
    decision, tests, headline, tables) with what logging adds, its ``metrics`` under MLflow-safe
    keys (each class under its key, :func:`tasks.metric_names.class_keyed`), the parent run's time
    ``series`` picked out of them, and ``class_keys``: {key: class name} of the keys that differ
    from their class name (logged as ``class_keys.json``)."""

    assessment: mon.PeriodAssessment
    metrics: dict
    series: dict
    class_keys: dict = field(default_factory=dict)


@task(name="assess-against-reference", cache_policy=NO_CACHE)
def assess_against_reference(spec: RunSpec, reference: mon.PeriodStats, current: mon.PeriodStats) -> Assessment:
    """Tests, headline and alert decision of a period (:func:`metrics_core.monitoring.assess_stats`),
    with the metric keys made safe for MLflow (one key per class) and the parent's series picked out."""
    a = mon.assess_stats(reference, current, spec.alerts, headline_metric=spec.headline_metric,
                         report_options=spec.report_options())
    metrics, renamed = class_keyed(a.metrics)
    series = {k: v for k, v in metrics.items() if k.startswith((*series_keys(), a.headline_metric))}
    # Without the two statistics, which nothing logs: with 50 segments they hold some 300 MB of
    # histograms, and an exception raised and handled inside MLflow's logging (a re-logged
    # period's duplicate metrics) keeps the frames holding this result alive until Python's cyclic
    # collector runs: each forced period then held its statistics for several periods more.
    return Assessment(dataclasses.replace(a, reference=None, current=None), metrics, series, renamed)
