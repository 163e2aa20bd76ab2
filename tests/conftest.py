"""Shared pytest fixtures: ONE session-scoped Prefect test harness (start-up about 18 s)."""

from __future__ import annotations

import os

import pytest

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
