"""No-code trigger: `classwatch server --serve` + `classwatch hooks setup`, then a plain `log_model(registered_model_name=...)`
-> MLflow's signed webhook -> evaluate_model logs an evaluation of that version; forged deliveries start nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import polars as pl
import pytest

from deployments import webhooks as wh
from deployments.servers import QUIET_ENV, free_port
from e2e_support import EXPERIMENT, MODEL_NAME, register_model, wait_for, write_datasets

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]
EXE = str(Path(sys.executable).parent / "classwatch")


def _api(port: int, path: str, body: dict):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _evaluate_runs(prefect_port: int) -> list[dict]:
    return _api(prefect_port, "/flow_runs/filter", {"deployments": {"name": {"any_": ["on-model-trained"]}}})


def _forge(url: str, body: bytes, signature: str | None) -> int:
    delivery_id, stamp = str(uuid.uuid4()), str(int(time.time()))
    headers = {"Content-Type": "application/json", wh.DELIVERY_ID_HEADER: delivery_id, wh.TIMESTAMP_HEADER: stamp}
    if signature is not None:
        headers[wh.SIGNATURE_HEADER] = wh.sign(signature, delivery_id, stamp, body)
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


def _hooks_setup(env: dict, cwd: Path, port: int) -> str:
    done = subprocess.run([EXE, "hooks", "setup", "--port", str(port)], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"hooks setup failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_a_registered_version_is_evaluated_and_a_forged_delivery_starts_nothing(tmp_path):
    data, model = write_datasets(tmp_path / "project")
    data.spec.write_text(data.spec.read_text() + f"trigger:\n  models: [{MODEL_NAME}]\n  events: [new_version]\n")
    prefect_port, mlflow_port, hook_port = free_port(), free_port(), free_port()
    mlflow_url = f"http://127.0.0.1:{mlflow_port}"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI")}
    env.update(QUIET_ENV, PREFECT_RUNNER_POLL_FREQUENCY="1", PREFECT_HOME=str(tmp_path / "prefect_home"))
    store = tmp_path / "store"
    out = tmp_path / "server.txt"
    with open(out, "wb") as fh:  # from the project folder: the served process picks up its classwatch.yaml
        proc = subprocess.Popen(
            [EXE, "server", "--serve", "--prefect-port", str(prefect_port), "--mlflow-port", str(mlflow_port),
             "--webhook-port", str(hook_port), "--store", str(store), "--prefect-home", env["PREFECT_HOME"]],
            cwd=data.root, env=env, stdout=fh, stderr=subprocess.STDOUT)
    serve_log = store / "logs" / "serve.log"
    try:
        wait_for(lambda: "Press Ctrl-C" in out.read_text() or proc.poll() is not None, timeout=240,
                 what="`classwatch server --serve` ready")
        assert proc.poll() is None, out.read_text()
        wait_for(lambda: serve_log.exists() and "listening on" in serve_log.read_text(), timeout=120,
                 what="the webhook listener of classwatch serve")
        wait_for(lambda: _api(prefect_port, "/deployments/filter", {}), timeout=120, what="served deployments")
        t0 = time.monotonic()
        client_env = {**env, "PREFECT_API_URL": f"http://127.0.0.1:{prefect_port}/api", "MLFLOW_TRACKING_URI": mlflow_url}
        first = _hooks_setup(client_env, tmp_path, hook_port)
        assert "Created MLflow webhook classwatch-evaluate" in first and "secret: new" in first
        assert "test delivery: the listener answered 200 (signature verified)" in first, first
        again = _hooks_setup(client_env, tmp_path, hook_port)
        assert "Updated MLflow webhook classwatch-evaluate" in again and "secret: unchanged" in again, again
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=mlflow_url, registry_uri=mlflow_url)
        assert [h.name for h in client.list_webhooks()] == [wh.WEBHOOK_NAME]
        hook_file = Path(env["PREFECT_HOME"]) / "classwatch-mlflow-webhook.json"
        assert oct(hook_file.stat().st_mode & 0o777) == "0o600"

        # Forged deliveries for the version about to be registered: unsigned, and signed with a guess.
        forged = json.dumps({"entity": "model_version", "action": "created",
                             "data": {"name": MODEL_NAME, "version": "1"}}).encode()
        url = f"http://127.0.0.1:{hook_port}{wh.PATH}"
        assert [_forge(url, forged, None), _forge(url, forged, "guessed-secret")] == [401, 401]

        # Training code as it is: log and register the model, nothing else.
        model_uri = register_model(model, mlflow_url, pl.read_parquet(data.test))
        t_registered = time.monotonic()
        assert model_uri == f"models:/{MODEL_NAME}/1"

        def evaluation_run():
            exp = client.get_experiment_by_name(EXPERIMENT)
            runs = client.search_runs([exp.experiment_id], "tags.`classwatch.kind` = 'evaluate'") if exp else []
            return [r for r in runs if r.data.tags.get("classwatch.model_uri") == model_uri and
                    r.info.status == "FINISHED"]

        [run] = wait_for(evaluation_run, timeout=420, interval=2, what=f"an MLflow evaluation run of {model_uri}")
        seconds, after_register = time.monotonic() - t0, time.monotonic() - t_registered
        assert 0.5 < run.data.metrics["auroc"] <= 1.0
        flow_runs = _evaluate_runs(prefect_port)
        assert [r["parameters"]["model_uri"] for r in flow_runs] == [model_uri]  # the forged ones started nothing
        assert flow_runs[0]["parameters"]["test_data"] == str(data.test)
        log = serve_log.read_text()
        assert log.count("rejected (HTTP 401)") == 2, log
        assert f"sent classwatch.model.trained for {model_uri}" in log
        print(f"hooks setup (twice) + register -> evaluation run of {model_uri} in MLflow after {seconds:.1f} s "
              f"({after_register:.1f} s after registering)")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
