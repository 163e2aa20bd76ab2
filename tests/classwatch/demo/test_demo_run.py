"""classwatch/demo/run.py: the demo's models are reproducible, so a re-run of the demo prints the same figures; its
pack-size drift alerts in one month and names the feature."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from classwatch.demo import quotes
from classwatch.demo.run import MONTHS, _pipeline, demo_spec, write_data


@pytest.mark.parametrize("kind", ["logistic_regression", "complement_nb"])
def test_a_model_fitted_twice_with_one_seed_gives_the_same_scores(kind):
    train = quotes.history(["2023-01", "2023-02"], 1500, seed=3)
    test = quotes.quotes(500, seed=99, period="2024-01").select("title").to_pandas()
    fit = [_pipeline(kind, seed=0).fit(train.select("title").to_pandas(), train["label"].to_numpy())
           for _ in range(2)]
    first, second = (model.predict_proba(test) for model in fit)
    assert np.array_equal(first, second)  # saga shuffles rows: without the seed the scores differed by up to 0.005


def test_the_demo_watches_pack_size_which_alerts_in_2024_09_only_and_is_named(tmp_path):
    """The demo's deliveries (3,000 quotes a month, the smallest the demo takes is 2,000) against its
    reference window: ``pack_size`` alerts as a numeric feature in the month its retailer's feed gave
    kilograms (effect about 0.25 reference SDs against 0.1), and in no other month (0.06 at most)."""
    from metrics_core.monitoring import assess_period

    spec = demo_spec(tmp_path, "sqlite:///unused.db")
    assert spec["columns"]["features"] == ["title", "pack_size"]
    d = write_data(tmp_path, 3_000, 0)
    assert d["shift"].pack_month == 9 and d["shift"].from_month <= 9 < d["shift"].retitle_month
    kw = dict(columns={"features": spec["columns"]["features"], "price": None, "weight": None},
              report_options={"n_boot": 0})
    ref = d["splits"]["validation"].with_columns(prediction=pl.col("label"))
    named = {}
    for month in MONTHS:
        out = assess_period(ref, d["months"][month].with_columns(prediction=pl.col("label")), **kw)
        named[month] = [r for r in out.reasons if r.key.cls == "pack_size"]
    assert [m for m, r in named.items() if r] == ["2024-09"]
    (reason,) = named["2024-09"]
    assert reason.kind == "feature_numeric" and reason.text.startswith("feature pack_size: distribution shifted")
    assert reason.current < reason.reference and reason.effect > 2 * reason.threshold
