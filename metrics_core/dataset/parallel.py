"""Batch statistics on a few threads, consumed in batch order: the same merge tree, hence the same result."""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

__all__ = ["default_threads", "ordered_map"]

T = TypeVar("T")
R = TypeVar("R")


def default_threads() -> int:
    """Threads of a streamed scan: ``CLASSWATCH_SCAN_THREADS`` when set, else 2 (1 on a 1-core machine).

    Why 2: a batch's statistic spends most of its time in numpy and polars kernels that release
    the GIL (the sort, the run sums), so a second thread nearly doubles a scan on two cores;
    more threads mostly add memory (one batch and its sort temporaries each). A Dask worker's
    scan uses 1: the cluster already puts one task on each core.

    Examples
    --------
    >>> default_threads() >= 1
    True
    """
    env = os.environ.get("CLASSWATCH_SCAN_THREADS", "").strip()
    if env:
        return max(1, int(env))
    return max(1, min(2, os.cpu_count() or 1))


def ordered_map(fn: Callable[[T], R], items: Iterable[T], threads: int) -> Iterator[R]:
    """``map(fn, items)`` computed on ``threads`` threads, yielded in input order.

    At most ``threads`` items are read ahead, so memory stays a few batches whatever the number
    of items. An exception of ``fn`` is raised when its item's turn comes (as a plain loop
    would raise it: the first bad batch is the one reported); later items are abandoned.

    Parameters
    ----------
    fn : callable
        Called once per item; must not depend on the other items' calls.
    items : iterable
        Read on the calling thread (e.g. Arrow batches from a file).
    threads : int
        1 runs a plain loop on the calling thread.

    Yields
    ------
    ``fn(item)`` for each item, in order.

    Examples
    --------
    >>> list(ordered_map(lambda x: x * x, range(5), threads=2))
    [0, 1, 4, 9, 16]
    """
    if threads <= 1:
        yield from map(fn, items)
        return
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="classwatch-scan") as pool:
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) > threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
