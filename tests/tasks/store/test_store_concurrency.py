"""Concurrent writers on one real SQLite MLflow store, in real processes started at the same moment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from mlflow import MlflowClient

from tasks.store.mlflow import RUN_KEY, MlflowStore, key_lock, lock_dir

pytestmark = pytest.mark.slow

#: Each process: import, say "ready", wait for the go file, then find-or-create the parent and log
#: its own period under it (or the same period as another process).
WORKER = textwrap.dedent("""
    import json, sys, time
    from tasks.store.mlflow import MlflowStore, RunContent
    from pathlib import Path
    uri, period, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    store = MlflowStore(uri, "race")
    store.experiment_id()
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.005)
    parent = store.ensure_parent("monitor|m", "m monitoring", {"a": 1}, {"classwatch.kind": "monitor"})
    run_id, created = store.log_run("monitor|m|" + period, RunContent("m " + period, metrics={"x": 1.0}),
                                    parent_run_id=parent)
    print(json.dumps({"parent": parent, "run_id": run_id, "created": created}))
""")


def _race(uri: str, periods: list[str], tmp_path) -> list[dict]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    MlflowStore(uri, "race").experiment_id()  # the experiment exists before the race (its creation has its own check)
    go = tmp_path / "go"
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    procs = [subprocess.Popen([sys.executable, str(script), uri, p, str(go)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for p in periods]
    out = []
    try:
        for proc in procs:  # every process has imported mlflow and opened the store
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        go.touch()
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=600)
            assert proc.returncode == 0, stderr
            out.append(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return out


def _runs(uri: str) -> list:
    c = MlflowClient(uri)
    exp = c.get_experiment_by_name("race")
    return c.search_runs([exp.experiment_id])


def test_four_processes_at_once_leave_one_parent_and_one_run_per_period(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    periods = ["2024-01", "2024-02", "2024-02", "2024-03"]  # two of them race for the same period
    results = _race(uri, periods, tmp_path)
    runs = _runs(uri)
    keys = sorted(r.data.tags[RUN_KEY] for r in runs)
    assert keys == ["monitor|m", "monitor|m|2024-01", "monitor|m|2024-02", "monitor|m|2024-03"]
    parent = next(r for r in runs if r.data.tags[RUN_KEY] == "monitor|m").info.run_id
    assert {r["parent"] for r in results} == {parent}
    assert all(r.data.tags.get("mlflow.parentRunId") == parent for r in runs if r.info.run_id != parent)
    assert all(r.info.status == "FINISHED" for r in runs)
    same = [r for r, p in zip(results, periods) if p == "2024-02"]
    assert sorted(r["created"] for r in same) == [False, True] and same[0]["run_id"] == same[1]["run_id"]


def test_a_parent_created_twice_keeps_the_oldest(tmp_path):
    """Across machines no lock file is shared: the check after creation keeps the oldest parent."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    store = MlflowStore(uri, "race")
    older = store.ensure_parent("monitor|m", "m monitoring", {}, {})
    time.sleep(0.01)
    with store.new_run("monitor|m", "m monitoring") as newer:  # another machine's parent, created in between
        pass
    assert store.keep_oldest("monitor|m", older) == older  # the oldest keeps itself
    assert store.keep_oldest("monitor|m", newer) == older
    c = MlflowClient(uri)
    assert c.get_run(newer).info.lifecycle_stage == "deleted" and c.get_run(older).info.lifecycle_stage == "active"
    assert store.ensure_parent("monitor|m", "m monitoring", {}, {}) == older


def test_key_lock_serialises_and_names_the_file_on_timeout(tmp_path):
    folder = lock_dir(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert folder == tmp_path / ".classwatch-locks"
    with key_lock(folder, "exp\nkey") as path:
        assert path is not None and path.parent == folder
        holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
            from pathlib import Path
            from tasks.store.mlflow import key_lock
            try:
                with key_lock(Path({str(folder)!r}), "exp\\nkey", timeout=0.5):
                    print("acquired")
            except TimeoutError as exc:
                print("timeout", exc)
        """)], stdout=subprocess.PIPE, text=True)
        out, _ = holder.communicate(timeout=300)
    assert out.startswith("timeout") and str(path) in out
    with key_lock(folder, "exp\nkey", timeout=0.5) as again:  # released when the block ended
        assert again == path


#: Each process, once per (new store, go file) pair of its arguments: say "ready", wait for the go
#: file, make its first client on that store. One process per racer serves every attempt: the
#: import of mlflow (most of a process's time) is paid once, and each attempt is on a store that
#: none of them has opened.
FIRST_CLIENT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from tasks.store.mlflow import client
    pairs = sys.argv[1:]
    for uri, go in zip(pairs[::2], map(Path, pairs[1::2])):
        print("ready", flush=True)
        while not go.exists():
            time.sleep(0.005)
        print(len(client(uri).search_experiments()), flush=True)
""")


def test_processes_making_their_first_client_on_a_new_store_at_once_all_succeed(tmp_path):
    """MLflow creates and migrates a new SQLite db when a process makes its first client; three
    processes doing so at once failed in 14 of 18 tries here ("table _alembic_tmp_latest_metrics
    already exists") before ``client`` made them take turns."""
    script = tmp_path / "first_client.py"
    script.write_text(FIRST_CLIENT)
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    attempts = [(f"sqlite:///{tmp_path / f'new-{attempt}.db'}", tmp_path / f"go-{attempt}") for attempt in range(3)]
    args = [str(x) for pair in attempts for x in pair]
    procs = [subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    try:
        for _, go in attempts:
            for proc in procs:
                assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
            go.touch()
            for proc in procs:
                # the Default experiment of the new store
                assert proc.stdout.readline().strip() == "1", proc.stderr.read()[-2000:]
        for proc in procs:
            _, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, stderr[-2000:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
