"""Fault: the MLflow server dies while monitor_period logs; the flow fails cleanly and a re-run heals it."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from deployments import servers as srv
from e2e_support import EXPERIMENT, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]
PERIODS = ("2024-05", "2024-06")  # a second chance if the first run logs faster than it can be caught


def _period_runs(client, period: str):
    exp = client.get_experiment_by_name(EXPERIMENT)
    if exp is None:
        return []
    return client.search_runs([exp.experiment_id], filter_string=f"tags.`classwatch.period` = '{period}'")


def _final(api_url: str, flow_run_id, timeout: float):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    def state():
        with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as c:
            run = c.read_flow_run(flow_run_id)
        return run if run.state is not None and run.state.is_final() else None

    return wait_for(state, timeout=timeout, interval=0.5, what="the flow run's final state")


def test_mlflow_killed_while_logging_fails_cleanly_and_rerun_completes(servers, served, e2e_data, prefect_api):
    from prefect.deployments import run_deployment

    mlflow = servers.mlflow
    client = mlflow.client()
    for period in PERIODS:
        flow_run = run_deployment("monitor_period/monthly", parameters={"period": period}, timeout=0)
        # Catch the period's child run between its creation and FINISHED, then crash the server.
        def logging_or_done():
            status = {r.info.status for r in _period_runs(client, period)}
            return "logging" if "RUNNING" in status else "done" if "FINISHED" in status else None

        caught = wait_for(logging_or_done, timeout=240, interval=0.05, what=f"the {period} run being logged")
        if caught == "logging":
            break
        _final(servers.api_url, flow_run.id, 120)  # logged before it could be caught: next period
    else:
        pytest.fail(f"no period's run could be caught while logging ({PERIODS})")
    killed_at = datetime.now(timezone.utc)
    mlflow.kill()

    # The flow fails (MLflow client retries, then the task's retries), within a bounded time.
    failed = _final(servers.api_url, flow_run.id, timeout=180)
    seconds = (datetime.now(timezone.utc) - killed_at).total_seconds()
    assert failed.state.is_failed() or failed.state.is_crashed(), failed.state
    print(f"{period}: flow run {failed.state.type.value} {seconds:.0f} s after the kill: {failed.state.message}")

    mlflow.start()
    srv.wait_healthy(mlflow.server, timeout=180)
    client = mlflow.client()
    leftovers = _period_runs(client, period)
    # Nothing half-logged passes as complete: the crashed run never reached FINISHED.
    assert all(r.info.status != "FINISHED" for r in leftovers), [(r.info.run_id, r.info.status) for r in leftovers]
    print(f"after the restart, runs of {period}: {[r.info.status for r in leftovers]} (the re-run replaces them)")

    again = run_deployment("monitor_period/monthly", parameters={"period": period}, timeout=300, poll_interval=1)
    assert again.state.is_completed(), f"{again.state.type}: {again.state.message}"
    runs = _period_runs(client, period)
    assert len(runs) == 1, [(r.info.run_id, r.info.status) for r in runs]
    run = runs[0]
    assert run.info.status == "FINISHED" and run.info.run_id not in {r.info.run_id for r in leftovers}
    assert run.data.tags["classwatch.alert"] in ("none", "retrain") and run.data.metrics
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"monitoring_summary.md"}
    exp = client.get_experiment_by_name(EXPERIMENT)
    running = client.search_runs([exp.experiment_id], filter_string="attributes.status = 'RUNNING'")
    assert running == [], [(r.info.run_name, r.data.tags.get("classwatch.period")) for r in running]
