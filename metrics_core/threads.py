"""How many threads a kernel may use: a few for an array in memory, one inside a scan's batch statistics."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

__all__ = ["PARALLEL_MIN", "default_threads", "in_background", "in_ranges", "kernel_threads", "one_kernel_thread",
           "side_thread"]

T = TypeVar("T")

# Below this many elements a second thread costs more (start-up, cache traffic) than it saves.
PARALLEL_MIN = 1 << 20

_state = threading.local()


def default_threads() -> int:
    """Threads of a scan or an in-memory kernel: ``CLASSWATCH_SCAN_THREADS`` when set, else 2 (1 on a 1-core machine).

    Why 2: the statistics spend most of their time in numpy and polars kernels that release the
    GIL (the sort, the run sums), so a second thread nearly doubles them on two cores; more
    threads mostly add memory (one batch and its sort temporaries each). A Dask worker's scan
    uses 1: the cluster already puts one task on each core.

    Examples
    --------
    >>> default_threads() >= 1
    True
    """
    env = os.environ.get("CLASSWATCH_SCAN_THREADS", "").strip()
    if env:
        return max(1, int(env))
    return max(1, min(2, os.cpu_count() or 1))


@contextmanager
def one_kernel_thread() -> Iterator[None]:
    """Within this block, kernels called on this thread use one thread.

    A scan's batch statistics run on threads of their own
    (:func:`metrics_core.dataset.parallel.ordered_map`) or one per core on Dask workers; a kernel
    starting more threads there would only compete with its siblings.
    """
    previous = getattr(_state, "serial", False)
    _state.serial = True
    try:
        yield
    finally:
        _state.serial = previous


def kernel_threads(size: int, min_size: int | None = None) -> int:
    """Threads for a kernel over ``size`` elements: 1 below ``min_size`` (default
    :data:`PARALLEL_MIN`, for kernels of a few nanoseconds an element) or inside
    :func:`one_kernel_thread`, else :func:`default_threads`.

    Examples
    --------
    >>> kernel_threads(10)
    1
    >>> with one_kernel_thread():
    ...     kernel_threads(1 << 30)
    1
    """
    if size < (PARALLEL_MIN if min_size is None else min_size) or getattr(_state, "serial", False):
        return 1
    return default_threads()


def _computed(fn: Callable[..., T], *args) -> "Future[T]":
    """``fn(*args)`` computed now, on this thread, as a done Future (its error raised by ``.result()``,
    as a pool's future would)."""
    future: Future = Future()
    try:
        future.set_result(fn(*args))
    except BaseException as exc:
        future.set_exception(exc)
    return future


@contextmanager
def side_thread(threads: int) -> Iterator[Callable[..., Future]]:
    """A ``submit(fn, *args)`` that runs ``fn`` on a second thread while the block goes on.

    For two independent computations that spend their time in numpy calls (which release the
    GIL); each gives exactly what it gives alone. With ``threads`` <= 1 ``submit`` computes at
    once on the caller's thread. Either way it returns a :class:`concurrent.futures.Future`,
    and the block does not end before the side computation has.

    Examples
    --------
    >>> with side_thread(2) as submit:
    ...     side = submit(sum, [1, 2, 3])
    ...     main = max([1, 2, 3])
    >>> side.result(), main
    (6, 3)
    """
    if threads > 1:
        with ThreadPoolExecutor(1, thread_name_prefix="classwatch-kernel") as pool:
            yield pool.submit
        return

    yield _computed


def in_background(fn: Callable[..., T], *args) -> "Future[T]":
    """Start ``fn(*args)`` on a thread of its own and return its Future at once (computed on the
    caller's thread first when :func:`default_threads` is 1). For work the caller needs only later,
    e.g. a table whose compiled kernels release the GIL while the caller goes on.

    Examples
    --------
    >>> in_background(sum, [1, 2, 3]).result()
    6
    """
    with side_thread(default_threads()) as submit:
        if default_threads() <= 1:
            return submit(fn, *args)
    pool = ThreadPoolExecutor(1, thread_name_prefix="classwatch-kernel")
    try:
        return pool.submit(fn, *args)
    finally:
        pool.shutdown(wait=False)  # the thread ends when ``fn`` returns


def in_ranges(fn: Callable[[int, int], T], size: int, threads: int) -> list[T]:
    """``[fn(begin, end), ...]`` over ``threads`` contiguous ranges covering ``range(size)``, in order.

    The ranges run on ``threads`` threads (the first on the caller's); ``fn`` must touch only
    its own range of any output, so the result is the same for every number of threads.

    Examples
    --------
    >>> in_ranges(lambda b, e: (b, e), 10, 3)
    [(0, 3), (3, 6), (6, 10)]
    """
    parts = max(1, min(threads, size))
    bounds = [size * i // parts for i in range(parts + 1)]
    if parts == 1:
        return [fn(0, size)]
    with ThreadPoolExecutor(parts - 1, thread_name_prefix="classwatch-kernel") as pool:
        futures = [pool.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, parts)]
        first = fn(bounds[0], bounds[1])
    return [first, *(f.result() for f in futures)]
