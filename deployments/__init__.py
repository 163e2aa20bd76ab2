"""Deployments: prefect.yaml, serve (schedules, event triggers), events, automations, local servers."""
