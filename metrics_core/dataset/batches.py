"""Partitions of a dataset and the batches read from them (or from a table in memory); bad rows restated
for a whole file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

from metrics_core.contract import decimals_as_floats, missing_columns, problem_error, row_problems
from metrics_core.dataset.formats import open_dataset, where
from metrics_core.dataset.location import store_error, url_of
from metrics_core.errors import InputError

__all__ = ["Part", "batches_with_rows", "file_error", "group_parts", "iter_batches", "no_rows_error",
           "partition_groups", "parts_of", "source_batches", "total_rows"]


@dataclass(frozen=True)
class Part:
    """One partition of a dataset: a file (fragment) and optionally some of its Parquet row groups.

    The unit of work of a Dask/Prefect map (``tasks.stats``); ``n_rows`` is from the file
    metadata (None when unknown, e.g. CSV); ``first_row`` is the index in the file of the part's
    first row (for error messages).
    """

    path: str
    row_groups: tuple[int, ...] | None = None
    n_rows: int | None = None
    first_row: int = 0


def parts_of(source, *, filter=None, target_rows: int | None = None) -> list[Part]:
    """Partitions of a dataset for a parallel map: one per file, or per range of Parquet row groups.

    Parameters
    ----------
    source : str, path or pyarrow.dataset.Dataset
        As for :func:`~metrics_core.dataset.open_dataset`.
    filter : pyarrow.compute.Expression, optional
        Prunes files by their hive partition values.
    target_rows : int, optional
        A Parquet file larger than this is split into consecutive row-group ranges of about
        ``target_rows`` rows (a row group is never split).

    Returns
    -------
    list of Part
        In dataset order; files with no rows are left out.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> path = tempfile.mkdtemp() + "/d.parquet"
    >>> pq.write_table(pa.table({"label": list(range(10))}), path, row_group_size=4)
    >>> [(p.row_groups, p.n_rows, p.first_row) for p in parts_of(path, target_rows=5)]
    [((0, 1), 8, 0), ((2,), 2, 8)]
    """
    parts = []
    for frag in open_dataset(source).get_fragments(filter=filter):
        if not isinstance(frag, pads.ParquetFileFragment):
            parts.append(Part(frag.path, None, None))
            continue
        md = frag.metadata
        sizes = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
        if sum(sizes) == 0:
            continue
        if target_rows is None or sum(sizes) <= target_rows or len(sizes) == 1:
            parts.append(Part(frag.path, None, sum(sizes)))
            continue
        start, acc, offset = 0, 0, 0
        for i, size in enumerate(sizes):
            acc += size
            if acc >= target_rows or i == len(sizes) - 1:
                parts.append(Part(frag.path, tuple(range(start, i + 1)), acc, offset))
                start, offset, acc = i + 1, offset + acc, 0
    return parts


def group_parts(parts: Sequence[Part], target_rows: int) -> list[list[Part]]:
    """Consecutive partitions grouped into tasks of about ``target_rows`` rows (unknown sizes: one each).

    Parameters
    ----------
    parts : sequence of Part
        In dataset order (:func:`parts_of`).
    target_rows : int
        A group is closed once it holds at least this many rows; a part of unknown size is a group
        of its own.

    Returns
    -------
    list of list of Part
        The groups, in dataset order (empty for no parts).

    Examples
    --------
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


def partition_groups(source, *, filter=None, target_rows: int | None = None,
                     tasks: int | Callable[[], int] = 1) -> tuple[list[list[Part]], int | None]:
    """The partition groups of a distributed scan (one task each) and the source's rows: the one plan
    of every distributed map (Dask and Spark, evaluation and monitoring).

    Parameters
    ----------
    source : str, path or pyarrow.dataset.Dataset
        As for :func:`~metrics_core.dataset.open_dataset`.
    filter : pyarrow expression, optional
        Prunes files by their hive partition values (:func:`parts_of`).
    target_rows : int, optional
        Rows a group (large Parquet files split into row-group ranges of about as many). None: the
        known rows spread over ``tasks`` groups, rounded up.
    tasks : int or callable
        The number of groups aimed at (a callable is asked only when ``target_rows`` is None, so a
        cluster is not queried for nothing).

    Returns
    -------
    (list of list of Part, int or None)
        The groups in dataset order (empty when the source has no rows, or none under the
        filter's partitions), and the rows of the source (None when a file's count is not in its
        metadata, e.g. CSV).

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> path = tempfile.mkdtemp() + "/d.parquet"
    >>> pq.write_table(pa.table({"label": list(range(10))}), path, row_group_size=2)
    >>> groups, total = partition_groups(path, tasks=2)
    >>> [[p.row_groups for p in g] for g in groups], total
    ([[(0, 1, 2)], [(3, 4)]], 10)
    """
    files = parts_of(source, filter=filter)
    if not files:
        return [], 0
    known = [p.n_rows for p in files if p.n_rows is not None]
    if target_rows is None:
        n = tasks() if callable(tasks) else tasks
        target_rows = max(1, -(-sum(known) // max(1, n))) if known else 1
    groups = group_parts(parts_of(source, filter=filter, target_rows=target_rows), target_rows)
    return groups, (sum(known) if len(known) == len(files) else None)


def total_rows(ds: pads.Dataset, filter=None, parts: Sequence[Part] | None = None) -> int | None:
    """Rows of a dataset (or of some parts) from Parquet metadata.

    Parameters
    ----------
    ds : pyarrow.dataset.Dataset
    filter : pyarrow expression, optional
        Prunes files by partition; a row filter is applied only when reading, so the count is then
        an upper bound.
    parts : sequence of Part, optional

    Returns
    -------
    int or None
        None when a file's row count is not in its metadata (CSV, IPC).
    """
    if parts is not None and all(p.n_rows is not None for p in parts):
        return sum(p.n_rows for p in parts)
    paths = {p.path for p in parts} if parts is not None else set()
    total = 0
    for frag in ds.get_fragments(filter=filter):
        if parts is not None and frag.path not in paths:
            continue
        if not isinstance(frag, pads.ParquetFileFragment):
            return None
        try:
            total += frag.metadata.num_rows
        except (pa.ArrowException, OSError) as exc:  # a truncated or corrupt file among the others
            raise InputError(f"{frag.path}: cannot be read: {exc}") from None
    return total


def iter_batches(source, columns_needed: Sequence[str], *, filter=None, batch_rows: int = 1_000_000,
                 parts: Sequence[Part] | None = None) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Yield ``(file path, RecordBatch)`` with only ``columns_needed``, at most ``batch_rows`` rows each.

    Parameters
    ----------
    source : str, path or pyarrow.dataset.Dataset
        As for :func:`~metrics_core.dataset.open_dataset`.
    columns_needed : sequence of str
        The columns to read.
    filter : pyarrow.compute.Expression, optional
        E.g. ``pyarrow.dataset.field("period") == "2026-03"``: partition filters skip files, row
        filters drop rows (row numbers in error messages then count the rows that pass it).
    batch_rows : int
        Most rows per batch. Small batches of one file are combined up to it; a batch never
        spans two files, so every batch names its file.
    parts : sequence of Part, optional
        Restricts the scan to some partitions.

    Yields
    ------
    tuple of (str, pyarrow.RecordBatch)
        Files in dataset order; empty files yield nothing. Memory: about one batch of the
        requested columns (read-ahead is kept small).

    Raises
    ------
    InputError
        Missing columns (listing the columns that exist), or a file that cannot be read.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> path = tempfile.mkdtemp() + "/d.parquet"
    >>> pq.write_table(pa.table({"label": list(range(5)), "score": [0.1] * 5}), path)
    >>> [b.num_rows for _, b in iter_batches(path, ["label"], batch_rows=2)]
    [2, 2, 1]
    """
    for path, batch, _ in batches_with_rows(source, columns_needed, filter=filter, batch_rows=batch_rows,
                                            parts=parts):
        yield path, batch


def batches_with_rows(source, columns_needed: Sequence[str], *, filter=None, batch_rows: int = 1_000_000,
                      parts: Sequence[Part] | None = None) -> Iterator[tuple[str, pa.RecordBatch, int]]:
    """:func:`iter_batches` with the row number of each batch.

    Parameters
    ----------
    source, columns_needed, filter, batch_rows, parts
        As for :func:`iter_batches`.

    Yields
    ------
    tuple
        ``(path, batch, index in the file of the batch's first row)``.
    """
    ds = open_dataset(source)
    columns_needed = list(dict.fromkeys(columns_needed))
    absent = {c: None for c in columns_needed if c not in ds.schema.names}
    if absent:
        raise missing_columns(where(source), absent, ds.schema.names)
    if parts is not None:
        by_path = {f.path: f for f in ds.get_fragments(filter=filter)}
        work = [(by_path[p.path], p.row_groups, p.first_row) for p in parts if p.path in by_path]
    else:
        work = [(f, None, 0) for f in ds.get_fragments(filter=filter)]
    for frag, row_groups, first_row in work:
        if row_groups is not None:
            frag = frag.subset(row_group_ids=list(row_groups))
        try:
            yield from _fragment_batches(ds, frag, columns_needed, filter, batch_rows, first_row)
        except (pa.ArrowException, OSError) as exc:
            path = _path_of(frag)
            name = url_of(getattr(frag, "filesystem", None), path)
            if name != path:  # an object store's refusal (a denied read), said with what to set
                raise store_error(name, exc) from None
            if not isinstance(exc, pa.ArrowException):
                raise
            raise InputError(f"{path}: cannot be read: {exc}") from None


def source_batches(source, columns_needed: Sequence[str], *, filter=None, batch_rows: int = 1_000_000,
                   parts: Sequence[Part] | None = None, where: str = "table"
                   ) -> Iterator[tuple[str, pa.RecordBatch, int]]:
    """:func:`batches_with_rows` of a dataset, or of a table in memory as ONE batch named ``where``.

    A table is one batch so that an error counts its bad rows over the whole table (it is in
    memory already); ``batch_rows`` and ``parts`` are then unused.

    Parameters
    ----------
    source : str, path, pyarrow.dataset.Dataset or pyarrow.Table
    columns_needed, filter, batch_rows, parts
        As for :func:`iter_batches`.
    where : str
        The name of a table in messages (e.g. ``"reference"``).

    Yields
    ------
    tuple
        ``(path or where, batch, index in the file of the batch's first row)``.

    Raises
    ------
    InputError
        A missing column (listing the table's columns), or as :func:`iter_batches`.

    Examples
    --------
    >>> [(name, b.num_rows, row) for name, b, row in source_batches(pa.table({"label": [0, 1, 0]}), ["label"])]
    [('table', 3, 0)]
    """
    if not isinstance(source, pa.Table):
        yield from batches_with_rows(source, columns_needed, filter=filter, batch_rows=batch_rows, parts=parts)
        return
    columns_needed = list(dict.fromkeys(columns_needed))
    missing = [c for c in columns_needed if c not in source.column_names]
    if missing:
        raise InputError(f"{where}: missing column {missing[0]!r}; the table has {source.column_names[:20]}.")
    table = source.select(columns_needed)
    if filter is not None:
        table = pads.dataset(table).to_table(filter=filter)
    yield from ((where, decimals_as_floats(b), 0) for b in table.combine_chunks().to_batches() if b.num_rows)


def _fragment_batches(ds, frag, columns, filter, batch_rows, first_row):
    """The batches of one fragment, small ones combined up to ``batch_rows`` rows."""
    scanner = pads.Scanner.from_fragment(frag, schema=ds.schema, columns=columns, filter=filter,
                                         batch_size=batch_rows, batch_readahead=2, fragment_readahead=1)
    pending, pending_rows = [], 0
    for batch in scanner.to_batches():
        if batch.num_rows == 0:
            continue
        pending.append(decimals_as_floats(batch))
        pending_rows += batch.num_rows
        if pending_rows >= batch_rows:
            combined = pending[0] if len(pending) == 1 else pa.concat_batches(pending)
            pending, pending_rows = [], 0
            for start in range(0, combined.num_rows, batch_rows):
                yield _path_of(frag), combined.slice(start, batch_rows), first_row + start
            first_row += combined.num_rows
    if pending:
        yield _path_of(frag), pending[0] if len(pending) == 1 else pa.concat_batches(pending), first_row


def _path_of(frag) -> str:
    """A fragment's file, or "dataset" for rows in memory (a table, a Spark partition's batches)."""
    return getattr(frag, "path", "dataset")


def file_error(err: InputError, source, path: str, columns_needed: Sequence[str], *, filter=None,
               batch_rows: int = 1_000_000, **checks) -> InputError:
    """The error of :func:`~metrics_core.contract.check_batch` for one batch, restated for the whole file.

    Parameters
    ----------
    err : InputError
        The batch's error (its ``bad_rows`` names the column and the problem).
    source : str, path or pyarrow.dataset.Dataset
        The dataset ``path`` belongs to.
    path : str
        The file of the failing batch (read a second time, alone).
    columns_needed : sequence of str
        The columns the scan read (the example row shows them).
    filter : pyarrow.compute.Expression, optional
    batch_rows : int
    **checks
        The keyword arguments of ``check_batch`` (label, prediction, scores, weight, price, labels).

    Returns
    -------
    InputError
        The bad rows of the same problem counted over every batch of the file; the example stays
        the first bad row. An error that is not about rows (a missing column) comes back as is.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> from metrics_core.contract import check_batch
    >>> path = tempfile.mkdtemp() + "/d.parquet"
    >>> pq.write_table(pa.table({"label": [0, None, 1, None]}), path)
    >>> try:
    ...     check_batch(next(iter_batches(path, ["label"], batch_rows=2))[1], path, label="label")
    ... except InputError as e:
    ...     print(str(file_error(e, path, path, ["label"], label="label")).split(": ", 2)[2][:40])
    null label in 2 row(s) of the file, e.g.
    """
    if err.bad_rows is None:
        return err
    count, first = 0, None
    for _path, batch, first_row in batches_with_rows(source, columns_needed, filter=filter, batch_rows=batch_rows,
                                                     parts=[Part(str(path))]):
        for p in row_problems(batch, path, **checks):
            if (p.column, p.problem) == err.bad_rows:
                idx = np.flatnonzero(p.mask)
                count += idx.size
                if first is None:
                    first = (p, first_row + int(idx[0]), batch, int(idx[0]))
    if first is None:  # (cannot happen: the failing batch is part of the file)
        return err
    p, row, batch, i = first
    return problem_error(path, p, count, row, batch, i)


def no_rows_error(source, filter=None) -> InputError:
    """The error for a scan that found no rows (an empty dataset, or none under the filter).

    Parameters
    ----------
    source : str, path or pyarrow.dataset.Dataset
    filter : pyarrow expression, optional

    Returns
    -------
    InputError

    Examples
    --------
    >>> print(no_rows_error("d.parquet"))
    d.parquet: no rows to evaluate. Check the data path and the period.
    """
    under = f" under the filter {filter}" if filter is not None else ""
    return InputError(f"{where(source)}: no rows to evaluate{under}. Check the data path and the period.")
