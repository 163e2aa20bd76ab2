"""metrics_core.monitoring: one-pass mergeable period statistics and the pure alert decision, over many seeds."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal
from flow_data import three_class_period
from scipy import stats

import metrics_core as mc
from metrics_core import drift, monitoring as mon
from metrics_core.errors import InputError
from metrics_core.threads import one_kernel_thread

K = 8
LABELS = np.array([f"c{j}" for j in range(K)])
PRIOR = (1 / np.arange(1, K + 1)) / (1 / np.arange(1, K + 1)).sum()
PRICE_MEDIAN = np.linspace(1.0, 6.0, K)


def period_arrays(n: int, seed: int, *, prevalence=None, score_shift=None, price_rise=None, signal=2.4):
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
    logits[np.arange(n), y] += signal
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
    decision = mon.decide_alert(mon.run_tests(ref, cur))
    row = decision.table.filter(pl.col("name") == "prevalence_label:c6").row(0, named=True)
    assert abs(row["effect_size"]) >= 0.02 or row["p_adjusted"] > 0.05
    assert not row["drift"]


def test_policy_thresholds_and_correction_are_used(reference):
    current = period_stats(200_000, 9, prevalence=(3, 0.05))
    strict = mon.decide_alert(mon.run_tests(reference, current), {"prevalence_change": 0.2, "psi": 5.0,
                                                                 "score_shift": 0.5})
    assert not strict.alert
    table = mon.decide_alert(mon.run_tests(reference, current), {"correction": "bonferroni"}).table
    p, p_adj = table["p_value"].to_numpy(), table["p_adjusted"].to_numpy()
    np.testing.assert_allclose(p_adj, np.minimum(p * len(p), 1.0))


@pytest.mark.parametrize("low, floor, fails", [(0.78, 0.80, True), (0.81, 0.80, False), (float("nan"), 0.9, True)])
def test_headline_check_is_the_plain_bound(low, floor, fails):
    assert mon.headline_check("balanced_accuracy", 0.85, (low, 0.9), floor).fails is fails


def test_no_floor_no_check():
    assert mon.headline_check("accuracy", 0.9, (0.8, 0.95), None) is None
    no_ref = mon.Headline("balanced_accuracy", 0.80, (0.77, 0.83))
    assert mon.decide_alert({}, None, no_ref).headline is None


def _wald(p, n, z=stats.norm.isf(0.025)):
    half = z * np.sqrt(p * (1 - p) / n)
    return (p - half, p + half)


@pytest.mark.parametrize("value, n_cur, ref, n_ref", [(0.80, 1500, 0.85, 40_000), (0.84, 300, 0.85, 5_000),
                                                      (0.90, 2000, 0.85, 40_000)])
def test_headline_test_is_the_one_sided_z_test_of_the_drop(value, n_cur, ref, n_ref):
    """Oracle: scipy's normal distribution on the drop over the pooled standard error; power and n needed."""
    h = mon.Headline("accuracy", value, _wald(value, n_cur), ref, _wald(ref, n_ref), n_cur)
    test, threshold, floor = mon.headline_test(h)
    se = np.hypot(np.sqrt(value * (1 - value) / n_cur), np.sqrt(ref * (1 - ref) / n_ref))
    assert test.effect_size == pytest.approx(ref - value) and threshold == 0.05 and floor == pytest.approx(ref - 0.05)
    assert test.p_value == pytest.approx(stats.norm.sf((ref - value) / se), rel=1e-6, abs=0)
    power = stats.norm.cdf(0.05 / se - stats.norm.isf(0.05))
    assert test.details["power"] == pytest.approx(power)
    check = mon.decide_alert({}, None, h).headline
    assert check.p_adjusted == pytest.approx(test.p_value, rel=1e-6, abs=0)  # alone: nothing to correct
    assert check.fails is bool(test.p_value <= 0.05 and ref - value >= 0.05)
    if power >= mon.POWER:
        assert check.enough_labels and check.n_needed is None
        return
    # n needed: with that many rows the test has 80 % power, with 5 % fewer it has not
    need = check.n_needed
    bigger = mon.Headline("accuracy", value, _wald(value, need), ref, _wald(ref, n_ref), need)
    smaller = mon.Headline("accuracy", value, _wald(value, int(need * 0.95)), ref, _wald(ref, n_ref), int(need * 0.95))
    assert mon.headline_test(bigger)[0].details["power"] >= mon.POWER > mon.headline_test(smaller)[0].details["power"]


def test_labelled_rows_needed_is_the_ons_sample_size_for_a_proportion():
    """Against a fixed floor (no reference interval), accuracy with a normal interval: the rows needed
    are metrics_core.sampling.sample_size at margin z * se* (se* the standard error with 80 % power)."""
    from metrics_core.sampling import sample_size

    h = mon.Headline("accuracy", 0.9, _wald(0.9, 200), None, None, 200)
    check = mon.decide_alert({}, {"metric_floor": 0.88}, h).headline
    # no reference: the test is against the floor itself with threshold 0, so power is undefined
    assert check.threshold == 0 and np.isnan(check.power) and check.enough_labels
    h = mon.Headline("accuracy", 0.9, _wald(0.9, 200), 0.9, (0.9, 0.9), 200)  # a reference without uncertainty
    check = mon.decide_alert({}, {"metric_drop": 0.03}, h).headline
    se_star = 0.03 / (stats.norm.isf(0.05) + stats.norm.isf(0.2))
    assert check.n_needed == sample_size(stats.norm.isf(0.025) * se_star, 0.95, 0.9)[0]
    assert "not enough labels to judge accuracy" in mon.decide_alert({}, {"metric_drop": 0.03}, h).notes[0]


def test_decide_alert_owns_the_floor():
    """The threshold is metric_drop against the reference unless metric_floor is set; the test is
    one more row of the drift table, corrected with the rest."""
    headline = mon.Headline("balanced_accuracy", 0.78, (0.77, 0.79), 0.85, (0.845, 0.855), 20_000)
    a = mon.decide_alert({}, None, headline)
    assert a.alert and a.headline.floor == pytest.approx(0.80) and a.verdict == "retrain"
    assert a.reasons[0].key == mon.TestKey("headline", "balanced_accuracy")
    assert a.reasons[0].text.startswith("balanced_accuracy fell 0.070 below the reference 0.850 (now 0.780)")
    floor = mon.decide_alert({}, {"metric_floor": 0.8}, headline)
    assert floor.alert and floor.texts[0].startswith("balanced_accuracy 0.780 is under the floor 0.800 (p_adj=")
    assert not mon.decide_alert({}, {"metric_drop": 0.1}, headline).alert
    assert mon.decide_alert({}, {"metric_floor": 0.5}, headline).headline.floor == 0.5
    better = mon.Headline("balanced_accuracy", 0.95, None, 0.85, None, 20_000)  # no intervals: the values decide
    assert not mon.decide_alert({}, None, better).alert
    worse = mon.Headline("balanced_accuracy", 0.75, None, 0.85, None, 20_000)
    assert mon.decide_alert({}, None, worse).alert
    tests = {mon.TestKey("prevalence_pred", "a"): drift.two_proportion_z(1000, 10000, 1030, 10000)}
    table = mon.decide_alert(tests, {"correction": "bonferroni"}, headline).table
    assert table.height == 2 and table["p_adjusted"].to_list() == pytest.approx(
        np.minimum(2 * table["p_value"].to_numpy(), 1.0))


def _small_sample_verdict(reference, n, seed, **shift):
    cur = period_stats(n, seed, **shift)
    return mon.assess_stats(reference, cur, None, report_options={"n_boot": 200, "seed": seed})


@pytest.mark.parametrize("seed", range(5))
def test_a_stable_month_with_few_labels_is_not_an_alert(reference, seed):
    """216 labelled rows (issue 14 §4): no alert; the verdict says how many labelled rows are needed."""
    out = _small_sample_verdict(reference, 216, 300 + seed)
    assert not out.alert, out.decision.texts
    assert out.decision.verdict == "not enough labels to judge"
    h = out.decision.headline
    assert h.n_labelled == 216 and h.n_needed > 216 and h.power < mon.POWER
    assert f"about {h.n_needed:,} labelled rows are needed" in out.decision.notes[0]
    assert out.metrics["balanced_accuracy_n_labelled_needed"] == h.n_needed


@pytest.mark.parametrize("metric", ["balanced_accuracy", "accuracy"])
@pytest.mark.parametrize("labels, predictions", [(["a"], ["b"]), (["a"], ["a"]), (["a", "b", "c"], ["b", "c", "a"]),
                                                 (["a", "b"], ["a", "c"])])
def test_a_handful_of_labelled_rows_is_not_enough_to_judge(labels, predictions, metric):
    """One wrong row against a reference accuracy of 0.885 is no alert (an exact binomial test gives
    p = 0.115; the z-test on the collapsed interval (0, 0) gave p = 0 and "retrain"), and rows that
    are all right are not "no alert" with power 1: under MIN_EXPECTED expected errors at the
    reference the test is undefined and the verdict says how many labelled rows it needs."""
    ref = three_class_period()
    out = mon.assess_period(ref, pl.DataFrame({"label": labels, "prediction": predictions}),
                            headline_metric=metric)
    h = out.decision.headline
    reference = out.metrics[f"{metric}_reference"]
    n_min = int(np.ceil(mon.MIN_EXPECTED / (1 - reference)))  # the reference is above 0.5
    assert stats.binomtest(0, 1, 0.885).pvalue == pytest.approx(0.115)  # (the oracle of the first case)
    assert out.decision.verdict == "not enough labels to judge" and not out.alert, out.decision.texts
    assert h.n_min == n_min and h.n_labelled == len(labels) and np.isnan(h.p_value) and h.n_needed >= n_min
    assert f"{len(labels)} labelled row(s) are too few for its test, which needs at least {n_min}" in \
        out.decision.notes[0]
    assert h.drop == pytest.approx(reference - out.metrics[metric])  # the drop is still reported


def test_a_collapsed_interval_takes_the_reference_spread_at_the_period_size():
    """100 labelled rows, all right: the bootstrap interval is (1, 1); power comes from the reference's
    standard error scaled to 100 rows, not from a standard error of 0 (power 1, "no alert")."""
    h = mon.Headline("balanced_accuracy", 1.0, (1.0, 1.0), 0.89, (0.88, 0.90), 100, 3000)
    test, _, _ = mon.headline_test(h)
    se_r = 0.02 / (2 * stats.norm.isf(0.025))
    se = np.hypot(se_r, se_r * np.sqrt(3000 / 100))
    assert test.details["power"] == pytest.approx(stats.norm.cdf(0.05 / se - stats.norm.isf(0.05)), rel=1e-12)
    assert test.p_value == pytest.approx(stats.norm.sf(-0.11 / se), rel=1e-12)
    wide = mon.Headline("balanced_accuracy", 0.9, (0.7, 1.0), 0.89, (0.88, 0.90), 100, 3000)  # wider: kept
    assert mon.headline_test(wide)[0].details["se_current"] == pytest.approx(0.3 / (2 * stats.norm.isf(0.025)))
    ref = three_class_period()
    cur = pl.DataFrame({"label": ["a"] * 50 + ["b"] * 30 + ["c"] * 20}).with_columns(prediction=pl.col("label"))
    out = mon.assess_period(ref, cur)
    assert (out.metrics["balanced_accuracy_ci_low"], out.metrics["balanced_accuracy_ci_high"]) == (1.0, 1.0)
    assert out.decision.verdict == "not enough labels to judge" and out.decision.headline.power < mon.POWER


@pytest.mark.parametrize("columns, message", [
    ({"price": "prise"}, r"reference: missing column 'prise' \(price\).* near miss of 'prise'"),
    ({"weight": "w"}, r"reference: missing column 'w' \(weight\)"),
    ({"label": "lable"}, r"reference: no label column 'lable', but column 'label' looks like a misspelling"),
    ({"label": "Label"}, r"reference: no label column 'Label', but column 'label' looks like a misspelling")])
def test_a_misspelt_column_role_is_an_error_not_a_period_without_it(columns, message):
    """Every price doubled: with the price column misspelt the period read "no alert" (no price test
    at all), and with the label misspelt an ordinary period without labels (no headline)."""
    ref = three_class_period().with_columns(price=pl.lit(1.0))
    cur = three_class_period(seed=2).with_columns(price=pl.lit(2.0))
    assert mon.assess_period(ref, cur, columns={"price": "price"}).alert  # the right name sees the rise
    with pytest.raises(InputError, match=message):
        mon.assess_period(ref, cur, columns=columns)
    if "label" not in columns:  # the same role in the current period only
        with pytest.raises(InputError, match=message.replace("reference", "current")):
            mon.assess_period(ref.rename({"price": next(iter(columns.values()))}), cur, columns=columns)


@pytest.mark.parametrize("labels, positive_class, positive", [([0, 1], {}, 1), (["0", "1"], {}, "1"),
                                                             ([False, True], {}, True),
                                                             (["ham", "spam"], {"positive_class": "spam"}, "spam")])
def test_a_binary_period_takes_the_positive_class_as_the_report_does(labels, positive_class, positive):
    """positive_class defaults to 1 (matched to the label type) as binary_report's pos_label does; it
    raised "pos_label=None is not one of the labels [0, 1]" although the docstring promised a default."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    s = np.clip(rng.normal(0.3 + 0.4 * y, 0.2), 0, 1)
    names = np.array(labels, dtype=object)
    ref = pl.DataFrame({"label": names[y].tolist(), "score": s})
    out = mon.assess_period(ref, ref, task="binary", **positive_class)
    plain = mon.assess_period(ref.with_columns(label=pl.Series(y)), ref.with_columns(label=pl.Series(y)),
                              task="binary")  # the same rows with 0/1 labels and the default
    assert out.reference.labels.tolist()[1] == positive and plain.reference.labels.tolist() == [0, 1]
    for key in ("perf/auroc", "perf/f1", "perf/recall", "n_rows"):
        assert out.metrics[key] == plain.metrics[key], key
    assert plain.metrics["perf/recall"] == pytest.approx(((s >= 0.5) & (y == 1)).sum() / (y == 1).sum())
    with pytest.raises(InputError, match="pos_label=.* is not one of the labels"):
        mon.assess_period(ref, ref, task="binary", positive_class="eggs")


def test_a_real_drop_with_enough_labels_alerts(reference):
    y, pred, s, price = period_arrays(20_000, 400, signal=1.6)
    cur = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    out = mon.assess_stats(reference, cur, None, report_options={"n_boot": 200})
    assert out.alert and out.decision.verdict == "retrain" and out.decision.headline.enough_labels
    from sklearn.metrics import balanced_accuracy_score

    drop = out.decision.headline.reference - balanced_accuracy_score(y, pred)
    assert drop > 0.05 and out.decision.headline.drop == pytest.approx(drop)
    assert "headline:balanced_accuracy" in [r.key.name for r in out.reasons]


def test_reasons_are_typed_and_round_trip(reference):
    decision = mon.decide_alert(mon.run_tests(reference, period_stats(200_000, 51, prevalence=(3, 0.05))))
    first = decision.reasons[0]
    assert first.key == mon.TestKey("prevalence_label", "c3") and first.threshold == 0.02
    assert first.current - first.reference == pytest.approx(first.effect)
    assert decision.figures[first.key.name] == first.effect
    assert first.text.startswith(first.summary) and "p_adj" in first.text and "p_adj" not in first.summary
    assert [mon.Reason.from_dict(r.to_dict()) for r in decision.reasons] == list(decision.reasons)
    with pytest.raises(InputError, match="unknown test kind"):
        mon.TestKey("prevalence")


@pytest.mark.parametrize("p_adjusted, shown", [(0.0, "p_adj<1e-300"), (3.2e-9, "p_adj=3.2e-09"), (0.012, "p_adj=0.012")])
def test_a_reason_shows_an_underflowed_p_value_as_a_bound(p_adjusted, shown):
    reason = mon.Reason(mon.TestKey("prevalence_label", "c3"), 0.044, 0.02, p_adjusted, 0.085, 0.129)
    assert reason.text.endswith(f"threshold 2; {shown})")


def test_one_policy_with_the_documented_defaults():
    p = mon.AlertPolicy.of(None)
    assert (p.alpha, p.correction, p.prevalence_change, p.psi, p.score_shift, p.price_change, p.metric_drop,
            p.metric_floor, p.level) == (0.05, "bh", 0.02, 0.1, 0.02, 0.10, 0.05, None, 0.95)
    assert mon.AlertPolicy.of({"psi": 0.3, "alpha": None}) == mon.AlertPolicy(psi=0.3)
    assert mon.DEFAULT_HEADLINE == "balanced_accuracy"


@pytest.mark.parametrize("key, hint", [("prevalance_change", "did you mean 'prevalence_change'"),
                                       ("PSI", "did you mean 'psi'"), ("route_to", "the fields are alpha,")])
def test_an_unknown_policy_field_is_an_error_not_the_default(key, hint):
    """A misspelt threshold would otherwise leave the default in force (a 3-point rise alerting
    under a policy that asked for 5)."""
    with pytest.raises(InputError, match=f"alert policy: unknown field '{key}'.*{hint}"):
        mon.AlertPolicy.of({key: 0.05})
    rise = {mon.TestKey("prevalence_pred", "a"): drift.two_proportion_z(1000, 10000, 1300, 10000)}
    assert mon.decide_alert(rise).alert and not mon.decide_alert(rise, {"prevalence_change": 0.05}).alert


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


# ---------------------------------------------------------------- the notebook API (assess_period)
def _frame(n, seed, **shift):
    y, pred, s, price = period_arrays(n, seed, **shift)
    return pl.DataFrame({"label": LABELS[y], "prediction": LABELS[pred], "price": price,
                         **{f"score_{c}": s[:, j] for j, c in enumerate(LABELS)}}), (y, pred, s, price)


def test_assess_period_on_tables_equals_the_statistics_path():
    """polars DataFrame, LazyFrame, pyarrow Table and pandas DataFrame (its index left out) give the same
    result as statistics from update()."""
    ref, (y, pred, s, price) = _frame(20_000, 21)
    cur, (y2, pred2, s2, price2) = _frame(20_000, 22, prevalence=(3, 0.05))
    opts = {"n_boot": 50, "seed": 1}
    out = mon.assess_period(ref, cur, {"psi": 0.2}, columns={"price": "price"}, report_options=opts)
    direct = mon.assess_stats(
        mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price),
        mon.update("multiclass", LABELS, mon.Bins(), pred2, label_idx=y2, scores=s2, price=price2),
        {"psi": 0.2}, report_options=opts)
    assert out.metrics.keys() == direct.metrics.keys()
    assert out.metrics == pytest.approx(direct.metrics, nan_ok=True)
    assert out.alert and out.reasons == direct.reasons and "prevalence_label:c3" in [r.key.name for r in out.reasons]
    assert set(out.tables) == {"drift_table.json", "per_class_monitoring.json", "price_impact.json",
                               "per_class_performance.json"}
    # exact counts and an oracle for the watched values
    assert out.metrics["n_rows"] == 20_000 and out.metrics["prevalence_label/c3"] == (y2 == 3).mean()
    z = drift.two_proportion_z(int((y == 3).sum()), y.size, int((y2 == 3).sum()), y2.size)
    assert out.tests[mon.TestKey("prevalence_label", "c3")].p_value == pytest.approx(z.p_value, rel=1e-6, abs=0)
    assert out.metrics["perf/accuracy"] == pytest.approx((y2 == pred2).mean())
    from sklearn.metrics import balanced_accuracy_score

    assert out.metrics["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y2, pred2))
    shuffled_index = ref.to_pandas().set_axis(np.random.default_rng(0).permutation(ref.height) * 7)
    for other in (ref.lazy(), ref.to_arrow(), shuffled_index):
        again = mon.assess_period(other, cur.lazy(), {"psi": 0.2}, columns={"price": "price"}, report_options=opts)
        assert again.metrics == pytest.approx(out.metrics, nan_ok=True)


def test_assess_period_without_labels_or_with_bad_rows():
    ref, _ = _frame(5_000, 23)
    cur, _ = _frame(5_000, 24)
    out = mon.assess_period(ref, cur.drop("label"), report_options={"n_boot": 0})
    assert out.headline is None and not any(k.startswith("perf/") for k in out.metrics)
    assert "prevalence_label/c0" not in out.metrics and out.metrics["prevalence_pred/c0"] > 0
    bad = cur.with_columns(score_c2=pl.when(pl.int_range(pl.len()).is_in([3, 4000])).then(float("nan"))
                           .otherwise(pl.col("score_c2")))
    with pytest.raises(InputError, match=r"current.*'score_c2'.*NaN score.*2 row\(s\)"):
        mon.assess_period(ref, bad, report_options={"n_boot": 0})
    with pytest.raises(InputError, match="polars DataFrame"):
        mon.assess_period(ref, {"label": [1]})


# ---------------------------------------------------------------- a class the model has never seen (§5)
def _with_new_class(frame: pl.DataFrame, rows_label, rows_pred, name="c_new") -> pl.DataFrame:
    i = pl.int_range(pl.len())
    return frame.with_columns(label=pl.when(i.is_in(rows_label)).then(pl.lit(name)).otherwise(pl.col("label")),
                              prediction=pl.when(i.is_in(rows_pred)).then(pl.lit(name)).otherwise(pl.col("prediction")))


def test_new_class_is_counted_left_out_and_alerts():
    ref, _ = _frame(20_000, 31)
    cur, (y, pred, s, price) = _frame(10_000, 32)
    rng = np.random.default_rng(0)
    lab_rows = rng.choice(10_000, 150, replace=False)
    pred_rows = np.concatenate([lab_rows[:100], rng.choice(np.setdiff1d(np.arange(10_000), lab_rows), 20, False)])
    bad = _with_new_class(cur, lab_rows.tolist(), pred_rows.tolist())
    out = mon.assess_period(ref, bad, report_options={"n_boot": 0})
    left = np.setdiff1d(np.arange(10_000), np.union1d(lab_rows, pred_rows))
    assert out.current.n_rows == left.size == 10_000 - 170 and out.current.n_new_class_rows == 170
    assert out.current.new_classes == {"c_new": (170, 150, 120)}
    assert out.metrics["new_class_rows"] == 170 and out.metrics["new_class/c_new"] == 170
    # the metrics are those of the other rows, exactly
    kept = mon.update("multiclass", LABELS, mon.Bins(), pred[left], label_idx=y[left], scores=s[left])
    np.testing.assert_array_equal(out.current.label_counts, kept.label_counts)
    np.testing.assert_array_equal(out.current.score_counts, kept.score_counts)
    from sklearn.metrics import balanced_accuracy_score

    assert out.metrics["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y[left], pred[left]))
    assert out.alert and out.reasons[0].text == "class 'c_new' appeared: 170 rows (1.7% of the period)"
    assert mon.Reason.from_dict(out.reasons[0].to_dict()) == out.reasons[0]
    with pytest.raises(InputError, match=r"'label'.*not in the class list.*150 row\(s\).*c_new"):
        mon.assess_period(ref, bad, report_options={"n_boot": 0}, classes="closed")
    with pytest.raises(InputError, match=r"'label'.*not in the class list"):  # the reference stays closed
        mon.assess_period(_with_new_class(ref, [3], []), cur, labels=list(LABELS), report_options={"n_boot": 0})


def test_new_class_counts_merge_across_batches(tmp_path):
    """Files read in batches: the per-class counts add up to those of one pass over the rows."""
    cur, _ = _frame(3_000, 33)
    bad = _with_new_class(cur, [5, 800, 2999], [5, 1500], name="c_x")
    bad = _with_new_class(bad, [], [10, 2000], name="c_y")
    path = tmp_path / "new.parquet"
    bad.write_parquet(path)
    st = _scan(path, open_classes=True)
    assert st.new_classes == {"c_x": (4, 3, 2), "c_y": (2, 0, 2)} and st.n_rows == 3_000 - 6
    whole = mon.scan_period(bad.to_arrow(), "multiclass", LABELS, label="label", prediction="prediction",
                            scores=[f"score_{c}" for c in LABELS], price="price", open_classes=True)
    np.testing.assert_array_equal(st.score_counts, whole.score_counts)
    assert whole.new_classes == st.new_classes


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
    """Issue 14 §3: +17.7 % in a 2 %-prevalence class, 20,000 rows: missed per predicted class,
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


def test_notebook_example_runs(capsys):
    """The example of docs/notebook.md runs and prints what its comments say."""
    from pathlib import Path

    text = (Path(__file__).parents[3] / "docs" / "notebook.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/notebook.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "retrain"
    assert lines[1].startswith("prevalence of 'tea' (labels) rose from 20.")
    assert lines[2] == "0.3"


def _binary_percent(n=3000, seed=1, scale=100.0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    s = np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1) * scale
    return pa.table({"label": y, "score": s, "prediction": (s >= 50).astype(int)}), s


def test_a_binary_period_predicted_by_a_probability_threshold_on_percent_scores_warns():
    """Monitoring's predicted class from threshold 0.5 on scores in percent: nearly every row is
    'positive' in both windows, so nothing alerts; the scan says so (mc.ThresholdScaleWarning)."""
    import warnings

    table, s = _binary_percent()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats = mon.scan_period(table, "binary", [0, 1], label="label", scores=["score"], where="deliveries")
    said = [w.message for w in caught if isinstance(w.message, mc.ThresholdScaleWarning)]
    assert len(said) == 1 and said[0].share == pytest.approx((s >= 0.5).mean(), abs=0)
    assert f"deliveries: {int(((s < 0) | (s > 1)).sum()):,} of 3,000 rows have scores outside [0, 1]" in str(said[0])
    assert stats.pred_counts[1] == (s >= 0.5).sum()
    for quiet in (dict(scores=["score"], threshold=50.0), dict(scores=["score"], prediction="prediction")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mon.scan_period(table, "binary", [0, 1], label="label", **quiet)
        assert not [w for w in caught if isinstance(w.message, mc.MisreadInputWarning)], quiet
    probabilities, p = _binary_percent(scale=1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mon.scan_period(probabilities, "binary", [0, 1], label="label", scores=["score"])
    assert not [w for w in caught if isinstance(w.message, mc.MisreadInputWarning)]
    # The other way round: a percentage threshold on probabilities predicts every row negative.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats = mon.scan_period(probabilities, "binary", [0, 1], label="label", scores=["score"], threshold=70.0,
                                where="deliveries")
    said = [w.message for w in caught if isinstance(w.message, mc.ThresholdScaleWarning)]
    assert len(said) == 1 and said[0].share == 0.0 and stats.pred_counts[1] == 0 == (p >= 70).sum()
    assert "deliveries: all 3,000 rows score in [0, 1], probabilities, but the threshold 70 is outside" in str(said[0])
    assert "use 0.7" in str(said[0])


def test_an_in_memory_period_with_decimal_scores_has_the_statistics_of_its_floats():
    """Monitoring tables read in memory follow the same decimal rule as files (contract.decimals_as_floats)."""
    import pyarrow.compute as pc

    table, s = _binary_percent(scale=1.0)
    rounded = pa.array(np.round(s, 4))
    floats = table.set_column(1, "score", rounded)
    decimals = table.set_column(1, "score", pc.cast(pc.cast(rounded, pa.string()), pa.decimal128(6, 4)))
    a, b = (mon.scan_period(t, "binary", [0, 1], label="label", scores=["score"]) for t in (floats, decimals))
    assert np.array_equal(a.score_counts, b.score_counts) and np.array_equal(a.pred_counts, b.pred_counts)
    assert a.performance.confusion.matrix.tolist() == b.performance.confusion.matrix.tolist()


def test_a_binary_period_reports_the_log_loss_and_brier_score_of_its_rows():
    """A monitoring period bins its scores, yet its perf/log_loss and perf/brier are the rows' (the bins
    carry the rows' loss sums), not those of the bins' lower edges."""
    from sklearn.metrics import brier_score_loss, log_loss

    table, s = _binary_percent(scale=1.0)
    y = table["label"].to_numpy()
    out = mon.assess_period(table.drop(["prediction"]), table.drop(["prediction"]), task="binary", labels=[0, 1],
                            positive_class=1, columns={"label": "label", "score": "score"},
                            report_options={"n_boot": 50})
    assert out.metrics["perf/log_loss"] == pytest.approx(log_loss(y, s), rel=1e-12)
    assert out.metrics["perf/brier"] == pytest.approx(brier_score_loss(y, s), rel=1e-12)


@pytest.mark.parametrize("null_prediction", [False, True])
def test_a_third_class_in_a_binary_reference_says_where_each_class_is(null_prediction):
    """Its rows and first row by column, as the flow says it of a file (one resolver); a missing value
    (the null prediction) is no class, and the column's other classes are still listed."""
    prediction = pa.array([0, 1, 1, 0, 1, 7], pa.int64()) if not null_prediction else \
        pa.array([0, 1, None, 0, 1, 7], pa.int64())
    ref = pa.table({"label": pa.array([0, 1, 0, 2, 1, 0]), "prediction": prediction})
    cur = pa.table({"label": pa.array([0, 1]), "prediction": pa.array([0, 1])})
    expected = (r"reference: column 'label': a binary evaluation needs at most two classes, found 4: \[0, 1, 2, 7\]\."
                r".* Where they are: 0 in 3 row\(s\) of column 'label' \(first: row 0\); 1 in 2 \(first: row 1\); "
                r"2 in 1 \(first: row 3\); 7 in 1 row\(s\) of column 'prediction' \(first: row 5\)\.$")
    with pytest.raises(InputError, match=expected):
        mon.assess_period(ref, cur, task="binary", positive_class=1, report_options={"n_boot": 0})
