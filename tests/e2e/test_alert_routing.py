"""Alert routing: `classwatch alerts setup --webhook URL` -> a retraining alert posts once to the webhook."""

from __future__ import annotations

import time
import uuid

import pytest

from deployments.automations import AUTOMATION_NAME
from e2e_support import EXPERIMENT, SHIFTED_PERIODS, WebhookListener, run_cli, wait_for


pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]
QUIET_SECONDS = 6  # how long "no second post" is watched (a post arrives ~1 s after its event)


def _automations(name: str):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_automations_by_name(name)


def test_setup_is_idempotent_and_an_emitted_alert_posts_once(servers, prefect_api):
    from prefect.events import Event
    from deployments.events import send_event

    with WebhookListener() as hook:
        first = run_cli(servers, "alerts", "setup", "--webhook", hook.url)
        second = run_cli(servers, "alerts", "setup", "--webhook", hook.url)
        assert "Created automation" in first.stdout and "Updated automation" in second.stdout
        assert len(_automations(AUTOMATION_NAME)) == 1
        # The same alert sent twice with its deterministic id: the server keeps one.
        event = Event(event="classwatch.alert.retrain", id=uuid.uuid4(),
                      resource={"prefect.resource.id": "classwatch.model.direct", "prefect.resource.name": "direct"},
                      payload={"model": "direct", "period": "2023-11", "reasons": ["prevalence +5.0 points"]})
        for _ in range(2):
            send_event(event)
        wait_for(lambda: hook.posts, timeout=30, interval=0.2, what="a webhook post")
        time.sleep(QUIET_SECONDS)
    assert len(hook.posts) == 1, hook.posts
    post = hook.posts[0]
    assert post["subject"] == "classwatch: retrain direct (period 2023-11)"
    assert "Reasons: prevalence +5.0 points" in post["body"] and str(event.id) in post["body"]


def test_shifted_period_posts_once_and_not_again_when_re_run(servers, served, e2e_data, prefect_api):
    from prefect.deployments import run_deployment

    period = SHIFTED_PERIODS[0]
    with WebhookListener() as hook:
        run_cli(servers, "alerts", "setup", "--webhook", hook.url)  # re-targets the one automation
        assert len(_automations(AUTOMATION_NAME)) == 1
        first = run_deployment("monitor_period/monthly", parameters={"period": period}, timeout=300, poll_interval=1)
        assert first.state.is_completed(), f"{first.state.type}: {first.state.message}"
        wait_for(lambda: hook.posts, timeout=30, interval=0.2, what="the retraining alert's webhook post")
        # Re-run the same period twice: as is (skipped, already logged) and forced (recomputed; the
        # alert event is emitted again with the same id, which the server drops).
        for params in ({"period": period}, {"period": period, "force": True}):
            again = run_deployment("monitor_period/monthly", parameters=params, timeout=300, poll_interval=1)
            assert again.state.is_completed(), f"{again.state.type}: {again.state.message}"
        time.sleep(QUIET_SECONDS)
    assert len(hook.posts) == 1, hook.posts
    assert f"period {period}" in hook.posts[0]["subject"] and "cw-e2e" in hook.posts[0]["subject"]
    print(f"the webhook received:\n{hook.posts[0]['text']}")
    client = servers.mlflow.client()
    exp = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([exp.experiment_id], filter_string=f"tags.`classwatch.period` = '{period}'")
    assert len(runs) == 1 and runs[0].data.tags["classwatch.alert"] == "retrain"
