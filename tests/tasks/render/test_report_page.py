"""tasks.render.report_page: a self-contained page under 2 MB at any size, user data escaped, tables sorted by effect."""

from __future__ import annotations

import io
import re

import numpy as np
import polars as pl
from PIL import Image

from tasks.render.report_page import MAX_BYTES, parent_page, period_page, thin_table


def _png(width: int, height: int, seed: int = 0) -> bytes:
    """A noisy PNG (it does not compress): the worst case for the page's size."""
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def test_a_huge_assessment_gives_a_page_under_two_megabytes_with_the_largest_effects():
    n = 50_000
    rng = np.random.default_rng(1)
    effects = rng.normal(0, 0.01, n)
    effects[12_345] = -0.9  # the largest |effect| is shown first, whatever its sign
    segments = pl.DataFrame({"segment": [f"retailer=shop_{i}" for i in range(n)], "effect_size": effects,
                             "effect_over_threshold": np.abs(effects) / 0.02, "alert": effects < -0.5})
    drift = pl.DataFrame({"name": [f"t{i}" for i in range(n)], "effect_size": effects})
    image = _png(1500, 800)
    assert len(image) > MAX_BYTES  # the image alone would not fit
    page = period_page("m: period 2024-08", "retrain", ["a reason"] * 1000, ["a note"], {"f1": "0.8"},
                       {"segments.json": segments, "drift_table.json": drift}, {"over time": image})
    assert len(page.encode()) < MAX_BYTES
    first_row = re.search(r"<tbody><tr class=\"alert\"><td>([^<]*)</td>", page)
    assert first_row is not None and first_row.group(1) == "retailer=shop_12345"
    assert "of 50,000 rows, the largest effects" in page
    # self-contained: no script, no stylesheet or image fetched from anywhere
    assert "<script" not in page and "<link" not in page and not re.search(r"src=\"(?!data:)", page)
    uri = re.search(r"src=\"data:image/png;base64,([^\"]+)\"", page)
    assert uri is not None


def test_user_data_is_escaped():
    evil = "<img src=x onerror=alert(1)>"
    table = pl.DataFrame({"class": [evil], "effect_size": [0.3]})
    page = period_page(f"model {evil}", "no alert", [f"prevalence of {evil} rose"], [evil], {evil: evil},
                       {"per_class.json": table})
    assert evil not in page and page.count("&lt;img src=x onerror=alert(1)&gt;") == 7
    across = parent_page(evil, pl.DataFrame({"period": ["2024-01"], "strongest reason": [evil]}))
    assert evil not in across


def test_thin_table_sorts_by_the_ratio_to_the_threshold_before_the_effect():
    t = pl.DataFrame({"effect_size": [0.5, 0.1, float("nan")], "effect_over_threshold": [1.0, 5.0, -1.0]})
    assert thin_table(t)["effect_size"].to_list()[:2] == [0.1, 0.5]
