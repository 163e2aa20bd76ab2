"""Fixtures of the flow tests: one Dask LocalCluster for the session (the one ``--runner dask`` makes)."""

from __future__ import annotations

import os

import pytest

from classwatch.cli import ALLOCATOR_ENV

# The allocator variables of the shell, read at collection: before a classwatch command run in this
# process by another test (CliRunner) sets the command's own (ALLOCATOR_ENV), or a nanny sets Dask's.
SHELL_ALLOCATOR_ENV = {k: os.environ.get(k) for k in ALLOCATOR_ENV}


@pytest.fixture(scope="session")
def cluster():
    """One LocalCluster of 2 worker processes (the one ``--runner dask`` makes) for every Dask flow test;
    flows reach it by its address. Its workers start with the shell's allocator variables, not those a
    classwatch command run in this process by an earlier test left in ``os.environ``."""
    from flows.runners import local_cluster

    leftover = {k: os.environ.pop(k) for k in ALLOCATOR_ENV if k in os.environ and SHELL_ALLOCATOR_ENV[k] is None}
    try:
        c = local_cluster()
    finally:
        os.environ.update(leftover)
    with c:
        yield c
