"""Stability over periods (ONS Annex F): class prevalence and per-class price distributions vs a reference window."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core import drift
from metrics_core.checks.frames import CheckResult, _examples, _nonempty, _numeric, as_frame, require_columns
from metrics_core.significance import correct
from metrics_core.errors import InputError, bad_rows


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
                   rows: np.ndarray | None = None) -> np.ndarray:
    """The column as float64; an :class:`InputError` (column, count, example row) for a null, NaN or infinite
    value (or negative, with ``nonnegative``) in the ``rows`` mask (None: every row)."""
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
    return x


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


def class_counts(rows: Any, *, period_column: str = "period", label_column: str | None = "label",
                 prediction_column: str | None = "prediction") -> pl.DataFrame:
    """Rows per (source, period, class): the mergeable statistic of :func:`prevalence_stability`.

    Parameters
    ----------
    rows : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        One row per classified item.
    period_column : str
        The period of each row (no nulls).
    label_column, prediction_column : str or None
        The labelled and the predicted class; a column that is None or absent is skipped.

    Returns
    -------
    polars.DataFrame
        Columns source, period, class, count (int64), sorted. ``source`` is "label" (rows whose
        label is not null: labels where present) and "prediction" (every row; a null prediction
        is an error). Classes of both sources are cast to strings when their types differ.

    Notes
    -----
    Counts merge by summation (ONS Annex F monitors prevalence over periods): merge the counts
    of several partitions with
    ``pl.concat(parts).group_by("source", "period", "class").agg(pl.col("count").sum())``.

    Examples
    --------
    >>> rows = pl.DataFrame({"period": [1, 1, 2], "label": ["a", None, "b"], "prediction": ["a", "b", "b"]})
    >>> class_counts(rows).rows()  # doctest: +NORMALIZE_WHITESPACE
    [('label', 1, 'a', 1), ('label', 2, 'b', 1),
     ('prediction', 1, 'a', 1), ('prediction', 1, 'b', 1), ('prediction', 2, 'b', 1)]
    """
    frame = as_frame(rows, "rows")
    _nonempty(frame, "rows")
    require_columns(frame, "rows", [period_column])
    # Here, under the caller's column name: a null period would become a null in the counts' "period".
    _no_nulls(frame, [period_column], "rows")
    parts = []
    for source, column in (("label", label_column), ("prediction", prediction_column)):
        if column is None or column not in frame.columns:
            continue
        part = frame.select(period_column, column)
        if source == "prediction" and part[column].null_count():
            raise bad_rows(f"rows column {column!r}", "null prediction", part[column].is_null().to_numpy(),
                           None, "Every row needs a prediction.")
        parts.append(part.drop_nulls(column).group_by(period_column, column).len("count")
                     .select(pl.lit(source).alias("source"), pl.col(period_column).alias("period"),
                             pl.col(column).alias("class"), pl.col("count").cast(pl.Int64)))
    if not parts:
        raise InputError(f"rows: neither {label_column!r} nor {prediction_column!r} is a column "
                         f"(columns: {frame.columns}).")
    if len({p.schema["class"] for p in parts}) > 1:
        parts = [p.with_columns(pl.col("class").cast(pl.String)) for p in parts]
    return pl.concat(parts).sort("source", "period", "class")


def label_prices(rows: Any, *, period_column: str = "period", label_column: str = "label",
                 price_column: str = "price") -> pl.DataFrame:
    """The prices of the labelled rows, as :func:`price_stability` takes them (ONS Annex F).

    Parameters
    ----------
    rows : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        One row per item.
    period_column, label_column, price_column : str
        Column names in ``rows``.

    Returns
    -------
    polars.DataFrame
        Columns period, class (the label) and price (float64) of the rows whose label is not
        null, in row order. An unlabelled row has no class to take its price for and is left
        out, as :func:`class_counts` leaves it out of the label counts; its price is not
        checked. A null period, or a null, NaN or infinite price of a labelled row, is an
        :class:`InputError` naming the column of ``rows``, the count and an example row.

    Examples
    --------
    >>> rows = pl.DataFrame({"month": [1, 1, 2], "label": ["a", None, "a"], "unit_price": [2.0, None, 3.0]})
    >>> label_prices(rows, period_column="month", price_column="unit_price").rows()
    [(1, 'a', 2.0), (2, 'a', 3.0)]
    """
    frame = as_frame(rows, "rows")
    require_columns(frame, "rows", [period_column, label_column, price_column])
    _no_nulls(frame, [period_column], "rows")
    labelled = frame[label_column].is_not_null()
    _finite_column(frame, price_column, "rows", rows=labelled.to_numpy())
    return frame.filter(labelled).select(pl.col(period_column).alias("period"), pl.col(label_column).alias("class"),
                                         pl.col(price_column).cast(pl.Float64).alias("price"))


def _count_frame(counts: Any, period_column: str, class_column: str, count_column: str) -> pl.DataFrame:
    """The counts as a frame: the columns exist, counts are integers >= 0, periods and classes not null."""
    frame = as_frame(counts, "counts")
    _nonempty(frame, "counts")
    require_columns(frame, "counts", [period_column, class_column, count_column])
    values = _finite_column(frame, count_column, "counts", nonnegative=True)
    fractional = values != np.round(values)
    if fractional.any():
        raise bad_rows(f"counts column {count_column!r}", "non-integer count", fractional, values,
                       "The tests need row counts; weighted (e.g. expenditure) totals are not counts.")
    _no_nulls(frame, [period_column, class_column], "counts")
    return frame


def _period_rows(source: Any, period: Any, classes: list, ref: np.ndarray, cur: np.ndarray) -> list[dict]:
    """One row per class of one period against the pooled reference: z-test, chi-squared test and PSI."""
    keep = (ref + cur) > 0
    chi = drift.chi_squared_counts(ref[keep], cur[keep]) if keep.sum() >= 2 else None
    psi = drift.psi(dict(zip(classes, ref)), dict(zip(classes, cur))).statistic
    rows = []
    for i, cls in enumerate(classes):
        z = drift.two_proportion_z(int(ref[i]), int(ref.sum()), int(cur[i]), int(cur.sum()))
        rows.append({"source": source, "period": period, "class": cls, "reference_count": int(ref[i]),
                     "count": int(cur[i]), "reference_prevalence": ref[i] / ref.sum(),
                     "prevalence": cur[i] / cur.sum(), "abs_change": cur[i] / cur.sum() - ref[i] / ref.sum(),
                     "z_statistic": float(z.statistic), "z_p_value": float(z.p_value),
                     "chi2_statistic": float(chi.statistic) if chi else np.nan,
                     "chi2_p_value": float(chi.p_value) if chi else np.nan, "psi": float(psi)})
    return rows


def _source_rows(source: Any, sub: pl.DataFrame, ref_periods: list, compared: list, period_column: str,
                 class_column: str, count_column: str) -> list[dict] | None:
    """The rows of every compared period of one source; None when its reference window has no counts."""
    totals = sub.group_by(period_column, class_column).agg(pl.col(count_column).sum())
    classes = totals[class_column].unique().sort().to_list()
    col_of = {c: i for i, c in enumerate(classes)}
    matrix = {}
    for period, cls, n in totals.iter_rows():
        matrix.setdefault(period, np.zeros(len(classes)))[col_of[cls]] = n
    ref = sum((matrix[p] for p in ref_periods if p in matrix), np.zeros(len(classes)))
    if ref.sum() == 0:
        return None
    rows = []
    for period in compared:
        if period not in matrix:
            continue
        if matrix[period].sum() == 0:
            raise InputError(f"counts: period {period!r} of source {source!r} has no rows (all counts 0); "
                             "drop the period or deliver its data.")
        rows.extend(_period_rows(source, period, classes, ref, matrix[period]))
    return rows


def _judge_periods(table: pl.DataFrame, alpha: float, max_abs_change: float, psi_threshold: float) -> pl.DataFrame:
    """BH-adjusted z and chi-squared p-values, flagged classes and unstable periods."""
    z_adj, z_rej = correct(table["z_p_value"].to_numpy(), "bh", alpha)
    per_period = table.unique(["source", "period"], maintain_order=True).select("source", "period", "chi2_p_value")
    chi_adj, chi_rej = correct(per_period["chi2_p_value"].to_numpy(), "bh", alpha)
    per_period = per_period.with_columns(chi2_p_adjusted=chi_adj, _chi_reject=chi_rej).drop("chi2_p_value")
    moved = table["abs_change"].abs() >= max_abs_change
    table = table.with_columns(z_p_adjusted=z_adj, class_flagged=pl.Series(z_rej) & moved).join(
        per_period, on=["source", "period"], how="left", maintain_order="left")
    big = pl.col("abs_change").abs().max().over("source", "period")
    table = table.with_columns(period_unstable=pl.col("_chi_reject") & ((big >= max_abs_change) |
                                                                        (pl.col("psi") >= psi_threshold))
                               ).drop("_chi_reject")
    return table.select("source", "period", "class", "reference_count", "count", "reference_prevalence",
                        "prevalence", "abs_change", "z_statistic", "z_p_value", "z_p_adjusted", "class_flagged",
                        "chi2_statistic", "chi2_p_value", "chi2_p_adjusted", "psi", "period_unstable")


def _prevalence_summary(table: pl.DataFrame, sources: list, skipped: list, ref_periods: list
                        ) -> tuple[dict, list[str]]:
    """Figures and one sentence per source for :func:`prevalence_stability`."""
    figures, notes, all_stable = {}, [], True
    for source in sources:
        if source in skipped:
            notes.append(f"{source}: no counts in the reference window, not judged.")
            continue
        sub = table.filter(pl.col("source") == source)
        if sub.height == 0:
            notes.append(f"{source}: no counts after the reference window, not judged.")
            continue
        bad = sub.filter(pl.col("period_unstable"))
        n_bad, n_periods = bad["period"].n_unique(), sub["period"].n_unique()
        figures.update({f"{source}_stable": float(n_bad == 0), f"{source}_n_unstable_periods": n_bad,
                        f"{source}_max_abs_change": float(sub["abs_change"].abs().max()),
                        f"{source}_max_psi": float(sub["psi"].max())})
        all_stable &= n_bad == 0
        if n_bad:
            w = bad.sort(pl.col("abs_change").abs(), descending=True).row(0, named=True)
            notes.append(f"{source}: unstable in {n_bad} of {n_periods} period(s); e.g. period {w['period']!r}: class "
                         f"{w['class']!r} {w['reference_prevalence']:.1%} -> {w['prevalence']:.1%} "
                         f"({100 * w['abs_change']:+.1f} points), PSI {w['psi']:.3g}, chi-squared adjusted p "
                         f"{w['chi2_p_adjusted']:.2g}.")
        else:
            notes.append(f"{source}: stable over {n_periods} period(s) against reference {ref_periods!r} (largest "
                         f"change {100 * figures[f'{source}_max_abs_change']:.2f} points, largest PSI "
                         f"{figures[f'{source}_max_psi']:.3g}).")
    figures["stable"] = float(all_stable)
    return figures, notes


def prevalence_stability(counts: Any, *, reference: Any = 1, alpha: float = 0.05, max_abs_change: float = 0.02,
                         psi_threshold: float = 0.1, period_column: str = "period", class_column: str = "class",
                         count_column: str = "count", source_column: str = "source") -> CheckResult:
    """Class prevalence of every period against a reference window (ONS Annex F).

    Parameters
    ----------
    counts : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        One row per (period, class) with an integer count, optionally per ``source`` ("label"
        and "prediction", as :func:`class_counts` returns; each source is judged on its own).
    reference : int or period or list of periods
        The first ``reference`` periods (an int) or the listed periods; their counts are pooled.
    alpha : float
        Level of the BH-adjusted p-values.
    max_abs_change : float
        Change of a class's prevalence (a fraction: 0.02 = 2 points) that matters in practice.
    psi_threshold : float
        PSI that matters in practice.
    period_column, class_column, count_column, source_column : str
        Column names.

    Returns
    -------
    CheckResult
        ``table`` with one row per (source, period, class): counts, prevalences, the change,
        z-test, chi-squared test (nan when fewer than two classes occur) and PSI with adjusted
        p-values, ``class_flagged`` and ``period_unstable``. ``figures``: ``stable`` (1/0) and,
        per source s, ``s_stable``, ``s_n_unstable_periods``, ``s_max_abs_change``,
        ``s_max_psi``.

    Notes
    -----
    For every period outside the reference window:

    - chi-squared test of the 2 x K table (reference, period) of class counts
      (:func:`metrics_core.drift.chi_squared_counts`; classes absent from both are dropped);
    - PSI over the class shares (:func:`metrics_core.drift.psi`, empty classes floored);
    - per class, the two-proportion z-test (:func:`metrics_core.drift.two_proportion_z`) and the
      absolute change of prevalence (period minus reference).

    Chi-squared p-values are BH-adjusted over all (source, period) tests, z-test p-values over
    all rows. A period is unstable when its adjusted chi-squared p-value is below ``alpha`` AND
    the change matters in practice: some class moved by at least ``max_abs_change`` (2
    percentage points by default) or PSI >= ``psi_threshold`` (0.1, the usual "moderate shift").
    With large counts every wobble is significant; the practical threshold keeps a 0.3-point
    change from counting while a 5-point change counts. A class row is flagged when its
    adjusted z p-value is below ``alpha`` and it moved by at least ``max_abs_change``.

    Verdict per source: "stable" when no period is unstable. Status "pass" when every source
    is stable, else "warn".

    Examples
    --------
    >>> counts = pl.DataFrame({"period": [1, 1, 2, 2, 3, 3], "class": ["a", "b"] * 3,
    ...                        "count": [500, 500, 498, 502, 600, 400]})
    >>> r = prevalence_stability(counts)
    >>> r.status, r.figures["counts_n_unstable_periods"]
    ('warn', 1)
    >>> r.message[:77]
    "counts: unstable in 1 of 2 period(s); e.g. period 3: class 'a' 50.0% -> 60.0%"
    """
    frame = _count_frame(counts, period_column, class_column, count_column)
    for name, value in (("max_abs_change", max_abs_change), ("psi_threshold", psi_threshold)):
        if not isinstance(value, (int, float)) or not value >= 0:
            raise InputError(f"{name}: expected a number >= 0, got {value!r}.")
    periods = frame[period_column].unique().sort().to_list()
    ref_periods, compared = _window(periods, reference)
    has_source = source_column in frame.columns
    sources = frame[source_column].unique().sort().to_list() if has_source else ["counts"]
    rows, skipped = [], []
    for source in sources:
        sub = frame.filter(pl.col(source_column) == source) if has_source else frame
        found = _source_rows(source, sub, ref_periods, compared, period_column, class_column, count_column)
        if found is None:
            skipped.append(source)
        else:
            rows.extend(found)
    if not rows:
        raise InputError(f"counts: no source has counts in the reference window {ref_periods!r} and a later period.")
    table = _judge_periods(pl.DataFrame(rows), alpha, max_abs_change, psi_threshold)
    figures, notes = _prevalence_summary(table, sources, skipped, ref_periods)
    stable = figures["stable"] == 1.0
    return CheckResult("prevalence_stability", "pass" if stable else "warn", table, " ".join(notes), figures)


def _price_row(period: Any, cls: Any, a: np.ndarray, b: np.ndarray) -> dict:
    """KS test and median/mean changes of one class's prices in one period against its reference prices."""
    nan = float("nan")
    row = {"period": period, "class": cls, "n_reference": a.size, "n": b.size, "ks_statistic": nan,
           "ks_p_value": nan, "reference_median": nan, "median": nan, "median_change": nan,
           "reference_mean": nan, "mean": nan, "mean_change": nan}
    if a.size and b.size:
        ks = drift.ks(a, b)
        ma, mb, ea, eb = float(np.median(a)), float(np.median(b)), float(a.mean()), float(b.mean())
        row.update(ks_statistic=float(ks.statistic), ks_p_value=float(ks.p_value), reference_median=ma,
                   median=mb, median_change=mb / ma - 1 if ma else nan, reference_mean=ea, mean=eb,
                   mean_change=eb / ea - 1 if ea else nan)
    return row


def _price_rows(frame: pl.DataFrame, ref_periods: list, compared: list, period_column: str, class_column: str,
                price_column: str) -> list[dict]:
    """One :func:`_price_row` per compared period and class, the reference prices pooled per class."""
    classes = frame[class_column].unique().sort().to_list()
    in_ref = frame[period_column].is_in(pl.Series(ref_periods, dtype=frame.schema[period_column]).implode())
    ref_parts = {k[0]: v[price_column].cast(pl.Float64).to_numpy()
                 for k, v in frame.filter(in_ref).partition_by(class_column, as_dict=True).items()}
    parts = {k: v[price_column].cast(pl.Float64).to_numpy()
             for k, v in frame.filter(~in_ref).partition_by(period_column, class_column, as_dict=True).items()}
    return [_price_row(period, cls, ref_parts.get(cls, np.empty(0)), parts.get((period, cls), np.empty(0)))
            for period in compared for cls in classes]


def _price_summary(table: pl.DataFrame, n_compared: int) -> tuple[dict, str]:
    """Figures and message of :func:`price_stability`."""
    nan = float("nan")
    flagged = table.filter(pl.col("flagged"))
    ks_values, median_changes = table["ks_statistic"].to_numpy(), np.abs(table["median_change"].to_numpy())
    figures = {"stable": float(flagged.height == 0), "n_flagged": flagged.height,
               "max_ks_statistic": float(np.nanmax(ks_values)) if np.isfinite(ks_values).any() else nan,
               "max_abs_median_change": float(np.nanmax(median_changes)) if np.isfinite(median_changes).any()
               else nan}
    if flagged.height:
        w = flagged.sort("ks_statistic", descending=True).row(0, named=True)
        message = (f"unstable: {flagged.height} (period, class) price distribution(s) changed; e.g. period "
                   f"{w['period']!r} class {w['class']!r}: KS {w['ks_statistic']:.3f} (adjusted p "
                   f"{w['ks_p_adjusted']:.2g}), median {w['reference_median']:.4g} -> {w['median']:.4g} "
                   f"({w['median_change']:+.1%}).")
    else:
        message = f"stable: no class's price distribution changed in {n_compared} period(s)."
    empty = int(((table["n_reference"] == 0) | (table["n"] == 0)).sum())
    if empty:
        message += f" {empty} (period, class) pair(s) had no prices in the period or the reference and were not tested."
    return figures, message


def price_stability(prices: Any, *, reference: Any = 1, alpha: float = 0.05, ks_threshold: float = 0.1,
                    max_relative_change: float = 0.1, period_column: str = "period", class_column: str = "class",
                    price_column: str = "price") -> CheckResult:
    """Price distribution of every class and period against a reference window (ONS Annexes E, F).

    Parameters
    ----------
    prices : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        One row per item: period, class (labelled or classified, as the caller chooses) and a
        finite price.
    reference : int or period or list of periods
        The reference window, as in :func:`prevalence_stability`.
    alpha : float
        Level of the BH-adjusted KS p-values.
    ks_threshold : float
        KS statistic that matters in practice.
    max_relative_change : float
        |Relative change| of the median or mean that matters (0.1 = 10%).
    period_column, class_column, price_column : str
        Column names.

    Returns
    -------
    CheckResult
        ``table`` with one row per (period, class): n_reference, n, KS statistic, p-value and
        adjusted p-value, medians, means and their relative changes (nan when a side has no
        prices or the reference value is 0), ``flagged``. ``figures``: ``stable``,
        ``n_flagged``, ``max_ks_statistic``, ``max_abs_median_change`` (nan when undefined).

    Notes
    -----
    For every period outside the reference window and every class: two-sample KS test of the class's prices
    against its pooled reference prices (:func:`metrics_core.drift.ks`), and the relative
    change of the median and of the mean (period / reference - 1; nan when the reference value
    is 0). KS p-values are BH-adjusted over the table. A (period, class) is flagged when the
    adjusted p-value is below ``alpha`` and the change matters: KS statistic >= ``ks_threshold``
    or |relative change of median or mean| >= ``max_relative_change`` (10% by default; pass
    deflated prices or price relatives if general inflation must not count). A class absent
    from the period or the reference gives nan and is noted, not flagged.

    Verdict: "stable" when nothing is flagged; status "pass", else "warn".

    Examples
    --------
    >>> prices = pl.DataFrame({"period": [1] * 40 + [2] * 40, "class": ["a"] * 80,
    ...                        "price": [float(p) for p in range(1, 41)] + [2.0 * p for p in range(1, 41)]})
    >>> r = price_stability(prices)
    >>> r.status, r.table["median_change"].round(3).to_list()
    ('warn', [1.0])
    """
    frame = as_frame(prices, "prices")
    _nonempty(frame, "prices")
    require_columns(frame, "prices", [period_column, class_column, price_column])
    _finite_column(frame, price_column, "prices")
    _no_nulls(frame, [period_column, class_column], "prices")
    periods = frame[period_column].unique().sort().to_list()
    ref_periods, compared = _window(periods, reference)
    table = pl.DataFrame(_price_rows(frame, ref_periods, compared, period_column, class_column, price_column))
    adjusted, reject = correct(table["ks_p_value"].to_numpy(), "bh", alpha)
    # fill_nan(None): polars orders NaN above every number, so NaN >= threshold would be True.
    big = (pl.col("ks_statistic").fill_nan(None) >= ks_threshold) | \
        (pl.col("median_change").fill_nan(None).abs() >= max_relative_change) | \
        (pl.col("mean_change").fill_nan(None).abs() >= max_relative_change)
    table = table.insert_column(6, pl.Series("ks_p_adjusted", adjusted)).with_columns(
        flagged=pl.Series(reject) & big.fill_null(False))
    figures, message = _price_summary(table, len(compared))
    return CheckResult("price_stability", "pass" if figures["stable"] == 1.0 else "warn", table, message, figures)
