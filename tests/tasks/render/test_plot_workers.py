"""The plot workers of `classwatch evaluate`: the same PNGs as one process, and the command draws whatever they did not.

Each case runs in a fresh interpreter, as the command does: workers are forked only while the
process has one thread and no polars, which a pytest process does not guarantee.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tasks.render import plot_workers

_CASE = """
import os, sys, time
from pathlib import Path
import numpy as np
from tasks.render import plot_workers as pw

case, out = sys.argv[1], Path(sys.argv[2])
if case == "failing":
    pw._work = lambda read, job: 1
elif case == "stuck":
    pw._work = lambda read, job: time.sleep(120) or 0
    pw.CHILD_TIMEOUT = 1.0
elif case == "too large":
    pw.MAX_JOB_BYTES = 100
workers = pw.PlotWorkers.start()  # first, as the command: one thread, no polars
assert workers.pid is not None
pid, job = workers.pid, workers.job
import metrics_core as mc
rng = np.random.default_rng(5)
if case == "multiclass":  # its per-class table is a polars frame, loaded after the fork (as in the command)
    y = rng.integers(0, 3, 600)
    p = rng.dirichlet(np.ones(3), 600)
    report = mc.multiclass_report(y, y_score=p, n_boot=20)
else:
    y = rng.random(800) < 0.3
    report = mc.binary_report(y, np.clip(rng.normal(0.3 + 0.4 * y, 0.2), 0, 1), n_boot=20)
if case == "no report":  # the command failed before its report: the workers go, nothing is drawn
    started = time.monotonic()
    workers.close()
    assert time.monotonic() - started < 10
    assert not job.exists() and not (out / "workers").exists()
    try:
        os.kill(pid, 0)
        raise AssertionError("the worker still runs")
    except ProcessLookupError:
        print("closed")
    sys.exit(0)
started = time.monotonic()
workers.send(report, out / "workers", prefix="r_", beta=2.0)
written = workers.finish()
seconds = time.monotonic() - started
assert not job.exists()
from tasks.render.plots import plot_report
here = plot_report(report, out / "here", prefix="r_", beta=2.0)
assert list(written) == list(here) == ["roc", "pr", "gain", "lift", "confusion"], (list(written), list(here))
for name in here:
    assert written[name].read_bytes() == here[name].read_bytes(), name
print("drawn here" if workers.drawn_here else "drawn by the workers", len(written), round(seconds))
"""


def _run(case: str, tmp_path) -> str:
    out = subprocess.run([sys.executable, "-c", _CASE, case, str(tmp_path)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.parametrize("case", ["binary", "multiclass"])
def test_the_workers_draw_the_bytes_one_process_draws(case, tmp_path):
    assert _run(case, tmp_path).startswith("drawn by the workers 5")


@pytest.mark.parametrize("case", ["failing", "stuck", "too large"])
def test_what_the_workers_did_not_draw_is_drawn_here(case, tmp_path):
    """A worker that fails, one still running after CHILD_TIMEOUT (killed), a report too large to copy."""
    drawn, count, seconds = _run(case, tmp_path).rsplit(" ", 2)
    assert (drawn, count) == ("drawn here", "5")
    assert int(seconds) < 30


def test_a_command_without_a_report_stops_the_workers_and_draws_nothing(tmp_path):
    assert _run("no report", tmp_path) == "closed"


def test_no_fork_in_a_process_with_polars_or_threads(tmp_path):
    """This pytest process has polars loaded: no workers, and finish draws here."""
    import metrics_core as mc
    import numpy as np

    assert not plot_workers.fork_is_safe()
    workers = plot_workers.PlotWorkers.start()
    assert workers.pid is None
    report = mc.binary_report(np.array([0, 1, 1, 0]), np.array([0.1, 0.8, 0.6, 0.3]), n_boot=20)
    workers.send(report, tmp_path, prefix="x_")
    written = workers.finish()
    assert workers.drawn_here
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written.values())
    assert len(written) == 5


def test_plot_paths_name_only_what_a_report_can_draw(tmp_path):
    """Curves need scores; predictions only give the confusion matrix."""
    import metrics_core as mc
    import numpy as np

    scored = mc.binary_report(np.array([0, 1, 1, 0]), np.array([0.1, 0.8, 0.6, 0.3]))
    predicted = mc.binary_report(np.array([0, 1, 1, 0]), y_pred=np.array([0, 1, 0, 0]))
    assert list(plot_workers.plot_paths(scored, tmp_path, "a_")) == ["roc", "pr", "gain", "lift", "confusion"]
    assert plot_workers.plot_paths(predicted, tmp_path, "a_") == {"confusion": tmp_path / "a_confusion.png"}
