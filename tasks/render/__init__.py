"""Rendering (no Prefect tasks here): plots, the ISO clause-8 report, markdown summaries."""
