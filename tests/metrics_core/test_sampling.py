"""Manual checking (ONS future work): sample size, stratified sample, stratified estimate."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint, samplesize_confint_proportion

from metrics_core.errors import InputError
from metrics_core.sampling import estimate_from_sample, manual_check_plan, sample_size


@pytest.mark.parametrize("margin, level, expected", [(0.05, 0.95, 0.5), (0.02, 0.99, 0.9), (0.1, 0.9, 0.3)])
def test_sample_size_matches_statsmodels_and_the_fpc_formula(margin, level, expected):
    n_inf, n0 = sample_size(margin, level, expected)
    assert n0 == pytest.approx(samplesize_confint_proportion(expected, margin, alpha=1 - level), rel=1e-12)
    assert n_inf == math.ceil(n0)
    for big_n in (500, 20_000):
        n, _ = sample_size(margin, level, expected, big_n)
        assert n == min(big_n, math.ceil(n0 / (1 + (n0 - 1) / big_n)))


def test_plan_allocates_proportionally_and_draws_within_strata():
    strata = np.repeat(["a", "b", "c"], [5000, 3000, 2000])
    plan = manual_check_plan(10_000, 0.03, strata=strata, seed=7)
    n = math.ceil(plan.n0 / (1 + (plan.n0 - 1) / 10_000))
    assert plan.n == n == 965
    # quotas 482.5, 289.5, 193: one row left, the tie goes to the first stratum in sorted order
    assert plan.allocation["sample"].to_list() == [483, 289, 193]
    assert plan.n_sample == plan.sample.height == sum(plan.allocation["sample"])
    rows = plan.sample["row"].to_numpy()
    assert np.unique(rows).size == rows.size
    assert (strata[rows] == plan.sample["stratum"].to_numpy()).all()
    again = manual_check_plan(10_000, 0.03, strata=strata, seed=7)
    assert again.sample.equals(plan.sample)
    assert not manual_check_plan(10_000, 0.03, strata=strata, seed=8).sample.equals(plan.sample)


def test_small_strata_get_the_minimum_and_table_rows_are_carried():
    frame = pl.DataFrame({"item": [f"i{k}" for k in range(1003)], "pred": ["x"] * 1000 + ["y"] * 3})
    plan = manual_check_plan(frame, 0.1, strata="pred")
    assert plan.allocation.rows() == [("x", 1000, 88, 1000 / 1003), ("y", 3, 2, 3 / 1003)]
    assert plan.sample.columns == ["row", "stratum", "item", "pred"]
    assert (plan.sample["item"] == pl.Series([f"i{k}" for k in plan.sample["row"]])).all()
    assert plan.population_sizes == {"x": 1000, "y": 3}


def test_stratified_estimate_by_hand():
    outcome = [1, 1, 0, 1, 1, 1, 1, 0]
    strata = ["a", "a", "a", "a", "b", "b", "b", "b"]
    est = estimate_from_sample(outcome, strata, population={"a": 60, "b": 40}, method="normal")
    w, p, n, big = np.array([0.6, 0.4]), np.array([0.75, 0.75]), 4, np.array([60, 40])
    var = np.sum(w**2 * (1 - n / big) * p * (1 - p) / (n - 1))
    assert est.estimate == pytest.approx(0.75)
    assert est.std_error == pytest.approx(math.sqrt(var))
    z = stats.norm.ppf(0.975)
    assert (est.lower, est.upper) == pytest.approx((0.75 - z * math.sqrt(var), min(1.0, 0.75 + z * math.sqrt(var))))
    assert est.per_stratum["proportion"].to_list() == [0.75, 0.75]


def test_proportional_allocation_is_self_weighting():
    """With n_h / N_h equal in every stratum, the stratified estimate is the plain sample mean."""
    rng = np.random.default_rng(3)
    outcome = rng.random(60) < 0.7
    strata = np.repeat(["a", "b", "c"], [30, 20, 10])
    est = estimate_from_sample(outcome, strata, population={"a": 300, "b": 200, "c": 100})
    assert est.estimate == pytest.approx(outcome.mean())


def test_wilson_uses_the_effective_sample_size():
    rng = np.random.default_rng(0)
    outcome = rng.random(200) < 0.9
    est = estimate_from_sample(outcome, population=10**9)
    p = outcome.mean()
    n_eff = p * (1 - p) / est.std_error**2
    assert n_eff == pytest.approx(199 / (1 - 200 / 10**9))  # one stratum: (n - 1) / (1 - f)
    lo, hi = proportion_confint(p * n_eff, n_eff, alpha=0.05, method="wilson")
    assert (est.lower, est.upper) == pytest.approx((lo, hi))


def test_all_correct_sample_gives_a_nondegenerate_wilson_interval_and_census_is_exact():
    est = estimate_from_sample([1] * 50, population=1000)
    assert est.estimate == 1.0 and est.upper == 1.0 and 0.9 < est.lower < 1.0
    assert est.lower == pytest.approx(proportion_confint(50, 50, method="wilson")[0])
    census = estimate_from_sample([1, 0, 1], population=3)
    assert (census.estimate, census.lower, census.upper, census.std_error) == (2 / 3, 2 / 3, 2 / 3, 0.0)


def test_interval_covers_the_population_value():
    """Coverage of the stratified Wilson interval over repeated plans on a known population."""
    rng = np.random.default_rng(11)
    strata = np.repeat(["a", "b", "c"], [6000, 3000, 1000])
    correct = rng.random(10_000) < np.repeat([0.95, 0.8, 0.6], [6000, 3000, 1000])
    truth = correct.mean()
    hits = 0
    reps = 300
    for seed in range(reps):
        plan = manual_check_plan(10_000, 0.04, strata=strata, seed=seed, expected=0.85)
        rows = plan.sample["row"].to_numpy()
        est = estimate_from_sample(correct[rows], plan.sample["stratum"], population=plan)
        hits += est.lower <= truth <= est.upper
        assert abs(est.estimate - truth) < 0.1
    assert 0.91 <= hits / reps <= 0.99


def test_single_row_stratum_warns_and_gives_nan():
    with pytest.warns(UserWarning, match="single sampled row"):
        est = estimate_from_sample([1, 0, 1], ["a", "a", "b"], population={"a": 10, "b": 10})
    assert est.estimate == pytest.approx(0.75) and math.isnan(est.lower) and math.isnan(est.std_error)


@pytest.mark.parametrize("call, match", [
    (lambda: sample_size(0.0), "margin: the half-width must be in"),
    (lambda: sample_size(0.05, level=95), r"level: the confidence level must be in \(0, 1\)"),
    (lambda: sample_size(0.05, expected=1.0), "expected: the anticipated proportion"),
    (lambda: manual_check_plan(0, 0.05), r"population: the population is empty \(0 rows\)"),
    (lambda: manual_check_plan(10, 0.05, strata=["a"] * 9), "strata: has 9 values but the population has 10 rows"),
    (lambda: manual_check_plan(10, 0.05, strata="col"), "strata: a column name"),
    (lambda: estimate_from_sample([1, float("nan")], population=10), r"outcome: NaN in 1 row\(s\), e.g. row 1"),
    (lambda: estimate_from_sample([1, 2], population=10), r"outcome: value other than 0/1 in 1 row\(s\)"),
    (lambda: estimate_from_sample([1, 0], ["a", "z"], population={"a": 5}), "strata: stratum not in the population"),
    (lambda: estimate_from_sample([1, 0], ["a", "a"], population={"a": 5, "b": 3}),
     "stratum 'b' has 3 population rows but none in the sample"),
    (lambda: estimate_from_sample([1, 0, 1], ["a", "a", "a"], population={"a": 2}), "3 sample rows but only 2"),
    (lambda: estimate_from_sample([1, 0], population=10, method="exact"), "method: expected 'wilson' or 'normal'"),
])
def test_sampling_bad_input(call, match):
    with pytest.raises(InputError, match=match):
        call()
