"""One streamed pass over a dataset into :class:`~metrics_core.monitoring.period.PeriodStats`."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pyarrow as pa

from metrics_core.contract import check_batch, class_indices, predicted_class
from metrics_core.dataset import file_error, iter_batches, open_dataset
from metrics_core.errors import InputError
from metrics_core.monitoring.period import Bins, PeriodStats, update

__all__ = ["scan_period"]


def _class_indices(batch: pa.RecordBatch, path, first_row: int, labels: np.ndarray, checks: dict
                   ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Validate a batch against the input contract; the class indices of its labels and predictions.

    Raises the contract's error (:func:`metrics_core.contract.check_batch`) for the batch.
    """
    check_batch(batch, path, first_row=first_row, **checks)
    found = [None if col is None else class_indices(batch.column(col), labels)
             for col in (checks["label"], checks["prediction"])]
    if any(idx is not None and (idx < 0).any() for idx in found):  # a class outside the class list
        check_batch(batch, path, first_row=first_row, labels=labels.tolist(), **checks)
    return found[0], found[1]


def _batch_stats(batch: pa.RecordBatch, task: str, labels: np.ndarray, bins: Bins, label_idx: np.ndarray | None,
                 pred_idx: np.ndarray | None, scores: list[str], price: str | None, weight: str | None,
                 threshold: float) -> PeriodStats:
    """The statistics of one validated batch; without a prediction column the class comes from the scores."""
    def floats(column: str) -> np.ndarray:
        return np.asarray(batch.column(column).to_numpy(zero_copy_only=False), dtype=np.float64)

    s = np.column_stack([floats(c) for c in scores]) if scores else None
    if pred_idx is None:
        pred_idx = predicted_class(s, task, threshold).astype(np.int64, copy=False)
    return update(task, labels, bins, pred_idx, label_idx=label_idx, scores=s,
                  price=None if price is None else floats(price), weight=None if weight is None else floats(weight),
                  threshold=threshold)


def scan_period(source, task: str, labels: Sequence, bins: Bins = Bins(), *, label: str | None = None,
                prediction: str | None = None, scores: Sequence[str] = (), price: str | None = None,
                weight: str | None = None, threshold: float = 0.5, filter=None, batch_rows: int = 262_144,
                progress: Callable[[int], None] | None = None) -> PeriodStats:
    """:class:`PeriodStats` of a dataset in ONE pass over its batches (metrics_core.dataset).

    Parameters
    ----------
    source : str, path, pyarrow Table or Dataset
        The data (Parquet file or directory, Arrow IPC, CSV; see ``open_dataset``).
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
    ds = open_dataset(source)
    out: PeriodStats | None = None
    last_path, first_row = None, 0
    for path, batch in iter_batches(ds, needed, filter=filter, batch_rows=batch_rows):
        if path != last_path:
            last_path, first_row = path, 0
        checks = dict(label=label, scores=scores, weight=weight, prediction=prediction, price=price)
        try:
            label_idx, pred_idx = _class_indices(batch, path, first_row, labels, checks)
        except InputError as bad:  # count the bad rows of the whole file, not of this batch
            raise file_error(bad, ds, path, needed, filter=filter, batch_rows=batch_rows, labels=labels.tolist(),
                             **checks) from None
        part = _batch_stats(batch, task, labels, bins, label_idx, pred_idx, scores, price, weight, threshold)
        out = part if out is None else out.merge(part)
        first_row += batch.num_rows
        if progress is not None:
            progress(batch.num_rows)
    if out is None:
        where = source if not isinstance(source, (pa.Table,)) else "table"
        raise InputError(f"{where}: no rows{' for ' + str(filter) if filter is not None else ''} (empty period). "
                         "Check the data path and the period; nothing was logged.")
    return out
