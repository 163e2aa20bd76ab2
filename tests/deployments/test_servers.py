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
