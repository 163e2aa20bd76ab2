"""The retraining alert: a Prefect event with a deterministic id, a markdown artifact, MLflow tags (written and read)."""

from __future__ import annotations

import json
import re
import uuid
from typing import Mapping

from prefect import task
from prefect.cache_policies import NO_CACHE

from metrics_core.monitoring import VERDICTS, Alert, Reason
from tasks.store.mlflow import ui_link

#: The name of the retraining alert event (the automation in deployments/automations.py routes it).
EVENT = "classwatch.alert.retrain"
#: Namespace of the alert event ids: uuid5(NAMESPACE, "<model>/<period>") is the same on every re-run,
#: so the Prefect server drops a repeated alert for one model and period.
NAMESPACE = uuid.UUID("6f2d7a9e-5b1c-4c3e-9a8f-1c1a55ac0a7e")
REASONS_LIMIT = 8000
#: MLflow tags of a period run: the verdict, the reasons as text, the reasons as records (JSON). Keys of
#: up to 17 characters: the run page's tag list cuts longer ones to their first letter when the value is long.
ALERT_TAG, REASONS_TAG, RECORDS_TAG = "classwatch.alert", "alert reasons", "alert records"
#: MLflow tag of a period run whose reasons name segments: those segments (``retailer=shop_07, ...``).
SEGMENTS_TAG = "alert segments"
#: The values of ``classwatch.alert``: the period raised the retraining alert, or it did not.
ALERT_VALUES = ("retrain", "none")
#: The keys of the reasons before they were renamed (periods logged then are still read).
OLD_REASONS_TAG, OLD_RECORDS_TAG = "classwatch.alert.reasons", "classwatch.alert.reasons.json"


def event_id(model: str, period: str) -> uuid.UUID:
    """The alert event id of ``model`` and ``period`` (uuid5, deterministic).

    >>> event_id("m", "2024-08") == event_id("m", "2024-08") != event_id("m", "2024-09")
    True
    """
    return uuid.uuid5(NAMESPACE, f"{EVENT}/{model}/{period}")


def resource(model: str) -> dict[str, str]:
    """The Prefect resource an alert concerns: ``classwatch.model.<name>``."""
    return {"prefect.resource.id": f"classwatch.model.{model}", "prefect.resource.name": model}


def _records(reasons) -> str:
    """The reasons as a JSON list within the tag limit (the strongest ones when all do not fit:
    the longest first ones whose list fits; ``[]`` when not even the first does)."""
    parts = [json.dumps(r.to_dict(), separators=(",", ":")) for r in reasons]
    # each record encoded once (a period of 50 segments may have hundreds of reasons): the list of
    # the first k is "[" + their texts joined by "," + "]", json.dumps's own text of that list
    size, k = 1, 0
    for part in parts:
        if size + len(part) + 1 > REASONS_LIMIT:
            break
        size, k = size + len(part) + 1, k + 1
    return "[" + ",".join(parts[:k]) + "]"


def alert_tags(decision: Alert) -> dict[str, str]:
    """MLflow tags: ``classwatch.alert`` = retrain | none, ``alert reasons`` (the sentences joined
    with "; ", or "none") and, when there are reasons, ``alert records`` (the records as JSON)."""
    reasons = "; ".join(decision.texts) if decision.reasons else "none"
    tags = {ALERT_TAG: ALERT_VALUES[0] if decision.alert else ALERT_VALUES[1], REASONS_TAG: reasons[:REASONS_LIMIT]}
    if decision.reasons:
        tags[RECORDS_TAG] = _records(decision.reasons)
    if alert_segments(decision):
        tags[SEGMENTS_TAG] = ", ".join(alert_segments(decision))[:REASONS_LIMIT]
    return tags


def alert_segments(decision: Alert) -> list[str]:
    """The segments (``column=value``) named by the period's reasons, strongest first, each once.

    >>> from metrics_core.monitoring import TestKey
    >>> r = Reason(TestKey("prevalence_label", "tea", ("retailer", "shop_07")), 0.2, 0.02, 1e-9, 0.1, 0.3)
    >>> alert_segments(Alert(True, (r,), None, {}))
    ['retailer=shop_07']
    """
    return list(dict.fromkeys(r.key.segment_text for r in decision.reasons if r.key.segment))


def logged_alert(tags: Mapping[str, str]) -> bool:
    """Whether a logged period raised the retraining alert: its ``classwatch.alert`` tag, as
    :func:`alert_tags` wrote it (False for a run without the tag).

    >>> from metrics_core.monitoring import decide_alert
    >>> logged_alert(alert_tags(decide_alert({}))), logged_alert({ALERT_TAG: "retrain"}), logged_alert({})
    (False, True, False)
    """
    return tags.get(ALERT_TAG) == ALERT_VALUES[0]


def verdict(alert: bool, metrics: Mapping[str, float]) -> str:
    """The verdict of a period, from its alert and its metrics (as logged, or just computed).

    Parameters
    ----------
    alert : bool
        Whether the period raised the retraining alert (:func:`logged_alert` for a logged period).
    metrics : mapping of str to float
        The period's metrics under their semantic keys; ``not_enough_labels`` is 1.0 when the
        headline test could not see a drop of the policy's ``metric_drop``.

    Returns
    -------
    str
        One of :data:`metrics_core.monitoring.VERDICTS`: ``"retrain"`` with an alert, else ``"not
        enough labels to judge"`` when ``not_enough_labels`` is 1.0, else ``"no alert"`` (also for a
        period logged before that metric existed).

    Examples
    --------
    >>> verdict(True, {}), verdict(False, {"not_enough_labels": 1.0}), verdict(False, {"not_enough_labels": 0.0})
    ('retrain', 'not enough labels to judge', 'no alert')
    """
    if alert:
        return VERDICTS[0]
    return VERDICTS[1] if metrics.get("not_enough_labels") == 1.0 else VERDICTS[2]


def reasons_from_tags(tags: dict) -> tuple[Reason, ...]:
    """The reasons of a logged period, from the tags :func:`alert_tags` wrote.

    >>> from metrics_core.monitoring import TestKey
    >>> r = Reason(TestKey("price", "tea"), 0.15, 0.1, 0.001, 2.0, 2.3)
    >>> reasons_from_tags({RECORDS_TAG: _records([r])}) == (r,)
    True
    """
    return tuple(Reason.from_dict(d) for d in json.loads(tags.get(RECORDS_TAG) or tags.get(OLD_RECORDS_TAG) or "[]"))


def payload(model: str, period: str, decision: Alert, run_id: str | None, tracking_uri: str | None,
            experiment_id: str | None = None) -> dict:
    """JSON payload of the event: model, period, reasons (list and one string), figures, the segments
    the reasons name (:func:`alert_segments`), the MLflow run
    id and store, and ``mlflow_run_url`` (the run page) when the store is a tracking server."""
    figures = {k: (None if v != v else float(v)) for k, v in decision.figures.items()}
    out = {"model": model, "period": period, "reasons": decision.texts, "reason": "; ".join(decision.texts),
           "figures": figures, "mlflow_run_id": run_id, "mlflow_tracking_uri": tracking_uri,
           "segments": alert_segments(decision)}
    if run_id and experiment_id and tracking_uri and tracking_uri.startswith(("http://", "https://")):
        out["mlflow_run_url"] = ui_link(experiment_id, run_id, tracking_uri)
    return out


def artifact_key(model: str, period: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only.

    >>> artifact_key("Price Classifier_v2", "2024-08")
    'classwatch-alert-price-classifier-v2-2024-08'
    """
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", f"classwatch-alert-{model}-{period}".lower())).strip("-")


@task(name="raise-alert", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def raise_alert(model: str, period: str, decision: Alert, run_id: str | None, tracking_uri: str | None,
                experiment_id: str | None, text: str) -> str:
    """Emit ``classwatch.alert.retrain`` (deterministic id) and the alert markdown ``text`` (the one
    logged to MLflow) as a Prefect artifact; return the event id."""
    from prefect.artifacts import create_markdown_artifact
    from prefect.events import emit_event

    eid = event_id(model, period)
    related = [{"prefect.resource.id": f"mlflow.run.{run_id}", "prefect.resource.role": "mlflow-run"}] \
        if run_id else None
    emit_event(EVENT, resource=resource(model),
               payload=payload(model, period, decision, run_id, tracking_uri, experiment_id), id=eid, related=related)
    create_markdown_artifact(text, key=artifact_key(model, period),
                             description=f"classwatch retraining alert for {model}, {period}")
    return str(eid)
