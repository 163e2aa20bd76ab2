"""Oracle tests of metrics_core.significance against scipy.stats, statsmodels and scikit-learn."""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs
from oracles import multipletests
from sklearn.metrics import accuracy_score, f1_score, recall_score, roc_auc_score
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.proportion import proportion_confint

from metrics_core import significance as sig
from metrics_core.errors import InputError

SETTINGS = settings(max_examples=60, deadline=None)
value = hs.floats(-100, 100, allow_nan=False).map(lambda x: round(x, 3))


def close(a, b, tol=1e-9):
    """Equal to tol (relative and absolute), nan matching nan, inf matching inf."""
    a, b = float(a), float(b)
    if math.isnan(b) or math.isinf(b):
        return a == b or (math.isnan(a) and math.isnan(b))
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def expected_verdict(p, alpha):
    """The exact opening of the verdict for p at alpha (so "significant" cannot match "not significant")."""
    if not np.isfinite(p):
        return f"undefined at alpha={alpha:g}: "
    return f"{'significant' if p <= alpha else 'not significant'} at alpha={alpha:g} (p={p:.3g}): "


def pairs(min_size=2, max_size=40):
    return hs.integers(min_size, max_size).flatmap(
        lambda n: hs.tuples(hs.lists(value, min_size=n, max_size=n), hs.lists(value, min_size=n, max_size=n)))


# ---------------------------------------------------------------- paired tests
@SETTINGS
@given(pairs())
def test_paired_t_test_matches_scipy(ab):
    a, b = ab
    r, ref = quiet(sig.paired_t_test, a, b), quiet(st.ttest_rel, a, b)
    assert close(r.statistic, ref.statistic) and close(r.p_value, ref.pvalue)
    if np.isfinite(ref.statistic):  # d_z = t / sqrt(n)
        assert close(r.effect_size, ref.statistic / math.sqrt(len(a)))
    assert r.effect_name == "Cohen's d_z"
    assert r.verdict.startswith(expected_verdict(r.p_value, r.alpha))


@SETTINGS
@given(pairs(), hs.integers(1, 10_000), hs.integers(1, 10_000))
def test_corrected_resampled_t_test_is_rescaled_ttest_rel(ab, n_train, n_test):
    a, b = ab
    r, ref = quiet(sig.corrected_resampled_t_test, a, b, n_train, n_test), quiet(st.ttest_rel, a, b)
    k = len(a)
    if np.isfinite(ref.statistic) and ref.statistic != 0:
        t = ref.statistic * math.sqrt((1 / k) / (1 / k + n_test / n_train))
        assert close(r.statistic, t)
        assert close(r.p_value, 2 * st.t.sf(abs(t), k - 1))
        assert r.p_value >= ref.pvalue - 1e-12  # the correction is conservative


def groups(min_groups=2, max_groups=5):
    return hs.lists(hs.lists(value, min_size=1, max_size=15), min_size=min_groups, max_size=max_groups)


@SETTINGS
@given(groups())
def test_anova_matches_f_oneway(gs):
    r, ref = quiet(sig.anova, *gs), quiet(st.f_oneway, *gs)
    assert close(r.statistic, ref.statistic) and close(r.p_value, ref.pvalue)
    n, k = sum(map(len, gs)), len(gs)
    if np.isfinite(ref.statistic) and n > k:
        f = ref.statistic * (k - 1)
        assert close(r.effect_size, f / (f + (n - k)))


@SETTINGS
@given(groups())
def test_kruskal_wallis_matches_scipy(gs):
    r, ref = quiet(sig.kruskal_wallis, *gs), quiet(st.kruskal, *gs)
    assert close(r.statistic, ref.statistic) and close(r.p_value, ref.pvalue)
    if np.isfinite(ref.statistic):
        assert close(r.effect_size, ref.statistic / (sum(map(len, gs)) - 1))


tables = hs.tuples(hs.integers(2, 4), hs.integers(2, 4)).flatmap(
    lambda rc: hs.lists(hs.lists(hs.integers(0, 40), min_size=rc[1], max_size=rc[1]),
                        min_size=rc[0], max_size=rc[0]))


@SETTINGS
@given(tables)
def test_chi_squared_matches_chi2_contingency(table):
    t = np.array(table)
    reduced = t[t.sum(1) > 0][:, t.sum(0) > 0]
    r = quiet(sig.chi_squared, t)
    if min(reduced.shape) < 2:
        assert math.isnan(r.statistic) and math.isnan(r.p_value)
        return
    ref = st.chi2_contingency(reduced)  # scipy default: Yates on 1 degree of freedom
    assert (r.statistic, r.p_value) == (ref.statistic, ref.pvalue)  # the same float operations
    assert close(r.effect_size, st.contingency.association(reduced, method="cramer"))
    assert r.details["yates"] == (ref.dof == 1)


@SETTINGS
@given(pairs(1, 30))
def test_wilcoxon_matches_scipy(ab):
    a, b = ab
    r = quiet(sig.wilcoxon_signed_rank, a, b)
    if not np.any(np.subtract(a, b)):  # scipy: statistic 0, p 1 (and an error for a single pair)
        assert (r.statistic, r.p_value) == (0.0, 1.0) and math.isnan(r.effect_size)
        return
    ref = quiet(st.wilcoxon, a, b)
    assert close(r.statistic, ref.statistic) and close(r.p_value, ref.pvalue)
    d = np.subtract(a, b)
    d = d[d != 0]
    if d.size:  # |rank-biserial| = 1 - 2 min(W+, W-) / (W+ + W-)
        assert close(abs(r.effect_size), 1 - 2 * ref.statistic / (d.size * (d.size + 1) / 2))


@SETTINGS
@given(hs.lists(hs.integers(0, 30), min_size=4, max_size=4))
def test_fisher_exact_matches_scipy(cells):
    t = np.array(cells).reshape(2, 2)
    r, ref = quiet(sig.fisher_exact, t), quiet(st.fisher_exact, t)
    assert close(r.statistic, ref.statistic) and close(r.p_value, ref.pvalue)
    assert close(r.effect_size, ref.statistic) and r.effect_name == "odds ratio"


@SETTINGS
@given(hs.lists(hs.tuples(hs.integers(0, 2), hs.integers(0, 2), hs.integers(0, 2)), min_size=1, max_size=80),
       hs.booleans())
def test_mcnemar_matches_statsmodels(rows, exact):
    y, a, b = (np.array(col) for col in zip(*rows))
    ok_a, ok_b = a == y, b == y
    table = [[np.sum(ok_a & ok_b), np.sum(ok_a & ~ok_b)], [np.sum(~ok_a & ok_b), np.sum(~ok_a & ~ok_b)]]
    r = sig.mcnemar(y, a, b, exact=exact)
    assert close(r.effect_size, accuracy_score(y, a) - accuracy_score(y, b))
    if table[0][1] + table[1][0] == 0:  # never disagree: p = 1 (statsmodels' corrected chi2 divides by 0)
        assert r.p_value == 1.0 and r.statistic == 0.0
        return
    ref = sm_mcnemar(table, exact=exact, correction=True)
    assert close(r.statistic, ref.statistic) and close(r.p_value, ref.pvalue)


@SETTINGS
@given(hs.integers(1, 5000).flatmap(lambda n: hs.tuples(hs.integers(0, n), hs.just(n))),
       hs.sampled_from([0.8, 0.9, 0.95, 0.99]), hs.sampled_from(["wilson", "normal"]))
def test_proportion_interval_matches_statsmodels(kn, level, method):
    k, n = kn
    r = sig.proportion_interval(k, n, level, method)
    lo, hi = proportion_confint(k, n, alpha=1 - level, method=method)
    assert close(r.interval[0], lo) and close(r.interval[1], hi)
    assert close(r.statistic, k / n) and math.isnan(r.p_value)


p_values = hs.lists(hs.one_of(hs.floats(0, 1), hs.sampled_from([0.0, 0.01, 0.02, 0.05, 1.0])),
                    min_size=1, max_size=30)


@SETTINGS
@given(p_values, hs.sampled_from([("bh", "fdr_bh"), ("holm", "holm"), ("bonferroni", "bonferroni")]),
       hs.sampled_from([0.01, 0.05, 0.1]))
def test_correct_matches_multipletests(p, methods, alpha):
    ours, theirs = methods
    c = sig.correct(p, ours, alpha)
    reject, adjusted, _, _ = multipletests(p, alpha=alpha, method=theirs)
    np.testing.assert_allclose(c.p_adjusted, adjusted, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(c.reject, reject)


@SETTINGS
@given(hs.lists(hs.one_of(hs.floats(0, 1), hs.just(math.nan)), min_size=1, max_size=30),
       hs.sampled_from([("bh", "fdr_bh"), ("holm", "holm"), ("bonferroni", "bonferroni")]),
       hs.sampled_from([0.01, 0.05, 0.1]))
def test_correct_ignores_nan_and_matches_multipletests_on_the_rest(p, methods, alpha):
    ours, theirs = methods
    c = sig.correct(p, ours, alpha)
    p = np.array(p)
    finite = ~np.isnan(p)
    assert np.isnan(c.p_adjusted[~finite]).all() and not c.reject[~finite].any()
    if finite.any():  # NaN does not count in m: the finite ones are corrected among themselves
        reject, adjusted, _, _ = multipletests(p[finite], alpha=alpha, method=theirs)
        np.testing.assert_allclose(c.p_adjusted[finite], adjusted, rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(c.reject[finite], reject)


def test_correct_holm_is_not_holm_sidak():
    p = [0.01, 0.02, 0.03]
    assert sig.correct(p, "holm").p_adjusted.tolist() == pytest.approx([0.03, 0.04, 0.04], rel=1e-6, abs=0)
    assert not np.allclose(sig.correct(p, "holm").p_adjusted, multipletests(p, method="holm-sidak")[1])
    assert sig.correct(pl.Series([0.2, 0.01]), "bonferroni").p_adjusted.tolist() == [0.4, 0.02]
    assert sig.correct([], "bh").p_adjusted.size == 0


# ---------------------------------------------------------------- degenerate cases
def test_all_differences_zero():
    a = [0.8, 0.7, 0.9]
    with pytest.warns(RuntimeWarning, match="all differences are zero"):
        r = sig.paired_t_test(a, a)
    assert math.isnan(r.statistic) and math.isnan(r.p_value) and "undefined" in r.verdict
    with pytest.warns(RuntimeWarning):
        assert math.isnan(sig.corrected_resampled_t_test(a, a, 90, 10).p_value)
    with pytest.warns(RuntimeWarning, match="effect size is nan"):
        w = sig.wilcoxon_signed_rank(a, a)
    assert w.p_value == quiet(st.wilcoxon, a, a).pvalue == 1.0


def test_constant_nonzero_difference_is_infinitely_significant():
    r = quiet(sig.paired_t_test, [2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    assert r.statistic == math.inf and r.p_value == 0.0 and r.effect_size == math.inf


def test_table_with_a_zero_row():
    t = [[10, 5], [0, 0], [3, 9]]
    with pytest.warns(RuntimeWarning, match="dropped 1 empty row"):
        r = sig.chi_squared(t)
    ref = st.chi2_contingency([[10, 5], [3, 9]])
    assert close(r.statistic, ref.statistic) and close(r.p_value, ref.pvalue)
    f = quiet(sig.fisher_exact, [[0, 0], [4, 5]])
    assert f.p_value == 1.0 and math.isnan(f.statistic)
    with pytest.warns(RuntimeWarning) as record:
        assert math.isnan(sig.chi_squared([[3, 4], [0, 0]]).p_value)
    assert any("need at least 2 x 2" in str(w.message) for w in record)


def test_n_equals_one():
    with pytest.warns(RuntimeWarning, match="only one pair"):
        assert math.isnan(sig.paired_t_test([0.9], [0.8]).p_value)
    with pytest.warns(RuntimeWarning):
        assert math.isnan(sig.anova([1.0], [2.0]).p_value)
    r = sig.proportion_interval(1, 1)
    lo, hi = proportion_confint(1, 1, method="wilson")
    assert r.interval == pytest.approx((lo, hi), abs=1e-12) and r.statistic == 1.0
    m = sig.mcnemar([1], [1], [0], exact=True)
    assert m.statistic == 0.0 and m.p_value == 1.0 and m.effect_size == 1.0


def test_identical_models():
    y = np.array([0, 1, 1, 0, 1, 0, 1, 1])
    pred = np.array([0, 1, 0, 0, 1, 1, 1, 1])
    for exact in (True, False):
        r = sig.mcnemar(y, pred, pred, exact=exact)
        assert (r.statistic, r.p_value, r.effect_size) == (0.0, 1.0, 0.0)
        assert r.verdict.startswith("not significant at alpha=0.05 (p=1): ")
    b = sig.paired_bootstrap("f1", y, pred, pred, n_boot=200)
    assert b.statistic == 0.0 and b.p_value == 1.0 and b.interval == (0.0, 0.0)


# ---------------------------------------------------------------- paired bootstrap
def _labels(n=400, seed=1, k=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    a = np.where(rng.random(n) < 0.85, y, rng.integers(0, k, n))
    b = np.where(rng.random(n) < 0.75, y, rng.integers(0, k, n))
    return y, a, b


def test_paired_bootstrap_label_path_matches_a_row_bootstrap():
    y, a, b = _labels()
    r = sig.paired_bootstrap("accuracy", y, a, b, n_boot=4000, seed=3)
    assert close(r.statistic, accuracy_score(y, a) - accuracy_score(y, b))
    rng = np.random.default_rng(99)  # the textbook row bootstrap, independently seeded
    rows = rng.integers(0, y.size, (4000, y.size))
    diffs = (a[rows] == y[rows]).mean(1) - (b[rows] == y[rows]).mean(1)
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    assert r.interval[0] == pytest.approx(lo, abs=0.01) and r.interval[1] == pytest.approx(hi, abs=0.01)
    assert r.p_value < 0.01 and r.interval[0] < r.statistic < r.interval[1]
    assert sig.paired_bootstrap("accuracy", y, a, b, n_boot=4000, seed=3) == r  # seeded


@pytest.mark.parametrize("n", [300, 6000])  # few cells: multinomial over cells; many: rows drawn
def test_paired_bootstrap_with_sample_weight(n):
    y, a, b = _labels(n, seed=6)
    w = np.random.default_rng(6).random(n).round(1 if n == 300 else 6)
    r = sig.paired_bootstrap("accuracy", y, a, b, n_boot=300, sample_weight=w)
    expected = accuracy_score(y, a, sample_weight=w) - accuracy_score(y, b, sample_weight=w)
    assert close(r.statistic, expected) and r.interval[0] < expected < r.interval[1]
    d = (a == y).astype(float) - (b == y)
    half_width = 1.96 * np.sqrt(np.sum(w**2 * (d - expected) ** 2)) / w.sum()  # delta method
    assert (r.interval[1] - r.interval[0]) / 2 == pytest.approx(half_width, rel=0.25)


def test_paired_bootstrap_multiclass_macro_f1():
    y, a, b = _labels(300, seed=2, k=4)
    r = sig.paired_bootstrap("f1_macro", y, a, b, n_boot=300, task="multiclass")
    assert close(r.statistic, f1_score(y, a, average="macro") - f1_score(y, b, average="macro"))
    assert r.interval[0] <= r.statistic <= r.interval[1] and 0 < r.p_value <= 1


def test_paired_bootstrap_scores_auroc():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 300)
    sa, sb = np.clip(y * 0.3 + rng.random(300) * 0.7, 0, 1), rng.random(300)
    r = sig.paired_bootstrap("auroc", y, sa, sb, n_boot=200, kind="score")
    assert close(r.statistic, roc_auc_score(y, sa) - roc_auc_score(y, sb))
    assert r.interval[0] < r.statistic < r.interval[1] and r.p_value < 0.05
    with pytest.raises(InputError, match="kind='score'"):
        sig.paired_bootstrap("auroc", y, y, y)


def _text(v):
    return np.array([str(x) for x in v])


# The positive class as binary_report matches it (metrics_core.contract.classes.binary_classes): by value, else
# by its text. String labels with the default pos_label=1, and pos_label="1" on integer labels, name
# the same class "1"/1 as integer labels with pos_label=1.
POSITIVE_BY_TEXT = [
    pytest.param(_text, {}, id="string labels, default pos_label"),
    pytest.param(_text, {"pos_label": "1"}, id="string labels, pos_label='1'"),
    pytest.param(_text, {"pos_label": 1}, id="string labels, pos_label=1"),
    pytest.param(lambda v: v, {"pos_label": "1"}, id="integer labels, pos_label='1'"),
]


@pytest.mark.parametrize("as_labels, pos", POSITIVE_BY_TEXT)
@pytest.mark.parametrize("metric, score", [("accuracy", accuracy_score), ("recall", recall_score), ("f1", f1_score)])
def test_paired_bootstrap_matches_the_positive_class_as_the_report_does(as_labels, pos, metric, score):
    y, a, b = _labels()
    r = quiet(sig.paired_bootstrap, metric, as_labels(y), as_labels(a), as_labels(b), n_boot=300, seed=7, **pos)
    oracle = quiet(sig.paired_bootstrap, metric, y, a, b, n_boot=300, seed=7)  # integer labels, pos_label=1
    assert r == oracle  # statistic, p-value, interval and replicates kept, replicate for replicate
    assert close(r.statistic, score(y, a) - score(y, b))  # sklearn, integer labels, positive class 1
    assert r.details["n_boot"] == 300 and r.interval[0] < r.statistic < r.interval[1] and r.p_value < 0.05


def test_paired_bootstrap_with_three_classes_over_both_models_is_an_error():
    # Each report sees two classes ({0, 1} and {0, 2}) but together the models name three.
    y, a, b = [0] * 6, [0, 1, 0, 1, 0, 1], [0, 2, 0, 2, 0, 2]
    with pytest.raises(InputError, match="y_true, pred_a and pred_b: a binary evaluation needs at most two"):
        quiet(sig.paired_bootstrap, "accuracy", y, a, b, n_boot=10, pos_label=0)


MIXED = [
    pytest.param(["1", "1", "0", "0"], [1, 1, 0, 1], [0, 1, 0, 0], "pred_a", id="string y_true"),
    pytest.param([1, 1, 0, 0], ["1", "1", "0", "1"], [0, 1, 0, 0], "pred_a", id="string pred_a"),
    pytest.param([1, 1, 0, 0], [1, 1, 0, 1], ["0", "1", "0", "0"], "pred_b", id="string pred_b"),
    pytest.param([True, True, False, False], [1, 1, 0, 1], ["no", "yes", "no", "no"], "pred_b", id="bool vs string"),
]


@pytest.mark.parametrize("y, a, b, culprit", MIXED)
def test_mcnemar_rejects_mixed_label_kinds_as_binary_report_does(y, a, b, culprit):
    from metrics_core.report import binary_report

    pred = a if culprit == "pred_a" else b
    with pytest.raises(InputError, match=r"\(mixed label types\)") as report_error:
        binary_report(y, y_pred=pred)
    with pytest.raises(InputError, match=r"\(mixed label types\)") as ours:
        sig.mcnemar(y, a, b)
    # the same contract check (metrics_core.contract.classes.check_label_kinds), naming mcnemar's argument
    assert str(ours.value) == str(report_error.value).replace("y_pred holds", f"{culprit} holds", 1)


@pytest.mark.parametrize("table", [[[4_000_000_000, 1], [1, 4_000_000_000]],
                                   [[3_100_000_000, 3_100_000_000], [1, 3_100_000_000]],
                                   [[1, 3_100_000_000], [3_100_000_000, 1]],
                                   [[1e19, 1], [0, 0]]])
def test_fisher_exact_past_int64_is_an_error_not_a_negative_odds_ratio(table):
    # scipy computes a d, b c and (n + 1)(n1 + 1) in int64: past 2^63 - 1 they wrap around.
    with pytest.raises(InputError, match="counts too large for Fisher's exact test.*Use chi_squared"):
        sig.fisher_exact(table)


@pytest.mark.parametrize("table", [[[1_000_000_000, 1], [1, 1_000_000_000]], [[2_000_000_000, 7], [3, 900]],
                                   [[5_000_000_000, 0], [0, 0]], [[0, 0], [4_000_000_000, 4_000_000_000]]])
def test_fisher_exact_with_large_counts_below_the_limit_equals_scipy(table):
    (a, b), (c, d) = table
    r, ref = quiet(sig.fisher_exact, table), quiet(st.fisher_exact, table)
    hand = math.nan if 0 in (a + b, c + d, a + c, b + d) else (a * d) / (b * c)  # Python integers: exact
    assert close(r.statistic, hand) and close(r.statistic, ref.statistic) and close(r.p_value, ref.pvalue)


# ---------------------------------------------------------------- bad input
BAD = [
    (lambda: sig.paired_t_test([1.0, 2.0], [1.0]), "Mismatched lengths"),
    (lambda: sig.paired_t_test([1.0, np.nan], [1.0, 2.0]), r"^a: NaN or infinite value in 1 row"),
    (lambda: sig.anova([1.0, 2.0], []), r"groups\[1\]: the input is empty"),
    (lambda: sig.kruskal_wallis([1.0, 2.0]), "groups: need at least 2 groups"),
    (lambda: sig.chi_squared([[1, -2], [3, 4]]), r"table: 1 cell\(s\) are negative"),
    (lambda: sig.chi_squared([1, 2, 3]), "table: expected a 2-D array"),
    (lambda: sig.fisher_exact([[1, 2, 3], [4, 5, 6]]), "table: Fisher's exact test needs a 2 x 2"),
    (lambda: sig.correct([0.01, 1.5], "bh"), r"p_values: p-value outside \[0, 1\].*row 1 = 1.5"),
    (lambda: sig.correct([np.inf, 0.2], "holm"), r"p_values: p-value outside .* row 0 = inf"),
    (lambda: sig.correct([0.2, -0.1], "holm"), r"p_values: p-value outside .* row 1 = -0.1"),
    (lambda: sig.correct([0.1], "sidak"), "method: must be 'bh', 'holm' or 'bonferroni'"),
    (lambda: sig.proportion_interval(11, 10), "successes: 11 is more than n = 10"),
    (lambda: sig.proportion_interval(0, 0), "n: the proportion of an empty set"),
    (lambda: sig.proportion_interval(-1, 10), "successes: must be a finite count >= 0"),
    (lambda: sig.paired_t_test([1.0, 2.0], [2.0, 1.0], alpha=0), "alpha: must be a number strictly"),
    (lambda: sig.corrected_resampled_t_test([1.0, 2.0], [2.0, 1.0], 0, 10), "n_train: must be a positive"),
    (lambda: sig.mcnemar([0, 1, 1], [0, 1], [0, 1, 1]), "Mismatched lengths"),
    (lambda: sig.mcnemar([0.0, np.nan], [0, 1], [0, 1]), "y_true: NaN label in 1 row"),
    (lambda: sig.paired_bootstrap("nope", [0, 1], [0, 1], [1, 0]), "metric: 'nope' is not a key"),
    (lambda: sig.paired_bootstrap("accuracy", [0, 1], [0, 1], [1, 0], n_boot=0), "n_boot: must be a positive"),
]


@pytest.mark.parametrize("call, message", BAD)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(InputError, match=message):
        call()
    assert issubclass(InputError, ValueError)


def test_result_is_frozen_and_flat():
    r = sig.proportion_interval(8, 10)
    with pytest.raises(AttributeError):
        r.p_value = 0.1  # type: ignore[misc]
    d = r.to_dict()
    assert d["ci_low"] == r.interval[0] and d["n"] == 10 and math.isnan(d["p_value"])


@pytest.mark.parametrize("level", [0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.951, 0.5])
def test_z_critical_is_scipys_normal_quantile_bit_for_bit(level):
    """The usual levels come from a table (the command line then never loads scipy.special), the others
    from scipy: both are -ndtri((1 - level) / 2) to the last bit, as statsmodels' norm.isf."""
    from scipy.special import ndtri

    from metrics_core.significance.proportions import _Z_OF_LEVEL, z_critical

    want = -ndtri((1 - level) / 2)
    assert z_critical(level) == want and type(z_critical(level)) is type(want)
    assert (level in _Z_OF_LEVEL) == (level not in (0.951, 0.5))
    assert st.norm.isf((1 - level) / 2) == want
    np.testing.assert_array_equal(z_critical(np.array([level, 0.95])), -ndtri((1 - np.array([level, 0.95])) / 2))


@pytest.mark.parametrize("args, message", [
    ((11, 10), r"successes, n: 11 successes of n = 10; a proportion needs 0 <= successes <= n"),
    ((-1, 10), r"successes, n: -1 successes of n = 10"),
    (([3, 12], [10, 10]), r"successes, n: 12 successes of n = 10"),
    ((5, 10, 95), r"level: a confidence level must be in \(0, 1\), e.g. 0.95; got 95 \(a percentage\? use 0.95\)"),
    ((5, 10, 1.5), r"level: .* got 1.5\.$"),
    ((5, 10, 0.0), r"level: .* got 0\.$"),
])
def test_wilson_outside_its_domain_is_an_error_not_nan(args, message):
    """wilson(11, 10) and a level of 95 gave (nan, nan) silently."""
    from metrics_core.significance.proportions import wilson

    with pytest.raises(InputError, match=message):
        wilson(*args)


def test_wilson_takes_a_weighted_count_past_n_by_a_rounding_error():
    from metrics_core.significance.proportions import wilson

    total = 0.1 + 0.2  # 0.30000000000000004: the rows' weights summed in another order than n's
    assert total > 0.3 and wilson(total, 0.3) == pytest.approx(wilson(0.3, 0.3), rel=1e-12)
    assert wilson(0.3, 0.3) == pytest.approx(proportion_confint(0.3, 0.3, method="wilson"), rel=1e-9)
    assert np.isnan(wilson(0, 0)[0])


@pytest.mark.parametrize("kind", ["pred", "score"])
def test_paired_bootstrap_zero_weight_rows_and_weight_scale(kind):
    """Zero-weight rows took draws of every replicate (n counted them): now absent; scale-free too."""
    from metrics_core.significance import paired_bootstrap

    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 150)
    if kind == "pred":
        a, b = (np.where(rng.uniform(size=150) < p, y, 1 - y) for p in (0.8, 0.7))
        metric = "accuracy"
    else:
        a, b, metric = np.clip(0.3 * y + rng.uniform(0, 0.7, 150), 0, 1), rng.uniform(size=150), "auroc"
    w = rng.integers(0, 3, 150).astype(float)
    k = w > 0
    n_boot = 300 if kind == "pred" else 40
    got = paired_bootstrap(metric, y, a, b, kind=kind, sample_weight=w, n_boot=n_boot)
    absent = paired_bootstrap(metric, y[k], a[k], b[k], kind=kind, sample_weight=w[k], n_boot=n_boot)
    scaled = paired_bootstrap(metric, y, a, b, kind=kind, sample_weight=w * 0.01, n_boot=n_boot)
    assert got.statistic == pytest.approx(absent.statistic, rel=1e-12)
    np.testing.assert_allclose(got.interval, absent.interval, rtol=1e-12)
    np.testing.assert_allclose(scaled.interval, got.interval, rtol=1e-9)
