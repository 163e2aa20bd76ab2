"""Shared pytest fixtures (ONE session-scoped Prefect test harness, a SQLite MLflow store, monitoring data on
disk) and the suite's hooks: the end-to-end tests' xdist group, and their durations printed at the end."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from flow_data import LABELS, PERIODS, SHIFTED, scored_rows
from mlflow_template import start_new_stores_from_a_template

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# The test servers (the harness's and those the e2e tests start) write the events they receive every
# 0.5 s instead of every 5 s: tests that read alert events or task runs back wait for that write.
os.environ.setdefault("PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL", "0.5")

#: nodeid -> seconds (setup + call) of every e2e test, printed at the end of the session.
E2E_DURATIONS: dict[str, float] = {}
E2E_FOLDER, E2E_GROUP = "tests/e2e/", "e2e"


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, called on the controller
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadgroup`` (pyproject.toml), every test in tests/e2e is one group: one worker runs them.

    They start servers and long-lived processes, and most share session fixtures (one Prefect and one
    MLflow server, ``classwatch serve``): spread over workers, each worker would start its own, and the
    tests would compete for the two cores while their bounded waits run. The scheduler hands out the
    largest group first, so one worker starts on them at once while the other runs the rest of the suite.

    By folder rather than by ``xdist_group`` marks: pytest-xdist 3.8 puts a marked test in its group by
    rewriting the test's node id, which pytest 9.2 no longer reads (the marks are silently ignored).
    """
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class E2EGroup(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return E2E_GROUP if nodeid.startswith(E2E_FOLDER) else super()._split_scope(nodeid)

    return E2EGroup(config, log)


def pytest_runtest_setup(item):
    # new SQLite MLflow stores of this process from a template, once MLflow is loaded (mlflow_template.py)
    start_new_stores_from_a_template()


def pytest_runtest_logreport(report):
    # Here rather than in tests/e2e/conftest.py: under xdist the reports reach the controller, which
    # loads this conftest only.
    if "e2e" in report.keywords and report.when in ("setup", "call"):
        E2E_DURATIONS[report.nodeid] = E2E_DURATIONS.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if not E2E_DURATIONS:
        return
    terminalreporter.section("e2e durations (setup + call, s)")
    for nodeid, seconds in E2E_DURATIONS.items():
        terminalreporter.write_line(f"{seconds:7.1f}  {nodeid}")
    cache = getattr(terminalreporter.config, "cache", None)
    if cache is not None:
        out = Path(cache.mkdir("e2e")) / "durations.json"
        out.write_text(json.dumps(E2E_DURATIONS, indent=1))
        terminalreporter.write_line(f"(also in {out})")


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


@pytest.fixture(scope="session")
def monitoring_data(tmp_path_factory) -> Path:
    """Reference window (20,000 rows), three stable monthly deliveries and a shifted fourth, written once.

    Tests get a copy (``monitoring_spec``): some add deliveries to the folder.
    """
    data = tmp_path_factory.mktemp("monitoring-data")
    (data / "deliveries").mkdir()
    scored_rows(20_000, 0, "2023-12").write_parquet(data / "reference.parquet")
    for i, p in enumerate(PERIODS):
        scored_rows(20_000, 10 + i, p).write_parquet(data / "deliveries" / f"{p}.parquet")
    scored_rows(20_000, 20, SHIFTED, prevalence=(2, 0.06), price_rise=(1, 0.2)).write_parquet(
        data / "deliveries" / f"{SHIFTED}.parquet")
    return data


@pytest.fixture
def monitoring_spec(tmp_path, store, monitoring_data) -> dict:
    """A spec of ``monitoring_data``, copied into this test's folder, logging to this test's store."""
    data = tmp_path / "data"
    shutil.copytree(monitoring_data, data)
    return {"name": "test-model", "task": "multiclass", "labels": LABELS,
            "data": {"reference": str(data / "reference.parquet"),
                     "current": str(data / "deliveries" / "{period}.parquet")},
            "mlflow": {"experiment": "monitor-tests", "tracking_uri": store}, "n_boot": 100}
