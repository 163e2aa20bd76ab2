"""The comparison of several models on the same test rows (ISO/IEC TS 4213 clause 7): every test, corrected together."""

from __future__ import annotations

from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

from metrics_core.significance.base import TestResult
from metrics_core.significance.bootstrap import paired_bootstrap
from metrics_core.significance.corrections import correct
from metrics_core.significance.groups import anova, kruskal_wallis
from metrics_core.significance.paired import corrected_resampled_t_test, mcnemar, paired_t_test

__all__ = ["FOLDS", "fold_metrics", "model_comparison"]

#: Disjoint folds of the test rows for the paired t-test, ANOVA and Kruskal-Wallis over folds.
FOLDS = 5


def _report(task: str, labels: Sequence, y, pred, beta: float):
    """The report of one model's predicted labels: binary (positive class ``labels[1]``) or multiclass."""
    from metrics_core.report import binary_report, multiclass_report  # the report imports the significance package

    if task == "binary":
        return binary_report(y, y_pred=pred, pos_label=labels[1], beta=beta)
    return multiclass_report(y, pred, labels=labels, beta=beta)


def fold_metrics(task: str, labels: Sequence, y, preds: Mapping[str, Any], metric: str, *, folds: int = FOLDS,
                 seed: int = 0, beta: float = 1.0) -> pl.DataFrame:
    """``metric`` of every model on ``folds`` seeded, disjoint folds of the test rows.

    Parameters
    ----------
    task : {"binary", "multiclass"}
        Binary reports take ``labels[1]`` as the positive class.
    labels : sequence
        The class list (binary: negative, positive).
    y : numpy.ndarray
        True labels of the test rows.
    preds : mapping of str to numpy.ndarray
        Model name -> predicted labels of the same rows.
    metric : str
        A key of the report's ``metrics``.
    folds : int
        Number of folds.
    seed : int
        Seed of the permutation that assigns the rows to folds.
    beta : float
        Beta of the F-beta metrics.

    Returns
    -------
    polars.DataFrame
        Long table, columns model, fold, ``metric``: one row per (model, fold), models in the
        order of ``preds``. Row i goes to fold ``permutation(n)[i] % folds``, so the folds differ
        in size by at most one row, and every model is scored on the same folds. A fold where the
        metric is undefined holds nan (with the report's warning).

    Examples
    --------
    >>> y = np.array(["a", "b"] * 5)
    >>> fold_metrics("multiclass", ["a", "b"], y, {"m": y}, "accuracy", folds=2)["accuracy"].to_list()
    [1.0, 1.0]
    """
    fold = np.random.default_rng(seed).permutation(len(y)) % folds
    rows = []
    for name, pred in preds.items():
        for f in range(folds):
            m = fold == f
            rows.append({"model": name, "fold": f, metric: _report(task, labels, y[m], pred[m], beta).metrics[metric]})
    return pl.DataFrame(rows)


def _pair_tests(task: str, labels: Sequence, y, preds: Mapping[str, Any], metric: str, folds: pl.DataFrame,
                alpha: float, n_boot: int, seed: int, beta: float) -> list[tuple[str, str, str, TestResult]]:
    """McNemar, the paired bootstrap of ``metric`` and the paired t-test over folds, for every pair of models."""
    kw = {"labels": labels} if task == "multiclass" else {"pos_label": labels[1]}
    tests = []
    for a, b in combinations(list(preds), 2):
        tests.append((a, b, "McNemar", mcnemar(y, preds[a], preds[b], alpha=alpha)))
        tests.append((a, b, f"paired bootstrap ({metric})",
                      paired_bootstrap(metric, y, preds[a], preds[b], n_boot=n_boot, seed=seed, task=task,
                                       kind="pred", alpha=alpha, beta=beta, **kw)))
        fa = folds.filter(pl.col("model") == a)[metric].to_numpy()
        fb = folds.filter(pl.col("model") == b)[metric].to_numpy()
        tests.append((a, b, f"paired t-test over {FOLDS} test folds", paired_t_test(fa, fb, alpha=alpha)))
    return tests


def _cv_tests(cv_scores: Mapping[str, Sequence[float]], n_train: int | None, n_test: int | None,
              alpha: float) -> list[tuple[str, str, str, TestResult]]:
    """For every pair of models' cross-validation scores: the corrected resampled t-test with the
    fold sizes, else the paired t-test."""
    tests = []
    for a, b in combinations(list(cv_scores), 2):
        if n_train and n_test:
            res = corrected_resampled_t_test(cv_scores[a], cv_scores[b], n_train, n_test, alpha=alpha)
        else:
            res = paired_t_test(cv_scores[a], cv_scores[b], alpha=alpha)
        tests.append((a, b, f"{res.test} (CV scores)", res))
    return tests


def _test_table(tests: list[tuple[str, str, str, TestResult]], correction: str, alpha: float) -> pl.DataFrame:
    """One row per test, the p-values corrected together."""
    corrected = correct([t.p_value for *_, t in tests], correction, alpha)
    adj, rej = corrected.p_adjusted, corrected.reject
    return pl.DataFrame([{"model_a": a, "model_b": b, "test": name, "statistic": float(t.statistic),
                          "p_value": float(t.p_value), "p_adjusted": float(adj[i]), "reject": bool(rej[i]),
                          "effect_size": float(t.effect_size), "effect_name": t.effect_name,
                          "ci_low": float(t.interval[0]) if t.interval else None,
                          "ci_high": float(t.interval[1]) if t.interval else None, "verdict": t.verdict}
                         for i, (a, b, name, t) in enumerate(tests)])


def model_comparison(task: str, labels: Sequence, y, preds: Mapping[str, Any], metric: str, *,
                     cv_scores: Mapping[str, Sequence[float]] | None = None, cv_n_train: int | None = None,
                     cv_n_test: int | None = None, alpha: float = 0.05, correction: str = "bh", n_boot: int = 1000,
                     seed: int = 0, beta: float = 1.0) -> dict:
    """Compare several models on the same test rows (ISO/IEC TS 4213 clause 7), all tests corrected together.

    Parameters
    ----------
    task : {"binary", "multiclass"}
        Binary reports take ``labels[1]`` as the positive class.
    labels : sequence
        The class list (binary: negative, positive).
    y : numpy.ndarray
        True labels of the shared test rows.
    preds : mapping of str to numpy.ndarray
        Model name -> predicted labels of the same rows (two or more models for pairwise tests).
    metric : str
        The compared metric, a key of the report's ``metrics`` computed from predicted labels.
    cv_scores : mapping of str to sequence of float, optional
        Model name -> the metric over the same cross-validation folds.
    cv_n_train, cv_n_test : int, optional
        Training and test rows of a CV fold; with both, the CV scores are compared by the
        corrected resampled t-test, else by the paired t-test.
    alpha : float
        Level of the corrected p-values.
    correction : {"bh", "holm", "bonferroni"}
        Multiple-testing correction (:func:`metrics_core.significance.correct`).
    n_boot, seed : int
        Replicates and seed of the paired bootstrap; ``seed`` also assigns the rows to folds.
    beta : float
        Beta of the F-beta metrics.

    Returns
    -------
    dict
        ``per_model`` (polars.DataFrame: model, ``metric``, accuracy, balanced_accuracy);
        ``tests`` (one row per test: model_a, model_b ("all" for the tests of 3+ models), test,
        statistic, p_value, p_adjusted, reject, effect_size, effect_name, ci_low, ci_high
        (None without an interval), verdict); ``folds`` (:func:`fold_metrics`, None without
        models); ``best`` (the model with the highest ``metric``, a nan metric counting as the
        lowest; ties: the first); ``metric``.

    Notes
    -----
    For every pair of models: McNemar's test of the discordant predictions
    (:func:`~metrics_core.significance.mcnemar`), the paired bootstrap of ``metric``
    (:func:`~metrics_core.significance.paired_bootstrap`) and the paired t-test of ``metric``
    over :data:`FOLDS` seeded disjoint folds of the test rows. For every pair of CV score lists:
    the corrected resampled t-test (Nadeau & Bengio 2003) or the paired t-test. With 3+ models,
    one-way ANOVA and Kruskal-Wallis over the fold values. Every p-value of the comparison is
    corrected together (``correction`` at ``alpha``); an undefined test (nan p-value, e.g. the
    fold t-test of two identical models) stays nan and is not rejected.

    Examples
    --------
    >>> y = np.array(["a", "b", "c"] * 20)
    >>> poor = np.where(np.arange(60) % 4 == 0, "a", y)  # every fourth row called "a"
    >>> out = model_comparison("multiclass", ["a", "b", "c"], y, {"good": y, "poor": poor}, "accuracy", n_boot=50)
    >>> out["best"], out["tests"]["test"].to_list()
    ('good', ['McNemar', 'paired bootstrap (accuracy)', 'paired t-test over 5 test folds'])
    """
    reports = {name: _report(task, labels, y, p, beta) for name, p in preds.items()}
    per_model = pl.DataFrame([{"model": n, **{k: r.metrics.get(k) for k in (metric, "accuracy", "balanced_accuracy")}}
                              for n, r in reports.items()])
    folds = fold_metrics(task, labels, y, preds, metric, seed=seed, beta=beta) if preds else None
    tests = _pair_tests(task, labels, y, preds, metric, folds, alpha, n_boot, seed, beta)
    if cv_scores:
        tests += _cv_tests(cv_scores, cv_n_train, cv_n_test, alpha)
    if len(preds) >= 3:
        groups = [folds.filter(pl.col("model") == n)[metric].to_numpy() for n in preds]
        tests.append(("all", "all", "ANOVA over folds", anova(*groups, alpha=alpha)))
        tests.append(("all", "all", "Kruskal-Wallis over folds", kruskal_wallis(*groups, alpha=alpha)))
    best = max(reports, key=lambda n: np.nan_to_num(reports[n].metrics.get(metric, np.nan), nan=-np.inf))
    return {"per_model": per_model, "tests": _test_table(tests, correction, alpha), "folds": folds, "best": best,
            "metric": metric}
