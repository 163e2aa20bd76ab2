"""Flow monitor_period: one period against the reference window -> drift, performance, alert -> MLflow, Prefect."""

from __future__ import annotations

from typing import Any, Callable

from prefect import flow
from prefect.utilities.annotations import opaque

from flows.dask_map import parallel_slots, tree_reduce, wait_in_order
from flows.runners import api_for, check_scheduler, is_dask, running_on_dask, task_runner
from metrics_core.monitoring import PeriodStats
from tasks.alerts import raise_alert
from tasks.config.spec import RunSpec, load_spec
from tasks.log import log_period
from tasks.monitor import (PeriodResult, assess_against_reference, checked_source_stats, labels_arrived,
                           monitoring_history, open_store, plan_period, resolve_period, run_keys, scan_source_part,
                           scan_source_stats, source_groups)


@flow(name="monitor_period")
def monitor_period(spec: Any = None, period: str = "", current: str | None = None,
                   force: bool = False) -> PeriodResult:
    """Monitor one period of production data against the reference window.

    Parameters (JSON-able, for deployments): ``spec`` a YAML path, a dict or a loaded RunSpec,
    ``period`` "YYYY-MM" or "previous" (the month before the scheduled start), ``current``
    overrides ``data.current`` (may contain ``{period}``), ``force`` recomputes and re-logs a
    period that is already logged (a period logged without labels is recomputed without ``force``
    once its delivery has a label column: the measurement replaces the estimate) (the alert event keeps its deterministic id, so Prefect still
    delivers it once).

    Order (under the period's lock, :meth:`tasks.store.mlflow.MlflowStore.lock`, so two processes
    monitoring one period at once log it once): look the period up in MLflow (one search; a
    logged period returns at once, reading no data, unless it was logged without labels and its
    delivery now has them) -> plan and check both sources (metadata)
    -> one pass over reference and current (concurrently; with ``task_runner`` a Dask runner, each
    as groups of partitions on the workers, merged there, :func:`_scan`) -> tests, headline, alert decision
    -> MLflow (a child run per period under a parent per model and reference window; FINISHED
    only when complete) -> alert event and artifact when the period alerts for the first time.
    Returns a :class:`PeriodResult`.

    A spec whose ``task_runner`` is Dask, run on another task runner (a scheduled deployment's run
    under ``classwatch serve``, or a plain call), runs the period as a subflow of the same name on
    that Dask runner (``classwatch monitor`` sets the runner itself).
    """
    s = load_spec(spec, data={"current": current})
    if is_dask(s.task_runner) and not running_on_dask():
        # A deployment's run (`classwatch serve`) or a plain call starts on Prefect's default runner:
        # the period runs as a subflow on the spec's Dask runner instead
        check_scheduler(s.task_runner)
        with api_for(s.task_runner):
            return monitor_period.with_options(task_runner=task_runner(s.task_runner))(s, period, None, force)
    period = resolve_period(period)
    store = open_store(s)
    # One process at a time per period (a scheduled run racing a manual one): the second finds it logged.
    with store.lock(run_keys(s, period)[1]):
        history = monitoring_history(s, store, period)
        if history.done is not None and not force and not labels_arrived(s, period, history.done):
            return PeriodResult.from_run(s, store, period, history.done)
        plan = plan_period(s, period)
        reference = _scan(s, plan.reference, plan.ref_layout)
        current_stats = _scan(s, plan.current, plan.cur_layout, plan.current_filter, current=True)
        # opaque: Prefect links these inputs to the tasks that made them without walking inside
        # (an assessment is about 3,700 objects, 25 ms a call; the history grows with the periods;
        # statistics with 50 segments hold some 20,000 objects, about 90 ms a call)
        a = assess_against_reference(s, opaque(reference()), opaque(current_stats()))
        logged = log_period(s, store, plan, opaque(a), opaque(history))
    event = None
    if a.assessment.alert:
        event = raise_alert(s.name, period, a.assessment.decision, logged.run_id, store.tracking_uri,
                            logged.experiment_id, logged.alert_markdown)
    _let_go(reference, current_stats)
    return PeriodResult.from_assessment(s, store, period, logged, a, event)


def _scan(s: RunSpec, source: str, layout, row_filter=None, current: bool = False) -> Callable[[], PeriodStats]:
    """Start the one pass over ``source``; returns the call that waits for its statistics.

    Local and Spark runners: one ``scan-source-stats`` task (Spark's map and merge run inside it).
    Dask: one ``scan-source-part`` task per partition group (about one per worker thread, planned
    as for every distributed scan), merged in a tree on the workers (``merge-stats``), the final
    statistic alone gathered and checked here.
    """
    if not is_dask(s.task_runner):
        return scan_source_stats.submit(s, source, layout, row_filter, current=current).result
    groups = source_groups(source, row_filter, parallel_slots())
    maps = [scan_source_part.submit(s, source, layout, g, row_filter, current=current) for g in groups]
    last = tree_reduce(maps, fan_in=2)

    def gather() -> PeriodStats:
        wait_in_order(maps, {f.task_run_id for f in last})
        merged = last[0].result() if last else None
        return checked_source_stats(s, source, layout, merged, row_filter)

    return gather


def _let_go(*reads: Callable[[], PeriodStats]) -> None:
    """Let the finished scan tasks' states go of their statistics, once the period is logged and alerted.

    Prefect's future and the thread pool's future refer to each other (a done callback), so a
    task's final state, holding its result, lives until Python's cyclic collector runs: a
    period's statistics (about 300 MB with 50 segments' histograms) outlived their flow by
    several periods, growing a scheduled process's memory. Emptied at the end of the flow, not
    when read: Prefect links a task's inputs to the runs that made them by object id, and an
    object allocated where freed statistics were would be linked to their scan.
    """
    for read in reads:
        future = getattr(read, "__self__", None)  # a local scan's future (Dask's gather has none)
        if future is not None and future.state.is_completed():
            future.state.data = None


__all__ = ["monitor_period", "run_keys", "resolve_period"]
