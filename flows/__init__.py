"""Prefect flows: they only order task calls (evaluate_model, monitor_period, compare_models, compute_stats)."""
