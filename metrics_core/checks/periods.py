"""The periods of the stability checks: the reference window, month periods, the period column, the column checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core.checks.frames import _examples, _numeric, as_frame
from metrics_core.errors import InputError, bad_rows

__all__ = ["MONTH_FORMAT", "month_periods", "check_periods"]


def _window(periods: list, reference: Any) -> tuple[list, list]:
    """(reference periods, compared periods): the first ``reference`` periods, or those listed."""
    if isinstance(reference, (int, np.integer)) and not isinstance(reference, bool):
        if not 1 <= reference < len(periods):
            raise InputError(f"reference: a window of {reference} period(s) leaves nothing to compare among "
                             f"{len(periods)} period(s); use 1 to {len(periods) - 1}.")
        return periods[:reference], periods[reference:]
    if isinstance(reference, (str, bytes)) or not hasattr(reference, "__iter__"):
        reference = [reference]
    ref = list(reference)
    unknown = [p for p in ref if p not in periods]
    if not ref or unknown:
        raise InputError(f"reference: period(s) {unknown or ref} not in the data (periods: {_examples(periods)}).")
    compared = [p for p in periods if p not in ref]
    if not compared:
        raise InputError("reference: every period is in the reference window; there is nothing to compare.")
    return ref, compared


def _finite_column(frame: pl.DataFrame, column: str, argument: str, nonnegative: bool = False,
                   rows: np.ndarray | None = None, positive: bool = False) -> np.ndarray:
    """The column as float64; an :class:`InputError` (column, count, example row) for a null, NaN or infinite
    value (or negative, with ``nonnegative``) in the ``rows`` mask (None: every row); then, with ``positive``,
    for a value <= 0 (a price: its relative shift is a difference of log prices)."""
    s = frame[column]
    if not _numeric(s.dtype):
        raise InputError(f"{argument}: column {column!r} must be numeric, got {s.dtype}.")
    x = s.cast(pl.Float64).to_numpy()
    bad = ~np.isfinite(x) | ((x < 0) if nonnegative else False)
    if rows is not None:
        bad &= rows
    if bad.any():
        problem = "null, NaN, infinite or negative value" if nonnegative else "null, NaN or infinite value"
        raise bad_rows(f"{argument} column {column!r}", problem, bad, x, "Fix or drop these rows.")
    nonpositive = (x <= 0) & (True if rows is None else rows) if positive else None
    if positive and nonpositive.any():
        raise bad_rows(f"{argument} column {column!r}", "non-positive price", nonpositive, x,
                       "Prices must be > 0; drop these rows or fix the price extraction.")
    return x


def _threshold(name: str, value: Any) -> None:
    """An :class:`InputError` unless the practical threshold ``value`` is a number >= 0."""
    if not isinstance(value, (int, float)) or not value >= 0:
        raise InputError(f"{name}: expected a number >= 0, got {value!r}.")


def _no_nulls(frame: pl.DataFrame, columns: list[str], argument: str) -> None:
    for column in columns:
        if frame[column].null_count():
            raise bad_rows(f"{argument} column {column!r}", "null value", frame[column].is_null().to_numpy(), None,
                           "Drop these rows or fill in their period and class.")


MONTH_FORMAT = "%Y-%m"


def month_periods(rows: Any, period_column: str) -> Any:
    """``rows`` with a date or timestamp ``period_column`` replaced by its month, ``"YYYY-MM"``.

    A timestamp with a time zone counts on its local calendar (Arrow's and polars' ``strftime``
    format in the column's zone), the rule by which monitoring selects a month's rows: 00:30 on
    1 August in London is August. Stability is judged per period, and a period of one timestamp
    holds one row. Other columns, and rows without ``period_column``, are returned as given.

    Examples
    --------
    >>> import datetime as dt
    >>> t = pa.table({"period": pa.array([dt.datetime(2024, 7, 31, 23, 30)], pa.timestamp("us", "UTC"))})
    >>> month_periods(t.cast(pa.schema([("period", pa.timestamp("us", "Europe/London"))])), "period")["period"][0]
    <pyarrow.StringScalar: '2024-08'>
    """
    if isinstance(rows, pa.RecordBatch):
        rows = pa.Table.from_batches([rows])
    if isinstance(rows, pa.Table):
        if period_column not in rows.schema.names:
            return rows
        i = rows.schema.get_field_index(period_column)
        t = rows.schema.field(i).type
        if not (pa.types.is_date(t) or pa.types.is_timestamp(t)):
            return rows
        return rows.set_column(i, period_column, pc.strftime(rows.column(i), format=MONTH_FORMAT))
    frame = as_frame(rows, "rows")
    if period_column in frame.columns and frame.schema[period_column] in (pl.Date, pl.Datetime):
        return frame.with_columns(pl.col(period_column).dt.strftime(MONTH_FORMAT))
    return frame


def check_periods(frame: pl.DataFrame, period_column: str) -> None:
    """An :class:`InputError` when ``period_column`` looks like no period column: more than two
    distinct values and more of them than half the rows (a price, an id, a time stored as text),
    so that a period would hold one or two rows, too few to judge stability by."""
    n_periods = frame[period_column].n_unique()
    if n_periods > 2 and 2 * n_periods > frame.height:
        raise InputError(f"rows: column {period_column!r} has {n_periods:,} distinct values in {frame.height:,} rows, "
                         f"so a period would hold one or two rows, too few to judge stability (first values: "
                         f"{frame[period_column].head(3).to_list()}). Is it the period column? Dates and "
                         "timestamps are grouped by month; give a coarser period (a month, 'YYYY-MM') otherwise.")
