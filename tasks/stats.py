"""Prefect tasks of dataset statistics: the map (statistics of some partitions) and the reduce (merge).

The row work is :func:`metrics_core.dataset.scan_partial` (the same update step as an in-memory
report); partitions are Parquet files or row-group ranges of them
(:func:`metrics_core.dataset.parts_of`). The flow that orders these tasks over a Dask cluster is
:mod:`flows.compute_stats`.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from metrics_core.dataset import (Columns, Part, PartialStats, class_labels, merge_tree, scan_class_scores,
                                  scan_partial)


@task(name="partition-labels", cache_policy=NO_CACHE)
def partition_labels(source: str, columns: Columns, parts: list[Part], filter=None,
                     with_prediction: bool | None = None) -> list:
    """Distinct label (and prediction) values of some partitions: the cheap first pass for multiclass."""
    return class_labels(source, columns, filter=filter, parts=parts, with_scores=False,
                        with_prediction=with_prediction).tolist()


@task(name="partition-stats", cache_policy=NO_CACHE)
def partition_stats(source: str, task_kind: str, columns: Columns, parts: list[Part] | None,
                    options: dict) -> PartialStats | None:
    """Mergeable statistics of some partitions (all of the dataset when ``parts`` is None).

    On a Dask worker (``parts`` given) the scan keeps to one thread: the cluster already runs a
    task per core; in one process it uses the scan's default threads.
    """
    return scan_partial(source, task_kind, columns, parts=parts, **({"threads": 1} if parts is not None else {}),
                        **options)


@task(name="class-scores", cache_policy=NO_CACHE)
def class_scores(source: str, columns: Columns, labels: list, j: int, batch_rows: int, filter=None,
                 threads: int | None = None):
    """The folded exact one-vs-rest statistic of class ``labels[j]`` over the whole dataset (``threads``: 1 on Dask)."""
    return scan_class_scores(source, columns, labels, j, batch_rows=batch_rows, filter=filter, threads=threads)


@task(name="merge-stats", cache_policy=NO_CACHE)
def merge_stats(partials: list) -> PartialStats | None:
    """Merge partial statistics (partitions without rows give None and are skipped)."""
    return merge_tree(p for p in partials if p is not None)
