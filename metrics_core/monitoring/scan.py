"""One streamed pass over a dataset into :class:`~metrics_core.monitoring.period.PeriodStats`."""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

from metrics_core.contract import check_batch, class_indices, decimals_as_floats, predicted_class
from metrics_core.dataset import file_error, iter_batches, open_dataset
from metrics_core.errors import InputError, NoRowsError
from metrics_core.misread import warn_threshold_scale_period
from metrics_core.monitoring.period import Bins, PeriodStats, class_name, update

__all__ = ["scan_period"]


def _class_indices(batch: pa.RecordBatch, path, first_row: int, labels: np.ndarray, checks: dict,
                   open_classes: bool = False) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Validate a batch against the input contract; the class indices of its labels and predictions
    (-1 for a class outside the class list, allowed only when ``open_classes``).

    Raises the contract's error (:func:`metrics_core.contract.check_batch`) for the batch.
    """
    check_batch(batch, path, first_row=first_row, **checks)
    found = [None if col is None else class_indices(batch.column(col), labels)
             for col in (checks["label"], checks["prediction"])]
    if not open_classes and any(idx is not None and (idx < 0).any() for idx in found):  # outside the class list
        check_batch(batch, path, first_row=first_row, labels=labels.tolist(), **checks)
    return found[0], found[1]


def _new_classes(batch: pa.RecordBatch, checks: dict, label_idx: np.ndarray | None, pred_idx: np.ndarray | None
                 ) -> tuple[np.ndarray | None, dict]:
    """Rows whose label or prediction is outside the class list (None when there are none) and, per
    such class (as text), ``(rows, rows labelled so, rows predicted so)``."""
    new = np.zeros(batch.num_rows, dtype=bool)
    for idx in (label_idx, pred_idx):
        if idx is not None:
            new |= idx < 0
    if not new.any():
        return None, {}
    sel = pa.array(new)
    seen = {}
    for role, idx in (("label", label_idx), ("prediction", pred_idx)):
        if idx is not None:
            vals = np.array([class_name(v) for v in batch.column(checks[role]).filter(sel).to_pylist()], dtype=object)
            seen[role] = (vals, idx[new] < 0)
    names = sorted({v for vals, bad in seen.values() for v in vals[bad]})
    none = np.zeros(int(new.sum()), dtype=bool)
    counts = {}
    for v in names:
        in_l, in_p = ((seen[r][0] == v) & seen[r][1] if r in seen else none for r in ("label", "prediction"))
        counts[v] = (int((in_l | in_p).sum()), int(in_l.sum()), int(in_p.sum()))
    return new, counts


def _table_batches(table: pa.Table, needed: list[str], filter, where: str):
    """An in-memory table as one batch named ``where`` (so error counts cover the whole table)."""
    missing = [c for c in needed if c not in table.column_names]
    if missing:
        raise InputError(f"{where}: missing column {missing[0]!r}; the table has {table.column_names[:20]}.")
    table = table.select(needed)
    if filter is not None:
        table = pads.dataset(table).to_table(filter=filter)
    yield from ((where, decimals_as_floats(b)) for b in table.combine_chunks().to_batches() if b.num_rows)


def _batch_stats(batch: pa.RecordBatch, task: str, labels: np.ndarray, bins: Bins, label_idx: np.ndarray | None,
                 pred_idx: np.ndarray | None, scores: list[str], price: str | None, weight: str | None,
                 threshold: float, open_checks: dict | None = None) -> PeriodStats:
    """The statistics of one validated batch; without a prediction column the class comes from the scores.
    With ``open_checks`` (an open class list) rows of a new class are counted and left out."""
    new, counts = _new_classes(batch, open_checks, label_idx, pred_idx) if open_checks else (None, {})
    if new is not None:
        keep = ~new
        batch = batch.filter(pa.array(keep))
        label_idx = None if label_idx is None else label_idx[keep]
        pred_idx = None if pred_idx is None else pred_idx[keep]
    def floats(column: str) -> np.ndarray:
        return np.asarray(batch.column(column).to_numpy(zero_copy_only=False), dtype=np.float64)

    s = np.column_stack([floats(c) for c in scores]) if scores else None
    if pred_idx is None:
        pred_idx = predicted_class(s, task, threshold).astype(np.int64, copy=False)
    out = update(task, labels, bins, pred_idx, label_idx=label_idx, scores=s,
                 price=None if price is None else floats(price), weight=None if weight is None else floats(weight),
                 threshold=threshold)
    return dataclasses.replace(out, new_classes=counts) if counts else out


def scan_period(source, task: str, labels: Sequence, bins: Bins = Bins(), *, label: str | None = None,
                prediction: str | None = None, scores: Sequence[str] = (), price: str | None = None,
                weight: str | None = None, threshold: float = 0.5, filter=None, batch_rows: int = 262_144,
                progress: Callable[[int], None] | None = None, where: str = "table",
                open_classes: bool = False) -> PeriodStats:
    """:class:`PeriodStats` of a dataset in ONE pass over its batches (metrics_core.dataset).

    Parameters
    ----------
    source : str, path, pyarrow Table or Dataset
        The data (Parquet file or directory, Arrow IPC, CSV; see ``open_dataset``). A pyarrow
        Table (a notebook's data) is validated and summarised as one batch.
    task : {"binary", "multiclass"}
        The classification task.
    labels : sequence
        The class list (binary: ``[negative, positive]``).
    bins : Bins
        The fixed bins shared with the periods this one is compared with.
    label, prediction, price, weight : str, optional
        Column roles (None = absent). ``label`` is optional (monitoring works without labels);
        without ``prediction`` the class is derived from the scores (binary ``score >=
        threshold``, multiclass the argmax); prices must be > 0.
    scores : sequence of str
        Score columns: binary one (the positive class), multiclass one per class in ``labels`` order.
    threshold : float
        Binary decision threshold.
    filter : pyarrow.dataset.Expression, optional
        Row selection (e.g. the period's rows of one dataset).
    batch_rows : int
        Rows per batch read.
    progress : callable, optional
        Called with the number of rows of each batch read.
    where : str
        Name of an in-memory table in error messages (e.g. ``"reference"``).
    open_classes : bool
        False (a closed class list): a label or prediction outside ``labels`` is an error. True:
        those rows are counted per new class (``PeriodStats.new_classes``) and left out of every
        other statistic.

    Returns
    -------
    PeriodStats
        The merged statistics of every batch (:func:`~metrics_core.monitoring.period.update`).

    Raises
    ------
    InputError
        Every batch is validated first (:func:`metrics_core.contract.check_batch`): null labels,
        labels outside the class list, null/NaN/infinite scores, bad weights and prices name the
        file, column, number of rows and an example. An empty selection (no rows) is an error too.
    """
    labels = np.asarray(list(labels))
    if task not in ("binary", "multiclass"):
        raise InputError(f"task: expected 'binary' or 'multiclass', got {task!r}.")
    if task == "binary" and labels.size != 2:
        raise InputError(f"labels: a binary task needs [negative, positive], got {labels.tolist()!r}.")
    scores = list(scores)
    if prediction is None and not scores:
        raise InputError("Monitoring needs a prediction column or score columns; the column map names neither "
                         "(or the data has neither).")
    if task == "multiclass" and scores and len(scores) != labels.size:
        raise InputError(f"scores: one score column per class is needed ({labels.size}), got {len(scores)}.")
    needed = [c for c in (label, prediction, price, weight) if c] + scores
    in_memory = isinstance(source, pa.Table)
    ds = None if in_memory else open_dataset(source)
    batches = _table_batches(source, needed, filter, where) if in_memory else \
        iter_batches(ds, needed, filter=filter, batch_rows=batch_rows)
    checks = dict(label=label, scores=scores, weight=weight, prediction=prediction, price=price)
    out: PeriodStats | None = None
    last_path, first_row = None, 0
    for path, batch in batches:
        if path != last_path:
            last_path, first_row = path, 0
        try:
            label_idx, pred_idx = _class_indices(batch, path, first_row, labels, checks, open_classes)
        except InputError as bad:  # count the bad rows of the whole file, not of this batch
            if in_memory:  # the table is one batch: the count is already the whole table's
                raise
            raise file_error(bad, ds, path, needed, filter=filter, batch_rows=batch_rows, labels=labels.tolist(),
                             **checks) from None
        rows = batch.num_rows
        part = _batch_stats(batch, task, labels, bins, label_idx, pred_idx, scores, price, weight, threshold,
                            checks if open_classes else None)
        out = part if out is None else out.merge(part)
        first_row += rows
        if progress is not None:
            progress(rows)
    if out is None:
        where = where if in_memory else source
        raise NoRowsError(f"{where}: no rows{' for ' + str(filter) if filter is not None else ''} (empty period). "
                         "Check the data path and the period; nothing was logged.")
    if task == "binary" and prediction is None and tuple(bins.score_range) == (0.0, 1.0):
        warn_threshold_scale_period(where if in_memory else str(source), out.overflow.get("scores_outside_range", 0),
                                    out.n_rows, float(out.pred_counts[1]), threshold)
    return out
