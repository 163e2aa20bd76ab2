"""Flow compute_stats: dataset statistics on one process or a Dask cluster (map = statistics per partition, reduce = merge).

Workers read their partitions themselves and return only statistics, which are merged on the
workers in a tree; the client receives only the final statistic.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import replace
from typing import Any, Callable

from prefect import flow

from flows.dask_map import parallel_slots, tree_reduce, wait_in_order
from flows.runners import api_for, check_scheduler, task_runner
from metrics_core.dataset import (Columns, merge_tree, no_rows_error, partition_groups, resolve_class_list,
                                  scans_by_class)
from metrics_core.stats import BinaryStats, MulticlassStats
from tasks.config.spec import spark_master
from tasks.spark import frame_stats, is_spark_frame, spark_class_scores, spark_labels, spark_session, spark_stats
from tasks.stats import class_scores, partition_labels, partition_stats

# The progress callback travels beside the flow, not as a parameter: prefect-dask serializes the
# flow run context (parameters included) with every task, and a callback holding a lock (a rich
# progress bar) cannot be pickled.
# (The flow reads it through a function: prefect-dask also pickles the flow function, by value,
# with the module globals it names, and a ContextVar cannot be pickled.)
_PROGRESS: ContextVar[Callable[[int, int | None], None] | None] = ContextVar("classwatch_progress", default=None)


def current_progress() -> Callable[[int, int | None], None] | None:
    """The progress callback :func:`compute_stats` set for the running flow (None when none)."""
    return _PROGRESS.get()

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
    results at a time on the workers until one is left, which the client gathers. Multiclass without
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
    elif spark_master(runner) is not None:
        partial, total = _spark_partitions(source, task_kind, columns, options, spark_master(runner),
                                           target_rows=target_rows, tasks_per_worker=tasks_per_worker, fan_in=fan_in)
        labels = options["labels"]
        if progress is not None and total is not None:
            progress(total, total)
    else:
        partial, total = _map_partitions(source, task_kind, columns, options, target_rows=target_rows,
                                          tasks_per_worker=tasks_per_worker, fan_in=fan_in, progress=progress)
        labels = options["labels"]
    if partial is None:
        raise no_rows_error(source, filter)
    stats = partial.finish(pos_label, labels)
    if class_passes and stats.log_loss is not None:  # (log loss None: no score columns)
        stats = replace(stats, scores=_map_classes(source, columns, stats, batch_rows, filter, runner, total,
                                                   progress))
    return stats


def _map_partitions(source: str, task_kind: str, columns: Columns, options: dict, *, target_rows: int | None,
                    tasks_per_worker: int, fan_in: int, progress) -> tuple:
    """The Dask map over partitions and the tree reduce: ``(merged partial statistic, total rows or None)``.

    Sets ``options["labels"]`` to the class list found by a ``partition-labels`` map when a
    multiclass scan has none.
    """
    filter = options["filter"]
    groups, total = _groups(source, filter, target_rows, lambda: tasks_per_worker * parallel_slots())
    if task_kind == "multiclass" and options["labels"] is None:
        maps = [partition_labels.submit(source, columns, g, filter, options["use_prediction"]) for g in groups]
        found = {value for f in maps for value in f.result()}
        options["labels"] = resolve_class_list(source, task_kind, columns, found=found, filter=filter)
    futures = [partition_stats.submit(source, task_kind, columns, g, options) for g in groups]
    last = tree_reduce(futures, fan_in)
    rows_of = {f.task_run_id: sum(p.n_rows or 0 for p in g) for f, g in zip(futures, groups)}
    wait_in_order(futures, {f.task_run_id for f in last}, rows_of, progress, total)
    return merge_tree(p for p in (f.result() for f in last) if p is not None), total


def _groups(source: str, filter, target_rows: int | None, tasks) -> tuple[list, int | None]:
    """The partition groups of a distributed scan (:func:`metrics_core.dataset.partition_groups`);
    an error naming the source when it has no partition."""
    groups, total = partition_groups(source, filter=filter, target_rows=target_rows, tasks=tasks)
    if not groups:
        raise no_rows_error(source, filter)
    return groups, total


def _spark_partitions(source: str, task_kind: str, columns: Columns, options: dict, master: str, *,
                      target_rows: int | None, tasks_per_worker: int, fan_in: int) -> tuple:
    """The Spark map over partitions and its merge tree on the executors (:mod:`tasks.spark`):
    ``(merged partial statistic, total rows or None)``; the groups as Dask's (:func:`_groups`),
    one Spark task each, ``tasks_per_worker`` per core of the session (``defaultParallelism``)."""
    filter = options["filter"]
    groups, total = _groups(source, filter, target_rows,
                            lambda: tasks_per_worker * max(1, spark_session(master).sparkContext.defaultParallelism))
    if task_kind == "multiclass" and options["labels"] is None:
        found = spark_labels(master, source, columns, groups, filter, options["use_prediction"])
        options["labels"] = resolve_class_list(source, task_kind, columns, found=found, filter=filter)
    partial = spark_stats(master, source, task_kind, columns, groups, options, fan_in)
    return partial, total


def _map_classes(source: str, columns: Columns, stats, batch_rows: int, filter, runner: str, total: int | None,
                 progress) -> tuple:
    """The map over classes of an exact multiclass scan: one folded one-vs-rest statistic per class."""
    class_list = stats.confusion.labels.tolist()
    if runner == "local":
        return tuple(class_scores.fn(source, columns, class_list, j, batch_rows, filter) for j in range(len(class_list)))
    if spark_master(runner) is not None:
        return spark_class_scores(spark_master(runner), source, columns, class_list, batch_rows, filter)
    futures = [class_scores.submit(source, columns, class_list, j, batch_rows, filter, 1) for j in range(len(class_list))]
    folded = tuple(f.result() for f in futures)
    if progress is not None:
        passes = 1 + len(class_list)
        progress(stats.n_rows * passes, None if total is None else total * passes)
    return folded


def compute_stats(source, task_kind: str, columns: Columns | None = None, *, runner: str = "local",
                  cluster_kwargs: dict | None = None, progress: Callable[[int, int | None], None] | None = None,
                  **kwargs) -> BinaryStats | MulticlassStats:
    """Run :func:`compute_stats_flow` on the task runner ``runner`` ('local', 'dask',
    'dask://HOST:PORT', 'spark', 'spark://HOST:PORT'); keyword arguments are the flow's (labels,
    bins, batch_rows, filter, ...). ``progress(rows_done, rows_total)`` follows the partitions (the
    batches for local). ``source`` is a path, an object-store URL (``s3://...``), or a Spark
    DataFrame: its partitions' Arrow batches become the statistics on its own session
    (:func:`tasks.spark.frame_stats`; ``runner`` is then unused).

    A script that uses ``runner="dask"`` needs an ``if __name__ == "__main__":`` guard (the
    LocalCluster's worker processes re-import the main module).
    """
    if is_spark_frame(source):
        return _frame(source, task_kind, columns or Columns(), **kwargs)
    check_scheduler(runner)  # validates the string, and a running scheduler's address answers
    flow_ = compute_stats_flow.with_options(task_runner=task_runner(runner, cluster_kwargs))
    token = _PROGRESS.set(progress)
    try:
        with api_for(runner):
            return flow_(str(source), task_kind, columns, runner=runner, **kwargs)
    finally:
        _PROGRESS.reset(token)



def _frame(frame, task_kind: str, columns: Columns, *, labels: list | None = None, pos_label: Any = 1,
           fan_in: int = 2, **kwargs) -> BinaryStats | MulticlassStats:
    """:func:`compute_stats` of a Spark DataFrame (the flow's options that apply to rows in memory)."""
    unused = sorted(set(kwargs) - {"threshold", "bins", "batch_rows", "use_prediction", "confusion_only",
                                   "twin_weight", "progress", "by_class", "target_rows", "tasks_per_worker"})
    if unused:
        raise TypeError(f"compute_stats of a Spark DataFrame takes no {unused}")
    options = {k: kwargs[k] for k in ("threshold", "bins", "batch_rows", "use_prediction", "confusion_only",
                                      "twin_weight") if k in kwargs}
    partial = frame_stats(frame, task_kind, columns, labels=labels, pos_label=pos_label, fan_in=fan_in, **options)
    if partial is None:
        raise no_rows_error("Spark DataFrame")
    return partial.finish(pos_label, labels)
