"""Stability over periods (ONS Annex F): class prevalence and per-class price distributions vs a reference window."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import polars as pl

from metrics_core import drift
from metrics_core.checks.frames import CheckResult, _nonempty, as_frame, require_columns
# month_periods and check_periods are imported from here too (metrics_core's public names, ons)
from metrics_core.checks.periods import _finite_column, _no_nulls, _threshold, _window, check_periods, month_periods
from metrics_core.errors import InputError, bad_rows
from metrics_core.monitoring.policy import POLICY
from metrics_core.significance import TestResult


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
    _finite_column(frame, price_column, "rows", rows=labelled.to_numpy(), positive=True)
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


def _period_rows(source: Any, period: Any, classes: list, ref: np.ndarray, cur: np.ndarray,
                 tests: dict[str, TestResult], thresholds: dict[str, float], max_abs_change: float,
                 psi_threshold: float) -> list[dict]:
    """One row per class of one period against the pooled reference; its tests go into ``tests``
    (keyed by name, with their practical thresholds), as the monitoring alert builds them: per
    class the two-proportion z-test (effect: change of prevalence), and with 3+ classes the
    chi-squared test of the class counts (effect: PSI of the class shares). With two classes one
    z-test is judged, the second class's (the other's is its mirror: same p-value, opposite
    effect), and there is no chi-squared test, as monitoring judges the positive class alone."""
    mix_key = None
    if len(classes) >= 3 and ((ref + cur) > 0).sum() >= 2:
        mix_key = f"{len(tests)}"
        tests[mix_key], thresholds[mix_key] = drift.class_mix_test(ref, cur, classes), psi_threshold
        psi = tests[mix_key].effect_size
    else:
        psi = drift.psi(dict(zip(classes, ref)), dict(zip(classes, cur))).statistic
    rows, z_keys = [], {}
    for i, cls in enumerate(classes):
        z = drift.two_proportion_z(int(ref[i]), int(ref.sum()), int(cur[i]), int(cur.sum()))
        if len(classes) != 2 or i == 1:
            z_keys[i] = f"{len(tests)}"
            tests[z_keys[i]], thresholds[z_keys[i]] = z, max_abs_change
        chi_test = tests[mix_key] if mix_key else None
        rows.append({"source": source, "period": period, "class": cls, "reference_count": int(ref[i]),
                     "count": int(cur[i]), "reference_prevalence": ref[i] / ref.sum(),
                     "prevalence": cur[i] / cur.sum(), "abs_change": cur[i] / cur.sum() - ref[i] / ref.sum(),
                     "z_statistic": float(z.statistic), "z_p_value": float(z.p_value),
                     "chi2_statistic": float(chi_test.statistic) if chi_test else np.nan,
                     "chi2_p_value": float(chi_test.p_value) if chi_test else np.nan, "psi": float(psi),
                     "_z": z_keys.get(i), "_mix": mix_key})
    if len(classes) == 2:
        rows[0]["_z"] = z_keys[1]
    return rows


def _source_rows(source: Any, sub: pl.DataFrame, ref_periods: list, compared: list, period_column: str,
                 class_column: str, count_column: str, tests: dict[Any, tuple[dict, dict]], max_abs_change: float,
                 psi_threshold: float) -> list[dict] | None:
    """The rows of every compared period of one source, their tests added to ``tests[period]`` (tests,
    thresholds); None when the source's reference window has no counts."""
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
        found, given = tests.setdefault(period, ({}, {}))
        rows.extend(_period_rows(source, period, classes, ref, matrix[period], found, given, max_abs_change,
                                 psi_threshold))
    return rows


def _judge_periods(rows: list[dict], tests: dict[Any, tuple[dict, dict]], alpha: float,
                   correction: str) -> pl.DataFrame:
    """Each period's tests (both sources) judged by the monitoring rule (:func:`metrics_core.drift.drift_table`):
    p-values corrected together per period, a test drifts when it rejects AND its effect passes its threshold."""
    judged = {period: {r["name"]: r for r in drift.drift_table(found, given, correction, alpha).iter_rows(named=True)}
              for period, (found, given) in tests.items() if found}
    nan = float("nan")
    out = []
    for row in rows:
        verdicts = judged.get(row["period"], {})
        z, mix = verdicts.get(row.pop("_z")), verdicts.get(row.pop("_mix"))
        out.append({**row, "z_p_adjusted": z["p_adjusted"] if z else nan, "class_flagged": bool(z and z["drift"]),
                    "chi2_p_adjusted": mix["p_adjusted"] if mix else nan,
                    "class_mix_flagged": bool(mix and mix["drift"])})
    table = pl.DataFrame(out)
    unstable = (pl.col("class_flagged").any() | pl.col("class_mix_flagged").any()).over("source", "period")
    return table.with_columns(period_unstable=unstable).select(
        "source", "period", "class", "reference_count", "count", "reference_prevalence", "prevalence", "abs_change",
        "z_statistic", "z_p_value", "z_p_adjusted", "class_flagged", "chi2_statistic", "chi2_p_value",
        "chi2_p_adjusted", "class_mix_flagged", "psi", "period_unstable")


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
                         f"({100 * w['abs_change']:+.1f} points), adjusted p {w['z_p_adjusted']:.2g}, PSI "
                         f"{w['psi']:.3g}.")
        else:
            notes.append(f"{source}: stable over {n_periods} period(s) against reference {ref_periods!r} (largest "
                         f"change {100 * figures[f'{source}_max_abs_change']:.2f} points, largest PSI "
                         f"{figures[f'{source}_max_psi']:.3g}).")
    figures["stable"] = float(all_stable)
    return figures, notes


def prevalence_stability(counts: Any, *, reference: Any = 1, alpha: float = POLICY.alpha,
                         max_abs_change: float = POLICY.prevalence_change, psi_threshold: float = POLICY.psi,
                         correction: str = POLICY.correction, period_column: str = "period",
                         class_column: str = "class", count_column: str = "count",
                         source_column: str = "source") -> CheckResult:
    """Class prevalence of every period against a reference window (ONS Annex F).

    Parameters
    ----------
    counts : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        One row per (period, class) with an integer count, optionally per ``source`` ("label"
        and "prediction", as :func:`class_counts` returns; each source is judged on its own).
    reference : int or period or list of periods
        The first ``reference`` periods (an int) or the listed periods; their counts are pooled.
    alpha : float
        Level of the adjusted p-values (default: the alert policy's ``alpha``,
        :data:`metrics_core.monitoring.policy.POLICY`).
    max_abs_change : float
        Change of a class's prevalence (a fraction: 0.02 = 2 points) that matters in practice
        (default: the alert policy's ``prevalence_change``).
    psi_threshold : float
        PSI that matters in practice (default: the alert policy's ``psi``).
    correction : {"bh", "holm", "bonferroni"}
        Multiple-testing correction (default: the alert policy's, BH).
    period_column, class_column, count_column, source_column : str
        Column names.

    Returns
    -------
    CheckResult
        ``table`` with one row per (source, period, class): counts, prevalences, the change,
        z-test, chi-squared test of the class mix (nan with two classes, or fewer than two that
        occur) and PSI with adjusted p-values, ``class_flagged`` (the class's z-test),
        ``class_mix_flagged`` (the chi-squared test) and ``period_unstable``. ``figures``: ``stable`` (1/0) and,
        per source s, ``s_stable``, ``s_n_unstable_periods``, ``s_max_abs_change``,
        ``s_max_psi``.

    Notes
    -----
    The rule of the monitoring alert (:func:`metrics_core.monitoring.decide_alert`), on the same
    tests. For every period outside the reference window, against the pooled reference:

    - per class, the two-proportion z-test (:func:`metrics_core.drift.two_proportion_z`); effect
      the absolute change of prevalence (period minus reference), threshold ``max_abs_change``.
      With two classes one z-test is judged (the second class's; the first's is its mirror),
      as monitoring judges the positive class;
    - with three or more classes, the chi-squared test of the 2 x K table (reference, period) of
      class counts (:func:`metrics_core.drift.chi_squared_counts`; classes absent from both are
      dropped); effect the PSI of the class shares (:func:`metrics_core.drift.psi`, empty classes
      floored), threshold ``psi_threshold``.

    All the tests of a period, of both sources, are corrected together
    (:func:`metrics_core.drift.drift_table`, method ``correction`` at ``alpha``), and a test
    flags when it rejects AND its effect passes its threshold. A period is unstable for a source
    when one of its tests flags. With large counts every wobble is significant; the practical
    threshold keeps a 0.3-point change from counting while a 5-point change counts.

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
        _threshold(name, value)
    periods = frame[period_column].unique().sort().to_list()
    ref_periods, compared = _window(periods, reference)
    has_source = source_column in frame.columns
    sources = frame[source_column].unique().sort().to_list() if has_source else ["counts"]
    rows, skipped, tests = [], [], {}
    for source in sources:
        sub = frame.filter(pl.col(source_column) == source) if has_source else frame
        found = _source_rows(source, sub, ref_periods, compared, period_column, class_column, count_column, tests,
                             max_abs_change, psi_threshold)
        if found is None:
            skipped.append(source)
        else:
            rows.extend(found)
    if not rows:
        raise InputError(f"counts: no source has counts in the reference window {ref_periods!r} and a later period.")
    table = _judge_periods(rows, tests, alpha, correction)
    figures, notes = _prevalence_summary(table, sources, skipped, ref_periods)
    stable = figures["stable"] == 1.0
    return CheckResult("prevalence_stability", "pass" if stable else "warn", table, " ".join(notes), figures)


def price_shift_test(reference: np.ndarray, current: np.ndarray) -> TestResult:
    """Two-sample KS test of prices whose effect is the relative price shift, as monitoring judges a class's prices.

    Parameters
    ----------
    reference, current : numpy.ndarray
        Prices (> 0) of one class in the reference window and in a period; neither empty.

    Returns
    -------
    TestResult
        :func:`metrics_core.drift.ks` of the prices (KS is unchanged by the log, so it is the KS of
        the log prices) with ``effect_size`` the relative price shift ``10**(±W) - 1``: W the
        Wasserstein-1 distance of the log10 prices (:func:`metrics_core.drift.wasserstein`),
        signed by the change of the mean log price. A uniform 15 % rise gives 0.15, a uniform 15 %
        fall -0.15, and a change of spread counts as well; the effect does not jump between the
        modes of a multimodal price distribution (pack sizes) as a median does. The monitoring
        flow computes the same effect on binned log prices
        (:data:`metrics_core.monitoring.policy.KINDS`: threshold ``price_change``).

    Examples
    --------
    >>> t = price_shift_test(np.array([1.0, 2.0, 4.0]), np.array([1.15, 2.3, 4.6]))
    >>> round(t.effect_size, 6), t.effect_name
    (0.15, 'relative price shift')
    """
    ks = drift.ks(reference, current)
    log_ref, log_cur = np.log10(reference), np.log10(current)
    w1 = drift.wasserstein(log_ref, log_cur, threshold=None).statistic
    shift = float(log_cur.mean() - log_ref.mean())
    # The sign goes on W, not on 10**W - 1: a uniform fall by a factor f then reads f - 1, as a rise does.
    return dataclasses.replace(ks, effect_size=10 ** math.copysign(w1, shift) - 1.0, effect_name="relative price shift",
                               details={**ks.details, "ks_d": ks.statistic})


def _price_row(period: Any, cls: Any, a: np.ndarray, b: np.ndarray) -> tuple[dict, TestResult | None]:
    """The price test of one class in one period against its reference prices, its median and mean
    changes; the test is None when a side has no prices."""
    nan = float("nan")
    row = {"period": period, "class": cls, "n_reference": a.size, "n": b.size, "ks_statistic": nan,
           "ks_p_value": nan, "reference_median": nan, "median": nan, "median_change": nan,
           "reference_mean": nan, "mean": nan, "mean_change": nan, "price_shift": nan}
    if not (a.size and b.size):
        return row, None
    test = price_shift_test(a, b)
    ma, mb, ea, eb = float(np.median(a)), float(np.median(b)), float(a.mean()), float(b.mean())
    row.update(ks_statistic=float(test.statistic), ks_p_value=float(test.p_value), reference_median=ma, median=mb,
               median_change=mb / ma - 1, reference_mean=ea, mean=eb, mean_change=eb / ea - 1,
               price_shift=float(test.effect_size))
    return row, test


def _price_rows(frame: pl.DataFrame, ref_periods: list, compared: list, period_column: str, class_column: str,
                price_column: str) -> list[tuple[dict, TestResult | None]]:
    """One :func:`_price_row` per compared period and class, the reference prices pooled per class."""
    classes = frame[class_column].unique().sort().to_list()
    in_ref = frame[period_column].is_in(pl.Series(ref_periods, dtype=frame.schema[period_column]).implode())
    ref_parts = {k[0]: v[price_column].cast(pl.Float64).to_numpy()
                 for k, v in frame.filter(in_ref).partition_by(class_column, as_dict=True).items()}
    parts = {k: v[price_column].cast(pl.Float64).to_numpy()
             for k, v in frame.filter(~in_ref).partition_by(period_column, class_column, as_dict=True).items()}
    return [_price_row(period, cls, ref_parts.get(cls, np.empty(0)), parts.get((period, cls), np.empty(0)))
            for period in compared for cls in classes]


def _judge_prices(rows: list[tuple[dict, TestResult | None]], alpha: float, max_relative_change: float,
                  correction: str) -> pl.DataFrame:
    """Each period's price tests judged by the monitoring rule (:func:`metrics_core.drift.drift_table`):
    p-values corrected together per period, flagged when rejected AND |price shift| >= the threshold."""
    judged = []
    for period in dict.fromkeys(row["period"] for row, _ in rows):
        tests = {str(i): t for i, (row, t) in enumerate(rows) if row["period"] == period and t is not None}
        verdicts = {}
        if tests:
            table = drift.drift_table(tests, dict.fromkeys(tests, max_relative_change), correction, alpha)
            verdicts = {r["name"]: r for r in table.iter_rows(named=True)}
        for i, (row, _) in enumerate(rows):
            if row["period"] == period:
                v = verdicts.get(str(i))
                judged.append({**row, "ks_p_adjusted": v["p_adjusted"] if v else float("nan"),
                               "flagged": bool(v and v["drift"])})
    return pl.DataFrame(judged).select(
        "period", "class", "n_reference", "n", "ks_statistic", "ks_p_value", "ks_p_adjusted", "reference_median",
        "median", "median_change", "reference_mean", "mean", "mean_change", "price_shift", "flagged")


def _price_summary(table: pl.DataFrame, n_compared: int) -> tuple[dict, str]:
    """Figures and message of :func:`price_stability`."""
    nan = float("nan")
    flagged = table.filter(pl.col("flagged"))

    def largest(values: np.ndarray) -> float:
        return float(np.nanmax(values)) if np.isfinite(values).any() else nan

    figures = {"stable": float(flagged.height == 0), "n_flagged": flagged.height,
               "max_ks_statistic": largest(table["ks_statistic"].to_numpy()),
               "max_abs_median_change": largest(np.abs(table["median_change"].to_numpy())),
               "max_abs_price_shift": largest(np.abs(table["price_shift"].to_numpy()))}
    if flagged.height:
        w = flagged.sort(pl.col("price_shift").abs(), descending=True).row(0, named=True)
        message = (f"unstable: {flagged.height} (period, class) price distribution(s) changed; e.g. period "
                   f"{w['period']!r} class {w['class']!r}: relative price shift {w['price_shift']:+.1%} (KS "
                   f"{w['ks_statistic']:.3f}, adjusted p {w['ks_p_adjusted']:.2g}), median {w['reference_median']:.4g}"
                   f" -> {w['median']:.4g} ({w['median_change']:+.1%}).")
    else:
        message = f"stable: no class's price distribution changed in {n_compared} period(s)."
    empty = int(((table["n_reference"] == 0) | (table["n"] == 0)).sum())
    if empty:
        message += f" {empty} (period, class) pair(s) had no prices in the period or the reference and were not tested."
    return figures, message


def price_stability(prices: Any, *, reference: Any = 1, alpha: float = POLICY.alpha,
                    max_relative_change: float = POLICY.price_change, correction: str = POLICY.correction,
                    period_column: str = "period", class_column: str = "class", price_column: str = "price"
                    ) -> CheckResult:
    """Price distribution of every class and period against a reference window (ONS Annexes E, F).

    Parameters
    ----------
    prices : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        One row per item: period, class (labelled or classified, as the caller chooses) and a
        finite price > 0.
    reference : int or period or list of periods
        The reference window, as in :func:`prevalence_stability`.
    alpha : float
        Level of the corrected KS p-values (default: the alert policy's ``alpha``).
    max_relative_change : float
        |Relative price shift| that matters in practice (0.1 = 10%; default: the alert policy's
        ``price_change``).
    correction : {"bh", "holm", "bonferroni"}
        Multiple-testing correction of each period's tests (default: the alert policy's).
    period_column, class_column, price_column : str
        Column names.

    Returns
    -------
    CheckResult
        ``table`` with one row per (period, class): n_reference, n, KS statistic, p-value and
        adjusted p-value, medians, means and their relative changes, the relative price shift
        (:func:`price_shift_test`; nan when a side has no prices), ``flagged``. ``figures``:
        ``stable``, ``n_flagged``, ``max_ks_statistic``, ``max_abs_median_change``,
        ``max_abs_price_shift`` (nan when undefined).

    Notes
    -----
    The rule of the monitoring alert (:func:`metrics_core.monitoring.decide_alert`): for every
    period outside the reference window and every class, :func:`price_shift_test` of the class's
    prices against its pooled reference prices (KS test; effect the relative price shift). Each
    period's p-values are corrected together (:func:`metrics_core.drift.drift_table`, method
    ``correction`` at ``alpha``), and a (period, class) is flagged when its test rejects AND
    |relative price shift| >= ``max_relative_change`` (pass deflated prices or price relatives if
    general inflation must not count). Medians and means are shown, not judged. A class absent
    from the period or the reference gives nan and is noted, not flagged.

    Verdict: "stable" when nothing is flagged; status "pass", else "warn".

    Examples
    --------
    >>> prices = pl.DataFrame({"period": [1] * 40 + [2] * 40, "class": ["a"] * 80,
    ...                        "price": [float(p) for p in range(1, 41)] + [2.0 * p for p in range(1, 41)]})
    >>> r = price_stability(prices)
    >>> r.status, r.table["median_change"].round(3).to_list(), r.table["price_shift"].round(3).to_list()
    ('warn', [1.0], [1.0])
    """
    frame = as_frame(prices, "prices")
    _nonempty(frame, "prices")
    require_columns(frame, "prices", [period_column, class_column, price_column])
    _finite_column(frame, price_column, "prices", positive=True)
    _no_nulls(frame, [period_column, class_column], "prices")
    _threshold("max_relative_change", max_relative_change)
    periods = frame[period_column].unique().sort().to_list()
    ref_periods, compared = _window(periods, reference)
    rows = _price_rows(frame, ref_periods, compared, period_column, class_column, price_column)
    table = _judge_prices(rows, alpha, max_relative_change, correction)
    figures, message = _price_summary(table, len(compared))
    return CheckResult("price_stability", "pass" if figures["stable"] == 1.0 else "warn", table, message, figures)
