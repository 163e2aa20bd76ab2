"""The deployment commands of ``classwatch``: serve, notify-trained, alerts setup, server."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

alerts_app = typer.Typer(
    name="alerts",
    help="Route retraining alerts (Prefect event classwatch.alert.retrain) to people.",
    no_args_is_help=True,
)


def _fail(message: str) -> None:
    typer.secho(f"Error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=1)


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
) -> None:
    """Serve the classwatch deployments from this process, until Ctrl-C.

    Serves `monitor_period` on a monthly cron schedule and `evaluate_model`, started by every
    `classwatch.model.trained` event (see `classwatch notify-trained`), against the Prefect server in
    PREFECT_API_URL. No work pool or worker is needed.
    """
    from deployments.serve import serve_deployments

    try:
        serve_deployments(cron=cron, timezone=timezone, spec=spec, evaluate_spec=evaluate_spec, limit=limit)
    except (ValueError, RuntimeError, FileNotFoundError) as exc:
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
    except (ValueError, RuntimeError, FileNotFoundError) as exc:
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
    except (ValueError, RuntimeError) as exc:
        _fail(str(exc))
    verb = "Created" if routing.created else "Updated"
    typer.echo(
        f"{verb} automation {routing.automation_id} on {PREFECT_API_URL.value()}:\n"
        f"  every {ALERT_EVENT} event{' of ' + model if model else ''} -> notification block {routing.block}\n"
        "See it with `prefect automation ls`; re-run this command to change the target."
    )


def server(
    host: str = typer.Option("127.0.0.1", help="Interface to bind (127.0.0.1: this machine only)."),
    prefect_port: int = typer.Option(4200, help="Port of the Prefect server (API and UI)."),
    mlflow_port: int = typer.Option(5000, help="Port of the MLflow tracking server (and UI)."),
    store: Path = typer.Option(Path("."), help="Folder of the MLflow store: mlflow.db, mlruns/ and logs/."),
    prefect_home: Optional[Path] = typer.Option(None, help="PREFECT_HOME of the Prefect server (default ~/.prefect)."),
    with_serve: bool = typer.Option(False, "--serve", help="Also run `classwatch serve` against them."),
) -> None:
    """Start a local Prefect server and MLflow tracking server (SQLite, local artifacts) until Ctrl-C."""
    from deployments.servers import run_local_servers

    try:
        run_local_servers(
            host=host, prefect_port=prefect_port, mlflow_port=mlflow_port, store_dir=store,
            prefect_home=prefect_home, serve=with_serve, echo=typer.echo,
        )
    except RuntimeError as exc:
        _fail(str(exc))


def register(app: typer.Typer) -> None:
    """Add the deployment commands to the ``classwatch`` app (called once from classwatch/cli.py)."""
    app.command("serve")(serve)
    app.command("notify-trained")(notify_trained)
    app.add_typer(alerts_app, name="alerts")
    app.command("server")(server)
