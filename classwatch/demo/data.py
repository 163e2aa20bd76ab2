"""Synthetic but realistic price-quote datasets (binary and multiclass) for the demo and the tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

ITEMS = ("bread", "milk", "cheese", "eggs", "butter", "apples", "bananas", "coffee", "tea", "wine",
         "beer", "rice", "pasta", "chicken", "beef", "fish", "yoghurt", "juice", "chocolate", "crisps")
MONTHS = 12


def class_names(k: int) -> list[str]:
    """``k`` item names (COICOP-like product classes); generic ``item_NN`` beyond the 20 built in.

    >>> class_names(3)
    ['bread', 'milk', 'cheese']
    """
    if k <= len(ITEMS):
        return list(ITEMS[:k])
    return [f"item_{i:02d}" for i in range(k)]


def _periods(rng: np.random.Generator, n: int, year: int = 2024) -> pl.Series:
    months = pl.Series([f"{year}-{m:02d}" for m in range(1, MONTHS + 1)])
    return months.gather(np.sort(rng.integers(0, MONTHS, n))).alias("period")


def _prices_and_weights(rng: np.random.Generator, log_price_mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prices (lognormal around the class's mean) and expenditure weights (price x quantity)."""
    n = log_price_mean.size
    price = np.round(np.exp(log_price_mean + 0.35 * rng.standard_normal(n)), 2)
    price = np.maximum(price, 0.05)
    quantity = np.exp(1.5 + 1.0 * rng.standard_normal(n))
    return price, np.round(price * quantity, 2)


def make_binary_demo(n: int = 200_000, seed: int = 0, *, prevalence: float = 0.12,
                     separation: float = 1.6) -> pl.DataFrame:
    """A binary price-quote dataset: is the quote in the target item class (label 1) or not (0)?

    The model signal is ``s ~ N(separation * label, 1)`` and the score is the posterior
    ``sigmoid(logit(prevalence) + separation * s - separation^2 / 2)`` slightly over-confident
    (logit scaled by 1.15), so the scores are calibrated-ish and AUROC is about
    ``Phi(separation / sqrt(2))`` (0.87 by default).

    Parameters
    ----------
    n : int
        Number of rows.
    seed : int
        Seed of numpy's default generator; the same seed gives the same frame.
    prevalence : float
        Expected share of label 1.
    separation : float
        Distance between the class means of the signal (in standard deviations).

    Returns
    -------
    polars.DataFrame
        Columns ``id`` (int64), ``label`` (int8, 0/1), ``score`` (float64 in (0, 1)), ``weight``
        (expenditure), ``price``, ``period`` ("YYYY-MM", 12 months).

    >>> df = make_binary_demo(1000, seed=1)
    >>> df.columns
    ['id', 'label', 'score', 'weight', 'price', 'period']
    """
    rng = np.random.default_rng(seed)
    label = (rng.random(n) < prevalence).astype(np.int8)
    signal = rng.standard_normal(n) + separation * label
    logit = np.log(prevalence / (1.0 - prevalence)) + separation * signal - separation**2 / 2.0
    score = 1.0 / (1.0 + np.exp(-1.15 * logit))
    price, weight = _prices_and_weights(rng, np.where(label == 1, 1.4, 1.0))
    return pl.DataFrame({
        "id": np.arange(n, dtype=np.int64),
        "label": label,
        "score": score,
        "weight": weight,
        "price": price,
        "period": _periods(rng, n),
    })


def make_multiclass_demo(n: int = 200_000, k: int = 10, seed: int = 0, *, strength: float = 2.4,
                         confusion: float = 1.0) -> pl.DataFrame:
    """A k-class price-quote dataset with unequal prevalence and a realistic, imperfect classifier.

    Class prevalence falls as ``1 / (j + 1)`` (the first class about 34 % for k = 10, the last
    about 3 %). Each row gets per-class logits ``N(0, 1) + strength * [class = label] + confusion *
    [class = next class]`` (the last class: the one before; neighbouring items are confused,
    as beer with wine), plus the log prior; the scores are their softmax, and ``prediction`` their argmax.

    Returns
    -------
    polars.DataFrame
        Columns ``id``, ``label`` (class name), ``score_<class>`` for every class (rows sum to 1),
        ``prediction``, ``weight`` (expenditure), ``price``, ``period``.

    >>> df = make_multiclass_demo(500, k=3, seed=2)
    >>> df.columns
    ['id', 'label', 'score_bread', 'score_milk', 'score_cheese', 'prediction', 'weight', 'price', 'period']
    """
    rng = np.random.default_rng(seed)
    names = class_names(k)
    prior = 1.0 / np.arange(1, k + 1)
    prior /= prior.sum()
    label = np.minimum(np.searchsorted(np.cumsum(prior), rng.random(n), side="right"), k - 1)
    rows = np.arange(n)
    logits = rng.standard_normal((n, k))
    logits[rows, label] += strength
    logits[rows, np.where(label < k - 1, label + 1, label - 1)] += confusion
    logits += np.log(prior)
    logits -= logits.max(axis=1, keepdims=True)
    scores = np.exp(logits)
    scores /= scores.sum(axis=1, keepdims=True)
    prediction = scores.argmax(axis=1)
    price, weight = _prices_and_weights(rng, np.linspace(0.2, 2.5, k)[label])
    name_series = pl.Series(names)
    columns = {"id": np.arange(n, dtype=np.int64), "label": name_series.gather(label)}
    columns.update({f"score_{name}": scores[:, j] for j, name in enumerate(names)})
    columns.update({"prediction": name_series.gather(prediction), "weight": weight, "price": price,
                    "period": _periods(rng, n)})
    return pl.DataFrame(columns)


def write_demo_data(out_dir, *, n: int = 200_000, k: int = 10, seed: int = 0) -> dict[str, Path]:
    """Write ``binary.parquet`` and ``multiclass.parquet`` into ``out_dir``; return their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"binary": out_dir / "binary.parquet", "multiclass": out_dir / "multiclass.parquet"}
    make_binary_demo(n, seed).write_parquet(paths["binary"])
    make_multiclass_demo(n, k, seed + 1).write_parquet(paths["multiclass"])
    return paths
