"""The classwatch commands, one module per family: evaluate, the flows (demo, monitor, ...), deployments."""
