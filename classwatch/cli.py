"""The `classwatch` command line: one Typer app; each command's body lives in classwatch/commands/."""

from __future__ import annotations

import os

import typer

from classwatch.commands import deploy, evaluate, flows

#: Process settings of every classwatch command, set once here (never at import of a library module):
#: no telemetry look-ups (the machines may be offline), and Prefect logs only what matters to a user.
PROCESS_ENV = {"MLFLOW_DISABLE_TELEMETRY": "true", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
               "PREFECT_LOGGING_LEVEL": "WARNING"}

app = typer.Typer(
    name="classwatch",
    help="Evaluate and monitor classifiers (ISO/IEC TS 4213, ONS guidance) with Prefect and MLflow.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def _process_settings() -> None:
    """Evaluate and monitor classifiers (ISO/IEC TS 4213, ONS guidance) with Prefect and MLflow."""
    for key, value in PROCESS_ENV.items():
        os.environ.setdefault(key, value)


# Registered in this order, so `classwatch --help` lists the commands so.
app.command()(evaluate.evaluate)
flows.register(app)  # demo, monitor, compare, recommend, ui
deploy.register(app)  # serve, notify-trained, alerts, server


def main() -> None:
    """Entry point of the ``classwatch`` console script and of ``python -m classwatch``."""
    app()
