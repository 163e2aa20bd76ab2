"""The class values of a scan's batches (rows of positive weight), and where each is when a binary scan has too many."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core.contract.classes import binary_classes, class_rows, format_class_rows, same_kind
from metrics_core.contract import Columns
from metrics_core.dataset.batches import batches_with_rows
from metrics_core.dataset.formats import open_dataset
from metrics_core.errors import InputError


def weighted_values(batch: pa.RecordBatch, names: Sequence[str], weight: str | None) -> list[pa.Array]:
    """The columns ``names`` of ``batch`` on its rows of positive weight (a row of weight 0 is an absent
    row, as in memory). Only these columns are filtered, not the batch's scores and weights."""
    columns = [batch.column(name) for name in names]
    if weight is None:
        return columns
    keep = pc.fill_null(pc.greater(batch.column(weight), 0), True)
    return [column.filter(keep) for column in columns]


def class_columns(batch: pa.RecordBatch, label: str, prediction: str | None) -> list[str]:
    """The columns that hold class values: the label, and the prediction when its values are of the same kind."""
    if prediction and same_kind(batch.schema.field(label).type, batch.schema.field(prediction).type):
        return [label, prediction]
    return [label]


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
    keep = None if weight is None else np.asarray(pc.fill_null(pc.greater(batch.column(weight), 0), True), dtype=bool)
    columns = {f"column {name!r}": batch.column(name).to_numpy(zero_copy_only=False) for name in names}
    return f"In rows {first_row}-{first_row + batch.num_rows - 1} of the file: {class_rows(columns, keep, first_row)}."


def class_value_columns(schema: pa.Schema, columns: Columns, with_prediction: bool | None = None
                        ) -> tuple[list[str], str | None]:
    """``(columns that hold class values, weight column or None)`` of a dataset: the label, and the
    prediction when ``with_prediction`` (None: when the column exists) and its values are of the same kind."""
    names = [columns.label]
    if with_prediction is None:
        with_prediction = columns.prediction in schema.names
    if with_prediction and same_kind(schema.field(columns.prediction).type, schema.field(columns.label).type):
        names.append(columns.prediction)
    return names, columns.weight if columns.weight in schema.names else None


def dataset_class_rows(source, columns: Columns, *, filter=None, batch_rows: int = 4_000_000) -> str:
    """Where each class value of a whole dataset is: its rows (of positive weight) in the label
    column (and the prediction column, :func:`class_value_columns`) and its first row, by file and
    row in the file; missing values are not a class.

    A second pass, for the error about too many classes of a binary task when the class list
    came from a distinct-values pass (:func:`~metrics_core.dataset.scan.class_labels`). Under a
    ``filter``, row numbers count the rows it selects in each file.

    >>> import tempfile, pyarrow.parquet as pq
    >>> path = tempfile.mkdtemp() + "/d.parquet"
    >>> pq.write_table(pa.table({"label": [0, None, 1, 2, 0]}), path)
    >>> print(dataset_class_rows(path, Columns()))
    0 in 2 row(s) of column 'label' (first: row 0 of d.parquet); 1 in 1 (first: row 2 of d.parquet); ...
    """
    names, weight = class_value_columns(open_dataset(source).schema, columns)
    found: dict[str, dict] = {name: {} for name in names}
    for path, batch, first_row in batches_with_rows(source, [*names, *([weight] if weight else [])], filter=filter,
                                                    batch_rows=batch_rows):
        keep = (np.ones(batch.num_rows, dtype=bool) if weight is None
                else np.asarray(pc.fill_null(pc.greater(batch.column(weight), 0), True), dtype=bool))
        for name in names:
            column = batch.column(name)
            rows = np.flatnonzero(keep & np.asarray(column.is_valid(), dtype=bool))
            values = column.take(pa.array(rows)).to_numpy(zero_copy_only=False)
            distinct, first, counts = np.unique(values, return_index=True, return_counts=True)
            for value, count, row in zip(distinct.tolist(), counts.tolist(), (rows[first] + first_row).tolist()):
                seen = found[name].setdefault(value, [0, f"row {row} of {path.rsplit('/', 1)[-1]}"])
                seen[0] += count
    return format_class_rows([(value, count, f"column {name!r}", first) for name in names
                              for value, (count, first) in sorted(found[name].items(), key=lambda kv: kv[0])])
