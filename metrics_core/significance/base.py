"""The common result of every significance and drift test, and the input checks they share."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from metrics_core._validate import to_numpy
from metrics_core.errors import InputError, bad_rows

NAN = float("nan")


@dataclass(frozen=True)
class TestResult:
    """Outcome of one test, distance or interval: the result of ``significance`` and ``drift``.

    Parameters
    ----------
    test : str
        Name of the test, e.g. ``"paired t-test"``.
    statistic : float
        The test statistic (or the distance, or the proportion of an interval).
    p_value : float
        Two-sided p-value; nan where none exists (e.g. PSI, a confidence interval) or where the
        test is undefined.
    effect_size : float
        The effect size named by ``effect_name``; nan when undefined.
    effect_name : str
        Which effect size is reported, e.g. ``"Cohen's d_z"``.
    verdict : str
        A short sentence with the decision at ``alpha`` (or at ``details['threshold']`` for a
        distance): it starts with "significant", "not significant", "undefined", "drift" or
        "no drift".
    alpha : float
        Level of the decision (``1 - level`` for an interval).
    interval : tuple of float, optional
        A confidence interval, where one is computed.
    details : mapping
        Counts and settings (floats or strings) worth logging.

    The value is frozen; :meth:`to_dict` flattens it for logging.

    Examples
    --------
    >>> r = TestResult("demo", 1.5, 0.2, 0.3, "d", "not significant", interval=(0.1, 0.5))
    >>> r.to_dict()["ci_high"], r.to_dict()["p_value"]
    (0.5, 0.2)
    """

    __test__ = False  # not a pytest test class

    test: str
    statistic: float
    p_value: float
    effect_size: float
    effect_name: str
    verdict: str
    alpha: float = 0.05
    interval: tuple[float, float] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Flat dict (interval as ``ci_low``/``ci_high``, then ``details``), ready for logging."""
        out = {"test": self.test, "statistic": self.statistic, "p_value": self.p_value,
               "effect_size": self.effect_size, "effect_name": self.effect_name,
               "verdict": self.verdict, "alpha": self.alpha}
        if self.interval is not None:
            out["ci_low"], out["ci_high"] = self.interval
        out.update(self.details)
        return out


def _check_alpha(alpha: float, name: str = "alpha") -> float:
    if not (isinstance(alpha, (int, float, np.floating)) and 0.0 < float(alpha) < 1.0):
        raise InputError(f"{name}: must be a number strictly between 0 and 1, got {alpha!r}.")
    return float(alpha)


def _check_count(name: str, value: Any) -> None:
    """A count argument must be a finite number >= 0 (an error names the argument)."""
    if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value) or value < 0:
        raise InputError(f"{name}: must be a finite count >= 0, got {value!r}.")


def _sample(x: Any, name: str) -> np.ndarray:
    """1-D float64 sample without NaN/inf; an error names ``name`` and the first bad row."""
    arr = to_numpy(x, name)
    if arr.dtype.kind not in "fiub":
        raise InputError(f"{name}: values must be numbers, got dtype {arr.dtype} "
                         f"(e.g. row 0 = {arr[0]!r}).")
    arr = np.asarray(arr, dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise bad_rows(name, "NaN or infinite value", bad, arr, "Drop these rows before testing.")
    return arr


def _table(table: Any, name: str = "table") -> np.ndarray:
    """2-D float64 table of non-negative finite counts."""
    arr = to_numpy(table, name, ndim=2)
    if arr.dtype.kind not in "fiub":
        raise InputError(f"{name}: counts must be numbers, got dtype {arr.dtype}.")
    arr = np.asarray(arr, dtype=np.float64)
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InputError(f"{name}: {int(bad.sum())} cell(s) are negative, NaN or infinite, e.g. "
                         f"cell ({i}, {j}) = {arr[i, j]!r}. Counts must be finite and >= 0.")
    return arr


def _labels(x: Any, name: str) -> np.ndarray:
    """1-D labels without NaN (any dtype)."""
    arr = to_numpy(x, name)
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise bad_rows(name, "NaN label", np.isnan(arr), arr, "Drop these rows before testing.")
    return arr


def _verdict(p: float, alpha: float, claim: str, undefined: str = "the p-value is nan") -> str:
    """'significant at alpha=..: claim' / 'not significant ...: no evidence that claim'."""
    if not np.isfinite(p):
        return f"undefined at alpha={alpha:g}: {undefined}"
    if p <= alpha:
        return f"significant at alpha={alpha:g} (p={p:.3g}): {claim}"
    return f"not significant at alpha={alpha:g} (p={p:.3g}): no evidence that {claim}"


def _warn(message: str, stacklevel: int = 3) -> None:
    """A RuntimeWarning attributed to the caller of the public function (``stacklevel`` frames up)."""
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)


def _quiet(fn: Callable, *args, **kwargs):
    """Call a scipy function with its own RuntimeWarnings silenced (we warn in our words)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)
