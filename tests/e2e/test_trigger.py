"""Trigger: `classwatch notify-trained` -> served evaluate_model runs -> the MLflow server holds its run; a model
registered with the README's own `log_model` call is scored with its probabilities, one that gives labels only
says so in its run and in the serve log."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from e2e_support import EXPERIMENT, run_cli, wait_for

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


def _register(servers, name: str, log) -> str:
    """``log(name)`` (a ``log_model`` call) in a training run on the MLflow server; ``models:/NAME/VERSION``."""
    import mlflow

    from tasks.store.mlflow import process_uris

    client = servers.mlflow.client()
    with process_uris(servers.mlflow.url):  # log_model reads the process-wide URIs; they are put back after
        exp = client.get_experiment_by_name(f"{EXPERIMENT}-training") or client.get_experiment(
            client.create_experiment(f"{EXPERIMENT}-training"))
        with mlflow.start_run(experiment_id=exp.experiment_id):
            info = log(name)
    return f"models:/{name}/{info.registered_model_version}"


def _evaluate(servers, served, e2e_data, uri: str):
    """notify-trained for ``uri`` -> the served deployment runs evaluate_model -> its finished MLflow run."""
    run_cli(servers, "notify-trained", "--model-uri", uri, "--test-data", str(e2e_data.test))
    client = servers.mlflow.client()

    def finished():
        exp = client.get_experiment_by_name(EXPERIMENT)
        runs = client.search_runs([exp.experiment_id], filter_string="tags.`classwatch.kind` = 'evaluate' and "
                                  f"tags.`classwatch.model_uri` = '{uri}' and attributes.status = 'FINISHED'")
        return runs[0] if runs else None

    try:
        run = wait_for(finished, timeout=240, interval=2, what=f"a finished evaluation run of {uri}")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; serve log:\n{served[1].read_text(errors='replace')[-3000:]}") from None
    return run, {a.path for a in client.list_artifacts(run.info.run_id)}


def test_a_model_registered_as_the_readme_shows_is_evaluated_with_its_scores(servers, served, e2e_data):
    import mlflow.sklearn
    from sklearn.linear_model import LogisticRegression

    train = pl.read_parquet(e2e_data.root / "train.parquet")
    model = LogisticRegression().fit(train.select("x1", "x2").to_pandas(), train["label"].to_numpy())
    # The README's registry trigger, step 3, word for word (its pyfunc predict gives labels).
    uri = _register(servers, "cw-e2e-readme",
                    lambda name: mlflow.sklearn.log_model(model, name="model", registered_model_name=name))
    run, names = _evaluate(servers, served, e2e_data, uri)
    metrics = run.data.metrics
    assert 0.5 < metrics["auroc"] <= 1.0 and "log_loss" in metrics
    assert {"roc.png", "pr.png", "gain.png", "lift.png", "reliability.png", "iso_report.md"} <= names, names
    assert "No scores" not in run.data.tags["mlflow.note.content"]


def test_a_model_that_gives_labels_only_says_so_in_its_run_and_the_serve_log(servers, served, e2e_data):
    import mlflow.pyfunc

    class Threshold(mlflow.pyfunc.PythonModel):  # defined here: pickled by value, loadable by the flow run
        def predict(self, context, model_input, params=None):
            return (model_input["x1"].to_numpy() > 0.3).astype(np.int64)

    uri = _register(servers, "cw-e2e-labels", lambda name: mlflow.pyfunc.log_model(
        name="model", python_model=Threshold(), registered_model_name=name, pip_requirements=["mlflow"]))
    run, names = _evaluate(servers, served, e2e_data, uri)
    warning = f"No scores: the model {uri} returned predicted labels only"
    assert "auroc" not in run.data.metrics and "roc.png" not in names and "confusion.png" in names
    assert warning in run.data.tags["mlflow.note.content"]
    _, log_path = served
    assert warning in log_path.read_text(errors="replace")
