"""The fixed bins every period's histograms share (scores, log prices): any two periods' statistics merge."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Bins"]


@dataclass(frozen=True)
class Bins:
    """Fixed bins shared by every period, so that the statistics of any two periods merge and compare.

    Parameters
    ----------
    score_bins : int
        Equal-width score bins over ``score_range`` (0.001 wide by default: the binned KS and
        Wasserstein statistics are within one bin width of those on the rows).
    score_range : (float, float)
        Range of the score bins.
    price_bins_per_decade : int
        Equal-width bins of log10 price per factor of ten (500: 0.46 % relative width).
    price_range : (float, float)
        Range of the price bins (> 0).

    Each binning has one overflow bin below and one above its range (index 0 and n + 1); values
    there are counted, not dropped (``PeriodStats.overflow``).

    Examples
    --------
    >>> b = Bins(score_bins=4)
    >>> b.score_index(np.array([-0.1, 0.0, 0.3, 1.0, 1.2])).tolist()
    [0, 1, 2, 4, 5]
    """

    score_bins: int = 1000
    score_range: tuple[float, float] = (0.0, 1.0)
    price_bins_per_decade: int = 500
    price_range: tuple[float, float] = (0.01, 1e6)

    @property
    def n_price_bins(self) -> int:
        """Number of regular price bins."""
        lo, hi = (math.log10(x) for x in self.price_range)
        return int(round((hi - lo) * self.price_bins_per_decade))

    @staticmethod
    def _index(x: np.ndarray, lo: float, hi: float, n: int) -> np.ndarray:
        """0 = below lo, 1..n regular bins (the last closed), n + 1 = above hi."""
        idx = np.floor((x - lo) * (n / (hi - lo))).astype(np.int64) + 1
        np.clip(idx, 0, n + 1, out=idx)
        idx[x == hi] = n
        return idx

    def score_index(self, scores: np.ndarray) -> np.ndarray:
        """Bin index of each score (0 and ``score_bins + 1`` are the overflow bins)."""
        return self._index(scores, *self.score_range, self.score_bins)

    def price_index(self, price: np.ndarray) -> np.ndarray:
        """Bin index of each price, on the log10 scale (0 and ``n_price_bins + 1`` are overflow)."""
        lo, hi = (math.log10(x) for x in self.price_range)
        return self._index(np.log10(price), lo, hi, self.n_price_bins)

    def score_points(self) -> np.ndarray:
        """A representative value per bin: regular bin centres; overflow bins at the range ends
        (:func:`_bin_points`: one read-only array per binning)."""
        return _bin_points(*self.score_range, self.score_bins)

    def price_points(self) -> np.ndarray:
        """Bin centres in log10 price (overflow bins at the range ends; :func:`_bin_points`)."""
        lo, hi = (math.log10(x) for x in self.price_range)
        return _bin_points(lo, hi, self.n_price_bins)

    def score_edges(self) -> np.ndarray:
        """The ``score_bins + 1`` edges of the regular score bins."""
        return np.linspace(*self.score_range, self.score_bins + 1)


@functools.lru_cache(maxsize=64)
def _bin_points(lo: float, hi: float, n: int) -> np.ndarray:
    """``lo``, the centres of ``n`` equal bins over [lo, hi], then ``hi``: one read-only array per
    binning, so that the tests of a period's segments, which all read it, find their bins the same
    by identity rather than by comparing thousands of values (:func:`~metrics_core.monitoring.kinds.base.run_jobs`)."""
    out = np.concatenate(([lo], lo + (hi - lo) / n * (np.arange(n) + 0.5), [hi]))
    out.flags.writeable = False
    return out
