"""The reference period of the monitoring tests: 200,000 rows of the eight-class classifier, once per module."""

from __future__ import annotations

import pytest
from monitoring_data import period_stats


@pytest.fixture(scope="module")
def reference():
    return period_stats(200_000, 0)
