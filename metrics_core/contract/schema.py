"""The input contract's schema side: column roles (:class:`Columns`), the layout of a source
(:func:`resolve_layout`), missing and misspelt columns, and schema changes between sources."""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core.contract.classes import check_task, class_value, type_kind
from metrics_core.errors import InputError

#: Command-line options of ``classwatch evaluate`` that map a role (named in missing-column errors).
_CLI_OPTIONS = {"label": "--label-column", "score": "--score-column", "prediction": "--prediction-column",
                "weight": "--weight-column", "score_prefix": "--score-prefix", "period": "--period-column",
                "price": "--price-column"}


def read_type(t: pa.DataType) -> pa.DataType:
    """The type a column of type ``t`` has once read: decimals (SQL DECIMAL/NUMERIC) as float64,
    every other type as it is (:func:`decimals_as_floats`).

    >>> read_type(pa.decimal128(10, 4)), read_type(pa.float32())
    (DataType(double), DataType(float))
    """
    return pa.float64() if pa.types.is_decimal(t) else t


def decimals_as_floats(data):
    """Decimal columns as float64, each value the double nearest to it; anything else as it is.

    Scores, prices and weights exported from a database often come as DECIMAL. Arrow's own
    decimal-to-float cast scales by an inexact power of ten (0.1989 becomes 0.19890000000000002),
    so the values go through their text, which Arrow parses to the nearest double: a decimal
    column gives the metrics of a float column of the same numbers, to the last bit. ``data``: a
    pyarrow Array, ChunkedArray, RecordBatch or Table (nulls stay null).

    >>> import decimal
    >>> decimals_as_floats(pa.array([decimal.Decimal("0.1989")], pa.decimal128(10, 4))).to_pylist()
    [0.1989]
    """
    if isinstance(data, (pa.RecordBatch, pa.Table)):
        if not any(pa.types.is_decimal(f.type) for f in data.schema):
            return data
        return type(data).from_arrays([decimals_as_floats(c) for c in data.columns], names=data.schema.names)
    if pa.types.is_decimal(data.type):
        return pc.cast(pc.cast(data, pa.string()), pa.float64())
    return data


@dataclass(frozen=True)
class Columns:
    """Which column plays which role.

    Per-class scores of a multiclass model are the columns ``score_prefix + str(class)``
    (``score_a``, ``score_b``, ...); a number class also finds the column of the same number written
    the other way (``score_1`` for the class 1.0, :meth:`class_score_columns`). ``weight``,
    ``price`` and ``design_weight`` (a monitored period's labelled sample: each labelled row's
    inverse inclusion probability) are off (None) unless named.

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
    design_weight: str | None = None

    def class_score_columns(self, labels: Iterable, names: Sequence[str] = ()) -> list[str]:
        """Names of the per-class score columns for ``labels``, in that order.

        With the data's column ``names``, a number class whose own name is absent takes the column
        of the same number: the class 1.0 of a float label column (as pandas writes integer classes
        once the column held a NaN) reads ``score_1``, the class 1 reads ``score_1.0``.

        >>> Columns().class_score_columns([0.0, 1.0], ["label", "score_0", "score_1.0"])
        ['score_0', 'score_1.0']
        """
        out = []
        for c in labels:
            name = f"{self.score_prefix}{c}"
            if name not in names and isinstance(c, numbers.Real) and not isinstance(c, (bool, np.bool_)):
                name = next((n for n in names if self._suffix_number(n) == c), name)
            out.append(name)
        return out

    def _suffix_number(self, name: str) -> float | None:
        """The number after the score prefix of a column name (None: not a number)."""
        if not name.startswith(self.score_prefix):
            return None
        try:
            return float(name[len(self.score_prefix):])
        except ValueError:
            return None


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
    design_weight: str | None = None

    def used(self) -> list[str]:
        """Every column this layout reads, once each."""
        cols = [self.label, self.prediction, *self.scores, self.price, self.weight, *self.features, self.id,
                self.design_weight]
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


#: The roles a column map (:class:`Columns`) names one column for, each set as ``columns.<role>``.
_MAP_ROLES = frozenset(f.name for f in fields(Columns) if f.name != "features")


def missing_columns(where, missing: dict[str, str | None], names: Sequence[str], why: str = "",
                    guess: bool = True, fix: str | None = None) -> InputError:
    """The error for columns a source lacks: each column with its role, and the columns it has.

    Parameters
    ----------
    where : str or path
        The source (file or directory).
    missing : dict
        Missing column -> its role (None when the caller does not know it). A role of the column
        map (:class:`Columns`) is named with the ways to set it; another (``"segment"``) only
        in the parenthesis, ``fix`` saying where it is set.
    names : sequence of str
        The columns the source has.
    why : str
        Why the columns are needed, when that is not obvious.
    guess : bool
        Name a column whose name is a near miss of a missing one (False when ``why`` says better).
    fix : str, optional
        What to do, in place of "Rename the column" (a role of the column map adds how to set it).

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
    # only a role of the column map can be set in it (a segment column is named in columns.segments: ``fix`` says so)
    roles = [r for r in dict.fromkeys(r for r in missing.values() if r) if r in _MAP_ROLES]
    fix = fix or f"Rename the column{'s' if len(missing) > 1 else ''}"
    if roles:
        ways = [f"Columns({r}=...)" for r in roles] + [f"columns.{r} in a run spec" for r in roles]
        ways += [f"{_CLI_OPTIONS[r]} on the command line" for r in roles if r in _CLI_OPTIONS]
        plural = "s" if len(roles) > 1 else ""
        fix += f" or set the {', '.join(roles)} role{plural} of the column map ({'; '.join(ways)})"
    head = "missing column" + ("s" if len(missing) > 1 else "")
    # Neutral: the typo may be the data's header ('lable') or the name asked for (--score-column scroe).
    guesses = [f"the data has {n!r}, a near miss of {c!r}: is one of them misspelt?" for c in missing
               for n in near_misses(c, list(names))[:1]] if guess else []
    maybe = f" ({'; '.join(guesses)})" if guesses else ""
    return InputError(f"{where}: {head} {cols}: not found among the columns {shown}{maybe}. "
                      + (f"{why} " if why else "") + fix + ".")


def check_label_spelling(names: Sequence[str], label: str, where: Any) -> None:
    """A source without the label column but with a near-miss of its name (``lable`` for ``label``,
    ``Label``) is an :class:`InputError`: monitoring it would read an ordinary-looking period
    "without labels".

    >>> try:
    ...     check_label_spelling(["id", "lable", "score"], "label", "d.csv")
    ... except InputError as exc:
    ...     print(str(exc)[:81])
    d.csv: no label column 'label', but column 'lable' looks like a misspelling of it
    """
    if label in names:
        return
    near = near_misses(label, names)
    if near:
        raise InputError(f"{where}: no label column {label!r}, but column {near[0]!r} looks like a misspelling of "
                         f"it. Rename the column in the data, or name {near[0]!r} as the label column if it is one "
                         "(columns.label in a run spec, columns={'label': ...} in Python); nothing was logged.")


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
        Roles whose column must exist: any of "label", "prediction", "weight", "price", "design_weight", "id",
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
            # the other task's score column(s) present: most likely the task is the wrong one
            per_class = [n for n in names if n.startswith(columns.score_prefix)]
            other = ""
            if task != "binary" and columns.score in names:
                other = (f" The data has the binary score column {columns.score!r}: is the task binary (task: binary "
                         "in a run spec; --task binary on the command line)?")
            elif task == "binary" and per_class:
                other = (f" The data has per-class score columns {per_class[:3]}: is the task multiclass? A binary "
                         "task reads the positive class's score from one column (columns.score in a run spec; "
                         f"--score-column {per_class[-1]} on the command line).")
            raise missing_columns(where, {wanted: "score" if task == "binary" else "score_prefix"}, names,
                                  f"A {task} evaluation needs the score column{'s' if task != 'binary' else ''} "
                                  f"{wanted!r} or the prediction column {columns.prediction!r}.{other}",
                                  guess=not other)
    optional = {r: getattr(columns, r) if getattr(columns, r) in names else None
                for r in ("price", "weight", "id", "design_weight")}
    return Layout(task, classes or [], columns.label if columns.label in names else None, prediction, scores,
                  optional["price"], optional["weight"], [f for f in columns.features if f in names], optional["id"],
                  optional["design_weight"])


def _score_columns(schema: pa.Schema, task: str, columns: Columns, classes: list | None, where
                   ) -> tuple[list[str], list | None]:
    """The score columns of a layout and the class list they imply (all or none per class)."""
    names = schema.names
    if task == "binary":
        return ([columns.score] if columns.score in names else []), classes
    if classes is None:
        found = score_column_classes(schema, columns)
        return columns.class_score_columns(found, names), found or None
    wanted = columns.class_score_columns(classes, names)
    present = [c for c in wanted if c in names]
    if present and len(present) != len(wanted):
        gone = [c for c in wanted if c not in names]
        raise InputError(f"{where}: missing per-class score column(s) {gone!r} ({len(gone)} of {len(wanted)} classes), "
                         f"e.g. {gone[0]!r}. Every class in the class list needs its score column, named "
                         f"{columns.score_prefix}<class> (the model's score of that class); the data has columns "
                         f"{names[:25]!r}. Add the missing column(s); dropping the rows of those classes would "
                         "leave them out of the evaluation.")
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
