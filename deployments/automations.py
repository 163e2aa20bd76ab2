"""Route ``classwatch.alert.retrain`` events to people: a notification block and one Prefect automation."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse
from uuid import UUID

from tasks.alerts import EVENT as ALERT_EVENT

AUTOMATION_NAME = "classwatch: notify on retraining alerts"
BLOCK_NAME = "classwatch-retrain-alerts"

#: Jinja templates rendered by the Prefect server for each alert event (payload of tasks/alerts.py:
#: model, period, reasons, figures, mlflow_run_id, mlflow_tracking_uri, mlflow_run_url when the store is
#: an http server; a missing key renders empty).
SUBJECT = (
    "classwatch: retrain {{ event.payload.model | default(event.resource.id, true) }}"
    " (period {{ event.payload.period }})"
)
BODY = """classwatch raised a retraining alert.
Model:   {{ event.payload.model | default(event.resource.id, true) }}
Period:  {{ event.payload.period }}
Reasons: {% if event.payload.reasons is string %}{{ event.payload.reasons }}{% elif event.payload.reasons %}{{ event.payload.reasons | join('; ') }}{% endif %}
{% if event.payload.mlflow_run_url %}MLflow run: {{ event.payload.mlflow_run_url }}
{% elif event.payload.mlflow_run_id %}MLflow run {{ event.payload.mlflow_run_id }} in {{ event.payload.mlflow_tracking_uri }}
{% endif %}Event {{ event.id }} at {{ event.occurred }}."""


@dataclass(frozen=True)
class AlertRouting:
    """What :func:`setup_alert_routing` left on the server."""

    automation_id: UUID
    block_document_id: UUID
    block: str  # "block-type-slug/name"
    created: bool  # False when an existing automation was updated


def webhook_kind(url: str) -> str:
    """Which Prefect notification block suits a webhook URL: ``slack``, ``teams`` or ``custom``.

    >>> webhook_kind("https://hooks.slack.com/services/T0/B0/XXX")
    'slack'
    >>> webhook_kind("https://prod-01.westeurope.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke")
    'teams'
    >>> webhook_kind("http://127.0.0.1:9000/hook")
    'custom'
    """
    host = (urlparse(url).hostname or "").lower()
    if host in ("hooks.slack.com", "hooks.slack-gov.com"):
        return "slack"
    if host.endswith((".logic.azure.com", ".powerplatform.com", ".webhook.office.com")):
        return "teams"
    return "custom"


def _notification_block(webhook_url: str, kind: str):
    from prefect.blocks.notifications import (
        CustomWebhookNotificationBlock,
        MicrosoftTeamsWebhook,
        SlackWebhook,
    )

    parsed = urlparse(webhook_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(
            f"webhook: {webhook_url!r} is not an http(s) URL. Pass the full URL of the webhook, e.g. "
            "https://hooks.slack.com/services/T000/B000/XXXX or http://127.0.0.1:9000/alerts."
        )
    if kind == "slack":
        return SlackWebhook(url=webhook_url)
    if kind == "teams":
        try:
            return MicrosoftTeamsWebhook(url=webhook_url)
        except ValueError as exc:
            raise ValueError(
                f"webhook: {webhook_url!r} looks like Microsoft Teams but is not a Teams Workflows URL "
                f"({exc}). Copy the URL of a 'Post to a channel when a webhook request is received' "
                "workflow, or pass --kind custom to post plain JSON to it."
            ) from exc
    if kind == "custom":
        # A JSON body any receiver can read; "text" is what Slack-compatible chat servers show.
        return CustomWebhookNotificationBlock(
            name=BLOCK_NAME,
            url=webhook_url,
            json_data={"text": "{{subject}}\n{{body}}", "subject": "{{subject}}", "body": "{{body}}"},
        )
    raise ValueError(f"kind: {kind!r} is not one of auto, slack, teams, custom.")


def _load_existing_block(block: str):
    from prefect.blocks.core import Block
    from prefect.blocks.abstract import NotificationBlock

    if "/" not in block:
        raise ValueError(
            f"block: {block!r} must be 'block-type-slug/name', e.g. 'sendgrid-email/ops-team' "
            "(see `prefect block ls`)."
        )
    loaded = Block.load(block)
    if not isinstance(loaded, NotificationBlock):
        raise ValueError(f"block: {block!r} is a {type(loaded).__name__}, not a notification block.")
    return loaded


def setup_alert_routing(
    webhook_url: str | None = None,
    *,
    block: str | None = None,
    kind: str = "auto",
    model: str | None = None,
    automation_name: str = AUTOMATION_NAME,
) -> AlertRouting:
    """Create or update the automation that sends every ``classwatch.alert.retrain`` event to people.

    Either ``webhook_url`` (saved as a notification block named ``classwatch-retrain-alerts``: a Slack
    or Microsoft Teams block when the URL is theirs, otherwise a custom webhook posting JSON
    ``{"text", "subject", "body"}``) or ``block``, an existing notification block such as
    ``"sendgrid-email/ops-team"`` for e-mail. The automation (trigger: the event, reactive, threshold
    1, within 0; action: send the notification) is looked up by name: re-running updates it and the
    block in place, never duplicates. Needs ``PREFECT_API_URL`` (a running server).
    """
    from prefect.automations import Automation, EventTrigger, SendNotification
    from prefect.client.orchestration import get_client
    from flows.runners import require_api_server

    require_api_server("an automation on the ephemeral API would disappear with this process.")
    if (webhook_url is None) == (block is None):
        raise ValueError("Pass exactly one of a webhook URL (--webhook) or an existing block (--block).")

    if webhook_url is not None:
        chosen = webhook_kind(webhook_url) if kind == "auto" else kind
        notifier = _notification_block(webhook_url, chosen)
        block_id = notifier.save(BLOCK_NAME, overwrite=True)
        block_ref = f"{notifier.get_block_type_slug()}/{BLOCK_NAME}"
    else:
        notifier = _load_existing_block(block)
        block_id = notifier._block_document_id
        block_ref = block

    match = {"prefect.resource.id": f"classwatch.model.{model}"} if model else {}
    definition = Automation(
        name=automation_name,
        description=f"classwatch: every {ALERT_EVENT} event -> {block_ref}",
        trigger=EventTrigger(expect={ALERT_EVENT}, match=match, posture="Reactive", threshold=1, within=0),
        actions=[SendNotification(block_document_id=block_id, subject=SUBJECT, body=BODY)],
    )
    with get_client(sync_client=True) as client:
        existing = client.read_automations_by_name(automation_name)
        for duplicate in existing[1:]:  # left by an older, non-idempotent set-up
            client.delete_automation(duplicate.id)
    if existing:
        definition.id = existing[0].id
        definition.update()
        return AlertRouting(existing[0].id, block_id, block_ref, created=False)
    created = definition.create()
    return AlertRouting(created.id, block_id, block_ref, created=True)
