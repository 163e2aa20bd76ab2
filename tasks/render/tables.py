"""Curves as MLflow tables: the points of each curve, thinned to at most 1,000 without changing its area."""

from __future__ import annotations

import numpy as np
import polars as pl

from metrics_core import thin
from tasks.render.plots import is_binary


def _finite(a) -> list:
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(a, dtype=np.float64)]


def curve_tables(report) -> dict[str, pl.DataFrame]:
    """Thinned curve points (<= 1,000 per curve) as tables ``curves_<name>.json``."""
    out = {}
    if not report.curves:
        return out
    sets = [(None, report.curves)] if is_binary(report) else list(report.curves.items())
    for name in ("roc", "pr", "gain", "lift"):
        parts = []
        for label, curves in sets:
            c = curves[name]
            x, y, t = thin(c["x"], c["y"], c["thresholds"])
            part = {"x": _finite(x), "y": _finite(y), "threshold": _finite(t)}
            if label is not None:
                part = {"class": [str(label)] * len(part["x"]), **part}
            parts.append(pl.DataFrame(part, schema_overrides={"x": pl.Float64, "y": pl.Float64,
                                                               "threshold": pl.Float64}))
        if parts:
            out[f"curves_{name}.json"] = pl.concat(parts)
    return out
