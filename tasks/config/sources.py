"""Data sources of a run spec: resolve paths and periods, map column roles, check schemas (no row work)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.dataset as pads

from metrics_core.dataset import Columns, class_labels, open_dataset, schema_changes
from metrics_core.errors import InputError
from tasks.config.spec import RunSpec, SpecError

PERIOD_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


def check_period(period: str) -> str:
    """A period is ``YYYY-MM`` (the MLflow tag classwatch.period).

    >>> check_period("2024-08")
    '2024-08'
    """
    if not isinstance(period, str) or not PERIOD_RE.match(period):
        raise InputError(f"period: expected YYYY-MM (e.g. 2024-08), got {period!r}.")
    return period


def period_index(period: str) -> int:
    """Months since 1970-01: the MLflow step of a period, the same whenever and in whatever order
    periods are run.

    >>> period_index("1970-01"), period_index("2024-08")
    (0, 655)
    """
    y, m = PERIOD_RE.match(check_period(period)).groups()
    return (int(y) - 1970) * 12 + int(m) - 1


def columns_of(spec: RunSpec) -> Columns:
    """The spec's column map as :class:`metrics_core.dataset.Columns`."""
    c = spec.columns
    return Columns(label=c.label, prediction=c.prediction, score=c.score, score_prefix=c.score_prefix, id=c.id,
                   period=c.period, weight=c.weight, price=c.price, features=tuple(c.features))


def source_for(spec: RunSpec, which: str, period: str | None = None) -> tuple[str, object | None]:
    """``(path, row filter)`` of data source ``which`` ("reference", "test", "current").

    ``current`` with ``{period}`` in its path is formatted; otherwise, when the data has the period
    column, rows are filtered to ``period`` (string column: equality; date/timestamp: the month).
    """
    path = getattr(spec.data, which)
    if not path:
        raise SpecError(f"Invalid run spec: field 'data.{which}' is needed for this flow but is not set. "
                        f"Add `data: {{{which}: PATH}}` to the spec or pass it on the command line.")
    if period is None:
        return path, None
    check_period(period)
    if "{period}" in path:
        return path.format(period=period), None
    schema = open_dataset(path).schema
    col = spec.columns.period
    if col not in schema.names:
        return path, None
    t = schema.field(col).type
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        start = np.datetime64(f"{period}-01")
        end = start.astype("datetime64[M]") + 1
        return path, (pads.field(col) >= pa.scalar(start.astype("datetime64[D]").item(), pa.date32()).cast(t)) & \
            (pads.field(col) < pa.scalar(end.astype("datetime64[D]").item(), pa.date32()).cast(t))
    if pa.types.is_integer(t):
        y, m = period.split("-")
        return path, pads.field(col) == int(y + m)
    return path, pads.field(col).cast(pa.string()) == period


@dataclass(frozen=True)
class Layout:
    """Which column plays which role in one source (None / empty = absent), and the class list."""

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
        cols = [self.label, self.prediction, *self.scores, self.price, self.weight, *self.features, self.id]
        return [c for c in dict.fromkeys(cols) if c]

    def as_dict(self) -> dict:
        return asdict(self)


def class_list(spec: RunSpec, source: str, filter=None) -> list:
    """The class list: the spec's ``labels``, else the sorted labels of ``source`` (binary:
    ``[negative, positive]`` with the spec's ``positive_class``)."""
    if spec.labels is not None:
        values = list(spec.labels)
    else:
        values = class_labels(source, columns_of(spec), filter=filter).tolist()
    if spec.task == "binary":
        pos = spec.positive_class
        match = [v for v in values if v == pos or str(v) == str(pos)]
        others = [v for v in values if not (v == pos or str(v) == str(pos))]
        if len(others) > 1:
            raise InputError(f"{source}: column {spec.columns.label!r}: a binary task has two classes, the data has "
                             f"{len(values)}: {values[:10]!r}. Set task: multiclass or map the labels.")
        pos = match[0] if match else pos
        neg = others[0] if others else (0 if not isinstance(pos, str) else f"not {pos}")
        return [neg, pos]
    if not values:
        raise InputError(f"{source}: column {spec.columns.label!r} has no values; the class list is empty. "
                         "Set `labels:` in the spec.")
    return values


def layout(spec: RunSpec, source: str, labels: list, *, require_labels: bool) -> Layout:
    """Map the spec's column roles onto the columns of ``source`` (metadata only).

    Required: the label when ``require_labels``; scores or a prediction column; the feature
    columns listed in the spec; a price or weight column the spec names explicitly (a default
    name that is absent is skipped). Multiclass scores are ``score_<class>`` for every class,
    all or none.
    """
    names = open_dataset(source).schema.names
    c = spec.columns
    explicit = c.model_fields_set

    def missing(role: str, column: str, why: str) -> InputError:
        return InputError(f"{source}: missing column {column!r} ({role}); {why} The data has columns "
                          f"{names[:20]!r}{' ...' if len(names) > 20 else ''}. Rename the column or set "
                          f"columns.{role} in the spec.")

    label = c.label if c.label in names else None
    if require_labels and label is None:
        raise missing("label", c.label, "this flow needs the true labels.")
    if spec.task == "binary":
        scores = [c.score] if c.score in names else []
    else:
        wanted = [f"{c.score_prefix}{x}" for x in labels]
        present = [s for s in wanted if s in names]
        if present and len(present) != len(wanted):
            gone = [s for s in wanted if s not in names]
            raise InputError(f"{source}: missing per-class score column(s) {gone!r} ({len(gone)} of {len(wanted)} "
                             f"classes), e.g. {gone[0]!r}. Every class in the class list needs its score column.")
        scores = present
    prediction = c.prediction if c.prediction in names else None
    if not scores and prediction is None:
        raise missing("prediction", c.prediction, "without score columns the predicted class is needed.")
    roles = {}
    for role in ("price", "weight", "id"):
        col = getattr(c, role)
        if col and col not in names and role in explicit and role != "id":
            raise missing(role, col, "the spec names it.")
        roles[role] = col if col and col in names else None
    for f in c.features:
        if f not in names:
            raise missing("features", f, "the spec lists it as a feature.")
    return Layout(spec.task, list(labels), label, prediction, scores, roles["price"], roles["weight"],
                  list(c.features), roles["id"])


def _kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return "integer"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t):
        return "string"
    return str(t)


def check_same_schema(reference: str, current: str, ref: Layout, cur: Layout) -> None:
    """The current source keeps the reference's columns and their kinds (labels may be absent).

    Raises an InputError naming each changed column (missing, or a changed type such as number
    -> string), how many columns changed and an example, before anything is read or logged.
    """
    old, new = open_dataset(reference).schema, open_dataset(current).schema
    used = [col for col in ref.used() if col != ref.label or col in new.names]
    problems = []
    for col in used:
        if col not in new.names:
            problems.append(f"column {col!r} is missing (was {old.field(col).type})")
        elif _kind(old.field(col).type) != _kind(new.field(col).type):
            problems.append(f"column {col!r} changed type: {old.field(col).type} -> {new.field(col).type}")
    if problems:
        others = [p for p in schema_changes(old, new) if "is new" in p]
        raise InputError(f"{current}: the schema changed from the reference {reference}: {len(problems)} column(s) "
                         f"differ, e.g. {problems[0]}" + (f"; all: {'; '.join(problems)}" if len(problems) > 1 else "")
                         + (f" (also {'; '.join(others[:3])})" if others else "")
                         + ". Fix the delivery or update the spec; nothing was logged.")


def read_columns(source: str, columns: list[str], filter=None) -> pl.DataFrame:
    """The named columns of ``source`` as a polars DataFrame (model inputs, check rows)."""
    ds = open_dataset(source)
    missing = [c for c in columns if c not in ds.schema.names]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing!r}; the data has {ds.schema.names[:20]!r}.")
    return pl.from_arrow(ds.to_table(columns=columns, filter=filter))


def describe_source(source: str) -> str:
    """A short, stable name of a data source for run keys and tags (the resolved path)."""
    return str(Path(source).resolve()) if "://" not in source else source
