"""The MLflow store adapter (no Prefect tasks here): find, create and finish runs idempotently."""
