"""Prefect tasks: thin typed wrappers that load data, call metrics_core, log and alert.

Every module directly in this package defines tasks; the subpackages hold no task:
``config`` (the run spec, data sources), ``store`` (the MLflow store adapter), ``render``
(plots, reports, tables).
"""

from __future__ import annotations


def transient(task, task_run, state) -> bool:
    """Retry condition: retry I/O failures, never bad input or a bad spec (ValueError), nor a server
    that a probe found down (:class:`tasks.net.Unreachable`: a retry would wait as long again)."""
    from tasks.net import Unreachable

    exc = state.data if isinstance(state.data, BaseException) else None
    if exc is None:
        try:
            exc = state.result(raise_on_failure=False)
        except Exception:  # noqa: BLE001 - an unreadable result: retry is the safe default
            return True
    return not isinstance(exc, (ValueError, Unreachable))


def __getattr__(name: str):
    """``IO``: the options of the tasks that do I/O, retried on transient failures only (see
    :func:`transient`). Built on first use, so that importing a subpackage without tasks
    (``tasks.render``, ``tasks.config``) does not import Prefect."""
    if name != "IO":
        raise AttributeError(f"module 'tasks' has no attribute {name!r}")
    from prefect.cache_policies import NO_CACHE

    globals()["IO"] = io = {"retries": 2, "retry_delay_seconds": 1, "retry_condition_fn": transient,
                            "cache_policy": NO_CACHE}
    return io

__all__ = ["IO", "transient"]
