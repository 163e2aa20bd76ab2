"""Run configuration (no Prefect tasks here): the run spec and the data sources it names."""
