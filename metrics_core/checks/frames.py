"""The result of a data check and the frame helpers every check shares (column checks, examples, status)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from metrics_core.errors import InputError

STATUSES = ("pass", "warn", "fail")
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one data check, for a flow to log and a person to read.

    Parameters
    ----------
    name : str
        The check, e.g. "leakage".
    status : {"pass", "warn", "fail"}
        The verdict; anything else is an error.
    table : polars.DataFrame
        A tidy table with one row per item checked.
    message : str
        One or more sentences with the counts and examples.
    figures : dict
        Scalar numbers (ready for ``mlflow.log_metrics``); nan where a figure is undefined.

    Examples
    --------
    >>> str(CheckResult("demo", "pass", pl.DataFrame(), "all fine"))
    '[pass] demo: all fine'
    """

    name: str
    status: str
    table: pl.DataFrame
    message: str
    figures: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise InputError(f"status: expected one of {STATUSES}, got {self.status!r}.")

    def __str__(self) -> str:
        return f"[{self.status}] {self.name}: {self.message}"


def as_frame(x: Any, name: str) -> pl.DataFrame:
    """A polars DataFrame from polars (eager or lazy) or pyarrow (Table, RecordBatch) input.

    Parameters
    ----------
    x : polars.DataFrame, polars.LazyFrame, pyarrow.Table or pyarrow.RecordBatch
        The data; a lazy frame is collected.
    name : str
        Argument name for the error message.

    Returns
    -------
    polars.DataFrame
        The data; any other type is an :class:`~metrics_core.errors.InputError`.

    Examples
    --------
    >>> as_frame(pa.table({"a": [1, 2]}), "rows").shape
    (2, 1)
    """
    if isinstance(x, pl.LazyFrame):
        return x.collect()
    if isinstance(x, pl.DataFrame):
        return x
    if isinstance(x, (pa.Table, pa.RecordBatch)):
        return pl.from_arrow(x)
    if type(x).__module__.startswith("pandas") and type(x).__name__ == "DataFrame":  # no pandas import
        return pl.from_pandas(x)  # the index is not a column
    raise InputError(f"{name}: expected a polars DataFrame or LazyFrame, a pyarrow Table or a pandas DataFrame, "
                     f"got {type(x).__name__}.")


def require_columns(frame: pl.DataFrame, name: str, columns: Sequence[str]) -> None:
    """Check that every name in ``columns`` is a column of ``frame``.

    Parameters
    ----------
    frame : polars.DataFrame
        The data.
    name : str
        Argument name for the error message.
    columns : sequence of str
        Required column names.

    Returns
    -------
    None
        An :class:`~metrics_core.errors.InputError` lists the missing columns and the first
        columns present.

    Examples
    --------
    >>> require_columns(pl.DataFrame({"a": [1]}), "rows", ["a"])
    """
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        shown = frame.columns[:12] + (["..."] if frame.width > 12 else [])
        raise InputError(f"{name}: column(s) {missing} not found (columns: {shown}). "
                         "Fix the column map or the data.")


def _nonempty(frame: pl.DataFrame, name: str) -> None:
    if frame.height == 0:
        raise InputError(f"{name}: the table is empty (0 rows). Check the data source.")


def _feature_list(feature_columns: Any) -> list[str]:
    if isinstance(feature_columns, str):
        return [feature_columns]
    cols = list(feature_columns) if feature_columns is not None else []
    if not cols or not all(isinstance(c, str) for c in cols):
        raise InputError(f"feature_columns: expected a non-empty list of column names, got {feature_columns!r}.")
    if len(set(cols)) != len(cols):
        raise InputError(f"feature_columns: duplicate names in {cols}.")
    return cols


def _label_not_a_feature(label_column: str | None, features: list[str]) -> None:
    if label_column is not None and label_column in features:
        raise InputError(f"feature_columns: the label column {label_column!r} is listed as a feature; "
                         "remove it (a label always separates itself).")


def _same_dtypes(a: pl.DataFrame, b: pl.DataFrame, columns: Sequence[str]) -> None:
    for c in columns:
        if a.schema[c] != b.schema[c]:
            raise InputError(f"feature_columns: column {c!r} is {a.schema[c]} in train but {b.schema[c]} in test; "
                             "the schema changed between the sets. Cast them to one type.")


def _numeric(dtype: pl.DataType) -> bool:
    """Numbers are tested by KS and binned; everything else is a category."""
    return dtype.is_numeric()


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _examples(values: Sequence) -> str:
    """At most ``MAX_EXAMPLES`` values, comma-separated, with "..." when there are more."""
    shown = [repr(_py(v)) for v in list(values)[:MAX_EXAMPLES]]
    return ", ".join(shown) + (", ..." if len(values) > MAX_EXAMPLES else "")


def _status(fail: bool, warn: bool) -> str:
    return "fail" if fail else ("warn" if warn else "pass")


def _train_test(train, test, feature_columns, label_column):
    """The two frames and the feature list, checked the same way by every train-vs-test check."""
    tr, te = as_frame(train, "train"), as_frame(test, "test")
    _nonempty(tr, "train")
    _nonempty(te, "test")
    features = _feature_list(feature_columns)
    require_columns(tr, "train", features)
    require_columns(te, "test", features)
    _same_dtypes(tr, te, features)
    _label_not_a_feature(label_column, features)
    return tr, te, features
