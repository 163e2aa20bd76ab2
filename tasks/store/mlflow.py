"""MLflow logging: everything computed first, logged in batches, FINISHED only when all of it is logged.

A run is found by its tag ``classwatch.run_key`` before one is created: a FINISHED run with the
key is reused (a re-run logs nothing twice), a FAILED/KILLED/RUNNING leftover is deleted and
logged again from the start. Any failure while logging marks the run FAILED and re-raises.
"""

from __future__ import annotations

import math
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import polars as pl

from tasks.config.spec import default_tracking_uri

RUN_KEY = "classwatch.run_key"
MAX_METRICS, MAX_PARAMS, MAX_TAGS = 1000, 100, 100
PARAM_LIMIT, TAG_LIMIT = 6000, 8000
_BAD_KEY = re.compile(r"[^A-Za-z0-9_\-. /]")


def safe_key(name: str) -> str:
    """An MLflow metric/param key: characters other than letters, digits, ``_ - . /`` and space
    become ``_``.

    >>> safe_key("prevalence_label:wine & beer")
    'prevalence_label_wine _ beer'
    """
    return _BAD_KEY.sub("_", str(name))[:250]


@dataclass
class RunContent:
    """Everything one run will hold, computed before the run is created."""

    name: str
    params: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)       # artifact path -> local file
    tables: dict = field(default_factory=dict)      # artifact file (.json) -> polars DataFrame
    texts: dict = field(default_factory=dict)       # artifact file -> text
    step: int = 0
    timestamp_ms: int | None = None


def client(tracking_uri: str | None = None):
    """An MlflowClient on the store (registry on the same URI)."""
    from mlflow import MlflowClient

    uri = tracking_uri or default_tracking_uri()
    return MlflowClient(tracking_uri=uri, registry_uri=uri)


def _local_artifact_root(tracking_uri: str) -> str | None:
    """For a local SQLite store: ``<folder of the db>/mlruns``, so the store is self-contained."""
    if tracking_uri.startswith("sqlite:///"):
        db = Path(tracking_uri[len("sqlite:///"):])
        return (db.parent / "mlruns").resolve().as_uri()
    return None


def experiment_id(mlflow_client, name: str) -> str:
    """The id of experiment ``name``, created when missing (artifacts beside a local SQLite db)."""
    exp = mlflow_client.get_experiment_by_name(name)
    if exp is not None:
        if exp.lifecycle_stage == "deleted":
            mlflow_client.restore_experiment(exp.experiment_id)
        return exp.experiment_id
    root = _local_artifact_root(mlflow_client.tracking_uri)
    try:
        return mlflow_client.create_experiment(name, artifact_location=f"{root}/{_slug(name)}" if root else None)
    except Exception:  # noqa: BLE001 - created concurrently by another process
        exp = mlflow_client.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "experiment"


def find_run(mlflow_client, exp_id: str, run_key: str):
    """The newest active run tagged ``classwatch.run_key = run_key`` (any status), or None."""
    quoted = run_key.replace("'", "\\'")
    runs = mlflow_client.search_runs([exp_id], filter_string=f"tags.`{RUN_KEY}` = '{quoted}'",
                                     order_by=["attributes.start_time DESC"], max_results=5)
    return runs[0] if runs else None


def _value(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _batches(mlflow_client, run_id: str, content: RunContent) -> None:
    from mlflow.entities import Metric, Param, RunTag

    ts = content.timestamp_ms or int(time.time() * 1000)
    metrics = [Metric(safe_key(k), _value(v), ts, content.step) for k, v in content.metrics.items()]
    params = [Param(safe_key(k), str(v)[:PARAM_LIMIT]) for k, v in content.params.items()]
    tags = [RunTag(k, str(v)[:TAG_LIMIT]) for k, v in content.tags.items()]
    for i in range(0, len(params), MAX_PARAMS):
        mlflow_client.log_batch(run_id, params=params[i:i + MAX_PARAMS])
    for i in range(0, len(tags), MAX_TAGS):
        mlflow_client.log_batch(run_id, tags=tags[i:i + MAX_TAGS])
    for i in range(0, len(metrics), MAX_METRICS):
        mlflow_client.log_batch(run_id, metrics=metrics[i:i + MAX_METRICS])


def _artifacts(mlflow_client, run_id: str, content: RunContent) -> None:
    with tempfile.TemporaryDirectory(prefix="classwatch-") as tmp:
        root = Path(tmp)
        for name, text in content.texts.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        for name, path in content.files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(Path(path).read_bytes())
        if any(root.iterdir()):
            mlflow_client.log_artifacts(run_id, str(root))
    for name, table in content.tables.items():
        frame = table if isinstance(table, pl.DataFrame) else pl.DataFrame(table)
        mlflow_client.log_table(run_id, frame.to_pandas(), artifact_file=name)


def log_run(tracking_uri: str, experiment: str, run_key: str, content: RunContent, *, parent_run_id: str | None = None,
            force: bool = False, before_finish: Callable[[str], None] | None = None) -> tuple[str, bool]:
    """Log ``content`` as one run; return ``(run_id, created)``.

    A FINISHED run with the same ``run_key`` is returned untouched (``created`` False) unless
    ``force``; any other run with the key (FAILED, KILLED, a crashed RUNNING) is deleted first.
    Order: params, tags, metrics (batches of the MLflow limits), then artifacts and tables, then
    ``before_finish(run_id)`` (e.g. the parent's time series), then FINISHED. Any exception marks
    the run FAILED and propagates.
    """
    c = client(tracking_uri)
    exp_id = experiment_id(c, experiment)
    existing = find_run(c, exp_id, run_key)
    if existing is not None:
        if existing.info.status == "FINISHED" and not force:
            return existing.info.run_id, False
        c.delete_run(existing.info.run_id)
    tags = {RUN_KEY: run_key, "mlflow.runName": content.name}
    if parent_run_id:
        tags["mlflow.parentRunId"] = parent_run_id
    run = c.create_run(exp_id, tags=tags, run_name=content.name)
    run_id = run.info.run_id
    try:
        _batches(c, run_id, content)
        _artifacts(c, run_id, content)
        if before_finish is not None:
            before_finish(run_id)
        c.set_terminated(run_id, "FINISHED")
    except BaseException:
        try:
            c.set_terminated(run_id, "FAILED")
        except Exception:  # noqa: BLE001 - the store itself may be down; the original error matters
            pass
        raise
    return run_id, True


def ensure_parent(tracking_uri: str, experiment: str, run_key: str, name: str, params: dict, tags: dict) -> str:
    """The parent run with ``run_key`` (created with params and tags, then FINISHED, if missing)."""
    c = client(tracking_uri)
    exp_id = experiment_id(c, experiment)
    existing = find_run(c, exp_id, run_key)
    if existing is not None:
        return existing.info.run_id
    run_id, _ = log_run(tracking_uri, experiment, run_key, RunContent(name, params=params, tags=tags))
    return run_id


def log_series(tracking_uri: str, run_id: str, metrics: dict, step: int, timestamp_ms: int | None = None) -> None:
    """Metrics at ``step`` on an existing run (the parent's time series; the run may be FINISHED)."""
    c = client(tracking_uri)
    _batches(c, run_id, RunContent("", metrics=metrics, step=step, timestamp_ms=timestamp_ms))


def run_summary(tracking_uri: str, run_id: str) -> dict:
    """What a finished run holds, for a flow that skips an already-logged period."""
    run = client(tracking_uri).get_run(run_id)
    return {"run_id": run_id, "status": run.info.status, "tags": dict(run.data.tags),
            "metrics": dict(run.data.metrics), "experiment_id": run.info.experiment_id}


def finished_run(tracking_uri: str, experiment: str, key: str) -> dict | None:
    """The summary (see :func:`run_summary`) of the FINISHED run tagged ``classwatch.run_key`` =
    ``key`` in ``experiment``, or None: a flow returns it instead of computing again."""
    c = client(tracking_uri)
    exp = c.get_experiment_by_name(experiment)
    done = find_run(c, exp.experiment_id, key) if exp is not None else None
    if done is None or done.info.status != "FINISHED":
        return None
    return run_summary(tracking_uri, done.info.run_id)

