"""Significance tests, intervals and multiple-testing corrections (ISO/IEC TS 4213 clause 7).

Modules by family: ``base`` (the common :class:`TestResult`), ``paired`` (t-tests, Wilcoxon,
McNemar), ``groups`` (ANOVA, Kruskal-Wallis), ``tables`` (chi-squared, Fisher), ``proportions``
(the Wilson interval), ``corrections`` (BH, Holm, Bonferroni) and ``bootstrap`` (the paired
bootstrap of a metric). Every public name is importable from this package.
"""

from metrics_core.significance.base import TestResult
from metrics_core.significance.bootstrap import paired_bootstrap
from metrics_core.significance.corrections import Corrected, correct
from metrics_core.significance.groups import anova, kruskal_wallis
from metrics_core.significance.paired import corrected_resampled_t_test, mcnemar, paired_t_test, wilcoxon_signed_rank
from metrics_core.significance.proportions import proportion_interval, wilson
from metrics_core.significance.tables import chi_squared, fisher_exact

__all__ = [
    "TestResult", "Corrected", "paired_t_test", "corrected_resampled_t_test", "anova",
    "kruskal_wallis", "chi_squared", "wilcoxon_signed_rank", "fisher_exact", "mcnemar",
    "proportion_interval", "wilson", "paired_bootstrap", "correct",
]
