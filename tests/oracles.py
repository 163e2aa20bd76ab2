"""Oracles of the tests, called as their libraries define them, without their side work that costs suite time."""

from __future__ import annotations

import gc

from statsmodels.stats.multitest import multipletests as _multipletests


def multipletests(*args, **kwargs):
    """``statsmodels.stats.multitest.multipletests``, same arguments and results, without the full
    garbage collection its Holm branch runs on every call (``gc.collect()``, statsmodels 0.15).

    A full collection walks every object of the process: 0.1 s in a fresh one, seconds in a pytest
    worker late in the suite, and the hypothesis tests call the oracle dozens of times (118 s of one
    worker's time in a measured run). Collecting garbage never changes the adjusted p-values.
    """
    collect = gc.collect
    gc.collect = lambda generation=2: 0
    try:
        return _multipletests(*args, **kwargs)
    finally:
        gc.collect = collect
