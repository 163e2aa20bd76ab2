"""Start a local Prefect server and MLflow tracking server on 127.0.0.1, wait until healthy, stop cleanly."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PREFECT_PORT = 4200
DEFAULT_MLFLOW_PORT = 5000

#: Environment every child server gets: no telemetry, no MLflow job workers (E2E-NOTES: the 7 huey
#: workers can outlive a stopped server at high CPU and double the start-up time).
QUIET_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
}


@dataclass
class ServerProcess:
    """A server started by classwatch: its name, base URL, health URL, process and log file."""

    name: str
    url: str
    health_url: str
    process: subprocess.Popen
    log_path: Path

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, n_lines: int = 25) -> str:
        """The last lines of the server's log, for error messages."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n_lines:])


def free_port(host: str = DEFAULT_HOST) -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_in_use(host: str, port: int) -> bool:
    """True when something already listens on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _url_host(host: str) -> str:
    """The host to put in a URL: 0.0.0.0 binds everywhere but is reached as 127.0.0.1."""
    return DEFAULT_HOST if host in ("0.0.0.0", "") else host


def prefect_api_url(host: str, port: int) -> str:
    """The PREFECT_API_URL of a Prefect server on ``host:port``."""
    return f"http://{_url_host(host)}:{port}/api"


def _start(name, cmd, env, log_path, url, health_url) -> ServerProcess:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "ab")  # noqa: SIM115 - the child owns it for its lifetime
    try:
        # A session of its own: Ctrl-C in the terminal reaches only classwatch, which then stops the
        # servers in order (clients first, servers last) instead of all of them at once.
        proc = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        log.close()
    return ServerProcess(name, url, health_url, proc, log_path)


def start_prefect_server(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PREFECT_PORT,
    *,
    prefect_home: str | Path | None = None,
    log_path: str | Path = "prefect-server.log",
    ui: bool = True,
    extra_env: dict[str, str] | None = None,
) -> ServerProcess:
    """Start ``prefect server start`` (API, UI, scheduler, triggers, automations) in the background.

    The database lives in ``prefect_home`` (default: the user's PREFECT_HOME, ``~/.prefect``).
    Returns at once; call :func:`wait_healthy` before using it.
    """
    env = {**os.environ, **QUIET_ENV, **(extra_env or {})}
    env["PREFECT_API_URL"] = prefect_api_url(host, port)
    env["PREFECT_SERVER_UI_ENABLED"] = "true" if ui else "false"
    if prefect_home is not None:
        env["PREFECT_HOME"] = str(Path(prefect_home).resolve())
    cmd = [sys.executable, "-m", "prefect", "server", "start", "--host", host, "--port", str(port)]
    api = prefect_api_url(host, port)
    return _start("Prefect server", cmd, env, Path(log_path), api.removesuffix("/api"), api + "/health")


def start_mlflow_server(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_MLFLOW_PORT,
    *,
    store_dir: str | Path = ".",
    log_path: str | Path = "mlflow-server.log",
    extra_env: dict[str, str] | None = None,
) -> ServerProcess:
    """Start ``mlflow server`` on a SQLite store ``store_dir/mlflow.db`` with artifacts in ``store_dir/mlruns``.

    These are the same files the embedded default (``sqlite:///mlflow.db`` in the working directory)
    writes, so runs logged before the server existed show up in it. One worker, no job workers.
    Registry webhooks to a 127.0.0.1 listener work (settings: ``deployments.webhooks.mlflow_server_env``).
    """
    from deployments.webhooks import mlflow_server_env

    store = Path(store_dir).resolve()
    store.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **QUIET_ENV, **(extra_env or {})}
    env.update(mlflow_server_env(store, env))
    env.pop("MLFLOW_TRACKING_URI", None)
    cmd = [
        sys.executable, "-m", "mlflow", "server",
        "--host", host, "--port", str(port),
        "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}",
        "--default-artifact-root", str(store / "mlruns"),
        "--workers", "1",
    ]
    url = f"http://{_url_host(host)}:{port}"
    return _start("MLflow tracking server", cmd, env, Path(log_path), url, url + "/health")


def wait_healthy(*servers: ServerProcess, timeout: float = 120.0) -> None:
    """Poll each server's health URL until it answers 200, or raise naming the server and its log.

    Raises ``RuntimeError`` when a server exits during start-up or is not healthy within ``timeout``
    seconds (the servers are left running; stop them with :func:`stop_servers`).
    """
    deadline = time.monotonic() + timeout
    pending = list(servers)
    while pending:
        for server in list(pending):
            if not server.running:
                raise RuntimeError(
                    f"{server.name} exited with code {server.process.returncode} while starting. "
                    f"Its log ({server.log_path}) ends with:\n{server.log_tail()}"
                )
            try:
                with urllib.request.urlopen(server.health_url, timeout=2) as resp:
                    if resp.status == 200:
                        pending.remove(server)
            except (urllib.error.URLError, OSError):
                pass
        if pending and time.monotonic() > deadline:
            names = ", ".join(s.name for s in pending)
            raise RuntimeError(
                f"{names} not healthy after {timeout:.0f} s. Log of {pending[0].name} "
                f"({pending[0].log_path}):\n{pending[0].log_tail()}"
            )
        if pending:
            time.sleep(0.5)


def stop_process(proc: subprocess.Popen, timeout: float = 20.0,
                 signals: tuple = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)) -> int | None:
    """Stop a process started in its own session, and its children: each of ``signals`` in turn
    (by default SIGINT, then SIGTERM, then SIGKILL) until it has exited.

    Returns the exit code (None if it could not be reaped).
    """
    for sig in signals:
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout if sig != signal.SIGKILL else 5)
    # Children (uvicorn workers) that survived the leader: the whole session goes.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    return proc.poll()


def stop_servers(*servers: ServerProcess, timeout: float = 20.0) -> None:
    """Stop servers in the order given (put clients such as ``classwatch serve`` first)."""
    for server in servers:
        stop_process(server.process, timeout=timeout)


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


def shut_down(started: list[ServerProcess], echo=print, timeout: float = 20.0) -> None:
    """Stop ``started`` in order (clients first), every one of them, whatever arrives meanwhile.

    A second Ctrl-C (or SIGTERM) during the stop only says that it is still stopping: it used to
    interrupt the stop of the first server and leave the others running, in sessions of their own
    (the Prefect server still held its port a minute later). A server whose stop fails does not
    keep the next ones from being stopped; each is reaped.
    """
    def still_stopping(signum, frame):
        echo("Still stopping the servers (one more Ctrl-C does not skip it) ...")

    previous = {sig: signal.signal(sig, still_stopping) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        echo("\nStopping ...")
        for server in started:
            try:
                stop_process(server.process, timeout=timeout)
            except Exception as exc:  # noqa: BLE001 - the next servers are stopped all the same
                echo(f"Could not stop {server.name} (pid {server.process.pid}): {exc}")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_local_servers(
    host: str = DEFAULT_HOST,
    prefect_port: int = DEFAULT_PREFECT_PORT,
    mlflow_port: int = DEFAULT_MLFLOW_PORT,
    store_dir: str | Path = ".",
    prefect_home: str | Path | None = None,
    serve: bool = False,
    webhook_port: int | None = None,
    echo=print,
) -> None:
    """Run both servers (and optionally ``classwatch serve``) until Ctrl-C, then stop them in order.

    ``webhook_port`` is where the served process listens for MLflow webhooks (None: its default).
    """
    for port, what, flag in ((prefect_port, "Prefect", "--prefect-port"), (mlflow_port, "MLflow", "--mlflow-port")):
        if port_in_use(_url_host(host), port):
            raise RuntimeError(
                f"Port {port} on {host} is already in use (a {what} server already running?). "
                f"Stop it, or pick another port with {flag}."
            )
    logs = Path(store_dir).resolve() / "logs"
    prefect = start_prefect_server(host, prefect_port, prefect_home=prefect_home, log_path=logs / "prefect-server.log")
    mlflow_srv = start_mlflow_server(host, mlflow_port, store_dir=store_dir, log_path=logs / "mlflow-server.log")
    started: list[ServerProcess] = [mlflow_srv, prefect]
    # Ctrl-C and SIGTERM both stop everything in order, even when started from a script that
    # ignores SIGINT (background jobs of a non-interactive shell do).
    previous = {sig: signal.signal(sig, _raise_keyboard_interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        echo(f"Starting the Prefect server and the MLflow tracking server on {host} (15-40 s) ...")
        wait_healthy(prefect, mlflow_srv, timeout=180)
        api = prefect_api_url(host, prefect_port)
        echo(f"Prefect UI            {prefect.url}")
        echo(f"Prefect API           {api}")
        echo(f"MLflow UI / tracking  {mlflow_srv.url}   (store {Path(store_dir).resolve() / 'mlflow.db'})")
        echo(f"Server logs           {logs}")
        if serve:
            env = {**os.environ, "PREFECT_API_URL": api, "MLFLOW_TRACKING_URI": mlflow_srv.url}
            if webhook_port is not None:
                env["CLASSWATCH_WEBHOOK_PORT"] = str(webhook_port)
            cmd = [sys.executable, "-c", "from classwatch.cli import app; app()", "serve"]
            started.insert(0, _start("classwatch serve", cmd, env, logs / "serve.log", api, ""))
            echo(f"Serving deployments   classwatch serve (log {logs / 'serve.log'})")
            if webhook_port != 0:
                port = webhook_port or os.environ.get("CLASSWATCH_WEBHOOK_PORT") or 4210
                hint = "" if str(port) == "4210" else f" --port {port}"
                echo(f"MLflow webhooks       http://127.0.0.1:{port}/mlflow-webhook   "
                     f"(register it once: classwatch hooks setup{hint})")
        echo("\nIn another terminal, point classwatch at these servers:")
        echo(f"  export PREFECT_API_URL={api}")
        echo(f"  export MLFLOW_TRACKING_URI={mlflow_srv.url}")
        echo("\nPress Ctrl-C to stop " + ("the deployments and " if serve else "") + "both servers.")
        while all(s.running for s in started):
            time.sleep(1)
        dead = next(s for s in started if not s.running)
        raise RuntimeError(f"{dead.name} stopped unexpectedly. Its log ({dead.log_path}) ends with:\n{dead.log_tail()}")
    except KeyboardInterrupt:
        pass
    finally:
        # Clients before servers: `serve` first (it hangs if the Prefect server goes first), then the
        # servers; a second Ctrl-C now is ignored (shut_down).
        try:
            shut_down(started, echo)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        echo("Stopped " + ", ".join(s.name for s in started) + ".")
