"""tasks.evaluate_run through ``.fn()``: the run key, the headline, the run's content, logging it to a
SQLite MLflow store (idempotent by key), finding it again, and promoting the champion."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from flow_data import LABELS, mlflow_runs, scored_rows
from mlflow import MlflowClient

import metrics_core as mc
from metrics_core.significance import mcnemar, paired_bootstrap
from tasks.config.spec import load_spec
from tasks.evaluate import build_report, data_checks, evaluation_stats, plan_evaluation, recommendation, reference_drift
from tasks.store.mlflow import process_uris
from tasks.evaluate_run import (Evaluation, choose_headline, finished_evaluation, log_evaluation, logged_name, promote,
                                run_content, run_key, semantic_metrics)

PLOTS = {"roc.png", "pr.png", "gain.png", "lift.png", "confusion.png"}
TABLES = {"curves_roc.json", "curves_pr.json", "curves_gain.json", "curves_lift.json", "per_class.json",
          "baselines.json", "check_leakage.json", "check_representativeness.json", "drift_table.json"}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("evaluate-run-data")
    rng = np.random.default_rng(0)
    frames = {"ref": scored_rows(1200, 0, "2023-12"), "test": scored_rows(1000, 1, "2024-01"),
              "other": scored_rows(1000, 2, "2024-01")}
    for name, frame in frames.items():
        frame.with_columns(x=rng.standard_normal(frame.height)).write_parquet(root / f"{name}.parquet")
    return {name: str(root / f"{name}.parquet") for name in frames}


def make_spec(data, store, **fields):
    return load_spec({"name": "m", "task": "multiclass", "labels": LABELS, "n_boot": 50,
                      "data": {"test": data["test"], "reference": data["ref"]}, "columns": {"features": ["x"]},
                      "mlflow": {"experiment": "unit-evaluate", "tracking_uri": store}, **fields})


def evaluate(spec, champion: dict | None = None, timing: dict | None = None) -> Evaluation:
    """What evaluate_model finds before logging, from the real tasks."""
    plan = plan_evaluation.fn(spec)
    report = build_report.fn(spec, evaluation_stats.fn(spec, plan))
    rec = recommendation.fn(spec, plan)
    headline = choose_headline.fn(spec, report, rec)
    return Evaluation(plan, report, headline, data_checks.fn(spec, plan), rec, champion, timing,
                      reference_drift.fn(spec, plan))


# ---------------------------------------------------------------- run_key
@pytest.mark.parametrize("change", [{"n_boot": 60}, {"model_uri": "models:/m/2"}, {"name": "n"},
                                    {"data": "other"}])
def test_run_key_is_stable_and_changes_with_the_spec_and_the_test_source(data, store, change):
    spec = make_spec(data, store)
    key = run_key(spec, plan_evaluation.fn(spec))
    assert key.startswith("evaluate|m|") and key == run_key(make_spec(data, store), plan_evaluation.fn(spec))
    if change.get("data"):
        other = load_spec(spec, data={"test": data[change["data"]]})
    else:
        other = load_spec(spec, **change)
    plan = plan_evaluation.fn(other.model_copy(update={"model_uri": None}))  # planning a model reads the registry
    assert run_key(other, plan) != key


# ---------------------------------------------------------------- choose_headline
@pytest.mark.parametrize("spec_headline, recommended, scores, expected", [
    ("f1_macro", "fbeta_micro", False, "f1_macro"),            # the spec's metric wins
    (None, "fbeta_micro", False, "fbeta_micro"),               # else the ONS recommendation
    (None, "auroc_ovr_macro", False, "balanced_accuracy"),     # recommended but absent: no scores
    (None, "auroc_ovr_macro", True, "auroc_ovr_macro"),
    ("auroc_ovr_macro", "fbeta_micro", False, "balanced_accuracy"),
])
def test_choose_headline(spec_headline, recommended, scores, expected):
    rng = np.random.default_rng(0)
    y = np.asarray(LABELS)[rng.integers(0, len(LABELS), 300)]
    report = mc.multiclass_report(y, y_score=rng.dirichlet(np.ones(len(LABELS)), 300) if scores else None,
                                  y_pred=None if scores else y, labels=LABELS, n_boot=50)
    rec = {"recommendation": dataclasses.replace(mc.recommend("multiclass", False, False), metric=recommended)}
    spec = load_spec({"headline_metric": spec_headline, "labels": LABELS})
    assert choose_headline.fn(spec, report, rec) == expected


# ---------------------------------------------------------------- run_content
def test_run_content_holds_metrics_intervals_baselines_checks_and_the_iso_report(data, store, tmp_path):
    spec = make_spec(data, store)
    found = evaluate(spec, timing={"latency_ms_p50": 1.5})
    content = run_content(spec, found, str(tmp_path))
    m, report = content.metrics, found.report
    assert {k: m[k] for k in report.metrics} == report.metrics
    for k, (lo, hi) in report.intervals.items():
        assert (m[f"{k}_ci_low"], m[f"{k}_ci_high"]) == (lo, hi)
    assert m[logged_name("baseline_majority/accuracy")] == report.baselines["majority"]["accuracy"]
    assert m["latency_ms_p50"] == 1.5 and m["check_leakage/n_id_overlap"] == 0
    assert m["drift_flagged"] == int(found.drift["drift"].sum())
    note = content.tags.pop("mlflow.note.content")  # the run's description, one paragraph
    assert note.startswith(f"Evaluation of the predictions in the test data on {data['test']} (1,000 rows): "
                           f"headline {found.headline} {report.metrics[found.headline]:.3f}") and "\n" not in note
    assert content.tags == {"classwatch.kind": "evaluate", "classwatch.model": "m",
                            "classwatch.headline": found.headline, "classwatch.model_uri": "none",
                            "classwatch.recommendation": found.recommendation["recommendation"].metric,
                            "classwatch.check.leakage": found.checks["leakage"].status,
                            "classwatch.check.representativeness": found.checks["representativeness"].status}
    assert set(content.tables) == TABLES and set(content.files) == PLOTS
    assert all(Path(p).is_file() and Path(p).parent == tmp_path for p in content.files.values())
    baselines = content.tables["baselines.json"]
    assert baselines.filter(pl.col("metric") == "accuracy")["model"].item() == report.metrics["accuracy"]
    assert content.params["test_source"] == data["test"] and json.loads(content.params["labels"]) == LABELS
    assert content.params["headline_metric"] == found.headline and content.params["n_boot"] == "50"
    text = content.texts["iso_report.md"]
    assert f"- headline metric ({found.headline}): {report.metrics[found.headline]:.4g}" in text
    assert f"{m['drift_flagged']} test(s) flag drift" in text and "- latency_ms_p50: 1.5" in text


def test_run_content_of_a_champion_comparison(data, store, tmp_path):
    spec = make_spec(data, store)
    rows = pl.read_parquet(data["test"])
    y, new = rows["label"].to_numpy(), rows["prediction"].to_numpy()
    old = np.where(np.arange(y.size) % 4 == 0, LABELS[0], new)
    champion = {"champion_uri": "models:/m/1", "champion_version": "1", "metric": "balanced_accuracy",
                "mcnemar": mcnemar(y, new, old),
                "bootstrap": paired_bootstrap("balanced_accuracy", y, new, old, n_boot=50, task="multiclass",
                                              labels=LABELS)}
    content = run_content(spec, evaluate(spec, champion=champion), str(tmp_path))
    b, m = champion["bootstrap"], content.metrics
    assert m["champion/mcnemar_p"] == champion["mcnemar"].p_value and m["champion/bootstrap_p"] == b.p_value
    assert (m["champion/balanced_accuracy_difference"], m["champion/balanced_accuracy_difference_ci_low"],
            m["champion/balanced_accuracy_difference_ci_high"]) == (b.statistic, *b.interval)
    assert content.tags["classwatch.champion"] == "models:/m/1"
    assert "Champion: `models:/m/1`." in content.texts["iso_report.md"]


# ---------------------------------------------------------------- log_evaluation and finished_evaluation
@pytest.mark.slow
def test_log_evaluation_is_idempotent_by_key(data, store, tmp_path):
    spec = make_spec(data, store)
    found = evaluate(spec)
    key = run_key(spec, found.plan)
    assert finished_evaluation.fn(spec, key) is None
    first = log_evaluation.fn(spec, key, found, False)
    again = log_evaluation.fn(spec, key, found, False)
    assert first.created and not again.created and again.run_id == first.run_id
    assert len(mlflow_runs(store, "unit-evaluate")) == 1
    assert not any(k.startswith("baseline_") for k in first.metrics) and again.metrics == first.metrics

    c = MlflowClient(store)
    run = c.get_run(first.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["classwatch.run_key"] == key
    assert run.data.tags["classwatch.headline"] == found.headline and run.data.tags["classwatch.kind"] == "evaluate"
    logged, report = run.data.metrics, found.report
    assert logged["accuracy"] == pytest.approx(report.metrics["accuracy"])
    assert logged[f"{found.headline}_ci_low"] <= logged[found.headline] <= logged[f"{found.headline}_ci_high"]
    assert logged[logged_name("baseline_majority/accuracy")] == pytest.approx(report.baselines["majority"]["accuracy"])
    assert run.data.params["test_source"] == data["test"] and run.data.params["reference_source"] == data["ref"]
    assert {a.path for a in c.list_artifacts(first.run_id)} == TABLES | PLOTS | {"iso_report.md"}
    table = json.loads(Path(c.download_artifacts(first.run_id, "per_class.json", str(tmp_path))).read_text())
    assert sorted(row[table["columns"].index("class")] for row in table["data"]) == LABELS

    summary = finished_evaluation.fn(spec, key)  # in the shape evaluate_model returns
    assert {k: v for k, v in summary.items() if k != "metrics"} == {
        "run_id": first.run_id, "headline": found.headline, "champion": None,
        "recommendation": found.recommendation["recommendation"].metric}
    assert summary["metrics"]["accuracy"] == pytest.approx(report.metrics["accuracy"])
    forced = log_evaluation.fn(spec, key, found, True)
    assert forced.created and forced.run_id != first.run_id
    assert [r.info.run_id for r in mlflow_runs(store, "unit-evaluate")] == [forced.run_id]


# ---------------------------------------------------------------- promote
def champion_result(difference: float) -> dict:
    """A champion comparison whose bootstrap difference (new - champion) has the sign of ``difference``."""
    y = np.array([0, 1] * 50)
    wrong = np.where(np.arange(100) < 10, 1 - y, y)
    a, b = (y, wrong) if difference > 0 else (wrong, y) if difference < 0 else (y, y)
    return {"bootstrap": paired_bootstrap("accuracy", y, a, b, n_boot=50)}


@pytest.mark.parametrize("uri, champion", [(None, None), ("runs:/abc/model", None), ("models:/other/1", None),
                                           ("models:/m@champion", None), ("models:/m/1", champion_result(-1))])
def test_promote_declines(data, store, uri, champion):
    spec = make_spec(data, store)
    plan = dataclasses.replace(plan_evaluation.fn(spec), model_uri=uri)
    assert champion is None or champion["bootstrap"].statistic < 0
    assert promote.fn(spec, plan, champion) is False


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> str:
    """A store with registered model ``m``, versions 1-3 (one store for the module: creating one takes seconds)."""
    root = tmp_path_factory.mktemp("registry")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    c = MlflowClient(uri, registry_uri=uri)
    c.create_registered_model("m")
    for _ in range(3):
        c.create_model_version("m", source=str(root))
    return uri


@pytest.mark.parametrize("version, difference", [("1", None), ("2", 0), ("3", 1)])
def test_promote_sets_the_alias_when_at_least_as_good(data, registry, version, difference):
    spec = make_spec(data, registry)
    plan = dataclasses.replace(plan_evaluation.fn(spec), model_uri=f"models:/m/{version}")
    champion = None if difference is None else champion_result(difference)
    assert promote.fn(spec, plan, champion) is True
    assert str(MlflowClient(registry, registry_uri=registry).get_model_version_by_alias("m", "champion").version) == version


# ---------------------------------------------------------------- run_key of a registry alias
@pytest.fixture(scope="module")
def aliased(data, tmp_path_factory) -> str:
    """A store where ``m`` has versions 1 and 2 of one real scikit-learn model (features: x)."""
    import mlflow
    from sklearn.linear_model import LogisticRegression

    uri = f"sqlite:///{tmp_path_factory.mktemp('aliased') / 'mlflow.db'}"
    rows = pl.read_parquet(data["test"])
    est = LogisticRegression().fit(rows.select("x").to_pandas(), rows["label"].to_numpy())
    c = MlflowClient(uri, registry_uri=uri)
    with process_uris(uri):  # log_model, and the registry's lookup of a models:/ source, read the process-wide URIs
        with mlflow.start_run(experiment_id=c.create_experiment("models")):
            mlflow.sklearn.log_model(est, name="model", registered_model_name="m", pip_requirements=["scikit-learn"],
                                     pyfunc_predict_fn="predict_proba",
                                     metadata={"classes": [str(k) for k in est.classes_]})
        first = c.get_model_version("m", "1")  # version 2: the same model
        c.create_model_version("m", source=first.source, run_id=first.run_id)
    return uri


@pytest.mark.slow
def test_run_key_follows_the_version_behind_an_alias(data, aliased):
    spec = make_spec(data, aliased, model_uri="models:/m@champion")
    c = MlflowClient(aliased, registry_uri=aliased)
    keys = []
    for version in ("1", "2"):
        c.set_registered_model_alias("m", "champion", version)
        keys.append(run_key(spec, plan_evaluation.fn(spec)))
    assert keys[0] != keys[1]


def _chart_sections(keys) -> list[str]:
    """The chart sections of a run in the order MLflow 3.17's UI shows them (read from its bundled
    JavaScript): the prefixes before the last "/", sorted, then "" (its "Model metrics": the
    unprefixed keys)."""
    prefixes = {k.rsplit("/", 1)[0] if "/" in k else "" for k in keys}
    return sorted(prefixes - {""}) + [""] * ("" in prefixes)


def test_the_baselines_charts_come_after_every_other_section_of_the_evaluation_run(data, store, tmp_path):
    """The run's charts opened on `baseline_majority` bars, easy to take for the model's: the
    baselines are logged under a section named for what they are, after all the model's."""
    spec = make_spec(data, store)
    content = run_content(spec, evaluate(spec), str(tmp_path))
    sections = _chart_sections(content.metrics)
    baselines = [s for s in sections if "baseline" in s]
    assert baselines == ["zero-skill baseline majority", "zero-skill baseline random"]
    model = [s for s in sections if s not in baselines and s]
    assert model and sections.index(baselines[0]) > max(sections.index(s) for s in model), sections


def test_the_evaluation_run_opens_on_the_models_headline(data, store, tmp_path):
    """After the baselines moved, the charts opened on check_leakage's counts: the first section
    holds the headline metric and its interval (copies; the plain keys stay for searches and read-back)."""
    spec = make_spec(data, store)
    found = evaluate(spec)
    content = run_content(spec, found, str(tmp_path))
    sections = _chart_sections(content.metrics)
    assert sections[0] == "1 model headline", sections
    h = found.headline
    first = {k: v for k, v in content.metrics.items() if k.startswith("1 model headline/")}
    assert first == {f"1 model headline/{h}": content.metrics[h],
                     f"1 model headline/{h}_ci_low": content.metrics[f"{h}_ci_low"],
                     f"1 model headline/{h}_ci_high": content.metrics[f"{h}_ci_high"]}
    assert not any(k.startswith("1 model headline") for k in semantic_metrics(content.metrics))


def test_a_model_version_uri_with_a_trailing_newline_is_not_a_version():
    """``$`` matched before a final newline: "models:/m/3\\n" was read as version 3 of m."""
    from tasks.evaluate_run import MODEL_VERSION

    assert MODEL_VERSION.match("models:/m/3").groups() == ("m", "3")
    assert MODEL_VERSION.match("models:/m/3\n") is None
