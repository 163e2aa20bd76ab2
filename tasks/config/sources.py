"""Data sources of a run spec: resolve paths and periods, map the spec's columns onto the input contract."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from metrics_core import contract
from metrics_core.contract import Columns, Layout, missing_columns, resolve_layout
from metrics_core.dataset import open_dataset, resolve_class_list
from metrics_core.errors import InputError
from tasks.config.spec import ColumnMap, RunSpec, SpecError

# \Z, not $: "$" also matches before a final newline, and "2024-01\n" would pass as a period
PERIOD_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])\Z")
WEEK_RE = re.compile(r"^(\d{4})-W(0[1-9]|[1-4]\d|5[0-3])\Z")
DAY_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\Z")
_PERIOD_HELP = "expected YYYY-MM (a month, e.g. 2024-08), YYYY-Www (an ISO week, e.g. 2024-W05) or YYYY-MM-DD (a day)"


def period_kind(period: str) -> str:
    """``"month"``, ``"week"`` (ISO 8601) or ``"day"``: the granularity of a checked period.

    >>> period_kind("2024-08"), period_kind("2024-W05"), period_kind("2024-05-17")
    ('month', 'week', 'day')
    """
    check_period(period)
    return "month" if PERIOD_RE.match(period) else ("week" if WEEK_RE.match(period) else "day")


def period_bounds(period: str) -> tuple[date, date]:
    """``(first day, day after the last)`` of a period (month, ISO week from its Monday, or day).

    >>> period_bounds("2024-W01"), period_bounds("2024-12")[1]
    ((datetime.date(2024, 1, 1), datetime.date(2024, 1, 8)), datetime.date(2025, 1, 1))
    """
    kind = period_kind(period)
    if kind == "month":
        y, m = (int(x) for x in period.split("-"))
        return date(y, m, 1), date(y + m // 12, m % 12 + 1, 1)
    if kind == "week":
        y, w = WEEK_RE.match(period).groups()
        start = date.fromisocalendar(int(y), int(w), 1)
        return start, start + timedelta(days=7)
    start = date.fromisoformat(period)
    return start, start + timedelta(days=1)


def check_period(period: str) -> str:
    """A period is a month ``YYYY-MM`` (the default), an ISO week ``YYYY-Www`` or a day
    ``YYYY-MM-DD`` (the MLflow tag classwatch.period).

    >>> check_period("2024-08"), check_period("2024-W05"), check_period("2024-05-17")
    ('2024-08', '2024-W05', '2024-05-17')
    """
    if not isinstance(period, str) or not (PERIOD_RE.match(period) or WEEK_RE.match(period) or DAY_RE.match(period)):
        raise InputError(f"period: {_PERIOD_HELP}, got {period!r}.")
    try:
        if WEEK_RE.match(period):
            y, w = WEEK_RE.match(period).groups()
            date.fromisocalendar(int(y), int(w), 1)
        elif DAY_RE.match(period):
            date.fromisoformat(period)
    except ValueError:
        raise InputError(f"period: {period!r} is not a date of the calendar ({_PERIOD_HELP}).") from None
    return period


def period_index(period: str) -> int:
    """The rank of a period in time, the same whenever and in whatever order periods are run:
    months since 1970-01, ISO weeks since 1970-W01 (Monday 1969-12-29), days since 1970-01-01.

    >>> period_index("1970-01"), period_index("2024-08"), period_index("1970-W02"), period_index("1970-01-31")
    (0, 655, 1, 30)
    """
    kind = period_kind(period)
    if kind == "month":
        y, m = PERIOD_RE.match(period).groups()
        return (int(y) - 1970) * 12 + int(m) - 1
    start = period_bounds(period)[0]
    if kind == "week":
        return (start - date(1969, 12, 29)).days // 7
    return (start - date(1970, 1, 1)).days


def period_step(period: str) -> int:
    """The MLflow step of a period: the period written as a number a reader of a chart reads back,
    increasing in time within each kind of period: ``year * 100 + month`` for a month,
    ``ISO year * 100 + ISO week`` for a week, ``year * 10000 + month * 100 + day`` for a day.

    >>> period_step("2024-05"), period_step("2024-W19"), period_step("2024-05-12"), period_step("2025-W01")
    (202405, 202419, 20240512, 202501)
    """
    kind = period_kind(period)
    if kind == "week":
        year, week = WEEK_RE.match(period).groups()
        return int(year) * 100 + int(week)
    start = period_bounds(period)[0]
    return start.year * 100 + start.month if kind == "month" else int(start.strftime("%Y%m%d"))


def columns_of(spec: RunSpec) -> Columns:
    """The spec's column map as the contract's :class:`metrics_core.contract.Columns`."""
    c = spec.columns
    return Columns(label=c.label, prediction=c.prediction, score=c.score, score_prefix=c.score_prefix, id=c.id,
                   period=c.period, weight=c.weight, price=c.price, features=tuple(c.features),
                   design_weight=c.design_weight)


def source_for(spec: RunSpec, which: str, period: str | None = None) -> tuple[str, object | None]:
    """``(path, row filter)`` of data source ``which`` ("reference", "test", "current").

    ``current`` with ``{period}`` in its path is formatted; otherwise, when the data has the period
    column, rows are filtered to ``period`` (:func:`period_rows`). Without that column the whole
    source is the period, unless a column's name is a near miss of it (an error: ``Period``).
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
        near = contract.near_misses(col, schema.names)
        if near:  # one dataset of every month whose period column is misnamed would be read whole
            raise missing_columns(path, {col: "period"}, schema.names, why="The rows of each period are selected "
                                  "by it; without it the whole source would count as the period.")
        return path, None
    return path, period_rows(col, schema.field(col).type, period)


def period_rows(col: str, t: pa.DataType, period: str) -> pads.Expression:
    """The rows of ``period`` in a period column ``col`` of type ``t``.

    - dates and timestamps: the days of the month, ISO week or day (a timestamp with a time zone
      on its local calendar, :func:`_midnight`);
    - integers: ``YYYYMM`` for a month (and the days ``YYYYMMDD`` of that month), ``YYYYMMDD``
      for a day;
    - text: the period as written (``2024-08``, ``2024-W05``), and for a month or a day the text
      that starts with it, a day or a time (``2024-08-15``, ``2024-08-15T09:30``).
    """
    kind = period_kind(period)
    field = pads.field(col)
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        start, end = (_midnight(day, t) for day in period_bounds(period))
        return (field >= start) & (field < end)
    if pa.types.is_integer(t) and kind != "week":
        number = int(period.replace("-", ""))
        return field == number if kind == "day" else (field == number) | (
            (field > number * 100) & (field < number * 100 + 32))
    text = field if pa.types.is_string(t) or pa.types.is_large_string(t) else field.cast(pa.string())
    if kind == "week":
        return text == period
    starts = [period + "-"] if kind == "month" else [period + "T", period + " "]
    selection = text == period
    for prefix in starts:
        selection = selection | pc.starts_with(text, pattern=prefix)
    return selection


def no_period_rows(spec: RunSpec, source: str) -> InputError:
    """The error for a period column without a row of the period: its first values and the forms it may take."""
    col = spec.columns.period
    head = open_dataset(source).head(5, columns=[col]).column(col).to_pylist()
    return InputError(f"{source}: no rows of this period in column {col!r} (its first values: {head}). A month "
                      "is selected from text 'YYYY-MM' or text starting with it ('2024-08-15'), numbers YYYYMM or "
                      "YYYYMMDD, dates or timestamps; check the period and the column (columns.period); nothing "
                      "was logged.")


def _midnight(day: date, t: pa.DataType) -> pa.Scalar:
    """The start of ``day`` as a scalar of the period column's type ``t`` (a date or timestamp type).

    A timestamp with a time zone (``Europe/London``, ``+02:00``) counts in that zone: a month is
    the month on the local calendar, as polars' and pandas' ``dt.month`` read it. Arrow's own cast
    of a date would put the boundary at midnight UTC and move the first local hour of a summer
    month in London into the month before. A midnight that a clock change skips starts the day at
    the change (the first local instant of the day); a repeated one at its first occurrence.
    """
    if not (pa.types.is_timestamp(t) and t.tz):
        return pa.scalar(day, pa.date32()).cast(t)
    naive = pa.scalar(datetime.combine(day, time()), pa.timestamp(t.unit))
    return pc.assume_timezone(naive, timezone=t.tz, ambiguous="earliest", nonexistent="latest")


def class_list(spec: RunSpec, source: str, filter=None) -> list:
    """The class list of the spec on ``source``: the spec's ``labels``, else the classes of the data
    (binary: ``[negative, positive]`` with the spec's ``positive_class``), by the one rule of the
    flows and the notebook API (:func:`metrics_core.dataset.resolve_class_list`; a third class of a
    binary source says where each class is).
    """
    return resolve_class_list(source, spec.task, columns_of(spec), labels=spec.labels,
                              positive_class=spec.positive_class, filter=filter)


def layout(spec: RunSpec, source: str, labels: list, *, require_labels: bool) -> Layout:
    """The spec's column roles on ``source`` (:func:`metrics_core.contract.resolve_layout`, metadata only).

    Required: the label when ``require_labels``, the feature columns listed in the spec, and a
    price or weight column the spec names with a name other than the default (a default name that
    is absent is skipped, even when the spec writes it out; ``price: null`` says there is none).
    A label column that is absent while the source has a near-miss name (``lable``) is an error
    (:func:`metrics_core.contract.check_label_spelling`), not a period without labels.
    """
    c = spec.columns
    require = (["label"] if require_labels else []) + ["features"]
    require += [role for role in ("price", "weight")
                if getattr(c, role) and getattr(c, role) != ColumnMap.model_fields[role].default]
    schema = open_dataset(source).schema
    contract.check_label_spelling(schema.names, c.label, source)
    return resolve_layout(schema, spec.task, columns_of(spec), labels=labels, require=require, where=source)


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
