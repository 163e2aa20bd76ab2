"""tasks.monitor and tasks.log through ``.fn()``: run keys, the logged-period lookup, assessment, logging, results."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from flow_data import PERIODS, SHIFTED
from mlflow import MlflowClient

from metrics_core import monitoring as mon
from tasks.config.spec import load_spec
from tasks.log import log_period, over_time
from tasks.monitor import (PeriodResult, assess_against_reference, monitoring_history, open_store, plan_period,
                           resolve_period, run_keys, scan_source_stats)


@pytest.fixture
def spec(monitoring_spec):
    return load_spec(monitoring_spec)


def _assessed(spec, period):
    plan = plan_period.fn(spec, period)
    ref = scan_source_stats.fn(spec, plan.reference, plan.ref_layout)
    cur = scan_source_stats.fn(spec, plan.current, plan.cur_layout, plan.current_filter)
    return plan, assess_against_reference.fn(spec, ref, cur)


def test_run_keys_come_from_the_spec_alone(spec, tmp_path):
    parent, child = run_keys(spec, SHIFTED)
    assert child == f"{parent}|{SHIFTED}" and parent.startswith("monitor|test-model|")
    assert run_keys(spec, PERIODS[0])[0] == parent
    moved = load_spec(spec, data={"reference": str(tmp_path / "nowhere.parquet")})  # never read
    assert run_keys(moved, SHIFTED)[0] != parent
    fewer = load_spec(spec, labels=spec.labels[:-1])
    assert run_keys(fewer, SHIFTED)[0] != parent
    with pytest.raises(ValueError, match="YYYY-MM"):
        run_keys(spec, "July")


def test_resolve_period():
    assert resolve_period("2024-08") == "2024-08"
    assert resolve_period("", datetime(2024, 8, 15, tzinfo=timezone.utc)) == "2024-07"
    assert resolve_period("previous", datetime(2024, 1, 1, tzinfo=timezone.utc)) == "2023-12"


def test_assess_keys_metrics_and_the_floor(spec):
    plan, a = _assessed(spec, SHIFTED)
    d = a.assessment.decision
    assert plan.labels == spec.labels and a.assessment.headline_metric == mon.DEFAULT_HEADLINE
    assert d.alert and a.metrics["alert"] == 1.0 and a.metrics["n_alert_reasons"] == len(d.reasons)
    kinds = {r.kind for r in d.reasons}
    assert {"prevalence_label", "price"} <= kinds
    h = d.headline
    assert h is not None and a.metrics["balanced_accuracy_floor"] == pytest.approx(
        a.metrics["balanced_accuracy_reference"] - spec.alerts.metric_drop) == pytest.approx(h.floor)
    assert a.metrics["balanced_accuracy_ci_low"] == h.low
    assert "p_adj/prevalence_label_item_2" in a.metrics and "prevalence_label/item_2" in a.series
    assert set(a.series) <= set(a.metrics) and "perf/accuracy" not in a.series
    assert {"drift_table.json", "per_class_monitoring.json", "price_impact.json", "per_class_performance.json"} \
        == set(a.assessment.tables)
    strict = load_spec(spec, alerts={"metric_floor": 0.99})
    stricter = assess_against_reference.fn(strict, *_stats(strict, SHIFTED)).assessment
    assert any(r.kind == "headline" for r in stricter.decision.reasons)


def _stats(spec, period):
    plan = plan_period.fn(spec, period)
    return (scan_source_stats.fn(spec, plan.reference, plan.ref_layout),
            scan_source_stats.fn(spec, plan.current, plan.cur_layout, plan.current_filter))


def test_log_then_find_the_period(spec, store):
    s = open_store(spec)
    history = monitoring_history.fn(spec, s, PERIODS[0])
    assert history.done is None and history.parent is None and history.periods == {}
    plan, a = _assessed(spec, PERIODS[0])
    first = log_period.fn(spec, s, plan, a, history)
    assert first.alert_markdown is None
    plan, a = _assessed(spec, SHIFTED)
    logged = log_period.fn(spec, s, plan, a, monitoring_history.fn(spec, s, SHIFTED))
    assert logged.parent_run_id == first.parent_run_id and "Retraining alert" in logged.alert_markdown
    assert logged.run_id in logged.alert_markdown  # rendered once, with the run id, for MLflow and Prefect
    new = PeriodResult.from_assessment(spec, s, SHIFTED, logged, a, None)

    found = monitoring_history.fn(spec, open_store(spec), SHIFTED)
    assert sorted(found.periods) == [PERIODS[0], SHIFTED] and found.parent.run_id == first.parent_run_id
    again = PeriodResult.from_run(spec, s, SHIFTED, found.done)
    assert (again.run_id, again.parent_run_id, again.experiment_id, again.alert, again.reasons) == \
        (new.run_id, new.parent_run_id, new.experiment_id, new.alert, new.reasons)
    assert again.metrics == pytest.approx(new.metrics, nan_ok=True) and not again.created and new.created
    c = MlflowClient(store)
    assert {a.path for a in c.list_artifacts(logged.run_id)} >= {"alert.md", "monitoring_summary.md"}
    assert c.get_run(logged.run_id).data.tags["mlflow.loggedArtifacts"].count('"type": "table"') == 4

    # a forced re-run replaces the period's run; the plot history keeps one row per period
    forced = log_period.fn(spec, s, plan, a, found)
    after = monitoring_history.fn(spec, s, SHIFTED)
    assert after.done.run_id == forced.run_id != logged.run_id and sorted(after.periods) == [PERIODS[0], SHIFTED]
    reasons = a.assessment.decision.reasons
    frame, shown, alerts = over_time(after, SHIFTED, a.metrics, reasons, a.assessment.headline_metric)
    assert frame["period"].to_list() == [PERIODS[0], SHIFTED]
    kinds = {r.kind for r in reasons}  # each alert is marked on the panels of its tests only
    assert {p.column for p in shown if alerts[p.column] == [SHIFTED]} == {p.column for p in shown
                                                                          if kinds & set(p.kinds)}
    assert shown[-1].column == "balanced_accuracy" and all(v == [] or v == [SHIFTED] for v in alerts.values())
    # the headline panel draws the label-lag estimate beside the measured value (alone without labels)
    assert shown[-1].extra == (("balanced_accuracy_estimated", "estimated from the scores (no labels needed)"),)
    assert frame["balanced_accuracy_estimated"][-1] == a.metrics["estimated/balanced_accuracy"]


def test_over_time_orders_periods_run_out_of_order(spec):
    from tasks.monitor import History
    from tasks.store.mlflow import RunSummary

    def run(p, alert):
        return RunSummary(p, "FINISHED", {}, {"alert": alert, "max_score_wasserstein": 0.01}, "1")

    h = History("2024-02", "p", "p|2024-02", None, {"2024-03": run("2024-03", 1.0), "2023-11": run("2023-11", 0.0),
                                                     "2024-02": run("2024-02", 1.0)})
    frame, shown, alerts = over_time(h, "2024-02", {"alert": 0.0, "max_score_wasserstein": 0.02}, (), "f1")
    # runs logged without reason records: their alerts are marked on every panel
    assert frame["period"].to_list() == ["2023-11", "2024-02", "2024-03"] and alerts == {"max_score_wasserstein":
                                                                                          ["2024-03"]}
    assert frame["max_score_wasserstein"].to_list() == [0.01, 0.02, 0.01] and [p.column for p in shown] == \
        ["max_score_wasserstein"]


def test_an_alert_mark_sits_on_the_line_of_the_metric_that_raised_it():
    """In monitoring_over_time.png the mark of a measured headline's alert sat on the estimated line."""
    import polars as pl

    from metrics_core.monitoring import Alert, Reason, TestKey
    from tasks.alerts import alert_tags
    from tasks.monitor import History
    from tasks.store.mlflow import RunSummary

    def run(p, metrics, reasons):  # a logged period: its metrics and the reason records of its tags
        return RunSummary(p, "FINISHED", alert_tags(Alert(True, tuple(reasons), pl.DataFrame(), {})),
                          {"alert": 1.0, **metrics}, "1")

    measured = Reason(TestKey("headline", "f1"), 0.2, 0.05, 1e-6, 0.9, 0.7)
    estimated = Reason(TestKey("headline", "estimated/f1"), 0.15, 0.05, 1e-4, 0.9, 0.75)
    label_price = Reason(TestKey("price_label", "tea"), 0.3, 0.1, 1e-4, 2.0, 2.6)
    h = History("2024-03", "p", "p|2024-03", None,
                {"2024-02": run("2024-02", {"estimated/f1": 0.75, "f1_floor": 0.85}, [estimated])})
    frame, _, alerts = over_time(h, "2024-03", {"alert": 1.0, "f1": 0.70, "estimated/f1": 0.93, "f1_floor": 0.85,
                                                "max_abs_price_shift": 0.02, "max_abs_price_shift_label": 0.30},
                                 [measured, label_price], "f1")
    assert alerts["f1"] == ["2024-02", "2024-03"]
    assert frame["f1_alert_at"].to_list() == [0.75, 0.70]  # on the estimated line, then on the measured one
    price = frame["price_change_alert_at"].to_list()  # on the labelled classes' line, not the predicted one
    assert price[1] == pytest.approx(30.0) and price[0] != price[0]  # nan: no price alert in 2024-02


def test_an_alert_raised_only_within_segments_is_marked_hollow(tmp_path, monkeypatch):
    """A panel whose alert came from a segment's test only: its whole-period line may stay under the
    threshold, and the filled mark read as an alert below it (the demo's class-mix panel, 2024-11)."""
    import polars as pl

    from metrics_core.monitoring import Alert, Reason, TestKey
    from tasks.alerts import alert_tags
    from tasks.monitor import History
    from tasks.render import timeseries
    from tasks.store.mlflow import RunSummary

    shop = Reason(TestKey("score", "tea", ("retailer", "shop_1")), 0.09, 0.02, 1e-6, 0.4, 0.5)
    whole = Reason(TestKey("score", "tea"), 0.03, 0.02, 1e-6, 0.4, 0.43)
    logged = RunSummary("2024-02", "FINISHED", alert_tags(Alert(True, (shop,), pl.DataFrame(), {})),
                        {"alert": 1.0, "max_score_wasserstein": 0.01}, "1")
    h = History("2024-03", "p", "p|2024-03", None, {"2024-02": logged})
    frame, _, alerts = over_time(h, "2024-03", {"alert": 1.0, "max_score_wasserstein": 0.03}, [whole, shop], "f1")
    assert alerts["max_score_wasserstein"] == ["2024-02", "2024-03"]
    assert frame["max_score_wasserstein_in_segment"].to_list() == [True, False]
    figures = []
    monkeypatch.setattr(timeseries, "_save", lambda fig, path: figures.append(fig) or path)
    timeseries.plot_time_series(frame, ["max_score_wasserstein"], tmp_path / "t.png", alerts=alerts,
                                within={"max_score_wasserstein": "max_score_wasserstein_in_segment"})
    legend = [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()]
    assert legend[-2:] == ["alert raised by this test (1)", "alert raised by this test within a segment (1)"]
    faces = [line.get_markerfacecolor() for line in figures[0].axes[0].get_lines() if line.get_marker() == "v"]
    assert faces == [timeseries.ALERT_RED, "white"]


def test_plot_time_series_draws_the_marks_at_their_column(tmp_path, monkeypatch):
    """The marks are drawn at the heights the frame gives (``marks``), not on the panel's highest line."""
    import polars as pl

    from tasks.render import timeseries

    drawn = []
    real = timeseries._alerts
    monkeypatch.setattr(timeseries, "_alerts", lambda ax, pos, values, *a: drawn.append(list(values)) or real(
        ax, pos, values, *a))
    frame = pl.DataFrame({"period": ["2024-01", "2024-02"], "f1": [0.9, 0.7], "f1_estimated": [0.9, 0.93],
                          "f1_alert_at": [None, 0.7]}, schema_overrides={"f1_alert_at": pl.Float64})
    timeseries.plot_time_series(frame, ["f1"], tmp_path / "t.png", alerts={"f1": ["2024-02"]},
                                extra={"f1": [("f1_estimated", "estimated")]}, marks={"f1": "f1_alert_at"})
    timeseries.plot_time_series(frame, ["f1"], tmp_path / "u.png", alerts={"f1": ["2024-02"]},
                                extra={"f1": [("f1_estimated", "estimated")]})
    assert drawn == [[0.9, 0.7], [0.9, 0.93]]  # without marks: the highest line, as before


def test_weeks_and_days_as_periods(spec, tmp_path, store):
    """ISO weeks and days: resolved, filtered on a date column, logged at their own step and time."""
    import datetime as dt

    import polars as pl
    from flow_data import scored_rows

    from tasks.config import sources

    now = datetime(2024, 2, 1, 9, tzinfo=timezone.utc)
    assert resolve_period("previous-week", now) == "2024-W04" and resolve_period("previous-day", now) == "2024-01-31"
    assert sources.period_bounds("2024-W05") == (dt.date(2024, 1, 29), dt.date(2024, 2, 5))
    assert sources.period_index("2024-W05") - sources.period_index("2024-W04") == 1
    assert sources.period_index("2024-05-17") == (dt.date(2024, 5, 17) - dt.date(1970, 1, 1)).days
    for bad in ("2024-W54", "2023-W53", "2024-02-30"):  # 2023 has 52 ISO weeks
        with pytest.raises(ValueError, match="YYYY-Www"):
            sources.check_period(bad)
    rows = scored_rows(6_000, 50, "x").with_columns(
        period=pl.Series([dt.date(2024, 1, 26) + dt.timedelta(days=i % 12) for i in range(6_000)]))
    path = tmp_path / "daily.parquet"
    rows.write_parquet(path)
    daily = load_spec(spec, data={"current": str(path)})
    days = [dt.date(2024, 1, 26) + dt.timedelta(days=i % 12) for i in range(6_000)]
    in_week = sum(dt.date(2024, 1, 29) <= d < dt.date(2024, 2, 5) for d in days)
    for period, expected in (("2024-W05", in_week), ("2024-01-29", days.count(dt.date(2024, 1, 29)))):
        plan, a = _assessed(daily, period)
        assert a.metrics["n_rows"] == expected
        s = open_store(daily)
        logged = log_period.fn(daily, s, plan, a, monitoring_history.fn(daily, s, period))
        c = MlflowClient(store)
        key = next(iter(c.get_run(logged.run_id).data.metrics))  # whatever the UI names it
        point = c.get_metric_history(logged.run_id, key)
        assert [(h.step, h.timestamp) for h in point] == [
            (sources.period_step(period), int(datetime(2024, 1, 29, tzinfo=timezone.utc).timestamp() * 1000))]
        assert point[0].step == {"2024-W05": 202405, "2024-01-29": 20240129}[period]  # read as the period


@pytest.mark.parametrize("cron, period", [("0 6 2 * *", "previous"), ("0 6 * * 1", "previous-week"),
                                          ("30 5 * * *", "previous-day"), ("0 6 1,15 * *", "previous")])
def test_the_schedule_passes_the_period_its_cron_matches(cron, period, tmp_path):
    from deployments.serve import build_deployments
    from tasks.monitor import scheduled_period

    assert scheduled_period(cron) == period
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: m\n")
    monitor = build_deployments(str(spec), cron=cron)[0]
    assert monitor.schedules[0].parameters == {"period": period}
    with pytest.raises(ValueError, match="5 fields"):
        scheduled_period("@daily")


def test_labels_arrive_when_the_label_column_holds_a_label(tmp_path):
    """A period logged without labels is assessed again once its delivery has labels: a label column
    with at least one label, not a label column that is all null (a sample not labelled yet)."""
    from types import SimpleNamespace

    import polars as pl

    from tasks.monitor import labels_arrived

    spec = load_spec({"data": {"reference": str(tmp_path / "ref.parquet"),
                               "current": str(tmp_path / "{period}.parquet")}})
    logged = SimpleNamespace(metrics={"estimated/balanced_accuracy": 0.9})
    frame = pl.DataFrame({"prediction": ["a", "b", "a"], "label": pl.Series([None, None, None], dtype=pl.String)})
    frame.drop("label").write_parquet(tmp_path / "2024-07.parquet")
    assert not labels_arrived.fn(spec, "2024-07", logged)
    frame.write_parquet(tmp_path / "2024-07.parquet")
    assert not labels_arrived.fn(spec, "2024-07", logged)
    frame.with_columns(label=pl.Series(["a", None, None])).write_parquet(tmp_path / "2024-07.parquet")
    assert labels_arrived.fn(spec, "2024-07", logged)
