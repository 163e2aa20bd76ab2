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
    from tasks.monitor import scheduled_period

    spec_path = _spec_path(spec)
    eval_spec = _spec_path(evaluate_spec) or spec_path
    deployments = []
    if spec_path is not None:
        deployments.append(monitor_period.to_deployment(
            name=MONITOR_DEPLOYMENT,
            schedules=[Cron(cron or DEFAULT_CRON, timezone=timezone,
                            parameters={"period": scheduled_period(cron) if cron else SCHEDULED_PERIOD},
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


def overdue_runs(deployment_names: list[str], api_url: str | None = None) -> list:
    """Flow runs of the deployments ``flow/name`` still waiting (Scheduled or Late) although their
    scheduled time has passed, oldest first: what nothing ran while ``serve`` or the Prefect API
    was down. The served runner picks them up (it asks for every run scheduled before now), so
    they run late, not never; this says which."""
    from datetime import datetime, timezone

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (DeploymentFilter, DeploymentFilterId, FlowRunFilter,
                                                FlowRunFilterExpectedStartTime, FlowRunFilterState,
                                                FlowRunFilterStateType)
    from prefect.client.schemas.objects import StateType
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url or PREFECT_API_URL.value()}), \
            get_client(sync_client=True) as c:
        ids = []
        for name in deployment_names:
            try:
                ids.append(c.read_deployment_by_name(name).id)
            except Exception:  # noqa: BLE001 - not registered yet: nothing of it can be overdue
                continue
        if not ids:
            return []
        return c.read_flow_runs(
            deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=ids)),
            flow_run_filter=FlowRunFilter(
                state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED])),
                expected_start_time=FlowRunFilterExpectedStartTime(before_=datetime.now(timezone.utc))),
            sort=FlowRunSort.EXPECTED_START_TIME_ASC)


def describe_overdue(runs: list) -> str:
    """One line per overdue run: deployment run name, scheduled time, state, the period it monitors."""
    if not runs:
        return "No scheduled run was missed."
    lines = [f"{len(runs)} scheduled run(s) did not run at their time; they run now, oldest first:"]
    for r in runs:
        when = r.expected_start_time.strftime("%Y-%m-%d %H:%M UTC") if r.expected_start_time else "?"
        period = (r.parameters or {}).get("period", "")
        what = f"period {period} (the month before {when[:10]})" if period == SCHEDULED_PERIOD else f"period {period}"
        lines.append(f"  - {r.name}: scheduled {when}, {r.state_name}, {what if period else 'no period'}")
    return "\n".join(lines)


def _api_up(api_url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(api_url.rstrip("/") + "/health", timeout=5) as resp:
            return resp.status == 200
    except OSError:
        return False


def watch_api(api_url: str, deployment_names: list[str], echo=print, interval: float = 10.0):
    """A daemon thread that says when the Prefect API goes away and when it is back, and then lists
    the scheduled runs that came due meanwhile (:func:`overdue_runs`). Returns the thread; set
    its ``stop`` event to end it."""
    import threading
    import time
    from datetime import datetime, timezone

    stop = threading.Event()

    def loop() -> None:
        down_since = None
        while not stop.wait(interval):
            up = _api_up(api_url)
            if not up and down_since is None:
                down_since = time.monotonic()
                echo(f"Prefect API {api_url} unreachable since {datetime.now(timezone.utc):%H:%M:%S} UTC: runs that "
                     "come due meanwhile run when it is back (this process keeps waiting for it; Ctrl-C stops).")
            elif up and down_since is not None:
                echo(f"Prefect API {api_url} back after {time.monotonic() - down_since:.0f} s.")
                down_since = None
                try:
                    echo(describe_overdue(overdue_runs(deployment_names, api_url)))
                except Exception as exc:  # noqa: BLE001 - a report, never a reason to stop serving
                    echo(f"Could not list the overdue runs: {exc}")

    thread = threading.Thread(target=loop, name="classwatch-api-watch", daemon=True)
    thread.stop = stop
    thread.start()
    return thread


def serve_deployments(
    spec: str | Path | None = None,
    *,
    evaluate_spec: str | Path | None = None,
    cron: str | None = None,
    timezone: str = "UTC",
    limit: int | None = 1,
    webhook_port: int | None = None,
    echo=print,
) -> None:
    """Build the deployments, say what is served where, and serve them until interrupted.

    Also listens for MLflow registry webhooks on 127.0.0.1 (``webhook_port``, default
    $CLASSWATCH_WEBHOOK_PORT or 4210, 0 = off; see deployments/webhooks.py).
    """
    import time

    from prefect import serve

    from flows.runners import require_api_server
    from tasks.config.spec import default_tracking_uri

    api_url = require_api_server("serving needs a Prefect server that outlives this process, so that schedules "
                                 "and training events reach it (or use `classwatch server --serve`).")
    if spec is None and Path(DEFAULT_SPEC).is_file():
        spec = DEFAULT_SPEC
    deployments = build_deployments(spec, evaluate_spec=evaluate_spec, cron=cron, timezone=timezone)
    echo(describe(deployments, api_url, default_tracking_uri()))
    from deployments.webhooks import start_listener

    hooks = start_listener(_spec_path(evaluate_spec) or _spec_path(spec), webhook_port, echo=echo)
    names = [f"{d.flow_name}/{d.name}" for d in deployments]
    try:  # runs that came due while nothing served them (this process was stopped, the machine off)
        overdue = overdue_runs(names, api_url)
        if overdue:
            echo(describe_overdue(overdue))
    except Exception as exc:  # noqa: BLE001 - the runner below reports an unreachable API itself
        echo(f"Could not list the overdue runs: {exc}")
    watcher = watch_api(api_url, names, echo=echo)
    try:
        while True:
            try:
                serve(*deployments, limit=limit, print_starting_message=False)
                break
            except Exception:
                # Prefect's runner may give up after 3 failed polls when its server is gone: serve
                # again once it is back (same database: the deployments and their runs are there).
                if _api_up(api_url):
                    raise
                while not _api_up(api_url):
                    time.sleep(5)
    except KeyboardInterrupt:  # Ctrl-C before the runner took over its own signal handling
        pass
    finally:
        watcher.stop.set()
        if hooks is not None:
            hooks.close()
        echo("classwatch serve stopped.")
