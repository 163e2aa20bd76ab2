"""ONS Annex E: price distributions of errors and the index bias, on a case worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests

from metrics_core.counts import ScoreCounts
from metrics_core.errors import InputError
from metrics_core.price import binned_median, binned_medians, price_impact, price_index

# Five items priced 10 in the base period. Class 1 is labelled on A, B, C and classified on A, B, D:
# C is a false negative (its price quadrupled), D a false positive (its price halved).
#               A     B     C     D     E
Y_TRUE = [1, 1, 1, 0, 0]
Y_PRED = [1, 1, 0, 1, 0]
P0 = [10.0] * 5
P1 = [10.0, 20.0, 40.0, 5.0, 11.0]
W = [1.0, 2.0, 1.0, 1.0, 1.0]

# By hand, relatives r = (1, 2, 4, 0.5, 1.1); labelled L = {A, B, C}, classified C = {A, B, D}:
HAND = {
    # formula, weighted: (index over L, index over C)
    ("jevons", False): ((1 * 2 * 4) ** (1 / 3), (1 * 2 * 0.5) ** (1 / 3)),  # 2, 1
    ("dutot", False): (70 / 30, 35 / 30),
    ("carli", False): (7 / 3, 3.5 / 3),
    ("jevons", True): (2.0, 2 ** 0.25),  # exp((0 + 2 ln 2 + ln 4) / 4), exp((0 + 2 ln 2 - ln 2) / 4)
    ("carli", True): (9 / 4, 11 / 8),  # (1 + 2*2 + 4) / 4, (1 + 2*2 + 0.5) / 4
}


@pytest.mark.parametrize("formula, weighted", list(HAND))
def test_annex_e_index_bias_worked_by_hand(formula, weighted):
    out = price_impact(Y_TRUE, Y_PRED, P1, base_price=P0, weight=W if weighted else None, pos_label=1,
                       formula=formula)
    row = out.index.row(0, named=True)
    il, ic = HAND[(formula, weighted)]
    assert (row["n_labelled"], row["n_classified"]) == (3, 3)
    assert row["index_labelled"] == pytest.approx(il, rel=1e-12)
    assert row["index_classified"] == pytest.approx(ic, rel=1e-12)
    assert row["bias"] == pytest.approx(ic - il, rel=1e-12)
    assert row["relative_bias"] == pytest.approx(ic / il - 1, rel=1e-12)
    assert out.figures["max_abs_index_bias"] == pytest.approx(abs(ic - il))


def test_annex_e_distributions_worked_by_hand():
    out = price_impact(Y_TRUE, Y_PRED, P1, pos_label=1)
    rows = {r["group"]: r for r in out.distributions.iter_rows(named=True)}
    labelled = [10.0, 20.0, 40.0]
    for group, prices in (("false_positive", [5.0]), ("false_negative", [40.0]), ("classified_positive",
                                                                                  [10.0, 20.0, 5.0])):
        r = rows[group]
        ks = stats.ks_2samp(labelled, prices)
        assert (r["n"], r["n_labelled"]) == (len(prices), 3)
        assert r["ks_statistic"] == pytest.approx(ks.statistic)
        assert r["ks_p_value"] == pytest.approx(ks.pvalue, rel=1e-6, abs=0)
        assert r["mean_difference"] == pytest.approx(np.mean(prices) - 70 / 3)
        assert r["median_difference"] == pytest.approx(np.median(prices) - 20.0)
    assert out.index is None


def test_multiclass_assesses_every_class_one_vs_rest():
    out = price_impact(Y_TRUE, Y_PRED, P1, base_price=P0)
    assert out.index["class"].to_list() == [0, 1]
    zero = out.index.row(0, named=True)  # class 0: labelled {D, E}, classified {C, E}
    assert zero["index_labelled"] == pytest.approx(math.sqrt(0.5 * 1.1))
    assert zero["index_classified"] == pytest.approx(math.sqrt(4 * 1.1))
    assert out.distributions.height == 2 * 3


def test_random_multiclass_against_scipy_and_statsmodels():
    rng = np.random.default_rng(4)
    n = 3000
    y = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < 0.8, y, rng.integers(0, 3, n))
    price = rng.lognormal(1 + y, 0.3)
    out = price_impact(y, pred, price)
    for r in out.distributions.iter_rows(named=True):
        c = r["class"]
        lab, cls = y == c, pred == c
        group = {"false_positive": cls & ~lab, "false_negative": lab & ~cls, "classified_positive": cls}[r["group"]]
        ks = stats.ks_2samp(price[lab], price[group])
        assert r["ks_statistic"] == pytest.approx(ks.statistic, abs=1e-12)
        assert r["ks_p_value"] == pytest.approx(ks.pvalue, rel=1e-6, abs=1e-300)
        assert r["mean"] == pytest.approx(price[group].mean()) and r["labelled_median"] == pytest.approx(
            np.median(price[lab]))
    adjusted = multipletests(out.distributions["ks_p_value"].to_numpy(), method="fdr_bh")[1]
    assert out.distributions["ks_p_adjusted"].to_numpy() == pytest.approx(adjusted, rel=1e-6, abs=0)
    # false positives of class 0 come from dearer classes: their prices differ, and the test says so
    fp0 = out.distributions.filter((out.distributions["class"] == 0) & (out.distributions["group"] == "false_positive"))
    assert fp0["ks_reject"].item() and fp0["mean_difference"].item() > 0


@pytest.mark.parametrize("formula, oracle", [
    ("jevons", lambda p0, p1, w: stats.gmean(p1 / p0, weights=w)),
    ("carli", lambda p0, p1, w: np.average(p1 / p0, weights=w)),
])
def test_price_index_against_scipy_and_numpy(formula, oracle):
    rng = np.random.default_rng(6)
    p0, p1, w = rng.lognormal(size=50), rng.lognormal(size=50), rng.random(50)
    assert price_index(p0, p1, w, formula) == pytest.approx(oracle(p0, p1, w), rel=1e-12)
    assert price_index(p0, p1, None, formula) == pytest.approx(oracle(p0, p1, None), rel=1e-12)


def test_empty_groups_are_nan_with_one_warning():
    with pytest.warns(UserWarning, match=r"2 comparison\(s\) have an empty group"):
        out = price_impact([1, 1, 0], [1, 1, 0], [1.0, 2.0, 3.0], pos_label=1)
    fp = out.distributions.filter(out.distributions["group"] == "false_positive").row(0, named=True)
    assert fp["n"] == 0 and math.isnan(fp["ks_statistic"]) and math.isnan(fp["ks_p_adjusted"])


@pytest.mark.parametrize("kwargs, match", [
    (dict(price=[10.0, -1.0, 5.0, 5.0, 5.0]), r"price: price that is NaN, infinite or not positive in 1 row\(s\)"),
    (dict(price=[10.0, float("nan"), 5.0, 5.0, 5.0]), "e.g. row 1 = nan"),
    (dict(price=[10.0, 1.0]), "Mismatched lengths"),
    (dict(base_price=P0, weight=W, formula="dutot"), "Dutot index is unweighted"),
    (dict(weight=[1.0, -2.0, 1.0, 1.0, 1.0], base_price=P0), "weight: negative, NaN or infinite"),
    (dict(labels=[1], pos_label=1), "give one of them"),
    (dict(formula="laspeyres"), "formula: expected one of"),
    (dict(y_pred=["a", "a", "b", "a", "b"]), "y_true, y_pred: the label values cannot be compared"),
])
def test_price_impact_bad_input(kwargs, match):
    args = dict(y_true=Y_TRUE, y_pred=Y_PRED, price=P1) | kwargs
    with pytest.raises(InputError, match=match):
        price_impact(**args)


# Rows 4 and 5 have no label (NaN, as a float label column stores a missing value).
NAN_TRUE = np.array([0.0, 0, 1, 1, np.nan, np.nan])
NAN_PRED = np.array([0.0, 1, 1, 1, 1, 1])
NAN_PRICE = np.array([1.0, 2, 3, 4, 50, 60])
LABELLED = np.array([0.0, 0, 1, 1, 1, 1])


@pytest.mark.parametrize("kwargs, match", [
    (dict(y_true=NAN_TRUE), r"y_true: NaN label in 2 row\(s\), e\.g\. row 4 = nan"),
    (dict(y_true=NAN_TRUE.tolist()), r"y_true: NaN label in 2 row\(s\), e\.g\. row 4 = nan"),
    (dict(y_true=LABELLED, y_pred=np.array([0.0, 1, 1, np.nan, 1, 1])),
     r"y_pred: NaN prediction in 1 row\(s\), e\.g\. row 3 = nan"),
    (dict(y_true=LABELLED), None),  # the same rows labelled: no error
])
def test_nan_labels_and_predictions_are_errors_not_a_class(kwargs, match):
    args = dict(y_true=NAN_TRUE, y_pred=NAN_PRED, price=NAN_PRICE) | kwargs
    if match is None:
        with pytest.warns(UserWarning, match="empty group"):  # class 0 has no false positive
            price_impact(**args)
        return
    with pytest.raises(InputError, match=match):
        price_impact(**args)


def test_without_the_unlabelled_rows_class_one_has_one_false_positive():
    keep = ~np.isnan(NAN_TRUE)
    with pytest.warns(UserWarning, match="empty group"):  # class 0 has no false positive
        out = price_impact(NAN_TRUE[keep], NAN_PRED[keep], NAN_PRICE[keep])
    assert out.distributions["class"].to_list() == [0.0] * 3 + [1.0] * 3  # no NaN class
    d = out.distributions
    fp = d.filter((d["class"] == 1.0) & (d["group"] == "false_positive"))
    assert fp.select("n", "mean").row(0) == (1, 2.0)  # row 1 only, price 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), min_size=5, max_size=5).filter(any), min_size=1, max_size=6))
def test_binned_medians_are_the_middle_row_of_each_histogram(rows):
    """The binned median of a histogram is its middle row's bin (the lower of the two middle rows for
    an even count): each row's, at once, equals the one computed alone and the expanded rows' order statistic."""
    points, counts = np.array([-1.5, 0.0, 0.25, 2.0, 7.0]), np.array(rows, dtype=np.int64)
    found = binned_medians(points, counts)
    for row, median in zip(counts, found.tolist()):
        values = np.repeat(points, row)
        assert median == values[(values.size + 1) // 2 - 1] == binned_median(
            ScoreCounts(points, row, np.zeros(points.size, np.int64)))
        if values.size % 2:
            assert median == np.median(values)
