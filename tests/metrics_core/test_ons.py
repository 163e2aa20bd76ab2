"""ONS Tables 1 and 2 as code, and stability measured from history."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import accuracy_score, fbeta_score

import metrics_core as mc
from metrics_core.errors import InputError
from metrics_core.ons import Recommendation, recommend, stability_from_history

# (prevalence_stable, price_stable, low_prevalence) -> (column, metric, space, weight, averaging, beta, tune_beta,
#                                                        alternative metrics)
TABLE_1 = [
    ((True, True, True), ("yes", "fbeta", "PR", True, "macro", None, True, ["balanced_accuracy"])),
    ((True, True, False), ("yes", "balanced_accuracy", "ROC", False, None, None, True, ["fbeta"])),
    ((True, False, True), ("only prevalence", "fbeta", "PR", False, None, 1.0, False, ["balanced_accuracy"])),
    ((True, False, False), ("only prevalence", "balanced_accuracy", "ROC", False, None, 1.0, False, ["fbeta"])),
    ((False, True, None), ("only price distribution", "fbeta", "PR", False, None, None, True, ["balanced_accuracy"])),
    ((False, False, None), ("no", "balanced_accuracy", "ROC", False, None, None, False, [])),
]
TABLE_2 = [
    ((True, True), ("yes", "fbeta_of_weighted", "PR", True, "macro", None, True, ["balanced_accuracy"])),
    ((True, False), ("only prevalence", "fbeta_of_weighted", "PR", True, "macro", 1.0, False,
                     ["balanced_accuracy", "fbeta_micro"])),
    ((False, True), ("only price distribution", "fbeta_micro", "PR", False, "micro", None, True, ["fbeta_of_macro"])),
    ((False, False), ("no", "fbeta_micro", "PR", False, "micro", 1.0, False, ["balanced_accuracy_micro"])),
]


def _cells(r: Recommendation):
    return (r.column, r.metric, r.space, r.weight_by_prevalence, r.averaging, r.beta, r.tune_beta,
            [o.metric for o in r.alternatives])


@pytest.mark.parametrize("facts, expected", TABLE_1, ids=[f"{e[0]}-low={f[2]}" for f, e in TABLE_1])
def test_table_1_binary_columns(facts, expected):
    r = recommend("binary", *facts)
    assert _cells(r) == expected
    assert r.task == "binary" and r.reason and r.beta_advice


@pytest.mark.parametrize("facts, expected", TABLE_2, ids=[e[0] for _, e in TABLE_2])
def test_table_2_multiclass_columns(facts, expected):
    r = recommend("multiclass", *facts)
    assert _cells(r) == expected
    assert recommend("multiclass", *facts, low_prevalence=True) == r  # Table 2 does not use prevalence level


def test_unknown_prevalence_level_takes_the_general_choice_and_says_so():
    r = recommend("binary", True, True)
    assert r.metric == "balanced_accuracy" and "low_prevalence=None" in r.reason


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_every_recommended_metric_is_a_report_key(task):
    rng = np.random.default_rng(0)
    if task == "binary":
        y = rng.integers(0, 2, 300)
        report = mc.binary_report(y, y_score=rng.random(300))
    else:
        report = mc.multiclass_report(rng.integers(0, 4, 300), rng.integers(0, 4, 300))
    for prev in (True, False):
        for price in (True, False):
            for low in (True, False, None):
                r = recommend(task, prev, price, low)
                for key in [r.metric] + [o.metric for o in r.alternatives]:
                    assert np.isfinite(report.metrics[key]), key
                assert r.space in ("PR", "ROC")


def test_micro_fbeta_equals_accuracy_on_single_label_data():
    """The reason behind the Table 2 choices: micro precision = micro recall = accuracy for every beta."""
    rng = np.random.default_rng(5)
    y, p = rng.integers(0, 4, 500), rng.integers(0, 4, 500)
    for beta in (0.5, 1.0, 2.0):
        assert fbeta_score(y, p, beta=beta, average="micro") == pytest.approx(accuracy_score(y, p))
        assert mc.multiclass_report(y, p, beta=beta).metrics["fbeta_micro"] == pytest.approx(accuracy_score(y, p))


def test_as_dict_is_flat_for_logging():
    d = recommend("multiclass", True, False).as_dict()
    assert d["metric"] == "fbeta_of_weighted" and d["alternatives"] == "balanced_accuracy (ROC), fbeta_micro (PR)"
    assert all(isinstance(v, (str, bool, float, type(None))) for v in d.values())


@pytest.mark.parametrize("args, match", [
    (("multilabel", True, True), "task: expected 'binary' or 'multiclass'"),
    (("binary", "yes", True), "prevalence_stable: expected True or False, got 'yes'"),
    (("binary", True, None), "price_stable: expected True or False, got None"),
    (("binary", True, True, 0.1), "low_prevalence: expected True, False or None, got 0.1"),
])
def test_recommend_bad_input(args, match):
    with pytest.raises(InputError, match=match):
        recommend(*args)


# ---------------------------------------------------------------- stability from history
def _counts(shares, n, seed=0):
    """Multinomial class counts per period: rows = periods."""
    rng = np.random.default_rng(seed)
    return np.array([rng.multinomial(n, s) for s in shares])


def _prices(shifts, n=400, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for t, shift in enumerate(shifts):
        for cls, level in (("a", 1.0), ("b", 3.0)):
            factor = shift if cls == "b" else 1.0
            rows.append(pl.DataFrame({"period": t, "class": cls, "price": rng.lognormal(level, 0.2, n) * factor}))
    return pl.concat(rows)


@pytest.mark.parametrize("shares, prev_stable", [
    ([(0.9, 0.1)] * 6, True),
    ([(0.9, 0.1)] * 3 + [(0.84, 0.16)] * 3, False),  # 6-point shift in period 3
])
@pytest.mark.parametrize("price_shift, price_stable", [(1.0, True), (1.25, False)])
def test_measured_facts_pick_the_table_column(shares, prev_stable, price_shift, price_stable):
    counts = _counts(shares, 20_000)
    prices = _prices([1.0, 1.0, 1.0, price_shift, price_shift, price_shift])
    s = stability_from_history(counts, prices, classes=["a", "b"], positive_class="b")
    assert (s.prevalence_stable, s.price_stable) == (prev_stable, price_stable)
    assert s.low_prevalence is True and s.positive_prevalence == pytest.approx(counts[0, 1] / counts[0].sum())
    assert s.recommend("binary") == recommend("binary", prev_stable, price_stable, True)
    assert s.prevalence.figures["counts_stable"] == float(prev_stable)


def test_small_shift_at_large_n_is_stable_and_without_prices_is_conservative():
    counts = _counts([(0.5, 0.3, 0.2), (0.503, 0.297, 0.2), (0.497, 0.303, 0.2)], 5_000_000)
    s = stability_from_history(counts)
    assert s.prevalence.table["chi2_p_value"].max() < 1e-6  # significant, but under the practical threshold
    assert s.prevalence_stable is True
    assert s.price_stable is False and "not measured" in s.reason and s.price is None
    assert s.low_prevalence is None and s.recommend("multiclass").column == "only prevalence"


def test_labels_take_precedence_over_predictions():
    frame = pl.DataFrame({"source": ["label"] * 4 + ["prediction"] * 4, "period": [0, 0, 1, 1] * 2,
                          "class": ["a", "b"] * 4, "count": [500, 500, 505, 495, 500, 500, 800, 200]})
    s = stability_from_history(frame, positive_class="b")
    assert s.prevalence_source == "label" and s.prevalence_stable is True
    assert s.prevalence.figures["prediction_stable"] == 0.0  # the model drifted, the data did not
    assert s.low_prevalence is False and s.positive_prevalence == 0.5


def test_array_and_frame_histories_agree():
    counts = _counts([(0.7, 0.3)] * 4, 1000)
    frame = pl.DataFrame({"period": np.repeat(np.arange(4), 2), "class": ["x", "y"] * 4,
                          "count": counts.ravel()})
    a = stability_from_history(counts, classes=["x", "y"])
    b = stability_from_history(frame.to_arrow())
    assert a.prevalence.table.select("abs_change", "chi2_p_value").equals(b.prevalence.table.select(
        "abs_change", "chi2_p_value"))


@pytest.mark.parametrize("kwargs, match", [
    (dict(counts=np.array([1, 2, 3])), "counts: expected a table .* got shape \\(3,\\)"),
    (dict(counts=np.array([[1, 2], [3, 4]]), classes=["a"]), "classes: 1 names for 2 columns"),
    (dict(counts=np.array([[1, 2], [3, 4]]), positive_class=9), "positive_class: 9 is not a class"),
    (dict(counts=np.array([[1, 2], [3, 4]]), low_prevalence_below=2), "low_prevalence_below"),
    (dict(counts=np.array([[1, 2], [3, -4]])), "negative value"),
])
def test_stability_bad_input(kwargs, match):
    with pytest.raises(InputError, match=match):
        stability_from_history(**kwargs)


@pytest.mark.parametrize("zone, as_polars", [  # polars has no fixed-offset zones: such a column comes through Arrow
    *[(z, p) for z in (None, "UTC", "Europe/London") for p in (False, True)], ("+05:30", False)])
def test_dates_and_timestamps_are_periods_by_month_on_their_local_calendar(zone, as_polars):
    """Rows stamped with dates or times are judged per month (one timestamp per period would hold one row):
    the same measured stability as the same rows with their 'YYYY-MM' periods written out."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    import pyarrow as pa

    rng = np.random.default_rng(3)
    n = 6_000
    start = dt.datetime(2024, 6, 30, 20, 0)
    local = [start + dt.timedelta(minutes=int(m)) for m in rng.integers(0, 92 * 24 * 60, n)]
    tz = (dt.timezone(dt.timedelta(hours=5, minutes=30)) if zone == "+05:30" else ZoneInfo(zone)) if zone else None
    stamps = [t.replace(tzinfo=tz) for t in local]
    labels = np.where(rng.random(n) < np.where(np.array([t.month for t in local]) >= 8, 0.4, 0.2), "b", "a")
    table = pa.table({"period": pa.array(stamps, pa.timestamp("us", zone)), "label": labels})
    written = pl.DataFrame({"period": [t.strftime("%Y-%m") for t in local], "label": labels})
    got = mc.stability_from_rows(pl.from_arrow(table) if as_polars else table, positive_class="b")
    want = mc.stability_from_rows(written, positive_class="b")
    assert got.prevalence.table.equals(want.prevalence.table) and got.reason == want.reason
    assert sorted(set(got.prevalence.table["period"])) == ["2024-07", "2024-08", "2024-09"]  # 2024-06: reference
    dates = pa.table({"period": pa.array([t.date() for t in local], pa.date32()), "label": labels})
    assert mc.stability_from_rows(dates, positive_class="b").prevalence.table.equals(want.prevalence.table)


def test_a_column_of_nearly_unique_values_is_not_a_period_column():
    rows = pl.DataFrame({"period": np.arange(1_000) % 600, "label": ["a", "b"] * 500})
    with pytest.raises(InputError, match=r"column 'period' has 600 distinct values in 1,000 rows.*Is it the period"):
        mc.stability_from_rows(rows)
    assert mc.stability_from_rows(rows.with_columns(pl.col("period") % 3)).prevalence_stable is True


def _priced_rows(period="period", label="label", price="price"):
    """Two periods of 50 rows, every fifth row unlabelled and priced far off (it must not count anywhere)."""
    labels = ["a", "b", None, "a", "b"] * 20
    prices = [{"a": 2.0, "b": 5.0}.get(v, 1000.0) for v in labels]
    return pl.DataFrame({period: [1] * 50 + [2] * 50, label: labels, price: prices})


@pytest.mark.parametrize("names", [("period", "label", "price"), ("month", "y", "unit_price")])
def test_unlabelled_rows_are_left_out_of_the_prices(names):
    period, label, price = names
    s = mc.stability_from_rows(_priced_rows(*names), period_column=period, label_column=label, price_column=price)
    assert s.price.table.select("class", "n_reference", "n").rows() == [("a", 20, 20), ("b", 20, 20)]
    assert s.price_stable and s.prevalence_stable
    without = mc.stability_from_rows(_priced_rows(*names), period_column=period, label_column=label)
    assert s.prevalence.table.equals(without.prevalence.table)


@pytest.mark.parametrize("change, match", [
    # a labelled row's bad price is named by the caller's column and row (the unlabelled row 2's is not used)
    (dict(unit_price=[1.0, 2.0, float("nan"), float("nan")] + [1.0] * 96),
     r"rows column 'unit_price': null, NaN or infinite value in 1 row\(s\), e\.g\. row 3 = nan"),
    (dict(month=[None] + [1] * 49 + [2] * 50), r"rows column 'month': null value in 1 row\(s\), e\.g\. row 0"),
])
def test_bad_rows_are_named_by_the_callers_columns(change, match):
    rows = _priced_rows("month", "y", "unit_price").with_columns(**{k: pl.Series(v) for k, v in change.items()})
    with pytest.raises(InputError, match=match):
        mc.stability_from_rows(rows, period_column="month", label_column="y", price_column="unit_price")
