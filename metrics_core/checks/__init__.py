"""Data checks of a training and a test set (ISO/IEC TS 4213 5.3, ONS Annex F).

Modules: ``frames`` (:class:`CheckResult` and the frame helpers every check shares),
``leakage`` (shared ids, duplicated rows, single-feature separation) and ``representativeness``
(feature drift and class support). Stability over periods is :mod:`metrics_core.checks.stability`.
Every public name is importable from this package.
"""

from metrics_core.checks.frames import CheckResult, as_frame, require_columns
from metrics_core.checks.leakage import leakage
from metrics_core.checks.representativeness import representativeness

__all__ = ["CheckResult", "as_frame", "leakage", "representativeness", "require_columns"]
