"""tasks.store.mlflow on a real SQLite MLflow store: batches, dedupe by run key, FAILED on failure."""

from __future__ import annotations

import json

import polars as pl
import pytest
from mlflow import MlflowClient

from tasks.store.mlflow import RUN_KEY, RunContent, ensure_parent, log_run, log_series, safe_key


@pytest.fixture
def uri(tmp_path):
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


def content(tmp_path, n_metrics=1500) -> RunContent:
    png = tmp_path / "roc.png"
    png.write_bytes(b"\x89PNG fake")
    return RunContent("r", params={f"p{i}": i for i in range(150)},
                      metrics={f"m/{i}": i / 7 for i in range(n_metrics)} | {"undefined": float("nan")},
                      tags={f"classwatch.t{i}": "x" * 10 for i in range(120)}, files={"roc.png": png},
                      tables={"per_class.json": pl.DataFrame({"class": ["a", "b"], "f1": [0.5, 0.7]})},
                      texts={"iso_report.md": "# report\n"}, step=3)


def test_everything_logged_in_batches_then_finished(uri, tmp_path):
    run_id, created = log_run(uri, "exp", "key-1", content(tmp_path))
    assert created
    c = MlflowClient(uri)
    run = c.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert len(run.data.metrics) == 1501 and run.data.metrics["m/700"] == pytest.approx(100.0)
    assert len(run.data.params) == 150 and run.data.tags["classwatch.run_key"] == "key-1"
    assert c.get_metric_history(run_id, "m/1")[0].step == 3
    assert {a.path for a in c.list_artifacts(run_id)} == {"roc.png", "per_class.json", "iso_report.md"}
    exp = c.get_experiment(run.info.experiment_id)
    assert exp.artifact_location.startswith((tmp_path / "mlruns").as_uri())  # beside the SQLite file


def test_same_key_is_reused_and_force_replaces(uri, tmp_path):
    first, _ = log_run(uri, "exp", "key-2", content(tmp_path, 5))
    again, created = log_run(uri, "exp", "key-2", content(tmp_path, 5))
    assert (again, created) == (first, False)
    forced, created = log_run(uri, "exp", "key-2", content(tmp_path, 5), force=True)
    assert created and forced != first
    c = MlflowClient(uri)
    active = c.search_runs([c.get_experiment_by_name("exp").experiment_id])
    assert [r.info.run_id for r in active] == [forced]


def test_failure_marks_failed_and_rerun_replaces_it(uri, tmp_path):
    bad = content(tmp_path, 5)
    bad.files = {"missing.png": tmp_path / "does-not-exist.png"}
    with pytest.raises(FileNotFoundError):
        log_run(uri, "exp", "key-3", bad)
    c = MlflowClient(uri)
    exp_id = c.get_experiment_by_name("exp").experiment_id
    runs = c.search_runs([exp_id])
    assert [r.info.status for r in runs] == ["FAILED"] and runs[0].data.metrics["m/1"] == pytest.approx(1 / 7)
    run_id, created = log_run(uri, "exp", "key-3", content(tmp_path, 5))
    runs = c.search_runs([exp_id])
    assert created and [(r.info.run_id, r.info.status) for r in runs] == [(run_id, "FINISHED")]


def test_parent_and_series(uri):
    parent = ensure_parent(uri, "exp", "parent-key", "parent", {"a": 1}, {"classwatch.kind": "monitor"})
    assert ensure_parent(uri, "exp", "parent-key", "parent", {"a": 1}, {}) == parent
    for step, value in ((650, 0.1), (651, 0.3)):
        log_series(uri, parent, {"psi": value}, step)
    history = MlflowClient(uri).get_metric_history(parent, "psi")
    assert [(h.step, h.value) for h in history] == [(650, 0.1), (651, 0.3)]


def test_a_half_written_parent_is_completed_not_adopted(uri):
    """A parent created, then the process killed (RUNNING) or failed (FAILED) before its params and
    tags were all logged: the next caller completes it (one param was there: it keeps its value)."""
    from tasks.store.mlflow import MlflowStore

    store = MlflowStore(uri, "exp")
    for key, crash in (("monitor|a", "killed"), ("monitor|b", "failed")):
        half = store.new_run(key, "m monitoring")  # how ensure_parent creates it
        parent = half.__enter__()  # never left when killed: the process is gone
        store.log_batches(parent, params={"a": 0})  # the first batch, then the crash
        if crash == "failed":
            assert half.__exit__(OSError, OSError("disk full"), None) is False  # marked FAILED, the error goes on
        assert MlflowClient(uri).get_run(parent).info.status == ("RUNNING" if crash == "killed" else "FAILED")
        again = MlflowStore(uri, "exp")  # a new process
        assert again.ensure_parent(key, "m monitoring", {"a": 1, "b:c": 2}, {"classwatch.kind": "monitor"}) == parent
        run = MlflowClient(uri).get_run(parent)
        assert run.info.status == "FINISHED" and run.data.params == {"a": "0", "b_c": "2"}
        assert run.data.tags["classwatch.kind"] == "monitor" and run.data.tags[RUN_KEY] == key
        assert again.ensure_parent(key, "m monitoring", {"a": 1}, {}) == parent


def test_safe_key():
    assert safe_key("prevalence_label:a&b") == "prevalence_label_a_b"


def test_store_packs_batches_and_lists_tables_for_load_table(uri, tmp_path, monkeypatch):
    from collections import Counter

    from tasks.store.mlflow import MlflowStore

    calls = Counter()
    real = MlflowClient(uri)

    class Counting:
        def __getattr__(self, name):
            calls[name] += 1
            return getattr(real, name)

        tracking_uri = uri

    store = MlflowStore(uri, "exp", Counting())
    run_id, created = store.log_run("key-4", content(tmp_path, 1500))
    # 1501 metrics, 150 params, 121 tags in 2 batches of at most 1000 entities, 100 params, 100 tags; one upload
    assert created and calls["log_batch"] == 2 and calls["log_artifacts"] == 1 and calls["get_run"] == 0
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # load_table searches through the fluent API
    table = pl.from_pandas(real.load_table(store.experiment_id(), "per_class.json", run_ids=[run_id]))
    assert table["class"].to_list() == ["a", "b"] and table["f1"].to_list() == pytest.approx([0.5, 0.7])
    assert store.finished("key-4").metrics["m/700"] == pytest.approx(100.0)


def test_store_runs_under_a_prefix_and_pickles_without_its_client(uri):
    import pickle

    from tasks.store.mlflow import RUN_KEY, MlflowStore

    store = MlflowStore(uri, "exp")
    assert store.runs_under("p_1") == [] and store.finished("p_1") is None  # no experiment yet: none created
    assert MlflowClient(uri).get_experiment_by_name("exp") is None
    parent = store.ensure_parent("p_1", "parent", {}, {})
    for key in ("p_1|2024-01", "p_1|2024-02", "pX1|2024-01", "p_10|2024-01"):  # "_" matches any character in LIKE
        store.log_run(key, RunContent(key))
    keys = sorted(r.data.tags[RUN_KEY] for r in store.runs_under("p_1"))
    assert keys == ["p_1", "p_1|2024-01", "p_1|2024-02"] and store.ensure_parent("p_1", "parent", {}, {}) == parent
    copy = pickle.loads(pickle.dumps(store))
    assert copy._client is None and copy.finished("p_1|2024-02") == store.finished("p_1|2024-02")


def test_an_interrupted_run_is_killed_not_left_running(uri):
    """Ctrl-C while a run is written: the run is marked KILLED (it was FAILED, and once, after an
    SQLAlchemy error in the interrupted call, left RUNNING); the next run of the key replaces it."""
    from tasks.store.mlflow import MlflowStore

    store = MlflowStore(uri, "exp")
    with pytest.raises(KeyboardInterrupt):
        with store.new_run("key-ki", "r") as run_id:
            raise KeyboardInterrupt
    assert MlflowClient(uri).get_run(run_id).info.status == "KILLED"


@pytest.mark.usefixtures("prefect_harness")
def test_a_store_gone_down_is_one_error_and_the_task_is_not_retried(monkeypatch):
    """A tracking server that died after the experiment was looked up: MLflow's client retried each
    call for minutes and the task retried the whole of it twice more (16.7 minutes before an Error
    line). Now a failed call whose server a probe finds down raises StoreUnreachable, which no task retries."""
    import time

    from prefect import flow, task

    from deployments.servers import free_port
    from tasks import IO
    from tasks.store.mlflow import MlflowStore, StoreUnreachable

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # MLflow's own retries are bounded elsewhere
    uri = f"http://127.0.0.1:{free_port()}"
    store = MlflowStore(uri, "exp")
    store._experiment_id = "1"  # looked up while the server was up (that look-up probes first)
    tries = []

    @task(**{**IO, "retry_delay_seconds": 0})
    def look_up():
        tries.append(1)
        return store.find("key")

    @flow
    def one_look_up():
        return look_up()

    t0 = time.monotonic()
    with pytest.raises(StoreUnreachable, match=f"the MLflow tracking server {uri} stopped answering"):
        one_look_up()
    assert len(tries) == 1 and time.monotonic() - t0 < 30


def test_an_over_long_value_is_cut_visibly_with_a_warning_and_text_stays_readable(uri, tmp_path):
    """MLflow keeps 6,000 characters of a param: a longer one (e.g. the labels of 900 classes) ends
    with a cut mark and a warning, instead of being cut silently; non-ASCII names stay readable."""
    labels = json.dumps([f"面包 {i:04d}" for i in range(900)], ensure_ascii=False)
    with pytest.warns(UserWarning, match=r"param 'labels' is \d+ characters; MLflow keeps 6000"):
        run_id, _ = log_run(uri, "exp", "key-long", RunContent("r", params={"labels": labels, "short": "café"}))
    params = MlflowClient(uri).get_run(run_id).data.params
    assert len(params["labels"]) == 6000 and params["labels"].endswith(f"[... cut: {len(labels)} characters]")
    assert params["labels"].startswith('["面包 0000", "面包 0001"') and params["short"] == "café"

