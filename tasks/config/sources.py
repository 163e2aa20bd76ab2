"""Data sources of a run spec: resolve paths and periods, map the spec's columns onto the input contract."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.dataset as pads

from metrics_core import contract
from metrics_core.contract import Columns, Layout, binary_classes, check_class_list, missing_columns, resolve_layout
from metrics_core.dataset import class_labels, open_dataset
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
    """The spec's column map as the contract's :class:`metrics_core.contract.Columns`."""
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


def class_list(spec: RunSpec, source: str, filter=None) -> list:
    """The class list: the spec's ``labels``, else the sorted labels of ``source`` (binary:
    ``[negative, positive]`` with the spec's ``positive_class``, named by the contract)."""
    if spec.labels is not None:
        values = list(spec.labels)
    else:
        values = class_labels(source, columns_of(spec), filter=filter).tolist()
    where = f"{source}: column {spec.columns.label!r}"
    if spec.task == "binary":
        return binary_classes(values, spec.positive_class, where=where)
    return check_class_list(values, where=where)


def layout(spec: RunSpec, source: str, labels: list, *, require_labels: bool) -> Layout:
    """The spec's column roles on ``source`` (:func:`metrics_core.contract.resolve_layout`, metadata only).

    Required: the label when ``require_labels``, the feature columns listed in the spec, and a
    price or weight column the spec names explicitly (a default name that is absent is skipped).
    """
    c = spec.columns
    require = (["label"] if require_labels else []) + ["features"]
    require += [role for role in ("price", "weight") if role in c.model_fields_set and getattr(c, role)]
    return resolve_layout(open_dataset(source).schema, spec.task, columns_of(spec), labels=labels, require=require,
                          where=source)


def check_same_schema(reference: str, current: str, ref: Layout, cur: Layout | None = None) -> None:
    """The current source keeps the reference's columns and their kinds
    (:func:`metrics_core.contract.check_same_schema`), before anything is read or logged."""
    contract.check_same_schema(open_dataset(reference).schema, open_dataset(current).schema, ref,
                               reference=reference, current=current)


def read_columns(source: str, columns: list[str], filter=None) -> pl.DataFrame:
    """The named columns of ``source`` as a polars DataFrame (model inputs, check rows)."""
    ds = open_dataset(source)
    missing = {c: None for c in columns if c not in ds.schema.names}
    if missing:
        raise missing_columns(source, missing, ds.schema.names)
    return pl.from_arrow(ds.to_table(columns=columns, filter=filter))


def describe_source(source: str) -> str:
    """A short, stable name of a data source for run keys and tags (the resolved path)."""
    return str(Path(source).resolve()) if "://" not in source else source
