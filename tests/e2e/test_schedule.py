"""Schedule: the served monitoring deployment has its monthly cron; a run created through the API completes."""

from __future__ import annotations

import pytest

from deployments.serve import DEFAULT_CRON, SCHEDULED_PERIOD
from e2e_support import EXPERIMENT, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]


def test_monitoring_deployment_is_on_the_monthly_cron(servers, served, prefect_api):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (DeploymentFilter, DeploymentFilterId, FlowRunFilter,
                                                FlowRunFilterState, FlowRunFilterStateType)

    with get_client(sync_client=True) as client:
        dep = client.read_deployment_by_name("monitor_period/monthly")
        assert [(s.schedule.cron, s.schedule.timezone) for s in dep.schedules] == [(DEFAULT_CRON, "UTC")]
        assert dep.schedules[0].active and dep.schedules[0].parameters == {"period": SCHEDULED_PERIOD}
        assert dep.parameters["spec"].endswith("classwatch.yaml")

        def scheduled():  # the server's scheduler pre-creates the next runs from the cron
            return client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[dep.id])),
                flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=["SCHEDULED"]))),
                limit=10)

        runs = wait_for(scheduled, timeout=90, what="scheduled runs of monitor_period/monthly")
    for run in runs:
        start = run.expected_start_time
        assert (start.day, start.hour, start.minute) == (2, 6, 0)
        assert run.parameters["period"] == SCHEDULED_PERIOD


def test_monitoring_run_created_through_the_api_completes_and_logs_its_period(servers, served, prefect_api):
    """A run as the cron creates it (period "previous"), scheduled for 2024-04-02 06:00: it monitors 2024-03."""
    from datetime import datetime, timezone

    from prefect.deployments import run_deployment

    flow_run = run_deployment("monitor_period/monthly", parameters={"period": SCHEDULED_PERIOD},
                              scheduled_time=datetime(2024, 4, 2, 6, 0, tzinfo=timezone.utc), timeout=300,
                              poll_interval=1)
    assert flow_run.state.is_completed(), f"{flow_run.state.type}: {flow_run.state.message}"
    client = servers.mlflow.client()
    exp = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([exp.experiment_id], filter_string="tags.`classwatch.period` = '2024-03'")
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert run.data.tags["classwatch.alert"] == "none"  # a stable month
    assert run.data.tags["mlflow.parentRunId"]
    from tasks.metric_names import semantic_metrics  # logged under chart-section names

    metrics = semantic_metrics(run.data.metrics)
    assert any(k.startswith("prevalence") or "psi" in k for k in metrics), sorted(metrics)
