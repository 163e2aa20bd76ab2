"""flows.runners: the embedded Prefect API started on a port of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from flows import runners


class _Healthy(BaseHTTPRequestHandler):
    """Another process's API on the port: answers every health check."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args):
        pass


@pytest.mark.slow
def test_a_port_taken_by_another_api_is_left_for_one_of_our_own(monkeypatch):
    from prefect.server.api.server import SubprocessASGIServer

    other = ThreadingHTTPServer(("127.0.0.1", 0), _Healthy)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    taken = other.server_address[1]
    ports = iter([taken])
    monkeypatch.setattr(runners, "_free_port", lambda: next(ports, None) or runners.socket_port())
    server = SubprocessASGIServer(port=-1)  # an instance of its own (Prefect keeps one per key)
    try:
        runners._start_own_server(server)
        assert server.port != taken and server.server_process.poll() is None  # ours is alive on another port
    finally:
        server.stop()
        other.shutdown()


def test_check_scheduler_names_an_address_that_does_not_answer():
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(runners.SchedulerUnreachable, match=f"tcp://127.0.0.1:{port} is unreachable"):
        runners.check_scheduler(f"dask://127.0.0.1:{port}")
    with socket.socket() as listening:  # a port that accepts connections passes
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        runners.check_scheduler(f"tcp://127.0.0.1:{listening.getsockname()[1]}")
    runners.check_scheduler("local")  # nothing to reach
    runners.check_scheduler("dask")  # a cluster of our own


def test_spark_runner_strings_and_an_unreachable_spark_master():
    import socket

    from tasks.config.spec import load_spec, spark_master

    assert spark_master("spark") == "local[2]" and spark_master("spark://10.0.0.5:7077") == "spark://10.0.0.5:7077"
    assert spark_master("dask") is None and spark_master("spark://nohost") is None
    # the Spark jobs are submitted from the flow's own threads; no Prefect API for executors
    assert type(runners.task_runner("spark")).__name__ == "ThreadPoolTaskRunner"
    assert runners.needs_api_server("spark") is False and runners.needs_api_server("spark://h:7077") is False
    assert load_spec({"task_runner": "spark"}).task_runner == "spark"
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(runners.SchedulerUnreachable, match=f"Spark master spark://127.0.0.1:{port} is unreachable"):
        runners.check_scheduler(f"spark://127.0.0.1:{port}")
    runners.check_scheduler("spark")  # a local Spark: nothing to reach


_FREEZE_PROBE = """
import gc
from flows.runners import in_process_runs

with in_process_runs():
    first = gc.get_freeze_count()
kept = [object() for _ in range(1000)]  # tracked objects made after the first run
with in_process_runs():
    second = gc.get_freeze_count()
print(first, second)
"""


def test_the_start_up_objects_are_frozen_once_per_process(tmp_path):
    """In a fresh process: the first in_process_runs freezes what the imports made; a later one
    leaves the objects made since (the runs' garbage among them) to the collector."""
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api", "PREFECT_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _FREEZE_PROBE], capture_output=True, text=True, env=env,
                         cwd=Path(__file__).parents[2], timeout=120)
    assert out.returncode == 0, out.stderr
    first, second = map(int, out.stdout.split())
    assert first > 50_000  # prefect and the flows' modules
    assert second <= first  # (frozen objects still die by reference count)
