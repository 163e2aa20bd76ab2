"""The alert policy: when a monitored period raises a retraining alert, with every default once."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["AlertPolicy", "POLICY", "KINDS", "DEFAULT_HEADLINE"]

#: The metric watched against the floor when a run spec names none (monitoring and the label-based
#: checks of an evaluation): robust to class imbalance, defined on labels alone.
DEFAULT_HEADLINE = "balanced_accuracy"

#: Kind of a monitoring test -> the policy field holding its practical threshold.
KINDS = {"prevalence_label": "prevalence_change", "prevalence_pred": "prevalence_change",
         "class_mix_label": "psi", "class_mix_pred": "psi", "score": "score_shift", "price": "price_change"}


@dataclass(frozen=True)
class AlertPolicy:
    """When a period raises a retraining alert.

    A period alerts when a test rejects after the correction of all the period's tests (method
    ``correction`` at ``alpha``) AND its effect passes the practical threshold below, or when the
    lower interval bound of the headline metric falls under its floor. Both halves matter: with
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
    - ``price_change`` = 0.10: relative price shift of a class (predicted class): ``10**W - 1``
      with W the Wasserstein distance of log10 prices (a uniform 15 % rise gives 0.15; robust to
      the pack-size modes that make medians jump), tested with KS on log prices. Monthly changes
      of a COICOP class index are mostly within a few percent (ONS CPI), so a 10 % jump is
      abnormal, and it moves the cost of the class's false positives and negatives (ONS Annexes
      E, F); a 15 % rise alerts.
    - the headline floor: ``metric_floor`` when given, else the reference value minus
      ``metric_drop`` = 0.05 (five points of the headline metric, e.g. balanced accuracy). With
      few labelled rows the interval is wide and its lower bound may cross the floor: label
      enough rows (see metrics_core.sampling.sample_size). ``level`` is the confidence level of
      the headline metric's interval.

    Examples
    --------
    >>> p = AlertPolicy.of({"psi": 0.2})
    >>> p.psi, p.alpha, p.threshold("class_mix_pred"), p.floor(0.9)
    (0.2, 0.05, 0.2, 0.85)
    """

    alpha: float = 0.05
    correction: str = "bh"
    prevalence_change: float = 0.02
    psi: float = 0.1
    score_shift: float = 0.02
    price_change: float = 0.10
    metric_drop: float = 0.05
    metric_floor: float | None = None
    level: float = 0.95

    @classmethod
    def of(cls, policy: Any = None) -> "AlertPolicy":
        """The policy from None (the defaults), an AlertPolicy, a mapping or any object with some
        of the fields (e.g. the run spec's pydantic ``alerts``); missing or None fields take the
        defaults, except ``metric_floor`` whose default is None."""
        if policy is None or isinstance(policy, cls):
            return policy or POLICY
        get = policy.get if isinstance(policy, Mapping) else (lambda k: getattr(policy, k, None))
        given = {f.name: get(f.name) for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in given.items() if v is not None})

    def threshold(self, kind: str) -> float:
        """The practical threshold of a test kind (:data:`KINDS`)."""
        return float(getattr(self, KINDS[kind]))

    def floor(self, reference: float | None) -> float | None:
        """The headline floor: ``metric_floor``, else ``reference - metric_drop``; None when
        neither is defined (no floor set and no finite reference value)."""
        if self.metric_floor is not None:
            return float(self.metric_floor)
        if reference is None or not math.isfinite(reference):
            return None
        return float(reference) - self.metric_drop


#: The default policy.
POLICY = AlertPolicy()
