"""The deployment commands of ``classwatch``: serve, notify-trained, alerts setup, hooks setup, server."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

alerts_app = typer.Typer(
    name="alerts",
    help="Route retraining alerts (Prefect event classwatch.alert.retrain) to people.",
    no_args_is_help=True,
)


def _fail(message: str, code: int = 1) -> None:
    """``Error: message`` on stderr and exit ``code`` (docs/cli.md: 1 failure, 2 bad input)."""
    typer.secho(f"Error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=code)


def serve(
    cron: str = typer.Option(
        None, help="Cron schedule of the monitoring deployment (default '0 6 2 * *': 06:00 on the 2nd of each month)."
    ),
    timezone: str = typer.Option("UTC", help="Time zone of the cron schedule."),
    spec: Optional[Path] = typer.Option(
        None, help="Run-spec YAML that monitor_period uses on each scheduled run (its period is filled in per run). "
        "Default: classwatch.yaml in this folder; without a spec only evaluate_model is served."
    ),
    evaluate_spec: Optional[Path] = typer.Option(
        None, help="Default run-spec YAML for evaluate_model (an event may name its own)."
    ),
    limit: int = typer.Option(1, help="How many flow runs may run at the same time in this process."),
    webhook_port: Optional[int] = typer.Option(
        None, envvar="CLASSWATCH_WEBHOOK_PORT",
        help="Port on 127.0.0.1 for MLflow registry webhooks (see `classwatch hooks setup`); default 4210, 0 = off.",
    ),
) -> None:
    """Serve the classwatch deployments from this process, until Ctrl-C.

    Serves `monitor_period` on a monthly cron schedule and `evaluate_model`, started by every
    `classwatch.model.trained` event (see `classwatch notify-trained`), against the Prefect server in
    PREFECT_API_URL. No work pool or worker is needed.
    """
    from deployments.serve import serve_deployments

    try:
        serve_deployments(cron=cron, timezone=timezone, spec=spec, evaluate_spec=evaluate_spec, limit=limit,
                          webhook_port=webhook_port)
    except (ValueError, FileNotFoundError) as exc:  # bad input: a bad spec or schedule, no such spec file
        _fail(str(exc), code=2)
    except RuntimeError as exc:
        _fail(str(exc))


def notify_trained(
    model_uri: str = typer.Option(..., "--model-uri", help="MLflow model URI, e.g. models:/price-classifier/3."),
    test_data: str = typer.Option(..., "--test-data", help="Test set to evaluate on (Parquet/Arrow/CSV path or URI)."),
    model_name: Optional[str] = typer.Option(None, "--model-name", help="Defaults to the name in --model-uri."),
    spec: Optional[Path] = typer.Option(None, "--spec", help="Run-spec YAML for the evaluation."),
) -> None:
    """Tell Prefect a model was trained: emits classwatch.model.trained, which starts evaluate_model.

    Run it at the end of a training job. Needs PREFECT_API_URL (the server `classwatch serve` uses).
    """
    from deployments.events import notify_trained as emit
    from prefect.settings import PREFECT_API_URL

    try:
        event = emit(model_uri, test_data, model_name, spec=spec)
    except (ValueError, FileNotFoundError) as exc:  # bad input: exit 2
        _fail(str(exc), code=2)
    except RuntimeError as exc:
        _fail(str(exc))
    typer.echo(
        f"Sent classwatch.model.trained for {model_uri} (event {event.id}) to {PREFECT_API_URL.value()}.\n"
        "A served evaluate_model deployment starts a run for it; watch it with `prefect flow-run ls` "
        "or in the Prefect UI."
    )


@alerts_app.command("setup")
def alerts_setup(
    webhook: Optional[str] = typer.Option(
        None, "--webhook", help="Webhook URL: Slack, Microsoft Teams (Workflows) or any URL that accepts a JSON POST."
    ),
    block: Optional[str] = typer.Option(
        None, "--block", help="Use an existing notification block instead, e.g. sendgrid-email/ops-team (for e-mail)."
    ),
    kind: str = typer.Option("auto", help="Block type for --webhook: auto, slack, teams or custom."),
    model: Optional[str] = typer.Option(None, help="Only alerts of this model (default: every model)."),
) -> None:
    """Send every retraining alert to a webhook or notification block (idempotent: re-run to change it)."""
    from deployments.automations import ALERT_EVENT, setup_alert_routing
    from prefect.settings import PREFECT_API_URL

    try:
        routing = setup_alert_routing(webhook, block=block, kind=kind, model=model)
    except ValueError as exc:  # bad options (both or neither of --webhook/--block, an unknown kind or block)
        _fail(str(exc), code=2)
    except RuntimeError as exc:
        _fail(str(exc))
    verb = "Created" if routing.created else "Updated"
    typer.echo(
        f"{verb} automation {routing.automation_id} on {PREFECT_API_URL.value()}:\n"
        f"  every {ALERT_EVENT} event{' of ' + model if model else ''} -> notification block {routing.block}\n"
        "See it with `prefect automation ls`; re-run this command to change the target."
    )


hooks_app = typer.Typer(
    name="hooks",
    help="Start evaluations from the MLflow model registry itself (registry webhooks), no line in training code.",
    no_args_is_help=True,
)


@hooks_app.command("setup")
def hooks_setup(
    port: int = typer.Option(4210, envvar="CLASSWATCH_WEBHOOK_PORT",
                             help="Port of the listener of `classwatch serve` on 127.0.0.1."),
    url: Optional[str] = typer.Option(None, help="Full listener URL instead (e.g. behind a proxy); overrides --port."),
    rotate_secret: bool = typer.Option(False, "--rotate-secret", help="Generate a new shared secret."),
    test: bool = typer.Option(True, "--test/--no-test", help="Ask MLflow to send a test delivery to the listener."),
) -> None:
    """Register (or update) the classwatch webhook on the MLflow tracking server in MLFLOW_TRACKING_URI.

    Idempotent: re-running updates the one webhook named classwatch-evaluate, never adds another.
    The shared secret goes to a 0600 file that `classwatch serve` reads at every delivery.
    """
    from deployments.webhooks import MLFLOW_EVENTS, PATH, WEBHOOK_NAME, setup_webhook

    target = url or f"http://127.0.0.1:{port}{PATH}"
    try:
        done = setup_webhook(target, rotate_secret=rotate_secret, test=test)
    except Exception as exc:  # MLflow REST errors (server without webhook settings, unreachable) included
        _fail(f"could not register the MLflow webhook: {exc}")
    verb = "Created" if done.created else "Updated"
    lines = [
        f"{verb} MLflow webhook {WEBHOOK_NAME} (id {done.webhook_id}) on {done.tracking_uri}",
        f"  events {', '.join(MLFLOW_EVENTS)} -> {done.url}",
        f"  secret: {'new' if done.secret_rotated else 'unchanged'}, stored in {done.secret_path} (mode 0600); "
        "`classwatch serve` reads it there",
    ]
    if done.removed_duplicates:
        lines.append(f"  removed {done.removed_duplicates} duplicate webhook(s) of the same name")
    if done.test is not None:
        if done.test.success:
            lines.append(f"  test delivery: the listener answered {done.test.response_status} (signature verified)")
        else:
            why = done.test.error_message or f"HTTP {done.test.response_status} {done.test.response_body}"
            lines.append(f"  test delivery failed: {why}\n  (is `classwatch serve` running and listening on {done.url}?)")
    lines.append("Which models and events start an evaluation: `trigger:` in the spec of `classwatch serve` "
                 "(default: every new version of the spec's model). Train and register as usual.")
    typer.echo("\n".join(lines))


def server(
    host: str = typer.Option("127.0.0.1", help="Interface to bind (127.0.0.1: this machine only)."),
    prefect_port: int = typer.Option(4200, help="Port of the Prefect server (API and UI)."),
    mlflow_port: int = typer.Option(5000, help="Port of the MLflow tracking server (and UI)."),
    store: Path = typer.Option(Path("."), help="Folder of the MLflow store: mlflow.db, mlruns/ and logs/."),
    prefect_home: Optional[Path] = typer.Option(None, help="PREFECT_HOME of the Prefect server (default ~/.prefect)."),
    with_serve: bool = typer.Option(False, "--serve", help="Also run `classwatch serve` against them."),
    webhook_port: Optional[int] = typer.Option(
        None, help="With --serve: port on 127.0.0.1 for MLflow registry webhooks (default 4210; 0 = off)."
    ),
) -> None:
    """Start a local Prefect server and MLflow tracking server (SQLite, local artifacts) until Ctrl-C."""
    from deployments.servers import run_local_servers

    try:
        run_local_servers(
            host=host, prefect_port=prefect_port, mlflow_port=mlflow_port, store_dir=store,
            prefect_home=prefect_home, serve=with_serve, webhook_port=webhook_port, echo=typer.echo,
        )
    except RuntimeError as exc:
        _fail(str(exc))


def register(app: typer.Typer) -> None:
    """Add the deployment commands to the ``classwatch`` app (called once from classwatch/cli.py)."""
    app.command("serve")(serve)
    app.command("notify-trained")(notify_trained)
    app.add_typer(alerts_app, name="alerts")
    app.add_typer(hooks_app, name="hooks")
    app.command("server")(server)
