"""The registry of monitoring test kinds (KINDS) and the tests of a period against its reference (run_tests).

Each kind is one :class:`Kind` record: its policy field (threshold), its reason sentence, the
``details`` keys the sentence shows, its tests, the metrics it logs (semantic key, MLflow section
and name, time series or not) and its over-time panel. Everything downstream reads the records:
:meth:`AlertPolicy.threshold <metrics_core.monitoring.AlertPolicy.threshold>`, the reasons of
:func:`~metrics_core.monitoring.decide_alert`, the period's metrics, and in ``tasks`` the MLflow
names, the parent's time series and the over-time plot. Adding a kind is a module (or an entry in
the module of its family) and its line below.

The families, one module each, grouped by what they test: :mod:`.prevalence` (class counts:
prevalence and class mix, on labels and predictions), :mod:`.scores` (score distributions),
:mod:`.prices` (log-price distributions of predicted classes, labelled classes and error cells),
:mod:`.calibration` and :mod:`.headline` (the headline metric's drop and new classes), whose tests
are made elsewhere because they need more than two periods' statistics.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from metrics_core.errors import InputError
from metrics_core.monitoring.kinds import calibration, features, headline, prevalence, prices, scores
from metrics_core.monitoring.kinds.base import (COUNTS, HEADLINE, KINDS, OTHER, PERFORMANCE, PREVALENCE, PRICES, SCORES,
                                                Job, Kind, Metric, PanelSpec, TestKey, run_jobs)
from metrics_core.monitoring.kinds.prices import MIN_PRICE_ROWS
from metrics_core.monitoring.period import PeriodStats
from metrics_core.significance import TestResult

__all__ = ["KINDS", "Kind", "TestKey", "Metric", "PanelSpec", "Job", "run_tests", "run_tests_of", "run_jobs",
           "MIN_PRICE_ROWS", "HEADLINE", "PREVALENCE", "PERFORMANCE", "SCORES", "PRICES", "COUNTS", "OTHER"]

# The registry, in the order run_tests runs and returns the tests (an MLflow run's table keeps it).
KINDS.update((k.name, k) for k in (
    prevalence.CLASS_MIX_LABEL, prevalence.PREVALENCE_LABEL, prevalence.CLASS_MIX_PRED, prevalence.PREVALENCE_PRED,
    scores.SCORE,
    prices.PRICE, prices.PRICE_LABEL, prices.PRICE_FALSE_POSITIVE, prices.PRICE_FALSE_NEGATIVE,
    calibration.CALIBRATION,
    *features.FEATURE_KINDS,
    headline.HEADLINE, headline.NEW_CLASS,
))


def run_tests(reference: PeriodStats, current: PeriodStats) -> dict[TestKey, TestResult]:
    """The monitoring tests of a period against the reference window (ONS Annex F), each registered kind's in turn.

    Parameters
    ----------
    reference, current : PeriodStats
        Statistics of the reference window and of the period, over the same class list and bins.

    Returns
    -------
    dict of TestKey to TestResult
        In the registry's order (:data:`KINDS`), within a kind by class:

        - ``class_mix_label`` / ``class_mix_pred`` (3+ classes): chi-squared homogeneity test of
          the class counts; effect = PSI of the class distribution.
        - ``prevalence_label:<c>`` / ``prevalence_pred:<c>``: two-proportion z-test of class c's
          share (labels / predictions; binary: the positive class only); effect = current minus
          reference share. Without labels in either period the label tests are left out.
        - ``score:<c>``: two-sample KS on the binned score distribution of class c; effect =
          Wasserstein-1 distance in score units (mean absolute shift); details: PSI over 10
          reference deciles, means.
        - ``price:<c>``: KS on the binned log prices of predicted class c (both with at least
          :data:`MIN_PRICE_ROWS` rows, else left out); effect = relative price shift
          ``10**(±W) - 1``, W the Wasserstein-1 distance of the log10 prices, signed by the change
          of the mean log price: a uniform 15 % rise gives 0.15, a uniform 15 % fall -0.15. Unlike
          the median, it does not jump between the modes of a multimodal price distribution (pack
          sizes); medians and the geometric-mean change are in the details.
        - ``price_label:<c>``, ``price_false_positive:<c>``, ``price_false_negative:<c>`` (when
          both periods have labels and prices, K <= ``MAX_CELL_CLASSES``): the same price test on
          the rows labelled c and on the confusion cells ONS Annex E uses, class c's false
          positives (predicted c, labelled otherwise) and false negatives (labelled c, predicted
          otherwise). A price rise in a class the model rarely predicts shows here, not in
          ``price:<c>``.

        An undefined test (e.g. a class absent from both periods) has a nan p-value and effect.
        The distribution tests run side by side on threads (:func:`run_jobs`); the result is
        the same, in the same order, on any number of threads.

    Raises
    ------
    InputError
        When the two statistics have different class lists or bins.

    Examples
    --------
    >>> from metrics_core.monitoring.bins import Bins
    >>> from metrics_core.monitoring.period import update
    >>> ref = update("binary", np.array([0, 1]), Bins(score_bins=10), np.array([0, 1, 0, 0]))
    >>> cur = update("binary", np.array([0, 1]), Bins(score_bins=10), np.array([1, 1, 0, 1]))
    >>> [k.name for k in run_tests(ref, cur)]
    ['prevalence_pred:1']
    """
    return run_tests_of([(reference, current)])[0]


def run_tests_of(pairs: list[tuple[PeriodStats, PeriodStats]], meanwhile: Callable[[], None] | None = None
                 ) -> list[dict[TestKey, TestResult]]:
    """:func:`run_tests` of each (reference, current) pair, their distribution tests run together
    on one set of threads (:func:`run_jobs`, which also calls ``meanwhile``): the same results,
    without a thread pool per pair (a period's 50 segments)."""
    plans = []
    for reference, current in pairs:
        if not np.array_equal(reference.labels, current.labels) or reference.bins != current.bins:
            raise InputError("reference and current: statistics over different class lists or bins.")
        plans.append([pair for kind in list(KINDS.values()) if kind.tests is not None
                      for pair in kind.tests(reference, current)])
    done = iter(run_jobs([t for planned in plans for _, t in planned if isinstance(t, Job)], meanwhile))
    return [{key: next(done) if isinstance(t, Job) else t for key, t in planned} for planned in plans]
