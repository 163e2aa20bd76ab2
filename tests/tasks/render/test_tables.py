"""tasks.render.tables.curve_tables: the curves of a report as MLflow tables, thinned to <= 1,000 points."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import metrics_core as mc
from tasks.render.tables import curve_tables

NAMES = ("roc", "pr", "gain", "lift")
TABLES = {f"curves_{n}.json" for n in NAMES}


def binary(n: int, seed: int = 0) -> mc.Report:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    return mc.binary_report(y, y_score=score, n_boot=50)


def multiclass(n: int, labels: list[str], seed: int = 0) -> mc.Report:
    rng = np.random.default_rng(seed)
    y = np.asarray(labels)[rng.integers(0, len(labels), n)]
    return mc.multiclass_report(y, y_score=rng.dirichlet(np.ones(len(labels)), n), labels=labels, n_boot=50)


def finite_or_none(a) -> list:
    return [float(v) if np.isfinite(v) else None for v in np.asarray(a, dtype=np.float64)]


@pytest.mark.parametrize("n", [50, 5_000])
def test_binary_tables_keep_the_ends_and_at_most_1000_points(n):
    report = binary(n)
    tables = curve_tables(report)
    assert set(tables) == TABLES
    for name in NAMES:
        t, full = tables[f"curves_{name}.json"], report.curves[name]
        assert t.columns == ["x", "y", "threshold"] and t.schema["x"] == pl.Float64
        assert t.height <= 1000 and (t.height == len(full["x"])) == (len(full["x"]) <= 1000)
        assert (t["x"][0], t["y"][0]) == (full["x"][0], full["y"][0])
        assert (t["x"][-1], t["y"][-1]) == (full["x"][-1], full["y"][-1])
        if len(full["x"]) <= 1000:  # a short curve is logged whole
            assert t["x"].to_list() == finite_or_none(full["x"])
            assert t["threshold"].to_list() == finite_or_none(full["thresholds"])
    assert (tables["curves_roc.json"].height < len(report.curves["roc"]["x"])) == (n > 1000)  # thinned when long
    # the ROC curve starts above every score: an infinite threshold, logged as null
    assert np.isinf(report.curves["roc"]["thresholds"][0]) and tables["curves_roc.json"]["threshold"][0] is None


def test_thinned_points_lie_on_the_full_curve():
    report = binary(5_000)
    t, full = curve_tables(report)["curves_roc.json"], report.curves["roc"]
    points = set(zip(np.asarray(full["x"]).tolist(), np.asarray(full["y"]).tolist()))
    assert all(p in points for p in zip(t["x"].to_list(), t["y"].to_list()))
    assert t["x"].is_sorted()


def test_multiclass_tables_have_one_block_per_class():
    labels = ["a", "b", "c"]
    report = multiclass(3_000, labels)
    tables = curve_tables(report)
    assert set(tables) == TABLES
    for name in NAMES:
        t = tables[f"curves_{name}.json"]
        assert t.columns == ["class", "x", "y", "threshold"]
        assert t["class"].unique(maintain_order=True).to_list() == labels
        for label in labels:
            part, full = t.filter(pl.col("class") == label), report.curves[label][name]
            assert 2 <= part.height <= 1000 < len(full["x"])
            assert (part["x"][0], part["x"][-1]) == (full["x"][0], full["x"][-1])


def test_a_report_without_scores_has_no_curve_tables():
    report = mc.binary_report([0, 1, 1, 0], y_pred=[0, 1, 0, 0], n_boot=50)
    assert report.curves == {} and curve_tables(report) == {}


def test_a_class_named_like_a_curve_is_still_a_class():
    tables = curve_tables(multiclass(300, ["pr", "roc", "other"]))
    assert set(tables) == TABLES and set(tables["curves_roc.json"]["class"]) == {"pr", "roc", "other"}
