"""tasks.compare through ``.fn()``: model labels, the run key, fold metrics, the clause-7 tests corrected
together, the compared metric, and the comparison run in a SQLite MLflow store."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
from polars.testing import assert_frame_equal
import pytest
from flow_data import mlflow_runs, scored_rows
from mlflow import MlflowClient
from statsmodels.stats.multitest import multipletests

import metrics_core as mc
from metrics_core import significance as sig
from tasks.compare import (FOLDS, compare, compared_metric, comparison_key, finished_comparison, fold_metrics,
                           log_comparison, model_label)
from tasks.config.spec import load_spec
from tasks.evaluate import plan_evaluation

LABELS = ["bread", "milk", "wine"]
N = 500  # a multiple of FOLDS: equal folds
STATSMODELS = {"bh": "fdr_bh", "holm": "holm", "bonferroni": "bonferroni"}


@pytest.fixture(scope="module")
def rows():
    """True labels and three models: 90 % right, 70 % right and a copy of the first."""
    rng = np.random.default_rng(11)
    y = np.asarray(LABELS)[rng.choice(3, N, p=[0.5, 0.3, 0.2])]

    def model(p_right: float) -> np.ndarray:
        return np.where(rng.random(N) < p_right, y, np.asarray(LABELS)[rng.integers(0, 3, N)])

    good, weak = model(0.9), model(0.7)
    return y, {"m v1": good, "m v2": weak, "m v1 copy": good.copy()}


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


# ---------------------------------------------------------------- fold_metrics
def test_fold_metrics_split_the_rows_into_equal_disjoint_folds(rows):
    y, preds = rows
    spec = make_spec()
    folds = fold_metrics(spec, LABELS, y, preds, "accuracy")
    assert folds.columns == ["model", "fold", "accuracy"] and folds.height == len(preds) * FOLDS
    for name, pred in preds.items():
        part = folds.filter(pl.col("model") == name)
        assert part["fold"].to_list() == list(range(FOLDS))
        # equal folds: the mean of the fold accuracies is the accuracy of all rows
        assert part["accuracy"].mean() == pytest.approx(np.mean(pred == y), rel=1e-12)
    assert folds.equals(fold_metrics(spec, LABELS, y, preds, "accuracy"))
    assert not folds.equals(fold_metrics(make_spec(seed=1), LABELS, y, preds, "accuracy"))


# ---------------------------------------------------------------- compare
@pytest.mark.parametrize("correction", ["bh", "holm", "bonferroni"])
@pytest.mark.parametrize("models, cv", [(["m v1", "m v2"], None),
                                        (["m v1", "m v2", "m v1 copy"], {"m v1": [0.9, 0.88, 0.91],
                                                                         "m v2": [0.7, 0.74, 0.69]})],
                         ids=["two-models", "three-models-and-cv"])
def test_compare_corrects_every_p_value_together(rows, correction, models, cv):
    y, all_preds = rows
    preds = {m: all_preds[m] for m in models}
    spec = make_spec(alerts={"correction": correction})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the copy: a paired t-test of zero differences is nan
        out = compare.fn(spec, LABELS, y, preds, "f1_macro", cv, 300 if cv else None, 100 if cv else None)
    tests = out["tests"]
    pairs = len(models) * (len(models) - 1) // 2
    assert tests.height == 3 * pairs + (1 if cv else 0) + (2 if len(models) >= 3 else 0)
    assert tests["test"].to_list()[:3] == ["McNemar", "paired bootstrap (f1_macro)",
                                           f"paired t-test over {FOLDS} test folds"]
    p, adjusted = tests["p_value"].to_numpy(), tests["p_adjusted"].to_numpy()
    ok = np.isfinite(p)
    expected = sig.correct(p[ok], correction, spec.alerts.alpha)
    np.testing.assert_allclose(adjusted[ok], expected.p_adjusted, rtol=1e-12)
    assert tests["reject"].to_numpy()[ok].tolist() == expected.reject.tolist()
    reject, oracle, _, _ = multipletests(p[ok], alpha=spec.alerts.alpha, method=STATSMODELS[correction])
    np.testing.assert_allclose(adjusted[ok], oracle, rtol=1e-12)
    assert np.isnan(adjusted[~ok]).all() and not tests["reject"].to_numpy()[~ok].any()
    assert ok.sum() == tests.height - (1 if len(models) >= 3 else 0)  # only the copy's fold t-test is undefined

    first = tests.row(0, named=True)
    direct = sig.mcnemar(y, preds["m v1"], preds["m v2"])
    assert (first["model_a"], first["model_b"], first["statistic"], first["p_value"]) == (
        "m v1", "m v2", direct.statistic, direct.p_value)
    if cv:
        row = tests.filter(pl.col("test").str.ends_with("(CV scores)")).row(0, named=True)
        res = sig.corrected_resampled_t_test(cv["m v1"], cv["m v2"], 300, 100)
        assert (row["test"], row["p_value"]) == ("corrected resampled t-test (CV scores)", res.p_value)
    if len(models) >= 3:
        assert tests["test"].to_list()[-2:] == ["ANOVA over folds", "Kruskal-Wallis over folds"]


def test_compare_per_model_metrics_and_the_best(rows):
    y, preds = rows
    out = compare.fn(make_spec(), LABELS, y, {m: preds[m] for m in ("m v2", "m v1")}, "f1_macro")
    per_model = out["per_model"]
    assert per_model.columns == ["model", "f1_macro", "accuracy", "balanced_accuracy"]
    for row in per_model.iter_rows(named=True):
        report = mc.multiclass_report(y, preds[row["model"]], labels=LABELS)
        assert {k: row[k] for k in per_model.columns[1:]} == pytest.approx(
            {k: report.metrics[k] for k in per_model.columns[1:]})
    assert out["best"] == "m v1" and out["metric"] == "f1_macro"
    assert out["folds"].equals(fold_metrics(make_spec(), LABELS, y, {m: preds[m] for m in ("m v2", "m v1")},
                                            "f1_macro"))


def test_cv_scores_without_sizes_use_the_paired_t_test(rows):
    y, preds = rows
    cv = {"m v1": [0.9, 0.88, 0.91], "m v2": [0.7, 0.74, 0.69]}
    out = compare.fn(make_spec(), LABELS, y, {m: preds[m] for m in ("m v1", "m v2")}, "accuracy", cv)
    row = out["tests"].row(-1, named=True)
    assert row["test"] == "paired t-test (CV scores)"
    assert row["p_value"] == sig.paired_t_test(cv["m v1"], cv["m v2"]).p_value


def test_binary_compare_uses_the_positive_class():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 400)
    a, b = np.where(rng.random(400) < 0.85, y, 1 - y), np.where(rng.random(400) < 0.6, y, 1 - y)
    out = compare.fn(load_spec({"task": "binary", "n_boot": 50}), [0, 1], y, {"a": a, "b": b}, "f1")
    assert out["per_model"]["f1"].to_list() == pytest.approx(
        [mc.binary_report(y, y_pred=p, pos_label=1).metrics["f1"] for p in (a, b)])
    assert out["best"] == "a"


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
        result = compare.fn(spec, LABELS, y, preds, "accuracy")
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
