"""The retraining alert decision of one period and its reasons, as typed records rendered to text once."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import polars as pl
from scipy import special

from metrics_core import drift
from metrics_core.monitoring.policy import AlertPolicy
from metrics_core.monitoring.kinds import KINDS, TestKey
from metrics_core.significance import TestResult
from metrics_core.significance.proportions import z_critical

__all__ = ["Headline", "HeadlineCheck", "Reason", "Alert", "decide_alert", "headline_check", "headline_test", "POWER",
           "VERDICTS"]

NAN = math.nan

_TABLE_SCHEMA = {"name": pl.String, "test": pl.String, "statistic": pl.Float64, "p_value": pl.Float64,
                 "p_adjusted": pl.Float64, "effect_size": pl.Float64, "effect_name": pl.String,
                 "threshold": pl.Float64, "drift": pl.Boolean, "verdict": pl.String}


@dataclass(frozen=True)
class Headline:
    """The headline metric of a period: its ``value``, confidence ``interval`` (None or nan bounds
    when not computed), the ``reference`` window's value and interval (None without labels there)
    and ``n_labelled``, the period's labelled rows (0 = unknown), ``n_reference`` the reference's
    (0 = unknown). ``caveat`` says why the value may not hold (a label-lag estimate flagged
    unreliable: :func:`~metrics_core.monitoring.estimate.unreliable_note`); the drop test's reason
    carries it (:attr:`Reason.caveat`), ``""`` when nothing is known against the value."""

    metric: str
    value: float
    interval: tuple[float, float] | None = None
    reference: float | None = None
    reference_interval: tuple[float, float] | None = None
    n_labelled: int = 0
    n_reference: int = 0
    caveat: str = ""


#: Power the headline test must have to see a drop of ``metric_drop``; below it the verdict is
#: "not enough labels to judge" (the customary 80 %, Cohen 1988).
POWER = 0.8

#: Expected errors and expected successes the headline's z-test needs at the reference value: the
#: textbook rule for the normal approximation of a proportion (n p >= 5 and n (1 - p) >= 5). With
#: fewer labelled rows the test is undefined and the verdict "not enough labels to judge".
MIN_EXPECTED = 5

#: The verdicts of a period.
VERDICTS = ("retrain", "not enough labels to judge", "no alert")


@dataclass(frozen=True)
class HeadlineCheck:
    """The headline test of a period: the drop of the metric against the reference, one-sided.

    ``drop`` = reference - value (``metric_floor`` - value when a floor is set: then
    ``reference`` is the floor and the threshold 0), ``threshold`` the practical drop
    ``metric_drop``, ``p_value`` / ``p_adjusted`` the one-sided z-test of the drop (corrected with
    the period's other tests), ``fails`` when it rejects AND the drop passes the threshold.
    ``power`` is the test's power to see a drop of ``threshold`` at ``alpha``; under
    :data:`POWER` (and not failing) the verdict is ``"not enough labels to judge"`` and
    ``n_needed`` holds the labelled rows that would give that power (None when the reference
    itself is too small). ``low`` / ``high`` are the period's interval.
    """

    metric: str
    value: float
    low: float
    high: float
    floor: float
    fails: bool
    reference: float = NAN
    drop: float = NAN
    threshold: float = NAN
    p_value: float = NAN
    p_adjusted: float = NAN
    power: float = NAN
    n_labelled: int = 0
    n_needed: int | None = None
    n_min: int = 0

    @property
    def enough_labels(self) -> bool:
        """False when the test could not see a drop of ``threshold`` (power under :data:`POWER`)
        or the period has fewer labelled rows than its z-test needs (``n_min``)."""
        return self.fails or not (self.power < POWER or 0 < self.n_labelled < self.n_min)

    @property
    def note(self) -> str:
        """"not enough labels to judge ..." with the labelled rows needed, or ``""``."""
        if self.enough_labels:
            return ""
        if self.n_labelled == 0:
            return (f"not enough labels to judge {self.metric}: without labelled rows it sees a drop of "
                    f"{self.threshold:.3g} with power {self.power:.0%}")
        if self.n_labelled < self.n_min:
            return (f"not enough labels to judge {self.metric}: {self.n_labelled:,} labelled row(s) are too few "
                    f"for its test, which needs at least {self.n_min:,} ({MIN_EXPECTED} expected errors and "
                    f"successes at {self.reference:.3g})")
        head = (f"not enough labels to judge {self.metric}: {self.n_labelled:,} labelled rows see a drop of "
                f"{self.threshold:.3g} with power {self.power:.0%}")
        if self.n_needed is None:
            return head + "; the reference window has too few labelled rows, label more of it"
        return head + f"; about {self.n_needed:,} labelled rows are needed (power {POWER:.0%})"


@dataclass(frozen=True)
class Reason:
    """Why a period alerts: one rejected test past its threshold (the headline test among them).

    ``key`` names the test (kind ``"headline"`` and the metric for the performance bound);
    ``effect`` is the test's effect size (the headline: the bound compared, nan when only the
    value was); ``threshold`` the practical threshold (the headline: the floor); ``p_adjusted``
    the corrected p-value (nan for the headline); ``reference`` and ``current`` the values the
    sentence shows (prevalences, score means, median prices; the headline: nan and its value);
    ``caveat`` what the sentence must not be read without (the headline of an estimate flagged
    unreliable: ``"UNRELIABLE: degenerate scores"``), ``""`` for none. :attr:`text` renders the sentence.
    """

    key: TestKey
    effect: float
    threshold: float
    p_adjusted: float = NAN
    reference: float = NAN
    current: float = NAN
    caveat: str = ""

    @property
    def kind(self) -> str:
        return self.key.kind

    def _parts(self) -> tuple[str, str]:
        """The sentence and its parenthesis (details and the corrected p-value), as the kind's entry
        of the registry renders them."""
        # 0 means the p-value fell below what a double holds (e.g. a z-test at z > 38), not an exact 0
        tail = "p_adj<1e-300" if self.p_adjusted == 0 else f"p_adj={self.p_adjusted:.2g}"
        head, details = KINDS[self.key.kind].render(self, tail)
        if self.caveat:  # in the head, so that the one-line summaries carry it too
            head = f"{head}, {self.caveat}"
        return (f"{self.key.segment_text}: {head}" if self.key.segment else head), details

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
        out = {"kind": self.key.kind, "class": self.key.cls,
               **{n: (None if v is None or not math.isfinite(v) else float(v)) for n, v in zip(names, values)}}
        if self.caveat:  # absent when empty: the records of reasons without one stay as they were
            out["caveat"] = self.caveat
        return {**out, "segment": list(self.key.segment)} if self.key.segment else out

    @classmethod
    def from_dict(cls, d: Mapping) -> "Reason":
        """The reason from :meth:`to_dict`'s output.

        >>> r = Reason(TestKey("price", "tea"), 0.15, 0.1, 0.001, 2.0, 2.3)
        >>> Reason.from_dict(r.to_dict()) == r
        True
        >>> s = Reason(TestKey("prevalence_label", "tea", ("retailer", "shop_07")), 0.2, 0.02, 1e-9, 0.1, 0.3)
        >>> Reason.from_dict(s.to_dict()) == s, s.text[:46]
        (True, "retailer=shop_07: prevalence of 'tea' (labels)")
        >>> u = Reason(TestKey("headline", "estimated/accuracy"), 0.3, 0.02, 1e-9, 0.9, 0.6,
        ...            "UNRELIABLE: degenerate scores")
        >>> Reason.from_dict(u.to_dict()) == u, u.summary
        (True, 'estimated/accuracy fell 0.300 below the reference 0.900 (now 0.600), UNRELIABLE: degenerate scores')
        """
        num = {n: NAN if d.get(n) is None else float(d[n])
               for n in ("effect", "threshold", "p_adjusted", "reference", "current")}
        key = TestKey(d["kind"], d.get("class"), tuple(d.get("segment") or ()))
        return cls(key, **num, caveat=d.get("caveat") or "")


@dataclass(frozen=True)
class Alert:
    """The decision for one period: ``alert`` (retrain or not), ``reasons`` (strongest first),
    ``table`` (one row per test, the headline test included: p-values corrected together,
    threshold, drift verdict), ``figures`` (test name -> effect, for the event payload) and
    ``headline`` (the headline test, None without labels or floor)."""

    alert: bool
    reasons: tuple[Reason, ...]
    table: pl.DataFrame
    figures: dict[str, float]
    headline: HeadlineCheck | None = field(default=None)
    segment_notes: tuple[str, ...] = ()
    untested_notes: tuple[str, ...] = ()

    @property
    def texts(self) -> list[str]:
        """The reasons as sentences."""
        return [r.text for r in self.reasons]

    @property
    def verdict(self) -> str:
        """``"retrain"``, else ``"not enough labels to judge"`` when the headline test lacks power,
        else ``"no alert"`` (:data:`VERDICTS`)."""
        if self.alert:
            return VERDICTS[0]
        return VERDICTS[1] if self.headline is not None and not self.headline.enough_labels else VERDICTS[2]

    @property
    def notes(self) -> list[str]:
        """Sentences that are not alerts: why the period cannot be judged (labelled rows needed), the
        segments not tested (absent from the reference or too small) and the tests this period's data
        cannot give, each said once."""
        head = [self.headline.note] if self.headline is not None and self.headline.note else []
        return head + list(self.segment_notes) + list(self.untested_notes)


def _se(interval: tuple[float, float] | None, level: float) -> float:
    """Standard error from a two-sided interval at ``level`` (nan without one)."""
    if interval is None or not all(math.isfinite(x) for x in interval):
        return NAN
    return (interval[1] - interval[0]) / (2.0 * z_critical(level))


def min_labelled(value: float) -> int:
    """Labelled rows the headline's z-test needs at ``value``, the reference (or floor) of a metric
    read as a rate: :data:`MIN_EXPECTED` expected errors and as many successes; 0 (no minimum) for
    a value outside (0, 1).

    >>> min_labelled(0.885), min_labelled(0.5), min_labelled(0.99), min_labelled(1.0)
    (44, 10, 500, 0)
    """
    if not 0.0 < value < 1.0:
        return 0
    return math.ceil(MIN_EXPECTED / min(value, 1.0 - value) - 1e-9)


def headline_test(headline: Headline, policy: Any = None) -> tuple[TestResult, float, float] | None:
    """The one-sided z-test of the headline's drop against the reference, and its practical threshold.

    Parameters
    ----------
    headline : Headline
        The period's metric (value, interval, labelled rows) and the reference's (value, interval).
    policy : AlertPolicy, mapping or object, optional
        ``metric_drop`` / ``metric_floor`` (the floor) and ``level`` (of both intervals).

    Returns
    -------
    (TestResult, float, float) or None
        The test, the threshold on the drop (``metric_drop``; 0 against a ``metric_floor``) and
        the floor; None without a finite value or without a floor (no reference value and no
        ``metric_floor``).

    Notes
    -----
    With ``r`` the reference value (``metric_floor`` when set: then the threshold is 0 and the
    test asks whether the metric is significantly under the floor), ``v`` the period's and their
    standard errors read off the intervals (``se = width / (2 z_level)``; 0 for a fixed floor):
    ``drop = r - v``, ``z = drop / sqrt(se_r^2 + se_v^2)``, one-sided ``p = 1 - Phi(z)``.
    Power to see a drop ``t`` (the threshold) at ``alpha``: ``Phi(t / se - z_(1-alpha))``. The
    labelled rows needed for power :data:`POWER` scale the period's ``n`` by the variance ratio
    ``se_v^2 / se_v*^2`` with ``se_v*^2 = (t / (z_(1-alpha) + z_POWER))^2 - se_r^2``: for a
    proportion (accuracy) this is the ONS manual-check sample size
    :func:`metrics_core.sampling.sample_size` at margin ``z_level * se_v*`` and ``expected = v``.
    Without intervals the p-value is nan and the test falls back to ``drop >= threshold``.

    Small periods: the period's ``se_v`` is at least ``se_r sqrt(n_reference / n_labelled)``
    (the reference's spread at the period's size), because a few rows that are all right or all
    wrong give an interval of width 0; and with fewer labelled rows than :func:`min_labelled` of
    the reference (:data:`MIN_EXPECTED` expected errors and successes, the normal
    approximation's rule) the p-value is nan (no alert) and the verdict "not enough labels to
    judge". One wrong row against a reference of 0.885 is then no alert: an exact binomial test
    gives p = 0.115 for it, while the z-test on a collapsed interval gave p = 0.

    Examples
    --------
    >>> t, threshold, floor = headline_test(Headline("accuracy", 0.80, (0.78, 0.82), 0.85, (0.84, 0.86), 1500))
    >>> round(t.effect_size, 3), threshold, round(t.p_value, 6) < 1e-4
    (0.05, 0.05, True)
    """
    p = AlertPolicy.of(policy)
    ref = headline.reference if headline.reference is not None and math.isfinite(headline.reference) else None
    floor = p.floor(ref)
    if floor is None or headline.value is None or not math.isfinite(headline.value):
        return None
    relative = ref is not None and p.metric_floor is None
    base = ref if relative else floor
    se_r = _se(headline.reference_interval, p.level) if relative else 0.0
    se_r = 0.0 if not math.isfinite(se_r) else se_r
    se_v = _se(headline.interval, p.level)
    n, n_min = headline.n_labelled, min_labelled(base)
    if relative and n > 0 and headline.n_reference > 0 and se_r > 0 and math.isfinite(se_v):
        # A small period's interval can collapse (a bootstrap of rows that are all right, or all
        # wrong, has width 0); without a drop it spreads at least as the reference's does at n rows.
        se_v = max(se_v, se_r * math.sqrt(headline.n_reference / n))
    se = math.hypot(se_r, se_v)
    drop = base - float(headline.value)
    threshold = p.metric_drop if relative else 0.0
    z = drop / se if se > 0 and not 0 < n < n_min else NAN
    # ndtr(-z), -ndtri(q) and ndtr(x) are how scipy.stats.norm computes sf, isf and cdf (the same floats),
    # without its ~0.1 ms of argument handling a call: a period with 50 segments tests 51 headlines
    pv = float(special.ndtr(-z)) if math.isfinite(z) else NAN
    z_a, z_b = float(-special.ndtri(p.alpha)), float(-special.ndtri(1 - POWER))
    power = float(special.ndtr(threshold / se - z_a)) if se > 0 and threshold > 0 else NAN
    details = {"reference": base, "value": float(headline.value), "se_reference": se_r, "se_current": se_v,
               "power": power, "n_labelled": n, "n_needed": NAN, "floor": floor, "n_min": n_min}
    if math.isfinite(power) and power < POWER and n > 0:
        need = (threshold / (z_a + z_b)) ** 2 - se_r ** 2
        if need > 0:
            details["n_needed"] = float(math.ceil(n * se_v ** 2 / need - 1e-9))
    details["drop"] = float(drop)
    effect = float(drop)
    if 0 < n < n_min:  # an undefined test, not one judged on the drop alone (as one without intervals is)
        details["n_needed"] = float(max(n_min, details["n_needed"])) if math.isfinite(details["n_needed"]) \
            else float(n_min)
        effect = NAN
    verdict = "undefined" if not math.isfinite(pv) else ("significant" if pv <= p.alpha else "not significant")
    if 0 < n < n_min:
        verdict = f"undefined: {n} labelled row(s), fewer than the {n_min} the normal approximation needs"
    test = TestResult("one-sided z-test of the drop", float(z), pv, effect, f"drop of {headline.metric}",
                      verdict if 0 < n < n_min else f"{verdict} at alpha {p.alpha:g}", p.alpha, headline.interval,
                      details)
    return test, threshold, floor


def headline_check(metric: str, value: float | None, interval: tuple[float, float] | None,
                   floor: float | None) -> HeadlineCheck | None:
    """The performance bound alone (no test): fails when the lower interval bound is under ``floor``.

    Kept for evaluations that compare one period with a fixed floor; monitoring uses
    :func:`headline_test` inside :func:`decide_alert`.

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


def _test_reason(key: TestKey, row: dict, test: TestResult, caveat: str = "") -> Reason:
    """The reason of a test that alerts: its table row, the values its sentence shows (``Kind.before_after``)
    and its caveat (:attr:`Headline.caveat` of a headline test)."""
    d = test.details
    before, after = KINDS[key.kind].before_after
    return Reason(key, row["effect_size"], row["threshold"], row["p_adjusted"], d.get(before, NAN), d.get(after, NAN),
                  caveat)


def _check(headline: Headline, test: TestResult, row: dict, floor: float) -> HeadlineCheck:
    """The headline's row of the drift table as a :class:`HeadlineCheck`."""
    low, high = headline.interval if headline.interval is not None else (NAN, NAN)
    need = test.details["n_needed"]
    return HeadlineCheck(headline.metric, float(headline.value), float(low), float(high), float(floor),
                         bool(row["drift"]), float(test.details["reference"]), float(test.details["drop"]),
                         float(row["threshold"]), float(test.p_value), float(row["p_adjusted"]),
                         float(test.details["power"]), int(headline.n_labelled),
                         None if not math.isfinite(need) else int(need), int(test.details["n_min"]))


#: The order of the reasons, by what a test concerns: the model's performance (its headline metric,
#: its calibration), then what it reads and predicts (prevalences, class mix, scores, prices of
#: predicted and labelled classes), then the prices of its error cells (ONS Annex E). An error cell
#: holds the rows the model got wrong, so its price distribution moves whenever the errors move (a
#: shift of another class's prevalence changes which rows are false positives): a consequence of the
#: other tests' findings more than a finding of its own. A kind not named here ranks with the middle tier.
def _strength(key: TestKey, row: dict) -> tuple:
    """Sort key of an alerting test, strongest first: its kind's tier (:attr:`Kind.tier`), then its effect
    over its threshold (``|effect| / threshold``; a threshold of 0, the floor of the headline, ranks
    first in its tier), then the smaller corrected p-value.

    >>> row = {"effect_size": 0.07, "threshold": 0.02, "p_adjusted": 3e-50}
    >>> _strength(TestKey("prevalence_label", "soft_drinks"), row) < _strength(
    ...     TestKey("price_false_positive", "bread"), {"effect_size": -0.376, "threshold": 0.1, "p_adjusted": 1e-9})
    True
    """
    ratio = abs(row["effect_size"]) / row["threshold"] if row["threshold"] else math.inf
    p = row["p_adjusted"] if row["p_adjusted"] is not None and math.isfinite(row["p_adjusted"]) else 1.0
    return KINDS[key.kind].tier, -ratio, p


def decide_alert(tests: Mapping[TestKey, TestResult], policy: Any = None, headline: Headline | None = None,
                 new_classes: Mapping[str, tuple[int, float]] | None = None, *,
                 segment_headlines: Mapping[tuple[str, str], Headline] | None = None,
                 segment_notes: tuple[str, ...] = (), untested_notes: tuple[str, ...] = ()) -> Alert:
    """Retrain or not: the alert policy as a pure function.

    The headline metric's drop against the reference is one more test (:func:`headline_test`,
    one-sided, practical threshold ``metric_drop``, or the distance to ``metric_floor``). All
    p-values of the period are corrected together (``policy.correction`` at ``policy.alpha``,
    :func:`metrics_core.drift.drift_table`); a test alerts when it rejects AND ``|effect| >=
    threshold``, the threshold chosen by the test's kind (:meth:`AlertPolicy.threshold`: absolute
    prevalence change, PSI of the class mix, Wasserstein shift of scores, relative price shift,
    drop of the headline). When the headline test could not see a drop of its threshold (power
    under :data:`POWER`) and no test alerts, the verdict is "not enough labels to judge"
    (:attr:`Alert.verdict`, :attr:`Alert.notes`, with the labelled rows needed), not an alert.
    This is the retraining rule of ONS Annex F (monitoring prevalence, scores and prices against
    a reference window).

    Parameters
    ----------
    tests : mapping of TestKey to TestResult
        The period's tests (:func:`~metrics_core.monitoring.kinds.run_tests`); may be empty.
    policy : AlertPolicy, mapping or object, optional
        The thresholds (:meth:`AlertPolicy.of`: missing fields take the defaults).
    headline : Headline, optional
        The headline metric of the period and of the reference; None skips the headline test.
    new_classes : mapping of str to (int, float), optional
        Classes outside the class list met in the period (an open class list): class ->
        (rows, share of the period's rows). Each is a reason of kind ``new_class``, first.
    segment_headlines : mapping of (str, str) to Headline, optional
        The headline of each tested segment (``(column, value)``) and of the same segment of the
        reference: each one more headline test (key ``TestKey("headline", metric, segment)``),
        corrected with all the others. Only the whole period's gives :attr:`Alert.headline`.
    segment_notes : tuple of str
        Sentences on the segments not tested (:attr:`Alert.notes`).
    untested_notes : tuple of str
        Sentences on the tests the period's data cannot give (:attr:`Alert.notes`).

    Returns
    -------
    Alert
        ``alert`` is True when any reason holds; reasons strongest first: new classes, then by
        the tier of their kind (:attr:`Kind.tier`: performance, then what the model reads and
        predicts, then the prices of its error cells) and within a tier by ``|effect| / threshold``.
        Undefined tests (nan p-value or effect) never alert.

    Examples
    --------
    >>> t = {TestKey("prevalence_pred", "a"): drift.two_proportion_z(1000, 10000, 1500, 10000)}
    >>> a = decide_alert(t)
    >>> a.alert, a.reasons[0].text[:47]
    (True, "prevalence of 'a' (predictions) rose from 10.0%")
    >>> h = Headline("accuracy", 0.70, (0.68, 0.72), 0.80, (0.79, 0.81), 2000)
    >>> decide_alert({}, {"metric_drop": 0.05}, h).texts[0][:51]
    'accuracy fell 0.100 below the reference 0.800 (now '
    >>> small = Headline("accuracy", 0.78, (0.70, 0.86), 0.80, (0.79, 0.81), 100)
    >>> decide_alert({}, None, small).verdict
    'not enough labels to judge'
    >>> decide_alert({}, new_classes={"kombucha": (37, 0.0186)}).texts
    ["class 'kombucha' appeared: 37 rows (1.9% of the period)"]
    """
    p = AlertPolicy.of(policy)
    tests = dict(tests)
    thresholds = {k.name: p.threshold(k.kind) for k in tests}
    floor = None
    ht = headline_test(headline, p) if headline is not None else None
    if ht is not None:
        key = TestKey("headline", headline.metric)
        tests[key], thresholds[key.name], floor = ht
    drops = [TestKey("headline", headline.metric).name] if ht is not None else []
    caveats = {drops[0]: headline.caveat} if ht is not None else {}
    for segment, h in (segment_headlines or {}).items():
        st = headline_test(h, p)
        if st is not None:
            key = TestKey("headline", h.metric, tuple(segment))
            tests[key], thresholds[key.name] = st[0], st[1]
            drops.append(key.name)
            caveats[key.name] = h.caveat
    keys = {k.name: k for k in tests}
    table = drift.drift_table({k.name: t for k, t in tests.items()}, thresholds, p.correction, p.alpha) \
        if tests else pl.DataFrame(schema=_TABLE_SCHEMA)
    if drops:  # a drop, not a rise: the headline's effect is signed
        rise = pl.col("name").is_in(drops) & (pl.col("effect_size") < pl.col("threshold"))
        table = table.with_columns(drift=pl.when(rise).then(False).otherwise(pl.col("drift")))
    rows = sorted(table.filter(pl.col("drift")).iter_rows(named=True), key=lambda r: _strength(keys[r["name"]], r))
    reasons = [Reason(TestKey("new_class", c), float(share), 0.0, reference=0.0, current=float(n))
               for c, (n, share) in sorted((new_classes or {}).items(), key=lambda kv: -kv[1][0])]
    reasons += [_test_reason(keys[r["name"]], r, tests[keys[r["name"]]], caveats.get(r["name"], "")) for r in rows]
    figures = {r.key.name: r.effect for r in reasons[:len(new_classes or {})]}
    figures.update({r["name"]: r["effect_size"] for r in rows})
    check = None
    if ht is not None:
        row = table.filter(pl.col("name") == TestKey("headline", headline.metric).name).row(0, named=True)
        check = _check(headline, ht[0], row, floor)
    return Alert(bool(reasons), tuple(reasons), table, figures, check, tuple(segment_notes), tuple(untested_notes))
