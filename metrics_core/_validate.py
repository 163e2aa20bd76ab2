"""In-memory arguments against the input contract: conversion to numpy, then the contract's value rules."""

from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from metrics_core.contract import class_indices, decimals_as_floats, value_problems
from metrics_core.errors import InputError, bad_rows


def _polars_kind(x: Any) -> str | None:
    """``"Series"`` or ``"DataFrame"`` when ``x`` is that polars object, else None; without importing
    polars: a polars object cannot exist before polars is loaded, and a report need not load it.
    A polars still being imported (by another thread) may not define its classes yet: no object
    of theirs exists then either."""
    pl = sys.modules.get("polars")
    for kind in ("Series", "DataFrame"):
        cls = getattr(pl, kind, None)
        if isinstance(cls, type) and isinstance(x, cls):
            return kind
    return None


def _null_mask(x: Any) -> np.ndarray | None:
    if _polars_kind(x) == "Series":
        return x.is_null().to_numpy() if x.null_count() else None
    if isinstance(x, (pa.Array, pa.ChunkedArray)):
        return np.asarray(x.is_null()) if x.null_count else None
    return None


def to_numpy(x: Any, name: str, *, ndim: int | None = 1, allow_nulls: bool = False) -> np.ndarray:
    """Convert ``x`` (list, numpy, polars Series/DataFrame, pyarrow Array/ChunkedArray/Table) to numpy.

    Parameters
    ----------
    x : array-like
    name : str
        The argument, for the messages.
    ndim : int, optional
        The number of dimensions wanted (None: any).
    allow_nulls : bool
        Whether nulls may pass (as NaN or None).

    Returns
    -------
    numpy.ndarray
        Numeric data without nulls is not copied; all-string object arrays become ``str`` arrays.

    Raises
    ------
    InputError
        Nulls (unless ``allow_nulls``), an empty input, a wrong number of dimensions.

    Examples
    --------
    >>> to_numpy(pa.array([1, 2]), "y_true").tolist()
    [1, 2]
    """
    if x is None:
        raise InputError(f"{name}: no values were given. Pass an array with one value per row.")
    polars = _polars_kind(x)
    nulls = _null_mask(x)
    if nulls is not None and not allow_nulls:
        values = np.asarray(x.to_list() if polars == "Series" else x.to_pylist(), dtype=object)
        raise bad_rows(name, "null value", nulls, values, "Drop these rows or fill them before evaluating.")
    if polars and any(d.is_decimal() for d in ([x.dtype] if polars == "Series" else x.dtypes)):
        x, polars = x.to_arrow(), None
    x = decimals_as_floats(x) if isinstance(x, (pa.Array, pa.ChunkedArray, pa.Table)) else x
    if polars == "DataFrame":
        for column in x.columns:
            if x[column].null_count():
                raise bad_rows(f"{name} column {column!r}", "null value", x[column].is_null().to_numpy(),
                               x[column].to_numpy(), "Drop these rows or fill them.")
        arr = x.to_numpy()
    elif polars == "Series":
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


def _raise_first(name: str, role: str, values: np.ndarray, **rules) -> None:
    """Raise the first problem :func:`metrics_core.contract.value_problems` finds, named by argument."""
    for problem, mask, hint in value_problems(role, values, **rules):
        raise bad_rows(name, problem, mask, values, hint)


def to_labels(x: Any, name: str, role: str = "label") -> np.ndarray:
    """Class labels as a 1-D numpy array.

    Parameters
    ----------
    x : array-like
        Labels (or predicted classes): list, numpy, polars or pyarrow.
    name : str
        The argument, for the messages.
    role : {"label", "prediction"}
        What the values are (named in the messages).

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    InputError
        Null or NaN labels, or labels of mixed types, naming ``name``, the count and an example.

    Examples
    --------
    >>> to_labels(["a", "b"], "y_true").tolist()
    ['a', 'b']
    """
    arr = to_numpy(x, name)
    _raise_first(name, role, arr)
    return arr


def check_lengths(**arrays: np.ndarray | None) -> int:
    """All given arrays (None: absent) have the same number of rows.

    Returns
    -------
    int
        The number of rows.

    Raises
    ------
    InputError
        Naming each argument and its length.

    Examples
    --------
    >>> check_lengths(y_true=np.zeros(3), y_score=None, y_pred=np.ones(3))
    3
    """
    lengths = {k: len(v) for k, v in arrays.items() if v is not None}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise InputError(f"Mismatched lengths: {desc} rows. Pass one value per row in each argument.")
    return next(iter(lengths.values()))


def check_scores(scores: np.ndarray, name: str = "y_score") -> np.ndarray:
    """Scores as float64 (float32 stays), checked by the contract's rules (ranking needs every row ordered).

    Raises
    ------
    InputError
        Scores that are not numbers, NaN or infinite scores (count and first row).

    Examples
    --------
    >>> check_scores(np.array([1, 0])).dtype
    dtype('float64')
    """
    if scores.dtype.kind not in "fiub":
        raise InputError(f"{name}: scores must be numbers, got dtype {scores.dtype} "
                         f"(e.g. row 0 = {scores.ravel()[0]!r}).")
    if scores.dtype != np.float32:  # float32 stays: its 32-bit keys sort twice as fast
        scores = np.asarray(scores, dtype=np.float64)
    _raise_first(name, "score", scores)
    return scores


def check_weights(sample_weight: Any, n: int) -> np.ndarray | None:
    """Row weights as float64 (one per row), or None.

    Raises
    ------
    InputError
        Another length than ``n``; weights that are not real numbers (complex, text); null,
        negative, NaN or infinite weights (count and first row).

    Examples
    --------
    >>> check_weights([1, 2], 2).tolist()
    [1.0, 2.0]
    """
    if sample_weight is None:
        return None
    raw = to_numpy(sample_weight, "sample_weight")
    if raw.dtype.kind == "c":
        bad = np.asarray(raw).imag != 0
        raise bad_rows("sample_weight", "complex weight (weights must be real numbers)", bad if bad.any() else
                       np.ones(raw.shape, bool), raw, "Pass real weights (e.g. the real part, or abs()).")
    if raw.dtype.kind not in "fiub" and not (raw.dtype == object and _all_real(raw)):
        raise InputError(f"sample_weight: weights must be real numbers, got dtype {raw.dtype} "
                         f"(e.g. row 0 = {raw.ravel()[0]!r}). Pass one number >= 0 per row.")
    w = np.asarray(raw, dtype=np.float64)
    if len(w) != n:
        raise InputError(f"Mismatched lengths: sample_weight has {len(w)} rows, the labels have {n}.")
    _raise_first("sample_weight", "weight", w)
    return w


def _all_real(values: np.ndarray) -> bool:
    """Every value of an object array is a real number (bool, int, float)."""
    return all(isinstance(v, (int, float, np.integer, np.floating)) for v in values.ravel())


def weighted_rows(w: np.ndarray | None) -> np.ndarray | None:
    """The rows of positive weight, or None when every row counts (no weights, or none is 0).

    A row of weight 0 is the same as an absent row for every metric, its interval and the
    class list: the update steps drop these rows after validating them (docs/metrics.md,
    "Weights").

    Examples
    --------
    >>> weighted_rows(np.array([1.0, 0.0, 2.0])).tolist(), weighted_rows(np.array([1.0, 2.0]))
    ([True, False, True], None)
    """
    if w is None:
        return None
    keep = w > 0
    return None if keep.all() else keep


def encode(y: np.ndarray, labels: Sequence | None, name: str, role: str = "label") -> tuple[np.ndarray, np.ndarray]:
    """Map label values to indices 0..K-1 of ``labels`` (sorted distinct values when None).

    Returns
    -------
    tuple of (numpy.ndarray of int64, numpy.ndarray)
        The indices (:func:`metrics_core.contract.class_indices`) and the class list.

    Raises
    ------
    InputError
        An empty or duplicated class list; values outside it, naming ``name``, the count and the
        first row.

    Examples
    --------
    >>> idx, labels = encode(np.array(["b", "a", "b"]), None, "y_true")
    >>> idx.tolist(), labels.tolist()
    ([1, 0, 1], ['a', 'b'])
    """
    if labels is None:
        if y.dtype.kind in "iub" and y.size and y.min() >= 0 and y.max() < 1 << 20:
            labels_arr = np.flatnonzero(np.bincount(y.astype(np.int64))).astype(y.dtype)
        else:
            labels_arr = np.unique(y)
    else:
        labels_arr = np.asarray(list(labels))
        if labels_arr.size == 0:
            raise InputError("labels: the class list is empty. Give at least one class.")
        if np.unique(labels_arr).size != labels_arr.size:
            raise InputError(f"labels: the class list has duplicates: {list(labels_arr)!r}.")
    idx = class_indices(y, labels_arr, name=name)
    _raise_first(name, role, y, labels=labels_arr.tolist(), indices=idx)
    return idx, labels_arr
