"""The input contract: column roles, the layout of a source, the rules of a row and the one batch check.

The naming of classes (:mod:`metrics_core.classes`) is part of the contract and importable from here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

import numpy as np
import pyarrow as pa

from metrics_core.classes import (TASKS, binary_classes, check_class_list, check_label_kinds, check_task,
                                  class_indices, class_value, positive_class, predicted_class, same_kind, type_kind)
from metrics_core.errors import InputError, rows_message

__all__ = ["Columns", "Layout", "Problem", "TASKS", "binary_classes", "check_batch", "check_class_list",
           "check_label_kinds",
           "check_same_schema", "class_indices", "class_value", "missing_columns", "near_misses", "positive_class",
           "predicted_class", "problem_error", "resolve_layout", "row_problems", "same_kind", "schema_changes",
           "score_column_classes", "type_kind", "value_problems"]

#: Command-line options of ``classwatch evaluate`` that map a role (named in missing-column errors).
_CLI_OPTIONS = {"label": "--label-column", "score": "--score-column", "prediction": "--prediction-column",
                "weight": "--weight-column", "score_prefix": "--score-prefix"}


@dataclass(frozen=True)
class Columns:
    """Which column plays which role.

    Per-class scores of a multiclass model are the columns ``score_prefix + str(class)``
    (``score_a``, ``score_b``, ...). ``weight`` and ``price`` are off (None) unless named.

    Examples
    --------
    >>> Columns().class_score_columns([0, 1, 2])
    ['score_0', 'score_1', 'score_2']
    """

    label: str = "label"
    prediction: str = "prediction"
    score: str = "score"
    score_prefix: str = "score_"
    id: str = "id"
    period: str = "period"
    weight: str | None = None
    price: str | None = None
    features: tuple[str, ...] = ()

    def class_score_columns(self, labels: Iterable) -> list[str]:
        """Names of the per-class score columns for ``labels``, in that order."""
        return [f"{self.score_prefix}{c}" for c in labels]


@dataclass(frozen=True)
class Layout:
    """The roles resolved on one source (None / empty = absent) and its class list.

    ``scores`` is ``[score]`` (binary: the positive class) or one ``score_<class>`` column per
    class of ``labels``, in that order. Built by :func:`resolve_layout`.
    """

    task: str
    labels: list
    label: str | None
    prediction: str | None
    scores: list[str] = field(default_factory=list)
    price: str | None = None
    weight: str | None = None
    features: list[str] = field(default_factory=list)
    id: str | None = None

    def used(self) -> list[str]:
        """Every column this layout reads, once each."""
        cols = [self.label, self.prediction, *self.scores, self.price, self.weight, *self.features, self.id]
        return [c for c in dict.fromkeys(cols) if c]

    def as_dict(self) -> dict:
        """The fields as a dict (``Layout(**d)`` rebuilds it)."""
        return asdict(self)


# ------------------------------------------------------------------------------------------------
# Schema: which role is which column
# ------------------------------------------------------------------------------------------------

def near_misses(name: str, names: Sequence[str]) -> list[str]:
    """Columns whose names look like a misspelling of ``name`` (case, a swapped or missing letter).

    Parameters
    ----------
    name : str
        The column looked for.
    names : sequence of str
        The columns a source has.

    Returns
    -------
    list of str
        Closest first (difflib ratio >= 0.75 on the lower-cased, stripped names); empty when none.

    Examples
    --------
    >>> near_misses("label", ["lable", "score", "Label "]), near_misses("label", ["price"])
    (['Label ', 'lable'], [])
    """
    import difflib

    folded = {n.strip().lower(): n for n in names if n != name}
    return [folded[m] for m in difflib.get_close_matches(name.strip().lower(), list(folded), n=3, cutoff=0.75)]


def missing_columns(where, missing: dict[str, str | None], names: Sequence[str], why: str = "") -> InputError:
    """The error for columns a source lacks: each column with its role, and the columns it has.

    Parameters
    ----------
    where : str or path
        The source (file or directory).
    missing : dict
        Missing column -> its role (None when the caller does not know it).
    names : sequence of str
        The columns the source has.
    why : str
        Why the columns are needed, when that is not obvious.

    Returns
    -------
    InputError

    Examples
    --------
    >>> print(missing_columns("d.parquet", {"w": "weight"}, ["label", "score"]))  # doctest: +NORMALIZE_WHITESPACE
    d.parquet: missing column 'w' (weight): not found among the columns ['label', 'score']. Rename the column or
    set the weight role of the column map (Columns(weight=...); columns.weight in a run spec; --weight-column on
    the command line).
    """
    cols = ", ".join(f"{c!r}" + (f" ({role})" if role else "") for c, role in missing.items())
    shown = f"{list(names[:25])!r}" + (" ..." if len(names) > 25 else "")
    roles = list(dict.fromkeys(r for r in missing.values() if r))
    fix = f"Rename the column{'s' if len(missing) > 1 else ''}"
    if roles:
        ways = [f"Columns({r}=...)" for r in roles] + [f"columns.{r} in a run spec" for r in roles]
        ways += [f"{_CLI_OPTIONS[r]} on the command line" for r in roles if r in _CLI_OPTIONS]
        plural = "s" if len(roles) > 1 else ""
        fix += f" or set the {', '.join(roles)} role{plural} of the column map ({'; '.join(ways)})"
    head = "missing column" + ("s" if len(missing) > 1 else "")
    guesses = [f"column {n!r} looks like a misspelling of {c!r}" for c in missing
               for n in near_misses(c, list(names))[:1]]
    maybe = f" ({'; '.join(guesses)})" if guesses else ""
    return InputError(f"{where}: {head} {cols}: not found among the columns {shown}{maybe}. "
                      + (f"{why} " if why else "") + fix + ".")


def resolve_layout(schema: pa.Schema, task: str, columns: Columns = Columns(), *, labels: Sequence | None = None,
                   require: Iterable[str] = ("label",), predictions: bool = True, use_prediction: bool | None = None,
                   where: Any = "data") -> Layout:
    """Map the column roles onto the columns of a schema (no rows are read).

    Parameters
    ----------
    schema : pyarrow.Schema
        The source's schema.
    task : {"binary", "multiclass"}
        Binary scores are one column ``columns.score`` (the positive class); multiclass scores are
        one column ``score_prefix + str(class)`` per class, all or none.
    columns : Columns
        The column map.
    labels : sequence, optional
        The class list (multiclass: decides the score columns and their order). None: binary
        leaves it empty; multiclass takes the classes named by the score columns, in schema
        order (:func:`score_column_classes`).
    require : iterable of str
        Roles whose column must exist: any of "label", "prediction", "weight", "price", "id",
        "period", "features" (every listed feature). Other roles are optional: a column that is
        absent is left out (None).
    predictions : bool
        Whether the source carries the model's output (score columns and/or the prediction
        column, at least one). False when a model will score the rows.
    use_prediction : bool, optional
        None: the prediction column when it exists; True: required; False: left out.
    where : str or path
        The source, for the messages.

    Returns
    -------
    Layout

    Raises
    ------
    InputError
        A required column is missing (the message lists the columns that exist), some but not
        all per-class score columns exist, or neither scores nor predictions exist.

    Examples
    --------
    >>> schema = pa.schema([("label", pa.string()), ("score_a", pa.float32()), ("score_b", pa.float32())])
    >>> lay = resolve_layout(schema, "multiclass")
    >>> lay.labels, lay.scores, lay.prediction
    (['a', 'b'], ['score_a', 'score_b'], None)
    """
    check_task(task)
    names = schema.names
    required = set(require) | ({"prediction"} if use_prediction else set())
    absent = {getattr(columns, r): r for r in sorted(required - {"features"})
              if getattr(columns, r) and getattr(columns, r) not in names}
    if "features" in required:
        absent.update({f: "features" for f in columns.features if f not in names})
    if absent:
        raise missing_columns(where, absent, names)
    classes = None if labels is None else list(labels)
    scores: list[str] = []
    prediction = None
    if predictions:
        scores, classes = _score_columns(schema, task, columns, classes, where)
        if use_prediction is not False and columns.prediction in names:
            prediction = columns.prediction
        if not scores and prediction is None:
            wanted = columns.score if task == "binary" else f"{columns.score_prefix}<class>"
            raise missing_columns(where, {wanted: "score" if task == "binary" else "score_prefix"}, names,
                                  f"A {task} evaluation needs the score column{'s' if task != 'binary' else ''} "
                                  f"{wanted!r} or the prediction column {columns.prediction!r}.")
    optional = {r: getattr(columns, r) if getattr(columns, r) in names else None for r in ("price", "weight", "id")}
    return Layout(task, classes or [], columns.label if columns.label in names else None, prediction, scores,
                  optional["price"], optional["weight"], [f for f in columns.features if f in names], optional["id"])


def _score_columns(schema: pa.Schema, task: str, columns: Columns, classes: list | None, where
                   ) -> tuple[list[str], list | None]:
    """The score columns of a layout and the class list they imply (all or none per class)."""
    names = schema.names
    if task == "binary":
        return ([columns.score] if columns.score in names else []), classes
    if classes is None:
        found = score_column_classes(schema, columns)
        return columns.class_score_columns(found), found or None
    wanted = columns.class_score_columns(classes)
    present = [c for c in wanted if c in names]
    if present and len(present) != len(wanted):
        gone = [c for c in wanted if c not in names]
        raise InputError(f"{where}: missing per-class score column(s) {gone!r} ({len(gone)} of {len(wanted)} classes), "
                         f"e.g. {gone[0]!r}. Every class in the class list needs its score column; the data has "
                         f"columns {names[:25]!r}.")
    return present, classes


def score_column_classes(schema: pa.Schema, columns: Columns = Columns()) -> list:
    """Classes named by the per-class score columns ``score_<class>``, in schema order, as label values.

    Parameters
    ----------
    schema : pyarrow.Schema
        The label column's type converts the names (text without a label column).
    columns : Columns

    Returns
    -------
    list

    Raises
    ------
    InputError
        A score column's suffix is not a value of the label type.

    Examples
    --------
    >>> score_column_classes(pa.schema([("label", pa.int16()), ("score_3", pa.float32()), ("score_1", pa.float32())]))
    [3, 1]
    """
    label_type = schema.field(columns.label).type if columns.label in schema.names else pa.string()
    p = columns.score_prefix
    return [class_value(n[len(p):], label_type, f"column {n!r}: class",
                        "Rename the score column or set the score prefix of the column map.")
            for n in schema.names if n.startswith(p) and len(n) > len(p) and n != columns.score]


def schema_changes(old: pa.Schema, new: pa.Schema) -> list[str]:
    """Human-readable differences between two schemas (empty when the columns and types agree).

    Parameters
    ----------
    old, new : pyarrow.Schema

    Returns
    -------
    list of str
        Missing columns, new columns, then columns whose type changed.

    Examples
    --------
    >>> old = pa.schema([("label", pa.int8()), ("score", pa.float32())])
    >>> for change in schema_changes(old, pa.schema([("label", pa.string()), ("p", pa.float32())])):
    ...     print(change)
    column 'score' is missing (was float)
    column 'p' is new (float)
    column 'label' changed type: int8 -> string
    """
    out = []
    old_names, new_names = set(old.names), set(new.names)
    out += [f"column {n!r} is missing (was {old.field(n).type})" for n in old.names if n not in new_names]
    out += [f"column {n!r} is new ({new.field(n).type})" for n in new.names if n not in old_names]
    out += [f"column {n!r} changed type: {old.field(n).type} -> {new.field(n).type}"
            for n in old.names if n in new_names and not old.field(n).type.equals(new.field(n).type)]
    return out


def check_same_schema(old: pa.Schema, new: pa.Schema, layout: Layout, *, reference="reference",
                      current="current") -> None:
    """The current source keeps every column ``layout`` uses and its kind (the label may be absent).

    Parameters
    ----------
    old, new : pyarrow.Schema
        Schemas of the reference and of the current source.
    layout : Layout
        The reference's layout.
    reference, current : str
        The sources, for the message.

    Raises
    ------
    InputError
        Naming each changed column (missing, or a changed kind such as number -> string), how
        many columns changed and an example.

    Examples
    --------
    >>> lay = Layout("binary", [0, 1], "label", None, ["score"])
    >>> old = pa.schema([("label", pa.int8()), ("score", pa.float32())])
    >>> check_same_schema(old, pa.schema([("score", pa.float64())]), lay)  # float -> double: same kind
    """
    used = [col for col in layout.used() if col != layout.label or col in new.names]
    problems = []
    for col in used:
        if col not in new.names:
            problems.append(f"column {col!r} is missing (was {old.field(col).type})")
        elif type_kind(old.field(col).type) != type_kind(new.field(col).type):
            problems.append(f"column {col!r} changed type: {old.field(col).type} -> {new.field(col).type}")
    if problems:
        others = [p for p in schema_changes(old, new) if "is new" in p]
        raise InputError(f"{current}: the schema changed from the reference {reference}: {len(problems)} column(s) "
                         f"differ, e.g. {problems[0]}" + (f"; all: {'; '.join(problems)}" if len(problems) > 1 else "")
                         + (f" (also {'; '.join(others[:3])})" if others else "")
                         + ". Fix the delivery or update the spec; nothing was logged.")


# ------------------------------------------------------------------------------------------------
# Rows: what makes a value bad, and the one batch check
# ------------------------------------------------------------------------------------------------

class Problem(NamedTuple):
    """Rows of one column that break one rule: ``mask`` marks them."""

    role: str
    column: str
    problem: str
    mask: np.ndarray
    hint: str


def value_problems(role: str, values: np.ndarray | None = None, nulls: np.ndarray | None = None, *,
                   labels: Sequence | None = None, indices: np.ndarray | None = None
                   ) -> Iterator[tuple[str, np.ndarray, str]]:
    """The rules of the contract for the values of one role: ``(problem, bad-row mask, hint)`` each.

    Parameters
    ----------
    role : {"label", "prediction", "score", "weight", "price"}
        Labels and predictions: null, NaN, mixed types (object arrays), outside ``labels``.
        Scores: null, NaN, infinite. Weights: null, then negative, NaN or infinite. Prices:
        null, NaN, infinite or <= 0.
    values : numpy.ndarray, optional
        The values (numbers; any dtype for labels).
    nulls : numpy.ndarray of bool, optional
        Null rows (None: no nulls).
    labels : sequence, optional
        The class list (labels and predictions).
    indices : numpy.ndarray, optional
        :func:`class_indices` of the values when already computed.

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
                "weight": "Fill the weights (e.g. 1.0) or drop these rows."
                }.get(role, f"Drop the rows without a {role} or fill them before evaluating.")
        yield f"null {role}", nulls, hint
    ok = ~nulls
    if role in ("label", "prediction"):
        yield from _label_problems(role, values, ok, labels, indices)
    elif role == "score" and values is not None and values.dtype.kind == "f" and not np.isfinite(values.sum()):
        # (a finite sum proves every score finite without row-sized masks; an overflowing sum is checked row by row)
        rows_ok = ok[:, None] if values.ndim == 2 else ok
        for kind, bad in (("NaN", np.isnan(values)), ("infinite", np.isinf(values))):
            if (bad & rows_ok).any():
                yield f"{kind} score (scores must be finite)", bad & rows_ok, "Drop these rows or fix the scoring step."
    elif role == "weight" and values is not None:
        bad = (~np.isfinite(values) | (values < 0)) & ok
        if bad.any():
            yield "negative, NaN or infinite weight", bad, "Weights must be finite and >= 0."
    elif role == "price" and values is not None:
        bad = ~(np.isfinite(values) & (values > 0)) | nulls
        if bad.any():
            yield ("null, NaN, infinite or non-positive price", bad,
                   "Prices must be > 0; drop these rows or fix the price extraction.")


def _label_problems(role, values, ok, labels, indices):
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
            yield (f"{role} not in the class list {list(labels)!r}", bad,
                   "Add the class to the class list (labels) or drop these rows.")


def row_problems(batch: pa.RecordBatch | pa.Table, path, *, label: str | None = None, prediction: str | None = None,
                 scores: Sequence[str] = (), weight: str | None = None, price: str | None = None,
                 labels: Sequence | None = None, columns_needed: Sequence[str] = ()) -> Iterator[Problem]:
    """Every :class:`Problem` of a batch, in the order :func:`check_batch` reports them.

    Parameters
    ----------
    batch, path, label, prediction, scores, weight, price, labels, columns_needed
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
    roles.update({c: r for r, c in (("weight", weight), ("price", price)) if c})
    missing = {c: None for c in columns_needed if c not in names}
    missing.update({c: r for c, r in roles.items() if c not in names})
    if missing:
        raise missing_columns(path, missing, names)
    if label and prediction:
        check_label_kinds(batch.schema.field(label).type, batch.schema.field(prediction).type,
                          label=f"the label column {label!r}", prediction=f"{path}: column {prediction!r}")
    for column, role in roles.items():
        arr = batch.column(column)
        if role == "score" and type_kind(arr.type) not in ("integer", "number"):
            raise InputError(f"{path}: column {column!r}: scores must be numbers, the column has type {arr.type}. "
                             "Point the score column of the column map at the model's score.")
        nulls = np.asarray(arr.is_null()) if arr.null_count else None
        numeric = type_kind(arr.type) == "number" or role in ("weight", "price")
        values = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64 if role in ("weight", "price")
                            else None) if numeric else None
        indices = class_indices(arr, labels) if role in ("label", "prediction") and labels is not None else None
        for problem, mask, hint in value_problems(role, values, nulls, labels=labels, indices=indices):
            yield Problem(role, column, problem, mask, hint)
    if len(scores) > 1:
        yield from _score_sum_problems(batch, list(scores))


#: How far a row of multiclass scores may sum from 1 (rounded probabilities: 0.005 per class for ~2 classes).
SCORE_SUM_TOLERANCE = 0.01


SCORE_SUM_HINT = ("Multiclass scores must be the model's class probabilities (each row summing to 1): "
                  "normalise them (softmax of logits), add the missing class columns, or leave the score "
                  "columns out (another score prefix) to evaluate the prediction column only.")


def score_sums_off(total: np.ndarray) -> np.ndarray:
    """Rows whose per-class scores sum (``total``) further than :data:`SCORE_SUM_TOLERANCE` from 1;
    a non-finite sum is left to the NaN/inf rule."""
    return (np.abs(total - 1.0) > SCORE_SUM_TOLERANCE) & np.isfinite(total)


def score_sum_problem(n_columns: int) -> str:
    """The problem text of :func:`score_sums_off` rows."""
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
                labels: Sequence | None = None, columns_needed: Sequence[str] = (), first_row: int = 0) -> None:
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
                          labels=labels, columns_needed=columns_needed):
        i = int(np.flatnonzero(p.mask)[0])
        raise problem_error(path, p, int(np.count_nonzero(p.mask)), first_row + i, batch, i,
                            (first_row, first_row + batch.num_rows - 1))
