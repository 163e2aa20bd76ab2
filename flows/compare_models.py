"""Flow compare_models: several models on one test set (or CV fold scores): clause-7 tests, corrected -> MLflow."""

from __future__ import annotations

from typing import Any

from prefect import flow, task

from tasks.config import sources
from tasks.compare import compare
from tasks.evaluate import plan_evaluation, predict, recommendation
from tasks.store.mlflow import RunContent, finished_run, log_run
from tasks.monitor import IO
from tasks.config.spec import RunSpec, fingerprint, load_spec


def model_label(uri: str) -> str:
    """A short name for a model URI.

    >>> model_label("models:/price-classifier/2"), model_label("runs:/abc/model")
    ('price-classifier v2', 'runs:/abc/model')
    """
    parts = uri.split("/")
    if uri.startswith("models:/") and len(parts) == 3 and parts[2].isdigit():
        return f"{parts[1]} v{parts[2]}"
    return uri


def _markdown(result: dict, spec: RunSpec) -> str:
    lines = [f"# Model comparison ({result['metric']})", "", f"Best on the test set: **{result['best']}**.", "",
             f"All p-values corrected together ({spec.alerts.correction}, alpha {spec.alerts.alpha}).", "",
             "| model a | model b | test | effect | p (adjusted) | reject |", "|---|---|---|---|---|---|"]
    for r in result["tests"].iter_rows(named=True):
        lines.append(f"| {r['model_a']} | {r['model_b']} | {r['test']} | {r['effect_size']:.4g} | "
                     f"{r['p_adjusted']:.3g} | {'yes' if r['reject'] else 'no'} |")
    return "\n".join(lines) + "\n"


@task(name="log-comparison", **IO)
def log_comparison(spec: RunSpec, key: str, content: RunContent, force: bool) -> tuple[str, bool]:
    return log_run(spec.tracking_uri(), spec.mlflow.experiment, key, content, force=force)


@flow(name="compare_models")
def compare_models(spec: Any = None, model_uris: list[str] | None = None, test_data: str | None = None,
                   cv_scores: dict[str, list[float]] | None = None, cv_n_train: int | None = None,
                   cv_n_test: int | None = None, force: bool = False) -> dict:
    """Compare models on the same test rows (ISO/IEC TS 4213 clause 7), all tests corrected together.

    ``model_uris``: two or more MLflow models that score the test set (``columns.features`` of the
    spec are their inputs); ``cv_scores``: optional per-model lists of a metric over the same
    cross-validation folds, with ``cv_n_train``/``cv_n_test`` for the corrected resampled t-test.
    The compared metric is the spec's headline metric, else the ONS recommendation (a
    label-based metric). One MLflow run holds the per-model metrics and the test table.
    """
    uris = list(model_uris or [])
    if len(uris) < 2:
        raise ValueError(f"model_uris: compare_models needs at least two MLflow model URIs, got {uris!r}.")
    s = load_spec(spec, data={"test": test_data}, model_uri=uris[0] if uris else None)
    plan = plan_evaluation(s)
    key = f"compare|{s.name}|{fingerprint(uris, cv_scores, s.model_dump(mode='json'), sources.describe_source(plan.test))}"
    uri = s.tracking_uri()
    base = {"model": s.name, "experiment": s.mlflow.experiment, "tracking_uri": uri}
    summary = None if force else finished_run(uri, s.mlflow.experiment, key)
    if summary is not None:
        return {**base, "run_id": summary["run_id"], "created": False, "best": summary["tags"].get("classwatch.best"),
                "metrics": summary["metrics"]}
    futures = {model_label(u): predict.submit(s, plan, u) for u in uris}
    preds = {name: f.result() for name, f in futures.items()}
    metric = s.headline_metric or recommendation(s, plan)["recommendation"].metric
    from tasks.evaluate import LABEL_METRICS

    if metric not in LABEL_METRICS:
        metric = "balanced_accuracy"
    y = next(iter(preds.values())).y_true
    result = compare(s, plan.labels, y, {n: p.y_pred for n, p in preds.items()}, metric, cv_scores, cv_n_train,
                     cv_n_test)
    metrics = {}
    for i, row in enumerate(result["per_model"].iter_rows(named=True)):
        metrics.update({f"model_{i}/{k}": v for k, v in row.items() if k != "model"})
    metrics["n_rejected"] = int(result["tests"]["reject"].sum())
    params = {**s.flat_params(), "compared_metric": metric, "test_source": plan.test,
              **{f"model_{i}": u for i, u in enumerate(uris)}}
    content = RunContent(f"{s.name} comparison", params=params, metrics=metrics,
                         tags={"classwatch.kind": "compare", "classwatch.model": s.name, "classwatch.best": result["best"]},
                         tables={"comparison_tests.json": result["tests"], "per_model.json": result["per_model"],
                                 "fold_metrics.json": result["folds"]},
                         texts={"comparison.md": _markdown(result, s)})
    run_id, created = log_comparison(s, key, content, force)
    return {**base, "run_id": run_id, "created": created, "best": result["best"], "metric": metric,
            "tests": result["tests"].to_dicts(), "metrics": metrics}
