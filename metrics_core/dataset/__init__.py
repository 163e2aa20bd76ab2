"""Streaming over Arrow datasets: open, batch, validate, and fold batches into mergeable statistics.

A dataset (Parquet file or hive-partitioned directory, Arrow IPC/Feather, CSV) is read batch by
batch; each batch goes through the same update step as an in-memory report
(:func:`metrics_core.report.binary_stats` / :func:`~metrics_core.report.multiclass_stats`) and
the per-batch statistics are merged with their own ``merge``. Memory is bounded by one batch plus
the statistic: O(distinct scores) in exact mode, constant in binned mode, whatever the number of
rows. The columns and the checks of the rows are the input contract's
(:mod:`metrics_core.contract`).

- :mod:`~metrics_core.dataset.formats`: the format of a file, opening a source.
- :mod:`~metrics_core.dataset.batches`: partitions and their groups (the one plan of a distributed map), batches,
  bad rows counted over a file.
- :mod:`~metrics_core.dataset.parallel`: the one batch loop of every scan (threads, order, errors, progress).
- :mod:`~metrics_core.dataset.labels`: the class list of a source; the class values of the batches; where
  each is when there are too many.
- :mod:`~metrics_core.dataset.merge`: merge trees, bucketed exact score merges, partial statistics.
- :mod:`~metrics_core.dataset.scan`: whole and partial scans, class-at-a-time passes.
"""

from metrics_core.contract import Columns, check_batch, schema_changes, score_column_classes
from metrics_core.dataset.batches import (Part, file_error, group_parts, iter_batches, no_rows_error, partition_groups,
                                          parts_of)
from metrics_core.dataset.formats import open_dataset, schema_of
from metrics_core.dataset.labels import class_labels, dataset_class_rows, resolve_class_list
from metrics_core.dataset.merge import (BucketedScoreMerger, PartialStats, TreeMerger, merge_tree,
                                        release_free_memory)
from metrics_core.dataset.parallel import scan_batches
from metrics_core.dataset.scan import scan_class_scores, scan_partial, scan_stats, scans_by_class

__all__ = ["BucketedScoreMerger", "Columns", "Part", "PartialStats", "TreeMerger", "check_batch", "class_labels",
           "dataset_class_rows", "file_error", "group_parts", "iter_batches", "merge_tree", "no_rows_error",
           "open_dataset", "partition_groups", "parts_of", "release_free_memory", "resolve_class_list",
           "scan_batches", "scan_class_scores", "scan_partial", "scan_stats", "scans_by_class", "schema_changes",
           "schema_of", "score_column_classes"]
