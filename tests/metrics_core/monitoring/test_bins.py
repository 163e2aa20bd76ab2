"""The fixed bins: their points are one read-only array per binning, the regular bins' centres between the ends."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics_core.monitoring.bins import Bins


@pytest.mark.parametrize("bins", [Bins(), Bins(score_bins=10), Bins(price_bins_per_decade=20, price_range=(0.5, 2e3))])
@pytest.mark.parametrize("kind", ["score", "price"])
def test_bin_points_are_one_read_only_array_per_binning_with_the_centres(bins, kind):
    """The segments' tests find that they share their bins by identity: the same object on every
    call, which no caller can change, holding the range's ends and each regular bin's centre."""
    if kind == "score":
        points, (lo, hi), n, index = bins.score_points, bins.score_range, bins.score_bins, bins.score_index
    else:
        points, n = bins.price_points, bins.n_price_bins
        lo, hi = (math.log10(x) for x in bins.price_range)
        index = lambda p: bins.price_index(10 ** p)  # noqa: E731 (price points are log10 prices)
    first = points()
    assert points() is first and Bins(**vars(bins)).score_points() is bins.score_points()
    assert not first.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 1.0
    assert first.size == n + 2 and first[0] == lo and first[-1] == hi
    np.testing.assert_allclose(np.diff(first[1:-1]), (hi - lo) / n, rtol=1e-9)
    assert index(first[1:-1]).tolist() == list(range(1, n + 1))  # each centre in its own regular bin
