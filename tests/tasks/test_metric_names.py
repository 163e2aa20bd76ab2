"""tasks.metric_names.class_keyed: a period's metrics keep one MLflow key each, read back to the same class."""

from __future__ import annotations

import numpy as np
import pytest
from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, _validate_metric_name

from metrics_core import monitoring as mon
from metrics_core.monitoring.assess import assess_stats
from tasks.metric_names import class_keyed, mlflow_key, semantic_key
from tasks.store.keys import class_key

NAMES = ["面包", "牛奶", "啤酒", "café", "cafè", "tea/coffee", "tea_coffee", "x" * 300 + "a", "x" * 300 + "b",
         "labelled x", "x", "label_y", "y"]


def _stats(seed: int, n: int = 1_500) -> mon.PeriodStats:
    rng = np.random.default_rng(seed)
    k = len(NAMES)
    y = rng.integers(0, k, n)
    pred = np.where(rng.random(n) < 0.8, y, rng.integers(0, k, n))
    s = rng.random((n, k))
    s[np.arange(n), pred] += 2.0
    s /= s.sum(axis=1, keepdims=True)
    price = np.linspace(1, 9, k)[y] * np.exp(0.2 * rng.standard_normal(n))
    return mon.update("multiclass", np.asarray(NAMES, dtype=object), mon.Bins(), pred, label_idx=y, scores=s,
                      price=price)


def test_a_period_keeps_every_metric_under_its_own_valid_key():
    metrics = assess_stats(_stats(0), _stats(1)).metrics
    keyed, renamed = class_keyed(metrics)
    assert len(keyed) == len(metrics)  # before: 13 classes' metrics merged into fewer keys
    logged = [mlflow_key(k) for k in keyed]
    assert len(set(logged)) == len(logged)
    for name in logged:
        _validate_metric_name(name)
        assert len(name) <= MAX_ENTITY_KEY_LENGTH
    assert [semantic_key(name) for name in logged] == list(keyed)  # each logged name reads back to its metric
    for c in NAMES:  # the value of each class, under its key
        key = class_key(c)
        assert keyed[f"prevalence_label/{key}"] == metrics[f"prevalence_label/{c}"]
        assert keyed[f"p_adj/score_{key}"] == metrics[f"p_adj/score:{c}"]
    assert set(renamed.values()) >= {"tea/coffee", "x" * 300 + "a", "labelled x", "label_y"}
    assert all(renamed[k] == c for k, c in renamed.items() if not k.startswith("_"))


@pytest.mark.parametrize("metrics, escaped, cls, other", [
    # "5 prices/relative shift " + "labelled x" would read as the labelled shift of "x"
    ({"price_shift/labelled x": 0.1, "price_label_shift/x": 0.2}, "price_shift/", "labelled x", "price_label_shift/x"),
    # "p_adj/price:label_y" and "p_adj/price_label:y" both gave "p_adj/price_label_y"
    ({"p_adj/price:label_y": 0.3, "p_adj/price_label:y": 0.4}, "p_adj/price_", "label_y", "p_adj/price_label_y"),
])
def test_a_key_that_reads_as_another_metric_is_escaped(metrics, escaped, cls, other):
    keyed, renamed = class_keyed(metrics)
    key = class_key(cls, escape=True)
    assert key.startswith(f"_{cls} ") and renamed == {key: cls}
    first, second = metrics.values()
    assert keyed == {escaped + key: first, other: second}
    logged = [mlflow_key(k) for k in keyed]
    assert len(set(logged)) == 2 and [semantic_key(n) for n in logged] == list(keyed)


def test_every_fixed_metric_reads_back_from_the_key_the_store_writes():
    """The store logs :func:`safe_key` of each name: "9 input features/largest shift (reference SDs)" is
    written with "_" for its brackets, and read back as an unknown name before, so the parent's
    history lost the features' largest shift."""
    from tasks.metric_names import fixed
    from tasks.store.keys import safe_key

    assert {semantic_key(safe_key(name)): key for key, name in fixed().items()} == {k: k for k in fixed()}
