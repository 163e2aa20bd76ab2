"""metrics_core: exact classification metrics from mergeable statistics (ISO/IEC TS 4213, ONS guidance).

Pure numerics (numpy, scipy, polars, pyarrow). Every metric is computed from a small statistic
(:class:`ConfusionCounts`, :class:`ScoreCounts`, histograms) that merges across partitions.
"""

from metrics_core import contract
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
from metrics_core.misread import MisreadInputWarning, ReversedScoresWarning, ThresholdScaleWarning
from metrics_core.stats import BinaryStats, LossSums, MulticlassStats, MultilabelStats
from metrics_core.undefined import UndefinedMetricWarning, undefined_reasons

__all__ = [
    "BinaryStats", "BinnedScoreCounts", "CheckResult", "ConfusionCounts", "InputError", "LossSums",
    "ManualCheckPlan", "MulticlassStats", "MultilabelStats", "PriceImpact", "Recommendation", "Report",
    "SampleEstimate", "ScoreCounts", "Stability", "binary_from_stats", "binary_report", "binary_stats", "checks", "contract",
    "class_counts", "dataset", "drift", "estimate_from_sample", "leakage", "manual_check_plan",
    "multiclass_from_stats", "multiclass_report", "multiclass_stats", "multilabel_report", "prevalence_stability",
    "check_periods", "month_periods", "price_impact", "price_index", "price_stability", "recommend",
    "representativeness", "significance",
    "stability_from_history", "stability_from_rows", "thin",
    "MisreadInputWarning", "ReversedScoresWarning", "ThresholdScaleWarning", "UndefinedMetricWarning",
    "undefined_reasons",
]

# Imported on first use (PEP 562): the checks, drift and ONS modules pull in scipy.stats and pandas,
# which a report does not need (`classwatch evaluate` starts seconds sooner without them); the
# dataset readers pull in pyarrow.dataset, whose first scalar loads pandas (0.5 s), which an
# in-memory report (and the plot workers of `classwatch evaluate`) do not need.
_LAZY = {
    "checks": ("metrics_core.checks", None), "dataset": ("metrics_core.dataset", None),
    "drift": ("metrics_core.drift", None),
    "significance": ("metrics_core.significance", None),
    "CheckResult": ("metrics_core.checks", "CheckResult"), "leakage": ("metrics_core.checks", "leakage"),
    "representativeness": ("metrics_core.checks", "representativeness"),
    **{n: ("metrics_core.ons", n) for n in ("Recommendation", "Stability", "recommend", "stability_from_history",
                                            "stability_from_rows")},
    **{n: ("metrics_core.price", n) for n in ("PriceImpact", "price_impact", "price_index")},
    **{n: ("metrics_core.sampling", n) for n in ("ManualCheckPlan", "SampleEstimate", "estimate_from_sample",
                                                 "manual_check_plan")},
    **{n: ("metrics_core.checks.stability", n) for n in ("check_periods", "class_counts", "month_periods",
                                                  "prevalence_stability", "price_stability")},
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'metrics_core' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name]
    value = importlib.import_module(module) if attr is None else getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
