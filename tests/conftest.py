"""Shared pytest fixtures: ONE session-scoped Prefect test harness, a SQLite MLflow store, monitoring data on disk."""

from __future__ import annotations

import os

import pytest
from flow_data import LABELS, PERIODS, SHIFTED, scored_rows

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


@pytest.fixture(scope="session")
def prefect_harness():
    """A temporary Prefect API (SQLite) for every flow test of the session; request it where flows run.

    Not autouse: the pure tests never pay its start-up.
    """
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def store(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


@pytest.fixture
def monitoring_spec(tmp_path, store) -> dict:
    """Reference window (20,000 rows), three stable monthly deliveries and a shifted fourth."""
    data = tmp_path / "data"
    (data / "deliveries").mkdir(parents=True)
    scored_rows(20_000, 0, "2023-12").write_parquet(data / "reference.parquet")
    for i, p in enumerate(PERIODS):
        scored_rows(20_000, 10 + i, p).write_parquet(data / "deliveries" / f"{p}.parquet")
    scored_rows(20_000, 20, SHIFTED, prevalence=(2, 0.06), price_rise=(1, 0.2)).write_parquet(
        data / "deliveries" / f"{SHIFTED}.parquet")
    return {"name": "test-model", "task": "multiclass", "labels": LABELS,
            "data": {"reference": str(data / "reference.parquet"),
                     "current": str(data / "deliveries" / "{period}.parquet")},
            "mlflow": {"experiment": "monitor-tests", "tracking_uri": store}, "n_boot": 100}
