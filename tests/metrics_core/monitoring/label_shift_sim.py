"""Synthetic calibrated classifiers with a known truth: reference and period statistics under no shift,
covariate shift, label shift and an over-confident model, for the label-lag estimate's coverage tests."""

from __future__ import annotations

import numpy as np

from metrics_core.compute import binary_confusion_metrics, multiclass_confusion_metrics
from metrics_core.monitoring.bins import Bins
from metrics_core.monitoring.period import PeriodStats, update

#: The kinds of period simulated.
KINDS = ("stable", "covariate", "label", "overconfident")

#: Class priors of the reference: binary 30 % positive; five classes, unequal.
PRIORS = {"binary": np.array([0.7, 0.3]), "multiclass": np.array([0.35, 0.25, 0.2, 0.12, 0.08])}

#: Separation of the classes (the mean of a class's own feature).
SIGNAL = {"binary": 1.6, "multiclass": 1.9}

#: The multiclass label shift: log-prior tilt of +1 and -1 alternately.
TILT = np.array([1.0, -1.0, 1.0, -1.0, 1.0])


def _prior(task: str, kind: str) -> np.ndarray:
    p = PRIORS[task]
    if kind != "label":
        return p
    if task == "binary":  # positive odds x3
        odds = 3 * p[1] / p[0]
        return np.array([1 / (1 + odds), odds / (1 + odds)])
    q = p * np.exp(TILT)
    return q / q.sum()


def _rows(task: str, n: int, prior: np.ndarray, rng: np.random.Generator, temperature: float = 1.0):
    """Labels and scores: x | y ~ N(a e_y, I), scores the posterior under the reference's prior
    (calibrated there; a temperature > 1 makes them over-confident)."""
    k = prior.size
    y = rng.choice(k, size=n, p=prior)
    a = SIGNAL[task]
    x = rng.standard_normal((n, k))
    x[np.arange(n), y] += a
    logits = temperature * (a * x + np.log(PRIORS[task]))
    s = np.exp(logits - logits.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    return y, s


def _stats(task: str, y: np.ndarray, s: np.ndarray) -> PeriodStats:
    labels = np.arange(s.shape[1])
    if task == "binary":
        return update(task, labels, Bins(), (s[:, 1] >= 0.5).astype(int), label_idx=y, scores=s[:, 1:])
    return update(task, labels, Bins(), s.argmax(axis=1), label_idx=y, scores=s)


def simulate(task: str, kind: str, seed: int, n_ref: int = 20_000, n_cur: int = 5_000):
    """(reference, period) statistics of one seed, both labelled (the estimate ignores the period's
    labels; they give the truth).

    ``stable``: the same distribution; ``covariate``: rows of low top score kept more (P(y | x)
    unchanged); ``label``: the class priors changed (binary positive odds x3, multiclass log-prior
    tilt +/-1), x | y unchanged; ``overconfident``: a model with scores sharpened (temperature 2), stable."""
    rng = np.random.default_rng([seed, KINDS.index(kind), task == "binary"])
    temp = 2.0 if kind == "overconfident" else 1.0
    ref = _stats(task, *_rows(task, n_ref, PRIORS[task], rng, temp))
    if kind == "covariate":
        y, s = _rows(task, 4 * n_cur, PRIORS[task], rng, temp)
        keep = rng.random(y.size) < 1.0 - 0.8 * s.max(axis=1)
        y, s = y[keep][:n_cur], s[keep][:n_cur]
    else:
        y, s = _rows(task, n_cur, _prior(task, kind), rng, temp)
    return ref, _stats(task, y, s)


def realised(stats: PeriodStats) -> dict:
    """The period's metrics measured on its labels."""
    m = stats.performance.confusion.matrix
    return binary_confusion_metrics(m) if stats.task == "binary" else multiclass_confusion_metrics(m)[0]
