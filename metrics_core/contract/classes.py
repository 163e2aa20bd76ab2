"""Classes of a task: their kinds, their names ([negative, positive]), their indices, the predicted class."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core.errors import InputError

__all__ = ["TASKS", "binary_classes", "check_class_list", "check_label_kinds", "check_task", "class_indices",
           "class_rows", "class_value", "positive_class", "predicted_class", "same_kind", "type_kind"]

TASKS = ("binary", "multiclass")


def check_task(task: str, *, name: str = "task", hint: str = "") -> None:
    """``task`` is one of :data:`TASKS`: "binary" or "multiclass".

    The one task check of every entry point (reports, scans, monitoring, recommendations).

    Parameters
    ----------
    task : str
    name : str
        The argument or field that holds it, for the message.
    hint : str
        What else to say (e.g. how to handle a task the caller does not cover).

    Raises
    ------
    InputError
        Any other task, naming ``name`` and the accepted values.

    Examples
    --------
    >>> check_task("binary")
    >>> check_task("multilabel")
    Traceback (most recent call last):
    ...
    metrics_core.errors.InputError: task: expected 'binary' or 'multiclass', got 'multilabel'.
    """
    if task not in TASKS:
        accepted = " or ".join(repr(t) for t in TASKS)
        raise InputError(f"{name}: expected {accepted}, got {task!r}." + (f" {hint}" if hint else ""))


def type_kind(t: pa.DataType | np.dtype) -> str:
    """The kind of a column or array type.

    Parameters
    ----------
    t : pyarrow.DataType or numpy.dtype

    Returns
    -------
    str
        "integer" (booleans too), "number", "string" (dictionary-encoded too) or the type itself.

    Examples
    --------
    >>> type_kind(pa.int8()), type_kind(pa.bool_()), type_kind(pa.float32()), type_kind(np.dtype("<U3"))
    ('integer', 'integer', 'number', 'string')
    """
    if isinstance(t, np.dtype):
        return {"i": "integer", "u": "integer", "b": "integer", "f": "number", "U": "string", "S": "string"
                }.get(t.kind, str(t))
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return "integer"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t):
        return "string"
    return str(t)


def same_kind(a: pa.DataType | np.dtype, b: pa.DataType | np.dtype) -> bool:
    """Whether two label columns hold values of the same kind (:func:`type_kind`).

    Parameters
    ----------
    a, b : pyarrow.DataType or numpy.dtype

    Returns
    -------
    bool

    Examples
    --------
    >>> same_kind(pa.int8(), pa.bool_()), same_kind(pa.int8(), pa.float64())
    (True, False)
    """
    return type_kind(a) == type_kind(b)


def check_label_kinds(label_type: pa.DataType | np.dtype, prediction_type: pa.DataType | np.dtype, *,
                      label: str = "y_true", prediction: str = "y_pred",
                      rule: str = "a predicted class must be a value of the label column") -> None:
    """Labels and predicted classes are both strings or both not: mixed kinds never match.

    The one label-kind check of every entry point (in-memory reports, streamed scans, monitoring):
    like scikit-learn's "Mix of label input types", strings are never compared with numbers.

    Parameters
    ----------
    label_type, prediction_type : pyarrow.DataType or numpy.dtype
        The labels, and the values that must match them (predicted classes, a class list).
    label, prediction : str
        What holds them (an argument, or a file and column), for the message.
    rule : str
        Why they must agree, for the message.

    Raises
    ------
    InputError
        Strings on one side and numbers on the other (mixed label types).

    Examples
    --------
    >>> check_label_kinds(pa.int8(), pa.bool_())  # both integer-like: fine
    >>> check_label_kinds(np.dtype("<U4"), np.dtype("int64"))
    Traceback (most recent call last):
    ...
    metrics_core.errors.InputError: y_pred holds int64 values and y_true holds <U4 values (mixed label types): a \
predicted class must be a value of the label column. Fix the column map or the data.
    """
    if (type_kind(label_type) == "string") != (type_kind(prediction_type) == "string"):
        raise InputError(f"{prediction} holds {prediction_type} values and {label} holds {label_type} values (mixed "
                         f"label types): {rule}. Fix the column map or the data.")


def class_value(text: str, label_type: pa.DataType, what: str = "class", hint: str = ""):
    """A class named in text (a score-column suffix, a command-line value) as a value of the label type.

    Parameters
    ----------
    text : str
        The class as written.
    label_type : pyarrow.DataType
        The type of the label column.
    what : str
        What names the class, for the message.
    hint : str
        How to fix a bad name.

    Returns
    -------
    int, float, bool or str

    Raises
    ------
    InputError
        When ``text`` is not a value of ``label_type``.

    Examples
    --------
    >>> class_value("3", pa.int16()), class_value("3.0", pa.int16()), class_value("true", pa.bool_())
    (3, 3, True)
    """
    try:
        if pa.types.is_integer(label_type):  # "3.0" too: the name a float class column gives the class 3
            number = float(text)
            if not number.is_integer():
                raise ValueError(text)
            return int(text) if text.strip().lstrip("+-").isdigit() else int(number)
        if pa.types.is_floating(label_type):
            return float(text)
        if pa.types.is_boolean(label_type):
            return {"true": True, "1": True, "false": False, "0": False}[text.lower()]
    except (ValueError, KeyError):
        message = f"{what} {text!r} is not a value of the label type {label_type}."
        raise InputError(f"{message} {hint}" if hint else message) from None
    return text


#: The most classes of a multiclass task (10,000 classes would need 800 MB per K x K matrix).
MAX_CLASSES = 1000


def check_class_list(values: Sequence, *, where: str = "labels", under_filter: bool = False) -> list:
    """A multiclass class list: at least one class, no duplicates.

    Parameters
    ----------
    values : sequence
        The classes (from a run spec, or the distinct labels of the data).
    where : str
        Where they come from, for the messages.
    under_filter : bool
        Whether the values were read under a row filter (said in the message).

    Returns
    -------
    list

    Raises
    ------
    InputError
        An empty list (no labelled rows), duplicate classes, or more than :data:`MAX_CLASSES`.

    Examples
    --------
    >>> check_class_list(["a", "b"])
    ['a', 'b']
    """
    values = list(values)
    if not values:
        raise InputError(f"{where}: no class values{' under the filter' if under_filter else ''} (no labelled rows): "
                         "the class list is empty. Pass the class list (labels=...; labels: in a run spec).")
    if len({(type(x), x) for x in values}) != len(values):
        raise InputError(f"{where}: the class list has duplicates: {values!r}.")
    if len(values) > MAX_CLASSES:
        raise InputError(f"{where}: {len(values):,} classes, more than the {MAX_CLASSES:,} classwatch handles (its "
                         f"K x K confusion counts and per-class statistics grow with K squared), e.g. "
                         f"{[getattr(v, 'item', lambda v=v: v)() for v in values[:5]]!r}. Is this the label column "
                         "(not an id or a free-text column)? Otherwise group rare classes into an 'other' class.")
    return values


_NEGATIVE = object()  # binary_classes' default name of a negative class that no row holds


def binary_classes(values: Iterable, pos_label, *, where: str = "y_true", absent=_NEGATIVE) -> list:
    """Name the classes of a binary task: ``[negative, positive]``.

    Parameters
    ----------
    values : iterable
        The class values: a class list, or the distinct labels seen (sorted by the caller).
    pos_label
        The positive class; matched by equality, else by its text (``"1"`` names the class 1).
    where : str
        What holds the labels, for the messages.
    absent
        The negative class when no value other than the positive one exists. Default: 0, or
        ``"not <positive>"`` for a string positive class. (A report of some rows passes None: a
        merge with other rows fills it in.)

    Returns
    -------
    list
        ``[negative, positive]``, the positive class as it appears in ``values``.

    Raises
    ------
    InputError
        The positive class is not among two or more values, or there are more than two classes.

    Examples
    --------
    >>> binary_classes(["ham", "spam"], "spam"), binary_classes([0, 1], "1"), binary_classes(["yes"], "yes")
    (['ham', 'spam'], [0, 1], ['not yes', 'yes'])
    """
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    is_pos = [_equal(v, pos_label) for v in values]
    if not any(is_pos):
        is_pos = [str(v) == str(pos_label) for v in values]
    others = [v for v, p in zip(values, is_pos) if not p]
    if not any(is_pos) and len(values) >= 2:
        raise InputError(f"{where}: pos_label={pos_label!r} is not one of the labels {values[:10]!r}. Pass "
                         "pos_label= with the positive class value (positive_class in a run spec, --positive-class on "
                         "the command line).")
    if len(others) > 1:
        raise InputError(f"{where}: a binary evaluation needs at most two classes, found {len(values)}: "
                         f"{values[:10]!r}. Use the multiclass task, or map the labels to two classes.")
    pos = values[is_pos.index(True)] if any(is_pos) else pos_label
    if others:
        return [others[0], pos]
    if absent is _NEGATIVE:
        return [f"not {pos}" if isinstance(pos, str) else 0, pos]
    return [absent, pos]


def class_rows(columns: dict[str, np.ndarray], keep: np.ndarray | None = None, first_row: int = 0) -> str:
    """Where each class value is, for an error about too many classes: its number of rows and its
    first row (the odd class out is usually a rare one).

    Parameters
    ----------
    columns : dict of str to numpy.ndarray
        The class values of each column, by the name to print (``"y_true"``, ``"column 'label'"``);
        a value is counted in the first column that holds it.
    keep : numpy.ndarray of bool, optional
        The rows that count (rows of positive weight); None: every row.
    first_row : int
        The row number of the first row (in its file).

    Returns
    -------
    str
        ``"<value> in <count> row(s) of <column> (first: row <row>); ..."``.

    Examples
    --------
    >>> print(class_rows({"y_true": np.array([0, 1, 0, 2, 1])}))
    0 in 2 row(s) of y_true (first: row 0); 1 in 2 (first: row 1); 2 in 1 (first: row 3)
    """
    found: list[tuple] = []
    for name, values in columns.items():
        rows = np.arange(values.size) if keep is None else np.flatnonzero(keep)
        distinct, first, counts = np.unique(values[rows], return_index=True, return_counts=True)
        found += [(value, count, name, f"row {row}")
                  for value, count, row in zip(distinct.tolist(), counts.tolist(), (rows[first] + first_row).tolist())]
    return format_class_rows(found)


def format_class_rows(found: list[tuple]) -> str:
    """``(value, rows, column, first row)`` entries as :func:`class_rows` prints them: a value once,
    from the first column that holds it; the column named where it changes.

    >>> print(format_class_rows([(0, 2, "y_true", "row 0"), (3, 1, "y_pred", "row 4"), (0, 5, "y_pred", "row 1")]))
    0 in 2 row(s) of y_true (first: row 0); 3 in 1 row(s) of y_pred (first: row 4)
    """
    parts, seen, last = [], set(), None
    for value, count, name, first in found:
        if value not in seen:
            of = f" row(s) of {name}" if name != last else ""
            parts.append(f"{value!r} in {count:,}{of} (first: {first})")
            seen.add(value)
            last = name
    return "; ".join(parts)


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def positive_class(label_type: pa.DataType, pos_label: Any = None, *, column: str = "label", where="data"):
    """The positive class of a binary task as a value of the label column.

    Parameters
    ----------
    label_type : pyarrow.DataType
        Type of the label column.
    pos_label : optional
        The positive class; text (from a command line) is converted to the label type. None:
        True for a boolean column, 1 for numbers.
    column, where : str
        The label column and the source, for the messages.

    Returns
    -------
    The positive class.

    Raises
    ------
    InputError
        ``pos_label`` is None and the labels are strings (there is no default), or ``pos_label``
        is not a value of the label type.

    Examples
    --------
    >>> positive_class(pa.bool_()), positive_class(pa.int8(), "2"), positive_class(pa.string(), "beer")
    (True, 2, 'beer')
    """
    if pos_label is not None:
        return class_value(pos_label, label_type, "pos_label") if isinstance(pos_label, str) else pos_label
    if pa.types.is_boolean(label_type):
        return True
    if type_kind(label_type) in ("integer", "number"):
        return 1
    raise InputError(f"{where}: column {column!r} holds {type_kind(label_type)} labels: say which class is positive "
                     "(pos_label=...; positive_class in a run spec; --positive-class on the command line).")


def class_indices(values, labels: Sequence, *, name: str = "y_true") -> np.ndarray:
    """The index of each value in the class list ``labels``; -1 for a value outside it or null.

    Parameters
    ----------
    values : numpy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        Labels (or predicted classes). Arrow values of another type than the class list are
        compared as text (``1`` matches the class ``"1"``).
    labels : sequence
        The class list.
    name : str
        The argument, for the message.

    Returns
    -------
    numpy.ndarray of int64

    Raises
    ------
    InputError
        Numpy values that cannot be compared with the class list (strings against numbers).

    Examples
    --------
    >>> class_indices(np.array(["b", "a", "z"]), ["a", "b"]).tolist()
    [1, 0, -1]
    >>> class_indices(pa.array([2, None]), [1, 2]).tolist()
    [1, -1]
    """
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        value_set = pa.array(list(labels))
        try:
            idx = pc.index_in(values, value_set=value_set.cast(values.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            idx = pc.index_in(values.cast(pa.string()), value_set=pa.array([str(x) for x in labels]))
        return np.asarray(idx.fill_null(-1), dtype=np.int64)
    y, labels_arr = np.asarray(values), np.asarray(list(labels))
    if labels_arr.size == 0:
        return np.full(y.shape[0], -1, dtype=np.int64)
    small = labels_arr.size and y.size and y.dtype.kind in "iub" and labels_arr.dtype.kind in "iub"
    if small and labels_arr.min() >= 0 and labels_arr.max() < 1 << 20 and y.min() >= 0 and y.max() < 1 << 20:
        lookup = np.full(int(max(labels_arr.max(), y.max())) + 1, -1, dtype=np.int64)
        lookup[labels_arr.astype(np.int64)] = np.arange(labels_arr.size)
        return lookup[y.astype(np.int64)]
    try:
        order = np.argsort(labels_arr)
        sorted_labels = labels_arr[order]
        pos = np.clip(np.searchsorted(sorted_labels, y), 0, sorted_labels.size - 1)
        found = sorted_labels[pos] == y
    except TypeError as exc:
        raise InputError(f"{name}: label values of type {y.dtype} cannot be compared with labels of type "
                         f"{labels_arr.dtype} (mixed label types): {exc}") from None
    return np.where(found, order[pos], -1).astype(np.int64)


def predicted_class(scores, task: str, threshold: float = 0.5) -> np.ndarray:
    """The predicted class of each row from its scores, as an index into the class list.

    Parameters
    ----------
    scores : array-like
        Binary: one score per row, the positive class's (an N x 1 array too). Multiclass: N x K,
        columns in class-list order.
    task : {"binary", "multiclass"}
    threshold : float
        Binary: a row is predicted positive (index 1 of ``[negative, positive]``) when its score
        is >= ``threshold``, compared as numbers: float32 scores are compared in float64, the
        type the exact score counts hold them in. (numpy would round a Python ``threshold`` to
        float32 first: 0.7 becomes 0.69999999, and a float32 score of 0.69999999 would count as
        >= 0.7 here but not in the exact counts' confusion.)

    Returns
    -------
    numpy.ndarray
        Binary: int8 0/1; multiclass: the argmax (the first column on ties). Scores are not
        checked here: NaN is never >= the threshold, and a row with NaN scores gets an arbitrary
        class (validate first).

    Examples
    --------
    >>> predicted_class([0.2, 0.5, 0.9], "binary").tolist()
    [0, 1, 1]
    >>> predicted_class([[0.2, 0.8], [0.5, 0.5]], "multiclass").tolist()
    [1, 0]
    >>> predicted_class(np.array([0.7], np.float32), "binary", 0.7).tolist()  # 0.69999999 < 0.7
    [0]
    """
    check_task(task)
    s = scores.to_numpy(zero_copy_only=False) if isinstance(scores, (pa.Array, pa.ChunkedArray)) else np.asarray(scores)
    if task == "binary":
        return np.greater_equal(s.reshape(-1), np.float64(threshold)).astype(np.int8)  # (a float64 scalar: no rounding)
    return np.argmax(s, axis=1)
