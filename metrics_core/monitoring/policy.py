"""The alert policy: when a monitored period raises a retraining alert, each field (default, bounds, meaning) once."""

from __future__ import annotations

import dataclasses
import math
import operator
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Any, Mapping

from metrics_core.contract import near_misses
from metrics_core.errors import InputError
from metrics_core.monitoring.kinds import KINDS

__all__ = ["AlertPolicy", "POLICY", "POLICY_FIELDS", "PolicyField", "DEFAULT_HEADLINE"]

#: The metric watched against the floor when a run spec names none (monitoring and the label-based
#: checks of an evaluation): robust to class imbalance, defined on labels alone.
DEFAULT_HEADLINE = "balanced_accuracy"

#: The bounds a policy field may declare, with pydantic's names (the run spec builds its model from them).
_BOUNDS = {"gt": (operator.gt, "greater than"), "ge": (operator.ge, "greater than or equal to"),
           "lt": (operator.lt, "less than"), "le": (operator.le, "less than or equal to")}


def _field(default: Any, doc: str, *, choices: tuple[str, ...] | None = None, **bounds: float) -> Any:
    """A policy field: its default, its one-line meaning, its bounds (``gt``, ``ge``, ``lt``,
    ``le``) or its allowed values; the dataclass and the run spec's model both read these."""
    return field(default=default, metadata={"doc": doc, "bounds": bounds, "choices": choices})


@dataclass(frozen=True)
class PolicyField:
    """One field of :class:`AlertPolicy` as the run spec's model is built from it: ``name``,
    ``default``, ``bounds`` (pydantic's ``gt``/``ge``/``lt``/``le``), ``choices`` (the allowed
    texts, None for a number), ``doc`` (one line) and ``optional`` (None allowed)."""

    name: str
    default: Any
    bounds: dict
    choices: tuple[str, ...] | None
    doc: str

    @property
    def optional(self) -> bool:
        return self.default is None

    def check(self, value: Any) -> Any:
        """``value`` as the policy holds it (a float, or one of ``choices``); an :class:`InputError`
        that names the field and the bound when it is out of bounds, as the run spec rejects it.

        >>> level = next(f for f in POLICY_FIELDS if f.name == "level")
        >>> level.check("0.9")
        0.9
        >>> level.check(95)
        Traceback (most recent call last):
        ...
        metrics_core.errors.InputError: alert policy: field 'level' must be less than 1 (got 95); ...
        """
        if value is None and self.optional:
            return None
        if self.choices is not None:
            if value not in self.choices:
                allowed = ", ".join(map(repr, self.choices))
                raise InputError(f"alert policy: field {self.name!r} must be one of {allowed} (got {value!r}); "
                                 f"{self.doc}")
            return value
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(f"alert policy: field {self.name!r} must be a number (got {value!r:.80}); "
                             f"{self.doc}") from None
        for bound, limit in self.bounds.items():
            holds, words = _BOUNDS[bound]
            if not holds(number, limit):  # nan holds no bound
                raise InputError(f"alert policy: field {self.name!r} must be {words} {limit:g} (got {value!r:.80}); "
                                 f"{self.doc}")
        return number


@dataclass(frozen=True)
class AlertPolicy:
    """When a period raises a retraining alert.

    A period alerts when a test rejects after the correction of all the period's tests (method
    ``correction`` at ``alpha``) AND its effect passes the practical threshold below; the
    headline metric's drop against the reference is one of those tests. Both halves matter: with
    200,000 rows a period a 0.3-point prevalence wobble is "significant" (p < 1e-3) and must not
    alert; a 5-point prevalence rise, a 0.05 shift of one class's scores or a 15 % price rise in
    one class must. The defaults sit between those cases with a margin on both sides:

    - ``prevalence_change`` = 0.02 (2 percentage points, absolute, any class, on labels and on
      predictions): 6.7x the 0.3-point wobble, 0.4x the 5-point rise. At 2,000 rows a period the
      standard error of a 10 % prevalence difference is 1 point, so 2 points is also about where
      the test starts to reject at all.
    - ``psi`` = 0.1 for the class distribution as a whole (chi-squared test on the K counts): the
      customary reading of PSI (Siddiqi 2006; Yurdakul 2018) is < 0.1 stable, 0.1-0.25 moderate,
      >= 0.25 major shift; a moderate shift of the whole class mix already changes which metric
      ONS Tables 1-2 recommend, so it alerts. (One class rising 10 -> 20 % gives PSI 0.08; the
      2-point rule catches such single-class moves first.)
    - ``score_shift`` = 0.02: Wasserstein-1 distance (the mean absolute shift, in score units)
      between a class's reference and current score distributions, tested with KS. A uniform
      0.05 shift gives 0.05; a 0.3-point prevalence wobble moves a class's score distribution by
      at most 0.003. PSI of the scores (10 reference deciles) is logged with the 0.1/0.25 lines
      but does not decide: narrow deciles near 0 make it large for shifts no decision notices.
    - ``price_change`` = 0.10: relative price shift of a class (predicted class): ``10**(±W) - 1``
      with W the Wasserstein distance of log10 prices (a uniform 15 % rise gives 0.15, a fall -0.15; robust to
      the pack-size modes that make medians jump), tested with KS on log prices. Monthly changes
      of a COICOP class index are mostly within a few percent (ONS CPI), so a 10 % jump is
      abnormal, and it moves the cost of the class's false positives and negatives (ONS Annexes
      E, F); a 15 % rise alerts.
    - ``calibration_change`` = 0.05: a labelled period's expected calibration error measured
      against the reference's calibration map (mean |observed - expected| positives per row over
      10 score bins; metrics_core.monitoring.calibration_change.calibration_change), tested with a
      chi-squared over the bins. Stable periods stay under 0.03 (sampling noise of both the
      period and a small reference: 0.027 on the top label of a 3,000-row demo month against a
      2,250-row reference, where 0.02 gave a false alarm); 15 % of the labels changing class
      (a concept shift) gives 0.12 on the top label (0.03-0.07 per class). A calibration error
      of 5 points moves the estimated metrics (which assume the reference's map) by about as much.
    - ``metric_drop`` = 0.05: the drop of the headline metric (e.g. balanced accuracy) against
      the reference, tested one-sided (z on the standard errors of both intervals) and corrected
      with the rest; with ``metric_floor`` set the test is against that floor (threshold 0). When
      the test's power to see a drop of ``metric_drop`` is under 80 %, the verdict is "not enough
      labels to judge" with the labelled rows needed (metrics_core.sampling.sample_size), not an
      alert. ``level`` is the confidence level of the headline metric's interval.
    - The input features (``columns.features``; :mod:`metrics_core.monitoring.kinds.features`):
      ``feature_shift`` = 0.1 reference standard deviations of Wasserstein-1 shift of a numeric
      feature (a feature has no known unit, so the shift is read on its own spread: 0.1 SD is
      the customary "small" effect of a normalised distance, the default of
      :func:`metrics_core.drift.wasserstein`; a mean shift of 0.1 SD moves it by 0.1), also for
      the tokens per value of a text feature; ``feature_psi`` = 0.1 for a categorical feature,
      the same reading of PSI as the class mix; ``feature_unseen`` = 0.05: 5 points more of
      the period's tokens unseen in the reference than its Good-Turing missing mass predicts (a
      retailer renaming its products); ``feature_auroc`` = 0.6 for the domain classifier on all
      features together: on stable periods its cross-fitted AUROC is 0.5 with a standard error
      of about 0.01 on the 2,000-row samples, so 0.6 is ten standard errors off and a period
      that a linear classifier tells apart one time in ten better than chance.

    Examples
    --------
    >>> p = AlertPolicy.of({"psi": 0.2})
    >>> p.psi, p.alpha, p.threshold("class_mix_pred"), p.floor(0.9)
    (0.2, 0.05, 0.2, 0.85)
    """

    alpha: float = _field(0.05, "family-wise level of the period's tests after correction.", gt=0, lt=1)
    correction: str = _field("bh", "multiple-testing correction over all tests of one period.",
                             choices=("bh", "holm", "bonferroni"))
    prevalence_change: float = _field(0.02, "absolute change of a class's prevalence (labels or predictions).",
                                      gt=0, lt=1)
    psi: float = _field(0.1, "PSI of the whole class distribution (3+ classes).", gt=0)
    score_shift: float = _field(0.02, "Wasserstein-1 shift of a class's scores, in score units.", gt=0, lt=1)
    calibration_change: float = _field(0.05, "calibration error of a labelled period against the reference's "
                                       "calibration map.", gt=0, lt=1)
    price_change: float = _field(0.10, "relative price shift of a class (10**W - 1, W of log10 prices).", gt=0)
    metric_drop: float = _field(0.05, "drop of the headline metric against the reference.", ge=0)
    metric_floor: float | None = _field(None, "absolute floor of the headline metric; None = reference value minus "
                                        "metric_drop.")
    level: float = _field(0.95, "confidence level of the headline metric's interval.", gt=0, lt=1)
    feature_shift: float = _field(0.1, "Wasserstein-1 shift of a numeric input feature (or of a text feature's "
                                  "tokens per value), in reference standard deviations.", gt=0)
    feature_psi: float = _field(0.1, "PSI of a categorical input feature's values.", gt=0)
    feature_unseen: float = _field(0.05, "share of a text feature's tokens unseen in the reference, above the share "
                                   "the reference predicts (Good-Turing).", gt=0, lt=1)
    feature_auroc: float = _field(0.6, "AUROC of the cross-fitted domain classifier on the input features "
                                  "(0.5 = the period looks like the reference).", gt=0.5, le=1)

    def __post_init__(self) -> None:
        # the notebook's policy accepts what the run spec's model accepts, no more
        for f in POLICY_FIELDS:
            object.__setattr__(self, f.name, f.check(getattr(self, f.name)))

    @classmethod
    def of(cls, policy: Any = None) -> "AlertPolicy":
        """The policy from None (the defaults), an AlertPolicy, a mapping or any object with some
        of the fields (e.g. the run spec's pydantic ``alerts``); missing or None fields take the
        defaults, except ``metric_floor`` whose default is None. A mapping with a key that is no
        field (``prevalance_change``) is an :class:`InputError`: the default would silently apply.

        >>> AlertPolicy.of({"prevalance_change": 0.05})
        Traceback (most recent call last):
        ...
        metrics_core.errors.InputError: alert policy: unknown field 'prevalance_change' (did you mean ...
        """
        if policy is None or isinstance(policy, cls):
            return policy or POLICY
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in policy if k not in names] if isinstance(policy, Mapping) else []
        if unknown:
            close = near_misses(str(unknown[0]), names) or get_close_matches(str(unknown[0]), names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(f"alert policy: unknown field {unknown[0]!r}{hint}; the fields are {', '.join(names)}.")
        get = policy.get if isinstance(policy, Mapping) else (lambda k: getattr(policy, k, None))
        given = {f.name: get(f.name) for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in given.items() if v is not None})

    def threshold(self, kind: str) -> float:
        """The practical threshold of a test kind: the policy field its entry of the registry
        (:data:`metrics_core.monitoring.kinds.KINDS`) names.

        >>> POLICY.threshold("price_false_negative"), POLICY.threshold("headline")
        (0.1, 0.05)
        """
        entry = KINDS.get(kind)
        if entry is None or entry.policy_field is None:
            raise InputError(f"alert policy: test kind {kind!r} has no practical threshold; the kinds with one are "
                             f"{sorted(k for k, e in KINDS.items() if e.policy_field)}.")
        return float(getattr(self, entry.policy_field))

    def floor(self, reference: float | None) -> float | None:
        """The headline floor: ``metric_floor``, else ``reference - metric_drop``; None when
        neither is defined (no floor set and no finite reference value)."""
        if self.metric_floor is not None:
            return float(self.metric_floor)
        if reference is None or not math.isfinite(reference):
            return None
        return float(reference) - self.metric_drop


#: The fields of the policy, each declared once above: the run spec's ``alerts`` model is built from them.
POLICY_FIELDS = tuple(PolicyField(f.name, f.default, dict(f.metadata["bounds"]), f.metadata["choices"],
                                  f.metadata["doc"]) for f in dataclasses.fields(AlertPolicy))

#: The default policy.
POLICY = AlertPolicy()
