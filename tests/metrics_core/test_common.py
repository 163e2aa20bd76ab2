"""Registry of report keys with their scikit-learn oracle and properties; invariance tests over all keys.

The registry (``REGISTRY``) is the single place where each catalogue key of SPEC ("Metric catalogue")
is tied to its oracle: a scikit-learn call with ``zero_division=np.nan`` where it applies, scipy for
``kl_divergence``, and a short numpy formula where neither has the metric (cost, CSMF). Where SPEC's
"Edge-case conventions" differ from scikit-learn, the oracle applies SPEC's convention and says so.
The oracle test files (test_oracle_binary, test_oracle_multiclass, test_multilabel) import it; the
tests here check that every key the reports emit is registered and run invariance tests over all keys
(row order, weights of ones, integer weights vs repeated rows, zero weights vs dropped rows, label
permutation, string vs integer labels, numpy / list / polars / pyarrow inputs).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from functools import cache, cached_property
from typing import Any, Callable

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

import metrics_core as mc

RTOL, ATOL = 1e-9, 1e-12
NAN = float("nan")


# --------------------------------------------------------------------------------------------------
# comparison helpers
# --------------------------------------------------------------------------------------------------
def close(a, b, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """math.isclose with nan == nan and inf == inf (same sign)."""
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)


def assert_close(got, expected, what: str = "", rtol: float = RTOL, atol: float = ATOL) -> None:
    assert close(got, expected, rtol, atol), f"{what}: got {got!r}, expected {expected!r}"


def mismatches(report_metrics: dict, case: "Case", keys) -> list[str]:
    """Every registered key whose report value differs from its oracle, as readable lines."""
    bad = []
    for key in keys:
        expected = key.oracle(case)
        got = report_metrics[key.name]
        if not close(got, expected):
            bad.append(f"{key.name}: got {got!r}, oracle {expected!r}" + (f" [{key.note}]" if key.note else ""))
    return bad


def quiet(fn: Callable) -> Callable:
    """Run an oracle with scikit-learn's UndefinedMetric/Runtime warnings silenced."""
    def wrapped(case):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(fn(case))
    return wrapped


# --------------------------------------------------------------------------------------------------
# a test case: the arguments of one report call, with the derived arrays the oracles need
# --------------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Case:
    """One report call. ``labels`` is the class list (binary: ``(negative, positive)``)."""

    task: str  # "binary" | "multiclass" | "multilabel"
    y_true: Any
    y_pred: Any = None
    y_score: Any = None
    labels: tuple = ()
    sample_weight: Any = None
    threshold: float = 0.5
    beta: float = 1.0
    cost_matrix: Any = None
    pass_labels: bool = True  # multiclass: pass labels= to the report

    # -- report --------------------------------------------------------------------------------
    def kwargs(self) -> dict:
        kw: dict = {}
        if self.cost_matrix is not None:
            kw["cost_matrix"] = self.cost_matrix
        if self.task == "binary":
            kw.update(y_score=self.y_score, y_pred=self.y_pred, threshold=self.threshold, beta=self.beta,
                      pos_label=self.labels[1], sample_weight=self.sample_weight)
        elif self.task == "multiclass":
            kw.update(y_pred=self.y_pred, y_score=self.y_score, beta=self.beta, sample_weight=self.sample_weight,
                      labels=list(self.labels) if self.pass_labels else None)
        return kw

    def report(self):
        if self.task == "binary":
            return mc.binary_report(self.y_true, **self.kwargs())
        if self.task == "multiclass":
            return mc.multiclass_report(self.y_true, **self.kwargs())
        return mc.multilabel_report(self.y_true, self.y_pred)

    # -- derived arrays for the oracles (always numpy) ----------------------------------------------
    @cached_property
    def yt(self) -> np.ndarray:
        return np.asarray(self.y_true)

    @cached_property
    def w(self) -> np.ndarray | None:
        return None if self.sample_weight is None else np.asarray(self.sample_weight, dtype=np.float64)

    @cached_property
    def weight(self) -> np.ndarray:
        return np.ones(len(self.yt)) if self.w is None else self.w

    @cached_property
    def score(self) -> np.ndarray | None:
        return None if self.y_score is None else np.asarray(self.y_score, dtype=np.float64)

    @cached_property
    def pred(self) -> np.ndarray:
        """Predicted labels as the report decides them (SPEC: score >= threshold; argmax over labels)."""
        if self.y_pred is not None:
            return np.asarray(self.y_pred)
        labels = np.asarray(self.labels)
        if self.task == "binary":
            return np.where(self.score >= self.threshold, labels[1], labels[0])
        return labels[np.argmax(self.score, axis=1)]  # first column on ties, as the report documents

    @cached_property
    def y01(self) -> np.ndarray:
        return (self.yt == self.labels[1]).astype(int)

    @cached_property
    def p01(self) -> np.ndarray:
        return (self.pred == self.labels[1]).astype(int)

    @cached_property
    def label_index(self) -> dict:
        return {lab: i for i, lab in enumerate(self.labels)}

    @cached_property
    def ti(self) -> np.ndarray:
        return np.array([self.label_index[v] for v in self.yt.tolist()], dtype=np.int64)

    @cached_property
    def pi(self) -> np.ndarray:
        return np.array([self.label_index[v] for v in self.pred.tolist()], dtype=np.int64)

    @cached_property
    def probabilities(self) -> bool:
        return self.score is not None and bool(self.score.min() >= 0 and self.score.max() <= 1)


# --------------------------------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Key:
    """A report key: its oracle, what it needs (``score``, ``cost``) and SPEC notes."""

    name: str
    task: str
    oracle: Callable[[Case], float]
    needs: frozenset = frozenset()
    note: str = ""  # where SPEC's convention differs from scikit-learn
    swap: str | None = None  # binary: the key it becomes when the positive class is swapped

    def applies(self, case: Case) -> bool:
        return ("score" not in self.needs or case.y_score is not None) and \
               ("cost" not in self.needs or case.cost_matrix is not None)


def _harmonic(p: float, r: float, beta: float = 1.0) -> float:
    """F-beta of a given precision and recall; nan when either is nan or both are 0."""
    if math.isnan(p) or math.isnan(r) or (beta * beta * p + r) == 0:
        return NAN
    return (1 + beta * beta) * p * r / (beta * beta * p + r)


def _present(values: np.ndarray, weight: np.ndarray) -> int:
    """Number of distinct values carrying positive weight."""
    return np.unique(values[weight > 0]).size


def _cost(case: Case) -> float:
    """Sum over rows of weight * C[actual, predicted] (lecture slides' C(P|A), SPEC's C[actual, predicted])."""
    c = np.asarray(case.cost_matrix, dtype=np.float64)
    if case.task == "binary":
        return float((case.weight * c[case.y01, case.p01]).sum())
    return float((case.weight * c[case.ti, case.pi]).sum())


def _distributions(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """Labelled (p) and predicted (q) class distributions over the class list, weighted."""
    if case.task == "binary":
        t, p = case.y01, case.p01
        k = 2
    else:
        t, p = case.ti, case.pi
        k = len(case.labels)
    pt = np.bincount(t, weights=case.weight, minlength=k)
    pp = np.bincount(p, weights=case.weight, minlength=k)
    return pt / pt.sum(), pp / pp.sum()


def _kl(case: Case) -> float:
    # scipy.stats.entropy(p, q) = sum p log(p / q) in nats; inf when q = 0 < p (SPEC "Curves").
    p, q = _distributions(case)
    return scipy.stats.entropy(p, q)


def _csmf(case: Case) -> float:
    # ISO 4213 Annex D: 1 - sum|p - q| / (2 (1 - min p)); no library has it, so the formula itself.
    p, q = _distributions(case)
    return 1.0 - np.abs(p - q).sum() / (2.0 * (1.0 - p.min()))


# -- binary -----------------------------------------------------------------------------------------
def _cm2(c: Case) -> np.ndarray:
    return memo(c, "cm2", lambda: skm.confusion_matrix(c.y01, c.p01, labels=[0, 1], sample_weight=c.w))


def _mcc(y, p, c: Case) -> float:
    # SPEC "Edge-case conventions": MCC is nan when its denominator is 0 (a constant label or prediction
    # column); scikit-learn returns 0 there.
    if _present(y, c.weight) < 2 or _present(p, c.weight) < 2:
        return NAN
    return skm.matthews_corrcoef(y, p, sample_weight=c.w)


def _no_positive(c: Case) -> bool:
    return float(c.weight[c.y01 == 1].sum()) == 0.0


def _average_precision(c: Case) -> float:
    # SPEC: average precision is nan with no positives; scikit-learn returns 0 there.
    return NAN if _no_positive(c) else skm.average_precision_score(c.y01, c.score, sample_weight=c.w)


def _auprc_trapezoid(c: Case) -> float:
    # Trapezoid rule over scikit-learn's PR points (which start at recall 0, precision 1); nan with no
    # positives, like average precision (recall is undefined there).
    if _no_positive(c):
        return NAN
    precision, recall, _ = skm.precision_recall_curve(c.y01, c.score, sample_weight=c.w)
    return skm.auc(recall, precision)


def _log_loss_binary(c: Case) -> float:
    # SPEC "Bad input": scores outside [0, 1] are valid for ranking but log_loss/brier are nan.
    if not c.probabilities:
        return NAN
    return skm.log_loss(c.y01, c.score, labels=[0, 1], sample_weight=c.w)


def _brier(c: Case) -> float:
    if not c.probabilities:
        return NAN
    return skm.brier_score_loss(c.y01, c.score, labels=[0, 1], pos_label=1, sample_weight=c.w)


def _one_minus(x: float) -> float:
    return 1.0 - x  # nan stays nan


_B = [
    ("n", lambda c: c.weight.sum(), {}),
    ("tp", lambda c: _cm2(c)[1, 1], {"swap": "tn"}),
    ("fp", lambda c: _cm2(c)[0, 1], {"swap": "fn"}),
    ("fn", lambda c: _cm2(c)[1, 0], {"swap": "fp"}),
    ("tn", lambda c: _cm2(c)[0, 0], {"swap": "tp"}),
    ("prevalence", lambda c: np.average(c.y01, weights=c.weight), {}),
    ("accuracy", lambda c: skm.accuracy_score(c.y01, c.p01, sample_weight=c.w), {"swap": "accuracy"}),
    ("error_rate", lambda c: skm.zero_one_loss(c.y01, c.p01, sample_weight=c.w), {"swap": "error_rate"}),
    ("precision", lambda c: skm.precision_score(c.y01, c.p01, zero_division=np.nan, sample_weight=c.w),
     {"swap": "npv"}),
    ("recall", lambda c: skm.recall_score(c.y01, c.p01, zero_division=np.nan, sample_weight=c.w),
     {"swap": "specificity"}),
    ("specificity", lambda c: skm.recall_score(c.y01, c.p01, pos_label=0, zero_division=np.nan,
                                               sample_weight=c.w), {"swap": "recall"}),
    ("fpr", lambda c: _one_minus(skm.recall_score(c.y01, c.p01, pos_label=0, zero_division=np.nan,
                                                  sample_weight=c.w)), {"swap": "fnr"}),
    ("fnr", lambda c: _one_minus(skm.recall_score(c.y01, c.p01, zero_division=np.nan, sample_weight=c.w)),
     {"swap": "fpr"}),
    ("npv", lambda c: skm.precision_score(c.y01, c.p01, pos_label=0, zero_division=np.nan, sample_weight=c.w),
     {"swap": "precision"}),
    # SPEC: F is nan only when tp + fp + fn = 0; scikit-learn with zero_division=nan agrees.
    ("f1", lambda c: skm.f1_score(c.y01, c.p01, zero_division=np.nan, sample_weight=c.w), {}),
    ("fbeta", lambda c: skm.fbeta_score(c.y01, c.p01, beta=c.beta, zero_division=np.nan, sample_weight=c.w), {}),
    ("balanced_accuracy", lambda c: skm.balanced_accuracy_score(c.y01, c.p01, sample_weight=c.w),
     {"swap": "balanced_accuracy"}),
    ("mcc", lambda c: _mcc(c.y01, c.p01, c), {"swap": "mcc", "note": "SPEC: nan where sklearn gives 0"}),
    # scikit-learn 1.9's cohen_kappa_score already returns nan (replace_undefined_by=nan) when p_e = 1.
    ("cohen_kappa", lambda c: skm.cohen_kappa_score(c.y01, c.p01, labels=[0, 1], sample_weight=c.w),
     {"swap": "cohen_kappa"}),
    ("kl_divergence", _kl, {"swap": "kl_divergence"}),
    ("auroc", lambda c: skm.roc_auc_score(c.y01, c.score, sample_weight=c.w), {"needs": {"score"}}),
    ("average_precision", _average_precision, {"needs": {"score"}, "note": "SPEC: nan with no positives"}),
    ("auprc_trapezoid", _auprc_trapezoid, {"needs": {"score"}}),
    ("log_loss", _log_loss_binary, {"needs": {"score"}}),
    ("brier", _brier, {"needs": {"score"}}),
    ("total_cost", _cost, {"needs": {"cost"}}),
    ("mean_cost", lambda c: _cost(c) / c.weight.sum(), {"needs": {"cost"}}),
]


# -- multiclass -------------------------------------------------------------------------------------
def memo(c: Case, key, compute: Callable):
    """Cache an oracle's scikit-learn call on the case (several keys share one call)."""
    store = c.__dict__.setdefault("_memo", {})
    if key not in store:
        store[key] = compute()
    return store[key]


def _prfs(c: Case, average, beta: float = 1.0):
    return memo(c, ("prfs", average, beta), lambda: skm.precision_recall_fscore_support(
        c.yt, c.pred, labels=list(c.labels), average=average, beta=beta, zero_division=np.nan, sample_weight=c.w))


def _averaged(c: Case, metric: str, average: str) -> float:
    i = ("precision", "recall", "f1", "fbeta").index(metric)
    beta = c.beta if metric == "fbeta" else 1.0
    if average == "weighted":
        # scikit-learn's weighted average skips nan classes, but when every class left has support 0 it
        # falls back to their UNweighted mean (e.g. precision 0 of a class nobody has). SPEC: undefined
        # is nan, never a number made up from zero weights -> nan there.
        per = np.asarray(_prfs(c, None, beta)[min(i, 2)], dtype=np.float64)
        support = np.bincount(c.ti, weights=c.weight, minlength=len(c.labels))
        ok = ~np.isnan(per)
        if not ok.any() or support[ok].sum() == 0:
            return NAN
    return _prfs(c, average, beta)[min(i, 2)]


def _n_undefined(c: Case, metric: str) -> float:
    i = ("precision", "recall", "f1", "fbeta").index(metric)
    beta = c.beta if metric == "fbeta" else 1.0
    return float(np.isnan(np.asarray(_prfs(c, None, beta)[min(i, 2)], dtype=np.float64)).sum())


def _of_average(c: Case, average: str, beta: float) -> float:
    # ONS Annex C / Zhou: F as the harmonic mean of the AVERAGED precision and recall.
    return _harmonic(_averaged(c, "precision", average), _averaged(c, "recall", average), beta)


def _balanced_accuracy_micro(c: Case) -> float:
    # ONS Annex C: mean of micro TPR and micro TNR over the summed one-vs-rest tables.
    mcm = skm.multilabel_confusion_matrix(c.yt, c.pred, labels=list(c.labels), sample_weight=c.w).sum(axis=0)
    (tn, fp), (fn, tp) = mcm
    return (tp / (tp + fn) + tn / (tn + fp)) / 2.0


def per_class_auroc(c: Case) -> np.ndarray:
    """scikit-learn's binary roc_auc_score of each class against the rest (nan when undefined)."""
    return memo(c, "auroc", lambda: _per_class_auroc(c))


def _per_class_auroc(c: Case) -> np.ndarray:
    out = []
    for j, lab in enumerate(c.labels):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(skm.roc_auc_score((c.yt == lab).astype(int), c.score[:, j], sample_weight=c.w))
    return np.asarray(out, dtype=np.float64)


def _auroc_ovr(c: Case, weighted: bool) -> float:
    # SPEC: macro averages skip undefined classes (a class absent from y_true); scikit-learn's
    # roc_auc_score(multi_class="ovr") returns nan for the whole average there. So: its binary AUROC per
    # class, averaged over the defined classes (support-weighted for "weighted", as sklearn weights).
    a = per_class_auroc(c)
    ok = ~np.isnan(a)
    if not ok.any():
        return NAN
    w = np.bincount(c.ti, weights=c.weight, minlength=len(c.labels)) if weighted else np.ones(a.size)
    return float((a[ok] * w[ok]).sum() / w[ok].sum())


def _log_loss_multiclass(c: Case) -> float:
    if not c.probabilities:
        return NAN  # SPEC: nan (with a warning) for scores outside [0, 1]
    return skm.log_loss(c.yt, c.score, labels=list(c.labels), sample_weight=c.w)


_M = [
    ("n", lambda c: c.weight.sum(), {}),
    ("accuracy", lambda c: skm.accuracy_score(c.yt, c.pred, sample_weight=c.w), {}),
    ("error_rate", lambda c: skm.zero_one_loss(c.yt, c.pred, sample_weight=c.w), {}),
    ("balanced_accuracy", lambda c: skm.balanced_accuracy_score(c.yt, c.pred, sample_weight=c.w), {}),
    ("cohen_kappa", lambda c: skm.cohen_kappa_score(c.yt, c.pred, labels=list(c.labels), sample_weight=c.w), {}),
    ("mcc", lambda c: _mcc(c.yt, c.pred, c), {"note": "SPEC: nan where sklearn gives 0"}),
    ("kl_divergence", _kl, {}),
    ("csmf_accuracy", _csmf, {}),
    ("cccsmf_accuracy", lambda c: (_csmf(c) - (1 - math.exp(-1))) / math.exp(-1), {}),
    *[(f"{m}_{avg}", (lambda m, avg: lambda c: _averaged(c, m, avg))(m, avg), {})
      for m in ("precision", "recall", "f1", "fbeta") for avg in ("micro", "macro", "weighted")],
    *[(f"n_undefined_{m}", (lambda m: lambda c: _n_undefined(c, m))(m), {})
      for m in ("precision", "recall", "f1", "fbeta")],
    ("f1_of_macro", lambda c: _of_average(c, "macro", 1.0), {}),
    ("fbeta_of_macro", lambda c: _of_average(c, "macro", c.beta), {}),
    ("fbeta_of_weighted", lambda c: _of_average(c, "weighted", c.beta), {}),
    ("balanced_accuracy_micro", _balanced_accuracy_micro, {}),
    ("auroc_ovr_macro", lambda c: _auroc_ovr(c, False), {"needs": {"score"}}),
    ("auroc_ovr_weighted", lambda c: _auroc_ovr(c, True), {"needs": {"score"}}),
    ("n_undefined_auroc", lambda c: np.isnan(per_class_auroc(c)).sum(), {"needs": {"score"}}),
    ("log_loss", _log_loss_multiclass, {"needs": {"score"}}),
    ("total_cost", _cost, {"needs": {"cost"}}),
    ("mean_cost", lambda c: _cost(c) / c.weight.sum(), {"needs": {"cost"}}),
]


# -- multilabel -------------------------------------------------------------------------------------
def _defined_rows(c: Case, metric: str) -> np.ndarray:
    t, p = np.asarray(c.y_true, bool), np.asarray(c.y_pred, bool)
    return {"precision": p.any(1), "recall": t.any(1), "jaccard": (t | p).any(1), "f1": (t | p).any(1)}[metric]


def _samples(c: Case, metric: str) -> float:
    # SPEC: sample-averaged metrics skip the rows where they are undefined. scikit-learn with
    # zero_division=nan skips them too for precision/recall/F1; jaccard_score has no nan option, so it
    # is evaluated on the defined rows only (the same thing).
    t, p = np.asarray(c.y_true), np.asarray(c.y_pred)
    if metric == "jaccard":
        ok = _defined_rows(c, "jaccard")
        return skm.jaccard_score(t[ok], p[ok], average="samples") if ok.any() else NAN
    fn = {"precision": skm.precision_score, "recall": skm.recall_score, "f1": skm.f1_score}[metric]
    return fn(t, p, average="samples", zero_division=np.nan)


def _ml_average(c: Case, metric: str, average) -> Any:
    fn = {"precision": skm.precision_score, "recall": skm.recall_score, "f1": skm.f1_score}[metric]
    return fn(np.asarray(c.y_true), np.asarray(c.y_pred), average=average, zero_division=np.nan)


_L = [
    ("n", lambda c: len(c.yt), {}),
    ("hamming_loss", lambda c: skm.hamming_loss(np.asarray(c.y_true), np.asarray(c.y_pred)), {}),
    ("exact_match_ratio", lambda c: skm.accuracy_score(np.asarray(c.y_true), np.asarray(c.y_pred)), {}),
    *[(f"{m}_samples", (lambda m: lambda c: _samples(c, m))(m), {"note": "SPEC: undefined rows skipped"})
      for m in ("jaccard", "precision", "recall", "f1")],
    *[(f"n_undefined_samples_{m}", (lambda m: lambda c: (~_defined_rows(c, m)).sum())(m), {})
      for m in ("jaccard", "precision", "recall", "f1")],
    *[(f"{m}_{avg}", (lambda m, avg: lambda c: _ml_average(c, m, avg))(m, avg), {})
      for m in ("precision", "recall", "f1") for avg in ("micro", "macro")],
    *[(f"n_undefined_{m}", (lambda m: lambda c: np.isnan(np.asarray(_ml_average(c, m, None), float)).sum())(m), {})
      for m in ("precision", "recall", "f1")],
]


def _build(task: str, rows) -> list[Key]:
    out = []
    for name, fn, props in rows:
        out.append(Key(name, task, quiet(fn), frozenset(props.get("needs", ())), props.get("note", ""),
                       props.get("swap")))
    return out


REGISTRY: dict[str, list[Key]] = {"binary": _build("binary", _B), "multiclass": _build("multiclass", _M),
                                  "multilabel": _build("multilabel", _L)}


def keys_for(case: Case) -> list[Key]:
    return [k for k in REGISTRY[case.task] if k.applies(case)]


# SPEC "Metric catalogue" (keys fixed by the contract).
CATALOGUE = {
    "binary": "n tp fp fn tn prevalence accuracy error_rate precision recall specificity fpr fnr npv f1 fbeta "
              "balanced_accuracy mcc cohen_kappa auroc average_precision auprc_trapezoid log_loss brier "
              "kl_divergence total_cost mean_cost",
    "multiclass": "n accuracy error_rate balanced_accuracy cohen_kappa mcc kl_divergence csmf_accuracy "
                  "cccsmf_accuracy precision_micro precision_macro precision_weighted recall_micro recall_macro "
                  "recall_weighted f1_micro f1_macro f1_weighted fbeta_micro fbeta_macro fbeta_weighted "
                  "f1_of_macro fbeta_of_macro fbeta_of_weighted balanced_accuracy_micro auroc_ovr_macro "
                  "auroc_ovr_weighted log_loss total_cost mean_cost",
    "multilabel": "hamming_loss exact_match_ratio jaccard_samples precision_samples recall_samples f1_samples "
                  "precision_micro recall_micro f1_micro precision_macro recall_macro f1_macro",
}
PER_CLASS_COLUMNS = "class support prevalence precision recall specificity f1 fbeta auroc".split()


# --------------------------------------------------------------------------------------------------
# fixed cases for the invariance tests (seeded, small, with ties, undefined classes and weights)
# --------------------------------------------------------------------------------------------------
def _binary_case(seed: int = 1, n: int = 60) -> Case:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.clip(np.round(0.35 * y + rng.uniform(0, 0.65, n), 1), 0, 1)  # 1 decimal: heavy ties
    pred = np.where(rng.uniform(size=n) < 0.8, y, 1 - y)
    return Case("binary", y, y_pred=None, y_score=score, labels=(0, 1), threshold=0.5, beta=2.0,
                cost_matrix=np.array([[0.0, 20.0], [200.0, -1.0]])) if seed % 2 else \
        Case("binary", y, y_pred=pred, y_score=score, labels=(0, 1), beta=0.5,
             cost_matrix=np.array([[0.0, 1.0], [5.0, 0.0]]))


def _multiclass_case(seed: int = 3, n: int = 80, k: int = 4, with_scores: bool = True) -> Case:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k - 1, n)  # class k-1 never labelled: undefined recall, skipped by macro averages
    raw = rng.integers(0, 4, (n, k)).astype(float) + 0.5
    raw[np.arange(n), y] += rng.integers(0, 4, n)
    score = raw / raw.sum(axis=1, keepdims=True)
    pred = np.argmax(score, axis=1)
    pred[pred == 1] = 2  # class 1 never predicted: undefined precision
    cost = rng.integers(0, 5, (k, k)).astype(float)
    return Case("multiclass", y, y_pred=pred, y_score=score if with_scores else None, labels=tuple(range(k)),
                beta=0.5, cost_matrix=cost)


def _multilabel_case(seed: int = 5, n: int = 40, n_labels: int = 4) -> Case:
    rng = np.random.default_rng(seed)
    t = (rng.uniform(size=(n, n_labels)) < 0.35).astype(int)
    p = np.where(rng.uniform(size=(n, n_labels)) < 0.75, t, 1 - t)
    t[:3] = 0
    p[1:4] = 0  # rows with empty true and/or predicted sets
    p[:, -1] = 0  # a label never predicted
    return Case("multilabel", t, y_pred=p)


BASE = {
    "binary_score": _binary_case(1),
    "binary_pred_and_score": _binary_case(2),
    "multiclass_score": _multiclass_case(3),
    "multiclass_pred": _multiclass_case(4, with_scores=False),
    "multilabel": _multilabel_case(5),
}


# --------------------------------------------------------------------------------------------------
# transformations: each returns (case_a, case_b) whose reports must agree key by key
# --------------------------------------------------------------------------------------------------
def _take(case: Case, idx: np.ndarray, **changes) -> Case:
    def sub(x):
        return None if x is None else np.asarray(x)[idx]
    changes.setdefault("sample_weight", sub(case.sample_weight))
    return replace(case, y_true=sub(case.y_true), y_pred=sub(case.y_pred), y_score=sub(case.y_score), **changes)


def _weights(case: Case, seed: int, low: int = 1, high: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).integers(low, high, len(case.yt)).astype(float)


def t_row_order(case: Case):
    idx = np.random.default_rng(11).permutation(len(case.yt))
    weighted = case if case.task == "multilabel" else replace(case, sample_weight=_weights(case, 12))
    return weighted, _take(weighted, idx)


def t_unit_weights(case: Case):
    return case, replace(case, sample_weight=np.ones(len(case.yt)))


def t_repeat_rows(case: Case):
    w = _weights(case, 13)
    return replace(case, sample_weight=w), _take(case, np.repeat(np.arange(len(w)), w.astype(int)))


def t_zero_weights(case: Case):
    w = _weights(case, 14, 0, 3)
    keep = np.flatnonzero(w > 0)
    return replace(case, sample_weight=w), _take(case, keep, sample_weight=w[keep])


def t_label_permutation(case: Case):
    """Multiclass: the class list in another order, score columns and cost matrix permuted alike (the
    cases give y_pred, so argmax ties cannot change the prediction); multilabel: the label columns."""
    if case.task == "multilabel":
        perm = np.random.default_rng(15).permutation(np.asarray(case.y_true).shape[1])
        return case, replace(case, y_true=np.asarray(case.y_true)[:, perm], y_pred=np.asarray(case.y_pred)[:, perm])
    k = len(case.labels)
    perm = np.random.default_rng(15).permutation(k)
    labels = tuple(np.asarray(case.labels)[perm].tolist())
    score = None if case.y_score is None else np.asarray(case.y_score)[:, perm]
    cost = None if case.cost_matrix is None else np.asarray(case.cost_matrix)[np.ix_(perm, perm)]
    return case, replace(case, labels=labels, y_score=score, cost_matrix=cost)


def _as_strings(x, names):
    return None if x is None else np.asarray([names[v] for v in np.asarray(x).tolist()])


def t_string_labels(case: Case):
    """Integer labels as strings of the same sort order; multiclass infers the classes from the data."""
    names = {lab: f"class_{lab:02d}" for lab in case.labels}
    case = replace(case, pass_labels=case.task != "multiclass")
    return case, replace(case, y_true=_as_strings(case.y_true, names), y_pred=_as_strings(case.y_pred, names),
                         labels=tuple(names[lab] for lab in case.labels))


def t_bool_labels(case: Case):
    """Binary labels as numpy bools: (negative, positive) -> (False, True) (a bool y_true once crashed)."""
    pos = case.labels[1]

    def as_bool(x):
        return None if x is None else np.asarray(x) == pos

    return case, replace(case, y_true=as_bool(case.y_true), y_pred=as_bool(case.y_pred), labels=(False, True))



def t_float32_scores(case: Case):
    """Scores held as float32 against the same values as float64. Binary: at a threshold float32 rounds
    down (0.7 -> 0.69999999), with rows on float32(0.7), which are below it."""
    if case.y_score is None:
        return case, case
    if case.task == "binary":
        s = np.asarray(case.y_score, dtype=np.float64).copy()
        s[::7] = np.float32(0.7)
        case = replace(case, y_score=s, threshold=0.7)
    s32 = np.asarray(case.y_score).astype(np.float32)
    return replace(case, y_score=s32.astype(np.float64)), replace(case, y_score=s32)

def _container(kind: str):
    def one(x):
        a = np.asarray(x)
        if kind == "list":
            return a.tolist()
        if kind == "polars":
            return pl.Series(a) if a.ndim == 1 else pl.DataFrame({f"c{j}": a[:, j] for j in range(a.shape[1])})
        if kind == "pyarrow":
            return pa.array(a) if a.ndim == 1 else pa.table({f"c{j}": a[:, j] for j in range(a.shape[1])})
        if kind == "chunked":
            half = len(a) // 2
            if a.ndim == 1:
                return pa.chunked_array([pa.array(a[:half]), pa.array(a[half:])])
            return pa.table({f"c{j}": pa.chunked_array([a[:half, j], a[half:, j]]) for j in range(a.shape[1])})
        raise AssertionError(kind)
    return lambda x: None if x is None else one(x)


def _t_container(kind: str):
    def transform(case: Case):
        conv = _container(kind)
        weighted = case if case.task == "multilabel" else replace(case, sample_weight=_weights(case, 16))
        return weighted, replace(weighted, y_true=conv(weighted.y_true), y_pred=conv(weighted.y_pred),
                                 y_score=conv(weighted.y_score), sample_weight=conv(weighted.sample_weight))
    transform.__name__ = f"t_{kind}_input"
    return transform


#: The weight scales of the scaling invariance (intervals were once nan at 0.001, (0, 1) at 0.01).
SCALES = (0.001, 0.01, 1.0, 100.0)
#: Keys that are sums of weights: scaling every weight by c multiplies them by c; every other key stays.
WEIGHT_SUMS = frozenset({"n", "tp", "fp", "fn", "tn", "total_cost"})


def _t_weight_scale(c: float):
    def transform(case: Case):
        w = _weights(case, 17)
        return replace(case, sample_weight=w), replace(case, sample_weight=w * c)
    transform.__name__ = f"t_weight_scale_{c:g}"
    return transform


TRANSFORMS = {
    "row_order": (t_row_order, {"binary", "multiclass", "multilabel"}),
    **{f"weight_scale_{c:g}": (_t_weight_scale(c), {"binary", "multiclass"}) for c in SCALES},
    "unit_weights": (t_unit_weights, {"binary", "multiclass"}),
    "repeat_rows": (t_repeat_rows, {"binary", "multiclass"}),
    "zero_weights": (t_zero_weights, {"binary", "multiclass"}),
    "label_permutation": (t_label_permutation, {"multiclass", "multilabel"}),
    "string_labels": (t_string_labels, {"binary", "multiclass"}),
    "bool_labels": (t_bool_labels, {"binary"}),
    "float32_scores": (t_float32_scores, {"binary", "multiclass"}),
    **{f"{kind}_input": (_t_container(kind), {"binary", "multiclass", "multilabel"})
       for kind in ("list", "polars", "pyarrow", "chunked")},
}


@cache
def _pair_reports(case_name: str, transform: str):
    a, b = TRANSFORMS[transform][0](BASE[case_name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return a.report(), b.report()


def _pairs(exempt=()) -> list:
    """One parameter per (case, transformation) that applies to the case's task, but for ``exempt``."""
    return [pytest.param(case_name, transform, id=f"{case_name}-{transform}")
            for case_name, case in BASE.items() for transform, (_, tasks) in TRANSFORMS.items()
            if case.task in tasks and transform not in exempt]


# --------------------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------------------
def _scale(transform: str) -> float:
    return float(transform.removeprefix("weight_scale_")) if transform.startswith("weight_scale_") else 1.0


@pytest.mark.parametrize("case_name, transform", _pairs())
def test_invariance(case_name, transform):
    """Every key is unchanged by row order, unit/integer/zero weights, the scale of the weights (but for
    the sums of weights, multiplied), relabelling and input container.

    One test per (case, transformation): the two reports are made once, and every registered key of
    the case is compared; a failure lists each key that changed.
    """
    ra, rb = _pair_reports(case_name, transform)
    bad = []
    for key in (k.name for k in keys_for(BASE[case_name])):
        factor = _scale(transform) if key in WEIGHT_SUMS else 1.0
        # 1e-12: only the order (and scaling) of floating-point sums may change.
        if not close(rb.metrics[key], ra.metrics[key] * factor, rtol=1e-12, atol=1e-14 * max(factor, 1.0)):
            bad.append(f"{key}: got {rb.metrics[key]!r}, expected {ra.metrics[key] * factor!r}")
    assert bad == [], f"{case_name}/{transform}: " + "; ".join(bad)


#: Transformations under which intervals are NOT compared, with the reason:
INTERVAL_EXEMPT = {
    # Intervals count the rows of positive weight (not the weight sum, which has no scale):
    # integer weights are not frequency weights, so 60 weighted rows and ~120 repeated rows differ.
    "repeat_rows": "bootstrap and Wilson n is the number of distinct rows of positive weight",
    # The seeded bootstrap draws cells in class-list order: another order gives other (equally
    # distributed) replicates; Wilson intervals are compared by test_invariance_per_class_and_curves' rows.
    "label_permutation": "bootstrap draws follow the class order (same law, other replicates)",
}


@pytest.mark.parametrize("case_name, transform", _pairs(exempt=INTERVAL_EXEMPT))
def test_interval_invariance(case_name, transform):
    """Every interval is unchanged (total_cost's: multiplied) by the scale of the weights, zero weights
    (= absent rows), unit weights, row order, string labels and the input container."""
    ra, rb = _pair_reports(case_name, transform)
    ia, ib = ra.intervals, rb.intervals
    assert ia.keys() == ib.keys()
    scale = {k: _scale(transform) if k in WEIGHT_SUMS else 1.0 for k in ia}  # total_cost's interval scales
    bad = [f"{k}: {ib[k]} vs {ia[k]}" for k in ia
           if not all(close(x, y * scale[k], rtol=1e-9, atol=1e-12) for x, y in zip(ib[k], ia[k]))]
    assert bad == [], f"{case_name}/{transform}"


@pytest.mark.parametrize("case_name", [c for c in BASE if c != "multilabel"])
def test_invariance_per_class_and_curves(case_name):
    """Label permutation permutes the per-class rows; row order leaves curves unchanged."""
    case = BASE[case_name]
    if case.task == "multiclass":
        ra, rb = _pair_reports(case_name, "label_permutation")
        a = ra.per_class.sort("class")
        b = rb.per_class.sort("class")
        for col in a.columns:
            np.testing.assert_allclose(b[col].to_numpy(), a[col].to_numpy(), rtol=1e-12, equal_nan=True)
    ra, rb = _pair_reports(case_name, "row_order")
    if case.task == "binary":
        for name in ("roc", "pr", "gain", "lift"):
            for part in ("x", "y", "thresholds"):
                np.testing.assert_allclose(rb.curves[name][part], ra.curves[name][part], rtol=1e-12,
                                           equal_nan=True)


def _swap_case() -> Case:
    base = BASE["binary_pred_and_score"]
    return replace(base, y_score=None, cost_matrix=None)


@pytest.mark.parametrize("key", [k.name for k in REGISTRY["binary"] if k.swap])
def test_binary_positive_class_swap(key):
    """Swapping pos_label turns precision into npv, recall into specificity, tp into tn, ...;
    symmetric metrics (accuracy, balanced accuracy, MCC, kappa, KL) stay."""
    case = _swap_case()
    swapped = replace(case, labels=(case.labels[1], case.labels[0]))
    partner = next(k.swap for k in REGISTRY["binary"] if k.name == key)
    assert_close(swapped.report().metrics[partner], case.report().metrics[key], f"{key} -> {partner}")


@pytest.mark.parametrize("case_name", list(BASE))
def test_every_key_registered_and_catalogue_complete(case_name):
    """The report emits every SPEC catalogue key and no key without an oracle in the registry."""
    case = BASE[case_name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = case.report()
    registered = {k.name for k in keys_for(case)}
    catalogue = set(CATALOGUE[case.task].split())
    if case.y_score is None:
        catalogue -= {"auroc", "average_precision", "auprc_trapezoid", "log_loss", "brier", "auroc_ovr_macro",
                      "auroc_ovr_weighted"}
    assert catalogue - set(r.metrics) == set(), "catalogue keys missing from the report"
    assert set(r.metrics) - registered == set(), "report keys without an oracle in the registry"
    assert registered - set(r.metrics) == set(), "registered keys the report does not emit"
    if case.task == "multiclass":
        assert r.per_class.columns == PER_CLASS_COLUMNS
        assert r.per_class["class"].to_list() == list(case.labels)
    assert all(isinstance(v, float) for v in r.metrics.values())


@pytest.mark.parametrize("case_name", list(BASE))
def test_registry_oracles_agree_on_fixed_cases(case_name):
    """The fixed invariance cases also agree with the oracles (the hypothesis tests explore further)."""
    case = BASE[case_name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = case.report()
    assert mismatches(r.metrics, case, keys_for(case)) == []


@st.composite
def _weighted_cases(draw):
    """A binary or multiclass case with random labels, scores, integer-valued weights (some 0) and a scale."""
    task = draw(st.sampled_from(["binary", "multiclass"]))
    n = draw(st.integers(8, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    k = 2 if task == "binary" else draw(st.integers(3, 5))
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)  # every class labelled at least once
    w = rng.integers(0, 4, n).astype(float)
    w[:k] = 1.0  # ... with positive weight
    if task == "binary":
        score = np.round(rng.uniform(size=n), int(rng.integers(1, 3)))  # ties
        case = Case("binary", y, y_score=score, labels=(0, 1), sample_weight=w)
    else:
        raw = rng.integers(1, 5, (n, k)).astype(float)
        case = Case("multiclass", y, y_score=raw / raw.sum(axis=1, keepdims=True), labels=tuple(range(k)),
                    sample_weight=w)
    return case, draw(st.sampled_from(SCALES))


@settings(max_examples=30, deadline=None)
@given(_weighted_cases())
def test_weight_scale_and_zero_weights_property(case_and_scale):
    """Random data: weights scaled by c change only the sums of weights (values and intervals); rows
    of weight 0 are the same as absent rows (values and intervals)."""
    case, c = case_and_scale
    keep = np.flatnonzero(case.weight > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = case.report()
        scaled = replace(case, sample_weight=case.weight * c).report()
        dropped = _take(case, keep).report()
        base.options["n_boot"] = scaled.options["n_boot"] = dropped.options["n_boot"] = 100
        ia, ib, ic = base.intervals, scaled.intervals, dropped.intervals
    for key, value in base.metrics.items():
        factor = c if key in WEIGHT_SUMS else 1.0
        assert_close(scaled.metrics[key], value * factor, f"scaled {key}", rtol=1e-9, atol=1e-12 * max(c, 1))
        assert_close(dropped.metrics[key], value, f"dropped {key}", rtol=1e-12, atol=1e-14)
    for key, (low, high) in ia.items():
        factor = c if key in WEIGHT_SUMS else 1.0
        for got, want in zip(ib[key], (low * factor, high * factor)):
            assert_close(got, want, f"scaled interval {key}", rtol=1e-9, atol=1e-12 * max(c, 1))
        for got, want in zip(ic[key], (low, high)):
            assert_close(got, want, f"dropped interval {key}", rtol=1e-12, atol=1e-14)
