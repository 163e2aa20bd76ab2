"""metrics_core: exact classification metrics from mergeable statistics (ISO/IEC TS 4213, ONS guidance).

Pure numerics (numpy, scipy, polars, pyarrow). Every metric is computed from a small statistic
(:class:`ConfusionCounts`, :class:`ScoreCounts`, histograms) that merges across partitions.
"""

from metrics_core import checks, contract, dataset, drift, significance
from metrics_core.checks import CheckResult, leakage, representativeness
from metrics_core.counts import BinnedScoreCounts, ConfusionCounts, ScoreCounts
from metrics_core.curves import thin
from metrics_core.errors import InputError
from metrics_core.multilabel import multilabel_report
from metrics_core.report import (
    Report,
    binary_from_stats,
    binary_report,
    binary_stats,
    multiclass_from_stats,
    multiclass_report,
    multiclass_stats,
)
from metrics_core.ons import Recommendation, Stability, recommend, stability_from_history, stability_from_rows
from metrics_core.price import PriceImpact, price_impact, price_index
from metrics_core.sampling import ManualCheckPlan, SampleEstimate, estimate_from_sample, manual_check_plan
from metrics_core.stability import class_counts, prevalence_stability, price_stability
from metrics_core.stats import BinaryStats, LossSums, MulticlassStats, MultilabelStats
from metrics_core.undefined import UndefinedMetricWarning, undefined_reasons

__all__ = [
    "BinaryStats", "BinnedScoreCounts", "CheckResult", "ConfusionCounts", "InputError", "LossSums",
    "ManualCheckPlan", "MulticlassStats", "MultilabelStats", "PriceImpact", "Recommendation", "Report",
    "SampleEstimate", "ScoreCounts", "Stability", "binary_from_stats", "binary_report", "binary_stats", "checks", "contract",
    "class_counts", "dataset", "drift", "estimate_from_sample", "leakage", "manual_check_plan",
    "multiclass_from_stats", "multiclass_report", "multiclass_stats", "multilabel_report", "prevalence_stability",
    "price_impact", "price_index", "price_stability", "recommend", "representativeness", "significance",
    "stability_from_history", "stability_from_rows", "thin", "UndefinedMetricWarning", "undefined_reasons",
]
