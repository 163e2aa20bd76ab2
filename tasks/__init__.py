"""Prefect tasks: thin typed wrappers that load data, call metrics_core, log and alert.

Every module directly in this package defines tasks; the subpackages hold no task:
``config`` (the run spec, data sources), ``store`` (the MLflow store adapter), ``render``
(plots, reports, tables).
"""

from __future__ import annotations

from prefect.cache_policies import NO_CACHE


def transient(task, task_run, state) -> bool:
    """Retry condition: retry I/O failures, never bad input or a bad spec (ValueError)."""
    exc = state.data if isinstance(state.data, BaseException) else None
    if exc is None:
        try:
            exc = state.result(raise_on_failure=False)
        except Exception:  # noqa: BLE001 - an unreadable result: retry is the safe default
            return True
    return not isinstance(exc, ValueError)


#: Options of the tasks that do I/O: retried on transient failures only (see :func:`transient`).
IO = {"retries": 2, "retry_delay_seconds": 1, "retry_condition_fn": transient, "cache_policy": NO_CACHE}

__all__ = ["IO", "transient"]
