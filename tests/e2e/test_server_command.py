"""`classwatch server --serve` starts both servers and the deployments on 127.0.0.1 (and `prefect deploy --all`
of deployments/prefect.yaml works against it); Ctrl-C stops all of them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from deployments.events import MODEL_TRAINED
from deployments.serve import DEFAULT_CRON, SCHEDULED_PERIOD
from deployments.servers import QUIET_ENV, free_port, port_in_use
from e2e_support import wait_for

PREFECT_YAML = Path(__file__).parents[2] / "deployments" / "prefect.yaml"
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]


def _post(port: int, path: str, body: dict | None = None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api{path}", data=json.dumps(body or {}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _deployment_names(port: int) -> list[str]:
    return [d["name"] for d in _post(port, "/deployments/filter")]


def _deploy_prefect_yaml(tmp_path: Path, port: int, env: dict) -> None:
    """The `prefect deploy --all` (docs/deployments.md) of deployments/prefect.yaml, from a project folder, on this server.

    (It re-registers the served evaluate deployment for the work pool: a team moving from
    `classwatch serve` to a worker does exactly that.)
    """
    project = tmp_path / "project"
    project.mkdir()
    env = {**env, "PREFECT_API_URL": f"http://127.0.0.1:{port}/api", "PREFECT_HOME": str(tmp_path / "prefect_home"),
           "PWD": str(project)}
    prefect = str(Path(sys.executable).parent / "prefect")
    for cmd in ([prefect, "work-pool", "create", "classwatch", "--type", "process"],
                [prefect, "--no-prompt", "deploy", "--all", "--prefect-file", str(PREFECT_YAML)]):
        done = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, f"{' '.join(cmd[1:])} failed:\n{done.stdout}\n{done.stderr}"
    deployments = {d["name"]: d for d in _post(port, "/deployments/filter")}
    monthly, evaluate = deployments["monthly"], deployments["on-model-trained"]
    assert monthly["work_pool_name"] == evaluate["work_pool_name"] == "classwatch"
    assert [(s["schedule"]["cron"], s["parameters"]) for s in monthly["schedules"]] == \
        [(DEFAULT_CRON, {"period": SCHEDULED_PERIOD})]
    assert monthly["pull_steps"][0]["prefect.deployments.steps.set_working_directory"]["directory"] == str(project)
    triggers = [a for a in _post(port, "/automations/filter")
                if any(x.get("deployment_id") == evaluate["id"] for x in a["actions"])]
    assert triggers and all(t["trigger"]["expect"] == [MODEL_TRAINED] for t in triggers)
    assert triggers[-1]["actions"][0]["parameters"]["model_uri"] == "{{ event.resource.id }}"


def test_server_command_starts_both_serves_and_stops_cleanly_on_ctrl_c(tmp_path):
    prefect_port, mlflow_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI")}
    env.update(QUIET_ENV, PREFECT_RUNNER_POLL_FREQUENCY="1")
    out = tmp_path / "out.txt"
    with open(out, "wb") as fh:
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "classwatch"), "server", "--serve", "--prefect-port", str(prefect_port),
             "--mlflow-port", str(mlflow_port), "--store", str(tmp_path / "store"),
             "--prefect-home", str(tmp_path / "prefect_home")],
            cwd=tmp_path, env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "Press Ctrl-C" in out.read_text() or proc.poll() is not None, timeout=240,
                 what="`classwatch server` ready")
        text = out.read_text()
        assert proc.poll() is None, text
        assert f"export PREFECT_API_URL=http://127.0.0.1:{prefect_port}/api" in text
        assert f"export MLFLOW_TRACKING_URI=http://127.0.0.1:{mlflow_port}" in text
        for url in (f"http://127.0.0.1:{prefect_port}/api/health", f"http://127.0.0.1:{mlflow_port}/health"):
            with urllib.request.urlopen(url, timeout=10) as resp:
                assert resp.status == 200
        serve_log = tmp_path / "store" / "logs" / "serve.log"
        wait_for(lambda: serve_log.exists() and "serving 1 deployment" in serve_log.read_text(), timeout=120,
                 what="classwatch serve started by --serve")
        wait_for(lambda: _deployment_names(prefect_port) == ["on-model-trained"], timeout=120,
                 what="the served deployment registered")
        assert (tmp_path / "store" / "mlflow.db").exists()
        _deploy_prefect_yaml(tmp_path, prefect_port, env)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 3  # serve, prefect server, mlflow server (and their workers)

        started = time.monotonic()
        proc.send_signal(signal.SIGINT)  # what Ctrl-C in the terminal sends
        assert proc.wait(timeout=120) == 0
        stop_seconds = time.monotonic() - started
        text = out.read_text()
        assert "Stopped classwatch serve, MLflow tracking server, Prefect server." in text, text
        assert "classwatch serve stopped." in serve_log.read_text()
        wait_for(lambda: not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children),
                 timeout=30, what="every child process gone")
        assert not port_in_use("127.0.0.1", prefect_port) and not port_in_use("127.0.0.1", mlflow_port)
        print(f"classwatch server stopped everything {stop_seconds:.1f} s after Ctrl-C")
    finally:
        if proc.poll() is None:
            proc.kill()
