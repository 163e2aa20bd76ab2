"""Stability (ONS Annex F) judged by the monitoring alert's rule: the same counts and prices give the same tests,
thresholds and verdicts through metrics_core.checks.stability and through metrics_core.monitoring."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from oracles import multipletests

from metrics_core.checks.stability import class_counts, prevalence_stability, price_shift_test, price_stability
from metrics_core.errors import InputError
from metrics_core.monitoring import POLICY, Bins, decide_alert, run_tests, update

LABELS = np.array(["a", "b", "c"])


def _period(pred_idx: np.ndarray, price: np.ndarray | None = None):
    return update("multiclass", LABELS, Bins(score_bins=10), pred_idx, price=price)


def _monitored(ref_idx, cur_idx, ref_price=None, cur_price=None):
    """The monitoring decision of one period (predictions, and prices per predicted class when given)."""
    return decide_alert(run_tests(_period(ref_idx, ref_price), _period(cur_idx, cur_price)))


# ---------------------------------------------------------------- prices
def _priced(ref: np.ndarray, cur: np.ndarray):
    """The stability verdict and the monitoring decision on the same prices, rows predicted a, b, c in turn."""
    idx = [np.arange(x.size) % 3 for x in (ref, cur)]
    prices = pl.DataFrame({"period": [0] * ref.size + [1] * cur.size, "class": LABELS[np.concatenate(idx)],
                           "price": np.concatenate([ref, cur])})
    stability = price_stability(prices).table.filter(pl.col("class") == "a").row(0, named=True)
    monitored = _monitored(idx[0], idx[1], ref, cur).table.filter(pl.col("name") == "price:a").row(0, named=True)
    return stability, monitored


def _packs(n: int, small: float) -> np.ndarray:
    """n prices from two pack sizes, 1.0 (the first ``small`` share of the rows) and 2.0, each +- 1 %."""
    noise = np.random.default_rng(n).uniform(-0.01, 0.01, n)
    return np.where(np.arange(n) < small * n, 1.0, 2.0) * (1 + noise)


def test_a_median_that_jumps_between_pack_sizes_is_no_price_change():
    """Two pack sizes, the small one 51 % of the items in the reference and 49 % in the period: the median jumps
    from the small to the large pack (+100 %), the KS test rejects at 20,000 items a class, yet the prices moved
    little (relative shift 1.4 %). Monitoring does not alert; stability, by the same rule, is stable."""
    n = 60_000
    ref, cur = _packs(n, 0.51), _packs(n, 0.49)
    row, monitored = _priced(ref, cur)
    assert row["median_change"] > 0.9 and row["ks_p_adjusted"] < 1e-3  # the old rule (KS and median) flagged it
    assert row["price_shift"] == pytest.approx(2 ** 0.02 - 1, abs=0.002)
    assert row["flagged"] is False and monitored["drift"] is False
    assert monitored["effect_size"] == pytest.approx(row["price_shift"], abs=0.003)


@pytest.mark.parametrize("factor", [1.15, 1 / 1.15, 1.05])
def test_price_shift_agrees_with_monitoring(factor):
    """A uniform change of the prices: the same relative shift (monitoring bins log prices at 0.2 %), the same
    threshold (the policy's price_change) and the same verdict."""
    rng = np.random.default_rng(8)
    n = 9_000
    row, monitored = _priced(rng.lognormal(1.0, 0.3, n), rng.lognormal(1.0, 0.3, n) * factor)
    assert row["price_shift"] == pytest.approx(monitored["effect_size"], abs=0.005)
    assert row["price_shift"] == pytest.approx(factor - 1, abs=0.02)
    assert monitored["threshold"] == POLICY.price_change
    assert row["flagged"] is monitored["drift"] is (abs(factor - 1) >= POLICY.price_change)


def test_price_tests_are_corrected_per_period():
    """Each period's price tests are corrected together (as a monitored period's), not the whole history's."""
    rng = np.random.default_rng(2)
    parts = [pl.DataFrame({"period": t, "class": c, "price": rng.lognormal(1.0 + 0.05 * t * (c == "b"), 0.3, 200)})
             for t in range(3) for c in "ab"]
    r = price_stability(pl.concat(parts), correction="holm")
    for t in (1, 2):
        sub = r.table.filter(pl.col("period") == t)
        np.testing.assert_allclose(sub["ks_p_adjusted"].to_numpy(),
                                   multipletests(sub["ks_p_value"].to_numpy(), method="holm")[1], rtol=1e-12)


def test_price_shift_test_signs_a_fall():
    t = price_shift_test(np.array([2.0, 4.0, 8.0]), np.array([1.7, 3.4, 6.8]))
    assert t.effect_size == pytest.approx(-0.15) and t.effect_name == "relative price shift"


@pytest.mark.parametrize("prices, match", [
    (pl.DataFrame({"period": [1, 2], "class": ["a", "a"], "price": [1.0, 0.0]}),
     r"prices column 'price': non-positive price in 1 row\(s\), e\.g\. row 1 = 0\.0\. Prices must be > 0"),
    (pl.DataFrame({"period": [1, 2], "class": ["a", "a"], "price": [-2.0, 1.0]}),
     r"prices column 'price': non-positive price in 1 row\(s\), e\.g\. row 0 = -2\.0"),
])
def test_a_price_must_be_positive(prices, match):
    """Its relative shift is a difference of log prices; monitoring's input contract also asks prices > 0."""
    with pytest.raises(InputError, match=match):
        price_stability(prices)


def test_prevalence_correction_is_a_choice():
    """Each period's tests (three z-tests and the class mix) are corrected together with the method asked."""
    counts = pl.DataFrame({"period": [0] * 3 + [1] * 3 + [2] * 3, "class": ["a", "b", "c"] * 3,
                           "count": [500, 300, 200, 480, 310, 210, 450, 330, 220]})
    r = prevalence_stability(counts, correction="holm")
    for t in (1, 2):
        sub = r.table.filter(pl.col("period") == t)
        p = [*sub["z_p_value"], sub["chi2_p_value"][0]]
        adjusted = multipletests(p, method="holm")[1]
        np.testing.assert_allclose([*sub["z_p_adjusted"], sub["chi2_p_adjusted"][0]], adjusted, rtol=1e-12)


# ---------------------------------------------------------------- prevalence
def _rows(rng, n: int, labels: np.ndarray, label_shares, pred_shares) -> tuple[np.ndarray, np.ndarray]:
    """Label and prediction indices of n rows drawn with the given class shares."""
    return rng.choice(labels.size, n, p=label_shares), rng.choice(labels.size, n, p=pred_shares)


@pytest.mark.parametrize("task, labels, reference, current", [
    ("multiclass", LABELS, ((0.5, 0.3, 0.2), (0.5, 0.3, 0.2)), ((0.49, 0.31, 0.2), (0.44, 0.33, 0.23))),
    ("multiclass", LABELS, ((0.5, 0.3, 0.2), (0.5, 0.3, 0.2)), ((0.5, 0.29, 0.21), (0.5, 0.31, 0.19))),
    ("binary", np.array([0, 1]), ((0.8, 0.2), (0.8, 0.2)), ((0.79, 0.21), (0.74, 0.26))),
    ("binary", np.array([0, 1]), ((0.8, 0.2), (0.8, 0.2)), ((0.8, 0.2), (0.79, 0.21))),
], ids=["multiclass-shift", "multiclass-stable", "binary-shift", "binary-stable"])
def test_prevalence_stability_agrees_with_monitoring(task, labels, reference, current):
    """The same two periods of labels and predictions give the same p-values, corrected p-values, effects,
    thresholds and verdicts through prevalence_stability and through the monitoring alert."""
    rng = np.random.default_rng(4)
    n = 5_000
    (ref_y, ref_p), (cur_y, cur_p) = _rows(rng, n, labels, *reference), _rows(rng, n, labels, *current)
    alert = decide_alert(run_tests(update(task, labels, Bins(score_bins=10), ref_p, label_idx=ref_y),
                                 update(task, labels, Bins(score_bins=10), cur_p, label_idx=cur_y)))
    monitored = {r["name"]: r for r in alert.table.iter_rows(named=True)}
    rows = pl.DataFrame({"period": [0] * n + [1] * n, "label": labels[np.concatenate([ref_y, cur_y])],
                         "prediction": labels[np.concatenate([ref_p, cur_p])]})
    r = prevalence_stability(class_counts(rows))
    judged = 0
    for row in r.table.iter_rows(named=True):
        source = "label" if row["source"] == "label" else "pred"
        z = monitored.get(f"prevalence_{source}:{row['class']}")
        if z is not None:  # binary: monitoring tests the positive class only, stability shows its mirror too
            judged += 1
            assert (row["z_statistic"], row["z_p_value"], row["z_p_adjusted"], row["abs_change"]) == pytest.approx(
                (z["statistic"], z["p_value"], z["p_adjusted"], z["effect_size"]), rel=1e-12, abs=1e-15)
            assert row["class_flagged"] is z["drift"] and z["threshold"] == POLICY.prevalence_change
        mix = monitored.get(f"class_mix_{source}")
        if mix is not None:
            assert (row["chi2_statistic"], row["chi2_p_value"], row["chi2_p_adjusted"], row["psi"]) == pytest.approx(
                (mix["statistic"], mix["p_value"], mix["p_adjusted"], mix["effect_size"]), rel=1e-12)
            assert row["class_mix_flagged"] is mix["drift"] and mix["threshold"] == POLICY.psi
        else:
            assert np.isnan(row["chi2_p_adjusted"]) and row["class_mix_flagged"] is False
    assert judged == len(monitored) - sum(name.startswith("class_mix") for name in monitored)
    assert (r.status == "warn") is alert.alert
    assert r.table["period_unstable"].any() is alert.alert
