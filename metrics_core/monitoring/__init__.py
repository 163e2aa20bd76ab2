"""Monitoring of a classifier's periods against a reference window (ONS Annexes E, F).

What is watched per model and period: class prevalence on labels (where present) and on
predictions, the distribution of each class's score, and the price distribution of each
predicted class. A period is summarised by :class:`PeriodStats` (:mod:`.period`): counts per
class and fixed-bin histograms of scores and log prices, so statistics of batches, files or Dask
partitions merge by addition and a 1M-row period is read once (:func:`scan_period`, :mod:`.scan`).
:func:`run_tests` (:mod:`.kinds`, the registry of test kinds) turns a reference and a current
summary into tests keyed by :class:`TestKey`; :func:`decide_alert` (:mod:`.decision`) corrects their p-values together and
raises the alert, with typed :class:`Reason` records, when a rejected test's effect passes its
practical threshold (the headline metric's drop against the reference is one of those tests,
with too few labels to see the drop a verdict "not enough labels to judge" instead), all
as set by one :class:`AlertPolicy` (:mod:`.policy`). :func:`assess_period` (:mod:`.assess`) does it all
on in-memory tables (a notebook) and returns the :class:`PeriodAssessment` the flow logs.
"""

from metrics_core.monitoring.decision import (MIN_EXPECTED, POWER, VERDICTS, Alert, Headline, HeadlineCheck, Reason,
                                              decide_alert, headline_check, headline_test, min_labelled)
from metrics_core.monitoring.bins import Bins
from metrics_core.monitoring.period import MAX_CELL_CLASSES, PeriodStats, binned, class_name, update
from metrics_core.monitoring.kinds import KINDS, MIN_PRICE_ROWS, Kind, TestKey, run_tests
from metrics_core.monitoring.policy import DEFAULT_HEADLINE, POLICY, POLICY_FIELDS, AlertPolicy
from metrics_core.monitoring.scan import scan_period
from metrics_core.price import price_impact_binned
from metrics_core.monitoring.assess import PeriodAssessment, assess_period, assess_stats

__all__ = ["AlertPolicy", "POLICY", "POLICY_FIELDS", "DEFAULT_HEADLINE", "KINDS", "Kind", "Bins", "PeriodStats",
           "update", "binned", "class_name", "scan_period", "TestKey", "run_tests", "price_impact_binned", "Headline", "HeadlineCheck",
           "Reason", "Alert", "decide_alert", "headline_check", "MAX_CELL_CLASSES", "MIN_PRICE_ROWS",
           "PeriodAssessment", "assess_period", "assess_stats", "headline_test", "POWER", "VERDICTS", "MIN_EXPECTED",
           "min_labelled"]
