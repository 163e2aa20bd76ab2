"""monitor_period in concurrent processes on one SQLite store: one parent run, one run per period."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
import yaml
from flow_data import PERIODS
from mlflow import MlflowClient

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]

#: A process that imports everything, says "ready", waits for the go file, then monitors its period.
DRIVER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from flows.monitor_period import monitor_period
    from flows.runners import in_process_runs
    spec, period, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.01)
    with in_process_runs():
        r = monitor_period(spec, period)
    print(json.dumps({"run_id": r.run_id, "parent": r.parent_run_id, "created": r.created}), flush=True)
""")


def test_processes_started_together_leave_one_parent_and_one_run_per_period(monitoring_spec, store, tmp_path):
    """Two periods of one model at the same moment (two `classwatch monitor`s), and a second process
    on one of those periods (a scheduled run racing a manual one)."""
    from prefect.settings import PREFECT_API_URL

    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(monitoring_spec))
    (tmp_path / "driver.py").write_text(DRIVER)
    go = tmp_path / "go"
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "MLFLOW_DISABLE_TELEMETRY": "true",
           "PREFECT_LOGGING_LEVEL": "WARNING"}
    periods = [PERIODS[0], PERIODS[1], PERIODS[1]]
    procs = [subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(spec_path), p, str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in periods]
    try:
        for proc in procs:  # every process has imported Prefect, MLflow and the flows
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        go.touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-3000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    client = MlflowClient(store)
    exp = client.get_experiment_by_name(monitoring_spec["mlflow"]["experiment"])
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if "classwatch.period" not in r.data.tags]
    assert len(parents) == 1, [(r.info.run_id, r.info.status) for r in parents]
    by_period = sorted(r.data.tags["classwatch.period"] for r in runs if "classwatch.period" in r.data.tags)
    assert by_period == sorted(set(periods))
    assert {r["parent"] for r in results} == {parents[0].info.run_id}
    assert all(r.info.status == "FINISHED" for r in runs)
    same = [r for r, p in zip(results, periods) if p == PERIODS[1]]
    assert same[0]["run_id"] == same[1]["run_id"] and sorted(r["created"] for r in same) == [False, True]
