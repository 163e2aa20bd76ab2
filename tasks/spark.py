"""Prefect tasks that run dataset statistics as Spark jobs: a map over partitions, a merge tree on the executors.

The row work is metrics_core's (:func:`metrics_core.dataset.scan_partial`,
:func:`~metrics_core.dataset.scan_class_scores`, :func:`metrics_core.monitoring.scan_period`),
the same code as the local stream and Dask. Files are read by the executors themselves with
metrics_core's readers: the driver parallelizes the list of partitions (files or Parquet row-group
ranges, :func:`metrics_core.dataset.parts_of`), so typing, validation and error messages are the
local stream's. A Spark DataFrame goes through ``mapInArrow``: each partition's Arrow batches
become one statistic, sent on as pickled bytes in a one-row Arrow batch. Either way the
statistics are merged on the executors, ``fan_in`` at a time in index order (the same tree as
Dask's), and only the final statistic reaches the driver. pyspark is imported only here, and only
when a job runs.
"""

from __future__ import annotations

import os
import pickle
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from prefect import task
from prefect.cache_policies import NO_CACHE

from metrics_core.dataset import Columns, Part, PartialStats, class_labels, merge_tree, scan_class_scores, scan_partial
from metrics_core.errors import InputError
from tasks.config.spec import LOCAL_SPARK

#: The settings of a Spark session classwatch starts itself: nothing listens beyond this machine
#: for a local master, and no web UI.
LOCAL_SETTINGS = {"spark.ui.enabled": "false", "spark.driver.bindAddress": "127.0.0.1",
                  "spark.driver.host": "127.0.0.1", "spark.sql.shuffle.partitions": "2",
                  "spark.sql.execution.arrow.pyspark.enabled": "true"}


def is_spark_frame(source) -> bool:
    """Whether ``source`` is a Spark DataFrame (by its methods: pyspark is not imported).

    >>> is_spark_frame("data/test.parquet")
    False
    """
    return hasattr(source, "mapInArrow") and hasattr(source, "sparkSession") and hasattr(source, "rdd")


def spark_session(master: str = LOCAL_SPARK, settings: dict | None = None):
    """The active Spark session, else a new one on ``master`` (``local[2]``, ``spark://HOST:PORT``).

    A local master gets :data:`LOCAL_SETTINGS` and runs its Python workers with this interpreter
    (unless ``PYSPARK_PYTHON`` says otherwise), so they import the same classwatch. On a cluster
    the executors need classwatch installed and ``PYSPARK_PYTHON`` naming their Python.
    ``settings`` are more Spark settings (``spark.driver.memory``, ...).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise RuntimeError("the Spark runner needs pyspark: pip install 'classwatch[spark]' (and Java 17; "
                           "docs/large-data.md, 'Spark').") from None
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.master(master).appName("classwatch")
    local = master.startswith("local")
    for key, value in {**(LOCAL_SETTINGS if local else {}), **(settings or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if local and "PYSPARK_PYTHON" not in os.environ:
        session.sparkContext.pythonExec = sys.executable  # the workers import this environment's classwatch
    return session


@dataclass(frozen=True)
class _Failed:
    """An error raised on an executor, carried back as a value so the driver raises it as it was
    (a bad row names its file, column and count) rather than as a Java stack trace."""

    message: str
    input_error: bool

    @classmethod
    def of(cls, exc: BaseException) -> "_Failed":
        return cls(str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}",
                   isinstance(exc, InputError))

    def raise_(self):
        raise (InputError(self.message) if self.input_error else RuntimeError(f"a Spark task failed: {self.message}"))


def _guarded(fn: Callable[[], Any]):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - restated on the driver (_Failed.raise_)
        return _Failed.of(exc)


def _merge_group(items: Iterator[tuple[int, tuple[int, Any]]]) -> Iterator[tuple[int, Any]]:
    """One node of the merge tree, on an executor: its children merged in index order; the first
    failure (in index order) stands for the node; partitions without rows (None) are skipped."""
    by_key: dict[int, list] = {}
    for key, child in items:
        by_key.setdefault(key, []).append(child)
    for key, children in by_key.items():
        values = [value for _, value in sorted(children, key=lambda c: c[0])]
        failed = next((v for v in values if isinstance(v, _Failed)), None)
        yield key, failed if failed is not None else _guarded(lambda: merge_tree(v for v in values if v is not None))


def tree_merge(rdd, fan_in: int = 2):
    """Merge an RDD of ``(index, statistic)`` (one per partition) into one statistic: levels of
    ``fan_in`` consecutive indexes merged on the executors, as Dask's tree; only the root reaches the
    driver. A failure of any task is raised here, as it was raised there.

    Each level is a shuffle keyed by ``index // fan_in`` onto one partition per key
    (``partitionBy`` with the key as its own partition), so a node merges its children in index
    order whatever order they arrive in: the same merges, hence the same float sums, on every run.
    """
    fan_in = max(2, fan_in)
    n = rdd.getNumPartitions()
    while n > 1:
        n = -(-n // fan_in)
        rdd = (rdd.map(lambda kv, f=fan_in: (kv[0] // f, kv)).partitionBy(n, lambda key: key)
               .mapPartitions(_merge_group, preservesPartitioning=True))
    values = [value for _, value in rdd.collect()]
    failed = next((v for v in values if isinstance(v, _Failed)), None)
    if failed is not None:
        failed.raise_()
    return merge_tree(v for v in values if v is not None)


def _map_groups(session, groups: list, fn: Callable[[list], Any]):
    """An RDD of ``(index, fn(group))``, one partition (one task) per group, errors kept as values."""
    indexed = list(enumerate(groups))
    return session.sparkContext.parallelize(indexed, max(1, len(indexed))).map(
        lambda item: (item[0], _guarded(lambda: fn(item[1]))))


@task(name="spark-labels", cache_policy=NO_CACHE)
def spark_labels(master: str, source: str, columns: Columns, groups: list[list[Part]], filter=None,
                 use_prediction: bool | None = None) -> set:
    """Distinct label (and prediction) values of every partition group, found by the executors."""
    def labels_of(parts):
        return set(class_labels(source, columns, filter=filter, parts=parts, with_scores=False,
                                with_prediction=use_prediction).tolist())

    found: set = set()
    for _, value in _map_groups(spark_session(master), groups, labels_of).collect():
        if isinstance(value, _Failed):
            value.raise_()
        found |= value
    return found


@task(name="spark-stats", cache_policy=NO_CACHE)
def spark_stats(master: str, source: str, task_kind: str, columns: Columns, groups: list[list[Part]],
                options: dict, fan_in: int = 2) -> PartialStats | None:
    """The merged statistics of the partition groups: one Spark task scans each group
    (:func:`metrics_core.dataset.scan_partial`, one thread), then :func:`tree_merge`."""
    def scan(parts):
        return scan_partial(source, task_kind, columns, parts=parts, threads=1, **options)

    return tree_merge(_map_groups(spark_session(master), groups, scan), fan_in)


@task(name="spark-class-scores", cache_policy=NO_CACHE)
def spark_class_scores(master: str, source: str, columns: Columns, labels: list, batch_rows: int, filter=None
                       ) -> tuple:
    """The exact one-vs-rest statistic of every class, one Spark task per class (the map over classes:
    an executor holds one class's folded statistic, a final one)."""
    def one_class(j):
        return scan_class_scores(source, columns, labels, j, batch_rows=batch_rows, filter=filter, threads=1)

    out = dict(_map_groups(spark_session(master), list(range(len(labels))), one_class).collect())
    for value in out.values():
        if isinstance(value, _Failed):
            value.raise_()
    return tuple(out[j] for j in range(len(labels)))


def frame_stats(frame, task_kind: str, columns: Columns, *, fan_in: int = 2, **options) -> PartialStats | None:
    """The merged statistics of a Spark DataFrame: each partition's Arrow batches (``mapInArrow``)
    become one statistic (:func:`metrics_core.dataset.scan_partial` on them), pickled into a
    one-row Arrow batch, then :func:`tree_merge`.

    ``options`` are :func:`~metrics_core.dataset.scan_partial`'s (multiclass: give ``labels``,
    or they are found first with one distinct-values job).
    """
    import pyarrow as pa
    import pyarrow.dataset as pads

    names = frame.columns
    needed = [c for c in dict.fromkeys([columns.label, columns.score, columns.prediction, columns.weight,
                                        options.get("twin_weight")]) if c and c in names]
    needed += [c for c in names if c.startswith(columns.score_prefix) and c not in needed]
    if task_kind == "multiclass" and options.get("labels") is None:
        values = frame.select(columns.label).distinct().collect()
        if any(r[0] is None for r in values):
            raise InputError(f"Spark DataFrame: column {columns.label!r} has null labels; drop or fix those rows.")
        options = {**options, "labels": sorted(r[0] for r in values)}

    def partition_stats(batches):
        from pyspark import TaskContext

        table = pa.Table.from_batches(list(batches))
        value = None
        if table.num_rows:
            value = _guarded(lambda: scan_partial(pads.dataset(table), task_kind, columns, threads=1, **options))
        yield pa.record_batch({"part": [TaskContext.get().partitionId()], "stats": [pickle.dumps(value)]})

    stats = frame.select(*needed).mapInArrow(partition_stats, "part long, stats binary")
    rdd = stats.rdd.map(lambda row: (row.part, pickle.loads(row.stats)))
    return tree_merge(rdd, fan_in)


def period_stats(master: str, source: str, task_kind: str, labels, bins, *, filter=None, fan_in: int = 2,
                 **options):
    """A monitored period's statistics (:func:`metrics_core.monitoring.scan_period`) on Spark: one
    task per partition group (:func:`metrics_core.dataset.partition_groups`, about one per core, as
    for evaluation and Dask), the merge tree on the executors, then the whole period's checks on
    the driver (:func:`~metrics_core.monitoring.scan.check_period_stats`)."""
    from metrics_core.dataset import partition_groups
    from metrics_core.monitoring.scan import check_period_stats, scan_period

    session = spark_session(master)
    groups, _ = partition_groups(source, filter=filter, tasks=lambda: max(1, session.sparkContext.defaultParallelism))

    def scan(parts):
        return scan_period(source, task_kind, labels, bins, filter=filter, threads=1, parts=parts, **options)

    merged = tree_merge(_map_groups(session, groups, scan), fan_in) if groups else None
    return check_period_stats(merged, str(source), task_kind, bins, prediction=options.get("prediction"),
                              threshold=options.get("threshold", 0.5), filter=filter)
