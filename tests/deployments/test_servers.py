"""deployments/servers.py: health waits that explain failures, and stops that leave no process behind."""

from __future__ import annotations

import sys
import time

import psutil
import pytest

from deployments.servers import _start, free_port, port_in_use, prefect_api_url, stop_process, wait_healthy


def test_free_port_is_free_and_api_url_uses_a_reachable_host():
    port = free_port()
    assert 1024 < port < 65536 and not port_in_use("127.0.0.1", port)
    assert prefect_api_url("0.0.0.0", 4200) == "http://127.0.0.1:4200/api"


def test_a_server_that_dies_at_start_is_reported_with_its_log(tmp_path):
    cmd = [sys.executable, "-c", "import sys; print('port 80: permission denied'); sys.exit(3)"]
    server = _start("Test server", cmd, None, tmp_path / "test.log", "http://127.0.0.1:9", "http://127.0.0.1:9/health")
    with pytest.raises(RuntimeError, match=r"Test server exited with code 3 .*\n.*permission denied"):
        wait_healthy(server, timeout=30)


def test_a_server_that_never_answers_times_out_naming_it(tmp_path):
    cmd = [sys.executable, "-c", "import time; time.sleep(30)"]
    server = _start("Slow server", cmd, None, tmp_path / "slow.log", "http://127.0.0.1:9", "http://127.0.0.1:9/health")
    try:
        with pytest.raises(RuntimeError, match="Slow server not healthy after 1 s"):
            wait_healthy(server, timeout=1)
    finally:
        stop_process(server.process, timeout=5)


def test_stop_process_escalates_and_takes_the_children_along(tmp_path):
    # A leader that ignores SIGINT and SIGTERM, with a child: only SIGKILL of the session ends both.
    script = ("import signal, subprocess, sys, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
              "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print('up', flush=True); "
              "time.sleep(60)")
    server = _start("Stubborn", [sys.executable, "-c", script], None, tmp_path / "s.log", "", "")
    deadline = time.monotonic() + 20
    while "up" not in server.log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    children = psutil.Process(server.process.pid).children(recursive=True)
    assert children
    started = time.monotonic()
    stop_process(server.process, timeout=1)
    assert time.monotonic() - started < 15
    assert server.process.poll() is not None
    time.sleep(0.5)
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


# A stand-in for the Prefect and MLflow servers, with the shutdown that makes a second Ctrl-C
# likely: it answers /health, and on SIGINT takes 2 s to exit.
_SLOW_SERVER = """
import http.server, signal, sys, threading, time
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"true")
    def log_message(self, *args):
        pass
httpd = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health)
signal.signal(signal.SIGINT, lambda *a: (time.sleep(2), sys.exit(0)))
httpd.serve_forever()
"""

# `classwatch server` with the two servers replaced by stand-ins: the same run_local_servers.
_RUN = """
import sys
from pathlib import Path
from deployments import servers as srv

def stand_in(name):
    def start(host, port, *, log_path, **kw):
        api = f"http://127.0.0.1:{port}"
        s = srv._start(name, [sys.executable, "-c", sys.argv[1], str(port)], None, Path(log_path), api, api + "/health")
        print("child", s.process.pid, flush=True)
        return s
    return start

srv.start_prefect_server, srv.start_mlflow_server = stand_in("Prefect server"), stand_in("MLflow tracking server")
srv.run_local_servers(prefect_port=int(sys.argv[2]), mlflow_port=int(sys.argv[3]), store_dir=sys.argv[4],
                      echo=lambda m: print(m, flush=True))
"""


def test_a_second_ctrl_c_does_not_leave_a_server_running(tmp_path):
    """Ctrl-C twice on `classwatch server`: the second one came while the first server was stopping,
    interrupted its stop and left the other server running with its port (a session of its own)."""
    import os
    import signal
    import subprocess

    ports = [free_port(), free_port()]
    proc = subprocess.Popen([sys.executable, "-c", _RUN, _SLOW_SERVER, *map(str, ports), str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, children = [], []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("child "):
                children.append(psutil.Process(int(line.split()[1])))
            if line.startswith("Press Ctrl-C"):
                break
        assert len(children) == 2 and all(port_in_use("127.0.0.1", p) for p in ports), lines
        proc.send_signal(signal.SIGINT)
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Stopping"):
                break
        time.sleep(0.3)  # the first server is stopping (2 s)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        lines += proc.stdout.readlines()
        assert proc.wait(timeout=30) == 0, lines
    finally:
        if proc.poll() is None:
            proc.kill()
        for child in children:
            if child.is_running():
                os.killpg(child.pid, signal.SIGKILL)
    said = "".join(lines)
    assert "Still stopping the servers" in said and "Stopped MLflow tracking server, Prefect server." in said, said
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert not any(port_in_use("127.0.0.1", p) for p in ports)
