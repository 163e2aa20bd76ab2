"""tasks.render.iso_report: the ISO/IEC TS 4213 clause-8 markdown, section by section, from real results."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

import metrics_core as mc
from metrics_core.significance import mcnemar, paired_bootstrap
from tasks.config.spec import load_spec
from tasks.render.iso_report import NOT_PROVIDED, iso_report

HEADINGS = ["# Evaluation report: price-model", "## Summary", "## 5.3 Control criteria", "### Context",
            "### Training and test data", "### Representativeness", "### Leakage", "### Ground truth",
            "### Algorithm and hyperparameters", "### Environment", "### Baselines (ISO 5.3.13, ONS Annex D)",
            "## Results (ISO clause 6)", "## Comparison with the champion (ISO clause 7)",
            "## Computational performance (ISO 6.6)", "## Recommended metric (ONS Tables 1 and 2)"]
ENVIRONMENT = {"python": "3.12.1", "numpy": "2.0.0"}
LABELS = ["bread", "milk", "wine"]


def fmt(v: float) -> str:
    return f"{v:.4g}"


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(3)
    y = np.asarray(LABELS)[rng.choice(3, 600, p=[0.5, 0.3, 0.2])]
    hit = rng.random(600) < 0.8
    pred = np.where(hit, y, np.asarray(LABELS)[rng.integers(0, 3, 600)])
    other = np.where(rng.random(600) < 0.7, y, np.asarray(LABELS)[rng.integers(0, 3, 600)])
    return y, pred, other


def render(spec, report, *, plan=None, checks=None, champion=None, timing=None, model=None, drift_rows=None,
           headline="balanced_accuracy", labels=LABELS, **extra):
    plan = plan or SimpleNamespace(labels=labels, reference=None, test="/data/test.parquet")
    rec = {"recommendation": mc.recommend(spec.task, True, False), "stability_reason": "3 periods, stable."}
    return iso_report(spec=spec, plan=plan, report=report, headline=headline, checks=checks or {},
                      recommendation=rec, champion=champion, timing=timing, environment=ENVIRONMENT,
                      model=model or {}, drift_rows=drift_rows, **extra)


def test_every_clause_heading_in_order_and_the_headline_value(rows):
    y, pred, _ = rows
    spec = load_spec({"name": "price-model", "n_boot": 50})
    report = mc.multiclass_report(y, pred, labels=LABELS, n_boot=50)
    text = render(spec, report)
    lines = text.splitlines()
    assert [h for h in lines if h.startswith("#")] == HEADINGS
    v, (lo, hi) = report.metrics["balanced_accuracy"], report.intervals["balanced_accuracy"]
    assert f"- headline metric (balanced_accuracy): {fmt(v)} (95% interval {fmt(lo)} - {fmt(hi)})" in lines
    assert "- task: multiclass, 600 test rows, 3 classes" in lines
    assert f"| balanced_accuracy | {fmt(v)} | {fmt(lo)} | {fmt(hi)} |" in lines  # results table
    base = report.baselines
    assert (f"| balanced_accuracy | {fmt(v)} | {fmt(base['majority']['balanced_accuracy'])} | "
            f"{fmt(base['random']['balanced_accuracy'])} |") in lines
    assert not any(line.startswith("| n_undefined") for line in lines)
    support = {r["class"]: r["support"] for r in report.per_class.iter_rows(named=True)}
    assert f"| wine | {int(support['wine'])} | {fmt(report.per_class['prevalence'][2])} |" in lines
    assert "- headline metric: **fbeta_of_weighted** in PR space" in text  # ONS Table 2, prevalence stable
    assert "- stability measured: 3 periods, stable." in lines


def test_what_the_spec_and_data_do_not_say_reads_not_provided(rows):
    y, pred, _ = rows
    spec = load_spec({"name": "price-model", "n_boot": 50})
    text = render(spec, mc.multiclass_report(y, pred, labels=LABELS, n_boot=50))
    for section in ("### Context", "### Ground truth"):
        assert f"{section}\n\n{NOT_PROVIDED}\n" in text
    assert f"### Leakage\n\n{NOT_PROVIDED} (no reference/training data" in text
    assert f"### Representativeness\n\n{NOT_PROVIDED} (no reference" in text
    assert f"{NOT_PROVIDED} (no model URI: predictions were read from the data)." in text
    assert f"{NOT_PROVIDED}: no registered model 'price-model' with the alias `champion`" in text
    assert f"{NOT_PROVIDED} (the flow did not run the model)." in text
    assert f"- training data: {NOT_PROVIDED}" in text and f"- reference window: {NOT_PROVIDED}" in text
    assert "- model: scores and predictions read from the test data" in text and "drift_table.json" not in text


def test_what_is_provided_is_reported(rows):
    y, pred, other = rows
    spec = load_spec({"name": "price-model", "n_boot": 50, "context": "CPI item coding.",
                      "ground_truth": "Two coders, disagreements resolved.", "data": {"train": "/data/train.parquet"}})
    report = mc.multiclass_report(y, pred, labels=LABELS, n_boot=50)
    train = pl.DataFrame({"id": [1, 2, 3, 4], "x": [0.1, 0.2, 0.8, 0.9], "label": [0, 0, 1, 1]})
    leak = mc.leakage(train, pl.DataFrame({"id": [4, 5], "x": [0.9, 0.3], "label": [1, 0]}), feature_columns=["x"])
    champion = {"champion_uri": "models:/price-model/1", "metric": "balanced_accuracy",
                "mcnemar": mcnemar(y, pred, other),
                "bootstrap": paired_bootstrap("balanced_accuracy", y, pred, other, n_boot=50, task="multiclass",
                                              labels=LABELS)}
    model = {"model_uri": "models:/price-model/2", "flavors": "python_function, sklearn", "run_id": "abc",
             "params": {"C": "4.0", "alpha": "0.3"}}
    plan = SimpleNamespace(labels=LABELS, reference="/data/ref.parquet", test="/data/test.parquet")
    text = render(spec, report, plan=plan, checks={"leakage": leak}, champion=champion, model=model,
                  timing={"latency_ms_p50": 1.23456, "latency_rows": 100.0}, drift_rows=3)
    assert "### Context\n\nCPI item coding.\n" in text
    assert "### Ground truth\n\nTwo coders, disagreements resolved.\n" in text
    assert f"### Leakage\n\nStatus: **fail**. {leak.message}\n" in text
    assert "Drift of the test set against the reference: 3 test(s) flag drift" in text
    assert "- training data: `/data/train.parquet`" in text
    assert "- reference window (scored validation data): `/data/ref.parquet`" in text
    assert "- model: models:/price-model/2" in text and "- model URI: `models:/price-model/2`" in text
    assert "- training run: abc\n- C: 4.0\n- alpha: 0.3\n" in text
    m, b = champion["mcnemar"], champion["bootstrap"]
    assert f"- McNemar: statistic {fmt(m.statistic)}, p = {fmt(m.p_value)}; {m.verdict}" in text
    assert (f"- paired bootstrap of balanced_accuracy (new - champion): {fmt(b.statistic)} "
            f"(interval {fmt(b.interval[0])} - {fmt(b.interval[1])}), p = {fmt(b.p_value)}") in text
    assert "- latency_ms_p50: 1.235\n- latency_rows: 100\n" in text
    assert "- python: 3.12.1\n- numpy: 2.0.0\n" in text


def test_binary_report_names_the_positive_class_and_its_prevalence():
    rng = np.random.default_rng(0)
    y = (rng.random(400) < 0.25).astype(int)
    score = np.clip(0.4 * y + 0.6 * rng.random(400), 0, 1)
    report = mc.binary_report(y, y_score=score, n_boot=50)
    spec = load_spec({"name": "price-model", "task": "binary", "n_boot": 50, "alerts": {"level": 0.9}})
    text = render(spec, report, headline="auroc", labels=[0, 1])
    lo, hi = report.intervals["auroc"]
    assert f"- headline metric (auroc): {fmt(report.metrics['auroc'])} (90% interval {fmt(lo)} - {fmt(hi)})" in text
    assert f"Positive class 1: prevalence {fmt(report.metrics['prevalence'])}." in text
    assert "| metric | value | 90% low | 90% high |" in text


@pytest.mark.parametrize("k, shown", [(40, "c39"), (45, "c39 ...")])
def test_a_long_class_list_is_cut_at_40(k, shown):
    labels = [f"c{i}" for i in range(k)]
    y = np.asarray(labels)[np.arange(200) % k]
    report = mc.multiclass_report(y, y, labels=labels, n_boot=50)
    text = render(load_spec({"name": "price-model", "n_boot": 50}), report, labels=labels)
    line = next(x for x in text.splitlines() if x.startswith("- classes: "))
    assert line.endswith(shown) and "c40" not in line and f"{k} classes" in text


def test_a_headline_without_an_interval_has_no_interval_text(rows):
    y, pred, _ = rows
    report = mc.multiclass_report(y, pred, labels=LABELS, n_boot=50)
    missing = "auroc_ovr_macro"  # no scores: not in the report
    text = render(load_spec({"name": "price-model", "n_boot": 50}), report, headline=missing)
    assert f"- headline metric ({missing}): n/a\n" in text


def test_without_scores_the_report_names_only_the_plots_that_exist_and_says_why(rows):
    y, pred, _ = rows
    spec = load_spec({"name": "price-model", "n_boot": 50})
    report = mc.multiclass_report(y, pred, labels=LABELS, n_boot=50)  # labels only: no curves
    why = "No scores: the model models:/price-model/3 returned predicted labels only."
    plain, told = render(spec, report), render(spec, report, no_scores=why)
    for text in (plain, told):
        assert not any(name in text for name in ("roc.png", "pr.png", "gain.png", "lift.png", "curves_"))
    assert f"- **warning**: {why}\n" in told and f"Plots: confusion.png. {why}\n" in told
    assert "- **warning**: No scores: the evaluated predictions are labels only" in plain


def test_with_scores_every_plot_is_named_and_nothing_is_missing():
    rng = np.random.default_rng(1)
    y = np.asarray(LABELS)[rng.integers(0, 3, 300)]
    report = mc.multiclass_report(y, y_score=rng.dirichlet(np.ones(3), 300), labels=LABELS, n_boot=50)
    text = render(load_spec({"name": "price-model", "n_boot": 50}), report)
    assert ("Plots: roc.png, pr.png (with F-beta isolines and the prevalence baseline), gain.png, lift.png, "
            "confusion.png; thinned curve points in curves_*.json.\n") in text
    assert "**warning**" not in text and "No scores" not in text

