"""The one exit-code convention of the command line, how errors are shown, and Prefect's tracebacks kept quiet."""

from __future__ import annotations

import logging
import os
import traceback
from contextlib import contextmanager
from typing import Iterator, NoReturn

import typer

#: Exit codes of every classwatch command (docs/cli.md "Exit codes"); 130 (128 + SIGINT) after Ctrl-C,
#: as a shell reports a command it interrupted.
OK, FAILED, BAD_INPUT, INTERRUPTED = 0, 1, 2, 130

#: Environment variable that keeps tracebacks (``classwatch --debug`` sets it).
DEBUG_ENV = "CLASSWATCH_DEBUG"

#: Prefect loggers that repeat a failed flow or task run's exception with its traceback.
_PREFECT_ERROR_LOGGERS = ("prefect.flow_runs", "prefect.task_runs", "prefect.flow_engine", "prefect.task_engine",
                          "prefect.engine")


def debug() -> bool:
    """Whether tracebacks are shown (``classwatch --debug`` or ``CLASSWATCH_DEBUG=1``)."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def exit_code(exc: BaseException) -> int:
    """:data:`BAD_INPUT` for bad input (a ``ValueError``: the input contract's ``InputError``, a
    ``SpecError``, a bad period), :data:`FAILED` for anything else (a store, a server, a flow)."""
    return BAD_INPUT if isinstance(exc, ValueError) else FAILED


def message(exc: BaseException) -> str:
    """The user's message of an exception (its type only when it has no text)."""
    text = str(exc).strip()
    return text if text and isinstance(exc, ValueError) else f"{type(exc).__name__}: {text}" if text else \
        type(exc).__name__


def fail(exc: BaseException | str, code: int | None = None) -> NoReturn:
    """Print ``Error: <message>`` on stderr (plain, unwrapped) and exit with the convention's code.

    With ``--debug`` the traceback is printed first.
    """
    if isinstance(exc, BaseException) and debug():
        traceback.print_exception(exc)
    text = exc if isinstance(exc, str) else message(exc)
    typer.secho(f"Error: {text}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=code if code is not None else exit_code(exc) if isinstance(exc, BaseException)
                     else FAILED)


@contextmanager
def quiet_prefect() -> Iterator[None]:
    """Silence Prefect's error logs of failed runs (each repeats the exception with 40-60 lines of
    traceback on stderr): the command prints the user's message itself. Kept with ``--debug``."""
    if debug():
        yield
        return
    loggers = [logging.getLogger(name) for name in _PREFECT_ERROR_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
