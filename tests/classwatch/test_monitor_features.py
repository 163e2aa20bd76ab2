"""`classwatch monitor` with `columns.features`, in a fresh process on a real SQLite MLflow store: the feature is named.

The spec runs the scans on Dask (`task_runner: dask`, a local cluster the command starts), so the
command's Dask path meets a fresh process's imports and threads too; the local stream's is met by
the other commands' fresh-process tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import polars as pl
import pytest
import yaml
from flow_data import LABELS, scored_rows
from mlflow import MlflowClient

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]  # the naming is covered fast in test_features


def _with_features(frame: pl.DataFrame, seed: int, pack_p) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = frame.height
    return frame.with_columns(pack_size=pl.Series(rng.choice([250, 400, 500, 750], n, p=pack_p)),
                              title=pl.Series([f"Tesco Finest Cheddar {s}" for s in rng.choice(["400g", "1kg"], n)]))


def _scan_parts() -> int:
    """Task runs named scan-source-part in the suite's Prefect API (one per partition group on Dask)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName

    with get_client(sync_client=True) as c:
        return len(c.read_task_runs(task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_="scan-source-part"))))


def test_monitor_names_a_drifted_feature_in_the_cli_tags_and_feature_table(tmp_path):
    from prefect.settings import PREFECT_API_URL

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    (tmp_path / "deliveries").mkdir()
    _with_features(scored_rows(8000, 0, "2023-12"), 0, [0.25] * 4).write_parquet(tmp_path / "reference.parquet")
    _with_features(scored_rows(8000, 1, "2024-01"), 1, [0.10, 0.25, 0.25, 0.40]).write_parquet(
        tmp_path / "deliveries" / "2024-01.parquet")
    spec = {"name": "feature-model", "task": "multiclass", "labels": LABELS, "n_boot": 50,
            "data": {"reference": str(tmp_path / "reference.parquet"),
                     "current": str(tmp_path / "deliveries" / "{period}.parquet")},
            "columns": {"features": ["pack_size", "title"]}, "task_runner": "dask",
            "mlflow": {"experiment": "features", "tracking_uri": store}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "MLFLOW_DISABLE_TELEMETRY": "true",
           "COLUMNS": "200"}
    before = _scan_parts()
    done = subprocess.run([sys.executable, "-m", "classwatch", "monitor", "--spec", str(tmp_path / "spec.yaml"),
                           "--period", "2024-01"], env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0 and "feature pack_size: values shifted" in done.stdout, \
        done.stdout[-3000:] + done.stderr[-3000:]
    deadline = time.monotonic() + 20
    while _scan_parts() - before < 2 and time.monotonic() < deadline:  # task runs arrive as events, a moment later
        time.sleep(0.5)
    assert _scan_parts() - before >= 2  # the reference and the period scanned on the cluster, by partition group

    client = MlflowClient(store)
    exp = client.get_experiment_by_name("features")
    run = next(r for r in client.search_runs([exp.experiment_id]) if "classwatch.period" in r.data.tags)
    assert "feature pack_size" in json.dumps(run.data.tags)
    metrics = run.data.metrics
    assert metrics["9 input features/features alerting"] == 1.0 and metrics["9 input features/features tested"] == 2
    assert not any("feature_numeric" in k or "feature_category" in k for k in metrics)  # a summary, not a key each
    table = json.loads(open(client.download_artifacts(run.info.run_id, "feature_drift.json", str(tmp_path))).read())
    rows = [dict(zip(table["columns"], r)) for r in table["data"]]
    assert rows[0]["feature"] == "pack_size" and rows[0]["alert"] is True
