"""The score kind: each class's score distribution, reference against current (KS, Wasserstein-1 shift)."""

from __future__ import annotations

import dataclasses

import numpy as np

from metrics_core import drift
from metrics_core.counts import ScoreCounts
from metrics_core.monitoring.kinds.base import (SCORES, Job, Kind, Metric, PanelSpec, Planned, TestKey, binned_job,
                                                stacked)
from metrics_core.monitoring.period import PeriodStats
from metrics_core.significance import TestResult

__all__ = ["SCORE", "score_test", "score_tests"]


def score_test(r: ScoreCounts, c: ScoreCounts) -> TestResult:
    """Two-sample KS on a class's binned scores; effect = Wasserstein-1 distance (score units);
    details: KS D, PSI over 10 reference deciles, both means."""
    # one call: KS and Wasserstein share the merge of the two distributions (the single tests' values)
    found = drift.drift_tests(r, c, ("ks", "wasserstein", "psi"), bins=10,
                              thresholds=dict.fromkeys(("wasserstein", "psi")))
    return _score_result(r, c, found["ks"], found["wasserstein"].statistic, found["psi"].statistic)


def score_tests(jobs: list[Job]) -> list[TestResult]:
    """:func:`score_test` of each job (histograms over the same bins), their KS, Wasserstein and PSI
    parts computed together (:func:`metrics_core.drift.ks_wasserstein_rows`,
    :func:`~metrics_core.drift.psi_rows`: the same values)."""
    histograms = stacked(jobs)
    tests, w1 = drift.ks_wasserstein_rows(*histograms)
    psi = drift.psi_rows(*histograms, bins=10)
    return [_score_result(job.reference, job.current, ks, w, ps)
            for job, ks, w, ps in zip(jobs, tests, w1.tolist(), psi.tolist())]


def _score_result(r: ScoreCounts, c: ScoreCounts, ks: TestResult, w1: float, ps: float) -> TestResult:
    """The score test's result from its KS result, Wasserstein-1 distance and PSI."""
    mean_r = float(np.dot(r.scores, r.counts) / r.total)
    mean_c = float(np.dot(c.scores, c.counts) / c.total)
    return dataclasses.replace(ks, effect_size=w1, effect_name="Wasserstein-1 distance of the scores",
                               details={**ks.details, "ks_d": ks.statistic, "psi": ps, "mean_reference": mean_r,
                                        "mean_current": mean_c})


def _tests(reference: PeriodStats, current: PeriodStats) -> Planned:
    """One score test per score column (none when the period has no scores)."""
    points = reference.bins.score_points()
    return [(TestKey("score", cls), binned_job(score_test, score_tests, points, reference.score_counts[s],
                                               current.score_counts[s]))
            for s, cls in enumerate(reference.score_names() if current.score_counts is not None else [])]


def _render(r, tail: str) -> tuple[str, str]:
    return (f"scores of {r.key.cls!r} shifted: mean {r.reference:.3f} -> {r.current:.3f}, Wasserstein "
            f"{r.effect:.3f} >= {r.threshold:g}", tail)


def _metrics(key: TestKey, t: TestResult) -> dict[str, float]:
    return {f"score_wasserstein/{key.cls}": t.effect_size, f"score_psi/{key.cls}": t.details["psi"]}


SCORE = Kind("score", "score_shift", _render, ("mean_reference", "mean_current"), tests=_tests, metrics=_metrics,
             worst="max_score_wasserstein",
             logged=(Metric("score_wasserstein/", f"{SCORES}/Wasserstein "), Metric("score_psi/", f"{SCORES}/PSI "),
                     Metric("max_score_wasserstein", f"{SCORES}/largest shift Wasserstein", True)),
             panel=PanelSpec(3, "max_score_wasserstein", "max_score_wasserstein",
                             "largest score shift\n(Wasserstein, score units)", "score_shift",
                             legend="largest over classes"))
