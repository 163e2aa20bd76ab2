"""Drift between a reference and a current distribution, from rows or from mergeable statistics.

Every test accepts raw samples (list, numpy, polars Series, pyarrow Array) or statistics that
merge across partitions: :class:`~metrics_core.counts.ScoreCounts` (the exact value
distribution: distinct values with counts) or a :class:`Histogram` over reference-derived
edges, so a 100M-row reference is summarised once and never held as rows. Raw samples are
summarised first (``ScoreCounts.of_values``), so rows and statistics share one code path.

Modules by family: ``distributions`` (value distributions, histograms, binning), ``distances``
(PSI, Jensen-Shannon, Hellinger), ``ecdf`` (Kolmogorov-Smirnov, Wasserstein), ``categories``
(chi-squared homogeneity, two-proportion z-test) and ``table`` (several tests at once and the
table judging them). Every public name is importable from this package.
"""

from metrics_core.drift.categories import chi_squared_counts, class_mix_test, two_proportion_z
from metrics_core.drift.distances import PSI_FLOOR, hellinger, jensen_shannon, psi, psi_rows
from metrics_core.drift.distributions import Histogram, at_effective_size, value_distribution
from metrics_core.drift.ecdf import ks, ks_wasserstein_rows, wasserstein
from metrics_core.drift.table import drift_table, drift_tests

__all__ = ["Histogram", "PSI_FLOOR", "value_distribution", "at_effective_size", "psi", "psi_rows", "ks",
           "ks_wasserstein_rows", "wasserstein", "jensen_shannon", "hellinger", "chi_squared_counts", "class_mix_test",
           "two_proportion_z", "drift_tests", "drift_table"]
