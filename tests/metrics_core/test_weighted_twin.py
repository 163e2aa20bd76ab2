"""The weighted twin (SPEC "Cost": every count-based metric weighted by expenditure), counted in the
same pass as the unweighted statistics, in memory, merged and streamed."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score

import metrics_core as mc
from metrics_core.dataset import Columns, scan_stats

RNG = np.random.default_rng(7)
N = 600
Y = RNG.integers(0, 2, N)
S = np.round(RNG.random(N), 3)
W = RNG.gamma(2.0, 3.0, N)
YC = RNG.integers(0, 4, N)
PC = np.where(RNG.random(N) < 0.6, YC, RNG.integers(0, 4, N))


def test_binary_twin_equals_sklearn_weighted_and_leaves_the_unweighted_report_alone():
    twin = mc.binary_from_stats(mc.binary_stats(Y, S, twin_weight=W)).metrics
    plain = mc.binary_report(Y, S).metrics
    pred = S >= 0.5
    assert twin["weighted/accuracy"] == pytest.approx(accuracy_score(Y, pred, sample_weight=W), rel=1e-12)
    assert twin["weighted/precision"] == pytest.approx(precision_score(Y, pred, sample_weight=W), rel=1e-12)
    assert twin["weighted/f1"] == pytest.approx(f1_score(Y, pred, sample_weight=W), rel=1e-12)
    assert {k: v for k, v in twin.items() if not k.startswith("weighted/")} == plain


def test_multiclass_twin_survives_a_merge_of_partitions():
    parts = [mc.multiclass_stats(YC[i:i + 150], PC[i:i + 150], labels=[0, 1, 2, 3], twin_weight=W[i:i + 150])
             for i in range(0, N, 150)]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    m = mc.multiclass_from_stats(merged).metrics
    assert m["weighted/f1_macro"] == pytest.approx(f1_score(YC, PC, average="macro", sample_weight=W), rel=1e-12)
    assert m["weighted/accuracy"] == pytest.approx(accuracy_score(YC, PC, sample_weight=W), rel=1e-12)


def test_streamed_twin_equals_in_memory(tmp_path):
    for i in range(3):
        sl = slice(i * 200, (i + 1) * 200)
        pl.DataFrame({"label": Y[sl], "score": S[sl], "weight": W[sl]}).write_parquet(tmp_path / f"part{i}.parquet")
    streamed = mc.binary_from_stats(scan_stats(tmp_path, "binary", Columns(), twin_weight="weight", batch_rows=70))
    memory = mc.binary_from_stats(mc.binary_stats(Y, S, twin_weight=W))
    for key in ("weighted/accuracy", "weighted/f1", "weighted/mcc", "weighted/tp"):
        assert streamed.metrics[key] == pytest.approx(memory.metrics[key], rel=1e-12)
