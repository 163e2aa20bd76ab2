"""The reference's calibration map: P(label | score) by isotonic regression on its statistics, and its bootstrap."""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator

import numpy as np

try:  # the compiled PAVA behind scipy.optimize.isotonic_regression, without its wrapper (17 -> 6 us a fit)
    from scipy.optimize._pava_pybind import pava as _pava
except ImportError:  # pragma: no cover - a scipy release that moves it: the public function, same values
    from scipy.optimize import isotonic_regression

    def _pava(x, w, r):
        return (isotonic_regression(x, weights=w, increasing=True).x,)

try:  # the compiled step of np.interp, without its wrapper's checks for complex and periodic input (1.4 -> 0.8 us)
    from numpy._core.multiarray import interp as _interp
except ImportError:  # pragma: no cover - a numpy release that moves it: the public function, same values
    _interp = np.interp

from metrics_core.calibration import TOP_LABEL
from metrics_core.monitoring.period import PeriodStats

__all__ = ["CalibrationMap", "bootstrap_stack", "fit_calibration_map", "cached_calibration_map", "calibration_targets",
           "coarsen"]


def _isotonic_fitter(keys: np.ndarray, n: np.ndarray, fallback: np.ndarray | None = None):
    """Isotonic (non-decreasing) fits of the outcome frequency over the bins at ``keys``, one per row of
    the rows ``n`` (..., B), as a function of the bins' positives (same shape): each weighted by its
    rows, empty bins take the value of the nearest fitted bins (linear between them, flat outside); a
    row without rows is ``fallback``'s (broadcast to ``n``'s shape), all nan without one.

    Which bins have rows, and their weights, are found once for the bootstrap's many refits of the
    same rows; each refit divides the positives of all of them by their rows and copies their
    weights at once (the same values), and fits each row on its own slice of them. Each fit calls the
    compiled pool-adjacent-violators step directly (``_pava``, in place on those fresh arrays: the
    values of ``scipy.optimize.isotonic_regression``, about 6 us a fit against 17 us through it) and
    the compiled step of np.interp."""
    b = n.shape[-1]
    full = n > 0
    where = np.flatnonzero(full)  # row after row, bins ascending within each
    rows = n.ravel()[where]
    counts = full.reshape(-1, b).sum(axis=1).tolist()
    ends = np.cumsum(counts, dtype=np.int64).tolist()
    # per row with rows: its index, its bins' slice and that of a scratch with one more entry a row, its keys
    spans = [(i, slice(ends[i] - counts[i], ends[i]), slice(ends[i] - counts[i] + c, ends[i] + c + 1),
              keys[full.reshape(-1, b)[i]]) for c, i in enumerate(i for i in range(len(counts)) if counts[i])]
    empty = np.broadcast_to(np.nan if fallback is None else fallback, n.shape)

    def fit(pos: np.ndarray) -> np.ndarray:
        out = np.array(empty, order="C")  # a writeable copy that the rows below are views of
        flat = out.reshape(-1, b)
        freq, weights = pos.ravel()[where] / rows, rows.copy()
        scratch = np.empty(rows.size + len(spans), dtype=np.intp)
        for i, bins, more, at in spans:
            flat[i] = _interp(keys, at, _pava(freq[bins], weights[bins], scratch[more])[0])
        return out

    return fit


def _conditional_fitter(keys: np.ndarray, n: np.ndarray, fallback: np.ndarray):
    """:meth:`CalibrationMap.conditional` for the fixed rows ``n`` (K, S, B) as a function of the
    positives: a fit per (k, j) with rows (:func:`_isotonic_fitter`), the one-vs-rest map
    ``fallback[j]`` without."""
    return _isotonic_fitter(keys, n, fallback[:n.shape[1]])


@dataclass(frozen=True)
class CalibrationMap:
    """Calibrated probabilities fitted on the reference, per fine score bin.

    ``probs[j, b]``: P(label = class of score column j | that score in fine bin b), one-vs-rest
    over all rows (binary: one column, the positive class); multiclass, a last row ``top_label``:
    P(prediction right | its score in bin b). ``names`` name the rows. ``cond[k, j, b]``: the same among the
    rows predicted as class k, over the coarser bins centred at ``cond_keys`` (the one-vs-rest
    map, ``coarse_probs``, where the reference has no such rows). ``n`` and ``pos`` (K, S, B')
    are the reference rows and positives behind ``cond``, from which the estimate
    draws its bootstrap replicates; ``replicates[r, j, b]`` are bootstrap replicates of ``probs``.
    """

    names: tuple[str, ...]
    keys: np.ndarray
    probs: np.ndarray
    replicates: np.ndarray
    cond: np.ndarray
    n: np.ndarray
    pos: np.ndarray
    cond_keys: np.ndarray | None = None
    coarse_probs: np.ndarray | None = None

    @cached_property
    def finite_replicates(self) -> np.ndarray:
        """Per row of :attr:`probs`, whether all its :attr:`replicates` are finite (found once a map)."""
        return np.isfinite(self.replicates).all(axis=(0, 2))

    def conditional(self, n: np.ndarray | None = None, pos: np.ndarray | None = None) -> np.ndarray:
        """The per-predicted-class maps (K, S, B) fitted on counts ``n``, ``pos`` (default the reference's);
        a (k, j) without rows falls back to the one-vs-rest map of column j."""
        n = self.n if n is None else n
        return _conditional_fitter(self.cond_keys, n, self.coarse_probs)(self.pos if pos is None else pos)

    def bootstrap_conditionals(self, rng: np.random.Generator, n_boot: int) -> Iterator[np.ndarray]:
        """``n_boot`` replicates of :attr:`cond`, each refitted on a bootstrap of the reference rows
        (every coarse bin's positives redrawn as Binomial(rows, observed frequency)).

        The fits' rows-only part is prepared once for all replicates. Each replicate draws from
        ``rng`` when it is asked for, so a caller that draws from the same ``rng`` between
        replicates gets the same values as drawing and refitting in its own loop."""
        refit = _conditional_fitter(self.cond_keys, self.n, self.coarse_probs)
        redraw = _binomial(self.n, self.pos)
        for _ in range(n_boot):
            yield refit(redraw(rng))


def _binomial(n: np.ndarray, pos: np.ndarray):
    """Positives redrawn per bin as Binomial(rows, observed frequency), a bootstrap of the rows given
    their bins: a function of the generator, the bins' frequencies found once for every draw.

    Only the bins with rows are drawn: numpy's binomial draws nothing from the generator for a bin
    of 0 rows (it is 0), so the draws and the generator's state after them are those of drawing every
    bin, at a fifth of the time for a segment's mostly empty (K, S, B) bins."""
    live = np.flatnonzero(n != 0)  # (a mask: numpy finds its True 5x faster than a float array's non-zeros)
    rows = n.ravel()[live]
    trials = np.rint(rows).astype(np.int64)
    freq = np.clip(np.divide(pos.ravel()[live], rows, out=np.zeros(live.size), where=rows > 0), 0, 1)

    def draw(rng: np.random.Generator) -> np.ndarray:
        out = np.zeros(n.size)
        out[live] = rng.binomial(trials, freq)
        return out.reshape(n.shape)

    return draw


def fit_calibration_map(reference: PeriodStats, *, n_boot: int = 200, seed: int = 0, resolution: int = 100
                        ) -> CalibrationMap | None:
    """Fit the calibration maps on the reference window's statistics.

    Parameters
    ----------
    reference : PeriodStats
        The reference window, with labels and scores in [0, 1] (``reference.calibration``,
        ``reference.positives_by_pred``).
    n_boot : int
        Bootstrap replicates of the one-vs-rest map (every fine bin's positives redrawn as
        Binomial(rows of the bin, observed frequency), the fit repeated).
    seed : int
        Seed of the replicates.
    resolution : int
        Score bins of the per-predicted-class maps (the fine bins summed; 100 bins of 0.01 by
        default: fewer, better-filled bins and a fast bootstrap).

    Returns
    -------
    CalibrationMap or None
        Isotonic regression (``scipy.optimize.isotonic_regression``, pool-adjacent-violators) of
        the outcome frequency on the score weighted by rows per fine bin: one-vs-rest per class,
        and per (predicted class, class). None without reference calibration statistics (no
        labels, no scores, scores outside [0, 1], more than ``MAX_CELL_CLASSES`` classes).
    """
    cal = reference.calibration
    if cal is None or reference.positives_by_pred is None or not all(c.valid for c in cal.targets):
        return None
    rng = np.random.default_rng(seed)
    keys = cal.targets[0].keys
    targets = calibration_targets(cal)
    fit = _isotonic_fitter(keys, np.stack([c.n for _, c in targets]))
    probs = fit(np.stack([c.y for _, c in targets]))
    redraws = [_binomial(c.n, c.y) for _, c in targets]  # target after target, replicate after replicate
    reps = (np.stack([fit(np.stack([redraw(rng) for redraw in redraws])) for _ in range(n_boot)]) if n_boot
            else probs[None])
    n, pos = coarsen(reference.score_by_pred, resolution), coarsen(reference.positives_by_pred, resolution)
    ckeys = (np.arange(n.shape[-1]) + 0.5) / n.shape[-1]
    coarse = np.stack([np.interp(ckeys, keys, p) for p in probs])
    names = tuple(name for name, _ in targets)
    partial = CalibrationMap(names, keys, probs, reps, np.empty(0), n, pos, ckeys, coarse)
    return CalibrationMap(names, keys, probs, reps, partial.conditional(), n, pos, ckeys, coarse)


_FITTED: OrderedDict[bytes, CalibrationMap | None] = OrderedDict()
_FITTED_LOCK = threading.Lock()

#: Memory the remembered maps may hold together (the newest is always kept). A reference watched
#: with 50 segments has 51 maps (a few MB each), refitted for every period if only a few were kept.
CACHE_BYTES = 256 * 2**20


def _nbytes(m: CalibrationMap | None) -> int:
    return 0 if m is None else sum(a.nbytes for a in vars(m).values() if isinstance(a, np.ndarray))


#: The integer types a cache key reads counts in, narrowest first (:func:`_content_key`).
_NARROW = (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32)


def _content_key(head: str, arrays: list) -> bytes:
    """SHA-1 over ``head`` and the ``arrays``: float ones by their float64 buffer (no copy when it
    is one), integer ones (counts) by which entries are non-zero (one bit each) and their values (in
    the narrowest integer type that holds them, named in the key).
    The same content gives the same key, any other content another.

    SHA-1 hashes at twice blake2b's speed here, which counts with 51 maps of a few MB each looked
    up per period; a segment's per-class histograms are mostly empty, and their non-zero entries
    are found in a fraction of the time hashing them whole takes.
    """
    digest = hashlib.sha1(head.encode(), usedforsecurity=False)
    for a in arrays:
        if a.dtype.kind in "iu":
            filled = a != 0
            values = np.compress(filled.ravel(), a.ravel())  # a[filled]'s values, at twice its speed
            # in the narrowest integer type that holds them: a fraction of the bytes to hash (large periods' counts)
            narrow = next((t for t in _NARROW if values.size and np.iinfo(t).min <= values.min()
                           and values.max() <= np.iinfo(t).max), a.dtype)
            digest.update(repr(("counts", a.shape, str(a.dtype), str(narrow))).encode())
            digest.update(np.packbits(filled))
            digest.update(values.astype(narrow, copy=False))
        else:
            a = np.ascontiguousarray(a, dtype=np.float64)
            digest.update(repr(a.shape).encode())
            digest.update(a)
    return digest.digest()


def cached_calibration_map(reference: PeriodStats, n_boot: int, seed: int) -> CalibrationMap | None:
    """:func:`fit_calibration_map`, remembered by the reference's content (the most recent maps,
    up to :data:`CACHE_BYTES` together).

    The periods monitored in one process (several ``--period``s, the demo, a notebook loop) share
    their reference, and its fit (K one-vs-rest and K^2 per-class isotonic maps, each refitted
    ``n_boot`` times) is the same every time: it costs about 0.3 s for 10 classes.

    Parameters
    ----------
    reference : PeriodStats
        The reference window.
    n_boot, seed : int
        As for :func:`fit_calibration_map`.

    Returns
    -------
    CalibrationMap or None
        The map :func:`fit_calibration_map` returns for these arguments (the same object while the
        reference's statistics, ``n_boot`` and ``seed`` are remembered); None as there.
    """
    cal = reference.calibration
    if cal is None or reference.positives_by_pred is None:
        return fit_calibration_map(reference, n_boot=n_boot, seed=seed)
    key = _content_key(repr((n_boot, seed, reference.task)), [x for c in cal.targets for x in (c.keys, c.n, c.y)]
                       + [reference.score_by_pred, reference.positives_by_pred])
    with _FITTED_LOCK:
        if key in _FITTED:
            _FITTED.move_to_end(key)
            return _FITTED[key]
    fitted = fit_calibration_map(reference, n_boot=n_boot, seed=seed)
    _remember(_FITTED, key, fitted, CACHE_BYTES, _nbytes)
    return fitted


def _remember(table: OrderedDict, key, value, budget: int, size) -> None:
    """Put ``value`` in ``table`` as its newest entry, then drop the oldest while the entries'
    ``size`` together pass ``budget`` (the newest is always kept)."""
    with _FITTED_LOCK:
        table[key] = value
        table.move_to_end(key)
        total = sum(size(v) for v in table.values())
        while len(table) > 1 and total > budget:
            total -= size(table.popitem(last=False)[1])


_STACKS: OrderedDict[tuple, tuple] = OrderedDict()

#: Memory the remembered bootstrap stacks may hold together (the newest is always kept): a 10-class
#: map's 200 replicates are 16 MB.
STACK_CACHE_BYTES = 64 * 2**20


def bootstrap_stack(cal_map: CalibrationMap, seed: int | None, n_boot: int
                    ) -> tuple[np.ndarray, np.random.Generator]:
    """``n_boot`` replicates of ``cal_map.cond`` drawn by a generator seeded ``seed``
    (:meth:`CalibrationMap.bootstrap_conditionals`), stacked, and that generator after drawing them.

    The replicates depend on the reference alone, so every period judged against it draws the
    same ones; the most recent stacks are remembered (read-only, up to :data:`STACK_CACHE_BYTES`)
    while their map lives, and a remembered stack comes with a new generator in the state the
    draws left it in: the caller's later draws are the ones it would have made after drawing
    them itself. A ``seed`` of None is not remembered.

    Returns
    -------
    (numpy.ndarray, numpy.random.Generator)
        The replicates, shape (n_boot, *cal_map.cond.shape), and the generator.
    """
    rng = np.random.default_rng(seed)
    if seed is None:
        return np.stack(list(cal_map.bootstrap_conditionals(rng, n_boot))), rng
    key = (id(cal_map), seed, n_boot)
    with _FITTED_LOCK:
        hit = _STACKS.get(key)
        if hit is not None and hit[0]() is cal_map:
            _STACKS.move_to_end(key)
            rng.bit_generator.state = hit[2]
            return hit[1], rng
    stack = np.stack(list(cal_map.bootstrap_conditionals(rng, n_boot)))
    stack.flags.writeable = False
    _remember(_STACKS, key, (weakref.ref(cal_map), stack, rng.bit_generator.state), STACK_CACHE_BYTES,
              lambda v: v[1].nbytes)
    return stack, rng


def calibration_targets(cal) -> list:
    """The calibration targets of a period, named: each class's score, then the top label.

    Parameters
    ----------
    cal : CalibrationSet
        A period's calibration statistics (``PeriodStats.calibration``).

    Returns
    -------
    list of (str, CalibrationCounts)
        One pair per score column in class order (binary: the positive class alone), then
        ``("top_label", ...)`` for a multiclass period: the rows of a :class:`CalibrationMap`.
    """
    top = [] if cal.top_label is None else [(TOP_LABEL, cal.top_label)]
    return list(zip(cal.names, cal.targets)) + top


def coarsen(hist: np.ndarray, resolution: int) -> np.ndarray:
    """A score histogram without its overflow bins, its fine bins summed into coarser ones.

    Parameters
    ----------
    hist : numpy.ndarray, shape (..., B + 2)
        Counts per score bin, the overflow bins first and last (``PeriodStats.score_by_pred``).
    resolution : int
        Bins wanted; 0 keeps the fine bins.

    Returns
    -------
    numpy.ndarray of float64, shape (..., resolution) or (..., B)
        Each run of B / ``resolution`` adjacent fine bins summed, when B is a multiple of
        ``resolution`` larger than it; else the B fine bins as they are.

    Examples
    --------
    >>> coarsen(np.array([9, 1, 2, 3, 4, 9]), 2).tolist(), coarsen(np.array([9, 1, 2, 3, 9]), 2).tolist()
    ([3.0, 7.0], [1.0, 2.0, 3.0])
    """
    h = hist[..., 1:-1].astype(np.float64)
    b = h.shape[-1]
    if resolution and b % resolution == 0 and b > resolution:
        h = h.reshape(*h.shape[:-1], resolution, b // resolution).sum(axis=-1)
    return h
