"""classwatch/demo/run.py: the demo's models are reproducible, so a re-run of the demo prints the same figures."""

from __future__ import annotations

import numpy as np
import pytest

from classwatch.demo import quotes
from classwatch.demo.run import _pipeline


@pytest.mark.parametrize("kind", ["logistic_regression", "complement_nb"])
def test_a_model_fitted_twice_with_one_seed_gives_the_same_scores(kind):
    train = quotes.history(["2023-01", "2023-02"], 1500, seed=3)
    test = quotes.quotes(500, seed=99, period="2024-01").select("title").to_pandas()
    fit = [_pipeline(kind, seed=0).fit(train.select("title").to_pandas(), train["label"].to_numpy())
           for _ in range(2)]
    first, second = (model.predict_proba(test) for model in fit)
    assert np.array_equal(first, second)  # saga shuffles rows: without the seed the scores differed by up to 0.005
