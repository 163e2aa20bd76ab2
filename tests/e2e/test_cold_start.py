"""Cold starts: `classwatch monitor` with a new Prefect home while every core is busy never fails to start."""

from __future__ import annotations

import importlib.util
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]

_path = Path(__file__).parents[2] / "benchmarks" / "bench_cold_start.py"
_spec = importlib.util.spec_from_file_location("bench_cold_start", _path)
bench = sys.modules["bench_cold_start"] = importlib.util.module_from_spec(_spec)  # dataclasses look it up
_spec.loader.exec_module(bench)


def _busy_processes() -> int:
    """One per core, less one per other pytest-xdist worker: under ``make test`` the other worker
    keeps its core busy with the rest of the suite, and a busy loop there would only slow that."""
    others = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) - 1
    return max(1, (os.cpu_count() or 1) - others)


def test_three_cold_starts_under_cpu_load_all_succeed(tmp_path):
    """Three one-period monitors, each with a fresh PREFECT_HOME and its own store, started together
    while every core is busy (harsher than one after another, and a third of the time)."""
    specs = [bench.write_project(tmp_path / f"project-{i}", seed=i) for i in range(3)]
    with bench.cpu_load(_busy_processes()), ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda i: bench.cold_start(specs[i], tmp_path / f"home-{i}"), range(3)))
    for r in results:
        print(f"command {r.seconds:.1f} s, embedded API {r.api_seconds} s, exit {r.returncode}")
    failed = [r.output[-2000:] for r in results if r.failed]
    assert not failed, failed
    assert all(r.api_seconds is not None for r in results)  # each said it was starting the embedded API
    for spec in specs:
        from mlflow import MlflowClient

        client = MlflowClient(f"sqlite:///{spec.parent / 'mlflow.db'}")
        exp = client.get_experiment_by_name("cold-start")
        runs = client.search_runs([exp.experiment_id])
        assert sorted(r.data.tags.get("classwatch.period", "parent") for r in runs) == ["2024-01", "parent"]
        assert {r.info.status for r in runs} == {"FINISHED"}
