"""classwatch: the command line and the demo, on top of deployments, flows, tasks and metrics_core (nothing imports it)."""
