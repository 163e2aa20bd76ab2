"""Batch statistics on a few threads, consumed in batch order: the same merge tree, hence the same result."""

from __future__ import annotations

import importlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

from metrics_core.threads import one_kernel_thread

__all__ = ["ordered_map"]

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(fn: Callable[[T], R], items: Iterable[T], threads: int, *, imports: Sequence[str] = ()) -> Iterator[R]:
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
        1 runs a plain loop on the calling thread. Either way each call's kernels use one thread
        (:func:`metrics_core.threads.one_kernel_thread`): the items already run side by side, or
        on a core the caller shares with others (a Dask worker).
    imports : sequence of str
        Modules ``fn`` may import on first use (e.g.
        :func:`metrics_core._score_kernels.lazy_modules`): imported here, on the calling thread,
        before any worker starts. A module imported for the first time on a worker thread sits
        half-initialised in ``sys.modules`` while the other workers run, and code that looks
        it up there (``metrics_core._validate`` asks whether polars is loaded) then fails with
        "partially initialized module"; so no module is first imported on a worker.

    Yields
    ------
    ``fn(item)`` for each item, in order.

    Examples
    --------
    >>> list(ordered_map(lambda x: x * x, range(5), threads=2))
    [0, 1, 4, 9, 16]
    """
    def serial(item: T) -> R:
        with one_kernel_thread():
            return fn(item)

    if threads <= 1:
        yield from map(serial, items)
        return
    for name in imports:
        importlib.import_module(name)
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="classwatch-scan") as pool:
        try:
            for item in items:
                pending.append(pool.submit(serial, item))
                if len(pending) > threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
