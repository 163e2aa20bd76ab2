"""tasks.compare through ``.fn()``: model labels, the run key, the comparison task (metrics_core's, with the
spec's options), the compared metric, and the comparison run in a SQLite MLflow store."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
from polars.testing import assert_frame_equal
import pytest
from flow_data import mlflow_runs, scored_rows, three_models
from mlflow import MlflowClient

from metrics_core import significance as sig
from tasks.compare import (compared_metric, comparison, comparison_key, finished_comparison, log_comparison,
                           model_label)
from tasks.config.spec import load_spec
from tasks.evaluate import plan_evaluation

LABELS = ["bread", "milk", "wine"]
N = 500


@pytest.fixture(scope="module")
def rows():
    """True labels and three models: 90 % right, 70 % right and a copy of the first."""
    return three_models(LABELS, N)


def make_spec(**fields):
    return load_spec({"name": "m", "labels": LABELS, "n_boot": 50, **fields})


# ---------------------------------------------------------------- model_label and comparison_key
@pytest.mark.parametrize("uri, label", [("models:/price-classifier/2", "price-classifier v2"),
                                        ("models:/m/10", "m v10"), ("models:/m@champion", "models:/m@champion"),
                                        ("models:/m/latest", "models:/m/latest"),
                                        ("runs:/abc/model", "runs:/abc/model")])
def test_model_label(uri, label):
    assert model_label(uri) == label == model_label(uri)


@pytest.mark.parametrize("change", ["uris", "order", "cv", "spec", "source"])
def test_comparison_key_is_stable_and_changes_with_its_parts(tmp_path, change):
    uris, cv, spec, source = ["models:/m/1", "models:/m/2"], {"a": [0.8, 0.9]}, make_spec(), str(tmp_path / "t.pq")
    key = comparison_key(spec, uris, cv, source)
    assert key.startswith("compare|m|") and key == comparison_key(make_spec(), list(uris), dict(cv), source)
    changed = {"uris": (spec, [*uris, "models:/m/3"], cv, source), "order": (spec, uris[::-1], cv, source),
               "cv": (spec, uris, None, source), "spec": (make_spec(seed=1), uris, cv, source),
               "source": (spec, uris, cv, str(tmp_path / "other.pq"))}[change]
    assert comparison_key(*changed) != key


# ---------------------------------------------------------------- comparison
@pytest.mark.parametrize("fields", [{}, {"alerts": {"correction": "holm", "alpha": 0.1}, "seed": 3, "beta": 2.0}])
def test_comparison_is_metrics_core_with_the_spec_options(rows, fields):
    """The task computes nothing itself: metrics_core's comparison with the spec's task, correction, alpha,
    bootstrap replicates, seed and beta (tested there, tests/metrics_core/significance/test_model_comparison.py)."""
    y, preds = rows
    spec = make_spec(**fields)
    chosen = {m: preds[m] for m in ("m v1", "m v2")}
    cv = {"m v1": [0.9, 0.88, 0.91], "m v2": [0.7, 0.74, 0.69]}
    out = comparison.fn(spec, LABELS, y, chosen, "fbeta_macro", cv, 300, 100)
    want = sig.model_comparison("multiclass", LABELS, y, chosen, "fbeta_macro", cv_scores=cv, cv_n_train=300,
                                cv_n_test=100, alpha=spec.alerts.alpha, correction=spec.alerts.correction,
                                n_boot=spec.n_boot, seed=spec.seed, beta=spec.beta)
    assert out.keys() == want.keys() == {"per_model", "tests", "folds", "best", "metric"}
    for k in ("per_model", "tests", "folds"):
        assert_frame_equal(out[k], want[k])
    assert (out["best"], out["metric"]) == (want["best"], want["metric"])
    if fields:  # the options reach the computation: the defaults give other folds and corrected p-values
        default = comparison.fn(make_spec(), LABELS, y, chosen, "fbeta_macro", cv, 300, 100)
        assert not default["folds"].equals(out["folds"])
        assert not np.allclose(default["tests"]["p_adjusted"].to_numpy(), out["tests"]["p_adjusted"].to_numpy())


# ---------------------------------------------------------------- compared_metric
@pytest.fixture(scope="module")
def test_source(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("compare-data") / "test.parquet"
    scored_rows(600, 3, "2024-01").write_parquet(path)
    return str(path)


@pytest.mark.parametrize("headline, metric", [("f1_macro", "f1_macro"), ("auroc_ovr_macro", "balanced_accuracy"),
                                              (None, "fbeta_micro")])
def test_compared_metric_is_a_label_metric(test_source, headline, metric):
    from flow_data import LABELS as CLASSES

    spec = load_spec({"labels": CLASSES, "headline_metric": headline, "data": {"test": test_source}})
    # one period of test data: stability not measured, ONS Table 2 "no": micro F-beta
    assert compared_metric.fn(spec, plan_evaluation.fn(spec)) == metric


# ---------------------------------------------------------------- log_comparison and finished_comparison
@pytest.mark.slow
def test_log_comparison_is_idempotent_by_key(rows, store, test_source):
    y, preds = rows
    spec = make_spec(mlflow={"experiment": "unit-compare", "tracking_uri": store})
    uris = ["models:/m/1", "models:/m/2", "models:/m/3"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = comparison.fn(spec, LABELS, y, preds, "accuracy")
    key = comparison_key(spec, uris, None, test_source)
    assert finished_comparison.fn(spec, key) is None
    run_id, created, metrics = log_comparison.fn(spec, key, uris, "accuracy", test_source, result, False)
    again = log_comparison.fn(spec, key, uris, "accuracy", test_source, result, False)
    assert created and again == (run_id, False, metrics)
    assert len(mlflow_runs(store, "unit-compare")) == 1
    assert metrics["n_rejected"] == int(result["tests"]["reject"].sum())
    assert metrics["model_1/accuracy"] == pytest.approx(np.mean(preds["m v2"] == y))
    assert set(metrics) == {"n_rejected"} | {f"model_{i}/{k}" for i in range(3)
                                             for k in ("accuracy", "balanced_accuracy")}

    c = MlflowClient(store)
    run = c.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags["classwatch.best"] == result["best"]
    models = ", ".join(result["per_model"]["model"])
    assert run.data.tags["mlflow.note.content"].startswith(f"Comparison of 3 models ({models})")
    assert run.data.tags["classwatch.kind"] == "compare" and run.data.params["compared_metric"] == "accuracy"
    assert [run.data.params[f"model_{i}"] for i in range(3)] == uris
    assert run.data.metrics["n_rejected"] == metrics["n_rejected"]
    assert {a.path for a in c.list_artifacts(run_id)} == {"comparison_tests.json", "per_model.json",
                                                          "fold_metrics.json", "comparison.md"}
    text = open(c.download_artifacts(run_id, "comparison.md")).read()
    assert f"Best on the test set: **{result['best']}**." in text
    summary = finished_comparison.fn(spec, key)  # read back in the shape compare_models returns
    assert {k: v for k, v in summary.items() if k != "tests"} == {
        "run_id": run_id, "best": result["best"], "metric": "accuracy", "metrics": pytest.approx(metrics)}
    # JSON keeps no NaN: a float column's null and NaN (no such test, no interval) both come back NaN
    assert_frame_equal(pl.DataFrame(summary["tests"]), result["tests"].with_columns(pl.col(pl.Float64).fill_null(
        float("nan"))))
