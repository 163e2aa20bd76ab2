"""`classwatch monitor` on a delivery whose labels are a stratified sample with design weights, in a fresh
process logging to a real SQLite MLflow store: the estimate for the whole delivery and what to label next."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from flow_data import LABELS, scored_rows

from metrics_core import monitoring as mon
from metrics_core.monitoring.survey import design_metric

EXE = Path(sys.executable).parent / "classwatch"


@pytest.mark.usefixtures("prefect_harness")
def test_monitor_logs_the_estimate_of_a_labelled_sample_and_what_to_label_next(tmp_path, store, monkeypatch):
    from mlflow import MlflowClient
    from prefect.settings import PREFECT_API_URL
    from sklearn.metrics import balanced_accuracy_score

    reference, full = scored_rows(20_000, 0, "2023-12"), scored_rows(20_000, 10, "2024-01")
    pred = np.array([LABELS.index(p) for p in full["prediction"]])
    rates = np.where(pred >= 4, 0.25, 0.03)  # the two rarest predicted classes over-sampled
    on = np.random.default_rng(1).random(pred.size) < rates
    delivery = full.with_columns(label=pl.when(pl.Series(on)).then(pl.col("label")).otherwise(None),
                                 design_weight=pl.when(pl.Series(on)).then(pl.Series(1 / rates)).otherwise(None))
    (tmp_path / "deliveries").mkdir()
    reference.write_parquet(tmp_path / "reference.parquet")
    delivery.write_parquet(tmp_path / "deliveries" / "2024-01.parquet")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "sampled", "task": "multiclass", "labels": LABELS, "n_boot": 50,
        "data": {"reference": str(tmp_path / "reference.parquet"),
                 "current": str(tmp_path / "deliveries" / "{period}.parquet")},
        "mlflow": {"experiment": "sampled", "tracking_uri": store}}))
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "COLUMNS": "200"}
    done = subprocess.run([str(EXE), "monitor", "--spec", str(spec), "--period", "2024-01"], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    said = re.search(r"Label next period \(after 2024-01\): ([\d,]+) rows, ([\d,]+) in (item_\d)", done.stdout)
    assert said and f"sample of {on.sum():,}" in done.stdout, done.stdout

    client = MlflowClient(store)
    exp = client.get_experiment_by_name("sampled")
    run = next(r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("classwatch.period") == "2024-01")
    m = run.data.metrics
    # the logged estimate is the design-based one of the delivery's sample statistics (unequal design weights)
    stats = mon.scan_period(tmp_path / "deliveries" / "2024-01.parquet", "multiclass", LABELS, label="label",
                            prediction="prediction", scores=[f"score_{c}" for c in LABELS], partial_labels=True,
                            design_weight="design_weight")
    value, (lo, hi) = design_metric(stats.sample, "balanced_accuracy", level=0.95)
    assert m["sample/design_based/balanced_accuracy"] == pytest.approx(value, rel=1e-12)
    assert m["1 headline and alert/balanced_accuracy"] == pytest.approx(value, rel=1e-12)
    assert (m["1 headline and alert/balanced_accuracy_ci_low"], m["1 headline and alert/balanced_accuracy_ci_high"]
            ) == pytest.approx((lo, hi), rel=1e-12)
    truth = balanced_accuracy_score(full["label"].to_numpy(), full["prediction"].to_numpy())
    assert lo <= truth <= hi  # the whole delivery's value, labels of every row known here
    assert m["sample/labelled_rows"] == on.sum() and 0 < m["sample/effective_n"] < on.sum()
    assert "sample/model_assisted/balanced_accuracy" in m and m["sample/alert_uses_model_assisted"] == 0.0
    # what to label next: the table on the run, its total and largest stratum as the summary line says
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)  # load_table searches through the fluent API
    table = pl.from_pandas(client.load_table(exp.experiment_id, "next_sample.json", run_ids=[run.info.run_id]))
    assert table["stratum"].to_list() == LABELS and table["rows"].sum() == 20_000
    assert m["sample/next_rows"] == table["label"].sum() == int(said.group(1).replace(",", ""))
    top = table.sort("label", descending=True).row(0, named=True)
    assert (top["stratum"], top["label"]) == (said.group(3), int(said.group(2).replace(",", "")))
