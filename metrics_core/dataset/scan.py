"""Scans: a dataset read batch by batch into mergeable statistics (whole, partial, or a class at a time)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from metrics_core import _validate as v
from metrics_core._score_kernels import lazy_modules
from metrics_core.contract import (Columns, Layout, check_batch, check_task, class_indices, predicted_class, read_type,
                                   resolve_layout, score_sums_off)
from metrics_core.counts import ScoreCounts, fold_negative_runs
from metrics_core.dataset.batches import Part, file_error, no_rows_error, total_rows
from metrics_core.dataset.formats import open_dataset, where
from metrics_core.dataset.labels import check_binary_labels, resolve_class_list
from metrics_core.dataset.parallel import scan_batches
from metrics_core.dataset.merge import (BucketedScoreMerger, PartialStats, TreeMerger, exact_score_counts, relabel,
                                        release_free_memory)
from metrics_core.errors import InputError
from metrics_core.report import binary_stats, multiclass_stats
from metrics_core.stats import BinaryStats, MulticlassStats
from metrics_core.threads import default_threads

__all__ = ["scan_class_scores", "scan_partial", "scan_stats", "scans_by_class"]

Progress = Callable[[int, int | None], None]


def scans_by_class(source, by_class: bool | None, labels=None) -> bool:
    """Whether an exact multiclass scan of ``source`` goes one class at a time.

    Parameters
    ----------
    source : str, path or pyarrow.dataset.Dataset
    by_class : bool, optional
        The ``by_class`` of :func:`scan_stats`; None: yes unless the data is CSV (every pass
        would parse the whole file) or ``labels`` has at most 2 classes.
    labels : sequence, optional

    Returns
    -------
    bool

    Examples
    --------
    >>> scans_by_class("any.parquet", None, labels=["a", "b"]), scans_by_class("any.parquet", False)
    (False, False)
    """
    if by_class is not None:
        return by_class
    if labels is not None and len(labels) <= 2:
        return False
    ds = open_dataset(source)
    return not isinstance(ds, pads.FileSystemDataset) or not isinstance(ds.format, pads.CsvFileFormat)


def scan_stats(source, task: str, columns: Columns = Columns(), *, labels: Sequence | None = None, pos_label=1,
               threshold: float = 0.5, bins=None, batch_rows: int = 1_000_000, filter=None,
               progress: Progress | None = None, parts: Sequence[Part] | None = None,
               use_prediction: bool | None = None, confusion_only: bool = False,
               twin_weight: str | None = None, by_class: bool | None = None,
               threads: int | None = None) -> BinaryStats | MulticlassStats:
    """Statistics of a whole dataset, read batch by batch: the streamed twin of the in-memory update.

    Every batch goes through :func:`metrics_core.report.binary_stats` or
    :func:`~metrics_core.report.multiclass_stats`, exactly as an array in memory would, and the
    batch statistics are merged in a balanced tree (:class:`~metrics_core.dataset.TreeMerger`).
    So ``binary_from_stats(scan_stats(...))`` equals ``binary_report`` on the concatenated rows:
    counts and exact ScoreCounts are identical; weighted sums are identical when the weights add
    up exactly in float64 (e.g. integers or binary fractions), else they differ by rounding only.
    Memory is one batch plus the statistic: O(distinct scores) exact, constant binned.

    Parameters
    ----------
    source : str, path or pyarrow.dataset.Dataset
        As for :func:`~metrics_core.dataset.open_dataset`.
    task : {"binary", "multiclass"}
    columns : Columns
        The roles (:func:`metrics_core.contract.resolve_layout`): the label; binary: the
        ``score`` column and/or the ``prediction`` column; multiclass: the per-class columns
        ``score_<class>`` (when present) and/or the ``prediction`` column; the weight column
        when ``columns.weight`` is set.
    labels : sequence, optional
        Multiclass class list (the score columns follow its order); None:
        :func:`~metrics_core.dataset.labels.resolve_class_list` (a first pass, sorted distinct
        values, as the in-memory default). Binary: at most two
        label values over the dataset; the negative one is the one that is not ``pos_label``.
    pos_label, threshold
        Binary: the positive class; a row is predicted positive when its score >= threshold.
    bins : int or array, optional
        Fixed score bin edges (or a number of equal bins over [0, 1]): constant-size
        :class:`~metrics_core.BinnedScoreCounts`, AUROC within its ``auroc_error_bound``.
    batch_rows : int
    filter : pyarrow.compute.Expression, optional
        Rows (or partitions) to read.
    progress : callable, optional
        ``progress(rows_done, rows_total)`` after each batch; ``rows_total`` from Parquet metadata
        (None for CSV/IPC, an upper bound under a row filter).
    parts : sequence of Part, optional
        Only these partitions.
    use_prediction : bool, optional
        None: the prediction column decides the confusion (as ``y_pred`` does in memory) when it
        exists.
    confusion_only : bool
        Keep only the confusion (no AUROC, curves or log loss): the scores only decide the
        predicted class (:func:`metrics_core.contract.predicted_class`); they are still checked.
        The fastest pass, constant memory.
    twin_weight : str, optional
        A column (e.g. expenditure) whose weighted confusion is counted in the same pass
        (``weighted_confusion``), for the ``weighted/<key>`` twin of every count-based metric.
    by_class : bool, optional
        Exact multiclass with score columns: one pass over all columns for everything but the
        one-vs-rest score statistics, then one pass per class over the label, that class's score
        and the weight, folded (:func:`~metrics_core.counts.fold_negative_runs`: same AUROC,
        about 2 x prevalence of the rows) before the next class: O(distinct scores of one class)
        instead of K times that. The metrics are identical; per-class curves draw as the
        unfolded ones (the lift within 2.5e-7: :func:`~metrics_core.counts.fold_negative_runs`).
        None: :func:`scans_by_class`. ``progress`` then counts the rows of every pass.
    threads : int, optional
        Threads computing batch statistics (None: 2, or ``CLASSWATCH_SCAN_THREADS``); the
        result does not depend on it (see :func:`scan_partial`).

    Returns
    -------
    BinaryStats or MulticlassStats

    Raises
    ------
    InputError
        Bad rows (naming the file, column, count and an example row:
        :func:`metrics_core.contract.check_batch`), missing columns, or no rows.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> path = tempfile.mkdtemp() + "/d.parquet"
    >>> pq.write_table(pa.table({"label": [0, 1, 1, 0], "score": [0.2, 0.7, 0.4, 0.1]}), path)
    >>> scan_stats(path, "binary", batch_rows=3).confusion.matrix.tolist()
    [[2, 0], [1, 1]]
    """
    if task == "multiclass" and bins is None and not confusion_only and scans_by_class(source, by_class, labels):
        return _scan_by_class(source, columns, labels=labels, batch_rows=batch_rows, filter=filter,
                              progress=progress, parts=parts, use_prediction=use_prediction, twin_weight=twin_weight,
                              threads=threads)
    partial = scan_partial(source, task, columns, labels=labels, pos_label=pos_label, threshold=threshold,
                           bins=bins, batch_rows=batch_rows, filter=filter, progress=progress, parts=parts,
                           use_prediction=use_prediction, confusion_only=confusion_only, twin_weight=twin_weight,
                           threads=threads)
    if partial is None:
        raise no_rows_error(source, filter)
    return partial.finish(pos_label, labels)


@dataclass(frozen=True)
class _Plan:
    """What a scan reads and how each batch is updated."""

    task: str
    layout: Layout
    class_list: np.ndarray | None
    twin_weight: str | None
    pos_label: object
    threshold: float
    bins: np.ndarray | None
    confusion_only: bool
    score_counts: bool

    @property
    def needed(self) -> list[str]:
        lay = self.layout
        cols = [lay.label, *lay.scores, lay.prediction, lay.weight, self.twin_weight]
        return [c for c in dict.fromkeys(cols) if c]

    @property
    def checks(self) -> dict:
        """check_batch's arguments for this scan."""
        lay = self.layout
        return dict(label=lay.label, scores=lay.scores, weight=lay.weight, prediction=lay.prediction,
                    labels=None if self.class_list is None else self.class_list.tolist())


def _plan(ds: pads.Dataset, source, task: str, columns: Columns, *, labels, filter, bins, use_prediction,
          twin_weight, **options) -> _Plan:
    """Resolve the columns and the class list of a scan (metadata, plus a label pass for multiclass)."""
    check_task(task)
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise InputError(f"bins: expected a number of bins >= 1 or an array of edges, got {bins}.")
        bins = np.linspace(0.0, 1.0, int(bins) + 1)
    name = where(source)
    require = ["label"] + (["weight"] if columns.weight else [])
    resolve_layout(ds.schema, task, columns, require=require, predictions=False, where=name)
    class_list = None
    if task == "multiclass":
        class_list = np.asarray(resolve_class_list(ds, task, columns, labels=labels, filter=filter, where=name))
    layout = resolve_layout(ds.schema, task, columns, labels=None if class_list is None else class_list.tolist(),
                            require=require, use_prediction=use_prediction, where=name)
    if task == "binary" and bins is not None and not layout.scores:
        raise InputError(f"{name}: binned statistics need the score column {columns.score!r}; the data has "
                         f"columns {ds.schema.names!r}.")
    if options["confusion_only"] and layout.prediction:  # the predictions decide: the scores are not read
        layout = replace(layout, scores=[])
    return _Plan(task, layout, class_list, twin_weight, bins=bins, **options)


def _update(plan: _Plan, batch: pa.RecordBatch, path, first_row: int) -> BinaryStats | MulticlassStats:
    """The statistics of one batch: the in-memory update step on its columns."""
    lay = plan.layout
    y = batch.column(lay.label)
    w = batch.column(lay.weight) if lay.weight else None
    tw = batch.column(plan.twin_weight) if plan.twin_weight else None
    yp = batch.column(lay.prediction) if lay.prediction else None
    if plan.task == "binary":
        ys = batch.column(lay.scores[0]) if lay.scores else None
        if plan.confusion_only and yp is None:
            check_batch(batch, path, scores=lay.scores, first_row=first_row)
            # 0/1 int8 roles (numpy's unique is hash-based for int8, sort-based for bool)
            return binary_stats(pc.cast(_is_positive(y, plan.pos_label), pa.int8()),
                                y_pred=predicted_class(ys, "binary", plan.threshold), pos_label=1,
                                threshold=plan.threshold, sample_weight=w, twin_weight=tw)
        return binary_stats(y, ys, yp, threshold=plan.threshold,
                            pos_label=plan.pos_label, sample_weight=w, bins=plan.bins, twin_weight=tw)
    ys = np.column_stack([batch.column(c).to_numpy(zero_copy_only=False) for c in lay.scores]) \
        if lay.scores else None
    if ys is not None and ys.shape[1] > 1 and score_sums_off(ys.sum(axis=1)).any():
        raise InputError("per-class scores that do not sum to 1")  # restated by the contract (_explain)
    if plan.confusion_only and yp is None and ys is not None:
        yp, ys = plan.class_list[predicted_class(v.check_scores(ys), "multiclass")], None
    return multiclass_stats(y, yp, y_score=ys, labels=plan.class_list, sample_weight=w, bins=plan.bins,
                            twin_weight=tw, score_counts=plan.score_counts)


def _explain(exc: InputError, plan: _Plan, ds, path, batch, first_row: int, filter, batch_rows: int) -> InputError:
    """The error of a failed batch update as the contract states it: file, column, count, example row."""
    try:
        check_batch(batch, path, first_row=first_row, **plan.checks)
    except InputError as bad:
        return file_error(bad, ds, path, plan.needed, filter=filter, batch_rows=batch_rows, **plan.checks)
    if plan.task == "binary":  # the batch's classes, named by file and column, and where each one is
        lay = plan.layout
        try:
            check_binary_labels(batch, path, label=lay.label, prediction=lay.prediction, weight=lay.weight,
                                pos_label=plan.pos_label, seen=set(), first_row=first_row, every_batch=True)
        except InputError as bad:
            return bad
    return InputError(f"{path} (rows {first_row}-{first_row + batch.num_rows - 1} of the file): {exc}")


class _ExactScores:
    """Exact score counts taken out of each batch's statistics and merged by bucket (BucketedScoreMerger)."""

    def __init__(self, threads: int = 1):
        self.mergers: list[BucketedScoreMerger] | None = None
        self.threads = threads

    def take(self, stats):
        exact = exact_score_counts(stats.scores)
        if not exact:
            return stats
        self.mergers = self.mergers or [BucketedScoreMerger(threads=self.threads) for _ in exact]
        for m, sc in zip(self.mergers, exact):
            m.push(sc)
        return replace(stats, scores=None)

    def put_back(self, stats):
        if not self.mergers:
            return stats
        merged = [m.result() for m in self.mergers]
        self.mergers = None
        stats = replace(stats, scores=merged[0] if isinstance(stats, BinaryStats) else tuple(merged))
        del merged
        release_free_memory()
        return stats


def scan_partial(source, task: str, columns: Columns = Columns(), *, labels: Sequence | None = None, pos_label=1,
                 threshold: float = 0.5, bins=None, batch_rows: int = 1_000_000, filter=None,
                 progress: Progress | None = None, parts: Sequence[Part] | None = None,
                 use_prediction: bool | None = None, confusion_only: bool = False,
                 twin_weight: str | None = None, score_counts: bool = True,
                 threads: int | None = None) -> PartialStats | None:
    """:func:`scan_stats` of some partitions as a mergeable :class:`~metrics_core.dataset.PartialStats`.

    The map step of a distributed evaluation: merge the partials of all partitions, then
    ``.finish(pos_label, labels)``.

    Parameters
    ----------
    source, task, columns, pos_label, threshold, bins, batch_rows, filter, progress, parts, use_prediction, \
confusion_only, twin_weight
        As for :func:`scan_stats`.
    labels : sequence, optional
        Multiclass: the same class list in every partition (from the spec, or the union of
        :func:`~metrics_core.dataset.labels.class_labels` over the partitions).
    score_counts : bool
        False (multiclass) leaves out the one-vs-rest score statistics, as
        :func:`metrics_core.report.multiclass_stats` does.
    threads : int, optional
        Threads computing batch statistics (:func:`~metrics_core.dataset.parallel.ordered_map`;
        None: :func:`~metrics_core.threads.default_threads`). The batches are merged in
        the same order whatever the number, so the result does not depend on it.

    Returns
    -------
    PartialStats or None
        None when the partitions hold no rows.

    Raises
    ------
    InputError
        As :func:`scan_stats`.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> path = tempfile.mkdtemp() + "/d.parquet"
    >>> pq.write_table(pa.table({"label": ["no", "yes"], "score": [0.2, 0.7]}), path)
    >>> p = scan_partial(path, "binary", pos_label="yes")
    >>> sorted(p.seen), p.merge(p).finish("yes").confusion.matrix.tolist()
    (['no', 'yes'], [[2, 0], [0, 2]])
    """
    ds = open_dataset(source)
    plan = _plan(ds, source, task, columns, labels=labels, filter=filter, bins=bins, use_prediction=use_prediction,
                 twin_weight=twin_weight, pos_label=pos_label, threshold=threshold, confusion_only=confusion_only,
                 score_counts=score_counts)
    threads = threads or default_threads()
    merger, exact, seen = TreeMerger(), _ExactScores(threads), set()

    def explain(exc: InputError, path, batch, first_row: int) -> InputError:
        return _explain(exc, plan, ds, path, batch, first_row, filter, batch_rows)

    for path, batch, first_row, stats in scan_batches(
            ds, plan.needed, lambda batch, path, first_row: _update(plan, batch, path, first_row), filter=filter,
            batch_rows=batch_rows, parts=parts, threads=threads, explain=explain, progress=progress,
            total=total_rows(ds, filter, parts) if progress is not None else None,
            imports=lazy_modules(weighted=plan.layout.weight is not None)):
        if task == "binary":
            lay = plan.layout
            check_binary_labels(batch, path, label=lay.label, prediction=lay.prediction, weight=lay.weight,
                                pos_label=plan.pos_label, seen=seen, first_row=first_row)
            # Batches merge by role (negative, positive); PartialStats.finish names the classes.
            roles = np.array([0, 1])
            stats = replace(stats, confusion=relabel(stats.confusion, roles),
                            weighted_confusion=relabel(stats.weighted_confusion, roles))
        merger.push(PartialStats(exact.take(stats)))
    result = merger.result()
    if result is None:
        return None
    return PartialStats(exact.put_back(result.stats), frozenset(seen))


def _scan_by_class(source, columns: Columns, *, labels, batch_rows, filter, progress, parts, use_prediction,
                   twin_weight, threads) -> MulticlassStats:
    """:func:`scan_stats` for exact multiclass, one class at a time (its ``by_class``)."""
    ds = open_dataset(source)
    class_list = np.asarray(resolve_class_list(ds, "multiclass", columns, labels=labels, filter=filter,
                                               where=where(source)))
    present = [c for c in columns.class_score_columns(class_list.tolist(), ds.schema.names) if c in ds.schema.names]
    passes = 1 + (len(class_list) if present else 0)
    total = total_rows(ds, filter, parts) if progress is not None else None
    offset = 0

    def step(done, _total):
        if progress is not None:
            progress(offset + done, None if total is None else total * passes)

    # First pass: validates every row (error messages name the file) and counts all but the
    # one-vs-rest statistics.
    partial = scan_partial(source, "multiclass", columns, labels=class_list, batch_rows=batch_rows, filter=filter,
                           progress=step, parts=parts, use_prediction=use_prediction, twin_weight=twin_weight,
                           score_counts=False, threads=threads)
    if partial is None:
        raise no_rows_error(source, filter)
    stats = partial.stats
    if not present:
        return stats
    folded = []
    for j in range(len(class_list)):
        offset = stats.n_rows * (j + 1)
        folded.append(scan_class_scores(ds, columns, class_list, j, batch_rows=batch_rows, filter=filter,
                                        parts=parts, progress=step, threads=threads))
    return replace(stats, scores=tuple(folded))


def scan_class_scores(source, columns: Columns, class_list: Sequence, j: int, *, batch_rows: int = 1_000_000,
                      filter=None, parts: Sequence[Part] | None = None, progress: Progress | None = None,
                      threads: int | None = None):
    """The exact one-vs-rest statistic of class ``class_list[j]``, folded: one pass of a class-at-a-time scan.

    Parameters
    ----------
    source : str, path or pyarrow.dataset.Dataset
    columns : Columns
    class_list : sequence
        The class list (the score columns are ``score_<class>``).
    j : int
        The class.
    batch_rows, filter, parts
        As for :func:`scan_stats` (the same batches as a single pass).
    progress : callable, optional
        ``progress(rows_done, None)`` after each batch.
    threads : int, optional
        As for :func:`scan_partial`.

    Returns
    -------
    FoldedScoreCounts
        :func:`~metrics_core.counts.fold_negative_runs` of the ScoreCounts of ``label == class``
        against its score, merged in a tree: a final statistic (not mergeable).

    Notes
    -----
    The rows are NOT validated here: run the first pass (:func:`scan_partial` with
    ``score_counts=False``) before, as :func:`scan_stats` and the Dask flow do.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> path = tempfile.mkdtemp() + "/d.parquet"
    >>> pq.write_table(pa.table({"label": ["a", "b"], "score_a": [0.8, 0.3], "score_b": [0.2, 0.7]}), path)
    >>> scan_class_scores(path, Columns(), ["a", "b"], 0).scores.size > 0
    True
    """
    ds = open_dataset(source)
    class_list = np.asarray(list(class_list))
    score_cols = columns.class_score_columns(class_list.tolist(), ds.schema.names)
    # The dtype a single pass would see (its N x K array): identical keys, so identical sums.
    dtype = np.result_type(*[read_type(ds.schema.field(c).type).to_pandas_dtype() for c in score_cols])
    needed = [columns.label, score_cols[j]] + ([columns.weight] if columns.weight else [])
    merger = BucketedScoreMerger(threads=threads or default_threads())

    def batch_counts(batch, _path, _row) -> ScoreCounts:
        ti = class_indices(batch.column(columns.label), class_list)
        s = batch.column(score_cols[j]).to_numpy(zero_copy_only=False).astype(dtype, copy=False)
        w = v.check_weights(batch.column(columns.weight), batch.num_rows) if columns.weight else None
        return ScoreCounts.from_arrays(ti == j, s, w)

    for *_, counts in scan_batches(ds, needed, batch_counts, filter=filter, batch_rows=batch_rows, parts=parts,
                                   threads=threads, progress=progress,
                                   imports=lazy_modules(weighted=columns.weight is not None)):
        merger.push(counts)
    merged = merger.result()
    del merger
    folded = fold_negative_runs(merged if merged is not None else ScoreCounts.empty(columns.weight is not None))
    del merged
    release_free_memory()
    return folded


def _is_positive(y: pa.Array, pos_label) -> pa.Array:
    """``y == pos_label`` as a boolean Arrow array (nulls stay null, for the null-label check)."""
    try:
        return pc.equal(y, pos_label)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError):
        return pa.array(y.to_numpy(zero_copy_only=False) == pos_label, mask=np.asarray(y.is_null()))
