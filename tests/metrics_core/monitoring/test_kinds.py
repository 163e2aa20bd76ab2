"""metrics_core.monitoring.kinds: run_tests' prevalence, score and price tests against scipy, over seeds and threads."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from monitoring_data import K, LABELS, PRICE_MEDIAN, period_arrays, period_stats
from polars.testing import assert_frame_equal
from scipy import stats

from metrics_core import drift, monitoring as mon
from metrics_core.threads import one_kernel_thread


def test_binned_tests_agree_with_scipy_on_rows():
    y, pred, s, price = period_arrays(20_000, 5)
    y2, pred2, s2, price2 = period_arrays(20_000, 6, score_shift=(1, 0.01))
    a = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    b = mon.update("multiclass", LABELS, mon.Bins(), pred2, label_idx=y2, scores=s2, price=price2)
    t = mon.run_tests(a, b)[mon.TestKey("score", "c1")]
    exact_w1 = stats.wasserstein_distance(s[:, 1], s2[:, 1])
    assert t.effect_size == pytest.approx(exact_w1, abs=1e-3)  # bin width 0.001
    assert t.details["ks_d"] == pytest.approx(stats.ks_2samp(s[:, 1], s2[:, 1]).statistic, abs=0.01)
    z = mon.run_tests(a, b)[mon.TestKey("prevalence_label", "c3")]
    ref = drift.two_proportion_z(int((y == 3).sum()), y.size, int((y2 == 3).sum()), y2.size)
    assert z.p_value == pytest.approx(ref.p_value, rel=1e-6, abs=0) and z.effect_size == pytest.approx(ref.effect_size)


@pytest.mark.slow
def test_long_stable_histories_of_large_periods_rarely_alarm(reference):
    """Twelve stable periods of 200,000 rows, three independent histories: at most one alarm in twelve."""
    for history in range(3):
        alarms = [mon.decide_alert(mon.run_tests(reference, period_stats(200_000, 1000 * history + t))).alert
                  for t in range(12)]
        assert sum(alarms) <= 1, (history, alarms)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shift, kind", [
    ({"prevalence": (3, 0.05)}, "prevalence_label:c3"),
    ({"score_shift": (5, 0.05)}, "score:c5"),
    ({"price_rise": (2, 0.15)}, "price:c2"),
])
def test_constructed_shifts_alert(reference, seed, shift, kind):
    decision = mon.decide_alert(mon.run_tests(reference, period_stats(200_000, 50 + seed, **shift)))
    assert decision.alert
    flagged = decision.table.filter(pl.col("drift").fill_null(False))["name"].to_list()
    assert kind in flagged


@pytest.mark.parametrize("seed", range(3))
def test_small_wobble_does_not_alert(reference, seed):
    current = period_stats(200_000, 70 + seed, prevalence=(0, 0.003))
    decision = mon.decide_alert(mon.run_tests(reference, current))
    assert not decision.alert, decision.reasons


def test_price_impact_binned_groups():
    y, pred, s, price = period_arrays(50_000, 11)
    st = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    table = mon.price_impact_binned(st)
    row = table.filter((pl.col("class") == "c0") & (pl.col("group") == "false_positive")).row(0, named=True)
    assert row["n"] == int(((pred == 0) & (y != 0)).sum())
    assert row["labelled_median"] == pytest.approx(np.median(price[y == 0]), rel=0.01)
    assert row["ks_statistic"] == pytest.approx(stats.ks_2samp(price[y == 0], price[(pred == 0) & (y != 0)]).statistic,
                                                abs=0.01)


@pytest.mark.parametrize("threads", [2, 3])
def test_tests_on_threads_equal_the_tests_on_one(reference, monkeypatch, threads):
    """run_tests and the Annex E table run their distribution tests side by side: the same results, in the same order."""
    cur = period_stats(30_000, 12, prevalence=(3, 0.05))  # classes of 1,000-10,000 rows: the exact KS p-values
    with one_kernel_thread():
        alone, table_alone = mon.run_tests(reference, cur), mon.price_impact_binned(cur)
    monkeypatch.setenv("CLASSWATCH_SCAN_THREADS", str(threads))
    side_by_side, table = mon.run_tests(reference, cur), mon.price_impact_binned(cur)
    assert list(side_by_side) == list(alone)
    for key, result in alone.items():
        got = side_by_side[key]
        assert np.array_equal([got.statistic, got.p_value, got.effect_size],
                              [result.statistic, result.p_value, result.effect_size], equal_nan=True), key
    assert_frame_equal(table, table_alone, check_exact=True)


# ---------------------------------------------------------------- prices per labelled class and Annex E cell (§3)
def rare_class_period(n, seed, *, rise=0.0, j=7, share=0.02, signal_j=2.1):
    """Class j has a 2 % share and a weak signal, so the model predicts it for few rows; ``rise``
    multiplies the prices of the rows LABELLED j (the class as the price collector sees it)."""
    rng = np.random.default_rng(seed)
    prior = np.full(K, (1 - share) / (K - 1))
    prior[j] = share
    y = rng.choice(K, size=n, p=prior)
    logits = rng.standard_normal((n, K)) + np.log(prior)
    signal = np.full(K, 2.4)
    signal[j] = signal_j
    logits[np.arange(n), y] += signal[y]
    s = np.exp(logits - logits.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    pred = s.argmax(axis=1)
    price = PRICE_MEDIAN[y] * np.exp(0.3 * rng.standard_normal(n)) * np.where(y == j, 1 + rise, 1.0)
    return y, pred, s, price


@pytest.mark.parametrize("seed", range(3))
def test_price_rise_in_a_rarely_predicted_class_is_seen_on_labels(seed):
    """+17.7 % in a 2 %-prevalence class, 20,000 rows: missed per predicted class,
    seen per labelled class."""
    y0, pred0, _, price0 = rare_class_period(20_000, 100 + seed)
    ref = mon.update("multiclass", LABELS, mon.Bins(), pred0, label_idx=y0, price=price0)
    y, pred, s, price = rare_class_period(20_000, 200 + seed, rise=0.177)
    cur = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, price=price)
    assert 300 < (y == 7).sum() < 500 and (pred == 7).sum() < 120  # the class is rarely predicted
    decision = mon.decide_alert(mon.run_tests(ref, cur))
    flagged = {r.key.name for r in decision.reasons}
    assert decision.alert and "price_label:c7" in flagged and "price:c7" not in flagged
    row = decision.table.filter(pl.col("name") == "price_label:c7").row(0, named=True)
    # oracle: KS on the labelled rows' log prices (binned at 0.46 % width) and the effect's definition
    ks = stats.ks_2samp(np.log10(price0[y0 == 7]), np.log10(price[y == 7]))
    assert row["statistic"] == pytest.approx(ks.statistic, abs=0.01)
    w1 = stats.wasserstein_distance(np.log10(price0[y0 == 7]), np.log10(price[y == 7]))
    assert row["effect_size"] == pytest.approx(10 ** w1 - 1, abs=0.005)
    reason = next(r for r in decision.reasons if r.key.name == "price_label:c7")
    assert reason.text.startswith("prices of 'c7' (labelled rows) rose")


@pytest.mark.parametrize("factor", [0.85, 0.905, 1.095, 1.15])
def test_a_uniform_price_change_reads_as_itself_up_or_down(factor):
    """Every price of the same rows times ``factor``: the relative price shift is factor - 1 (a fall
    by 15 % reads -15 %, not -17.6 %), so a 9.5 % fall alerts no more than a 9.5 % rise (threshold 10 %)."""
    y, pred, _, price = rare_class_period(20_000, 11)
    ref = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, price=price)
    cur = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, price=price * factor)
    decision = mon.decide_alert(mon.run_tests(ref, cur))
    effect = mon.run_tests(ref, cur)[mon.TestKey("price", "c0")].effect_size
    assert effect == pytest.approx(factor - 1, abs=0.002)  # log-price bins of 0.46 % width
    assert ("price:c0" in {r.key.name for r in decision.reasons}) == (abs(factor - 1) >= 0.10)


def test_price_cells_are_the_annex_e_groups_and_corrected_with_the_rest():
    y, pred, s, price = rare_class_period(20_000, 7)
    y2, pred2, s2, price2 = rare_class_period(20_000, 8)
    a = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, price=price)
    b = mon.update("multiclass", LABELS, mon.Bins(), pred2, label_idx=y2, price=price2)
    tests = mon.run_tests(a, b)
    fp = tests[mon.TestKey("price_false_positive", "c0")]
    mask, mask2 = (pred == 0) & (y != 0), (pred2 == 0) & (y2 != 0)
    assert fp.details["ks_d"] == pytest.approx(stats.ks_2samp(np.log10(price[mask]), np.log10(price2[mask2])).statistic,
                                               abs=0.01)
    sign = np.sign(np.log10(price2[mask2]).mean() - np.log10(price[mask]).mean())
    w1 = stats.wasserstein_distance(np.log10(price[mask]), np.log10(price2[mask2]))
    assert fp.effect_size == pytest.approx(10 ** (sign * w1) - 1, abs=0.005)
    small = [k for k in (mon.TestKey("price_false_negative", c) for c in LABELS) if k not in tests]
    for k in small:  # groups under MIN_PRICE_ROWS rows are left out
        j = int(k.cls[1:])
        assert min(((y == j) & (pred != j)).sum(), ((y2 == j) & (pred2 != j)).sum()) < mon.MIN_PRICE_ROWS
    table = mon.decide_alert(tests, {"correction": "bonferroni"}).table
    assert not mon.decide_alert(tests).alert  # a stable period
    p, p_adj = table["p_value"].to_numpy(), table["p_adjusted"].to_numpy()
    np.testing.assert_allclose(p_adj, np.minimum(p * np.isfinite(p).sum(), 1.0))


def test_batched_tests_equal_each_jobs_own_test():
    """run_jobs runs the small score and price tests that have a batch form together (a period's
    segments): each result is bit for bit the job's own test's, in order."""
    from metrics_core.monitoring.kinds import KINDS, Job, run_jobs

    ref, cur = period_stats(1_500, 14), period_stats(2_000, 13, price_rise=(2, 0.15))
    jobs = [t for kind in KINDS.values() if kind.tests for _, t in kind.tests(ref, cur) if isinstance(t, Job)]
    assert len({job.batch for job in jobs if job.batch}) == 2 and sum(job.batch is not None for job in jobs) >= 20
    assert run_jobs(jobs) == [job.test(job.reference, job.current) for job in jobs]


@pytest.mark.parametrize("heavy_cells", [0, None])
def test_run_jobs_calls_meanwhile_once_on_the_calling_thread(monkeypatch, heavy_cells):
    """The caller's other work runs once, on its own thread, while the heavy tests (here every test,
    with HEAVY_CELLS 0) are on threads; the results are the jobs' own."""
    import threading

    from metrics_core.monitoring.kinds import KINDS, Job, base, run_jobs

    if heavy_cells is not None:
        monkeypatch.setattr(base, "HEAVY_CELLS", heavy_cells)
    ref, cur = period_stats(1_500, 14), period_stats(2_000, 13, price_rise=(2, 0.15))
    jobs = [t for kind in KINDS.values() if kind.tests for _, t in kind.tests(ref, cur) if isinstance(t, Job)]
    assert all(base._heavy(job) for job in jobs) == (heavy_cells == 0)
    calls = []
    found = run_jobs(jobs, meanwhile=lambda: calls.append(threading.current_thread()))
    assert calls == [threading.current_thread()]
    assert found == [job.test(job.reference, job.current) for job in jobs]


def test_price_cell_margins_are_the_sums_of_the_cells():
    stats = period_stats(3_000, 15)
    by_label, by_pred, both = stats.price_cell_margins
    cells = stats.price_cells
    assert np.array_equal(by_label, cells.sum(axis=1)) and np.array_equal(by_pred, cells.sum(axis=0))
    assert np.array_equal(both, cells[np.arange(K), np.arange(K)]) and by_label.dtype == np.int64
