"""tasks.evaluate through ``.fn()``: plan, statistics and report, data checks, drift, ONS recommendation,
and (with tiny scikit-learn models registered in a SQLite MLflow store) predict and the champion test."""

from __future__ import annotations

import os

import numpy as np
import polars as pl
import pytest
from flow_data import LABELS, scored_rows

import metrics_core as mc
from metrics_core.errors import InputError
from metrics_core.significance import mcnemar, paired_bootstrap
from tasks.config.spec import load_spec
from tasks.store.mlflow import process_uris
from tasks.evaluate import (Predictions, build_report, champion_comparison, data_checks, evaluation_stats,
                            label_metric, model_description, plan_evaluation, predict, recommendation,
                            reference_drift)

REF_PERIODS = ["2023-10", "2023-11", "2023-12"]
SCORES = [f"score_{c}" for c in LABELS]


def with_features(frame: pl.DataFrame, seed: int, shift: float = 0.0) -> pl.DataFrame:
    """Two feature columns that do not give the label away: a number and a shop name."""
    rng = np.random.default_rng(seed)
    return frame.with_columns(x=rng.standard_normal(frame.height) + shift,
                              shop=rng.choice(["tesco", "asda", "lidl"], frame.height))


def binary_rows(n: int, seed: int, period: str) -> pl.DataFrame:
    """Binary rows: label 0/1 (30 % positive), score, prediction = score >= 0.5, price, weight."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    score = np.round(np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1), 4)
    price = np.round(np.exp(rng.standard_normal(n)) + 1, 2)
    return pl.DataFrame({"id": [f"{period}-{i}" for i in range(n)], "label": y, "score": score,
                         "prediction": (score >= 0.5).astype(np.int64), "price": price, "weight": price * 2,
                         "period": [period] * n})


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("evaluate-data")
    ref = pl.concat([with_features(scored_rows(800, i, p), i) for i, p in enumerate(REF_PERIODS)])
    test = with_features(scored_rows(1500, 7, "2024-01"), 7)
    leaked = test.with_columns(  # row 0 carries a reference id, row 1 repeats a reference row's features
        id=pl.when(pl.int_range(pl.len()) == 0).then(pl.lit(ref["id"][5])).otherwise("id"),
        x=pl.when(pl.int_range(pl.len()) == 1).then(pl.lit(ref["x"][10])).otherwise("x"),
        shop=pl.when(pl.int_range(pl.len()) == 1).then(pl.lit(ref["shop"][10])).otherwise("shop"))
    history_shift = pl.concat([ref.filter(pl.col("period") != "2023-12"),
                               with_features(scored_rows(800, 2, "2023-12", prevalence=(2, 0.12)), 2)])
    frames = {
        "ref": ref, "test": test, "leaked": leaked, "copy": ref, "history_shift": history_shift,
        "shifted": with_features(scored_rows(1500, 8, "2024-01", prevalence=(2, 0.12)), 8, shift=1.0),
        "one_period": ref.filter(pl.col("period") == "2023-10"),
        "ref_stamped": ref.with_columns(period=(pl.col("period").str.to_datetime("%Y-%m") + pl.duration(
            minutes=pl.int_range(pl.len()) % 1000)).dt.replace_time_zone("Europe/London")),
        "ref_row_ids": ref.with_columns(period=pl.int_range(pl.len()).cast(pl.String)),
        "bare": test.select("label", "prediction"),
        "binary_ref": binary_rows(1500, 1, "2023-12"), "binary_test": binary_rows(1200, 2, "2024-01"),
        "binary_same": binary_rows(1200, 4, "2024-01"),
        "binary_shift": binary_rows(1200, 3, "2024-01").with_columns(  # 15 % of the labels turned positive
            label=pl.when(pl.int_range(pl.len()) % 7 == 0).then(1).otherwise("label")),
    }
    for name, frame in frames.items():
        frame.write_parquet(root / f"{name}.parquet")
    return {name: str(root / f"{name}.parquet") for name in frames} | {"store": f"sqlite:///{root / 'mlflow.db'}"}


def make_spec(data, test="test", reference="ref", task="multiclass", **fields):
    raw = {"name": "m", "task": task, "data": {"test": data[test], "reference": data[reference] if reference else None},
           "mlflow": {"experiment": "unit", "tracking_uri": data["store"]}, "n_boot": 50, **fields}
    if task == "multiclass":
        raw.setdefault("labels", LABELS)
    return load_spec(raw)


# ---------------------------------------------------------------- plan_evaluation
@pytest.mark.parametrize("test, task, expected", [
    ("test", "multiclass", {"label": "label", "prediction": "prediction", "scores": SCORES, "price": "price",
                            "weight": "weight", "id": "id", "labels": LABELS}),
    ("bare", "multiclass", {"label": "label", "prediction": "prediction", "scores": [], "price": None,
                            "weight": None, "id": None, "labels": LABELS}),
    ("binary_test", "binary", {"label": "label", "prediction": "prediction", "scores": ["score"], "price": "price",
                               "weight": "weight", "id": "id", "labels": [0, 1]}),
])
def test_plan_layout_names_the_columns_present(data, test, task, expected):
    plan = plan_evaluation.fn(make_spec(data, test=test, reference=None, task=task))
    lay = plan.test_layout
    assert {k: getattr(lay, k) for k in expected} == expected
    assert plan.labels == expected["labels"] and plan.test == data[test]
    assert plan.reference is None and plan.ref_layout is None and plan.model_uri is None


def test_plan_maps_the_reference_and_the_features(data):
    plan = plan_evaluation.fn(make_spec(data, columns={"features": ["x", "shop"]}))
    assert plan.reference == data["ref"] and plan.ref_layout.scores == SCORES
    assert plan.test_layout.features == plan.ref_layout.features == ["x", "shop"]


def test_plan_labels_from_the_data_when_the_spec_has_none(data):
    plan = plan_evaluation.fn(make_spec(data, labels=None))
    assert plan.labels == sorted(pl.read_parquet(data["test"])["label"].unique().to_list())


@pytest.mark.parametrize("fields, message", [
    ({"columns": {"label": "truth"}}, "missing column 'truth' \\(label\\)"),
    ({"columns": {"features": ["title"]}}, "missing column 'title' \\(features\\)"),
    ({"columns": {"weight": "expenditure"}}, "missing column 'expenditure' \\(weight\\)"),
])
def test_plan_names_a_missing_column(data, fields, message):
    with pytest.raises(InputError, match=message):
        plan_evaluation.fn(make_spec(data, **fields))


# ---------------------------------------------------------------- evaluation_stats and build_report
def same_metrics(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    np.testing.assert_allclose([a[k] for k in sorted(a)], [b[k] for k in sorted(a)], rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("task, test", [("multiclass", "test"), ("binary", "binary_test")])
def test_report_equals_metrics_core_on_the_same_rows(data, task, test):
    spec = make_spec(data, test=test, reference=None, task=task, beta=2.0)
    plan = plan_evaluation.fn(spec)
    report = build_report.fn(spec, evaluation_stats.fn(spec, plan))
    rows = pl.read_parquet(data[test])
    y, w = rows["label"].to_numpy(), rows["weight"].to_numpy()
    options = {"beta": 2.0, "n_boot": 50, "seed": 0, "level": 0.95}
    if task == "binary":
        expected = mc.binary_report(y, rows["score"].to_numpy(), rows["prediction"].to_numpy(), **options)
    else:
        expected = mc.multiclass_report(y, rows["prediction"].to_numpy(), y_score=rows.select(SCORES).to_numpy(),
                                        labels=LABELS, **options)
    twin = {k: v for k, v in report.metrics.items() if k.startswith("weighted/")}
    same_metrics({k: v for k, v in report.metrics.items() if k not in twin}, expected.metrics)
    hit = y == rows["prediction"].to_numpy()
    assert twin["weighted/accuracy"] == pytest.approx((hit * w).sum() / w.sum(), rel=1e-12)
    assert report.intervals["accuracy"] == pytest.approx(expected.intervals["accuracy"])
    for name, values in expected.baselines.items():
        same_metrics(report.baselines[name], values)


@pytest.mark.parametrize("task, test", [("multiclass", "test"), ("binary", "binary_test")])
def test_statistics_of_predictions_equal_statistics_of_the_file(data, task, test):
    spec = make_spec(data, test=test, reference=None, task=task)
    plan = plan_evaluation.fn(spec)
    rows = pl.read_parquet(data[test])
    scores = rows["score"].to_numpy() if task == "binary" else rows.select(SCORES).to_numpy()
    preds = Predictions(rows["label"].to_numpy(), rows["prediction"].to_numpy(), scores, {},
                        {"price": rows["price"].to_numpy(), "weight": rows["weight"].to_numpy()})
    from_file = build_report.fn(spec, evaluation_stats.fn(spec, plan))
    in_memory = build_report.fn(spec, evaluation_stats.fn(spec, plan, preds))
    same_metrics(in_memory.metrics, from_file.metrics)


# ---------------------------------------------------------------- data_checks
@pytest.mark.parametrize("test, status, overlap, duplicates", [("test", "pass", 0, 0), ("leaked", "fail", 1, 1)])
def test_leakage_finds_a_planted_id_and_row(data, test, status, overlap, duplicates):
    spec = make_spec(data, test=test, columns={"features": ["x", "shop"]})
    checks = data_checks.fn(spec, plan_evaluation.fn(spec))
    leak = checks["leakage"]
    assert leak.status == status
    assert leak.figures["n_id_overlap"] == overlap and leak.figures["n_duplicate_rows"] == duplicates
    assert leak.figures["n_train"] == 3 * 800 and leak.figures["n_test"] == 1500
    if overlap:
        row = leak.table.filter(pl.col("check") == "id_overlap").row(0, named=True)
        assert row["flagged"] and row["example"] == repr(pl.read_parquet(data["ref"])["id"][5])


def test_representativeness_flags_a_shifted_feature_and_not_a_copy(data):
    results = {}
    for test in ("copy", "shifted"):
        spec = make_spec(data, test=test, columns={"features": ["x", "shop"]})
        results[test] = data_checks.fn(spec, plan_evaluation.fn(spec))["representativeness"]
    assert results["copy"].status == "pass" and results["copy"].figures["n_shifted_features"] == 0
    shifted = results["shifted"]
    assert shifted.status != "pass" and shifted.figures["n_shifted_features"] >= 1
    flagged = shifted.table.filter(pl.col("flagged") & (pl.col("kind") == "feature"))["name"].to_list()
    assert "x" in flagged and "shop" not in flagged


def test_the_training_source_is_preferred_to_the_reference(data):
    spec = load_spec(make_spec(data, test="leaked", columns={"features": ["x"]}), data={"train": data["one_period"]})
    leak = data_checks.fn(spec, plan_evaluation.fn(spec))["leakage"]
    assert leak.figures["n_train"] == 800


def test_checks_without_reference_or_features(data):
    spec = make_spec(data, reference=None)
    assert data_checks.fn(spec, plan_evaluation.fn(spec)) == {}
    spec = make_spec(data)  # no features: only the price column is compared, no leakage check
    checks = data_checks.fn(spec, plan_evaluation.fn(spec))
    assert set(checks) == {"representativeness"}
    assert checks["representativeness"].table.filter(pl.col("kind") == "feature")["name"].to_list() == ["price"]


# ---------------------------------------------------------------- reference_drift
@pytest.mark.parametrize("task, test, reference, flagged", [
    ("multiclass", "copy", "ref", set()),
    ("multiclass", "shifted", "ref", {"prevalence_label:item_2", "prevalence_pred:item_2"}),
    # another sample of the same distribution. (binary_test is one too, but by chance the median price of its
    # label-1 rows is 10.3% above the reference's, scipy's KS p = 0.011: a true alarm of the labelled-class
    # price test; the alarm rate over many stable samples is tested in tests/metrics_core/monitoring/test_kinds.py.)
    ("binary", "binary_same", "binary_ref", set()),
    ("binary", "binary_shift", "binary_ref", {"prevalence_label:1"}),
])
def test_drift_flags_a_planted_prevalence_shift_and_not_a_stable_sample(data, task, test, reference, flagged):
    spec = make_spec(data, test=test, reference=reference, task=task)
    table = reference_drift.fn(spec, plan_evaluation.fn(spec))
    assert table.columns[:2] == ["name", "test"] and table.height > 0
    drifted = set(table.filter(pl.col("drift"))["name"])
    assert flagged <= drifted and bool(drifted) == bool(flagged)
    if test == "copy":
        assert table["p_adjusted"].min() > spec.alerts.alpha


def test_drift_of_predictions_equals_drift_of_the_file(data):
    spec = make_spec(data, test="shifted")
    plan = plan_evaluation.fn(spec)
    rows = pl.read_parquet(data["shifted"])
    preds = Predictions(rows["label"].to_numpy(), rows["prediction"].to_numpy(), rows.select(SCORES).to_numpy(),
                        {}, {"price": rows["price"].to_numpy(), "weight": rows["weight"].to_numpy()})
    from_file, in_memory = reference_drift.fn(spec, plan), reference_drift.fn(spec, plan, preds)
    assert in_memory.drop("verdict").equals(from_file.drop("verdict"))


def test_no_drift_table_without_a_reference(data):
    spec = make_spec(data, reference=None)
    assert reference_drift.fn(spec, plan_evaluation.fn(spec)) is None


# ---------------------------------------------------------------- recommendation
@pytest.mark.parametrize("reference, prevalence_stable, metric", [
    ("ref", True, "fbeta_of_weighted"), ("ref_stamped", True, "fbeta_of_weighted"), ("history_shift", False, None),
    ("one_period", None, "fbeta_micro"), ("ref_row_ids", None, "fbeta_micro")])
def test_recommendation_from_the_stability_of_the_reference_periods(data, reference, prevalence_stable, metric):
    spec = make_spec(data, reference=reference)
    rec = recommendation.fn(spec, plan_evaluation.fn(spec))
    assert rec["prevalence_stable"] is prevalence_stable
    if reference == "ref_stamped":  # timestamps are months: the same measurement as the written-out periods
        written = recommendation.fn(make_spec(data), plan_evaluation.fn(make_spec(data)))
        assert rec["stability_reason"] == written["stability_reason"] and rec["price_stable"] == written["price_stable"]
    if reference == "ref_row_ids":  # no period column, though it is called one: advice not measured, not failed
        assert "Is it the period column?" in rec["stability_reason"]
    if prevalence_stable is None:  # one period: stability cannot be measured, treated as unstable
        assert rec["price_stable"] is None and rec["stability_reason"].startswith("Stability not measured")
        assert rec["recommendation"] == mc.recommend("multiclass", False, False)
    else:
        assert rec["recommendation"] == mc.recommend("multiclass", prevalence_stable, rec["price_stable"])
    if prevalence_stable is False:  # the reason names the class that moved
        assert "class 'item_2'" in rec["stability_reason"]
    if metric:
        assert rec["recommendation"].metric == metric


@pytest.mark.parametrize("headline, metric", [("f1_macro", "f1_macro"), ("mcc", "mcc"),
                                              ("auroc_ovr_macro", "balanced_accuracy"),
                                              ("log_loss", "balanced_accuracy")])
def test_label_metric(headline, metric):
    assert label_metric(headline) == metric


# ---------------------------------------------------------------- predict and champion_comparison (MLflow models)
MODEL = "tiny-classifier"
CLASSES = ["a", "b", "c"]


def features(n: int, seed: int):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    x = rng.standard_normal((n, 2)) + np.array([[0.0, 0.0], [1.5, 0.0], [0.0, 1.5]])[y]
    return pl.DataFrame({"id": np.arange(n), "x1": x[:, 0], "x2": x[:, 1], "label": np.asarray(CLASSES)[y]})


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two logistic regressions (strong and weak regularisation) registered as MODEL v1, v2, and a binary one."""
    import mlflow
    from mlflow import MlflowClient
    from sklearn.linear_model import LogisticRegression

    root = tmp_path_factory.mktemp("evaluate-models")
    store = f"sqlite:///{root / 'mlflow.db'}"
    train, test = features(400, 0), features(300, 1)
    test.write_parquet(root / "test.parquet")
    test.with_columns(label=(pl.col("label") == "c").cast(pl.Int64)).write_parquet(root / "binary.parquet")
    fitted, uris = {}, {}
    inputs = train.select("x1", "x2").to_pandas()
    with process_uris(store):
        experiment = MlflowClient(store).create_experiment("models")
        for name, registered, c, y in (("v1", MODEL, 1.0, train["label"]), ("v2", MODEL, 0.002, train["label"]),
                                       ("binary", f"{MODEL}-binary", 1.0, (train["label"] == "c").cast(pl.Int64))):
            est = LogisticRegression(C=c).fit(inputs, y.to_numpy())
            with mlflow.start_run(experiment_id=experiment):
                mlflow.log_params({"C": c})
                info = mlflow.sklearn.log_model(est, name="model", registered_model_name=registered,
                                                pyfunc_predict_fn="predict_proba", pip_requirements=["scikit-learn"],
                                                metadata={"classes": [str(k) for k in est.classes_]})
            fitted[name], uris[name] = est, f"models:/{registered}/{info.registered_model_version}"
    return {"store": store, "test": str(root / "test.parquet"), "binary": str(root / "binary.parquet"),
            "fitted": fitted, "uris": uris, "rows": test}


@pytest.fixture
def model_spec(models):
    def build(uri: str | None = None, **fields):
        raw = {"name": MODEL, "task": "multiclass", "data": {"test": models["test"]}, "model_uri": uri,
               "columns": {"features": ["x1", "x2"]}, "n_boot": 50,
               "mlflow": {"experiment": "unit", "tracking_uri": models["store"]}, **fields}
        return load_spec(raw)

    return build  # the tasks leave MLflow's process-wide URIs alone (asserted below)


@pytest.fixture
def champion(models):
    """The registry alias ``champion`` on v2 for one test."""
    from mlflow import MlflowClient

    c = MlflowClient(models["store"], registry_uri=models["store"])
    c.set_registered_model_alias(MODEL, "champion", models["uris"]["v2"].rsplit("/", 1)[1])
    yield models["uris"]["v2"]
    c.delete_registered_model_alias(MODEL, "champion")


@pytest.mark.slow
def test_plan_with_a_model_needs_its_features(models, model_spec):
    plan = plan_evaluation.fn(model_spec(models["uris"]["v1"]))
    lay = plan.test_layout
    assert plan.model_uri == models["uris"]["v1"] and plan.labels == CLASSES
    assert (lay.label, lay.prediction, lay.scores, lay.features, lay.id) == ("label", None, [], ["x1", "x2"], "id")
    with pytest.raises(InputError, match="columns.features"):
        plan_evaluation.fn(model_spec(models["uris"]["v1"], columns={}))


@pytest.mark.slow
@pytest.mark.parametrize("labels", [None, ["c", "a", "b"]])
def test_predict_scores_the_rows_in_the_order_of_the_class_list(models, model_spec, labels):
    spec = model_spec(models["uris"]["v1"], labels=labels)
    plan = plan_evaluation.fn(spec)
    preds = predict.fn(spec, plan)
    est, rows = models["fitted"]["v1"], models["rows"]
    proba = est.predict_proba(rows.select("x1", "x2").to_pandas())
    order = [list(est.classes_).index(c) for c in plan.labels]
    np.testing.assert_allclose(preds.y_score, proba[:, order], rtol=1e-12)
    assert preds.y_pred.tolist() == est.predict(rows.select("x1", "x2").to_pandas()).tolist()
    assert preds.y_true.tolist() == rows["label"].to_list()
    t = preds.timing
    assert t["latency_ms_p50"] <= t["latency_ms_p95"] <= t["latency_ms_p99"] and t["latency_rows"] == 100
    assert t["throughput_rows_per_s"] == pytest.approx(300 / t["batch_predict_seconds"])
    report = build_report.fn(spec, evaluation_stats.fn(spec, plan, preds))
    assert report.metrics["accuracy"] == pytest.approx(np.mean(preds.y_pred == preds.y_true))


@pytest.mark.slow
def test_no_champion_no_comparison(models, model_spec):
    spec = model_spec(models["uris"]["v1"])
    plan = plan_evaluation.fn(spec)
    assert champion_comparison.fn(spec, plan, predict.fn(spec, plan), "f1_macro") is None


@pytest.mark.slow
@pytest.mark.parametrize("headline, metric", [("f1_macro", "f1_macro"), ("auroc_ovr_macro", "balanced_accuracy")])
def test_challenger_is_tested_against_the_champion(models, model_spec, champion, headline, metric):
    spec = model_spec(models["uris"]["v1"])
    plan = plan_evaluation.fn(spec)
    preds = predict.fn(spec, plan)
    out = champion_comparison.fn(spec, plan, preds, headline)
    assert out["champion_uri"] == champion and str(out["champion_version"]) == champion.rsplit("/", 1)[1]
    assert out["metric"] == metric
    rows = models["rows"]
    y = rows["label"].to_numpy()
    new, old = (models["fitted"][v].predict(rows.select("x1", "x2").to_pandas()) for v in ("v1", "v2"))
    expected = mcnemar(y, new, old)
    assert (out["mcnemar"].statistic, out["mcnemar"].p_value) == (expected.statistic, expected.p_value)
    boot = paired_bootstrap(metric, y, new, old, n_boot=50, seed=0, task="multiclass", labels=CLASSES)
    assert out["bootstrap"].statistic == pytest.approx(boot.statistic)
    assert out["bootstrap"].interval == pytest.approx(boot.interval)


@pytest.mark.slow
@pytest.mark.parametrize("alias", [False, True])
def test_the_champion_is_not_compared_with_itself(models, model_spec, champion, alias):
    uri = f"models:/{MODEL}@champion" if alias else champion
    spec = model_spec(uri)
    plan = plan_evaluation.fn(spec)
    assert champion_comparison.fn(spec, plan, predict.fn(spec, plan), "f1_macro") is None


@pytest.mark.slow
def test_binary_predictions_follow_the_spec_threshold(models, model_spec):
    """The predicted class of a binary model is score >= spec.threshold, as in the report (not the argmax)."""
    spec = model_spec(models["uris"]["binary"], task="binary", threshold=0.8, data={"test": models["binary"]})
    plan = plan_evaluation.fn(spec)
    preds = predict.fn(spec, plan)
    assert plan.labels == [0, 1]
    proba = models["fitted"]["binary"].predict_proba(models["rows"].select("x1", "x2").to_pandas())[:, 1]
    np.testing.assert_allclose(preds.y_score, proba, rtol=1e-12)
    assert preds.y_pred.tolist() == (proba >= 0.8).astype(int).tolist() != (proba >= 0.5).astype(int).tolist()
    report = build_report.fn(spec, evaluation_stats.fn(spec, plan, preds))
    assert report.metrics["accuracy"] == pytest.approx(np.mean(preds.y_pred == preds.y_true))


@pytest.mark.slow
def test_the_tasks_leave_the_process_wide_mlflow_uris_alone(models, model_spec):
    import mlflow

    def uris():
        return (mlflow.get_tracking_uri(), mlflow.get_registry_uri(), os.environ.get("MLFLOW_TRACKING_URI"),
                os.environ.get("MLFLOW_REGISTRY_URI"))

    before = uris()
    assert models["store"] not in before
    spec = model_spec(models["uris"]["v1"])
    plan = plan_evaluation.fn(spec)
    champion_comparison.fn(spec, plan, predict.fn(spec, plan), "f1_macro")
    assert model_description(plan.model_uri, models["store"])["params"] == {"C": "1.0"}
    assert uris() == before


# ---------------------------------------------------------------- calibration (helper E)
@pytest.mark.parametrize("task, test", [("multiclass", "test"), ("binary", "binary_test")])
def test_calibration_of_the_file_and_of_predictions_agree_with_sklearn(data, task, test, tmp_path):
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss

    from tasks.evaluate import evaluation_calibration
    from tasks.render.calibration import plot_reliability

    spec = make_spec(data, test=test, reference=None, task=task)
    plan = plan_evaluation.fn(spec)
    report = build_report.fn(spec, evaluation_stats.fn(spec, plan))
    from_file = evaluation_calibration.fn(spec, plan, report)
    rows = pl.read_parquet(data[test])
    y = rows["label"].to_numpy()
    if task == "binary":
        s, hit, conf = rows["score"].to_numpy(), y == 1, rows["score"].to_numpy()
        assert report.metrics["brier"] == pytest.approx(brier_score_loss(y, s), abs=1e-12)
    else:
        s = rows.select(SCORES).to_numpy()
        pred = s.argmax(axis=1)
        conf, hit = s.max(axis=1), np.asarray(LABELS)[pred] == y
    prob_true, prob_pred = calibration_curve(hit, conf, n_bins=10)
    diagram = from_file.diagrams["top_label" if task == "multiclass" else "1"][0]
    np.testing.assert_allclose(diagram.observed[diagram.count > 0], prob_true, atol=1e-12)
    ece = float(np.sum(np.abs(np.bincount(np.minimum((conf * 10).astype(int), 9), hit - conf, 10))) / conf.size)
    assert from_file.metrics["ece_uniform"] == pytest.approx(ece, abs=1e-12)
    preds = Predictions(y, rows["prediction"].to_numpy(), s, {}, {})
    in_memory = evaluation_calibration.fn(spec, plan, report, preds)
    assert in_memory.metrics["ece_uniform"] == pytest.approx(from_file.metrics["ece_uniform"], abs=1e-12)
    assert set(from_file.bins["strategy"].unique()) == {"uniform", "quantile"}
    png = plot_reliability(from_file.diagrams, tmp_path / "reliability.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_calibration_without_scores(data):
    from tasks.evaluate import evaluation_calibration

    spec = make_spec(data, test="bare", reference=None)
    plan = plan_evaluation.fn(spec)
    assert evaluation_calibration.fn(spec, plan, build_report.fn(spec, evaluation_stats.fn(spec, plan))) is None


# ---------------------------------------------------------------- the registry trigger's model, logged as the README shows
@pytest.fixture(scope="module")
def readme_models(tmp_path_factory):
    """Classifiers logged exactly as the README's registry trigger shows (their pyfunc ``predict`` gives
    labels), multiclass and binary, and a pyfunc model that returns labels only."""
    import mlflow
    from mlflow import MlflowClient
    from sklearn.linear_model import LogisticRegression

    class LabelsOnly(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            x1, x2 = model_input["x1"].to_numpy(), model_input["x2"].to_numpy()
            return np.where(x1 > 0.75, "b", np.where(x2 > 0.75, "c", "a"))

    root = tmp_path_factory.mktemp("readme-models")
    store = f"sqlite:///{root / 'mlflow.db'}"
    train, test = features(400, 0), features(300, 1)
    test.write_parquet(root / "multiclass.parquet")
    test.with_columns(label=(pl.col("label") == "c").cast(pl.Int64)).write_parquet(root / "binary.parquet")
    inputs = train.select("x1", "x2").to_pandas()
    fitted = {"multiclass": LogisticRegression().fit(inputs, train["label"].to_numpy()),
              "binary": LogisticRegression().fit(inputs, (train["label"] == "c").cast(pl.Int64).to_numpy())}
    uris = {}
    with process_uris(store):
        experiment = MlflowClient(store).create_experiment("readme")
        for task, model in fitted.items():
            with mlflow.start_run(experiment_id=experiment):
                info = mlflow.sklearn.log_model(model, name="model", registered_model_name=f"readme-{task}")
            uris[task] = f"models:/readme-{task}/{info.registered_model_version}"
        with mlflow.start_run(experiment_id=experiment):
            info = mlflow.pyfunc.log_model(name="model", python_model=LabelsOnly(), registered_model_name="labels-only",
                                           pip_requirements=["mlflow"])
        uris["labels"] = f"models:/labels-only/{info.registered_model_version}"
    return {"store": store, "root": root, "fitted": fitted, "uris": uris, "rows": test}


def readme_spec(models, task: str, uri: str):
    return load_spec({"name": f"readme-{task}", "task": task, "model_uri": uri, "n_boot": 50,
                      "data": {"test": str(models["root"] / f"{task}.parquet")}, "columns": {"features": ["x1", "x2"]},
                      "labels": CLASSES if task == "multiclass" else [0, 1],
                      "mlflow": {"experiment": "unit", "tracking_uri": models["store"]}})


def logged_content(spec, plan, preds, plot_dir):
    """What evaluate_model would log for these predictions (the flow's tasks, in its order)."""
    from tasks.evaluate import evaluation_calibration
    from tasks.evaluate_run import Evaluation, choose_headline, run_content

    report = build_report.fn(spec, evaluation_stats.fn(spec, plan, preds))
    rec = recommendation.fn(spec, plan)
    found = Evaluation(plan, report, choose_headline.fn(spec, report, rec), data_checks.fn(spec, plan), rec, None,
                       preds.timing, reference_drift.fn(spec, plan, preds),
                       evaluation_calibration.fn(spec, plan, report, preds))
    return run_content(spec, found, str(plot_dir))


def named_files(text: str) -> set[str]:
    """The artifact file names a text mentions (``curves_*.json`` as written)."""
    import re

    return set(re.findall(r"[\w*]+\.(?:png|json)", text))


@pytest.mark.slow
@pytest.mark.parametrize("task, auroc", [("multiclass", "auroc_ovr_macro"), ("binary", "auroc")])
def test_a_model_logged_as_the_readme_shows_is_scored_with_predict_proba(readme_models, task, auroc, tmp_path):
    from fnmatch import fnmatch

    spec = readme_spec(readme_models, task, readme_models["uris"][task])
    plan = plan_evaluation.fn(spec)
    preds = predict.fn(spec, plan)
    est = readme_models["fitted"][task]
    proba = est.predict_proba(readme_models["rows"].select("x1", "x2").to_pandas())
    order = [list(est.classes_).index(c) for c in plan.labels]
    np.testing.assert_allclose(preds.y_score, proba[:, order][:, 1] if task == "binary" else proba[:, order],
                               rtol=1e-12)
    content = logged_content(spec, plan, preds, tmp_path)
    assert 0.5 < content.metrics[auroc] <= 1.0 and "log_loss" in content.metrics
    assert {"roc.png", "pr.png", "gain.png", "lift.png", "reliability.png"} <= set(content.files)
    text = content.texts["iso_report.md"]
    assert "No scores" not in text + content.tags["mlflow.note.content"] and "**warning**" not in text
    assert all(any(fnmatch(a, n) for a in [*content.files, *content.tables]) for n in named_files(text)), text


@pytest.mark.slow
def test_a_model_that_gives_labels_only_says_what_is_missing_and_why(readme_models, tmp_path):
    from tasks.evaluate import no_scores_reason

    spec = readme_spec(readme_models, "multiclass", readme_models["uris"]["labels"])
    plan = plan_evaluation.fn(spec)
    with pytest.warns(UserWarning, match=r"No scores: the model models:/labels-only/1 returned predicted labels only"):
        preds = predict.fn(spec, plan)
    x = readme_models["rows"]
    assert preds.y_score is None
    assert preds.y_pred.tolist() == np.where(x["x1"] > 0.75, "b", np.where(x["x2"] > 0.75, "c", "a")).tolist()
    content = logged_content(spec, plan, preds, tmp_path)
    reason = no_scores_reason(spec, plan.model_uri)
    assert "AUROC" in reason and "predict_proba" in reason
    assert "auroc_ovr_macro" not in content.metrics and set(content.files) == {"confusion.png"}
    assert content.tags["mlflow.note.content"].endswith(f" {reason}")
    text = content.texts["iso_report.md"]
    assert f"- **warning**: {reason}\n" in text and f"Plots: confusion.png. {reason}\n" in text
    assert named_files(text) <= set(content.files) | set(content.tables), text
