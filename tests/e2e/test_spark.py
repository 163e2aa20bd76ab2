"""The Spark runner on a real local Spark (local[2], one session for the module): the local stream's statistics,
a Spark DataFrame, bad rows named, a monitored period from s3:// {period} paths, and the bar through the CLI."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import metrics_core as mc
from metrics_core.dataset import Columns, scan_stats
from metrics_core.errors import InputError

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

sys.path.append(str(Path(__file__).parent.parent))  # the shared S3 server of the tests
from s3_server import start_s3_server  # noqa: E402


def _java() -> bool:
    return bool(shutil.which("java") or os.environ.get("JAVA_HOME"))


@pytest.fixture(scope="module")
def s3():
    """The S3-compatible server of the module, its reader's variables in this process's environment.

    Set before the Spark session starts: a local Spark's executors keep the environment the JVM
    started with (docs/large-data.md, "Object stores")."""
    server = start_s3_server()
    saved = {key: os.environ.get(key) for key in server.env()}
    os.environ.update(server.env())
    yield server
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    server.stop()


@pytest.fixture(scope="module")
def spark(s3):
    """ONE local Spark session for the module (a JVM start is 10-20 s): 2 cores, 512 MiB, no UI, 127.0.0.1."""
    if not _java():
        pytest.skip("no Java: install Debian's openjdk-17-jre-headless (`make e2e-deps`) to run the Spark tests")
    from tasks.spark import spark_session

    session = spark_session("local[2]", {"spark.driver.memory": "512m"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def scores(tmp_path_factory) -> Path:
    """A folder of 4 Parquet files of 2,500 rows (row groups of 500): binary and 3-class labels, scores with
    ties, integer and fractional weights."""
    root = tmp_path_factory.mktemp("spark-scores")
    rng = np.random.default_rng(7)
    for i in range(4):
        n = 2500
        y = rng.integers(0, 3, n)
        s = rng.multinomial(100, [0.3, 0.4, 0.3], n) / 100  # probabilities in hundredths: many ties
        pq.write_table(pa.table({"label": (y == 1).astype(np.int64), "score": s[:, 1],
                                 "klass": np.array(["a", "b", "c"])[y],
                                 "score_a": s[:, 0], "score_b": s[:, 1], "score_c": s[:, 2],
                                 "weight": rng.random(n) * 10, "count": rng.integers(1, 5, n).astype(float)}),
                       root / f"part-{i}.parquet", row_group_size=500)
    return root


#: Sums over rows of floats, which other batch groupings round differently (docs/large-data.md).
ROW_SUMS = {"log_loss"}


def _agree(a: dict, b: dict, *, weighted: bool) -> None:
    """Equal metrics; with fractional weights, weighted sums agree to float rounding (docs/large-data.md)."""
    assert a.keys() == b.keys()
    for key in a:
        if math.isnan(a[key]):
            assert math.isnan(b[key]), key
        elif weighted or key in ROW_SUMS:
            assert b[key] == pytest.approx(a[key], rel=1e-12, abs=1e-15), key
        else:
            assert a[key] == b[key], key


@pytest.mark.parametrize("task,columns,weighted", [
    ("binary", Columns(weight="weight"), True),
    ("multiclass", Columns(label="klass"), False),  # exact, one class at a time on the executors
])
def test_spark_runner_gives_the_local_streams_statistics(prefect_harness, spark, scores, task, columns, weighted):
    from flows.compute_stats import compute_stats

    local = scan_stats(str(scores), task, columns, batch_rows=700)
    on_spark = compute_stats(str(scores), task, columns, runner="spark", batch_rows=700, target_rows=2000)
    assert on_spark.n_rows == local.n_rows == 10_000
    to_report = mc.binary_from_stats if task == "binary" else mc.multiclass_from_stats
    _agree(to_report(local, n_boot=50).metrics, to_report(on_spark, n_boot=50).metrics, weighted=weighted)


def test_a_spark_dataframe_gives_the_same_statistics(spark, scores):
    from flows.compute_stats import compute_stats

    frame = spark.read.parquet(str(scores)).repartition(3)
    for task, columns, labels in (("binary", Columns(weight="count"), None),
                                  ("multiclass", Columns(label="klass"), ["a", "b", "c"])):
        local = scan_stats(str(scores), task, columns, by_class=False)
        on_spark = compute_stats(frame, task, columns, labels=labels)
        assert on_spark.n_rows == 10_000
        assert on_spark.confusion.matrix.tolist() == local.confusion.matrix.tolist()
        to_report = mc.binary_from_stats if task == "binary" else mc.multiclass_from_stats
        _agree(to_report(local, n_boot=50).metrics, to_report(on_spark, n_boot=50).metrics, weighted=False)


def test_a_bad_row_on_an_executor_is_named_by_file_column_and_count(prefect_harness, spark, tmp_path):
    from flows.compute_stats import compute_stats

    pq.write_table(pa.table({"label": [0, 1, 1, 0], "score": [0.1, 0.9, 0.4, 0.3]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"label": [0, None, 1, None], "score": [0.1, 0.2, 0.3, 0.4]}), tmp_path / "b.parquet")
    with pytest.raises(InputError, match=r"b\.parquet.*'label'.*null label in 2 row\(s\) of the file"):
        compute_stats(str(tmp_path), "binary", Columns(), runner="spark")


def test_a_monitored_period_from_s3_period_paths_on_spark_equals_the_local_one(
        prefect_harness, s3, spark, monitoring_spec):
    from flow_data import PERIODS, mlflow_runs

    from flows.monitor_period import monitor_period
    from tasks.metric_names import semantic_metrics

    data = Path(monitoring_spec["data"]["reference"]).parent
    reference = s3.upload(data / "reference.parquet", "monitor/reference.parquet")
    s3.upload(data / "deliveries", "monitor/deliveries")
    period = PERIODS[0]
    local = monitor_period(monitoring_spec, period)
    current = reference.replace("reference.parquet", "deliveries/{period}.parquet")
    remote_spec = {**monitoring_spec, "name": "test-model-s3", "task_runner": "spark",
                   "data": {"reference": reference, "current": current}}
    remote = monitor_period(remote_spec, period)
    assert local.alert == remote.alert is False
    logged = [semantic_metrics(r.data.metrics) for r in mlflow_runs(monitoring_spec["mlflow"]["tracking_uri"],
                                                                     "monitor-tests", kind="monitor")
              if "classwatch.period" in r.data.tags]
    assert len(logged) == 2  # one period of each model
    a, b = logged
    assert a["n_rows"] == b["n_rows"] == 20_000
    for key in a:  # counts exactly; float sums (weights, prices) to rounding
        assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-12) or (math.isnan(a[key]) and math.isnan(b[key])), key


def test_the_bar_local_spark_and_s3_give_the_same_metrics_through_the_command(s3, scores, tmp_path):
    """`classwatch evaluate` in fresh processes: the local stream, --runner spark and an s3:// source."""
    if not _java():
        pytest.skip("no Java: install Debian's openjdk-17-jre-headless (`make e2e-deps`)")
    exe = Path(sys.executable).parent / "classwatch"
    url = s3.upload(scores, "bar/scores/")
    env = {**os.environ, **s3.env(),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    out = {}
    for name, source, extra in (("local", str(scores), []), ("spark", str(scores), ["--runner", "spark"]),
                                ("s3", url, [])):
        proc = subprocess.run([str(exe), "evaluate", source, "--task", "binary", "--weight-column", "count",
                               "--no-plots", "--n-boot", "50", "--json", str(tmp_path / f"{name}.json"), *extra],
                              env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert proc.returncode == 0, f"{name}:\n{proc.stdout}\n{proc.stderr}"
        out[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert out["local"]["n_rows"] == out["spark"]["n_rows"] == out["s3"]["n_rows"] == 10_000
    assert out["local"]["metrics"] == out["spark"]["metrics"] == out["s3"]["metrics"]
    assert out["local"]["metrics"]["auroc"] is not None
