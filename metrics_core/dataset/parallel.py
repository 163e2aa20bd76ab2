"""The one batch loop of every scan: batch statistics on a few threads, consumed in batch order (the same
merges, hence the same result), a failed batch restated, progress after each batch."""

from __future__ import annotations

import importlib
import itertools
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

import pyarrow as pa

from metrics_core.dataset.batches import Part, source_batches
from metrics_core.errors import InputError
from metrics_core.threads import default_threads, one_kernel_thread

__all__ = ["ordered_map", "scan_batches"]

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

    items = iter(items)
    head = list(itertools.islice(items, 2))
    if threads <= 1 or len(head) < 2:  # one item (a small file) starts no thread and imports nothing ahead
        yield from map(serial, itertools.chain(head, items))
        return
    for name in imports:
        importlib.import_module(name)
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="classwatch-scan") as pool:
        try:
            for item in itertools.chain(head, items):
                pending.append(pool.submit(serial, item))
                if len(pending) > threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def scan_batches(source, columns_needed: Sequence[str], update: Callable[[pa.RecordBatch, str, int], R], *,
                 filter=None, batch_rows: int = 1_000_000, parts: Sequence[Part] | None = None,
                 threads: int | None = None, explain: Callable[[InputError, str, pa.RecordBatch, int], Exception]
                 | None = None, progress: Callable[[int, int | None], None] | None = None, total: int | None = None,
                 where: str = "table", imports: Sequence[str] = ()) -> Iterator[tuple[str, pa.RecordBatch, int, R]]:
    """Every batch of ``source`` with ``update(batch, path, first_row)``, in batch order.

    The loop that every scan shares (evaluation statistics, monitoring periods, class values):
    the batches of :func:`~metrics_core.dataset.batches.source_batches`, ``update`` computed on
    ``threads`` threads (:func:`ordered_map`), yielded in order so the caller merges them in one
    fixed order whatever the number of threads.

    Parameters
    ----------
    source : str, path, pyarrow.dataset.Dataset or pyarrow.Table
        A table in memory is one batch named ``where``.
    columns_needed : sequence of str
        The columns read.
    update : callable
        ``update(batch, path, first_row)``: the statistic of one batch (``first_row`` is the
        index of its first row in its file). It must not depend on the other batches.
    filter, batch_rows, parts
        As for :func:`~metrics_core.dataset.iter_batches`.
    threads : int, optional
        None: :func:`~metrics_core.threads.default_threads`.
    explain : callable, optional
        ``explain(error, path, batch, first_row)``: the error to raise when ``update`` raises an
        :class:`InputError` for a batch (e.g. the bad rows counted over the whole file). None:
        the error as it is.
    progress : callable, optional
        ``progress(rows_done, total)`` once the caller has taken each batch.
    total : int, optional
        The rows expected, passed to ``progress``.
    where : str
        The name of an in-memory table.
    imports : sequence of str
        Modules ``update`` may import on first use, imported before the threads start
        (:func:`ordered_map`).

    Yields
    ------
    tuple
        ``(path, batch, first_row, update(batch, path, first_row))``.

    Raises
    ------
    InputError
        The first failing batch's, through ``explain``.

    Examples
    --------
    >>> table = pa.table({"label": [0, 1, 1]})
    >>> [(path, n) for path, _, _, n in scan_batches(table, ["label"], lambda b, path, row: b.num_rows)]
    [('table', 3)]
    """
    def run(item: tuple[str, pa.RecordBatch, int]):
        try:
            return item, update(item[1], item[0], item[2])
        except InputError as exc:  # restated on the calling thread, in its batch's turn
            return item, exc

    batches = source_batches(source, columns_needed, filter=filter, batch_rows=batch_rows, parts=parts, where=where)
    done = 0
    for (path, batch, first_row), out in ordered_map(run, batches, threads or default_threads(), imports=imports):
        if isinstance(out, InputError):
            raise (out if explain is None else explain(out, path, batch, first_row)) from None
        yield path, batch, first_row, out
        done += batch.num_rows
        if progress is not None:
            progress(done, total)
