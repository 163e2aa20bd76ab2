"""metrics_core.monitoring: one-pass mergeable period statistics and the pure alert decision, over many seeds."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from metrics_core import drift, monitoring as mon
from metrics_core.errors import InputError

K = 8
LABELS = np.array([f"c{j}" for j in range(K)])
PRIOR = (1 / np.arange(1, K + 1)) / (1 / np.arange(1, K + 1)).sum()
PRICE_MEDIAN = np.linspace(1.0, 6.0, K)


def period_arrays(n: int, seed: int, *, prevalence=None, score_shift=None, price_rise=None):
    """A period of a K-class classifier: labels, softmax scores, argmax prediction, lognormal prices.

    ``prevalence=(j, d)`` adds d to class j's share (others scaled down); ``score_shift=(j, d)``
    adds d to every row's class-j score (clipped to [0, 1]); ``price_rise=(j, r)`` multiplies the
    prices of rows PREDICTED as class j by 1 + r (the class as the index sees it).
    """
    rng = np.random.default_rng(seed)
    prior = PRIOR.copy()
    if prevalence:
        j, d = prevalence
        prior = prior * (1 - prior[j] - d) / (1 - prior[j])
        prior[j] = PRIOR[j] + d
    y = rng.choice(K, size=n, p=prior / prior.sum())
    logits = rng.standard_normal((n, K)) + np.log(PRIOR)
    logits[np.arange(n), y] += 2.4
    s = np.exp(logits - logits.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    if score_shift:
        j, d = score_shift
        s[:, j] = np.clip(s[:, j] + d, 0, 1)
    pred = s.argmax(axis=1)
    price = PRICE_MEDIAN[y] * np.exp(0.3 * rng.standard_normal(n))
    if price_rise:
        j, r = price_rise
        price = np.where(pred == j, price * (1 + r), price)
    return y, pred, s, price


def period_stats(n, seed, **shift) -> mon.PeriodStats:
    y, pred, s, price = period_arrays(n, seed, **shift)
    return mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)


@pytest.fixture(scope="module")
def reference():
    return period_stats(200_000, 0)


def test_merge_of_batches_equals_one_pass():
    y, pred, s, price = period_arrays(30_000, 3)
    whole = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    cuts = [0, 7_000, 7_001, 19_000, 30_000]
    parts = [mon.update("multiclass", LABELS, mon.Bins(), pred[a:b], label_idx=y[a:b], scores=s[a:b],
                        price=price[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    assert merged.n_rows == whole.n_rows == 30_000
    for name in ("pred_counts", "label_counts", "score_counts", "price_counts", "price_cells"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name))
    np.testing.assert_array_equal(merged.performance.confusion.matrix, whole.performance.confusion.matrix)


def test_counts_match_numpy():
    y, pred, s, price = period_arrays(5_000, 4)
    st = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    np.testing.assert_array_equal(st.label_counts, np.bincount(y, minlength=K))
    np.testing.assert_array_equal(st.pred_counts, np.bincount(pred, minlength=K))
    hist, _ = np.histogram(s[:, 2], bins=1000, range=(0.0, 1.0))
    np.testing.assert_array_equal(st.score_counts[2, 1:-1], hist)
    assert st.score_counts[:, [0, -1]].sum() == 0


def test_binned_tests_agree_with_scipy_on_rows():
    y, pred, s, price = period_arrays(20_000, 5)
    y2, pred2, s2, price2 = period_arrays(20_000, 6, score_shift=(1, 0.01))
    a = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    b = mon.update("multiclass", LABELS, mon.Bins(), pred2, label_idx=y2, scores=s2, price=price2)
    t = mon.compare(a, b)[mon.TestKey("score", "c1")]
    exact_w1 = stats.wasserstein_distance(s[:, 1], s2[:, 1])
    assert t.effect_size == pytest.approx(exact_w1, abs=1e-3)  # bin width 0.001
    assert t.details["ks_d"] == pytest.approx(stats.ks_2samp(s[:, 1], s2[:, 1]).statistic, abs=0.01)
    z = mon.compare(a, b)[mon.TestKey("prevalence_label", "c3")]
    ref = drift.two_proportion_z(int((y == 3).sum()), y.size, int((y2 == 3).sum()), y2.size)
    assert z.p_value == pytest.approx(ref.p_value) and z.effect_size == pytest.approx(ref.effect_size)


@pytest.mark.slow
def test_long_stable_histories_of_large_periods_rarely_alarm(reference):
    """Twelve stable periods of 200,000 rows, three independent histories: at most one alarm in twelve."""
    for history in range(3):
        alarms = [mon.decide_alert(mon.compare(reference, period_stats(200_000, 1000 * history + t))).alert
                  for t in range(12)]
        assert sum(alarms) <= 1, (history, alarms)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shift, kind", [
    ({"prevalence": (3, 0.05)}, "prevalence_label:c3"),
    ({"score_shift": (5, 0.05)}, "score:c5"),
    ({"price_rise": (2, 0.15)}, "price:c2"),
])
def test_constructed_shifts_alert(reference, seed, shift, kind):
    decision = mon.decide_alert(mon.compare(reference, period_stats(200_000, 50 + seed, **shift)))
    assert decision.alert
    flagged = decision.table.filter(pl.col("drift").fill_null(False))["name"].to_list()
    assert kind in flagged


@pytest.mark.parametrize("seed", range(3))
def test_small_wobble_does_not_alert(reference, seed):
    current = period_stats(200_000, 70 + seed, prevalence=(0, 0.003))
    decision = mon.decide_alert(mon.compare(reference, current))
    assert not decision.alert, decision.reasons


def test_significant_but_small_wobble_does_not_alert():
    """A year of 200,000-row periods as reference, one period with class 0 at +0.3 points: the test
    rejects (p < 0.05) and still no alert, because 0.3 points is under the practical threshold."""
    n_ref, n_cur = 12 * 200_000, 200_000
    ref = np.round(PRIOR * n_ref).astype(int)
    share = PRIOR.copy()
    share[0] += 0.003
    share[1:] *= (1 - share[0]) / share[1:].sum()
    cur = np.round(share * n_cur).astype(int)
    key = mon.TestKey("prevalence_label", "c0")
    tests = {key: drift.two_proportion_z(ref[0], ref.sum(), cur[0], cur.sum())}
    assert tests[key].p_value < 0.05
    decision = mon.decide_alert(tests)
    assert decision.table["p_adjusted"][0] < 0.05 and not decision.table["drift"][0]
    assert not decision.alert


def test_effect_without_rejection_does_not_alert():
    """Small periods: a 3-point change of a small class passes the threshold but the test cannot reject."""
    ref = period_stats(300, 1)
    cur = period_stats(300, 2, prevalence=(6, 0.03))
    decision = mon.decide_alert(mon.compare(ref, cur))
    row = decision.table.filter(pl.col("name") == "prevalence_label:c6").row(0, named=True)
    assert abs(row["effect_size"]) >= 0.02 or row["p_adjusted"] > 0.05
    assert not row["drift"]


def test_policy_thresholds_and_correction_are_used(reference):
    current = period_stats(200_000, 9, prevalence=(3, 0.05))
    strict = mon.decide_alert(mon.compare(reference, current), {"prevalence_change": 0.2, "psi": 5.0,
                                                                 "score_shift": 0.5})
    assert not strict.alert
    table = mon.decide_alert(mon.compare(reference, current), {"correction": "bonferroni"}).table
    p, p_adj = table["p_value"].to_numpy(), table["p_adjusted"].to_numpy()
    np.testing.assert_allclose(p_adj, np.minimum(p * len(p), 1.0))


@pytest.mark.parametrize("low, floor, fails", [(0.78, 0.80, True), (0.81, 0.80, False), (float("nan"), 0.9, True)])
def test_headline_floor(low, floor, fails):
    h = mon.headline_check("balanced_accuracy", 0.85, (low, 0.9), floor)
    assert h.fails is fails
    decision = mon.decide_alert({}, {"metric_floor": floor}, mon.Headline("balanced_accuracy", 0.85, (low, 0.9)))
    assert decision.alert is fails and decision.headline == h
    if fails:
        assert "balanced_accuracy" in decision.reasons[0].text and "floor" in decision.reasons[0].text


def test_no_floor_no_check():
    assert mon.headline_check("accuracy", 0.9, (0.8, 0.95), None) is None


def test_decide_alert_owns_the_floor():
    """The floor is the reference value minus metric_drop unless metric_floor is set; no reference, no floor."""
    headline = mon.Headline("balanced_accuracy", 0.80, (0.77, 0.83), reference=0.85)
    assert mon.decide_alert({}, None, headline).headline.floor == pytest.approx(0.80)
    assert mon.decide_alert({}, None, headline).alert  # 0.77 < 0.85 - 0.05
    assert not mon.decide_alert({}, {"metric_drop": 0.1}, headline).alert
    assert mon.decide_alert({}, {"metric_floor": 0.5}, headline).headline.floor == 0.5
    no_ref = mon.Headline("balanced_accuracy", 0.80, (0.77, 0.83))
    assert mon.decide_alert({}, None, no_ref).headline is None


def test_reasons_are_typed_and_round_trip(reference):
    decision = mon.decide_alert(mon.compare(reference, period_stats(200_000, 51, prevalence=(3, 0.05))))
    first = decision.reasons[0]
    assert first.key == mon.TestKey("prevalence_label", "c3") and first.threshold == 0.02
    assert first.current - first.reference == pytest.approx(first.effect)
    assert decision.figures[first.key.name] == first.effect
    assert first.text.startswith(first.summary) and "p_adj=" in first.text and "p_adj" not in first.summary
    assert [mon.Reason.from_dict(r.to_dict()) for r in decision.reasons] == list(decision.reasons)
    with pytest.raises(InputError, match="unknown test kind"):
        mon.TestKey("prevalence")


def test_one_policy_with_the_documented_defaults():
    p = mon.AlertPolicy.of(None)
    assert (p.alpha, p.correction, p.prevalence_change, p.psi, p.score_shift, p.price_change, p.metric_drop,
            p.metric_floor, p.level) == (0.05, "bh", 0.02, 0.1, 0.02, 0.10, 0.05, None, 0.95)
    assert mon.AlertPolicy.of({"psi": 0.3, "alpha": None}) == mon.AlertPolicy(psi=0.3)
    assert mon.DEFAULT_HEADLINE == "balanced_accuracy"


def test_price_impact_binned_groups():
    y, pred, s, price = period_arrays(50_000, 11)
    st = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    table = mon.price_impact_binned(st)
    row = table.filter((pl.col("class") == "c0") & (pl.col("group") == "false_positive")).row(0, named=True)
    assert row["n"] == int(((pred == 0) & (y != 0)).sum())
    assert row["labelled_median"] == pytest.approx(np.median(price[y == 0]), rel=0.01)
    assert row["ks_statistic"] == pytest.approx(stats.ks_2samp(price[y == 0], price[(pred == 0) & (y != 0)]).statistic,
                                                abs=0.01)


# ---------------------------------------------------------------- scan_period on files
def _write(tmp_path, n=2_000, seed=0, **columns_override):
    y, pred, s, price = period_arrays(n, seed)
    frame = pl.DataFrame({"label": LABELS[y], "prediction": LABELS[pred], "price": price,
                          **{f"score_{c}": s[:, j] for j, c in enumerate(LABELS)}})
    frame = frame.with_columns(**columns_override) if columns_override else frame
    path = tmp_path / f"p{seed}.parquet"
    frame.write_parquet(path)
    return path, (y, pred, s, price)


def _scan(path, **kw):
    args = dict(label="label", prediction="prediction", scores=[f"score_{c}" for c in LABELS], price="price")
    args.update(kw)
    return mon.scan_period(path, "multiclass", LABELS, mon.Bins(), batch_rows=700, **args)


def test_scan_period_equals_update(tmp_path):
    path, (y, pred, s, price) = _write(tmp_path)
    st = _scan(path)
    direct = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    np.testing.assert_array_equal(st.score_counts, direct.score_counts)
    np.testing.assert_array_equal(st.price_cells, direct.price_cells)
    assert st.n_rows == 2_000


def test_scan_period_errors_name_column_count_and_example(tmp_path):
    path, _ = _write(tmp_path, seed=1, score_c2=pl.when(pl.int_range(pl.len()) % 500 == 7).then(float("nan"))
                     .otherwise(pl.col("score_c2")))
    # rows 7, 507, 1007 and 1507 of 2,000, read in batches of 700: the count covers the whole file
    with pytest.raises(InputError, match=r"'score_c2'.*NaN score.*in 4 row\(s\) of the file.*e\.g\. row 7"):
        _scan(path)
    path, _ = _write(tmp_path, seed=2, price=pl.when(pl.int_range(pl.len()) == 3).then(-1.0)
                     .otherwise(pl.col("price")))
    with pytest.raises(InputError, match=r"'price'.*in 1 row\(s\), e\.g\. row 3 = -1\.0"):
        _scan(path)
    with pytest.raises(InputError, match=r"missing column.*'weight'"):
        _scan(path, weight="weight")
    path, _ = _write(tmp_path, seed=3, label=pl.when(pl.int_range(pl.len()).is_in([5, 1500])).then(pl.lit("zz"))
                     .otherwise(pl.col("label")))  # two batches of 700 apart
    with pytest.raises(InputError, match=r"'label'.*not in the class list.*2 row\(s\) of the file.*row 5.*zz"):
        _scan(path)


def test_scan_period_empty_selection(tmp_path):
    import pyarrow.dataset as pads

    path, _ = _write(tmp_path, seed=4)
    with pytest.raises(InputError, match="no rows.*empty period"):
        _scan(path, filter=pads.field("label") == "nope")
