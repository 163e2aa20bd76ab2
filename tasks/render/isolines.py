"""The ONS isolines of ROC and PR space: balanced-accuracy lines and F-beta curves (pure numpy geometry)."""

from __future__ import annotations

import math

import numpy as np


def ba_isoline(ba: float, fpr: np.ndarray | None = None, num: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Points of the balanced-accuracy isoline ``BA = (TPR + 1 - FPR) / 2`` inside ROC space.

    Solving for TPR gives the straight line ``TPR = FPR + 2 BA - 1`` (ONS Annex D, Figure 1);
    only the part with ``0 <= FPR, TPR <= 1`` is returned. ``BA = 0.5`` is the chance diagonal.

    Parameters
    ----------
    ba : float
        Balanced accuracy of the isoline, in [0, 1].
    fpr : array, optional
        False positive rates at which to evaluate; defaults to ``num`` points spanning the visible part.

    Returns
    -------
    (fpr, tpr) : arrays
        Points on the isoline, both within [0, 1]; empty when no part of the line is visible.

    >>> fpr, tpr = ba_isoline(0.8, num=3)
    >>> fpr.round(2).tolist(), tpr.round(2).tolist()
    ([0.0, 0.2, 0.4], [0.6, 0.8, 1.0])
    """
    offset = 2.0 * ba - 1.0
    lo, hi = max(0.0, -offset), min(1.0, 1.0 - offset)
    if fpr is None:
        fpr = np.linspace(lo, hi, num) if lo <= hi else np.empty(0)
    fpr = np.asarray(fpr, dtype=float)
    tpr = fpr + offset
    keep = (fpr >= 0) & (fpr <= 1) & (tpr >= -1e-12) & (tpr <= 1 + 1e-12)
    return fpr[keep], np.clip(tpr[keep], 0.0, 1.0)


def fbeta_isoline(f: float, beta: float = 1.0, recall: np.ndarray | None = None,
                  num: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Points of the F-beta isoline ``F = (1 + b^2) P R / (b^2 P + R)`` inside PR space.

    Solving for precision gives ``P = F R / ((1 + b^2) R - b^2 F)`` (ONS Annex D, Figure 2); it is
    within [0, 1] for ``R >= b^2 F / (1 + b^2 - F)``. Every isoline passes through ``P = R = F``.

    Parameters
    ----------
    f : float
        F-beta value of the isoline, in (0, 1).
    beta : float
        The beta of F-beta (recall weighted beta times as much as precision).
    recall : array, optional
        Recalls at which to evaluate; defaults to ``num`` points over the visible part.

    Returns
    -------
    (recall, precision) : arrays
        Points on the isoline with both coordinates in [0, 1].

    >>> r, p = fbeta_isoline(0.5, beta=1.0, recall=np.array([0.5, 1.0]))
    >>> p.round(4).tolist()
    [0.5, 0.3333]
    """
    b2 = beta * beta
    r_min = b2 * f / (1.0 + b2 - f)
    if recall is None:
        # denser near r_min where the curve is steep
        recall = r_min + (1.0 - r_min) * np.linspace(0.0, 1.0, num) ** 2
    recall = np.asarray(recall, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = f * recall / ((1.0 + b2) * recall - b2 * f)
    keep = (recall >= r_min - 1e-12) & (recall <= 1.0) & np.isfinite(precision) & (precision >= 0)
    keep &= precision <= 1.0 + 1e-12
    return recall[keep], np.clip(precision[keep], 0.0, 1.0)


def fbeta_label_point(f: float, beta: float = 1.0) -> tuple[float, float, float]:
    """Where an F-beta isoline's label goes: the point ``P = R = F`` and the slope angle there.

    Differentiating ``P(R) = F R / D`` with ``D = (1 + b^2) R - b^2 F`` gives
    ``dP/dR = -b^2 F^2 / D^2``; at ``P = R = F`` (``D = F``) that is ``-b^2`` for every F, so the
    angle in data coordinates is ``-atan(b^2)``.

    Returns
    -------
    (recall, precision, angle_degrees) : floats, the angle in data coordinates.

    >>> fbeta_label_point(0.6)
    (0.6, 0.6, -45.0)
    """
    return f, f, -math.degrees(math.atan(beta * beta))


def ba_label_point(ba: float) -> tuple[float, float, float]:
    """Where a balanced-accuracy isoline's label goes: its crossing with the anti-diagonal.

    The anti-diagonal ``TPR = 1 - FPR`` meets ``TPR = FPR + 2 BA - 1`` at ``(1 - BA, BA)``; the
    line rises at 45 degrees in data coordinates.

    >>> ba_label_point(0.8)
    (0.19999999999999996, 0.8, 45.0)
    """
    return 1.0 - ba, ba, 45.0
