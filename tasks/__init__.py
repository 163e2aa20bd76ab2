"""Prefect tasks: thin typed wrappers that load data, call metrics_core, log and alert (subpackages config, store, render hold no tasks)."""
