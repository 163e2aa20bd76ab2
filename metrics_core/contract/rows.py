"""The input contract's row side: what makes a value bad (:func:`value_problems`), every problem
of a batch (:func:`row_problems`), the one batch check (:func:`check_batch`) and the rows that
count (:func:`counted_rows`)."""

from __future__ import annotations

from typing import Iterator, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core.contract.classes import check_label_kinds, class_indices, type_kind
from metrics_core.contract.schema import missing_columns
from metrics_core.errors import InputError, rows_message


#: The hint of a null label: where a label may be missing (a monitored period's sample) and where not.
LABEL_HINT = ("Drop the rows without a label or fill them before evaluating. An evaluation and a monitoring "
              "reference window need every row labelled; a monitored period's delivery may carry labels on a sample "
              "of its rows only (a null label marks an unlabelled row there; docs/label-lag.md, labelled samples).")

#: The hint of a bad design weight.
DESIGN_WEIGHT_HINT = ("A labelled row's design weight is the inverse of its inclusion probability in the labelled "
                      "sample: a finite number > 0 (e.g. 33.3 for a row sampled at 3 %). Fix the sampling step's "
                      "output; unlabelled rows may leave it null.")


class Problem(NamedTuple):
    """Rows of one column that break one rule: ``mask`` marks them."""

    role: str
    column: str
    problem: str
    mask: np.ndarray
    hint: str


def counted_rows(batch: pa.RecordBatch | pa.Table, weight: str | None) -> np.ndarray | None:
    """The rows that count: rows of positive weight. A row of weight 0 is an absent row.

    Like scikit-learn (a weight of 0 is the same as no row), a row of weight 0 names no class and
    counts nowhere. A row whose weight is null counts: it is not left out silently but rejected
    by :func:`check_batch` ("null weight"), which a class list must not hide; negative and NaN
    weights (errors too) do not count.

    Parameters
    ----------
    batch : pyarrow.RecordBatch or pyarrow.Table
    weight : str, optional
        The weight column; None: every row counts.

    Returns
    -------
    numpy.ndarray of bool or None
        None when there is no weight column.

    Examples
    --------
    >>> counted_rows(pa.record_batch({"w": [1.0, 0.0, None, 2.5]}), "w").tolist()
    [True, False, True, True]
    """
    if weight is None:
        return None
    return np.asarray(pc.fill_null(pc.greater(batch.column(weight), 0), True), dtype=bool)


def value_problems(role: str, values: np.ndarray | None = None, nulls: np.ndarray | None = None, *,
                   labels: Sequence | None = None, indices: np.ndarray | None = None, raw: pa.Array | None = None
                   ) -> Iterator[tuple[str, np.ndarray, str]]:
    """The rules of the contract for the values of one role: ``(problem, bad-row mask, hint)`` each.

    Parameters
    ----------
    role : {"label", "prediction", "score", "weight", "price", "design_weight"}
        Labels and predictions: null, NaN, mixed types (object arrays), outside ``labels``.
        Scores: null, NaN, infinite. Weights: null, then negative, NaN or infinite. Prices:
        null, NaN, infinite or <= 0. Design weights (give the labelled rows only, see
        :func:`row_problems`): null, NaN, infinite or <= 0.
    values : numpy.ndarray, optional
        The values (numbers; any dtype for labels).
    nulls : numpy.ndarray of bool, optional
        Null rows (None: no nulls).
    labels : sequence, optional
        The class list (labels and predictions).
    indices : numpy.ndarray, optional
        :func:`class_indices` of the values when already computed.
    raw : pyarrow.Array, optional
        The column itself, when ``values`` is None: a label outside the class list is looked up
        in it for the hint (a label that differs from a class only in case).

    Yields
    ------
    tuple of (str, numpy.ndarray, str)
        In the order the problems are reported.

    Examples
    --------
    >>> for problem, mask, _ in value_problems("score", np.array([0.1, np.nan, np.inf])):
    ...     print(problem, mask.tolist())
    NaN score (scores must be finite) [False, True, False]
    infinite score (scores must be finite) [False, False, True]
    """
    sized = next((a for a in (values, nulls, indices) if a is not None), None)
    if sized is None:
        return
    nulls = np.zeros(len(sized), bool) if nulls is None else np.asarray(nulls, bool)
    if nulls.any() and role != "price":
        hint = {"score": "Drop these rows or fix the scoring step.",
                "weight": "Fill the weights (e.g. 1.0) or drop these rows.",
                "label": LABEL_HINT, "design_weight": DESIGN_WEIGHT_HINT,
                }.get(role, f"Drop the rows without a {role} or fill them before evaluating.")
        yield f"null {role}" + (" on a labelled row" if role == "design_weight" else ""), nulls, hint
    ok = ~nulls
    if role in ("label", "prediction"):
        yield from _label_problems(role, values, ok, labels, indices, raw)
    elif role == "score" and values is not None and values.dtype.kind == "f" and not np.isfinite(values.sum()):
        # (a finite sum proves every score finite without row-sized masks; an overflowing sum is checked row by row)
        rows_ok = ok[:, None] if values.ndim == 2 else ok
        for kind, bad in (("NaN", np.isnan(values)), ("infinite", np.isinf(values))):
            if (bad & rows_ok).any():
                yield f"{kind} score (scores must be finite)", bad & rows_ok, "Drop these rows or fix the scoring step."
    elif role == "design_weight" and values is not None:
        bad = ~(np.isfinite(values) & (values > 0)) & ok
        if bad.any():
            yield "NaN, infinite or non-positive design weight on a labelled row", bad, DESIGN_WEIGHT_HINT
    elif role == "weight" and values is not None:
        bad = (~np.isfinite(values) | (values < 0)) & ok
        if bad.any():
            yield "negative, NaN or infinite weight", bad, "Weights must be finite and >= 0."
    elif role == "price" and values is not None:
        bad = ~(np.isfinite(values) & (values > 0)) | nulls
        if bad.any():
            yield ("null, NaN, infinite or non-positive price", bad,
                   "Prices must be > 0; drop these rows or fix the price extraction.")


def _label_problems(role, values, ok, labels, indices, raw=None):
    nan = np.zeros(ok.shape, bool)
    if values is not None and values.dtype.kind == "f":
        nan = np.isnan(values) & ok
        if nan.any():
            yield f"NaN {role}", nan, "Drop these rows or fill the missing labels."
    if values is not None and values.dtype == object and values.size:
        text = np.array([isinstance(v, str) for v in values])
        if text.any() and not text.all():
            yield (f"{role} of mixed types (strings and other values; row 0 is {type(values[0]).__name__})",
                   text != text[0], "Give every label the same type (all strings or all numbers).")
    if labels is not None:
        idx = class_indices(values, labels, name=role) if indices is None else indices
        bad = (idx < 0) & ok & ~nan
        if bad.any():
            outside = values[bad][:1000].tolist() if values is not None else \
                raw.filter(pa.array(bad)).slice(0, 1000).to_pylist() if raw is not None else []
            yield (f"{role} not in the class list {list(labels)!r}", bad,
                   _near_class(outside, labels) or "Add the class to the class list (labels) or drop these rows.")


def _near_class(values: Sequence, labels: Sequence) -> str:
    """The hint for labels that differ from a class of the list only in case or spaces ('c' for 'C'), or ""."""
    folded = {str(c).strip().casefold(): c for c in labels}
    for v in dict.fromkeys(values):
        match = folded.get(str(v).strip().casefold())
        if match is not None:
            return (f"{v!r} differs from the class {match!r} only in case or spaces: make the labels and the class "
                    "list agree (the class list comes from labels, or from the score columns' names).")
    return ""


def row_problems(batch: pa.RecordBatch | pa.Table, path, *, label: str | None = None, prediction: str | None = None,
                 scores: Sequence[str] = (), weight: str | None = None, price: str | None = None,
                 labels: Sequence | None = None, columns_needed: Sequence[str] = (), design_weight: str | None = None,
                 partial_labels: bool = False) -> Iterator[Problem]:
    """Every :class:`Problem` of a batch, in the order :func:`check_batch` reports them.

    Parameters
    ----------
    batch, path, label, prediction, scores, weight, price, labels, columns_needed, design_weight, partial_labels
        As for :func:`check_batch`.

    Yields
    ------
    Problem
        One per (column, problem) with bad rows: role, column, problem, row mask, hint.

    Raises
    ------
    InputError
        At once for a missing column, a score column that is not numeric, or label and
        prediction columns of mixed kinds (strings and numbers): they are not about rows.
    """
    names = batch.schema.names
    roles = {c: r for r, c in (("label", label), ("prediction", prediction)) if c}
    roles.update({c: "score" for c in scores})
    roles.update({c: r for r, c in (("weight", weight), ("price", price), ("design_weight", design_weight)) if c})
    missing = {c: None for c in columns_needed if c not in names}
    missing.update({c: r for c, r in roles.items() if c not in names})
    if missing:
        raise missing_columns(path, missing, names)
    if label and prediction:
        check_label_kinds(batch.schema.field(label).type, batch.schema.field(prediction).type,
                          label=f"the label column {label!r}", prediction=f"{path}: column {prediction!r}")
    unlabelled = np.asarray(batch.column(label).is_null()) if partial_labels and label else None
    for column, role in roles.items():
        arr = batch.column(column)
        if role == "design_weight":
            yield from _design_weight_problems(arr, column, unlabelled)
            continue
        if role == "score" and type_kind(arr.type) not in ("integer", "number"):
            raise InputError(f"{path}: column {column!r}: scores must be numbers, the column has type {arr.type}. "
                             "Point the score column of the column map at the model's score.")
        nulls = np.asarray(arr.is_null()) if arr.null_count else None
        numeric = type_kind(arr.type) == "number" or role in ("weight", "price")
        values = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64 if role in ("weight", "price")
                            else None) if numeric else None
        indices = class_indices(arr, labels) if role in ("label", "prediction") and labels is not None else None
        for problem, mask, hint in value_problems(role, values, nulls, labels=labels, indices=indices, raw=arr):
            if role == "label" and unlabelled is not None and problem == "null label":
                continue  # an unlabelled row of the period, not a bad one
            yield Problem(role, column, problem, mask, hint)
    if len(scores) > 1:
        yield from _score_sum_problems(batch, list(scores))


def _design_weight_problems(arr, column: str, unlabelled: np.ndarray | None) -> Iterator[Problem]:
    """The problems of a design-weight column, on the labelled rows only (an unlabelled row has no
    inclusion probability in the labelled sample, so its value is not read)."""
    if type_kind(arr.type) not in ("integer", "number"):
        raise InputError(f"column {column!r}: design weights must be numbers, the column has type {arr.type}. "
                         "Point columns.design_weight at the labelled rows' inverse inclusion probabilities.")
    labelled = np.ones(len(arr), bool) if unlabelled is None else ~unlabelled
    values = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)
    nulls = np.asarray(arr.is_null()) & labelled
    values = np.where(labelled & ~nulls, values, 1.0)
    for problem, mask, hint in value_problems("design_weight", values, nulls):
        yield Problem("design_weight", column, problem, mask, hint)


#: How far a row of multiclass scores may sum from 1 (rounded probabilities: 0.005 per class for ~2 classes).
SCORE_SUM_TOLERANCE = 0.01


SCORE_SUM_HINT = ("Multiclass scores must be the model's class probabilities (each row summing to 1): "
                  "normalise them (softmax of logits), add the missing class columns, or leave the score "
                  "columns out (another score prefix) to evaluate the prediction column only.")


def score_sums_off(total: np.ndarray) -> np.ndarray:
    """Rows whose multiclass scores are not probabilities over the class list.

    Parameters
    ----------
    total : numpy.ndarray
        Per row, the sum of its per-class scores.

    Returns
    -------
    numpy.ndarray
        Boolean mask: the sum is further than :data:`SCORE_SUM_TOLERANCE` from 1. A non-finite
        sum is False here (the NaN/inf score rule reports those rows first).
    """
    return (np.abs(total - 1.0) > SCORE_SUM_TOLERANCE) & np.isfinite(total)


def score_sum_problem(n_columns: int) -> str:
    """The problem text of :func:`score_sums_off` rows.

    Parameters
    ----------
    n_columns : int
        Number of per-class score columns.

    Returns
    -------
    str
        E.g. ``"per-class scores that do not sum to 1 (within 0.01; 3 score columns)"``.
    """
    return f"per-class scores that do not sum to 1 (within {SCORE_SUM_TOLERANCE:g}; {n_columns} score columns)"


def _score_sum_problems(batch, scores: list[str]) -> Iterator[Problem]:
    """Multiclass per-class scores are probabilities over the class list: each row sums to 1
    (within :data:`SCORE_SUM_TOLERANCE`). Rows with a null or non-finite score are reported before."""
    total = np.zeros(batch.num_rows)
    for c in scores:
        total += np.asarray(batch.column(c).to_numpy(zero_copy_only=False), dtype=np.float64)
    bad = score_sums_off(total)
    if bad.any():
        yield Problem("score", ", ".join(scores[:3]) + (", ..." if len(scores) > 3 else ""),
                      score_sum_problem(len(scores)), bad, SCORE_SUM_HINT)


def _example(batch, i: int) -> str:
    row = batch.slice(i, 1).to_pylist()[0]
    return ", ".join(f"{k}={v!r}" for k, v in row.items())


def problem_error(path, p: Problem, count: int, row: int, batch, i: int,
                  batch_rows: tuple[int, int] | None = None) -> InputError:
    """The error of a :class:`Problem`: file, column, problem, count, and an example row.

    Parameters
    ----------
    path : str or path
        The file.
    p : Problem
    count : int
        Bad rows in the whole file, or in the rows ``batch_rows = (first, last)`` of one batch.
    row : int
        The example's row number in the file.
    batch : pyarrow.RecordBatch or pyarrow.Table
        The rows holding the example, as row ``i``; the values of every column read are shown.
    i : int
    batch_rows : (int, int), optional

    Returns
    -------
    InputError
        With ``bad_rows = (column, problem)``; a price is shown by its value first (``row 3 = -1.0``).
    """
    context = _example(batch, i)
    if p.role == "price":
        value = batch.column(p.column)[i].as_py()
        counted = "counted over the whole file" if batch_rows is None else \
            f"counted in the batch of rows {batch_rows[0]}-{batch_rows[1]} of the file"
        message = rows_message(f"{path}: column {p.column!r}", p.problem, count,
                               f"row {row} = {value!r} ({counted}; the row: {context})", p.hint)
    else:
        scope = " of the file" if batch_rows is None else \
            f" of this batch (rows {batch_rows[0]}-{batch_rows[1]} of the file)"
        message = rows_message(f"{path}: column {p.column!r}", p.problem, count, f"row {row}: {context}", p.hint,
                               scope)
    err = InputError(message)
    err.bad_rows = (p.column, p.problem)
    return err


def check_batch(batch: pa.RecordBatch | pa.Table, path, *, label: str | None = None, prediction: str | None = None,
                scores: Sequence[str] = (), weight: str | None = None, price: str | None = None,
                labels: Sequence | None = None, columns_needed: Sequence[str] = (), first_row: int = 0,
                design_weight: str | None = None, partial_labels: bool = False) -> None:
    """The one check of a batch of rows against the contract.

    Parameters
    ----------
    batch : pyarrow.RecordBatch or pyarrow.Table
        Rows of ``path``.
    path : str or path
        The file the rows come from.
    label, prediction, scores, weight, price : column names, optional
        The columns of each role (None / empty = not checked).
    labels : sequence, optional
        The class list: labels and predictions outside it are bad rows.
    columns_needed : sequence of str
        Other columns that must exist.
    first_row : int
        Row number in the file of the batch's first row (for the example).
    design_weight : str, optional
        The design-weight column of a labelled sample: on every labelled row a finite number > 0
        (the inverse of the row's inclusion probability); unlabelled rows are not read.
    partial_labels : bool
        True for a monitored period, whose labelled rows may be a sample: a null label marks an
        unlabelled row. False (an evaluation, a reference window): a null label is an error.

    Raises
    ------
    InputError
        Naming the file, the column, the number of bad rows and the first one with the values of
        every column read; ``bad_rows`` is ``(column, problem)`` (see
        :func:`metrics_core.dataset.file_error`, which counts them over the whole file). Checked,
        in this order: columns present; label and prediction of the same kind; null or NaN labels
        (and predictions), outside ``labels``; null, NaN or infinite scores; null, NaN, infinite
        or negative weights; null, NaN, infinite or non-positive prices.

    Examples
    --------
    >>> check_batch(pa.record_batch({"label": ["a", "z"]}), "f.parquet", label="label", labels=["a", "b"])
    Traceback (most recent call last):
    ...
    metrics_core.errors.InputError: f.parquet: column 'label': label not in the class list ['a', 'b'] in 1 row(s) of \
this batch (rows 0-1 of the file), e.g. row 1: label='z'. Add the class to the class list (labels) or drop these rows.
    """
    for p in row_problems(batch, path, label=label, prediction=prediction, scores=scores, weight=weight, price=price,
                          labels=labels, columns_needed=columns_needed, design_weight=design_weight,
                          partial_labels=partial_labels):
        i = int(np.flatnonzero(p.mask)[0])
        raise problem_error(path, p, int(np.count_nonzero(p.mask)), first_row + i, batch, i,
                            (first_row, first_row + batch.num_rows - 1))
