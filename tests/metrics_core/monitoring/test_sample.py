"""The labelled sample's statistics: merge of batches = one pass, checked input, expansion and Kish's n."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics_core.errors import InputError
from metrics_core.monitoring.sample import SampleStats, effective_sample_size, expansion, merged, sample_update

STRATA = ("a", "b", "c")
K, B = 3, 4


def _rows(seed: int, n: int, labelled: float = 0.3, weights: bool = True):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, len(STRATA), n)
    pred = rng.integers(0, K, n)
    b = rng.integers(0, B, n)
    y = np.where(rng.random(n) < labelled, rng.integers(0, K, n), -1)
    d = np.where(y >= 0, rng.choice([1.0, 2.5, 10.0], n), np.nan)
    w = rng.choice([0.0, 0.5, 1.0, 3.0], n) if weights else None
    return h, pred, b, y, d, w


def _update(h, pred, b, y, d, w) -> SampleStats:
    return sample_update(h, pred, b, y, d, w, strata=STRATA, n_classes=K, n_bins=B)


def _same(a: SampleStats, b: SampleStats) -> None:
    assert a.key.tolist() == b.key.tolist()
    assert a.rows.tolist() == b.rows.tolist()
    np.testing.assert_allclose(a.dw, b.dw, rtol=1e-12)
    np.testing.assert_allclose(a.dw2, b.dw2, rtol=1e-12)
    np.testing.assert_allclose(a.population, b.population, rtol=1e-12)
    assert a.population_rows.tolist() == b.population_rows.tolist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(0, 60), cut=st.floats(0, 1), weights=st.booleans())
def test_merge_of_two_batches_equals_the_statistics_of_their_union(seed, n, cut, weights):
    cols = _rows(seed, n, weights=weights)
    i = int(cut * n)
    first = _update(*(c if c is None else c[:i] for c in cols))
    second = _update(*(c if c is None else c[i:] for c in cols))
    _same(first.merge(second), _update(*cols))


def test_the_cells_hold_the_rows_and_their_weights():
    s = sample_update([0, 0, 0, 1, 1], [1, 1, 1, 0, 0], [2, 2, 2, 0, 0], [0, 0, -1, 1, 1], [2.0, 4.0, np.nan, 1.0, 1.0],
                      [1.0, 0.5, 7.0, 2.0, 0.0], strata=("x", "y"), n_classes=2, n_bins=3)
    assert s.key.tolist() == [[0, 1, 2, 0], [1, 0, 0, 1]]
    assert s.rows.tolist() == [2, 1]  # the row of weight 0 counts nowhere
    assert s.dw.tolist() == [4.0, 2.0]
    assert s.dw2.tolist() == [8.0, 4.0]
    assert s.population[0, 1, 2] == 8.5 and s.population[1, 0, 0] == 2.0
    assert s.population_rows.tolist() == [3, 1]
    assert s.n_labelled == 3


def test_a_labelled_row_without_a_design_weight_is_an_error_naming_its_rows():
    with pytest.raises(InputError, match=r"design_weight: missing, infinite or not positive value in 2 row\(s\), "
                                         r"e\.g\. row 1 = nan"):
        sample_update([0] * 4, [0] * 4, [0] * 4, [0, 1, -1, 1], [1.0, None, None, 0.0], strata=("s",), n_classes=2,
                      n_bins=1)


@pytest.mark.parametrize(("column", "args", "message"), [
    ("stratum", ([0, 2], [0, 0], [0, 0], [0, 0]), r"stratum: index outside \[0, 1\] in 1 row\(s\), e\.g\. row 1 = 2"),
    ("label", ([0, 0], [0, 0], [0, 0], [-2, 0]), r"label: index outside \[-1, 1\] in 1 row\(s\), e\.g\. row 0 = -2"),
    ("weight", ([0, 0], [0, 0], [0, 0], [0, 0], None, [1.0, -1.0]), r"weight: missing, infinite or negative value"),
    ("pred", ([0], [0, 1], [0, 0], [0, 0]), r"stratum: expected 2 values"),
])
def test_bad_input_is_an_error_naming_the_column(column, args, message):
    with pytest.raises(InputError, match=message):
        sample_update(*args, strata=("s", "t"), n_classes=2, n_bins=1)


def test_statistics_of_different_layouts_do_not_merge():
    a = sample_update([0], [0], [0], [0], strata=("s",), n_classes=2, n_bins=1)
    b = sample_update([0], [0], [0], [0], strata=("s",), n_classes=2, n_bins=2)
    with pytest.raises(InputError, match="n_bins differ"):
        a.merge(b)


def test_many_parts_aggregated_at_once_equal_their_merges_one_by_one_to_the_last_bit():
    """``merged`` (a batch's segments, one sort of every part's cells) gives what the merges one by one
    give, float sums to the bit (the same additions in the same order), price cells included; parts
    of another layout are refused as by ``merge``."""
    parts = []
    for seed in range(7):
        h, pred, b, y, d, w = _rows(seed, 40 * seed)  # the first part empty
        prices = np.random.default_rng(seed).integers(0, 6, h.size)
        parts.append(sample_update(h, pred, b, y, d, w, strata=STRATA, n_classes=K, n_bins=B, price_idx=prices,
                                   n_price_bins=6))
    at_once, one_by_one = merged(parts), parts[0]
    for p in parts[1:]:
        one_by_one = one_by_one.merge(p)
    for f in ("key", "rows", "dw", "dw2", "population", "population_rows"):
        assert getattr(at_once, f).tobytes() == getattr(one_by_one, f).tobytes(), f
    for f in ("code", "rows", "dw", "dw2"):
        assert getattr(at_once.price_cells, f).tobytes() == getattr(one_by_one.price_cells, f).tobytes(), f
    assert at_once.n_labelled > 0 and at_once.price_cells.code.size > 1
    with pytest.raises(InputError, match="n_bins differ"):
        merged([parts[1], sample_update(*_rows(9, 10), strata=STRATA, n_classes=K, n_bins=B + 1)])


def test_expansion_takes_each_stratum_to_its_known_weight():
    h, pred, b, y, d, w = _rows(3, 400)
    s = _update(h, pred, b, y, d, w)
    total, factor = expansion(s)
    counted = w > 0
    assert total.tolist() == pytest.approx([w[h == i].sum() for i in range(3)])
    lab = (y >= 0) & counted
    assert factor.tolist() == pytest.approx([w[h == i].sum() / (d * w)[lab & (h == i)].sum() for i in range(3)])


def test_effective_sample_size_is_kish_on_the_expanded_weights():
    h, pred, b, y, d, w = _rows(5, 600)
    s = _update(h, pred, b, y, d, w)
    _, factor = expansion(s)
    lab = (y >= 0) & (w > 0)
    a = factor[h[lab]] * d[lab] * w[lab]
    assert effective_sample_size(s) == pytest.approx(a.sum() ** 2 / (a * a).sum(), rel=1e-12)
    assert effective_sample_size(s) < lab.sum()
    # equal weights: the labelled rows themselves
    plain = _update(h, pred, b, y, np.ones(h.size), None)
    assert effective_sample_size(plain) == pytest.approx(_equal_kish(h, y), rel=1e-12)


def _equal_kish(h, y) -> float:
    """Kish's n when each stratum's labelled rows carry its rows / its labelled rows."""
    a = np.concatenate([np.full(int(((y >= 0) & (h == i)).sum()), (h == i).sum() / ((y >= 0) & (h == i)).sum())
                        for i in range(3)])
    return a.sum() ** 2 / (a * a).sum()
