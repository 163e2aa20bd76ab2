"""A period's labelled sample: mergeable design statistics and its design-based and model-assisted estimates."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

__all__ = ["SampleStats", "sample_update", "design_confusion", "design_metric", "model_assisted_metric",
           "effective_sample_size", "next_sample"]


@dataclass(frozen=True)
class SampleStats:
    """Mergeable statistics of a period's labelled sample, keyed by (stratum, pred, bin, label), sparse.

    ``key`` (m, 4) sorted unique rows of (stratum, predicted class, score bin, label); per key
    ``rows`` labelled rows, ``dw`` the sum of design_weight * weight and ``dw2`` of its square;
    ``population`` (H, K, B) the sum of weight over every row of the period (labelled or not) and
    ``population_rows`` (H,) its rows per stratum. Merge: keys united, sums added.
    """

    strata: tuple[str, ...]
    n_classes: int
    n_bins: int
    key: np.ndarray
    rows: np.ndarray
    dw: np.ndarray
    dw2: np.ndarray
    population: np.ndarray
    population_rows: np.ndarray

    def merge(self, other: "SampleStats") -> "SampleStats":
        """The statistics of both parts (a ValueError when strata, classes or bins differ)."""
        if (self.strata, self.n_classes, self.n_bins) != (other.strata, other.n_classes, other.n_bins):
            raise ValueError("Cannot merge labelled-sample statistics with different strata, classes or bins.")
        key, rows, dw, dw2 = _sparse(np.concatenate([self.key, other.key]), np.concatenate([self.rows, other.rows]),
                                     np.concatenate([self.dw, other.dw]), np.concatenate([self.dw2, other.dw2]))
        return SampleStats(self.strata, self.n_classes, self.n_bins, key, rows, dw, dw2,
                           self.population + other.population, self.population_rows + other.population_rows)

    @property
    def n_labelled(self) -> int:
        """Labelled rows."""
        return int(self.rows.sum())


def _sparse(key: np.ndarray, rows: np.ndarray, dw: np.ndarray, dw2: np.ndarray):
    """Rows of equal key summed, keys sorted."""
    if key.shape[0] == 0:
        return key.reshape(0, 4).astype(np.int64), rows.astype(np.int64), dw.astype(float), dw2.astype(float)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.ravel()
    n = uniq.shape[0]
    return (uniq.astype(np.int64), np.bincount(inv, rows, n).astype(np.int64), np.bincount(inv, dw, n),
            np.bincount(inv, dw2, n))


def sample_update(stratum_idx, pred_idx, bin_idx, label_idx, design_weight=None, weight=None, *, strata,
                  n_classes: int, n_bins: int) -> SampleStats:
    """The :class:`SampleStats` of one batch (``label_idx`` -1: an unlabelled row; weights None: 1)."""
    h, k, b = len(strata), n_classes, n_bins
    s, p, bi, lab = (np.asarray(a, dtype=np.int64) for a in (stratum_idx, pred_idx, bin_idx, label_idx))
    w = np.ones(s.size) if weight is None else np.asarray(weight, dtype=np.float64)
    population = np.bincount((s * k + p) * b + bi, weights=w, minlength=h * k * b).reshape(h, k, b)
    on = lab >= 0
    dw = w[on] * (1.0 if design_weight is None else np.asarray(design_weight, dtype=np.float64)[on])
    key = np.column_stack([s[on], p[on], bi[on], lab[on]])
    key, rows, dws, dw2 = _sparse(key, np.ones(key.shape[0], np.int64), dw, dw * dw)
    return SampleStats(tuple(strata), k, b, key, rows, dws, dw2, population, np.bincount(s, minlength=h))


def _factors(sample: SampleStats, dw: np.ndarray) -> np.ndarray:
    """Per key, the post-stratification factor: the stratum's population over its weighted sample."""
    h = len(sample.strata)
    pop = sample.population.reshape(h, -1).sum(axis=1)
    got = np.bincount(sample.key[:, 0], weights=dw, minlength=h) if dw.ndim == 1 else \
        np.stack([np.bincount(sample.key[:, 0], weights=d, minlength=h) for d in dw])
    f = np.divide(pop, got, out=np.zeros_like(got, dtype=float), where=got > 0)
    return f[..., sample.key[:, 0]]


def _confusion(sample: SampleStats, dw: np.ndarray) -> np.ndarray:
    """Estimated totals (label x predicted) from key weights ``dw`` (a leading axis: replicates)."""
    k = sample.n_classes
    cell = sample.key[:, 3] * k + sample.key[:, 1]
    w = np.atleast_2d(dw * _factors(sample, dw))
    out = np.stack([np.bincount(cell, weights=r, minlength=k * k) for r in w]).reshape(-1, k, k)
    return out[0] if np.ndim(dw) == 1 else out


def design_confusion(sample: SampleStats) -> np.ndarray:
    """Estimated (K, K) confusion totals of the whole period (rows label, columns predicted)."""
    return _confusion(sample, sample.dw)


def _replicates(sample: SampleStats, n_boot: int, seed: int) -> np.ndarray:
    """Key weights of a stratified bootstrap of the labelled rows (n_boot, m)."""
    rng = np.random.default_rng(seed)
    out = np.zeros((n_boot, sample.rows.size))
    for h in np.unique(sample.key[:, 0]):
        at = np.flatnonzero(sample.key[:, 0] == h)
        n = int(sample.rows[at].sum())
        out[:, at] = rng.multinomial(n, sample.rows[at] / n, size=n_boot)
    return out * (sample.dw / np.maximum(sample.rows, 1))


def _metric(task: str | None, m: np.ndarray, metric: str, beta: float) -> np.ndarray:
    from metrics_core.compute import binary_confusion_metrics, multiclass_confusion_metrics

    if (task or ("binary" if m.shape[-1] == 2 else "multiclass")) == "binary":
        return np.asarray(binary_confusion_metrics(m, beta)[metric], dtype=float)
    return np.asarray(multiclass_confusion_metrics(m, beta)[0][metric], dtype=float)


def _interval(value: float, reps: np.ndarray, level: float) -> tuple[float, tuple[float, float]]:
    ok = reps[np.isfinite(reps)]
    if not ok.size or not np.isfinite(value):
        return float(value), (np.nan, np.nan)
    a = (1 - level) / 2
    return float(value), (float(np.quantile(ok, a)), float(np.quantile(ok, 1 - a)))


def design_metric(sample: SampleStats, metric: str, *, task: str | None = None, beta: float = 1.0,
                  level: float = 0.95, n_boot: int = 200, seed: int = 0) -> tuple[float, tuple[float, float]]:
    """A confusion metric of the whole period from the labelled sample, with a stratified-bootstrap interval."""
    value = _metric(task, design_confusion(sample), metric, beta)
    return _interval(float(value), _metric(task, _confusion(sample, _replicates(sample, n_boot, seed)), metric, beta),
                     level)


def model_assisted_metric(sample: SampleStats, conditional: np.ndarray, metric: str, *, task: str | None = None,
                          beta: float = 1.0, level: float = 0.95, n_boot: int = 200, seed: int = 0
                          ) -> tuple[float, tuple[float, float]]:
    """The difference estimator: predicted confusion of every row (``conditional`` (K, B, K): P(label |
    predicted, bin)) plus the design-weighted residuals of the sample."""
    k = sample.n_classes
    predicted = np.einsum("hkb,kbl->lk", sample.population, conditional)
    p, b, lab = sample.key[:, 1], sample.key[:, 2], sample.key[:, 3]
    resid_w = -conditional[p, b]  # (m, K): minus the predicted label probabilities, plus one at the label
    resid_w[np.arange(p.size), lab] += 1.0

    def total(dw):
        w = np.atleast_2d(dw * _factors(sample, dw))
        out = np.stack([np.stack([np.bincount(p, weights=r * resid_w[:, lbl], minlength=k) for lbl in range(k)])
                        for r in w])
        return predicted + (out[0] if np.ndim(dw) == 1 else out)

    value = _metric(task, total(sample.dw), metric, beta)
    return _interval(float(value), _metric(task, total(_replicates(sample, n_boot, seed)), metric, beta), level)


def effective_sample_size(sample: SampleStats) -> float:
    """Kish's effective sample size of the labelled rows: (sum w)^2 / sum w^2 (nan without rows)."""
    s2 = float(sample.dw2.sum())
    return float(sample.dw.sum()) ** 2 / s2 if s2 > 0 else float("nan")


def next_sample(sample: SampleStats, metric: str = "accuracy", margin: float = 0.02, *, level: float = 0.95
                ) -> np.ndarray:
    """Rows to label per stratum for a ``margin`` half-width: Neyman allocation on the strata's error rates."""
    h = len(sample.strata)
    right = sample.key[:, 1] == sample.key[:, 3]
    n_h = np.bincount(sample.key[:, 0], weights=sample.dw, minlength=h)
    ok_h = np.bincount(sample.key[:, 0], weights=sample.dw * right, minlength=h)
    rows_h = np.bincount(sample.key[:, 0], weights=sample.rows, minlength=h)
    p = (ok_h / np.where(n_h > 0, n_h, 1) * rows_h + 1) / (rows_h + 2)
    s = np.sqrt(p * (1 - p))
    pop = sample.population_rows.astype(float)
    big_n = pop.sum()
    if big_n == 0:
        return np.zeros(h, np.int64)
    w = pop / big_n
    v = (margin / float(norm.isf((1 - level) / 2))) ** 2
    n = (w * s).sum() ** 2 / (v + (w * s * s).sum() / big_n)
    alloc = np.ceil(n * w * s / max((w * s).sum(), 1e-12))
    return np.minimum(alloc, pop).astype(np.int64)
