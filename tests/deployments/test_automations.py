"""deployments/automations.py: the notification block and the alert automation (templates, idempotency)."""

from __future__ import annotations

import uuid

import pytest

from deployments.automations import (ALERT_EVENT, AUTOMATION_NAME, BODY, SUBJECT, _notification_block,
                                     setup_alert_routing, webhook_kind)


@pytest.mark.parametrize("url, kind", [
    ("https://hooks.slack.com/services/T000/B000/XXXX", "slack"),
    ("https://prod-12.westeurope.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?sig=x", "teams"),
    ("https://example.webhook.office.com/webhookb2/abc", "teams"),
    ("https://alerts.example.org/classwatch", "custom"),
    ("http://127.0.0.1:9000/hook", "custom"),
])
def test_webhook_kind(url, kind):
    assert webhook_kind(url) == kind


def test_custom_block_posts_subject_and_body_as_json():
    """Through the block's public notify(), to a real listener on 127.0.0.1."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    received = []

    class Listener(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server API
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=server.handle_request, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/hook"
    block = _notification_block(url, "custom")
    assert block.url == url and block.method == "POST"
    try:
        block.notify("B", "S")
    finally:
        server.server_close()
    assert received == [{"text": "S\nB", "subject": "S", "body": "B"}]


def test_slack_url_gets_the_slack_block():
    from prefect.blocks.notifications import SlackWebhook

    assert isinstance(_notification_block("https://hooks.slack.com/services/T000/B000/XXXX", "slack"), SlackWebhook)


@pytest.mark.parametrize("url", ["127.0.0.1:9000/hook", "ftp://example.org/x", ""])
def test_a_non_http_webhook_is_rejected(url):
    with pytest.raises(ValueError, match="is not an http"):
        _notification_block(url, "custom")


def _event(payload: dict):
    from datetime import datetime, timezone

    from prefect.server.events.schemas.events import ReceivedEvent

    return ReceivedEvent(event=ALERT_EVENT, id=uuid.uuid4(), payload=payload, occurred=datetime.now(timezone.utc),
                         resource={"prefect.resource.id": "classwatch.model.price"})


@pytest.mark.parametrize("reasons, shown", [
    (["prevalence of 'fish' +5.1 points", "PSI 0.31"], "prevalence of 'fish' +5.1 points; PSI 0.31"),
    ("one reason", "one reason"),
    ([], ""),
])
def test_subject_and_body_render_on_the_server(reasons, shown):
    from prefect.server.utilities.user_templates import render_user_template_sync

    event = _event({"model": "price", "period": "2024-08", "reasons": reasons, "mlflow_run_id": "r1",
                    "mlflow_tracking_uri": "http://127.0.0.1:5000"})
    assert render_user_template_sync(SUBJECT, {"event": event}) == "classwatch: retrain price (period 2024-08)"
    body = render_user_template_sync(BODY, {"event": event})
    assert f"Reasons: {shown}\n" in body and "MLflow run r1 in http://127.0.0.1:5000" in body
    assert str(event.id) in body
    with_url = _event({"model": "price", "period": "2024-08", "mlflow_run_id": "r1",
                       "mlflow_run_url": "http://127.0.0.1:5000/#/experiments/1/runs/r1"})
    assert "MLflow run: http://127.0.0.1:5000/#/experiments/1/runs/r1\n" in render_user_template_sync(
        BODY, {"event": with_url})


def test_missing_payload_keys_render_empty_not_fail():
    from prefect.server.utilities.user_templates import render_user_template_sync

    event = _event({})
    assert render_user_template_sync(SUBJECT, {"event": event}).startswith(
        "classwatch: retrain classwatch.model.price")
    assert "MLflow run" not in render_user_template_sync(BODY, {"event": event})


def test_needs_exactly_one_target_and_a_server():
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        with pytest.raises(ValueError, match="exactly one"):
            setup_alert_routing(None)
        with pytest.raises(ValueError, match="exactly one"):
            setup_alert_routing("http://127.0.0.1:9000/h", block="custom-webhook/x")
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        with pytest.raises(RuntimeError, match="PREFECT_API_URL is not set"):
            setup_alert_routing("http://127.0.0.1:9000/h")


@pytest.mark.slow
def test_setup_twice_updates_one_automation(prefect_harness):
    from prefect.automations import Automation
    from prefect.client.orchestration import get_client

    first = setup_alert_routing("http://127.0.0.1:9000/a")
    second = setup_alert_routing("http://127.0.0.1:9000/b", model="price")
    assert first.created and not second.created and first.automation_id == second.automation_id
    with get_client(sync_client=True) as client:
        assert len(client.read_automations_by_name(AUTOMATION_NAME)) == 1
    auto = Automation.read(id=second.automation_id)
    assert auto.trigger.expect == {ALERT_EVENT} and auto.trigger.threshold == 1
    assert auto.trigger.posture == "Reactive" and auto.trigger.within.total_seconds() == 0
    assert auto.trigger.match.root == {"prefect.resource.id": "classwatch.model.price"}
    (action,) = auto.actions
    assert action.type == "send-notification" and action.block_document_id == second.block_document_id
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    assert CustomWebhookNotificationBlock.load("classwatch-retrain-alerts").url == "http://127.0.0.1:9000/b"
    Automation.read(id=second.automation_id).delete()


@pytest.mark.slow
def test_an_existing_email_block_can_be_the_target(prefect_harness):
    from prefect.automations import Automation
    from prefect.blocks.notifications import SendgridEmail

    block_id = SendgridEmail(api_key="SG.not-a-real-key", sender_email="classwatch@example.org",
                             to_emails=["ml-team@example.org"]).save("ops-mail", overwrite=True)
    routing = setup_alert_routing(block="sendgrid-email/ops-mail", automation_name="classwatch test: e-mail")
    assert routing.block == "sendgrid-email/ops-mail" and routing.block_document_id == block_id
    auto = Automation.read(id=routing.automation_id)
    assert auto.actions[0].block_document_id == block_id
    auto.delete()
    with pytest.raises(ValueError, match="must be 'block-type-slug/name'"):
        setup_alert_routing(block="ops-mail")
