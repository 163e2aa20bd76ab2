"""The class list of a source (:func:`resolve_class_list`), the class values of a scan's batches (rows of
positive weight), and where each class is when a binary source has too many."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core.contract import (Columns, binary_classes, check_class_list, check_task, class_rows, counted_rows,
                                   format_class_rows, missing_columns, same_kind, score_column_classes)
from metrics_core.dataset.batches import Part
from metrics_core.dataset.formats import open_dataset, where as where_of
from metrics_core.dataset.parallel import scan_batches
from metrics_core.errors import InputError

__all__ = ["batch_class_rows", "check_binary_labels", "class_labels", "class_value_columns", "data_classes",
           "dataset_class_rows", "resolve_class_list", "weighted_values"]


def resolve_class_list(source, task: str, columns: Columns = Columns(), *, labels: Sequence | None = None,
                       positive_class=1, filter=None, batch_rows: int = 4_000_000, where: str | None = None,
                       found: Iterable | None = None) -> list:
    """The class list of a task on a source: the one rule of the flows, the notebook API and the scans.

    ``labels`` when given, else the classes of the data (:func:`class_labels`): the distinct
    values of the label column and of the prediction column (when its values are of the same
    kind) on the rows that count, with, for a multiclass task, the classes named by the score
    columns (:func:`metrics_core.contract.score_column_classes`), sorted. The rows that count are
    those of positive weight (:func:`metrics_core.contract.counted_rows`): a row of weight 0 is
    no row, so a class held only by such rows is not a class, as in memory (scikit-learn: a
    weight of 0 is the same as no row). A null weight counts (the scan rejects it as a null
    weight, and the class list must not hide it); a null label is an unlabelled row, not a class.

    Parameters
    ----------
    source : str, path, pyarrow.dataset.Dataset or pyarrow.Table
        A dataset on disk is read in a streamed pass over the label, prediction and weight
        columns only; a table in memory is read as it is.
    task : {"binary", "multiclass"}
    columns : Columns
        The column roles (the label column may be absent when the prediction column exists).
    labels : sequence, optional
        The class list given (a run spec's ``labels``, ``labels=``): checked, not read from the data.
    positive_class
        Binary: the positive class, matched to the label type
        (:func:`metrics_core.contract.binary_classes`).
    filter : pyarrow.compute.Expression, optional
        The rows read.
    batch_rows : int
        Rows per batch of the streamed pass.
    where : str, optional
        The source in messages (default its path; name a table, e.g. ``"reference"``).
    found : iterable, optional
        The distinct label and prediction values of the rows that count, found by the caller's
        own pass (e.g. :func:`class_labels` mapped over partitions, ``with_scores=False``); None:
        :func:`class_labels` reads them.

    Returns
    -------
    list
        Multiclass: the classes (:func:`metrics_core.contract.check_class_list`). Binary:
        ``[negative, positive]``.

    Raises
    ------
    InputError
        No class (no labelled row), duplicate classes, neither a label nor a prediction column;
        binary: a positive class that is not a class, or a third class: then, when the classes
        came from the data, the message says where each one is (its rows of positive weight and
        first row, :func:`dataset_class_rows`, a second pass).

    Examples
    --------
    >>> table = pa.table({"label": ["b", "a", "c"], "weight": [1.0, 2.0, 0.0]})
    >>> resolve_class_list(table, "multiclass", Columns(weight="weight"))
    ['a', 'b']
    >>> resolve_class_list(table, "binary", Columns(weight="weight"), positive_class="b")
    ['a', 'b']
    """
    check_task(task)
    name = where or where_of(source)
    at = f"{name}: column {columns.label!r}"
    with_scores = task == "multiclass"
    if labels is not None:
        values = list(labels)
    elif found is not None:
        schema = source.schema if isinstance(source, pa.Table) else open_dataset(source).schema
        values = data_classes(found, schema, columns, with_scores=with_scores)
    else:
        values = class_labels(source, columns, filter=filter, batch_rows=batch_rows, with_scores=with_scores,
                              where=name).tolist()
    if task == "multiclass":
        return check_class_list(values, where=at, under_filter=filter is not None)
    try:
        return binary_classes(values, positive_class, where=at)
    except InputError as exc:
        if labels is not None or len(values) <= 2:  # an error about the list given, or about the positive class
            raise
        where_each = dataset_class_rows(source, columns, filter=filter, batch_rows=batch_rows, where=name)
        raise InputError(f"{exc} Where they are: {where_each}.") from None


def weighted_values(batch: pa.RecordBatch, names: Sequence[str], weight: str | None) -> list[pa.Array]:
    """The columns ``names`` of ``batch`` on its rows of positive weight (a row of weight 0 is an absent
    row, as in memory). Only these columns are filtered, not the batch's scores and weights."""
    columns = [batch.column(name) for name in names]
    keep = counted_rows(batch, weight)
    return columns if keep is None else [column.filter(pa.array(keep)) for column in columns]


def class_columns(batch: pa.RecordBatch, label: str, prediction: str | None) -> list[str]:
    """The columns of a batch that hold class values: the label, and the prediction when its values are of the
    same kind (:func:`class_value_columns`)."""
    return class_value_columns(batch.schema, Columns(label=label, prediction=prediction), bool(prediction))[0]


def check_binary_labels(batch: pa.RecordBatch, path, *, label: str, prediction: str | None, weight: str | None,
                        pos_label, seen: set, first_row: int = 0, every_batch: bool = False) -> None:
    """Add a binary batch's class values (rows of positive weight) to ``seen``, and check them.

    Parameters
    ----------
    batch : pyarrow.RecordBatch
        Rows of the file ``path``, the first of them row ``first_row`` of the file.
    label, prediction, weight : column names
        The roles (prediction and weight may be None).
    pos_label
        The positive class.
    seen : set
        The class values of the batches before this one; updated in place.
    every_batch : bool
        Check even when there are at most two classes (a positive class that is neither of two);
        by default only more than two classes are checked, as the batches of a binary scan pass
        the positive-class check one by one.

    Raises
    ------
    InputError
        From :func:`metrics_core.contract.classes.binary_classes`, naming the file and the label column,
        followed, when there are more than two classes, by where each class of this batch is:
        its number of rows and its first row (the odd one out is usually the rare one).
    """
    names = class_columns(batch, label, prediction)
    for values in weighted_values(batch, names, weight):
        seen.update(pc.unique(values).to_pylist())
    if len(seen) <= 2 and not every_batch:
        return
    try:
        binary_classes(sorted(seen, key=str), pos_label, where=f"{path}: column {label!r}", absent=None)
    except InputError as exc:
        rows = f" {batch_class_rows(batch, names, weight, first_row)}" if len(seen) > 2 else ""
        raise InputError(f"{exc}{rows}") from None


def batch_class_rows(batch: pa.RecordBatch, names: Sequence[str], weight: str | None, first_row: int = 0) -> str:
    """Where each class value of a batch is (:func:`metrics_core.contract.classes.class_rows`), by file row.

    >>> print(batch_class_rows(pa.record_batch({"label": [0, 1, 0, 2, 1]}), ["label"], None, first_row=100)[29:])
    0 in 2 row(s) of column 'label' (first: row 100); 1 in 2 (first: row 101); 2 in 1 (first: row 103).
    """
    keep = counted_rows(batch, weight)
    columns = {f"column {name!r}": batch.column(name).to_numpy(zero_copy_only=False) for name in names}
    return f"In rows {first_row}-{first_row + batch.num_rows - 1} of the file: {class_rows(columns, keep, first_row)}."


def class_value_columns(schema: pa.Schema, columns: Columns, with_prediction: bool | None = None,
                        where: str = "data") -> tuple[list[str], str | None]:
    """``(columns that hold class values, weight column or None)`` of a dataset: the label column, and the
    prediction column when ``with_prediction`` (None: when the column exists) and its values are of the
    same kind (or there is no label column).

    Raises
    ------
    InputError
        Neither column exists (naming both, and the columns that exist).
    """
    names = [columns.label] if columns.label in schema.names else []
    if with_prediction is None:
        with_prediction = columns.prediction in schema.names
    if with_prediction and columns.prediction in schema.names and (
            not names or same_kind(schema.field(columns.prediction).type, schema.field(columns.label).type)):
        names.append(columns.prediction)
    if not names:
        raise missing_columns(where, {columns.label: "label"}, schema.names,
                              why=f"The class list comes from the labels (or the prediction column "
                                  f"{columns.prediction!r}); or pass the class list (labels).")
    return names, columns.weight if columns.weight in schema.names else None


def class_labels(source, columns: Columns = Columns(), *, filter=None, batch_rows: int = 4_000_000,
                 with_prediction: bool | None = None, with_scores: bool = True,
                 parts: Sequence[Part] | None = None, where: str | None = None) -> np.ndarray:
    """The classes of a dataset from a first cheap pass: its sorted distinct labels (rows of positive weight).

    Parameters
    ----------
    source : str, path, pyarrow.dataset.Dataset or pyarrow.Table
    columns : Columns
    filter : pyarrow.compute.Expression, optional
    batch_rows : int
    with_prediction : bool, optional
        Also the values of the prediction column (when of the same kind as the labels); None:
        when the column exists.
    with_scores : bool
        Also the classes named by the per-class score columns
        (:func:`metrics_core.contract.score_column_classes`).
    parts : sequence of Part, optional
        Only these partitions (the union over all parts is the class list).
    where : str, optional
        The source in messages.

    Returns
    -------
    numpy.ndarray
        Sorted: what :func:`metrics_core.multiclass_report` infers in memory from the same rows.
        Pass the class list of the spec instead when there is one: it fixes the order and skips
        this pass. :func:`resolve_class_list` checks it.

    Raises
    ------
    InputError
        Neither a label nor a prediction column, or a score column naming no value of the label type.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> path = tempfile.mkdtemp() + "/d.parquet"
    >>> pq.write_table(pa.table({"label": ["b", "a"], "prediction": ["c", "a"], "score_d": [0.1, 0.2]}), path)
    >>> class_labels(path).tolist()
    ['a', 'b', 'c', 'd']
    """
    schema = source.schema if isinstance(source, pa.Table) else open_dataset(source).schema
    name = where or where_of(source)
    cols, weight = class_value_columns(schema, columns, with_prediction, where=name)

    def distinct(batch: pa.RecordBatch, _path, _row) -> list:
        return [pc.unique(values).drop_null() for values in weighted_values(batch, cols, weight)]

    seen: set = set()
    # One thread: the pass is cheap, and on a Dask worker (parts) the cluster already runs one task per core.
    for *_, found in scan_batches(source, cols + ([weight] if weight else []), distinct, filter=filter,
                                  batch_rows=batch_rows, parts=parts, threads=1, where=name):
        for values in found:
            seen.update(values.to_pylist())
    return np.array(data_classes(seen, schema, columns, with_scores=with_scores))


def data_classes(values: Iterable, schema: pa.Schema, columns: Columns, *, with_scores: bool = True) -> list:
    """The classes of the data from its distinct label and prediction values (of one pass or of a map
    over partitions): with the classes named by the score columns when ``with_scores``, sorted.

    >>> data_classes({"b", "a"}, pa.schema([("label", pa.string()), ("score_c", pa.float64())]), Columns())
    ['a', 'b', 'c']
    """
    classes = set(values)
    if with_scores:
        classes.update(score_column_classes(schema, columns))
    return sorted(classes)


def dataset_class_rows(source, columns: Columns, *, filter=None, batch_rows: int = 4_000_000,
                       where: str = "table") -> str:
    """Where each class value of a whole dataset is: its rows (of positive weight) in the label
    column (and the prediction column, :func:`class_value_columns`) and its first row, by file and
    row in the file; missing values are not a class.

    A second pass, for the error about too many classes of a binary task when the class list
    came from a distinct-values pass (:func:`class_labels`). Under a ``filter``, row numbers
    count the rows it selects in each file. A table in memory (named ``where`` in messages) gives
    its own row numbers.

    >>> import tempfile, pyarrow.parquet as pq
    >>> path = tempfile.mkdtemp() + "/d.parquet"
    >>> pq.write_table(pa.table({"label": [0, None, 1, 2, 0]}), path)
    >>> print(dataset_class_rows(path, Columns()))
    0 in 2 row(s) of column 'label' (first: row 0 of d.parquet); 1 in 1 (first: row 2 of d.parquet); ...
    >>> print(dataset_class_rows(pa.table({"label": [0, None, 1]}), Columns()))
    0 in 1 row(s) of column 'label' (first: row 0); 1 in 1 (first: row 2)
    """
    in_memory = isinstance(source, pa.Table)
    schema = source.schema if in_memory else open_dataset(source).schema
    names, weight = class_value_columns(schema, columns, where=where if in_memory else where_of(source))

    def first_rows(batch: pa.RecordBatch, _path, first_row: int) -> list:
        keep = counted_rows(batch, weight)
        out = []
        for name in names:
            column = batch.column(name)
            valid = np.asarray(column.is_valid(), dtype=bool)
            rows = np.flatnonzero(valid if keep is None else keep & valid)
            values = column.take(pa.array(rows)).to_numpy(zero_copy_only=False)
            distinct, first, counts = np.unique(values, return_index=True, return_counts=True)
            out.append((distinct.tolist(), counts.tolist(), (rows[first] + first_row).tolist()))
        return out

    found: dict[str, dict] = {name: {} for name in names}
    for path, _, _, per_name in scan_batches(source, [*names, *([weight] if weight else [])], first_rows,
                                             filter=filter, batch_rows=batch_rows, threads=1, where=where):
        of = "" if in_memory else f" of {path.rsplit('/', 1)[-1]}"
        for name, (distinct, counts, firsts) in zip(names, per_name):
            for value, count, row in zip(distinct, counts, firsts):
                found[name].setdefault(value, [0, f"row {row}{of}"])[0] += count
    return format_class_rows([(value, count, f"column {name!r}", first) for name in names
                              for value, (count, first) in sorted(found[name].items(), key=lambda kv: kv[0])])
