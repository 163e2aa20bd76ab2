"""The retraining alert: a Prefect event with a deterministic id, a markdown artifact, MLflow tags."""

from __future__ import annotations

import re
import uuid

from prefect import task
from prefect.cache_policies import NO_CACHE

from metrics_core.monitoring import Alert

EVENT = "classwatch.alert.retrain"
#: Namespace of the alert event ids: uuid5(NAMESPACE, "<model>/<period>") is the same on every re-run,
#: so the Prefect server drops a repeated alert for one model and period.
NAMESPACE = uuid.UUID("6f2d7a9e-5b1c-4c3e-9a8f-1c1a55ac0a7e")
REASONS_LIMIT = 8000


def event_id(model: str, period: str) -> uuid.UUID:
    """The alert event id of ``model`` and ``period`` (uuid5, deterministic).

    >>> event_id("m", "2024-08") == event_id("m", "2024-08") != event_id("m", "2024-09")
    True
    """
    return uuid.uuid5(NAMESPACE, f"{EVENT}/{model}/{period}")


def resource(model: str) -> dict[str, str]:
    """The Prefect resource an alert concerns: ``classwatch.model.<name>``."""
    return {"prefect.resource.id": f"classwatch.model.{model}", "prefect.resource.name": model}


def alert_tags(decision: Alert) -> dict[str, str]:
    """MLflow tags: ``classwatch.alert`` = retrain | none and ``classwatch.alert.reasons``."""
    reasons = "; ".join(decision.reasons) if decision.reasons else "none"
    return {"classwatch.alert": "retrain" if decision.alert else "none",
            "classwatch.alert.reasons": reasons[:REASONS_LIMIT]}


def payload(model: str, period: str, decision: Alert, run_id: str | None, tracking_uri: str | None,
            experiment_id: str | None = None) -> dict:
    """JSON payload of the event: model, period, reasons (list and one string), figures, the MLflow run
    id and store, and ``mlflow_run_url`` (the run page) when the store is a tracking server."""
    figures = {k: (None if v != v else float(v)) for k, v in decision.figures.items()}
    out = {"model": model, "period": period, "reasons": list(decision.reasons),
           "reason": "; ".join(decision.reasons), "figures": figures, "mlflow_run_id": run_id,
           "mlflow_tracking_uri": tracking_uri}
    if run_id and experiment_id and tracking_uri and tracking_uri.startswith(("http://", "https://")):
        out["mlflow_run_url"] = f"{tracking_uri.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}"
    return out


def markdown(model: str, period: str, decision: Alert, run_id: str | None, tracking_uri: str | None) -> str:
    """The alert as markdown (Prefect artifact and MLflow text artifact)."""
    lines = [f"# Retraining alert: {model}, {period}", "",
             f"{len(decision.reasons)} reason(s) (corrected tests that reject AND pass their practical threshold, "
             "or the headline metric's lower bound under its floor):", ""]
    lines += [f"- {r}" for r in decision.reasons]
    rows = decision.table.filter(decision.table["drift"].fill_null(False)) if decision.table.height else None
    if rows is not None and rows.height:
        lines += ["", "| test | effect | threshold | p (adjusted) |", "|---|---|---|---|"]
        for r in rows.iter_rows(named=True):
            lines.append(f"| {r['name']} | {r['effect_size']:.4g} | {r['threshold']:g} | {r['p_adjusted']:.2g} |")
    if run_id:
        lines += ["", f"MLflow run `{run_id}` in `{tracking_uri}`: open it with `classwatch ui`."]
    return "\n".join(lines) + "\n"


def artifact_key(model: str, period: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only.

    >>> artifact_key("Price Classifier_v2", "2024-08")
    'classwatch-alert-price-classifier-v2-2024-08'
    """
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", f"classwatch-alert-{model}-{period}".lower())).strip("-")


@task(name="raise-alert", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def raise_alert(model: str, period: str, decision: Alert, run_id: str | None, tracking_uri: str | None,
                experiment_id: str | None = None) -> str:
    """Emit ``classwatch.alert.retrain`` (deterministic id) and a markdown artifact; return the event id."""
    from prefect.artifacts import create_markdown_artifact
    from prefect.events import emit_event

    eid = event_id(model, period)
    related = [{"prefect.resource.id": f"mlflow.run.{run_id}", "prefect.resource.role": "mlflow-run"}] \
        if run_id else None
    emit_event(EVENT, resource=resource(model),
               payload=payload(model, period, decision, run_id, tracking_uri, experiment_id), id=eid, related=related)
    create_markdown_artifact(markdown(model, period, decision, run_id, tracking_uri), key=artifact_key(model, period),
                             description=f"classwatch retraining alert for {model}, {period}")
    return str(eid)
