"""The demo: synthetic price quotes, two trained classifiers, then the three flows end to end."""
