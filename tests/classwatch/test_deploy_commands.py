"""The deployment commands of `classwatch`: registered, and their errors speak to the user."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from classwatch.cli import app

runner = CliRunner()


def test_commands_are_registered():
    out = runner.invoke(app, ["--help"]).output
    for name in ("serve", "notify-trained", "alerts", "server"):
        assert name in out
    assert "setup" in runner.invoke(app, ["alerts", "--help"]).output


@pytest.mark.parametrize("args, message", [
    (["notify-trained", "--model-uri", "models:/m/1", "--test-data", "s3://b/t.parquet"], "PREFECT_API_URL is not set"),
    (["alerts", "setup", "--webhook", "http://127.0.0.1:9/h"], "PREFECT_API_URL is not set"),
    (["serve"], "PREFECT_API_URL is not set"),
])
def test_commands_needing_a_server_say_so(args, message):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert message in result.output


def test_notify_trained_names_a_missing_test_set(tmp_path):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        result = runner.invoke(app, ["notify-trained", "--model-uri", "models:/m/1",
                                     "--test-data", str(tmp_path / "missing.parquet")])
    assert result.exit_code == 2 and "test_data:" in result.output and "missing.parquet" in result.output


def test_server_refuses_a_port_in_use():
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = runner.invoke(app, ["server", "--prefect-port", str(port), "--mlflow-port", str(port + 1)])
    assert result.exit_code == 1 and f"Port {port} on 127.0.0.1 is already in use" in result.output
