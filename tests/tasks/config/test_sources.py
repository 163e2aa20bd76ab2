"""tasks.config.sources: periods, sources, column layouts and schema checks, on small Parquet files."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import polars as pl
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from metrics_core.errors import InputError
from tasks.config import sources
from tasks.config.spec import SpecError, load_spec


@pytest.mark.parametrize("period, index", [("1970-01", 0), ("2024-08", 655), ("2000-12", 371)])
def test_period_index(period, index):
    assert sources.period_index(period) == index


@pytest.mark.parametrize("period, step", [("2024-05", 202405), ("1970-01", 197001), ("2024-12", 202412),
                                          ("2024-W05", 202405), ("2024-W19", 202419), ("2020-W53", 202053),
                                          ("2024-05-12", 20240512), ("2024-12-31", 20241231)])
def test_a_periods_mlflow_step_reads_as_the_period(period, step):
    assert sources.period_step(period) == step


def test_period_steps_increase_in_time_within_each_kind():
    start = dt.date(2019, 12, 20)
    days = [start + dt.timedelta(days=i) for i in range(800)]
    for periods in ([d.isoformat() for d in days], sorted({d.strftime("%Y-%m") for d in days}),
                    list(dict.fromkeys("%d-W%02d" % d.isocalendar()[:2] for d in days))):
        steps = [sources.period_step(p) for p in periods]
        assert steps == sorted(steps) and len(set(steps)) == len(steps), periods[:3]


@pytest.mark.parametrize("bad", ["2024-13", "2024-8", "24-08", "August", None])
def test_bad_periods(bad):
    with pytest.raises(InputError, match="YYYY-MM"):
        sources.check_period(bad)


@pytest.mark.parametrize("bad", ["2024-01\n", "2024-W05\n", "2024-05-17\n"])
def test_a_period_with_a_trailing_newline_is_rejected(bad):
    """A ``$`` in the period patterns matched before a final newline: "2024-01\n" passed as a period."""
    from tasks.monitor import resolve_period

    for check in (sources.check_period, resolve_period):
        with pytest.raises(InputError, match="YYYY-MM"):
            check(bad)


@pytest.mark.parametrize("column", [
    pl.Series("period", ["2024-07", "2024-08", "2024-08"]),
    pl.Series("period", [dt.date(2024, 7, 31), dt.date(2024, 8, 1), dt.date(2024, 8, 31)]),
    pl.Series("period", [202407, 202408, 202408]),
    pl.Series("period", [20240731, 20240801, 20240831]),  # days as numbers
    pl.Series("period", ["2024-07-31", "2024-08-01", "2024-08-31"]),  # days as text
    pl.Series("period", ["2024-07-31T23:59:59", "2024-08-01T00:00:00", "2024-08-31 23:59"]),  # times as text
    pl.Series("period", ["2024-07", "2024-08-01", "2024-08"]).cast(pl.Categorical),  # dictionary-encoded text
])
def test_period_filter_by_column_type(tmp_path, column):
    path = tmp_path / "d.parquet"
    pl.DataFrame({"label": ["a", "b", "a"], "prediction": ["a", "a", "a"]}).with_columns(column).write_parquet(path)
    spec = load_spec({"data": {"current": str(path)}})
    source, flt = sources.source_for(spec, "current", "2024-08")
    assert pads.dataset(source).to_table(filter=flt).num_rows == 2


@pytest.mark.parametrize("values, period, selected", [
    (["2024-08-01", "2024-08-01T10:00", "2024-08-01 10:00", "2024-08-010", "2024-08-02"], "2024-08-01", 3),
    ([20240801, 20240802, 202408], "2024-08-01", 1),
    (["2024-W05", "2024-W05-1", "2024-W06"], "2024-W05", 1),  # a week is selected as written
    ([20240731, 20240800, 20240832, 2024081, 202408], "2024-08", 1),  # no day 0 or 32; 7-digit is no day
])
def test_period_filter_edges(tmp_path, values, period, selected):
    path = tmp_path / "d.parquet"
    pl.DataFrame({"label": ["a"] * len(values), "period": values}).write_parquet(path)
    source, flt = sources.source_for(load_spec({"data": {"current": str(path)}}), "current", period)
    assert pads.dataset(source).to_table(filter=flt).num_rows == selected


def test_a_misnamed_period_column_is_an_error_not_the_whole_file(tmp_path):
    path = tmp_path / "d.parquet"
    pl.DataFrame({"label": ["a", "b"], "Period": ["2024-07", "2024-08"]}).write_parquet(path)
    with pytest.raises(InputError, match=r"missing column 'period' \(period\).*the data has 'Period', a near miss"):
        sources.source_for(load_spec({"data": {"current": str(path)}}), "current", "2024-08")
    other = tmp_path / "o.parquet"  # no such column at all: the file is the period's delivery
    pl.DataFrame({"label": ["a", "b"], "month": ["2024-07", "2024-08"]}).write_parquet(other)
    assert sources.source_for(load_spec({"data": {"current": str(other)}}), "current", "2024-08") == (str(other), None)


@pytest.mark.parametrize("tz", ["Europe/London", "America/Santiago", "Asia/Kolkata", "+05:30", "UTC"])
@pytest.mark.parametrize("period", ["2024-08", "2022-09", "2024-W13", "2022-09-11"])
def test_period_of_a_zoned_timestamp_is_its_local_calendar(tmp_path, tz, period):
    """A month, week or day of a timestamp with a time zone is that of its local calendar (as polars and
    pandas read the column): Arrow's cast of the boundary date would put it at midnight UTC. Santiago's
    clocks skipped midnight on 2022-09-11, so that day starts at 01:00."""
    zone = dt.timezone(dt.timedelta(hours=5, minutes=30)) if tz == "+05:30" else ZoneInfo(tz)
    local = [dt.datetime(2022, 9, 10, 23, 59), dt.datetime(2022, 9, 11, 1, 0), dt.datetime(2022, 9, 11, 23, 30),
             dt.datetime(2024, 7, 31, 23, 30), dt.datetime(2024, 8, 1, 0, 30), dt.datetime(2024, 8, 31, 23, 30),
             dt.datetime(2024, 9, 1, 0, 30), dt.datetime(2024, 3, 24, 23, 59), dt.datetime(2024, 3, 25, 0, 1),
             dt.datetime(2024, 3, 31, 23, 59), dt.datetime(2024, 4, 1, 0, 1)]
    instants = [t.replace(tzinfo=zone) for t in local]
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"label": ["a"] * len(local), "ts": pa.array(instants, pa.timestamp("us", tz))}), path)
    spec = load_spec({"data": {"current": str(path)}, "columns": {"period": "ts"}})
    source, flt = sources.source_for(spec, "current", period)
    got = sorted(pads.dataset(source).to_table(filter=flt).column("ts").to_pylist())
    fmt = {"month": "%Y-%m", "week": "%G-W%V", "day": "%Y-%m-%d"}[sources.period_kind(period)]
    expected = sorted(t for t in instants if t.strftime(fmt) == period)
    assert got == expected and len(expected) >= 1


def test_period_template_and_missing_source(tmp_path):
    spec = load_spec({"data": {"current": str(tmp_path / "{period}.parquet")}})
    assert sources.source_for(spec, "current", "2024-08") == (str(tmp_path / "2024-08.parquet"), None)
    with pytest.raises(SpecError, match="field 'data.reference'"):
        sources.source_for(spec, "reference")


def test_layout_and_schema_checks(tmp_path):
    ref = tmp_path / "ref.parquet"
    pl.DataFrame({"label": ["a", "b"], "score_a": [0.6, 0.3], "score_b": [0.4, 0.7], "price": [1.0, 2.0]}) \
        .write_parquet(ref)
    spec = load_spec({"labels": ["a", "b"]})
    lay = sources.layout(spec, str(ref), ["a", "b"], require_labels=True)
    assert lay.scores == ["score_a", "score_b"] and lay.prediction is None and lay.price == "price"
    assert lay.weight is None  # a default column name that is absent is skipped
    with pytest.raises(InputError, match=r"missing per-class score column\(s\) \['score_c'\]"):
        sources.layout(spec, str(ref), ["a", "b", "c"], require_labels=True)
    with pytest.raises(InputError, match="missing column 'w' \\(weight\\)"):
        sources.layout(load_spec({"columns": {"weight": "w"}}), str(ref), ["a", "b"], require_labels=True)
    cur = tmp_path / "cur.parquet"
    pl.DataFrame({"score_a": [0.6], "score_b": [0.4], "price": ["1.0"]}).write_parquet(cur)
    cur_lay = sources.layout(spec, str(cur), ["a", "b"], require_labels=False)
    assert cur_lay.label is None  # labels may be missing in a period
    with pytest.raises(InputError, match="'price' changed type: double -> (large_)?string"):
        sources.check_same_schema(str(ref), str(cur), lay, cur_lay)


def test_class_list_binary(tmp_path):
    path = tmp_path / "b.parquet"
    pl.DataFrame({"label": ["spam", "ham", "spam"], "score": [0.9, 0.2, 0.7]}).write_parquet(path)
    spec = load_spec({"task": "binary", "positive_class": "spam"})
    assert sources.class_list(spec, str(path)) == ["ham", "spam"]


def test_a_third_class_of_a_binary_source_says_where_each_class_is(tmp_path):
    """The class list of a reference (monitoring) or test set (evaluation) read from the data: a
    third class names its rows and first row; unlabelled rows (null) and rows of weight 0 are none."""
    path = tmp_path / "ref.parquet"
    pl.DataFrame({"label": ["spam", None, "ham", "spam", "Spam", "eggs"], "score": [0.9, 0.1, 0.2, 0.7, 0.6, 0.5],
                  "weight": [1.0, 1.0, 1.0, 1.0, 2.0, 0.0]}).write_parquet(path)
    pl.DataFrame({"label": ["spam", "ham"], "score": [0.9, 0.1]}).write_parquet(tmp_path / "two.parquet")
    spec = load_spec({"task": "binary", "positive_class": "spam"})
    with pytest.raises(InputError, match=r"ref\.parquet: column 'label': a binary evaluation needs at most two "
                                         r"classes, found 3: \['Spam', 'ham', 'spam'\]\. .* Where they are: "
                                         r"'Spam' in 1 row\(s\) of column 'label' \(first: row 4 of ref\.parquet\); "
                                         r"'ham' in 1 \(first: row 2 of ref\.parquet\); 'spam' in 2 \(first: row 0 "
                                         r"of ref\.parquet\)\.$"):
        sources.class_list(spec, str(path))
    with pytest.raises(InputError, match=r"two\.parquet: column 'label': pos_label='eggs' is not one of the labels "
                                         r"\['ham', 'spam'\]\. Pass pos_label=") as err:
        sources.class_list(load_spec({"task": "binary", "positive_class": "eggs"}), str(path).replace("ref", "two"))
    assert "Where they are" not in str(err.value)  # two classes: the error is about the positive class


def test_a_default_column_written_out_is_not_required(tmp_path):
    """columns.price: price (the default, as the example spec writes it) on data without a price column is
    skipped; another name must exist; price: null turns a present price column off."""
    path = tmp_path / "d.parquet"
    pl.DataFrame({"label": ["a", "b"], "score_a": [0.6, 0.3], "score_b": [0.4, 0.7]}).write_parquet(path)
    spelt_out = load_spec({"columns": {"price": "price", "weight": "weight"}})
    lay = sources.layout(spelt_out, str(path), ["a", "b"], require_labels=True)
    assert lay.price is None and lay.weight is None and lay.scores == ["score_a", "score_b"]
    with pytest.raises(InputError, match="missing column 'unit_price' \\(price\\)"):
        sources.layout(load_spec({"columns": {"price": "unit_price"}}), str(path), ["a", "b"], require_labels=True)
    priced = tmp_path / "p.parquet"
    pl.DataFrame({"label": ["a"], "score_a": [0.6], "score_b": [0.4], "price": [1.0]}).write_parquet(priced)
    assert sources.layout(load_spec({"columns": {"price": None}}), str(priced), ["a", "b"],
                          require_labels=False).price is None


@pytest.mark.parametrize("header, label", [("lable", "label"), ("Label", "label"), ("true_klass", "true_class")])
def test_a_misspelt_label_column_is_an_error(tmp_path, header, label):
    path = tmp_path / "d.csv"
    pl.DataFrame({header: ["a", "b"], "score_a": [0.6, 0.3], "score_b": [0.4, 0.7]}).write_csv(path)
    spec = load_spec({"columns": {"label": label}})
    with pytest.raises(InputError, match=f"no label column '{label}', but column '{header}' looks like a misspelling"):
        sources.layout(spec, str(path), ["a", "b"], require_labels=False)


def test_a_delivery_without_labels_is_no_error(tmp_path):
    path = tmp_path / "d.parquet"
    pl.DataFrame({"score_a": [0.6, 0.3], "score_b": [0.4, 0.7], "price": [1.0, 2.0]}).write_parquet(path)
    lay = sources.layout(load_spec({}), str(path), ["a", "b"], require_labels=False)
    assert lay.label is None and lay.price == "price"


@pytest.mark.parametrize("value", [-0.5, 1.5, float("nan")])
def test_threshold_is_a_probability(value):
    with pytest.raises(SpecError, match="field 'threshold'"):
        load_spec({"task": "binary", "threshold": value})
