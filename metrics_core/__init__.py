"""metrics_core: exact classification metrics from mergeable statistics (ISO/IEC TS 4213, ONS guidance).

Pure numerics (numpy, scipy, polars, pyarrow). Every metric is computed from a small statistic
(:class:`ConfusionCounts`, :class:`ScoreCounts`, histograms) that merges across partitions.
"""

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
from metrics_core.stats import BinaryStats, LossSums, MulticlassStats, MultilabelStats

__all__ = [
    "BinaryStats", "BinnedScoreCounts", "ConfusionCounts", "InputError", "LossSums", "MulticlassStats",
    "MultilabelStats", "Report", "ScoreCounts", "binary_from_stats", "binary_report", "binary_stats",
    "multiclass_from_stats", "multiclass_report", "multiclass_stats", "multilabel_report", "thin",
]
