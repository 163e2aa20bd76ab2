"""A monitored period's labelled sample: its statistics in the scan (merge = union), today's numbers for a
fully labelled period, and the assessment of a partly labelled one (design-weighted estimates, effective n)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from monitoring_data import LABELS, _frame, period_arrays

from metrics_core import monitoring as mon
from metrics_core.errors import InputError
from metrics_core.monitoring import labelled
from metrics_core.monitoring.kinds import TestKey
from metrics_core.monitoring.sample import effective_sample_size
from metrics_core.monitoring.survey import design_metric

RATES = np.where(np.arange(len(LABELS)) >= 5, 0.25, 0.03)  # the rarest predicted classes over-sampled


def _sampled(frame: pl.DataFrame, pred: np.ndarray, seed: int, rates=RATES, weights: bool = True) -> pl.DataFrame:
    """The delivery with labels on a stratified sample (by predicted class) and their design weights."""
    on = np.random.default_rng(seed).random(pred.size) < rates[pred]
    out = frame.with_columns(label=pl.when(pl.Series(on)).then(pl.col("label")).otherwise(None))
    if weights:
        out = out.with_columns(design_weight=pl.when(pl.Series(on)).then(pl.Series(1 / rates[pred])).otherwise(None))
    return out


def _equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        (isinstance(v, float) and math.isnan(v) and math.isnan(b[k])) or v == b[k] for k, v in a.items())


def test_sample_statistics_merge_to_those_of_one_pass():
    """Merge = union: the statistics of two parts of a partly labelled period (split at random, each part
    with its own design weights) add up to those of the whole, for the sample and every other statistic."""
    y, pred, s, price = period_arrays(6000, 5)
    rng = np.random.default_rng(6)
    on = rng.random(y.size) < RATES[pred]
    label_idx = np.where(on, y, -2)
    dw = np.where(on, 1 / RATES[pred], np.nan)

    def stats(rows):
        return mon.update("multiclass", LABELS, mon.Bins(), pred[rows], label_idx=label_idx[rows], scores=s[rows],
                          price=price[rows], design_weight=dw[rows], labelled_sample=True)

    part = rng.random(y.size) < 0.4
    whole, merged = stats(np.ones(y.size, bool)), stats(part).merge(stats(~part))
    for field in ("key", "rows", "population", "population_rows"):
        assert np.array_equal(getattr(whole.sample, field), getattr(merged.sample, field)), field
    assert np.allclose(whole.sample.dw, merged.sample.dw) and np.allclose(whole.sample.dw2, merged.sample.dw2)
    assert whole.sample.dw.sum() == pytest.approx((1 / RATES[pred][on]).sum())
    # the design-weighted price cells (label, predicted, price bin) merge as well, and count the labelled rows
    wp, mp = whole.sample.price_cells, merged.sample.price_cells
    assert np.array_equal(wp.code, mp.code) and np.array_equal(wp.rows, mp.rows)
    assert np.allclose(wp.dw, mp.dw) and np.allclose(wp.dw2, mp.dw2) and wp.rows.sum() == on.sum()
    assert wp.dw.sum() == pytest.approx(whole.sample.dw.sum())
    assert np.array_equal(whole.performance.confusion.matrix, merged.performance.confusion.matrix)
    # label statistics are the labelled rows', the others every row's
    alone = mon.update("multiclass", LABELS, mon.Bins(), pred[on], label_idx=y[on], scores=s[on], price=price[on])
    everyone = mon.update("multiclass", LABELS, mon.Bins(), pred, scores=s, price=price)
    assert np.array_equal(whole.performance.confusion.matrix, alone.performance.confusion.matrix)
    assert np.array_equal(whole.price_cells, alone.price_cells) and whole.n_labelled == on.sum()
    assert np.array_equal(whole.score_counts, everyone.score_counts)
    assert np.array_equal(whole.price_counts, everyone.price_counts) and whole.n_rows == y.size


def test_a_fully_labelled_period_gives_todays_numbers(reference):
    """Read as a monitored period (null labels allowed, design weights of 1), a fully labelled period
    gives exactly the metrics, tests and tables it gave before labelled samples existed."""
    frame, _ = _frame(5_000, 3)
    table = frame.with_columns(design_weight=pl.lit(1.0)).to_arrow()
    kw = dict(label="label", prediction="prediction", scores=[f"score_{c}" for c in LABELS], price="price")
    before = mon.scan_period(table, "multiclass", LABELS, **kw)
    after = mon.scan_period(table, "multiclass", LABELS, partial_labels=True, design_weight="design_weight", **kw)
    assert after.sample is not None and before.sample is None
    options = {"n_boot": 20}
    old, new = (mon.assess_stats(reference, st, report_options=options) for st in (before, after))
    assert _equal(old.metrics, new.metrics) and not any(k.startswith("sample/") for k in new.metrics)
    assert old.decision.table.equals(new.decision.table) and old.tables.keys() == new.tables.keys()


@pytest.fixture(scope="module")
def partly_labelled():
    """A delivery of 30,000 rows, 1,200-odd labelled by a stratified sample (3 % / 25 %), with its truth."""
    frame, (y, pred, s, price) = _frame(30_000, 7)
    return _sampled(frame, pred, 8), y, pred


def test_a_partly_labelled_period_is_estimated_for_the_whole_delivery(reference, partly_labelled):
    from sklearn.metrics import balanced_accuracy_score

    part, y, pred = partly_labelled
    cols = [f"score_{c}" for c in LABELS]
    stats = mon.scan_period(part.to_arrow(), "multiclass", LABELS, label="label", prediction="prediction",
                            scores=cols, price="price", partial_labels=True, design_weight="design_weight")
    a = mon.assess_stats(reference, stats, report_options={"n_boot": 50})
    m = a.metrics
    # the headline is the design-based estimate (unequal weights: nothing vouches for the calibration map)
    value, (lo, hi) = design_metric(stats.sample, "balanced_accuracy", level=0.95)
    assert m["sample/alert_uses_model_assisted"] == 0.0
    assert (m["balanced_accuracy"], m["balanced_accuracy_ci_low"], m["balanced_accuracy_ci_high"]) == (value, lo, hi)
    assert m["perf/balanced_accuracy"] == value and lo <= balanced_accuracy_score(y, pred) <= hi
    assert "sample/model_assisted/balanced_accuracy" in m and m["sample/labelled_rows"] == stats.n_labelled
    # the small-sample rule reads the design's effective size, not the labelled rows
    n_eff = effective_sample_size(stats.sample)
    assert m["sample/effective_n"] == n_eff < 0.8 * stats.n_labelled
    assert a.decision.headline.n_labelled == round(n_eff)
    # the estimated label shares, and the prevalence tests on them: the over-sampled classes raise no alarm
    share = np.bincount(y, minlength=len(LABELS)) / y.size
    est = np.array([m[f"sample/prevalence_label/{c}"] for c in LABELS])
    assert np.abs(est - share).max() < 0.03
    assert np.abs(stats.prevalence("label") - share).max() > 0.1  # the raw sample is far off
    assert a.decision.verdict != "retrain", a.decision.texts
    # the calibration test weighted by the design: the top label's only, and no alarm
    assert [k.cls for k in a.tests if k.kind == "calibration"] == ["top_label"]
    assert not any(r.key.kind == "calibration" for r in a.reasons)
    # the Annex E price cells are read weighted by the design, at their effective sizes: no price alarm
    cells = {k: t for k, t in a.tests.items() if k.kind in ("price_false_positive", "price_false_negative",
                                                              "price_label")}
    assert {k.kind for k in cells} == {"price_label", "price_false_positive", "price_false_negative"}
    label = cells[TestKey("price_label", LABELS[0])]
    assert 0 < label.details["n_current"] <= stats.label_counts[0]  # Kish: at most the labelled rows
    assert not any(r.key.kind.startswith("price") for r in a.reasons)
    # what to label next: one row per stratum, its sum logged
    table = a.tables["next_sample.json"]
    assert table["stratum"].to_list() == list(LABELS) and table["rows"].sum() == 30_000
    assert m["sample/next_rows"] == table["label"].sum() > 0
    assert m[f"sample/next_rows/{LABELS[0]}"] == table["label"][0]


def test_a_simple_random_sample_uses_the_model_assisted_estimate_when_calibrated(reference):
    """No design weights, labels on 5 % of rows at random: the reference's calibration holds, so the alert
    reads the model-assisted estimate; the calibration tests run on the (unweighted, unbiased) sample."""
    frame, (y, pred, s, price) = _frame(30_000, 9)
    part = _sampled(frame, pred, 10, rates=np.full(len(LABELS), 0.05), weights=False)
    a = mon.assess_period(reference, mon.scan_period(
        part.to_arrow(), "multiclass", LABELS, label="label", prediction="prediction",
        scores=[f"score_{c}" for c in LABELS], partial_labels=True), report_options={"n_boot": 50})
    m = a.metrics
    assert m["sample/alert_uses_model_assisted"] == 1.0
    assert m["balanced_accuracy"] == m["sample/model_assisted/balanced_accuracy"]
    assert m["sample/effective_n"] == pytest.approx(m["sample/labelled_rows"], rel=0.02)  # post-stratified: near n
    assert any(k.kind == "calibration" for k in a.tests)


def test_the_notebook_api_takes_design_weights_and_a_label_column_without_labels(partly_labelled):
    part, y, pred = partly_labelled
    ref, _ = _frame(20_000, 1)
    a = mon.assess_period(ref, part.rename({"design_weight": "w_design"}), design_weight="w_design",
                          report_options={"n_boot": 0})
    assert a.metrics["sample/labelled_rows"] == part["label"].is_not_null().sum()
    with pytest.raises(InputError, match="w_design"):
        mon.assess_period(ref, part, design_weight="w_design", report_options={"n_boot": 0})
    # a label column that holds no label: the period is judged as one without labels (the label-lag estimate)
    none = part.with_columns(label=pl.lit(None, pl.String)).drop("design_weight")
    b = mon.assess_period(ref, none, report_options={"n_boot": 0})
    assert not any(k.startswith(("perf/", "sample/")) for k in b.metrics)
    assert "estimated/balanced_accuracy" in b.metrics and b.decision.headline.metric == "estimated/balanced_accuracy"


def test_the_sample_is_left_out_of_no_period_whose_labels_are_complete():
    full = mon.update("binary", np.array([0, 1]), mon.Bins(), np.array([0, 1, 1]), label_idx=np.array([0, 1, 0]),
                      labelled_sample=True, design_weight=np.array([1.0, 1.0, 1.0]))
    weighted = mon.update("binary", np.array([0, 1]), mon.Bins(), np.array([0, 1, 1]),
                          label_idx=np.array([0, 1, 0]), labelled_sample=True, design_weight=np.array([1.0, 3.0, 1.0]))
    assert not labelled.is_sample(full) and labelled.is_sample(weighted) and labelled.unequal_weights(weighted)


def test_a_stratified_sample_without_design_weights_is_expanded_per_predicted_class(reference, partly_labelled):
    """The same stratified sample without its design weights: each predicted class's labelled rows stand for
    its rows, so the estimate keeps covering the delivery, and the tests that would read the labelled rows as
    they are (over-sampled rare classes) are weighted by the design as with the weights."""
    from sklearn.metrics import balanced_accuracy_score

    part, y, pred = partly_labelled
    stats = mon.scan_period(part.drop("design_weight").to_arrow(), "multiclass", LABELS, label="label",
                            prediction="prediction", scores=[f"score_{c}" for c in LABELS], price="price",
                            partial_labels=True)
    assert labelled.is_sample(stats) and labelled.unequal_weights(stats)
    a = mon.assess_stats(reference, stats, report_options={"n_boot": 20})
    m = a.metrics
    assert m["balanced_accuracy_ci_low"] <= balanced_accuracy_score(y, pred) <= m["balanced_accuracy_ci_high"]
    assert abs(m["balanced_accuracy"] - balanced_accuracy_score(y, pred)) < 0.03
    assert [k.cls for k in a.tests if k.kind == "calibration"] == ["top_label"] and a.decision.verdict != "retrain"
    assert m["sample/effective_n"] < 0.8 * stats.n_labelled


def test_a_headline_the_sample_cannot_weight_is_not_judged_on_the_raw_rows():
    """A binary headline that is not count-based (AUROC, from the binned scores of the labelled rows) cannot be
    weighted by the design: with unequal weights the period's headline test is skipped with a warning."""
    from metrics_core.monitoring.survey import SampleWarning

    rng = np.random.default_rng(3)
    s = rng.random(40_000)
    y, pred = (rng.random(40_000) < s).astype(int), (s >= 0.5).astype(int)
    labels, bins = np.array([0, 1]), mon.Bins()
    ref = mon.update("binary", labels, bins, pred[:20_000], label_idx=y[:20_000], scores=s[:20_000, None])
    rate = np.where(pred[20_000:] == 1, 0.25, 0.03)
    on = rng.random(20_000) < rate
    cur = mon.update("binary", labels, bins, pred[20_000:], label_idx=np.where(on, y[20_000:], -2),
                     scores=s[20_000:, None], design_weight=1 / rate, labelled_sample=True)
    with pytest.warns(SampleWarning, match="'auroc' is not a count-based metric"):
        a = mon.assess_stats(ref, cur, headline_metric="auroc", report_options={"n_boot": 0})
    assert a.headline is None and a.decision.headline is None and "auroc" not in a.metrics
    counted = mon.assess_stats(ref, cur, headline_metric="balanced_accuracy", report_options={"n_boot": 0})
    assert counted.decision.headline is not None
