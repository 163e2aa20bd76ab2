"""Serve the classwatch deployments from one process: monthly ``monitor_period``, ``evaluate_model`` on training events."""

from __future__ import annotations

import json
from pathlib import Path

from prefect.events import DeploymentEventTrigger
from prefect.schedules import Cron
from prefect.types.entrypoint import EntrypointType

from deployments.events import MODEL_TRAINED

MONITOR_DEPLOYMENT = "monthly"
EVALUATE_DEPLOYMENT = "on-model-trained"
#: 06:00 on the 2nd of every month: the previous month's delivery has arrived by then.
DEFAULT_CRON = "0 6 2 * *"
#: What the schedule passes as ``period``: monitor_period resolves it to the month before the
#: run's scheduled start (a run on 2026-09-02 monitors 2026-08).
SCHEDULED_PERIOD = "previous"
DEFAULT_SPEC = "classwatch.yaml"


def _jinja_default(value: str | None) -> str:
    """A Jinja literal for the fallback of an event template (None -> ``None``)."""
    return "None" if value is None else json.dumps(value)


def trained_trigger(evaluate_spec: str | None = None) -> DeploymentEventTrigger:
    """Run the deployment on every ``classwatch.model.trained`` event, parameters from the event.

    Single-expression templates keep their JSON type, so a missing payload key becomes ``None``
    (the flow then uses the spec's value) rather than the text "None".
    """
    return DeploymentEventTrigger(
        name="classwatch: evaluate every trained model",
        expect={MODEL_TRAINED},
        posture="Reactive",
        threshold=1,
        within=0,
        parameters={
            "model_uri": "{{ event.resource.id }}",
            # Parenthesised: Prefect appends `| tojson`, which binds tighter than `or`.
            "model_name": "{{ (event.payload.model_name or None) }}",
            "test_data": "{{ (event.payload.test_data or None) }}",
            "spec": "{{ (event.payload.spec or " + _jinja_default(evaluate_spec) + ") }}",
        },
    )


def _spec_path(spec: str | Path | None) -> str | None:
    if spec is None:
        return None
    path = Path(spec).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"spec: {str(spec)!r} is not a file (resolved to {path.resolve()}). Pass the run-spec YAML "
            "(reference data, deliveries path with {period}, columns) with --spec."
        )
    return str(path.resolve())


def build_deployments(
    spec: str | Path | None = None,
    *,
    evaluate_spec: str | Path | None = None,
    cron: str | None = None,
    timezone: str = "UTC",
):
    """The RunnerDeployments ``classwatch serve`` serves (nothing is sent to the server here).

    - ``monitor_period/monthly`` (only when ``spec`` is given): cron ``cron`` (default
      ``0 6 2 * *``) in ``timezone``, parameters ``spec`` = the absolute spec path and, on the
      schedule, ``period`` = ``"previous"``; a manual run passes ``period=YYYY-MM``.
    - ``evaluate_model/on-model-trained``: triggered by ``classwatch.model.trained`` with
      ``model_uri``, ``model_name``, ``test_data`` and ``spec`` templated from the event (spec
      falls back to ``evaluate_spec``, else ``spec``).
    """
    from flows.evaluate_model import evaluate_model
    from flows.monitor_period import monitor_period

    spec_path = _spec_path(spec)
    eval_spec = _spec_path(evaluate_spec) or spec_path
    deployments = []
    if spec_path is not None:
        deployments.append(monitor_period.to_deployment(
            name=MONITOR_DEPLOYMENT,
            schedules=[Cron(cron or DEFAULT_CRON, timezone=timezone, parameters={"period": SCHEDULED_PERIOD},
                            slug="monthly")],
            parameters={"spec": spec_path},
            description="classwatch: monitor last month's delivery against the reference window (cron).",
            tags=["classwatch"],
            entrypoint_type=EntrypointType.MODULE_PATH,
        ))
    deployments.append(evaluate_model.to_deployment(
        name=EVALUATE_DEPLOYMENT,
        triggers=[trained_trigger(eval_spec)],
        parameters={"spec": eval_spec} if eval_spec else None,
        description=f"classwatch: evaluate a model when a {MODEL_TRAINED} event arrives.",
        tags=["classwatch"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    ))
    return deployments


def describe(deployments, api_url: str, tracking_uri: str) -> str:
    """The start-up message: what is served, against which servers, how to use and stop it."""
    lines = [f"classwatch serve: serving {len(deployments)} deployment(s) against the Prefect API {api_url}"]
    for d in deployments:
        name = f"{d.flow_name}/{d.name}"
        if d.schedules:
            s = d.schedules[0].schedule
            lines.append(f"  - {name}: cron '{s.cron}' ({s.timezone}), period = the previous month, "
                         f"spec {d.parameters.get('spec')}")
        for t in d.triggers or []:
            lines.append(f"  - {name}: on every {', '.join(sorted(t.expect))} event "
                         "(model URI, model name, test data, spec from the event)")
    if not any(d.schedules for d in deployments):
        lines.append("  (no monitoring schedule: pass --spec YAML to also monitor every month)")
    lines += [
        f"Flow runs execute in this process's children and log to MLflow at {tracking_uri}.",
        "Trigger an evaluation:  classwatch notify-trained --model-uri models:/NAME/VERSION --test-data PATH",
    ]
    if any(d.schedules for d in deployments):
        lines.append(f"Monitor one period now: prefect deployment run 'monitor_period/{MONITOR_DEPLOYMENT}' "
                     "--param period=YYYY-MM")
    lines.append("Stop with Ctrl-C (or SIGTERM): the schedule is paused until you serve again.")
    return "\n".join(lines)


def serve_deployments(
    spec: str | Path | None = None,
    *,
    evaluate_spec: str | Path | None = None,
    cron: str | None = None,
    timezone: str = "UTC",
    limit: int | None = 1,
    echo=print,
) -> None:
    """Build the deployments, say what is served where, and serve them until interrupted."""
    from prefect import serve

    from flows.runners import require_api_server
    from tasks.config.spec import default_tracking_uri

    api_url = require_api_server("serving needs a Prefect server that outlives this process, so that schedules "
                                 "and training events reach it (or use `classwatch server --serve`).")
    if spec is None and Path(DEFAULT_SPEC).is_file():
        spec = DEFAULT_SPEC
    deployments = build_deployments(spec, evaluate_spec=evaluate_spec, cron=cron, timezone=timezone)
    echo(describe(deployments, api_url, default_tracking_uri()))
    try:
        serve(*deployments, limit=limit, print_starting_message=False)
    except KeyboardInterrupt:  # Ctrl-C before the runner took over its own signal handling
        pass
    finally:
        echo("classwatch serve stopped.")
