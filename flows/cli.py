"""The `classwatch` command line: one Typer app; each command's body lives in its own module."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="classwatch",
    help="Evaluate and monitor classifiers (ISO/IEC TS 4213, ONS guidance) with Prefect and MLflow.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

# Commands are registered here, one line each, so `classwatch --help` lists them in this order.
from flows import cli_evaluate, cli_flows  # noqa: E402
app.command()(cli_evaluate.evaluate)
cli_flows.register(app)  # demo, monitor, compare, recommend, ui
from deployments.cli import register as _register_deployment_commands  # noqa: E402
_register_deployment_commands(app)  # serve, notify-trained, alerts, server
