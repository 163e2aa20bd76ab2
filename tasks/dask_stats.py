"""Dataset statistics through Prefect, on one process or a Dask cluster: map = statistics per partition, reduce = merge.

The row work is :func:`metrics_core.dataset.scan_partial` (the same update step as an in-memory
report); partitions are Parquet files or row-group ranges of them (:func:`metrics_core.dataset.parts_of`).
Workers read their partitions themselves and return only statistics, which are merged on the
workers in a tree; the client receives the single merged statistic.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, Callable

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from metrics_core.dataset import (Columns, Part, PartialStats, class_labels, merge_tree, no_rows_error, parts_of,
                                  scan_class_scores, scan_partial, scans_by_class, schema_of, score_column_classes)
from metrics_core.errors import InputError
from metrics_core.stats import BinaryStats, MulticlassStats

# The progress callback travels beside the flow, not as a parameter: prefect-dask serializes the
# flow run context (parameters included) with every task, and a callback holding a lock (a rich
# progress bar) cannot be pickled.
# (The flow reads it through a function: prefect-dask also pickles the flow function, by value,
# with the module globals it names, and a ContextVar cannot be pickled.)
_PROGRESS: ContextVar[Callable[[int, int | None], None] | None] = ContextVar("classwatch_progress", default=None)


def current_progress() -> Callable[[int, int | None], None] | None:
    """The progress callback :func:`compute_stats` set for the running flow (None when none)."""
    return _PROGRESS.get()

LOCAL_CLUSTER = {"n_workers": 2, "processes": True, "threads_per_worker": 1, "dashboard_address": "127.0.0.1:0"}

# Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536 (to hand freed memory back to the
# OS). Setting it also switches off glibc's adaptive mmap threshold, so every large temporary of
# the sorts and merges is a fresh mmap that is page-faulted in again: measured here, a 50M-row
# exact scan took 15.8 s with it against 12.8 s without (+23% CPU). Statistics tasks free their
# temporaries at once anyway, so classwatch's own clusters leave glibc's default tuning alone.
WORKER_ENV_UNSET = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


def local_cluster(**kwargs):
    """A :class:`distributed.LocalCluster` (``LOCAL_CLUSTER`` defaults, overridden by ``kwargs``)
    whose worker processes keep glibc's default malloc tuning (see ``WORKER_ENV_UNSET``)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set(WORKER_ENV_UNSET):
        return LocalCluster(**{**LOCAL_CLUSTER, **kwargs})


def dask_address(runner: str) -> str | None:
    """The scheduler address of a runner string: ``dask://HOST:PORT`` or ``tcp://HOST:PORT`` ->
    ``tcp://HOST:PORT``; None for ``local`` and ``dask`` (a new LocalCluster).

    >>> dask_address("dask://10.0.0.5:8786"), dask_address("dask"), dask_address("local")
    ('tcp://10.0.0.5:8786', None, None)
    """
    if runner in ("local", "dask"):
        return None
    for prefix in ("dask://", "tcp://", "tls://"):
        if runner.startswith(prefix):
            rest = runner[len(prefix):]
            if ":" not in rest:
                break
            return ("tls://" if prefix == "tls://" else "tcp://") + rest
    raise InputError(f"runner: expected 'local', 'dask' (a local cluster of 2 worker processes) or the address "
                     f"of a running Dask scheduler 'dask://HOST:PORT' (or tcp://HOST:PORT), got {runner!r}.")


def task_runner_for(runner: str, cluster_kwargs: dict | None = None):
    """The Prefect task runner for ``runner``: threads for ``local``, prefect-dask's DaskTaskRunner on a
    LocalCluster (:func:`local_cluster`: 2 worker processes, 1 thread each) for ``dask``, or on an
    existing scheduler."""
    address = dask_address(runner)
    if runner == "local":
        return ThreadPoolTaskRunner(max_workers=1)
    from prefect_dask import DaskTaskRunner

    if address is None:
        return DaskTaskRunner(cluster_class=local_cluster, cluster_kwargs=dict(cluster_kwargs or {}))
    return DaskTaskRunner(address=address)


@task(name="partition-labels", cache_policy=NO_CACHE)
def partition_labels(source: str, columns: Columns, parts: list[Part], filter=None,
                     with_prediction: bool | None = None) -> list:
    """Distinct label (and prediction) values of some partitions: the cheap first pass for multiclass."""
    return class_labels(source, columns, filter=filter, parts=parts, with_scores=False,
                        with_prediction=with_prediction).tolist()


@task(name="partition-stats", cache_policy=NO_CACHE)
def partition_stats(source: str, task_kind: str, columns: Columns, parts: list[Part] | None,
                    options: dict) -> PartialStats | None:
    """Mergeable statistics of some partitions (all of the dataset when ``parts`` is None)."""
    return scan_partial(source, task_kind, columns, parts=parts, **options)


@task(name="class-scores", cache_policy=NO_CACHE)
def class_scores(source: str, columns: Columns, labels: list, j: int, batch_rows: int, filter=None):
    """The folded exact one-vs-rest statistic of class ``labels[j]`` over the whole dataset."""
    return scan_class_scores(source, columns, labels, j, batch_rows=batch_rows, filter=filter)


@task(name="merge-stats", cache_policy=NO_CACHE)
def merge_stats(partials: list) -> PartialStats | None:
    """Merge partial statistics (partitions without rows give None and are skipped)."""
    return merge_tree(p for p in partials if p is not None)


def _tree_reduce(futures: list, fan_in: int) -> list:
    """Submit merge tasks level by level (a tree of fan-in ``fan_in``) until at most ``fan_in``
    futures are left; the caller merges those last ones itself.

    Why not one more merge task: its result would travel to the client anyway, so gathering the
    last ``fan_in`` statistics (in parallel, from different workers) and merging them in the
    client saves a whole transfer. In the 100M-row benchmark (two map tasks) the last merge task
    and the transfers around it took 6.9 s; gathering the two statistics and merging them in the
    client took 3.6 s.
    """
    level = list(futures)
    while len(level) > fan_in:
        level = [merge_stats.submit(level[i:i + fan_in]) for i in range(0, len(level), fan_in)]
    return level


def _parallel_slots(default: int = 2) -> int:
    """Worker threads of the flow's Dask cluster (``default`` when not running on Dask)."""
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    try:
        return max(1, sum(ctx.task_runner.client.nthreads().values()))
    except Exception:  # noqa: BLE001 - not a DaskTaskRunner, or no client yet
        return default


def group_parts(parts: list[Part], target_rows: int) -> list[list[Part]]:
    """Consecutive partitions grouped into tasks of about ``target_rows`` rows (unknown sizes: one each).

    >>> [len(g) for g in group_parts([Part("a", n_rows=3), Part("b", n_rows=3), Part("c", n_rows=3)], 5)]
    [2, 1]
    """
    groups: list[list[Part]] = []
    rows = 0
    for p in parts:
        if not groups or rows >= target_rows or p.n_rows is None:
            groups.append([])
            rows = 0
        groups[-1].append(p)
        rows = rows + p.n_rows if p.n_rows is not None else target_rows
    return groups


@flow(name="classwatch-compute-stats", validate_parameters=False)
def compute_stats_flow(source: str, task_kind: str, columns: Columns | None = None, *, labels: list | None = None,
                       pos_label: Any = 1, threshold: float = 0.5, bins: Any = None, batch_rows: int = 1_000_000,
                       filter: Any = None, runner: str = "local", target_rows: int | None = None,
                       tasks_per_worker: int = 1, fan_in: int = 2, use_prediction: bool | None = None,
                       confusion_only: bool = False, by_class: bool | None = None) -> BinaryStats | MulticlassStats:
    """Statistics of the dataset ``source`` (``task_kind`` binary or multiclass) as one merged statistic.

    ``runner="local"``: one task streams the whole dataset batch by batch (bounded memory).
    Otherwise (the flow then runs on a DaskTaskRunner, see :func:`compute_stats`): the files (or
    Parquet row-group ranges of large files) are grouped into ``partition-stats`` tasks of about
    ``target_rows`` rows (default: the rows spread over ``tasks_per_worker`` tasks per worker
    thread: few, large tasks, because each task's statistic must be merged again; with 2 tasks
    per worker the 100M-row benchmark spent 7.7 s in serial merges at the end, with 1 task 2.6 s),
    each task streams its rows batch by batch, then ``merge-stats`` tasks merge ``fan_in``
    results at a time on the workers until at most ``fan_in`` are left, which the client gathers
    and merges. Multiclass without
    ``labels``: a first ``partition-labels`` map finds the class list. A progress callback set by
    :func:`compute_stats` is called as tasks finish (per batch for local). ``use_prediction``,
    ``confusion_only`` and ``by_class`` are those of :func:`metrics_core.dataset.scan_stats`.

    Exact multiclass goes one class at a time, as :func:`~metrics_core.dataset.scan_stats` does:
    the map above leaves out the one-vs-rest statistics, then one ``class-scores`` task per class
    (the map over classes: a worker holds one class's statistic, not K) reads the label and that
    class's score column of the whole dataset and returns its folded statistic.
    """
    columns = columns or Columns()
    progress = current_progress()
    class_passes = (task_kind == "multiclass" and bins is None and not confusion_only
                    and scans_by_class(source, by_class, labels))
    options = dict(pos_label=pos_label, threshold=threshold, bins=bins, batch_rows=batch_rows, filter=filter,
                   labels=labels, use_prediction=use_prediction, confusion_only=confusion_only,
                   score_counts=not class_passes)
    total = None
    if runner == "local":
        partial = partition_stats(source, task_kind, columns, None, {**options, "progress": progress})
    else:
        files = parts_of(source, filter=filter)
        if not files:
            raise no_rows_error(source, filter)
        known = [p.n_rows for p in files if p.n_rows is not None]
        if target_rows is None:
            target_rows = max(1, -(-sum(known) // (tasks_per_worker * _parallel_slots()))) if known else 1
        groups = group_parts(parts_of(source, filter=filter, target_rows=target_rows), target_rows)
        if task_kind == "multiclass" and labels is None:
            found = [partition_labels.submit(source, columns, g, filter, use_prediction) for g in groups]
            values = set(score_column_classes(schema_of(source), columns))  # as class_labels does
            for f in found:
                values.update(f.result())
            options["labels"] = labels = sorted(values)
            if not labels:
                raise InputError(f"{source}: the label column {columns.label!r} has no values.")
        futures = [partition_stats.submit(source, task_kind, columns, g, options) for g in groups]
        last = _tree_reduce(futures, fan_in)
        # Wait task by task: the first failing one raises its own error (a bad file is named),
        # instead of the merge reporting only that an upstream task did not complete.
        total = sum(known) if len(known) == len(files) else None
        rows_of = {f.task_run_id: sum(p.n_rows or 0 for p in g) for f, g in zip(futures, groups)}
        done = 0
        kept = {f.task_run_id for f in last}
        for f in as_completed(futures):
            # Only the last statistics come to the client; for the others ask Prefect for the
            # state (a small API read) and fetch the result only to raise a failure's error.
            if f.task_run_id in kept or not f.state.is_completed():
                f.result()
            done += rows_of[f.task_run_id]
            if progress is not None:
                progress(done, total)
        partial = merge_tree(p for p in (f.result() for f in last) if p is not None)
    if partial is None:
        raise no_rows_error(source, filter)
    stats = partial.finish(pos_label, labels)
    if class_passes and stats.log_loss is not None:  # (log loss None: no score columns)
        class_list = stats.confusion.labels.tolist()
        if runner == "local":
            folded = [class_scores.fn(source, columns, class_list, j, batch_rows, filter) for j in range(len(class_list))]
        else:
            futures = [class_scores.submit(source, columns, class_list, j, batch_rows, filter)
                       for j in range(len(class_list))]
            folded = [f.result() for f in futures]
            if progress is not None:
                progress(stats.n_rows * (1 + len(class_list)), None if total is None else total * (1 + len(class_list)))
        stats = replace(stats, scores=tuple(folded))
    return stats


@contextmanager
def api_for_workers():
    """Make sure Dask worker processes can reach the Prefect API.

    Without ``PREFECT_API_URL`` Prefect runs an ephemeral server that only this process knows
    of; each worker would start its own on the same SQLite file (and hang on its lock). So the
    process's ephemeral server is started here and its URL put in the settings that prefect-dask
    sends to the workers with every task.
    """
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if PREFECT_API_URL.value():
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the per-process singleton the Prefect client would use anyway
    server.start()
    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        yield


def compute_stats(source, task_kind: str, columns: Columns | None = None, *, runner: str = "local",
                  cluster_kwargs: dict | None = None, progress: Callable[[int, int | None], None] | None = None,
                  **kwargs) -> BinaryStats | MulticlassStats:
    """Run :func:`compute_stats_flow` on the task runner ``runner`` ('local', 'dask',
    'dask://HOST:PORT'); keyword arguments are the flow's (labels, bins, batch_rows, filter, ...).
    ``progress(rows_done, rows_total)`` follows the partitions (the batches for local).

    A script that uses ``runner="dask"`` needs an ``if __name__ == "__main__":`` guard (the
    LocalCluster's worker processes re-import the main module).
    """
    dask_address(runner)  # validate early
    flow_ = compute_stats_flow.with_options(task_runner=task_runner_for(runner, cluster_kwargs))
    token = _PROGRESS.set(progress)
    try:
        if runner == "local":
            return flow_(str(source), task_kind, columns, runner=runner, **kwargs)
        with api_for_workers():
            return flow_(str(source), task_kind, columns, runner=runner, **kwargs)
    finally:
        _PROGRESS.reset(token)

