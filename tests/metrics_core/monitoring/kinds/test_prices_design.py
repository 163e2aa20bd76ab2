"""The Annex E price-cell tests of a labelled sample with unequal weights, weighted by the design:
exact for equal weights, at the nominal level on stratified samples (where the labelled rows as they
are read a price change that is not there), and still seeing a real price change.

The simulated population (many seeds drawn in one numpy pass): three common classes and a rare one;
the model sends 8 % of each common class's rows, the dearer ones (three times the price), to the
rare class. Labels are a stratified sample by predicted class, 3 % of the common predicted classes
and 25 % of the rare one, with design weights 1 / rate: the rows of a common class predicted rare
are over-sampled eight-fold.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from metrics_core import drift
from metrics_core.monitoring import Bins, assess_period, update
from metrics_core.monitoring.assess import UNEQUAL_WEIGHTS_UNTESTED
from metrics_core.monitoring.kinds import TestKey
from metrics_core.monitoring.kinds.prices import (CELL_GROUPS, _cell_tests, _design_group, design_cells,
                                                  price_test)
from metrics_core.monitoring.period import binned
from metrics_core.monitoring.sample import expanded_cells, unequal

LABELS = np.array(["a", "b", "c", "r"])
RATES = np.array([0.03, 0.03, 0.03, 0.25])
CELL_KINDS = ("price_label", "price_false_positive", "price_false_negative")
SEEDS = 200
#: Coarser price bins than the default (0.01 in log10 price, 400 bins): the same test on fewer points.
BINS = Bins(price_bins_per_decade=100, price_range=(0.1, 1000.0))


def _population(seeds: int, n: int, rng: np.random.Generator, rise: float = 0.0):
    """(label, predicted, price) of ``seeds`` deliveries of ``n`` rows; class a's prices times 1 + rise."""
    y = rng.choice(4, p=[0.32, 0.32, 0.31, 0.05], size=(seeds, n))
    u = rng.random((seeds, n))
    pred = np.where(u < 0.85, y, np.where(u < 0.93, 3, (y + 1) % 3))
    log_price = np.log10([2.0, 5.0, 10.0, 20.0])[y] + 0.15 * rng.standard_normal((seeds, n))
    log_price += np.where((pred == 3) & (y != 3), np.log10(3.0), 0.0)  # the dearer rows go to the rare class
    log_price += np.where(y == 0, np.log10(1.0 + rise), 0.0)
    return y, pred, 10.0 ** log_price


def _p_values(seeds: int, seed: int, rise: float = 0.0, kinds=CELL_KINDS) -> tuple[dict, dict]:
    """Per test key, the p-values over seeds of the design-weighted tests of ``kinds`` and of the same
    labelled rows read as they are (their raw cells; labelled classes only); a fresh fully labelled
    reference per seed."""
    rng = np.random.default_rng(seed)
    ry, rp, rprice = _population(seeds, 4_000, rng)
    y, pred, price = _population(seeds, 12_000, rng, rise)
    on = rng.random(y.shape) < RATES[pred]
    weighted: dict = {}
    raw: dict = {}
    for s in range(seeds):
        ref = update("multiclass", LABELS, BINS, rp[s], label_idx=ry[s], price=rprice[s])
        cur = update("multiclass", LABELS, BINS, pred[s], label_idx=np.where(on[s], y[s], -1), price=price[s],
                     design_weight=np.where(on[s], 1 / RATES[pred[s]], np.nan), labelled_sample=True)
        assert unequal(cur.sample)
        for out, period, tested in ((weighted, cur, kinds), (raw, dataclasses.replace(cur, sample=None),
                                                               ("price_label",))):
            planned = [t for kind in tested for t in _cell_tests(kind, ref, period)]
            for key, job in planned:  # (one thread: run_jobs' pool costs more than these small tests)
                out.setdefault(key, []).append(job.test(job.reference, job.current).p_value)
    return weighted, raw


@pytest.fixture(scope="module")
def no_change():
    return _p_values(SEEDS, 1)


def _rate(p_values: dict, keys=None) -> float:
    """The share of tests (over seeds and the given keys) with p < 0.05."""
    p = np.concatenate([np.asarray(v) for k, v in p_values.items() if keys is None or k in keys])
    return float((p < 0.05).mean())


def test_equal_weights_give_the_unweighted_price_test_exactly():
    """A proportionate stratified sample (5 % of every predicted class, each class's rows a multiple of
    20): every labelled row carries the same weight, so each design-weighted group is the raw group times
    that weight, its effective size the raw count, and the price test the same to the last bit."""
    rng = np.random.default_rng(3)
    y, pred, price = (a[0] for a in _population(1, 16_000, rng))
    ry, rp, rprice = (a[0] for a in _population(1, 4_000, rng))
    # 5 % exactly of each predicted class: its rows rounded down to a multiple of 20, then 1 in 20 labelled
    keep = np.concatenate([np.flatnonzero(pred == k)[: (pred == k).sum() // 20 * 20] for k in range(4)])
    y, pred, price = y[keep], pred[keep], price[keep]
    on = np.zeros(keep.size, bool)
    for k in range(4):
        rows = np.flatnonzero(pred == k)
        on[rng.choice(rows, rows.size // 20, replace=False)] = True
    cur = update("multiclass", LABELS, Bins(), pred, label_idx=np.where(on, y, -1), price=price,
                 design_weight=np.where(on, 7.5, np.nan), labelled_sample=True)
    ref = update("multiclass", LABELS, Bins(), rp, label_idx=ry, price=rprice)
    assert not unequal(cur.sample)  # so the period reads its raw cells: the same test either way, as below
    cells = expanded_cells(cur.sample, cur.sample.price_cells)
    assert np.all(cells.dw == 20.0) or np.allclose(cells.dw / cells.rows, 20.0)
    points = Bins().price_points()
    compared = 0
    for kind in CELL_KINDS:
        for j in range(4):
            raw = CELL_GROUPS[kind](*cur.price_cell_margins, j)
            hist, n_eff = _design_group(kind, cells, j)
            assert n_eff == raw.sum() and np.allclose(hist, 20.0 * raw)
            r = CELL_GROUPS[kind](*ref.price_cell_margins, j)
            if raw.sum() < 20:
                continue
            unweighted = price_test(binned(points, r), binned(points, raw))
            design = price_test(binned(points, r), binned(points, hist), n_effective=(float(r.sum()), n_eff))
            assert design == unweighted, (kind, j)
            compared += 1
    assert compared >= 6


def test_weighted_ks_is_the_ks_of_the_weighted_ecdfs_at_the_effective_sizes():
    """drift.ks with effective sizes: D is the largest gap of the weighted ECDFs (a direct numpy oracle) and
    the p-value scipy's two-sample KS p-value at the rounded effective sizes; unweighted it is scipy's own."""
    from scipy import stats
    from scipy.stats import _stats_py

    rng = np.random.default_rng(5)
    a, b = np.round(rng.normal(0, 1, 300), 2), np.round(rng.normal(0.3, 1, 200), 2)
    wb = rng.choice([1.0, 9.0], b.size)
    ref, cur = drift.value_distribution(a), drift.value_distribution(b, sample_weight=wb)
    n_eff = wb.sum() ** 2 / (wb ** 2).sum()
    res = drift.ks(ref, cur, n_effective=(300.0, n_eff))
    grid = np.union1d(a, b)
    gap = np.abs(np.searchsorted(np.sort(a), grid, side="right") / a.size
                 - np.array([wb[b <= x].sum() for x in grid]) / wb.sum()).max()
    assert res.statistic == pytest.approx(gap, abs=1e-12)
    m = round(n_eff)
    ok, _, p = _stats_py._attempt_exact_2kssamp(300, m, np.gcd(300, m), gap, "two-sided")
    assert ok and res.p_value == pytest.approx(p, rel=1e-12) and res.details["n_current"] == m
    same = drift.ks(a, b[:150], n_effective=(300, 150))
    scipy_p = stats.ks_2samp(a, b[:150]).pvalue
    assert same.p_value == pytest.approx(scipy_p, rel=1e-12) and same == drift.ks(a, b[:150])


def test_design_weighted_price_cells_hold_the_level_where_the_raw_cells_do_not(no_change):
    """No price change, stratified sample (3 % / 25 %): the design-weighted tests reject about as often
    as their level says; the same labelled rows read as they are see a change in every labelled class."""
    weighted, raw = no_change
    label_keys = [TestKey("price_label", c) for c in "abc"]
    fa_all, fa_label = _rate(weighted), _rate(weighted, label_keys)
    raw_label = _rate(raw, label_keys)
    print(f"false alarms at alpha 0.05 over {SEEDS} seeds: design-weighted {fa_all:.3f} (all {len(weighted)} "
          f"price-cell tests), {fa_label:.3f} (labelled classes a-c); raw cells {_rate(raw):.3f} (labelled "
          f"classes a-r), {raw_label:.3f}")
    assert fa_all <= 0.08 and fa_label <= 0.08
    assert raw_label > 0.5  # the raw cells are biased: the over-sampled dearer rows read as a price rise
    # every test the raw cells run, the design runs (a group's effective size can fall under the minimum)
    assert set(weighted) >= {TestKey("price_label", c) for c in "abcr"}


def test_design_weighted_price_cells_see_a_real_price_change():
    """Class a's prices rise by 15 % in the delivery: its design-weighted labelled-class test sees it."""
    weighted, raw = _p_values(50, 2, rise=0.15, kinds=("price_label",))
    key = TestKey("price_label", "a")
    power = _rate({key: weighted[key]})
    print(f"detection of a 15 % rise of class a (50 seeds): design-weighted {power:.2f}, raw cells "
          f"{_rate({key: raw[key]}):.2f}")
    assert power >= 0.8
    others = [TestKey("price_label", c) for c in "bc"]
    assert _rate(weighted, others) <= 0.1


def test_assess_period_runs_the_price_cell_tests_of_a_design_weighted_delivery():
    """Through the notebook API: a delivery labelled on a stratified sample with design weights has its
    Annex E price-cell tests (before, they were left out of the period), at their effective sizes."""
    import polars as pl

    rng = np.random.default_rng(11)
    ry, rp, rprice = (a[0] for a in _population(1, 6_000, rng))
    y, pred, price = (a[0] for a in _population(1, 20_000, rng))
    on = rng.random(y.size) < RATES[pred]
    reference = pl.DataFrame({"label": LABELS[ry].tolist(), "prediction": LABELS[rp].tolist(), "price": rprice})
    current = pl.DataFrame({"label": LABELS[y].tolist(), "prediction": LABELS[pred].tolist(), "price": price,
                            "design_weight": np.where(on, 1 / RATES[pred], np.nan)}).with_columns(
        label=pl.when(pl.Series(on)).then(pl.col("label")).otherwise(None))
    out = assess_period(reference, current, columns={"price": "price"}, design_weight="design_weight",
                        report_options={"n_boot": 0})
    assert design_cells(out.current) is not None
    cells = {k: t for k, t in out.tests.items() if k.kind in CELL_KINDS}
    assert {k.kind for k in cells} == set(CELL_KINDS)
    t = cells[TestKey("price_label", "a")]
    labelled_a = int(((y == 0) & on).sum())
    assert t.details["n_current"] < 0.8 * labelled_a  # Kish's effective size, not the labelled rows
    assert "price_label_shift/a" in out.metrics
    assert not any(r.key.kind in CELL_KINDS for r in out.reasons)
    assert "price_impact.json" not in out.tables  # not given under unequal weights, and said so once
    assert [n for n in out.decision.notes if "price-impact table are not given" in n] == [UNEQUAL_WEIGHTS_UNTESTED]
    per_class = out.tables["per_class_performance.json"]
    recall = per_class.filter(pl.col("class") == "r")["recall"][0]
    truth = ((pred == 3) & (y == 3)).sum() / (y == 3).sum()
    assert abs(recall - truth) < 0.05
    assert {"recall_ci_low", "recall_ci_high"} <= set(per_class.columns)
