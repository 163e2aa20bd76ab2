"""monitor_period on real components: Prefect test harness, SQLite MLflow store, Parquet deliveries."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from flow_data import PERIODS, SHIFTED, alert_events, mlflow_runs, scored_rows
from mlflow import MlflowClient

from flows.monitor_period import monitor_period
from tasks.config import sources
from tasks.alerts import artifact_key, event_id
from tasks.metric_names import mlflow_key, semantic_metrics

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]


def test_stable_periods_pass_and_the_shift_alerts_once(monitoring_spec, store):
    from datetime import datetime, timezone

    started = datetime.now(timezone.utc)  # other tests in this session may monitor the same model and period
    results = [monitor_period(monitoring_spec, p) for p in [*PERIODS, SHIFTED]]
    assert [r.alert for r in results] == [False, False, False, True]
    shifted = results[-1]
    joined = "; ".join(r.text for r in shifted.reasons)
    assert "prevalence of 'item_2'" in joined and "prices of 'item_1' rose" in joined

    client = MlflowClient(store)
    children = {r.data.tags["classwatch.period"]: r for r in mlflow_runs(store, "monitor-tests", kind="monitor")
                if "classwatch.period" in r.data.tags}
    assert sorted(children) == [*PERIODS, SHIFTED]
    parent_id = shifted.parent_run_id
    for period, run in children.items():
        assert run.info.status == "FINISHED"
        assert run.data.tags["mlflow.parentRunId"] == parent_id
        assert run.data.tags["classwatch.alert"] == ("retrain" if period == SHIFTED else "none")
    assert children[SHIFTED].data.tags["alert reasons"] == joined
    assert children[PERIODS[0]].data.tags["alert reasons"] == "none"
    m = semantic_metrics(children[SHIFTED].data.metrics)  # logged under their chart names (tasks/metric_names.py)
    assert m["prevalence_label/item_2"] == pytest.approx(pl.read_parquet(
        Path(monitoring_spec["data"]["current"].format(period=SHIFTED)))["label"].eq("item_2").mean())
    assert m["alert"] == 1.0 and m["n_rows"] == 20_000 and "balanced_accuracy_ci_low" in m
    artifacts = {a.path for a in client.list_artifacts(children[SHIFTED].info.run_id)}
    assert {"drift_table.json", "per_class_monitoring.json", "price_impact.json", "monitoring_summary.md",
            "alert.md"} <= artifacts
    assert "alert.md" not in {a.path for a in client.list_artifacts(children[PERIODS[0]].info.run_id)}
    # the parent holds the time series, one point per period at step = the period as a number (202405)
    history = client.get_metric_history(parent_id, mlflow_key("max_abs_prevalence_change_pred"))
    assert sorted(h.step for h in history) == [sources.period_step(p) for p in [*PERIODS, SHIFTED]]
    assert sources.period_step(SHIFTED) == int(SHIFTED.replace("-", ""))
    assert "monitoring_over_time.png" in {a.path for a in client.list_artifacts(parent_id)}

    events = alert_events("test-model")
    assert [e.id for e in events] == [event_id("test-model", SHIFTED)]
    assert events[0].payload["period"] == SHIFTED and events[0].payload["reasons"] == [r.text for r in shifted.reasons]
    assert events[0].resource.id == "classwatch.model.test-model"

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as c:
        arts = c.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[
            artifact_key("test-model", SHIFTED)])))
    arts = [a for a in arts if a.created >= started]
    assert len(arts) == 1 and "Retraining alert" in arts[0].data

    # re-running a period creates no duplicate run and no second alert
    again = monitor_period(monitoring_spec, SHIFTED)
    assert again.created is False and again.run_id == shifted.run_id and again.alert
    assert again.reasons == shifted.reasons and again.parent_run_id == parent_id
    forced = monitor_period(monitoring_spec, SHIFTED, force=True)
    assert forced.created is True
    periods = [r.data.tags.get("classwatch.period") for r in mlflow_runs(store, "monitor-tests", kind="monitor")]
    assert periods.count(SHIFTED) == 1
    assert len(alert_events("test-model", wait=3, expect=2)) == 1  # same event id: the server keeps one


def _no_runs(store):
    assert mlflow_runs(store, "monitor-tests") == []


@pytest.mark.parametrize("case, pattern", [
    ("nan_scores", r"'score_item_3'.*NaN score.*in 3 row\(s\).*e\.g\. row 11"),
    ("schema_changed", r"schema changed.*1 column\(s\) differ.*'price' changed type: double -> (large_)?string"),
    ("missing_column", r"missing column 'unit_price' \(price\)"),
    ("empty_period", r"no rows of this period in column 'period' \(its first values: \['2024-05', '2024-05'"),
    ("unknown_label", r"'prediction'.*not in the class list.*2 row\(s\).*'item_99'"),
])
def test_bad_data_stops_before_anything_is_logged(monitoring_spec, store, tmp_path, case, pattern):
    spec = dict(monitoring_spec)
    target = tmp_path / "bad" / "2024-05.parquet"
    target.parent.mkdir()
    rows = scored_rows(2_000, 30, "2024-05")
    period = "2024-05"
    if case == "nan_scores":
        rows = rows.with_columns(score_item_3=pl.when(pl.int_range(pl.len()).is_in([11, 500, 1999]))
                                 .then(float("nan")).otherwise(pl.col("score_item_3")))
    elif case == "schema_changed":
        rows = rows.with_columns(pl.col("price").cast(pl.String))
    elif case == "missing_column":
        spec["columns"] = {"price": "unit_price"}
    elif case == "unknown_label":  # an error only with a closed class list (the default is open)
        spec["classes"] = "closed"
        rows = rows.with_columns(prediction=pl.when(pl.int_range(pl.len()).is_in([4, 9])).then(pl.lit("item_99"))
                                 .otherwise(pl.col("prediction")))
    rows.write_parquet(target)
    spec["data"] = {**spec["data"], "current": str(tmp_path / "bad" / "{period}.parquet")}
    if case == "empty_period":
        spec["data"]["current"] = str(target)  # one file with a period column: 2024-06 has no rows
        period = "2024-06"
    with pytest.raises(ValueError, match=pattern):
        monitor_period(spec, period)
    _no_runs(store)


def test_artifact_store_failure_leaves_failed_run_then_rerun_completes(monitoring_spec, store, tmp_path):
    """The artifact folder cannot be written half-way through logging: the run ends FAILED; once
    the folder is writable again a re-run completes with one run for the period."""
    spec = {**monitoring_spec, "mlflow": {**monitoring_spec["mlflow"], "experiment": "faulty"}}
    root = tmp_path / "mlruns" / "faulty"
    root.parent.mkdir(exist_ok=True)
    if os.geteuid() == 0:  # permission bits do not stop root: a file where the folder must be does
        root.write_text("not a folder")
    else:
        root.mkdir()
        root.chmod(0o500)
    with pytest.raises(OSError):
        monitor_period(spec, PERIODS[0])
    runs = [r for r in mlflow_runs(store, "faulty") if r.data.tags.get("classwatch.period") == PERIODS[0]]
    assert [r.info.status for r in runs] == ["FAILED"]
    assert semantic_metrics(runs[0].data.metrics)["n_rows"] == 20_000  # logged before the artifacts failed
    if root.is_file():
        root.unlink()
    else:
        root.chmod(0o700)
        shutil.rmtree(root)
    done = monitor_period(spec, PERIODS[0])
    assert done.created
    runs = [r for r in mlflow_runs(store, "faulty") if r.data.tags.get("classwatch.period") == PERIODS[0]]
    assert [r.info.status for r in runs] == ["FINISHED"] and runs[0].info.run_id == done.run_id


def test_a_parent_left_half_written_by_a_crash_is_completed(monitoring_spec, store):
    """A crash right after the parent run was created (RUNNING, no params, no tags): the re-run
    completes that parent and logs the period under it; nothing is left RUNNING."""
    from tasks.config.spec import load_spec
    from tasks.monitor import open_store, run_keys

    spec = load_spec(monitoring_spec)
    parent_key = run_keys(spec, PERIODS[0])[0]
    parent = open_store(spec).new_run(parent_key, "test-model monitoring").__enter__()  # then the process died
    out = monitor_period(monitoring_spec, PERIODS[0])
    runs = mlflow_runs(store, "monitor-tests")
    assert out.created and out.parent_run_id == parent and len(runs) == 2
    assert all(r.info.status == "FINISHED" for r in runs)
    done = MlflowClient(store).get_run(parent).data
    assert done.tags["classwatch.kind"] == "monitor" and done.tags["classwatch.reference"] == str(
        Path(monitoring_spec["data"]["reference"])) and done.params["reference_source"] == done.tags["classwatch.reference"]
    assert done.params["name"] == "test-model" and PERIODS[0] in done.tags["mlflow.note.content"]
    assert _period_run(store, PERIODS[0]).data.tags["mlflow.parentRunId"] == parent


def _period_run(store, period: str):
    """The one monitoring run of ``period`` in the test experiment."""
    (run,) = [r for r in mlflow_runs(store, "monitor-tests", kind="monitor") if r.data.tags.get("classwatch.period")
              == period]
    return run


def test_unlabelled_period_and_previous(monitoring_spec, store, tmp_path):
    data = Path(monitoring_spec["data"]["current"]).parent
    scored_rows(5_000, 40, "2024-07", labels=False).write_parquet(data / "2024-07.parquet")
    out = monitor_period(monitoring_spec, "2024-07")
    assert not out.alert
    assert not any(k.startswith("perf/") for k in out.metrics)
    assert "estimated/balanced_accuracy" in out.metrics
    note = _period_run(store, "2024-07").data.tags["mlflow.note.content"]  # the description quotes the estimate
    assert f"no labels in this period; balanced_accuracy estimated from the scores and the reference's calibration: " \
           f"{out.metrics['estimated/balanced_accuracy']:.3f} (95 % interval " \
           f"{out.metrics['estimated/balanced_accuracy_ci_low']:.3f} to" in note
    again = monitor_period(monitoring_spec, "2024-07")  # no labels yet: the logged run, nothing recomputed
    assert not again.created and again.run_id == out.run_id
    # the labels arrive: the same command recomputes the period, the measurement next to the estimate
    scored_rows(5_000, 40, "2024-07").write_parquet(data / "2024-07.parquet")
    labelled = monitor_period(monitoring_spec, "2024-07")
    assert labelled.created and labelled.metrics["perf/balanced_accuracy"] > 0
    assert "estimated/balanced_accuracy" in labelled.metrics
    runs = [r for r in mlflow_runs(store, "monitor-tests", kind="monitor") if r.data.tags.get("classwatch.period")
            == "2024-07"]
    assert [r.info.run_id for r in runs] == [labelled.run_id]
    assert f"labels present: balanced_accuracy {labelled.metrics['perf/balanced_accuracy']:.3f}" in \
        runs[0].data.tags["mlflow.note.content"]
    from flows.monitor_period import resolve_period

    assert resolve_period("previous") == resolve_period("previous")
    with pytest.raises(ValueError, match="YYYY-MM"):
        monitor_period(monitoring_spec, "July")


def test_binary_task(tmp_path, store):
    from classwatch.demo.data import make_binary_demo

    make_binary_demo(30_000, seed=3).write_parquet(tmp_path / "ref.parquet")
    make_binary_demo(20_000, seed=4).with_columns(period=pl.lit("2024-05")).write_parquet(tmp_path / "stable.parquet")
    make_binary_demo(20_000, seed=5, prevalence=0.2).with_columns(period=pl.lit("2024-06")).write_parquet(
        tmp_path / "shift.parquet")
    spec = {"name": "binary-model", "task": "binary", "n_boot": 100,
            "data": {"reference": str(tmp_path / "ref.parquet"), "current": str(tmp_path / "stable.parquet")},
            "mlflow": {"experiment": "binary", "tracking_uri": store}}
    stable = monitor_period(spec, "2024-05")
    assert not stable.alert and 0.8 < stable.metrics["perf/auroc"] < 0.95
    shifted = monitor_period(spec, "2024-06", current=str(tmp_path / "shift.parquet"))
    assert shifted.alert and any("prevalence of '1' (labels) rose" in r.text for r in shifted.reasons)


class _Counting:
    """A real MlflowClient whose method calls are counted (nothing of MLflow is mocked)."""

    def __init__(self, inner, counts):
        self._inner, self._counts = inner, counts

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self._counts[name] += 1
            return attr(*args, **kwargs)

        return call


@pytest.fixture
def counted(monkeypatch):
    """Counts of MlflowClient constructions and calls, and of datasets opened (pyarrow.dataset.dataset)."""
    from collections import Counter

    import pyarrow.dataset as pads

    import tasks.store.mlflow as store_module

    counts = Counter()
    real_client, real_dataset = store_module.client, pads.dataset

    def client(uri=None):
        counts["MlflowClient"] += 1
        return _Counting(real_client(uri), counts)

    def dataset(*args, **kwargs):
        counts["dataset opens"] += 1
        return real_dataset(*args, **kwargs)

    monkeypatch.setattr(store_module, "client", client)
    monkeypatch.setattr(pads, "dataset", dataset)
    return counts


def test_one_period_uses_one_client_and_reads_nothing_back(monitoring_spec, store, counted):
    """A new period (parent logged before): one client, one experiment lookup, one search, no
    get_run or metric history; a re-run of a logged period: the lookup only, no dataset opened."""
    monitor_period(monitoring_spec, PERIODS[0])
    counted.clear()
    monitor_period(monitoring_spec, SHIFTED)
    assert dict(counted) == {"MlflowClient": 1, "get_experiment_by_name": 1, "search_runs": 1, "create_run": 1,
                             "log_batch": 2, "log_artifacts": 2, "set_terminated": 1, "dataset opens": 6}
    counted.clear()
    again = monitor_period(monitoring_spec, SHIFTED)
    assert not again.created and again.alert and again.reasons
    assert dict(counted) == {"MlflowClient": 1, "get_experiment_by_name": 1, "search_runs": 1}


def test_the_flow_logs_what_assess_period_returns_in_memory(monitoring_spec, store):
    """The notebook API on the same data read into memory gives exactly the metrics the flow logs."""
    from metrics_core import monitoring as mon
    from tasks.config.spec import load_spec
    from tasks.store.mlflow import safe_key

    out = monitor_period(monitoring_spec, SHIFTED)
    spec = load_spec(monitoring_spec)
    ref = pl.read_parquet(monitoring_spec["data"]["reference"])
    cur = pl.read_parquet(monitoring_spec["data"]["current"].format(period=SHIFTED))
    nb = mon.assess_period(ref, cur, spec.alerts, labels=spec.labels, columns={"price": "price", "weight": "weight"},
                           report_options=spec.report_options())
    assert {safe_key(k): v for k, v in nb.metrics.items()} == pytest.approx(out.metrics, nan_ok=True)
    assert nb.reasons == out.reasons and nb.alert
    logged = MlflowClient(store).get_run(out.run_id).data.metrics
    values = list(logged.values())  # the logged keys may be regrouped for the UI; the values are these
    # abs=0: a p-value of 1e-54 must not count as found because some metric logged 0.0
    missing = {k: v for k, v in out.metrics.items()
               if v == v and not any(x == pytest.approx(v, rel=1e-9, abs=0) for x in values)}
    assert not missing


def test_a_new_class_alerts_and_is_left_out(monitoring_spec, store, tmp_path):
    """The default open class list: a label the reference never had is counted, left out and alerted."""
    rows = scored_rows(2_000, 31, "2024-05")
    rows = rows.with_columns(label=pl.when(pl.int_range(pl.len()) < 50).then(pl.lit("kombucha"))
                             .otherwise(pl.col("label")))
    target = tmp_path / "new" / "2024-05.parquet"
    target.parent.mkdir()
    rows.write_parquet(target)
    current = str(tmp_path / "new" / "{period}.parquet")
    spec = {**monitoring_spec, "data": {**monitoring_spec["data"], "current": current}}
    out = monitor_period(spec, "2024-05")
    assert out.alert and out.reasons[0].text == "class 'kombucha' appeared: 50 rows (2.5% of the period)"
    assert out.metrics["n_rows"] == 1_950 and out.metrics["new_class_rows"] == 50
    run = MlflowClient(store).get_run(out.run_id)
    assert "class 'kombucha' appeared" in run.data.tags["alert reasons"]


def test_the_log_task_records_where_its_inputs_came_from(monitoring_spec, store):
    """The assessment and the history go to ``log-monitoring`` wrapped in ``opaque`` (Prefect does not walk
    their thousands of objects): the task run still names the task runs that made them."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    state = monitor_period(monitoring_spec, PERIODS[1], force=True, return_state=True)
    flow_run_id = state.state_details.flow_run_id
    wanted = {"assess-against-reference", "find-monitoring-history", "log-monitoring"}
    deadline = time.monotonic() + 20
    while True:  # task runs reach the API as events, recorded a moment later
        with get_client(sync_client=True) as c:
            runs = {r.name.rsplit("-", 1)[0]: r for r in c.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))}
        if wanted <= set(runs) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    inputs = runs["log-monitoring"].task_inputs
    assert [i.id for i in inputs["a"]] == [runs["assess-against-reference"].id]
    assert [i.id for i in inputs["history"]] == [runs["find-monitoring-history"].id]
