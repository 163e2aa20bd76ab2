"""metrics_core.monitoring.assess: assess_period on tables, assess_stats on statistics, the docs/notebook.md example."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from flow_data import three_class_period
from monitoring_data import (LABELS, _binary_percent, _frame, _with_new_class, broken_scoring, period_arrays,
                             period_stats)
from scipy import stats

from metrics_core import drift, monitoring as mon
from metrics_core.errors import InputError


def _small_sample_verdict(reference, n, seed, **shift):
    cur = period_stats(n, seed, **shift)
    return mon.assess_stats(reference, cur, None, report_options={"n_boot": 200, "seed": seed})


@pytest.mark.parametrize("seed", range(5))
def test_a_stable_month_with_few_labels_is_not_an_alert(reference, seed):
    """216 labelled rows: no alert; the verdict says how many labelled rows are needed."""
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


# ---------------------------------------------------------------- the notebook API (assess_period)
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


def test_the_drop_of_an_estimate_flagged_unreliable_says_so_in_its_reason():
    """Every score 1/3 and every prediction 'bread', no labels: the estimated balanced accuracy fell
    0.76 and the reason read as a plain drop, while the command line and the description marked the
    estimate unreliable. The reason, its one-line summary and its stored record now carry the flag."""
    ref, broken, _ = broken_scoring(3000, 600)
    out = mon.assess_period(ref, broken, report_options={"n_boot": 20})
    assert out.metrics["estimated/reliable"] == 0.0 and out.metrics["estimated/degenerate"] == 1.0
    (drop,) = [r for r in out.decision.reasons if r.kind == "headline"]
    assert drop.summary == (f"estimated/balanced_accuracy fell {drop.effect:.3f} below the reference "
                            f"{drop.reference:.3f} (now {drop.current:.3f}), UNRELIABLE: degenerate scores "
                            "(most rows share one score the reference rarely gave)")
    assert drop.text.startswith(drop.summary + " (threshold 0.05; p_adj=")
    assert mon.Reason.from_dict(drop.to_dict()).text == drop.text
