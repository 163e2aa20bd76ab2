"""Trigger: `classwatch notify-trained` -> served evaluate_model runs -> the MLflow server holds its run."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]


def test_notify_trained_starts_evaluate_model_and_logs_to_mlflow_server(servers, e2e_data, evaluated):
    run = evaluated.run
    flow_run = evaluated.flow_run
    # The flow run got its parameters from the event (templated trigger).
    assert flow_run.parameters["model_uri"] == e2e_data.model_uri
    assert flow_run.parameters["model_name"] == "cw-e2e"
    assert flow_run.parameters["test_data"] == str(e2e_data.test)
    assert flow_run.parameters["spec"] == str(e2e_data.spec)
    assert evaluated.seconds_to_completed < 240
    # The run on the MLflow server (REST store) is complete: metrics, intervals, the ROC image.
    assert run.info.status == "FINISHED"
    metrics = run.data.metrics
    headline = run.data.tags["classwatch.headline"]
    assert headline in metrics and 0.5 < metrics[headline] <= 1.0
    assert 0.5 < metrics["auroc"] <= 1.0
    assert metrics["auroc_ci_low"] <= metrics["auroc"] <= metrics["auroc_ci_high"]
    assert metrics["throughput_rows_per_s"] > 0  # the registered model was loaded and timed
    client = servers.mlflow.client()
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"roc.png", "iso_report.md"} <= names, names
    roc = client.download_artifacts(run.info.run_id, "roc.png", str(servers.root / "downloads"))
    with open(roc, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
