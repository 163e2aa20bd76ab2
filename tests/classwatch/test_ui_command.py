"""`classwatch ui` as real processes: a busy port is an error naming --port; SIGTERM stops the MLflow server too, quietly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from deployments.servers import free_port, port_in_use

EXE = Path(sys.executable).parent / "classwatch"


def _store(tmp_path: Path) -> str:
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(uri).search_experiments()  # creates the SQLite store
    return uri


def test_busy_port_is_an_error_that_suggests_another_port(tmp_path):
    (tmp_path / "mlflow.db").touch()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        t0 = time.monotonic()
        out = subprocess.run([str(EXE), "ui", "--port", str(port), "--tracking-uri",
                              f"sqlite:///{tmp_path / 'mlflow.db'}"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out
    assert f"port {port} on 127.0.0.1 is already in use" in out.stderr and "--port" in out.stderr
    assert f"classwatch ui --port {port + 1}" in out.stderr and "Traceback" not in out.stderr + out.stdout
    assert time.monotonic() - t0 < 60  # no server was started


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return r.read().strip() == b"OK"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_sigterm_stops_the_mlflow_server_child(tmp_path):
    uri, port = _store(tmp_path), free_port()
    cli = subprocess.Popen([str(EXE), "ui", "--port", str(port), "--tracking-uri", uri], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    children: list = []
    try:
        deadline = time.monotonic() + 180
        while not _healthy(port):
            assert cli.poll() is None, cli.stdout.read().decode()
            assert time.monotonic() < deadline, "the MLflow UI did not answer /health within 180 s"
            time.sleep(1)
        children = psutil.Process(cli.pid).children(recursive=True)
        assert children, "the MLflow server runs as a child of classwatch ui"
        time.sleep(3)  # (stopped at once, the server had not yet reached the state whose stop printed a traceback)
        os.kill(cli.pid, signal.SIGTERM)  # the CLI only, as a service manager or `kill` would
        assert cli.wait(timeout=60) == 0
        gone, alive = psutil.wait_procs(children, timeout=30)
        assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], alive
        assert not port_in_use("127.0.0.1", port)
        # a clean stop: uvicorn re-raised a forwarded SIGINT, which printed a KeyboardInterrupt traceback
        text = cli.stdout.read().decode()
        assert "Shutting down" in text and "Traceback" not in text and "KeyboardInterrupt" not in text, text[-2000:]
    finally:
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
        for p in children:  # survivors of a failed test: the server started in its own session
            try:
                p.kill()
            except psutil.Error:
                pass
