"""Process settings shared by the flows: quiet telemetry, the MLflow store, the task runner of a spec."""

from __future__ import annotations

import hashlib
import json
import os

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def tracking_uri(spec) -> str:
    """The spec's MLflow store, else $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the working directory."""
    return spec.tracking_uri()


def fingerprint(*parts) -> str:
    """Short stable hash of JSON-able parts (run keys).

    >>> fingerprint("a", [1, 2]) == fingerprint("a", [1, 2])
    True
    """
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def task_runner(spec):
    """The Prefect task runner the spec asks for: threads ("local"), a local Dask cluster ("dask")
    or an existing Dask scheduler ("tcp://host:port")."""
    from prefect.task_runners import ThreadPoolTaskRunner

    if spec.task_runner == "local":
        return ThreadPoolTaskRunner(max_workers=2)
    from prefect.settings import get_current_settings

    if not get_current_settings().api.url:
        raise ValueError(f"task_runner: {spec.task_runner!r} runs tasks in Dask worker processes, which need a "
                         "Prefect server to report to; the embedded (ephemeral) API lives in this process only. "
                         "Start one (classwatch server, or prefect server start) and set PREFECT_API_URL, or use "
                         "task_runner: local.")
    from prefect_dask import DaskTaskRunner

    if spec.task_runner == "dask":
        return DaskTaskRunner(cluster_kwargs={"n_workers": 2, "processes": True, "threads_per_worker": 1,
                                              "dashboard_address": "127.0.0.1:0"})
    return DaskTaskRunner(address=spec.task_runner)
