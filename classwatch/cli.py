"""The `classwatch` command line: one Typer app; each command's body lives in classwatch/commands/."""

from __future__ import annotations

import gc
import inspect
import os
from typing import Annotated

import typer

from classwatch.commands import deploy, evaluate, flows
from classwatch.commands.errors import DEBUG_ENV

#: Process settings of every classwatch command, set once here (never at import of a library module):
#: no telemetry look-ups (the machines may be offline), and Prefect logs only what matters to a user.
PROCESS_ENV = {"MLFLOW_DISABLE_TELEMETRY": "true", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
               "PREFECT_LOGGING_LEVEL": "WARNING"}
#: How long MLflow's client retries a call to a tracking server that does not answer: 4 retries
#: with backoff 2 (waits of about 0, 4, 8 and 16 s, plus up to 1 s of jitter each) and 60 s for one
#: request. MLflow's defaults (7 retries up to 120 s apart, 120 s a request) spent about 4 minutes on
#: every call to a server that had died, and with the task's retries a period gave no word for 16.7
#: minutes; now a store lost mid-period ends the command after about 30 s. A user's value wins.
MLFLOW_ENV = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "4", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "2",
              "MLFLOW_HTTP_REQUEST_TIMEOUT": "60"}
#: numpy asks the kernel for transparent huge pages for every large array (madvise). Where the kernel
#: then compacts memory on the first touch (THP defrag "madvise", a common default, as on our
#: machines) a fresh array costs far more than it saves, and a command allocates most of its large
#: arrays once: the curves of a 20M-score statistic took 0.6 s with huge pages and 0.39 s without,
#: the exact 100M-row report 16.9 s and 15.2-16.0 s. (A warm loop over the same sizes gains from
#: them, so the library leaves numpy's default alone.) Read when numpy is imported, which no
#: command does before these settings are applied; a user's value wins.
NUMPY_ENV = {"NUMPY_MADVISE_HUGEPAGE": "0"}
#: Start-up allowance of Prefect's embedded API server (Prefect's default: 20 s). With a new Prefect
#: home (its database is created first) on a busy 2-core machine the start took 20-45 s, and 5 of 9
#: first commands failed with "Timed out while attempting to connect to ephemeral Prefect API
#: server"; under a load average of 11 it took up to 116 s. Set before Prefect is imported (it
#: reads its settings once); a user's value wins.
STARTUP_ENV = {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300"}
#: Allocators that keep freed memory for the next batch instead of handing it back to the kernel,
#: which faulted it in and zeroed it again on every batch (a third of an exact scan's CPU on some of
#: our VMs): every thread on glibc's main heap, every array from it (no fresh mappings, even above
#: 32 MiB), up to 1 GiB kept free between batches (each scan trims the heap at its end), Arrow's
#: mimalloc without purging. Why each and what it measured: docs/large-data.md ("Allocator
#: settings"). glibc reads its variables only when a process starts, so this process applies them
#: through mallopt (:func:`tune_allocators`); the processes a command starts (Dask workers, servers)
#: inherit the variables; mimalloc reads its variable when pyarrow is loaded, which no command does
#: before this. A user's value wins.
ALLOCATOR_ENV = {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_MAX_": "0", "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
                 "MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MIMALLOC_PURGE_DELAY": "-1"}
# mallopt parameter numbers of glibc's <malloc.h> for the glibc variables above
_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_MMAP_THRESHOLD_": -3, "MALLOC_MMAP_MAX_": -4, "MALLOC_ARENA_MAX": -8}

app = typer.Typer(
    name="classwatch",
    help="Evaluate and monitor classifiers (ISO/IEC TS 4213, ONS guidance) with Prefect and MLflow.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"classwatch {version('classwatch')}")
        raise typer.Exit()


@app.callback()
def _process_settings(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks (Prefect's included) with the error "
                                        f"messages; the same as {DEBUG_ENV}=1.")] = False,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                                          callback=_version)] = False,
) -> None:
    """Evaluate and monitor classifiers (ISO/IEC TS 4213, ONS guidance) with Prefect and MLflow."""
    if debug:
        os.environ[DEBUG_ENV] = "1"
    for key, value in {**PROCESS_ENV, **STARTUP_ENV, **NUMPY_ENV, **MLFLOW_ENV}.items():
        os.environ.setdefault(key, value)
    tune_allocators()


def tune_allocators() -> dict[str, str]:
    """Apply :data:`ALLOCATOR_ENV` to this process (glibc through ``mallopt``) and to its environment
    (mimalloc, child processes such as Dask workers); a variable already set wins. Returns what was applied.

    Not glibc (musl, macOS): only the environment is set.
    """
    import ctypes

    applied = {k: v for k, v in ALLOCATOR_ENV.items() if k not in os.environ}
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        mallopt = None
    for key, value in applied.items():
        if key in _MALLOPT and mallopt is not None:
            mallopt(_MALLOPT[key], int(value))
        os.environ[key] = value
    return applied


def _flowing(doc: str) -> str:
    """A docstring as --help text: each prose paragraph on one line, lists and examples as written."""
    paragraphs = []
    for para in inspect.cleandoc(doc).split("\n\n"):
        lines = para.split("\n")
        as_written = any(line.startswith((" ", "-", "*", "\b")) for line in lines)
        paragraphs.append(para if as_written else " ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs)


def _flowing_help(typer_app: typer.Typer) -> None:
    """Give every command of ``typer_app`` (and its groups) its docstring as flowing paragraphs.

    Typer keeps the single line breaks of a help text's later paragraphs, so a docstring wrapped
    at 100 columns came out as alternating long and short lines in an 80-column terminal.
    """
    for info in typer_app.registered_commands:
        doc = info.help or (info.callback.__doc__ if info.callback else None)
        if doc:
            info.help = _flowing(doc)
    for group in typer_app.registered_groups:
        _flowing_help(group.typer_instance)


# Registered in this order, so `classwatch --help` lists the commands so.
app.command()(evaluate.evaluate)
flows.register(app)  # demo, monitor, compare, recommend, ui
deploy.register(app)  # serve, notify-trained, alerts, server
_flowing_help(app)


def main() -> None:
    """Entry point of the ``classwatch`` console script and of ``python -m classwatch``."""
    try:
        app()
    finally:
        # The interpreter's last garbage collection walks every object the libraries made at
        # import (matplotlib, pandas, pyarrow): 0.35 s of a 1,000-row `classwatch evaluate`
        # (benchmarks/bench_cli.py). Frozen objects are skipped by that walk; the modules are still cleared.
        gc.freeze()
