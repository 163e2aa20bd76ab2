"""Emit ``classwatch.model.trained`` from a training job so the served ``evaluate_model`` deployment runs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import uuid
from pathlib import Path
from typing import Any

MODEL_TRAINED = "classwatch.model.trained"

_URI_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def model_name_from_uri(model_uri: str) -> str:
    """The registered model name in an MLflow model URI, else the URI's last path part.

    >>> model_name_from_uri("models:/price-classifier/3")
    'price-classifier'
    >>> model_name_from_uri("models:/price-classifier@champion")
    'price-classifier'
    >>> model_name_from_uri("runs:/0a1b2c/model")
    'model'
    """
    if model_uri.startswith("models:/"):
        return re.split(r"[/@]", model_uri.removeprefix("models:/"), maxsplit=1)[0]
    return model_uri.rstrip("/").rsplit("/", 1)[-1]


def _resolve_test_data(test_data: str | Path) -> str:
    """An absolute path (the served flow runs in another working directory) or the URI unchanged."""
    text = str(test_data)
    if _URI_SCHEME.match(text) and not re.match(r"^[a-zA-Z]:[\\/]", text):  # s3://, gs://, file:// ...
        return text
    path = Path(text).expanduser()
    if not path.exists():
        raise FileNotFoundError(
            f"test_data: {text!r} does not exist (resolved to {path.resolve()}). Pass the path of the "
            "test set (Parquet file or directory, Arrow IPC, CSV) that evaluate_model should score, "
            "or a URI such as s3://bucket/test.parquet."
        )
    return str(path.resolve())


def build_trained_event(
    model_uri: str,
    test_data: str | Path,
    model_name: str | None = None,
    *,
    spec: str | Path | None = None,
    extra: dict[str, Any] | None = None,
    event_id: uuid.UUID | None = None,
):
    """The ``classwatch.model.trained`` event (not sent): resource id = the model URI.

    The payload carries ``model_uri``, ``model_name``, ``test_data`` (absolute path or URI),
    ``spec`` (absolute path of a run-spec YAML, or ``""``) and any ``extra`` keys; the deployment's
    trigger templates the flow parameters from them (``deployments/prefect.yaml``).
    """
    from prefect.events import Event

    if not isinstance(model_uri, str) or not model_uri.strip():
        raise ValueError(
            "model_uri: empty. Pass the MLflow URI of the trained model, e.g. models:/price-classifier/3 "
            "or runs:/<run_id>/model."
        )
    model_uri = model_uri.strip()
    name = model_name or model_name_from_uri(model_uri)
    payload: dict[str, Any] = {
        **(extra or {}),
        "model_uri": model_uri,
        "model_name": name,
        "test_data": _resolve_test_data(test_data),
        "spec": "" if spec is None else _resolve_test_data(spec),
    }
    kwargs = {"id": event_id} if event_id is not None else {}
    return Event(
        event=MODEL_TRAINED,
        resource={
            "prefect.resource.id": model_uri,
            "prefect.resource.name": name,
            "classwatch.model.name": name,
        },
        payload=payload,
        **kwargs,
    )


async def _send(event, reconnection_attempts: int) -> None:
    from prefect.events.clients import get_events_client

    async with get_events_client(reconnection_attempts=reconnection_attempts) as client:
        await client.emit(event)


def _run(coro) -> None:
    """Run a coroutine to completion, also from code that already runs an event loop (notebooks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coro).result()


def send_event(event, reconnection_attempts: int = 3) -> None:
    """Send a prepared Prefect event to the server in PREFECT_API_URL; raise if it cannot be reached."""
    _run(_send(event, reconnection_attempts))


def notify_trained(
    model_uri: str,
    test_data: str | Path,
    model_name: str | None = None,
    *,
    spec: str | Path | None = None,
    extra: dict[str, Any] | None = None,
    event_id: uuid.UUID | None = None,
    reconnection_attempts: int = 3,
):
    """Tell Prefect that a model was trained: emit ``classwatch.model.trained`` and return the event.

    A deployment served by ``classwatch serve`` (or deployed from ``deployments/prefect.yaml``) then
    runs ``evaluate_model`` on ``test_data`` for this model. The event goes to the Prefect server in
    ``PREFECT_API_URL``; it is sent over the events websocket and this function returns once it is
    sent, raising if the server cannot be reached (never a silent loss).

    Parameters
    ----------
    model_uri : str
        MLflow model URI, e.g. ``models:/price-classifier/3``; it becomes the event's resource id.
    test_data : str or Path
        Test set to evaluate on; local paths are made absolute (the flow runs elsewhere).
    model_name : str, optional
        Defaults to the registered model name in ``model_uri``.
    spec : str or Path, optional
        A run-spec YAML for the evaluation (columns, task kind, ...); defaults of the flow otherwise.
    extra : dict, optional
        More payload keys (e.g. the training run id), kept as they are.
    event_id : uuid.UUID, optional
        A fixed id makes a repeated notification a no-op on the server (it drops duplicate ids).

    Examples
    --------
    In a training script, after ``mlflow.register_model``::

        from deployments.events import notify_trained
        notify_trained("models:/price-classifier/3", "data/test.parquet")
    """
    from flows.runners import require_api_server

    api_url = require_api_server("there is no Prefect server to tell that the model was trained (an ephemeral "
                                 "server would drop the event).")
    event = build_trained_event(model_uri, test_data, model_name, spec=spec, extra=extra, event_id=event_id)
    try:
        send_event(event, reconnection_attempts)
    except Exception as exc:  # websockets / OS errors: say what to check
        raise RuntimeError(
            f"Could not send {MODEL_TRAINED} to the Prefect server at {api_url}: {exc}. "
            "Is the server running (`classwatch server` or `prefect server start`) and is "
            "PREFECT_API_URL right?"
        ) from exc
    return event
