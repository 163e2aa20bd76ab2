"""Prefect tasks of compare_models: the compared metric, the comparison (computed in metrics_core), its MLflow run."""

from __future__ import annotations

import numpy as np
from prefect import task
from prefect.cache_policies import NO_CACHE

from metrics_core import significance as sig
from tasks import IO
from tasks.config.sources import describe_source
from tasks.config.spec import RunSpec, fingerprint
from tasks.evaluate import EvalPlan, label_metric, recommendation
from tasks.render.comparison import comparison_markdown
from tasks.render.markdown import comparison_note
from tasks.store.mlflow import MlflowStore, RunContent, log_run


def model_label(uri: str) -> str:
    """A short name for a model URI.

    >>> model_label("models:/price-classifier/2"), model_label("runs:/abc/model")
    ('price-classifier v2', 'runs:/abc/model')
    """
    parts = uri.split("/")
    if uri.startswith("models:/") and len(parts) == 3 and parts[2].isdigit():
        return f"{parts[1]} v{parts[2]}"
    return uri


def comparison_key(spec: RunSpec, uris: list[str], cv_scores: dict | None, test_source: str) -> str:
    """The comparison's MLflow run key: models, CV scores, spec and test source."""
    return f"compare|{spec.name}|{fingerprint(uris, cv_scores, spec.fingerprint(), describe_source(test_source))}"


@task(name="compared-metric", **IO)
def compared_metric(spec: RunSpec, plan: EvalPlan) -> str:
    """The metric the models are compared on: the spec's headline metric, else the ONS
    recommendation for this data, as a metric of predicted labels (:func:`tasks.evaluate.label_metric`)."""
    return label_metric(spec.headline_metric or recommendation.fn(spec, plan)["recommendation"].metric)


@task(name="finished-comparison", **IO)
def finished_comparison(spec: RunSpec, key: str) -> dict | None:
    """The FINISHED comparison run with ``key``, or None: what :func:`log_comparison` logged, read
    back in the shape ``compare_models`` returns (run_id, best, metric, tests as rows, metrics)."""
    store = MlflowStore(spec.tracking_uri(), spec.mlflow.experiment)
    done = store.finished(key)
    if done is None:
        return None
    params = store.client.get_run(done.run_id).data.params
    return {"run_id": done.run_id, "best": done.tags.get("classwatch.best"), "metric": params.get("compared_metric"),
            "tests": store.read_table(done.run_id, "comparison_tests.json").to_dicts(), "metrics": done.metrics}


@task(name="log-comparison", **IO)
def log_comparison(spec: RunSpec, key: str, uris: list[str], metric: str, test_source: str, result: dict,
                   force: bool) -> tuple[str, bool, dict]:
    """Log the comparison as one MLflow run: per-model metrics, the test table, the folds, the markdown.

    Returns ``(run_id, created, metrics)``.
    """
    metrics = {}
    for i, row in enumerate(result["per_model"].iter_rows(named=True)):
        metrics.update({f"model_{i}/{k}": v for k, v in row.items() if k != "model"})
    metrics["n_rejected"] = int(result["tests"]["reject"].sum())
    params = {**spec.flat_params(), "compared_metric": metric, "test_source": test_source,
              **{f"model_{i}": u for i, u in enumerate(uris)}}
    content = RunContent(f"{spec.name} comparison", params=params, metrics=metrics,
                         tags={"classwatch.kind": "compare", "classwatch.model": spec.name,
                               "classwatch.best": result["best"],
                               "mlflow.note.content": comparison_note(result, spec.alerts.correction,
                                                                      spec.alerts.alpha)},
                         tables={"comparison_tests.json": result["tests"], "per_model.json": result["per_model"],
                                 "fold_metrics.json": result["folds"]},
                         texts={"comparison.md": comparison_markdown(result, spec)})
    run_id, created = log_run(spec.tracking_uri(), spec.mlflow.experiment, key, content, force=force)
    return run_id, created, metrics


@task(name="compare-models", cache_policy=NO_CACHE)
def comparison(spec: RunSpec, labels: list, y: np.ndarray, preds: dict, metric: str,
               cv_scores: dict | None = None, cv_n_train: int | None = None, cv_n_test: int | None = None) -> dict:
    """The ISO clause-7 tests between the models (:func:`metrics_core.significance.model_comparison`),
    with the spec's task, correction (``spec.alerts.correction`` at ``spec.alerts.alpha``), bootstrap
    replicates, seed and beta."""
    return sig.model_comparison(spec.task, labels, y, preds, metric, cv_scores=cv_scores, cv_n_train=cv_n_train,
                                cv_n_test=cv_n_test, alpha=spec.alerts.alpha, correction=spec.alerts.correction,
                                n_boot=spec.n_boot, seed=spec.seed, beta=spec.beta)
