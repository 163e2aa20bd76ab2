"""`classwatch monitor` with `columns.segments` in a fresh process: a shift within one retailer alerts, its reason
names the retailer in the output, the run's tags and records, and the period run holds a report.html under 2 MB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from flow_data import LABELS, scored_rows

SHOPS = np.array([f"shop_{i:02d}" for i in range(5)])


def _delivery(n: int, seed: int, period: str, shifted: str | None = None) -> pl.DataFrame:
    """Rows with a retailer; in retailer ``shifted`` class item_2's share is raised by 30 points."""
    rows = scored_rows(n, seed, period)
    shop = SHOPS[np.random.default_rng(seed + 50).integers(0, SHOPS.size, n)]
    if shifted is not None:
        moved = scored_rows(n, seed + 1, period, prevalence=(2, 0.30))
        rows = pl.concat([rows.filter(pl.Series(shop != shifted)), moved.filter(pl.Series(shop == shifted))])
        shop = np.r_[shop[shop != shifted], shop[shop == shifted]]
    return rows.with_columns(retailer=pl.Series(shop))


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")  # the suite's Prefect API, not a cold start of its own
def test_monitor_with_segments_names_the_retailer_and_logs_a_report_page(tmp_path):
    from prefect.settings import PREFECT_API_URL

    (tmp_path / "deliveries").mkdir()
    _delivery(12_000, 0, "2023-12").write_parquet(tmp_path / "reference.parquet")
    _delivery(8_000, 10, "2024-01", shifted="shop_03").write_parquet(tmp_path / "deliveries" / "2024-01.parquet")
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    spec = {"name": "seg-model", "task": "multiclass", "labels": LABELS,
            "data": {"reference": str(tmp_path / "reference.parquet"),
                     "current": str(tmp_path / "deliveries" / "{period}.parquet")},
            "columns": {"segments": ["retailer"]},
            "mlflow": {"experiment": "segments", "tracking_uri": store}, "n_boot": 50}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "COLUMNS": "200",
           "MLFLOW_DISABLE_TELEMETRY": "true", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    exe = Path(sys.executable).parent / "classwatch"
    done = subprocess.run([str(exe), "monitor", "--spec", str(tmp_path / "spec.yaml"), "--period", "2024-01"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "retailer=shop_03: prevalence of 'item_2'" in out

    from mlflow import MlflowClient

    client = MlflowClient(store)
    runs = client.search_runs([client.get_experiment_by_name("segments").experiment_id])
    period = next(r for r in runs if r.data.tags.get("classwatch.period") == "2024-01")
    parent = next(r for r in runs if "classwatch.period" not in r.data.tags)
    tags = period.data.tags
    assert tags["classwatch.alert"] == "retrain" and tags["alert segments"].startswith("retailer=shop_03")
    assert tags["alert reasons"].startswith("retailer=shop_03: ")
    assert json.loads(tags["alert records"])[0]["segment"] == ["retailer", "shop_03"]
    metrics = period.data.metrics
    assert metrics["9 segments/tested"] == 5 and metrics["9 segments/alerting"] >= 1
    assert not [k for k in metrics if "shop_" in k]  # a summary, not one key per segment
    for run in (period, parent):
        page = Path(client.download_artifacts(run.info.run_id, "report.html", str(tmp_path / run.info.run_id)))
        html = page.read_text()
        assert page.stat().st_size < 2_000_000 and "data:image/png;base64," in html and "<script" not in html
        assert "retailer=shop_03" in html
    assert "segments.json" in {a.path for a in client.list_artifacts(period.info.run_id)}
