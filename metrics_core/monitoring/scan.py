"""One streamed pass over a dataset into :class:`~metrics_core.monitoring.period.PeriodStats`."""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa

from metrics_core.contract import (check_batch, check_task, class_indices, counted_rows, missing_columns,
                                   predicted_class)
from metrics_core.dataset import file_error, open_dataset
from metrics_core.dataset.parallel import scan_batches
from metrics_core.errors import InputError, NoRowsError
from metrics_core.misread import warn_threshold_scale_period
from metrics_core.monitoring.features import feature_type, feature_update
from metrics_core.monitoring.bins import Bins
from metrics_core.monitoring.period import PeriodStats, class_name, labelled_sample_stats, update
from metrics_core.monitoring.segments import dense_segments, merge_into, merge_segments, segment_update

__all__ = ["BATCH_ROWS", "SEGMENT_BATCH_ROWS", "check_period_stats", "default_batch_rows", "scan_period", "UNLABELLED"]

#: The label index of an unlabelled row of a monitored period (-1 is a label outside the class list).
UNLABELLED = -2

#: Rows per segment of a batch (of its first segment column) above which the batch's statistics are
#: the merge of its segments' rather than a second update of its rows. The merge costs per segment
#: (its histograms: 6 MB at 10 classes, its calibration and labelled-sample statistics), the update
#: per row; measured on a monitored period of 10 classes with 50 segments, one thread, the scan
#: takes 0.089 s (update) against 0.109 s (merge) at 20,000 rows, about the same at 70,000, and
#: 0.22 s against 0.20 s at 100,000 rows a batch (0.39 s against 0.30 s at 196,608). Under the
#: threshold the batch's statistics are those of a scan without segments to the last bit; over it,
#: equal up to the rounding of float sums (weights, calibration sums) added in another order.
MERGE_ROWS_PER_SEGMENT = 1_500

#: Rows per batch read by default without segments: a batch's arrays (ten score columns: 21 MB)
#: stay near the cores' caches; measured on 1M rows of 10 classes, two threads, the pass takes
#: 0.63-0.67 s at 262,144 rows a batch and 0.82 s at 524,288.
BATCH_ROWS = 262_144

#: Rows per batch read by default with segments. Each segment of a batch costs its own
#: :func:`~metrics_core.monitoring.period.update`, some 370 Python and numpy calls whatever its rows,
#: and two scan threads queue for the GIL on them: twice the rows a batch halves that part.
#: Measured on the same 1M rows with 50 segments: the pass takes 0.97 s at 262,144 rows a batch and
#: 0.84 s at 524,288 (the reference and the period scanned at once: 1.12-1.18 s and 1.02 s); the peak
#: resident memory of four such monitoring runs in one process: 2,300-2,400 MiB against 2,440-2,610 MiB.
SEGMENT_BATCH_ROWS = 524_288


def default_batch_rows(segments: Sequence[str] = (), batch_rows: int | None = None) -> int:
    """The rows per batch a scan reads: ``batch_rows`` when given, else :data:`SEGMENT_BATCH_ROWS`
    with segment columns and :data:`BATCH_ROWS` without.

    Examples
    --------
    >>> default_batch_rows(), default_batch_rows(["retailer"]), default_batch_rows(["retailer"], 10_000)
    (262144, 524288, 10000)
    """
    if batch_rows is not None:
        return batch_rows
    return SEGMENT_BATCH_ROWS if segments else BATCH_ROWS


def _class_indices(batch: pa.RecordBatch, path, first_row: int, labels: np.ndarray, checks: dict,
                   open_classes: bool = False) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Validate a batch against the input contract; the class indices of its labels and predictions
    (-1 for a class outside the class list, allowed only when ``open_classes`` or on a row of
    weight 0, which names no class: :func:`metrics_core.contract.counted_rows`).

    Raises the contract's error (:func:`metrics_core.contract.check_batch`) for the batch.
    """
    check_batch(batch, path, first_row=first_row, **checks)
    found = [None if col is None else class_indices(batch.column(col), labels)
             for col in (checks["label"], checks["prediction"])]
    if checks["partial_labels"] and found[0] is not None and batch.column(checks["label"]).null_count:
        found[0][np.asarray(batch.column(checks["label"]).is_null())] = UNLABELLED
    if not open_classes and (_outside(batch, *found) & _counted(batch, checks)).any():
        check_batch(batch, path, first_row=first_row, labels=labels.tolist(), **checks)
    return found[0], found[1]


def _outside(batch: pa.RecordBatch, label_idx: np.ndarray | None, pred_idx: np.ndarray | None) -> np.ndarray:
    """Rows whose label or prediction is outside the class list (an unlabelled row is not)."""
    out = np.zeros(batch.num_rows, dtype=bool)
    for idx in (label_idx, pred_idx):
        if idx is not None:
            out |= idx == -1
    return out


def _counted(batch: pa.RecordBatch, checks: dict) -> np.ndarray:
    """The rows that count (:func:`metrics_core.contract.counted_rows`): all without a weight column."""
    keep = counted_rows(batch, checks["weight"])
    return np.ones(batch.num_rows, dtype=bool) if keep is None else keep


def _new_classes(batch: pa.RecordBatch, checks: dict, label_idx: np.ndarray | None, pred_idx: np.ndarray | None
                 ) -> tuple[np.ndarray | None, dict]:
    """Rows whose label or prediction is outside the class list (None when there are none) and, per
    such class (as text), ``(rows, rows labelled so, rows predicted so)``."""
    new = _outside(batch, label_idx, pred_idx)
    if not new.any():
        return None, {}
    sel = pa.array(new)
    seen = {}
    for role, idx in (("label", label_idx), ("prediction", pred_idx)):
        if idx is not None:
            vals = np.array([class_name(v) for v in batch.column(checks[role]).filter(sel).to_pylist()], dtype=object)
            seen[role] = (vals, idx[new] == -1)
    names = sorted({v for vals, bad in seen.values() for v in vals[bad]})
    none = np.zeros(int(new.sum()), dtype=bool)
    counts = {}
    for v in names:
        in_l, in_p = ((seen[r][0] == v) & seen[r][1] if r in seen else none for r in ("label", "prediction"))
        counts[v] = (int((in_l | in_p).sum()), int(in_l.sum()), int(in_p.sum()))
    return new, counts


def _without(rows: np.ndarray, batch: pa.RecordBatch, label_idx: np.ndarray | None, pred_idx: np.ndarray | None
             ) -> tuple[pa.RecordBatch, np.ndarray | None, np.ndarray | None]:
    """The batch and its class indices without ``rows``."""
    keep = ~rows
    return (batch.filter(pa.array(keep)), None if label_idx is None else label_idx[keep],
            None if pred_idx is None else pred_idx[keep])


def _batch_stats(batch: pa.RecordBatch, task: str, labels: np.ndarray, bins: Bins, label_idx: np.ndarray | None,
                 pred_idx: np.ndarray | None, checks: dict, threshold: float, open_classes: bool,
                 segments: Sequence[str] = ()) -> PeriodStats:
    """The statistics of one validated batch; without a prediction column the class comes from the scores.
    Rows of weight 0 outside the class list name no class: they are left out. With ``open_classes``
    rows of a new class are counted and left out."""
    absent = _outside(batch, label_idx, pred_idx) & ~_counted(batch, checks)
    if absent.any():
        batch, label_idx, pred_idx = _without(absent, batch, label_idx, pred_idx)
    new, counts = _new_classes(batch, checks, label_idx, pred_idx) if open_classes else (None, {})
    if new is not None:
        batch, label_idx, pred_idx = _without(new, batch, label_idx, pred_idx)

    def floats(column: str | None) -> np.ndarray | None:
        return None if column is None else np.asarray(batch.column(column).to_numpy(zero_copy_only=False),
                                                      dtype=np.float64)

    s = np.column_stack([floats(c) for c in checks["scores"]]) if checks["scores"] else None
    if pred_idx is None:
        pred_idx = predicted_class(s, task, threshold).astype(np.int64, copy=False)
    rows = dict(label_idx=label_idx, scores=s, price=floats(checks["price"]), weight=floats(checks["weight"]),
                threshold=threshold, design_weight=floats(checks["design_weight"]),
                labelled_sample=checks["partial_labels"])
    if segments:
        parts = segment_update({c: batch.column(c) for c in segments}, task, labels, bins, pred_idx, **rows)
        first = [parts[k] for k in sorted(parts) if k[0] == segments[0]]
        # the first column's segments partition the rows: their merge is the batch's statistics, but it
        # costs per segment (histograms of a few MB each) what an update costs per row: the cheaper of the two
        if batch.num_rows > MERGE_ROWS_PER_SEGMENT * len(first):
            # (a segment holds no design statistics, segment_update: the batch's labelled sample is its own)
            sample = labelled_sample_stats(task, labels, bins, pred_idx, label_idx, s, rows["price"],
                                           rows["design_weight"]) if rows["labelled_sample"] and label_idx is not None \
                else None
            out = dataclasses.replace(merge_segments(first), segments=parts, sample=sample)
        else:  # and then the batch's statistics are those of a scan without segments, to the last bit
            out = dataclasses.replace(update(task, labels, bins, pred_idx, **rows), segments=parts)
    else:
        out = update(task, labels, bins, pred_idx, **rows)
    if checks.get("features"):
        out = dataclasses.replace(out, features=feature_update(batch, *checks["features"]))
    return dataclasses.replace(out, new_classes=counts) if counts else out


def _features(data, features: Sequence[str]) -> tuple[tuple, tuple]:
    """The watched features and their types (:func:`~metrics_core.monitoring.features.feature_type`)
    from the source's schema; a missing column is an error naming it and the columns there are."""
    features = tuple(dict.fromkeys(features))
    names = data.schema.names
    absent = [c for c in features if c not in names]
    if absent:
        raise InputError(f"features: column {absent[0]!r} is not in the data ({len(absent)} missing); the columns are "
                         f"{names[:30]}.")
    return features, tuple(feature_type(c, data.schema.field(c).type) for c in features)


def scan_period(source, task: str, labels: Sequence, bins: Bins = Bins(), *, label: str | None = None,
                prediction: str | None = None, scores: Sequence[str] = (), price: str | None = None,
                weight: str | None = None, threshold: float = 0.5, filter=None, batch_rows: int | None = None,
                progress: Callable[[int], None] | None = None, where: str = "table",
                open_classes: bool = False, threads: int | None = None, partial_labels: bool = False,
                design_weight: str | None = None, segments: Sequence[str] = (), features: Sequence[str] = (),
                parts=None) -> PeriodStats:
    """:class:`PeriodStats` of a dataset in ONE pass over its batches (:func:`metrics_core.dataset.scan_batches`).

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
    batch_rows : int, optional
        Rows per batch read; None: :func:`default_batch_rows` (:data:`BATCH_ROWS`, or
        :data:`SEGMENT_BATCH_ROWS` with ``segments``). The statistics do not depend on it but for
        the rounding of float sums (weights, calibration sums) added in another order.
    progress : callable, optional
        Called with the number of rows of each batch read.
    where : str
        Name of an in-memory table in error messages (e.g. ``"reference"``).
    open_classes : bool
        False (a closed class list): a label or prediction outside ``labels`` is an error. True:
        those rows are counted per new class (``PeriodStats.new_classes``) and left out of every
        other statistic. Either way a row of weight 0 outside ``labels`` names no class and is
        left out (:func:`metrics_core.contract.counted_rows`).
    threads : int, optional
        Threads computing batch statistics (:func:`metrics_core.dataset.parallel.scan_batches`;
        None: :func:`~metrics_core.threads.default_threads`); the batches merge in file order
        whatever the number, so the result does not depend on it.
    partial_labels : bool
        A monitored period whose labelled rows may be a sample: a null label marks an unlabelled
        row (:func:`metrics_core.contract.check_batch`), and the statistics carry the labelled
        sample's (``PeriodStats.sample``, :func:`~metrics_core.monitoring.period.update`). False
        (a reference window): a null label is an error.
    design_weight : str, optional
        With ``partial_labels``: the column of each labelled row's design weight (the inverse of
        its inclusion probability; > 0 on every labelled row). None: the labelled rows are a
        simple random sample within each predicted class.
    segments : sequence of str
        Segment columns: in the same pass, the statistics of each value's rows
        (:attr:`PeriodStats.segments`, :func:`~metrics_core.monitoring.segments.segment_update`).
    features : sequence of str
        Input columns watched for drift (:mod:`metrics_core.monitoring.features`), summarised in
        the same pass (``PeriodStats.features``); a column that is neither numeric nor text is an
        error naming it.
    parts : sequence of Part, optional
        Only these partitions (:func:`metrics_core.dataset.parts_of`): the map step of a
        distributed scan, which returns None for no rows and leaves the checks of the whole
        period to :func:`check_period_stats` on the merged statistics.

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
    check_task(task)
    if task == "binary" and labels.size != 2:
        raise InputError(f"labels: a binary task needs [negative, positive], got {labels.tolist()!r}.")
    scores = list(scores)
    if prediction is None and not scores:
        raise InputError("Monitoring needs a prediction column or score columns; the column map names neither "
                         "(or the data has neither).")
    if task == "multiclass" and scores and len(scores) != labels.size:
        raise InputError(f"scores: one score column per class is needed ({labels.size}), got {len(scores)}.")
    if design_weight is not None and not partial_labels:
        raise InputError("design_weight: design weights belong to a monitored period's labelled sample "
                         "(partial_labels=True); a reference window is fully labelled and read without them.")
    segments = list(dict.fromkeys(segments))
    batch_rows = default_batch_rows(segments, batch_rows)
    needed = [c for c in (label, prediction, price, weight, design_weight) if c] + scores
    needed += [c for c in segments if c not in needed]
    in_memory = isinstance(source, pa.Table)
    data = source if in_memory else open_dataset(source)
    absent = {c: "segment" for c in segments if c not in data.schema.names}
    if absent:
        raise missing_columns(where if in_memory else source, absent, data.schema.names,
                              why="Each segment column must exist in the reference and the period.",
                              fix="Correct the name in columns.segments (the run spec; segments= in Python), or rename "
                                  "the column in the data")
    checks = dict(label=label, scores=scores, weight=weight, prediction=prediction, price=price,
                  design_weight=design_weight, partial_labels=partial_labels)
    watched = _features(data, features)
    needed += [c for c in watched[0] if c not in needed]

    def batch_stats(batch: pa.RecordBatch, path: str, first_row: int) -> PeriodStats:
        label_idx, pred_idx = _class_indices(batch, path, first_row, labels, checks, open_classes)
        return _batch_stats(batch, task, labels, bins, label_idx, pred_idx,
                            {**checks, "features": watched if watched[0] else None}, threshold, open_classes, segments)

    def explain(bad: InputError, path: str, _batch, _row) -> InputError:
        if in_memory:  # the table is one batch: the count is already the whole table's
            return bad
        # the bad rows counted over the whole file, not this batch
        return file_error(bad, data, path, needed, filter=filter, batch_rows=batch_rows, labels=labels.tolist(),
                          **checks)

    out: PeriodStats | None = None
    for _, batch, _, part in scan_batches(data, needed, batch_stats, filter=filter, batch_rows=batch_rows,
                                          threads=threads, explain=explain, where=where, parts=parts):
        # each batch's histograms are its own (_batch_stats): the running total adds to them in place
        out = part if out is None else merge_into(out, part)
        if progress is not None:
            progress(batch.num_rows)
    if parts is not None:
        return out
    return check_period_stats(out, where if in_memory else str(source), task, bins, prediction=prediction,
                              threshold=threshold, filter=filter)


def check_period_stats(out: PeriodStats | None, where: str, task: str, bins: Bins = Bins(), *,
                       prediction: str | None = None, threshold: float = 0.5, filter=None) -> PeriodStats:
    """The checks of a whole period's statistics (after the merge of a distributed scan's parts).

    Parameters
    ----------
    out : PeriodStats or None
        The merged statistics (None: no rows were read).
    where : str
        The source, as messages name it.
    task, bins, prediction, threshold, filter
        As for :func:`scan_period`.

    Returns
    -------
    PeriodStats
        ``out`` with dense histograms (:func:`~metrics_core.monitoring.segments.dense_segments`),
        after a warning when binary scores decide the class and many lie outside [0, 1]
        (:func:`metrics_core.misread.warn_threshold_scale_period`).

    Raises
    ------
    NoRowsError
        ``out`` is None (an empty period).
    """
    if out is None:
        raise NoRowsError(f"{where}: no rows{' for ' + str(filter) if filter is not None else ''} (empty period). "
                         "Check the data path and the period; nothing was logged.")
    out = dense_segments(out)  # a scan's segment histograms are sparse until here
    if task == "binary" and prediction is None and tuple(bins.score_range) == (0.0, 1.0):
        warn_threshold_scale_period(where, out.overflow.get("scores_outside_range", 0), out.n_rows,
                                    float(out.pred_counts[1]), threshold)
    return out
