"""evaluate_model and compare_models with real scikit-learn models registered in a SQLite MLflow store."""

from __future__ import annotations

import numpy as np
import polars as pl
from polars.testing import assert_frame_equal
import pytest
from flow_data import mlflow_runs
from mlflow import MlflowClient
from statsmodels.stats.multitest import multipletests

from flows.compare_models import compare_models
from classwatch.demo.run import MODEL_NAME, _scored, train_and_register
from classwatch.demo.quotes import class_list, history
from flows.evaluate_model import evaluate_model
from tasks.evaluate_run import logged_name

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]
PLOTS = {"roc.png", "pr.png", "gain.png", "lift.png", "confusion.png"}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Title classifiers v1 (logistic regression) and v2 (naive Bayes), registered as MODEL_NAME."""
    root = tmp_path_factory.mktemp("eval")
    store = f"sqlite:///{root / 'mlflow.db'}"
    rows = history(["2023-10", "2023-11", "2023-12"], 1_500, seed=5)
    part = (rows["title"].hash(seed=1) % 3).to_numpy()
    train, ref, test = rows.filter(part == 0), rows.filter(part == 1), rows.filter(part == 2)
    v1, lr = train_and_register("logistic_regression", train, store)
    v2, _ = train_and_register("complement_naive_bayes", train, store)
    for name, frame in (("train", train), ("test", test)):
        frame.write_parquet(root / f"{name}.parquet")
    _scored(ref, lr, class_list()).write_parquet(root / "reference.parquet")
    _scored(test, lr, class_list()).write_parquet(root / "test_scored.parquet")
    spec = {"name": MODEL_NAME, "task": "multiclass", "labels": class_list(),
            "data": {"train": str(root / "train.parquet"), "test": str(root / "test.parquet"),
                     "reference": str(root / "reference.parquet")},
            "columns": {"features": ["title"]}, "mlflow": {"experiment": "eval-tests", "tracking_uri": store},
            "n_boot": 100, "context": "unit tests"}
    return {"store": store, "spec": spec, "v1": v1, "v2": v2, "root": root}


def test_evaluate_with_model_logs_everything_and_promotes(models, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", models["store"])  # load_table searches through the fluent API
    out = evaluate_model(models["spec"], model_uri=models["v1"], promote_champion=True)
    assert out["created"] and out["promoted"] and out["champion"] is None
    c = MlflowClient(models["store"], registry_uri=models["store"])
    run = c.get_run(out["run_id"])
    m, tags = run.data.metrics, run.data.tags
    assert run.info.status == "FINISHED" and tags["classwatch.kind"] == "evaluate"
    head = tags["classwatch.headline"]
    assert m[f"{head}_ci_low"] <= m[head] <= m[f"{head}_ci_high"]
    assert 0.8 < m["accuracy"] <= 1 and m[logged_name("baseline_majority/accuracy")] < m["accuracy"]
    assert m["latency_ms_p50"] <= m["latency_ms_p95"] <= m["latency_ms_p99"] and m["throughput_rows_per_s"] > 0
    assert tags["classwatch.check.leakage"] in ("pass", "warn") and "classwatch.check.representativeness" in tags
    arts = {a.path for a in c.list_artifacts(out["run_id"])}
    assert PLOTS | {"per_class.json", "curves_roc.json", "curves_pr.json", "iso_report.md", "drift_table.json",
                    "baselines.json"} <= arts
    per_class = pl.from_pandas(c.load_table(run.info.experiment_id, "per_class.json", run_ids=[out["run_id"]]))
    assert sorted(per_class["class"].to_list()) == class_list()
    report = c.download_artifacts(out["run_id"], "iso_report.md")
    text = open(report).read()
    for section in ("### Context", "### Training and test data", "### Representativeness", "### Leakage",
                    "### Ground truth", "### Algorithm and hyperparameters", "### Environment", "### Baselines"):
        assert section in text
    assert "### Ground truth\n\nnot provided" in text and "unit tests" in text and "model_type" in text
    assert str(c.get_model_version_by_alias(MODEL_NAME, "champion").version) == models["v1"].rsplit("/", 1)[1]
    again = evaluate_model(models["spec"], model_uri=models["v1"])  # read back, with what the first one returned
    assert again["run_id"] == out["run_id"] and not again["created"] and not again["promoted"]
    assert {k: again[k] for k in ("headline", "recommendation", "champion")} == {
        k: out[k] for k in ("headline", "recommendation", "champion")}
    assert len(mlflow_runs(models["store"], "eval-tests", kind="evaluate")) == 1


def test_challenger_is_tested_against_the_champion(models):
    evaluate_model(models["spec"], model_uri=models["v1"], promote_champion=True)
    out = evaluate_model(models["spec"], model_uri=models["v2"])
    assert out["champion"] == models["v1"]
    m = MlflowClient(models["store"]).get_run(out["run_id"]).data.metrics
    assert 0 <= m["champion/mcnemar_p"] <= 1 and 0 < m["champion/bootstrap_p"] <= 1


def test_evaluate_scores_in_the_data_without_a_model(models):
    spec = {**models["spec"], "data": {**models["spec"]["data"], "test": str(models["root"] / "test_scored.parquet")}}
    out = evaluate_model(spec)
    run = MlflowClient(models["store"]).get_run(out["run_id"])
    assert "latency_ms_p50" not in run.data.metrics and run.data.tags["classwatch.model_uri"] == "none"
    truth = pl.read_parquet(models["root"] / "test_scored.parquet")
    assert run.data.metrics["accuracy"] == pytest.approx((truth["label"] == truth["prediction"]).mean())
    # the expenditure-weighted twin of every count-based metric
    hit = (truth["label"] == truth["prediction"]).to_numpy()
    w = truth["weight"].to_numpy()
    assert run.data.metrics["weighted/accuracy"] == pytest.approx((hit * w).sum() / w.sum(), rel=1e-12)


def test_compare_models_corrects_all_tests_together(models):
    out = compare_models(models["spec"], [models["v1"], models["v2"]])
    tests = pl.DataFrame(out["tests"])
    assert tests["test"].to_list()[:2] == ["McNemar", f"paired bootstrap ({out['metric']})"]
    p = tests["p_value"].to_numpy()
    rej, adj, _, _ = multipletests(p, alpha=0.05, method="fdr_bh")
    np.testing.assert_allclose(tests["p_adjusted"].to_numpy(), adj)
    assert tests["reject"].to_list() == rej.tolist()
    run = MlflowClient(models["store"]).get_run(out["run_id"])
    assert run.data.tags["classwatch.best"] == out["best"]
    assert {"comparison_tests.json", "per_model.json", "fold_metrics.json", "comparison.md"} <= {
        a.path for a in MlflowClient(models["store"]).list_artifacts(out["run_id"])}
    again = compare_models(models["spec"], [models["v1"], models["v2"]])  # logged: read back, not computed
    assert again["created"] is False and again["run_id"] == out["run_id"]
    assert (again["best"], again["metric"]) == (out["best"], out["metric"])
    assert_frame_equal(pl.DataFrame(again["tests"]), tests.with_columns(pl.col(pl.Float64).fill_null(float("nan"))))
    with pytest.raises(ValueError, match="at least two"):
        compare_models(models["spec"], [models["v1"]])
