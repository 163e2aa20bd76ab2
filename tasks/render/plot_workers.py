"""Which PNGs a report gets, and two forked processes that load matplotlib while a command reads its data.

No matplotlib here: `classwatch evaluate` starts the workers first thing (:meth:`PlotWorkers.start`),
so their imports (matplotlib and metrics_core, 1.3-1.5 s) run on the second core while the command
imports its own modules and computes the report on the first. Sent the report once its table is
ready, the two workers draw half of its PNGs each while the command prints. On a 1,000-row file
this took the command from 3.4 to 2.2-2.6 s (measured with benchmarks/bench_cli.py). Whatever the workers did
not draw (an error, no exit within ``CHILD_TIMEOUT`` seconds, no fork possible, a report too large
to copy) the command draws itself, so the pictures never depend on the workers.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CURVE_PLOTS = ("roc", "pr", "gain", "lift")
CHILD_TIMEOUT = 60.0  # seconds the workers may take once sent the report; then the command draws
#: Largest pickled report sent to the workers. A report of millions of distinct scores is drawn in
#: the command's process: copying it would cost more than the second core saves.
MAX_JOB_BYTES = 64 << 20
_GO = b"g"  # one byte per worker: the job file is written
#: The first worker's plots; the second draws the others. The PR curve and the confusion matrix
#: take longest (its text, the isoline labels): 0.61 against 0.50 s for a 1,000-row report.
FIRST_WORKER = ("roc", "gain", "lift")


def plot_paths(report, out_dir, prefix: str = "") -> dict[str, Path]:
    """The PNGs :func:`tasks.render.plots.plot_report` writes for ``report``, name -> path, in drawing order.

    ``<prefix>roc.png``, ``pr``, ``gain`` and ``lift`` when the report has curves (scores), and
    ``<prefix>confusion.png`` when it has one K x K confusion matrix (not multilabel).
    """
    names = list(CURVE_PLOTS) if report.curves else []
    if getattr(getattr(report, "stats", None), "confusion", None) is not None or "tp" in report.metrics:
        names.append("confusion")
    return {name: Path(out_dir) / f"{prefix}{name}.png" for name in names}


def fork_is_safe() -> bool:
    """A fork copies only the calling thread: safe on POSIX while this is the process's only thread
    and polars is not loaded (a forked child of a process whose polars thread pool has started
    hangs in its first polars call)."""
    return hasattr(os, "fork") and threading.active_count() == 1 and "polars" not in sys.modules


@dataclass
class PlotWorkers:
    """Two plot workers: ``pid`` is the first (None: no fork, the command draws), the second is its
    child, in its process group. ``go`` is the write end of the pipe they wait on, ``job`` the file
    the report is pickled to. ``drawn_here`` tells, after :meth:`finish`, that the command drew."""

    pid: int | None
    go: int | None = None
    job: Path | None = None
    paths: dict[str, Path] = field(default_factory=dict)
    sent: tuple | None = None
    drawn_here: bool = False

    @classmethod
    def start(cls) -> "PlotWorkers":
        """Fork the workers when :func:`fork_is_safe`; they import matplotlib and wait for a report."""
        if not fork_is_safe():
            return cls(pid=None)
        handle, job = tempfile.mkstemp(prefix="classwatch-plots-", suffix=".pickle")
        os.close(handle)
        read, go = os.pipe()
        pid = os.fork()
        if pid == 0:  # a worker never returns into the command
            code = 1
            try:
                os.close(go)
                os.setpgid(0, 0)  # its own group: the terminal's Ctrl-C is the command's to handle
                code = _work(read, Path(job))
            finally:
                os._exit(code)
        os.close(read)
        try:
            os.setpgid(pid, pid)  # (also here: the group exists before any kill, whoever runs first)
        except OSError:  # the worker already made it, or has exited
            pass
        return cls(pid=pid, go=go, job=Path(job))

    def send(self, report, out_dir, *, prefix: str = "", beta: float | None = None,
             subject: str | None = None) -> None:
        """Give the workers ``report`` to draw into ``out_dir`` (as ``plot_report`` would); returns at once."""
        self.paths = plot_paths(report, out_dir, prefix)
        self.sent = (report, Path(out_dir), prefix, beta, subject)
        if self.pid is None:
            return
        buffers: list = []
        try:
            head = pickle.dumps(self.sent, protocol=5, buffer_callback=buffers.append)  # the size, without a copy
            if len(head) + sum(b.raw().nbytes for b in buffers) <= MAX_JOB_BYTES:
                self.job.write_bytes(pickle.dumps(self.sent, protocol=5))
                os.write(self.go, _GO * 2)
                return
        except (pickle.PicklingError, TypeError, AttributeError, OSError):  # OSError: both workers have exited
            pass
        self.close()  # drawn here

    def finish(self) -> dict[str, Path]:
        """Wait for the workers; draw here what they did not. Returns plot name -> path written."""
        if self.sent is None:
            raise RuntimeError("PlotWorkers.finish: no report was sent")
        if not self._succeeded():
            from tasks.render.plots import plot_report

            report, out_dir, prefix, beta, subject = self.sent
            self.drawn_here = True
            plot_report(report, out_dir, prefix=prefix, beta=beta, subject=subject)  # its error, if any, is raised here
        return self.paths

    def _succeeded(self) -> bool:
        """True when the workers exited with 0 within ``CHILD_TIMEOUT`` seconds (else they are killed)."""
        if self.pid is None:
            return False
        deadline = time.monotonic() + CHILD_TIMEOUT
        try:
            while True:
                done, status = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    self.pid = None
                    return os.waitstatus_to_exitcode(status) == 0
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.005)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the workers if they still run (a command that ends early: no report, an error) and clean up."""
        if self.go is not None:
            os.close(self.go)  # a worker waiting for its job reads the end of the pipe and exits
            self.go = None
        if self.pid is not None:
            for kill in (os.killpg, os.kill):  # the group: both workers; else at least the first
                try:
                    kill(self.pid, signal.SIGKILL)
                    break
                except OSError:
                    continue
            os.waitpid(self.pid, 0)
            self.pid = None
        if self.job is not None:
            self.job.unlink(missing_ok=True)
            self.job = None


def _work(read: int, job: Path) -> int:
    """The first worker: import the plots, fork the second, then each draws its half of the PNGs
    (:data:`FIRST_WORKER`) of the report in ``job`` once the pipe says go. Returns 0 when both drew
    theirs (or no report came)."""
    from tasks.render.plots import plot_report  # matplotlib: the import this process is here for

    second = os.fork()
    code = 1
    try:
        if os.read(read, 1) != _GO:  # the end of the pipe: the command ended without a report
            return 0
        report, out_dir, prefix, beta, subject = pickle.loads(job.read_bytes())
        names = [name for name in plot_paths(report, out_dir, prefix) if (name in FIRST_WORKER) == (second != 0)]
        plot_report(report, out_dir, prefix=prefix, beta=beta, names=names, subject=subject)
        code = 0
    except Exception:  # noqa: BLE001 - the command draws these plots itself and raises the error there
        code = 1
    if second == 0:
        return code
    _, status = os.waitpid(second, 0)
    return code or int(os.waitstatus_to_exitcode(status) != 0)
