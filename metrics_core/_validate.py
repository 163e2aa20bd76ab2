"""The one input check shared by every entry point: conversion to numpy and bad-row errors."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from metrics_core.errors import InputError, bad_rows


def _null_mask(x: Any) -> np.ndarray | None:
    if isinstance(x, pl.Series):
        return x.is_null().to_numpy() if x.null_count() else None
    if isinstance(x, (pa.Array, pa.ChunkedArray)):
        return np.asarray(x.is_null()) if x.null_count else None
    return None


def to_numpy(x: Any, name: str, *, ndim: int | None = 1, allow_nulls: bool = False) -> np.ndarray:
    """Convert ``x`` (list, numpy, polars Series/DataFrame, pyarrow Array/ChunkedArray/Table) to numpy.

    Nulls are an error naming ``name`` unless ``allow_nulls``; an empty input is an error; a
    wrong number of dimensions is an error. Numeric data without nulls is not copied.
    """
    if x is None:
        raise InputError(f"{name}: no values were given. Pass an array with one value per row.")
    nulls = _null_mask(x)
    if nulls is not None and not allow_nulls:
        values = np.asarray(x.to_list() if isinstance(x, pl.Series) else x.to_pylist(), dtype=object)
        raise bad_rows(name, "null value", nulls, values, "Drop these rows or fill them before evaluating.")
    if isinstance(x, pl.DataFrame):
        for column in x.columns:
            if x[column].null_count():
                raise bad_rows(f"{name} column {column!r}", "null value", x[column].is_null().to_numpy(),
                               x[column].to_numpy(), "Drop these rows or fill them.")
        arr = x.to_numpy()
    elif isinstance(x, pl.Series):
        arr = x.to_numpy()
    elif isinstance(x, pa.Table):
        arr = np.column_stack([np.asarray(c) for c in x.columns])
    elif isinstance(x, (pa.Array, pa.ChunkedArray)):
        arr = x.to_numpy(zero_copy_only=False) if isinstance(x, pa.Array) else np.asarray(x)
    else:
        arr = np.asarray(x)
    if ndim is not None and arr.ndim != ndim:
        shape = "1-D (one value per row)" if ndim == 1 else f"{ndim}-D"
        raise InputError(f"{name}: expected a {shape} array, got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise InputError(f"{name}: the input is empty (0 rows). Evaluate at least one row.")
    if arr.dtype == object:
        none = np.array([v is None or (isinstance(v, float) and np.isnan(v)) for v in arr.ravel()])
        if none.any() and not allow_nulls:
            raise bad_rows(name, "null value", none.reshape(arr.shape), arr,
                           "Drop these rows or fill them before evaluating.")
        if arr.size and all(isinstance(v, str) for v in arr.ravel()[:1]):
            arr = arr.astype(str)
    return arr


def to_labels(x: Any, name: str) -> np.ndarray:
    """Class labels as a 1-D numpy array: nulls and NaN are errors naming ``name``."""
    arr = to_numpy(x, name)
    if arr.dtype.kind == "f":
        bad = np.isnan(arr)
        if bad.any():
            raise bad_rows(name, "NaN label", bad, arr, "Drop these rows or fill the missing labels.")
    return arr


def check_lengths(**arrays: np.ndarray | None) -> int:
    """All given arrays have the same number of rows; return it (errors name each length)."""
    lengths = {k: len(v) for k, v in arrays.items() if v is not None}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise InputError(f"Mismatched lengths: {desc} rows. Pass one value per row in each argument.")
    return next(iter(lengths.values()))


def check_scores(scores: np.ndarray, name: str = "y_score") -> np.ndarray:
    """Float64 (or float32) scores; NaN and inf are errors (ranking needs every row ordered)."""
    if scores.dtype.kind not in "fiub":
        raise InputError(f"{name}: scores must be numbers, got dtype {scores.dtype} "
                         f"(e.g. row 0 = {scores.ravel()[0]!r}).")
    if scores.dtype != np.float32:  # float32 stays: its 32-bit keys sort twice as fast
        scores = np.asarray(scores, dtype=np.float64)
    bad = ~np.isfinite(scores)
    if bad.any():
        kind = "NaN" if np.isnan(scores).any() else "infinite value"
        raise bad_rows(name, f"{kind} (scores must be finite)", bad, scores,
                       "Drop these rows or fix the scoring step.")
    return scores


def check_weights(sample_weight: Any, n: int) -> np.ndarray | None:
    """Float64 non-negative finite weights with one per row, or None."""
    if sample_weight is None:
        return None
    w = np.asarray(to_numpy(sample_weight, "sample_weight"), dtype=np.float64)
    if len(w) != n:
        raise InputError(f"Mismatched lengths: sample_weight has {len(w)} rows, the labels have {n}.")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        raise bad_rows("sample_weight", "negative, NaN or infinite weight", bad, w,
                       "Weights must be finite and >= 0.")
    return w


def encode(y: np.ndarray, labels: Sequence | None, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Map label values to indices 0..K-1 of ``labels`` (sorted distinct values when None).

    Returns ``(indices int64, labels array)``; values outside ``labels`` are an error.
    """
    if labels is None:
        if y.dtype.kind in "iub" and y.size and y.min() >= 0 and y.max() < 1 << 20:
            present = np.flatnonzero(np.bincount(y.astype(np.int64)))
            labels_arr = present.astype(y.dtype)
        else:
            labels_arr = np.unique(y)
    else:
        labels_arr = np.asarray(list(labels))
        if labels_arr.size == 0:
            raise InputError("labels: the class list is empty. Give at least one class.")
        if np.unique(labels_arr).size != labels_arr.size:
            raise InputError(f"labels: the class list has duplicates: {list(labels_arr)!r}.")
    if y.dtype.kind in "iub" and labels_arr.dtype.kind in "iub" and labels_arr.size and \
            labels_arr.min() >= 0 and labels_arr.max() < 1 << 20 and y.min() >= 0 and y.max() < 1 << 20:
        lookup = np.full(int(max(labels_arr.max(), y.max())) + 1, -1, dtype=np.int64)
        lookup[labels_arr.astype(np.int64)] = np.arange(labels_arr.size)
        idx = lookup[y.astype(np.int64)]
    else:
        try:
            order = np.argsort(labels_arr)
            sorted_labels = labels_arr[order]
            pos = np.searchsorted(sorted_labels, y)
        except TypeError as exc:
            raise InputError(f"{name}: label values of type {y.dtype} cannot be compared with "
                             f"labels of type {labels_arr.dtype}: {exc}") from None
        pos_c = np.clip(pos, 0, sorted_labels.size - 1)
        found = sorted_labels[pos_c] == y
        idx = np.where(found, order[pos_c], -1).astype(np.int64)
    bad = idx < 0
    if bad.any():
        raise bad_rows(name, f"label not in labels={list(labels_arr.tolist())!r}", bad, y,
                       "Add the class to `labels` or drop these rows.")
    return idx, labels_arr
