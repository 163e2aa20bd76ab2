"""The retraining alert decision of one period and its reasons, as typed records rendered to text once."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import polars as pl

from metrics_core import drift
from metrics_core.monitoring.policy import AlertPolicy
from metrics_core.monitoring.tests import TestKey
from metrics_core.significance import TestResult

__all__ = ["Headline", "HeadlineCheck", "Reason", "Alert", "decide_alert", "headline_check"]

NAN = math.nan

_TABLE_SCHEMA = {"name": pl.String, "test": pl.String, "statistic": pl.Float64, "p_value": pl.Float64,
                 "p_adjusted": pl.Float64, "effect_size": pl.Float64, "effect_name": pl.String,
                 "threshold": pl.Float64, "drift": pl.Boolean, "verdict": pl.String}


@dataclass(frozen=True)
class Headline:
    """The headline metric of a period: its ``value``, confidence ``interval`` (None or nan bounds
    when not computed) and the ``reference`` window's value (None without labels there)."""

    metric: str
    value: float
    interval: tuple[float, float] | None = None
    reference: float | None = None


@dataclass(frozen=True)
class HeadlineCheck:
    """The performance bound of a period: ``fails`` when ``low`` (else, with a nan lower bound,
    ``value``) is under ``floor``."""

    metric: str
    value: float
    low: float
    high: float
    floor: float
    fails: bool


@dataclass(frozen=True)
class Reason:
    """Why a period alerts: one rejected test past its threshold, or the headline under its floor.

    ``key`` names the test (kind ``"headline"`` and the metric for the performance bound);
    ``effect`` is the test's effect size (the headline: the bound compared, nan when only the
    value was); ``threshold`` the practical threshold (the headline: the floor); ``p_adjusted``
    the corrected p-value (nan for the headline); ``reference`` and ``current`` the values the
    sentence shows (prevalences, score means, median prices; the headline: nan and its value).
    :attr:`text` renders the sentence.
    """

    key: TestKey
    effect: float
    threshold: float
    p_adjusted: float = NAN
    reference: float = NAN
    current: float = NAN

    @property
    def kind(self) -> str:
        return self.key.kind

    def _parts(self) -> tuple[str, str]:
        """The sentence and its parenthesis (details and the corrected p-value; empty for the headline)."""
        k, cls = self.key, self.key.cls
        tail = f"p_adj={self.p_adjusted:.2g}"
        if k.kind.startswith("prevalence"):
            verb = "rose" if self.current > self.reference else "fell"
            return (f"prevalence of {cls!r} ({k.source}) {verb} from {self.reference:.1%} to {self.current:.1%}",
                    f"{(self.current - self.reference) * 100:+.1f} points, threshold {self.threshold * 100:g}; {tail}")
        if k.kind.startswith("class_mix"):
            return f"class distribution ({k.source}) shifted: PSI {self.effect:.3f} >= {self.threshold:g}", tail
        if k.kind == "score":
            return (f"scores of {cls!r} shifted: mean {self.reference:.3f} -> {self.current:.3f}, Wasserstein "
                    f"{self.effect:.3f} >= {self.threshold:g}", tail)
        if k.kind == "price":
            verb = "rose" if self.effect > 0 else "fell"
            return (f"prices of {cls!r} {verb} {abs(self.effect):.1%}",
                    f"median {self.reference:.2f} -> {self.current:.2f}, threshold {self.threshold:.0%}; {tail}")
        bound = "lower bound" if math.isfinite(self.effect) else "value"
        shown = self.effect if bound == "lower bound" else self.current
        return f"{cls} {bound} {shown:.3f} is under the floor {self.threshold:.3f} (value {self.current:.3f})", ""

    @property
    def text(self) -> str:
        """The reason as one English sentence (tags, event payloads, markdown, the command line)."""
        head, details = self._parts()
        return f"{head} ({details})" if details else head

    @property
    def summary(self) -> str:
        """:attr:`text` without its closing parenthesis of details and p-value (one-line tables)."""
        return self._parts()[0]

    def to_dict(self) -> dict:
        """JSON-able fields (nan as None), the inverse of :meth:`from_dict`."""
        values = (self.effect, self.threshold, self.p_adjusted, self.reference, self.current)
        names = ("effect", "threshold", "p_adjusted", "reference", "current")
        return {"kind": self.key.kind, "class": self.key.cls,
                **{n: (None if v is None or not math.isfinite(v) else float(v)) for n, v in zip(names, values)}}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Reason":
        """The reason from :meth:`to_dict`'s output.

        >>> r = Reason(TestKey("price", "tea"), 0.15, 0.1, 0.001, 2.0, 2.3)
        >>> Reason.from_dict(r.to_dict()) == r
        True
        """
        num = {n: NAN if d.get(n) is None else float(d[n])
               for n in ("effect", "threshold", "p_adjusted", "reference", "current")}
        return cls(TestKey(d["kind"], d.get("class")), **num)


@dataclass(frozen=True)
class Alert:
    """The decision for one period: ``alert`` (retrain or not), ``reasons`` (strongest first, the
    headline last), ``table`` (one row per test: p-values corrected together, threshold, drift
    verdict), ``figures`` (test name -> effect, for the event payload) and ``headline`` (the
    performance bound, None without a headline metric or floor)."""

    alert: bool
    reasons: tuple[Reason, ...]
    table: pl.DataFrame
    figures: dict[str, float]
    headline: HeadlineCheck | None = field(default=None)

    @property
    def texts(self) -> list[str]:
        """The reasons as sentences."""
        return [r.text for r in self.reasons]


def headline_check(metric: str, value: float | None, interval: tuple[float, float] | None,
                   floor: float | None) -> HeadlineCheck | None:
    """The performance bound: fails when the lower interval bound is under ``floor``.

    Parameters
    ----------
    metric : str
        Name of the headline metric.
    value : float or None
        Its value in the period.
    interval : (float, float) or None
        Its confidence interval; a nan lower bound (or None) compares the value instead.
    floor : float or None
        The floor (see :meth:`AlertPolicy.floor`).

    Returns
    -------
    HeadlineCheck or None
        None without a floor or a finite value.

    Examples
    --------
    >>> headline_check("balanced_accuracy", 0.81, (0.78, 0.84), 0.80).fails
    True
    """
    if floor is None or value is None or not math.isfinite(value):
        return None
    low, high = interval if interval is not None else (NAN, NAN)
    bound = low if math.isfinite(low) else value
    return HeadlineCheck(metric, float(value), float(low), float(high), float(floor), bool(bound < floor))


def _test_reason(key: TestKey, row: dict, test: TestResult) -> Reason:
    d = test.details
    before, after = {"prevalence": ("p_reference", "p_current"), "score": ("mean_reference", "mean_current"),
                     "price": ("median_reference", "median_current")}.get(key.kind.partition("_")[0], ("", ""))
    return Reason(key, row["effect_size"], row["threshold"], row["p_adjusted"], d.get(before, NAN), d.get(after, NAN))


def decide_alert(tests: Mapping[TestKey, TestResult], policy: Any = None, headline: Headline | None = None) -> Alert:
    """Retrain or not: the alert policy as a pure function.

    All p-values of the period are corrected together (``policy.correction`` at ``policy.alpha``,
    :func:`metrics_core.drift.drift_table`); a test alerts when it rejects AND ``|effect| >=
    threshold``, the threshold chosen by the test's kind (:meth:`AlertPolicy.threshold`: absolute
    prevalence change, PSI of the class mix, Wasserstein shift of scores, relative price shift).
    The performance bound alerts when the headline's lower interval bound (its value when the
    bound is nan) is under the floor: ``policy.metric_floor``, else the headline's reference value
    minus ``policy.metric_drop`` (see :func:`headline_check`). This is the retraining rule of
    ONS Annex F (monitoring prevalence, scores and prices against a reference window).

    Parameters
    ----------
    tests : mapping of TestKey to TestResult
        The period's tests (:func:`~metrics_core.monitoring.tests.compare`); may be empty.
    policy : AlertPolicy, mapping or object, optional
        The thresholds (:meth:`AlertPolicy.of`: missing fields take the defaults).
    headline : Headline, optional
        The headline metric of the period and of the reference; None skips the bound.

    Returns
    -------
    Alert
        ``alert`` is True when any reason holds; reasons strongest first (|effect| / threshold),
        the headline last. Undefined tests (nan p-value or effect) never alert.

    Examples
    --------
    >>> t = {TestKey("prevalence_pred", "a"): drift.two_proportion_z(1000, 10000, 1500, 10000)}
    >>> a = decide_alert(t)
    >>> a.alert, a.reasons[0].text[:47]
    (True, "prevalence of 'a' (predictions) rose from 10.0%")
    >>> decide_alert({}, {"metric_drop": 0.05}, Headline("accuracy", 0.7, (0.66, 0.74), 0.8)).texts
    ['accuracy lower bound 0.660 is under the floor 0.750 (value 0.700)']
    """
    p = AlertPolicy.of(policy)
    keys = {k.name: k for k in tests}
    thresholds = {k.name: p.threshold(k.kind) for k in tests}
    table = drift.drift_table({k.name: t for k, t in tests.items()}, thresholds, p.correction, p.alpha) \
        if tests else pl.DataFrame(schema=_TABLE_SCHEMA)
    rows = [r for r in table.iter_rows(named=True) if r["drift"]]
    rows.sort(key=lambda r: -abs(r["effect_size"]) / r["threshold"])  # strongest first
    reasons = [_test_reason(keys[r["name"]], r, tests[keys[r["name"]]]) for r in rows]
    figures = {r["name"]: r["effect_size"] for r in rows}
    check = None
    if headline is not None:
        check = headline_check(headline.metric, headline.value, headline.interval, p.floor(headline.reference))
    if check is not None and check.fails:
        reasons.append(Reason(TestKey("headline", check.metric), check.low, check.floor, current=check.value))
        figures[f"{check.metric}_low"] = check.low
    return Alert(bool(reasons), tuple(reasons), table, figures, check)
