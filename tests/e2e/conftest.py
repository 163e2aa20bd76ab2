"""Fixtures of the end-to-end tests: real Prefect and MLflow servers, ``classwatch serve``, data, durations.

One Prefect server (fresh PREFECT_HOME) and one MLflow server (fresh SQLite store) per session, on
free 127.0.0.1 ports, started together and always stopped: clients (``classwatch serve``) first,
then the servers. Every wait is bounded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from deployments import servers as srv

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from e2e_support import E2EData, register_model, run_cli, wait_for, write_datasets  # noqa: E402

START_TIMEOUT = 180  # s, both servers on a loaded 2-core machine (measured 15-40 s)
RUNNER_ENV = {
    "PREFECT_RUNNER_POLL_FREQUENCY": "1",
    # A dead MLflow server must fail a flow within seconds, not after minutes of client retries.
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
    "PREFECT_LOGGING_LEVEL": "INFO",
}


class MlflowServer:
    """The session's MLflow tracking server; the fault test kills and restarts it on the same port."""

    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port = root, port
        self.url = f"http://127.0.0.1:{port}"
        self.server: srv.ServerProcess | None = None
        self.starts = 0

    def start(self) -> srv.ServerProcess:
        self.starts += 1
        self.server = srv.start_mlflow_server(
            "127.0.0.1", self.port, store_dir=self.root / "mlflow",
            log_path=self.root / "logs" / f"mlflow-server-{self.starts}.log")
        return self.server

    def kill(self) -> None:
        """SIGKILL the whole server (uvicorn worker included): a crash, not a clean stop."""
        import signal

        os.killpg(self.server.process.pid, signal.SIGKILL)
        self.server.process.wait(timeout=10)

    def stop(self) -> None:
        if self.server is not None:
            srv.stop_process(self.server.process)

    def client(self):
        from mlflow import MlflowClient

        return MlflowClient(tracking_uri=self.url, registry_uri=self.url)


@dataclass
class Servers:
    root: Path
    prefect: srv.ServerProcess
    api_url: str
    mlflow: MlflowServer
    env: dict  # environment of every classwatch subprocess


@pytest.fixture(scope="session")
def e2e_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def servers(e2e_root):
    """A real ``prefect server`` and ``mlflow server`` (REST, SQLite), started in parallel."""
    prefect_port, mlflow_port = srv.free_port(), srv.free_port()
    mlflow = MlflowServer(e2e_root, mlflow_port)
    home = e2e_root / "prefect_home"
    prefect = srv.start_prefect_server("127.0.0.1", prefect_port, prefect_home=home, ui=False,
                                       log_path=e2e_root / "logs" / "prefect-server.log")
    try:
        mlflow.start()
        srv.wait_healthy(prefect, mlflow.server, timeout=START_TIMEOUT)
        api = srv.prefect_api_url("127.0.0.1", prefect_port)
        env = {**os.environ, **srv.QUIET_ENV, **RUNNER_ENV, "PREFECT_HOME": str(home), "PREFECT_API_URL": api,
               "MLFLOW_TRACKING_URI": mlflow.url}
        yield Servers(e2e_root, prefect, api, mlflow, env)
    finally:
        mlflow.stop()
        srv.stop_process(prefect.process)


@pytest.fixture
def prefect_api(servers):
    """Point this test process's Prefect client at the session's server (for one test only)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: servers.api_url}):
        yield servers.api_url


@pytest.fixture(scope="session")
def e2e_data(servers) -> E2EData:
    """Datasets, a run spec and a real scikit-learn classifier registered on the MLflow server."""
    import polars as pl

    data, model = write_datasets(servers.root / "data")
    data.model_uri = register_model(model, servers.mlflow.url, pl.read_parquet(data.test))
    return data


@pytest.fixture(scope="session")
def served(servers, e2e_data):
    """``classwatch serve --spec SPEC`` running against the servers; stopped before them (SIGINT)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    exe = Path(sys.executable).parent / "classwatch"
    log_path = servers.root / "logs" / "serve.log"
    log = open(log_path, "ab")  # noqa: SIM115
    proc = subprocess.Popen([str(exe), "serve", "--spec", str(e2e_data.spec)], env=servers.env, cwd=servers.root,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()

    def deployments_exist():
        assert proc.poll() is None, f"classwatch serve exited:\n{log_path.read_text()}"
        with temporary_settings(updates={PREFECT_API_URL: servers.api_url}), get_client(sync_client=True) as c:
            names = {d.name for d in c.read_deployments()}
        return {"monthly", "on-model-trained"} <= names

    try:
        wait_for(deployments_exist, timeout=90, what="served deployments")
        time.sleep(2)  # the runner starts polling right after it has registered its deployments
        yield proc, log_path
    finally:
        srv.stop_process(proc, timeout=30)


def flow_runs_of(api_url: str, deployment: str):
    """Flow runs of ``flow/deployment`` on the server, newest first."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as c:
        dep = c.read_deployment_by_name(deployment)
        return c.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[dep.id])),
                                sort=FlowRunSort.EXPECTED_START_TIME_DESC)


@dataclass
class Evaluation:
    flow_run: object
    run: object  # mlflow Run of the evaluation
    seconds_to_completed: float


def terminal_run(api_url: str, deployment: str, after, timeout: float):
    """The first flow run of ``deployment`` created after ``after`` once it is in a final state."""
    def done():
        runs = [r for r in flow_runs_of(api_url, deployment) if r.created and r.created >= after]
        final = [r for r in runs if r.state is not None and r.state.is_final()]
        return final[-1] if final else None

    try:
        return wait_for(done, timeout=timeout, what=f"a finished flow run of {deployment}")
    except TimeoutError as exc:
        states = [(r.name, r.state_type) for r in flow_runs_of(api_url, deployment) if r.created >= after]
        raise TimeoutError(f"{exc}; runs since {after:%H:%M:%S}: {states or 'none (did the trigger fire?)'}") from None


@pytest.fixture(scope="session")
def evaluated(servers, served, e2e_data) -> Evaluation:
    """``classwatch notify-trained`` -> the served evaluate_model deployment runs -> an MLflow run."""
    from datetime import datetime, timezone

    from e2e_support import EXPERIMENT

    start = datetime.now(timezone.utc)
    t0 = time.monotonic()
    out = run_cli(servers, "notify-trained", "--model-uri", e2e_data.model_uri, "--test-data", str(e2e_data.test))
    assert "classwatch.model.trained" in out.stdout
    flow_run = terminal_run(servers.api_url, "evaluate_model/on-model-trained", start, timeout=240)
    seconds = time.monotonic() - t0
    assert flow_run.state.is_completed(), f"evaluate_model ended {flow_run.state.type}: {flow_run.state.message}"
    client = servers.mlflow.client()
    exp = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([exp.experiment_id], filter_string="tags.`classwatch.kind` = 'evaluate'")
    runs = [r for r in runs if r.data.tags.get("classwatch.model_uri") == e2e_data.model_uri]
    assert len(runs) == 1, f"expected one evaluation run of {e2e_data.model_uri}, found {len(runs)}"
    print(f"notify-trained -> evaluate_model Completed and logged in {seconds:.1f} s")
    return Evaluation(flow_run, runs[0], seconds)
