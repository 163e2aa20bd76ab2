"""Data checks: leakage, representativeness, prevalence and price stability, on constructed data and oracles."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import roc_auc_score
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportions_ztest

from metrics_core.checks import CheckResult, leakage, representativeness
from metrics_core.errors import InputError
from metrics_core.checks.stability import class_counts, label_prices, prevalence_stability, price_stability


def _frames(n=600, seed=0):
    rng = np.random.default_rng(seed)
    label = rng.choice(["a", "b", "c"], n)
    frame = pl.DataFrame({
        "id": np.arange(n),
        "x": rng.normal(size=n),
        "leak": np.where(label == "a", 10.0, 0.0) + rng.random(n),  # separates class a perfectly
        "shop": rng.choice(["s1", "s2", "s3"], n),
        "code": pl.Series(label).replace_strict({"a": "A", "b": "B", "c": "C"}),  # one-to-one with the label
        "label": label,
    })
    return frame.slice(0, n // 2), frame.slice(n // 2)


# ---------------------------------------------------------------- leakage
def test_clean_sets_pass_with_zero_counts():
    train, test = _frames()
    r = leakage(train, test, feature_columns=["x", "shop"])
    assert isinstance(r, CheckResult)
    assert r.status == "pass"
    assert (r.figures["n_id_overlap"], r.figures["n_duplicate_rows"], r.figures["n_separating_features"]) == (0, 0, 0)
    assert r.table.filter(pl.col("check") == "separation").height == 2 * 2 * 3  # sets x features x classes


def test_id_overlap_and_duplicates_are_counted_with_examples():
    train, test = _frames()
    copied = train.slice(10, 4)  # 4 exact copies of training rows, 2 of them keep their id
    copied = copied.with_columns(id=pl.Series([10, 11, 9000, 9001]))
    test = pl.concat([test, copied])
    r = leakage(train, test, feature_columns=["x", "shop"])
    assert r.status == "fail"
    assert r.figures["n_id_overlap"] == 2 and r.figures["n_id_overlap_rows"] == 2
    assert r.figures["n_duplicate_rows"] == 4
    assert r.figures["n_duplicate_label_conflicts"] == 0
    ids = r.table.filter(pl.col("check") == "id_overlap").row(0, named=True)
    assert ids["example"] == "10, 11"
    dup = r.table.filter(pl.col("check") == "duplicate_rows").row(0, named=True)
    assert dup["example"].startswith(f"test row {test.height - 4} = train row 10")


def test_duplicate_with_other_label_is_a_conflict_and_near_duplicates_are_not_duplicates():
    train = pl.DataFrame({"id": [1, 2, 3], "x": [1.0, 2.0, None], "s": ["a", "b", "c"], "label": [0, 1, 0]})
    test = pl.DataFrame({"id": [7, 8, 9, 10], "x": [1.0, 2.0, None, 2.0000001], "s": ["a", "b", "c", "b"],
                         "label": [1, 1, 0, 1]})
    r = leakage(train, test, feature_columns=["x", "s"], auroc_threshold=1.0)
    # row 0 conflicts (label 1 vs 0), row 1 agrees, row 2 matches with a null (nulls equal), row 3 differs
    assert r.figures["n_duplicate_rows"] == 3
    assert r.figures["n_duplicate_label_conflicts"] == 1


_S = pl.String


@pytest.mark.parametrize("train_labels, test_labels, conflicts", [
    (["p", "q"], pl.Series([None, None], dtype=_S), 0),  # unlabelled test rows: no label, no conflict
    (["p", "q"], [None, None], 0),  # the same, the test label column of polars type Null
    (["p", "q"], ["p", None], 0),
    (["p", "q"], ["z", None], 1),  # only the labelled row can conflict
    (pl.Series([None, None], dtype=_S), ["p", "q"], 0),  # no training label to differ from
    ([None, None], ["p", "q"], 0),
    (["p", None, "q", None], ["z", "q"], 1),  # x: train {p, null} vs z conflicts; y: train {q, null} vs q agrees
    ([None, "p", None, "q"], [None, "z"], 1),
])
def test_missing_labels_are_no_label_conflicts(train_labels, test_labels, conflicts):
    n = len(train_labels)
    train = pl.DataFrame({"a": ["x", "y"] * (n // 2), "label": train_labels})
    test = pl.DataFrame({"a": ["x", "y"], "label": test_labels})
    r = leakage(train, test, feature_columns=["a"], id_column=None)
    assert r.figures["n_duplicate_rows"] == 2
    assert r.figures["n_duplicate_label_conflicts"] == conflicts
    assert r.table.filter(pl.col("check") == "duplicate_rows")["count"].item() == conflicts


@pytest.mark.parametrize("train_labels, test_labels, conflicts", [
    (pl.Series([1, 2]), pl.Series([1, 3], dtype=pl.Int32), 1),
    (pl.Series([1, 2]), pl.Series([1.0, 3.0]), 1),  # 1 == 1.0, as numpy compares labels
    (pl.Series([False, True]), pl.Series([0, 0]), 1),
    (pl.Series(["p", "q"]), pl.Series(["p", "z"], dtype=pl.Categorical), 1),
])
def test_labels_of_one_kind_but_two_types_are_compared(train_labels, test_labels, conflicts):
    train = pl.DataFrame({"id": [1, 2], "a": ["x", "y"], "label": train_labels})
    test = pl.DataFrame({"id": pl.Series([2, 3], dtype=pl.Int32), "a": ["x", "y"], "label": test_labels})
    r = leakage(train, test, feature_columns=["a"])
    assert (r.figures["n_id_overlap"], r.figures["n_duplicate_label_conflicts"]) == (1, conflicts)


@pytest.mark.parametrize("column, test_values, match", [
    ("id", ["1", "2"], r"id_column: column 'id' is Int64 in train \(e\.g\. 1\) but String in test \(e\.g\. '1'\)"),
    ("id", [1.0, 2.0], r"id_column: column 'id' is Int64 in train \(e\.g\. 1\) but Float64 in test"),
    ("label", [1, 2], r"test column 'label' \(e\.g\. 1\) holds int64 values and train column 'label' \(e\.g\. "
                      r"'p'\) holds large_string values \(mixed label types\)"),
])
def test_id_or_label_types_that_cannot_be_compared_are_input_errors(column, test_values, match):
    train = pl.DataFrame({"id": [1, 2], "a": ["x", "y"], "label": ["p", "q"]})
    test = train.with_columns(pl.Series(column, test_values))
    with pytest.raises(InputError, match=match):
        leakage(train, test, feature_columns=["a"])


def test_single_feature_auroc_matches_sklearn_one_vs_rest():
    train, test = _frames()
    r = leakage(train, test, feature_columns=["x", "leak"])
    sep = r.table.filter((pl.col("check") == "separation") & (pl.col("set") == "train"))
    y = train["label"].to_numpy()
    for feature in ("x", "leak"):
        for cls in ("a", "b", "c"):
            got = sep.filter((pl.col("feature") == feature) & (pl.col("class") == cls))["statistic"].item()
            assert got == pytest.approx(roc_auc_score(y == cls, train[feature].to_numpy()), abs=1e-12)
    flagged = sep.filter(pl.col("flagged"))
    assert flagged.select("feature", "class").rows() == [("leak", "a")]
    assert r.status == "warn" and r.figures["n_separating_features"] == 1


def test_ties_count_one_half_like_mann_whitney():
    train = pl.DataFrame({"x": [1, 1, 2, 2, 3], "label": [0, 1, 0, 1, 1]})
    r = leakage(train, train.head(1), id_column=None, feature_columns=["x"])
    got = r.table.filter((pl.col("set") == "train") & (pl.col("class") == "1"))["statistic"].item()
    u = stats.mannwhitneyu([1, 2, 3], [1, 2]).statistic
    assert got == pytest.approx(u / 6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from("abc")), min_size=2, max_size=60))
def test_single_feature_auroc_with_ties_matches_sklearn(pairs):
    x, y = (np.array(v) for v in zip(*pairs))
    train = pl.DataFrame({"x": x, "label": y})
    r = leakage(train, train.head(1), id_column=None, feature_columns=["x"])
    for cls, auc in r.table.filter(pl.col("set") == "train").select("class", "statistic").iter_rows():
        if 0 < (y == cls).sum() < y.size:
            assert auc == pytest.approx(roc_auc_score(y == cls, x), abs=1e-12)
        else:
            assert np.isnan(auc)


def test_categorical_one_to_one_mapping_is_flagged_with_its_category():
    train, test = _frames()
    r = leakage(train, test, feature_columns=["code", "shop"])
    sep = r.table.filter((pl.col("check") == "separation") & (pl.col("feature") == "code"))
    assert sep["statistic"].to_list() == [1.0] * 6
    assert sep.filter(pl.col("set") == "train").select("class", "value").rows() == [("a", "A"), ("b", "B"), ("c", "C")]
    shop = r.table.filter((pl.col("feature") == "shop") & (pl.col("set") == "train"))
    y, s = train["label"].to_numpy(), train["shop"].to_numpy()
    for cls, value, auc in shop.select("class", "value", "statistic").iter_rows():
        assert auc == pytest.approx(roc_auc_score(y == cls, s == value))
        best = max(roc_auc_score(y == cls, s == v) for v in ("s1", "s2", "s3"))
        assert auc == pytest.approx(best)


def test_nulls_and_nan_in_a_feature_are_dropped_for_its_auroc():
    train = pl.DataFrame({"x": [0.1, None, 0.3, float("nan"), 0.9, 0.8], "label": [0, 1, 0, 1, 1, 1]})
    r = leakage(train, train.head(1), id_column=None, feature_columns=["x"], auroc_threshold=0.95)
    row = r.table.filter((pl.col("set") == "train") & (pl.col("class") == "1")).row(0, named=True)
    assert row["count"] == 4 and row["statistic"] == 1.0 and row["flagged"]


def test_pyarrow_tables_give_the_same_result():
    train, test = _frames()
    a = leakage(train, test, feature_columns=["x", "leak", "shop"])
    b = leakage(train.to_arrow(), test.to_arrow(), feature_columns=["x", "leak", "shop"])
    assert a.table.equals(b.table) and a.figures == b.figures


# ---------------------------------------------------------------- representativeness
def test_representativeness_statistics_match_scipy():
    rng = np.random.default_rng(1)
    train = pl.DataFrame({"x": rng.normal(size=800), "shop": rng.choice(["a", "b", "c"], 800, p=[.5, .3, .2]),
                          "label": rng.choice([0, 1], 800)})
    test = pl.DataFrame({"x": rng.normal(0.5, 1, size=400), "shop": rng.choice(["a", "b", "c"], 400, p=[.3, .3, .4]),
                         "label": rng.choice([0, 1], 400)})
    r = representativeness(train, test, feature_columns=["x", "shop"])
    x = r.table.filter(pl.col("name") == "x").row(0, named=True)
    ks = stats.ks_2samp(train["x"].to_numpy(), test["x"].to_numpy())
    assert x["statistic"] == pytest.approx(ks.statistic, abs=1e-12) and x["p_value"] == pytest.approx(ks.pvalue)
    shop = r.table.filter(pl.col("name") == "shop").row(0, named=True)
    na = train["shop"].value_counts().sort("shop")["count"].to_numpy()
    nb = test["shop"].value_counts().sort("shop")["count"].to_numpy()
    chi = stats.chi2_contingency(np.vstack([na, nb]))
    assert shop["statistic"] == pytest.approx(chi.statistic)
    assert shop["p_value"] == pytest.approx(chi.pvalue, rel=1e-6, abs=0)
    p, q = na / na.sum(), nb / nb.sum()
    assert shop["psi"] == pytest.approx(np.sum((q - p) * np.log(q / p)))
    adjusted = multipletests([x["p_value"], shop["p_value"]], method="fdr_bh")[1]
    assert [x["p_adjusted"], shop["p_adjusted"]] == pytest.approx(adjusted, rel=1e-6, abs=0)
    assert x["flagged"] and shop["flagged"] and r.status == "warn"


def test_unseen_categories_and_class_presence():
    train = pl.DataFrame({"shop": ["a", "b"] * 40, "x": np.arange(80.0), "label": ["p"] * 50 + ["q"] * 20 + ["r"] * 10})
    test = pl.DataFrame({"shop": ["a"] * 30 + ["z"] * 5, "x": np.arange(35.0), "label": ["p"] * 30 + ["new"] * 5})
    r = representativeness(train, test, feature_columns=["shop", "x"], min_support=15)
    assert r.figures["n_unseen_category_rows"] == 5
    assert "'z'" in r.table.filter(pl.col("name") == "shop")["note"].item()
    classes = {n: (t, note) for n, t, note in r.table.filter(pl.col("kind") == "class").select(
        "name", "n_test", "note").iter_rows()}
    assert classes["new"] == (5, "absent from train; support 5 < 15 in test")
    assert classes["q"] == (0, "absent from test")
    assert classes["r"] == (0, "absent from test; support 10 < 15 in train")
    assert classes["p"] == (30, None)
    assert r.status == "fail" and r.figures["n_classes_absent_from_train"] == 1


def test_unlabelled_test_set_and_constant_category():
    train = pl.DataFrame({"kind": ["k"] * 40, "label": ["p"] * 35 + ["q"] * 5})
    test = pl.DataFrame({"kind": ["k"] * 10, "label": pl.Series([None] * 10, dtype=pl.String)})
    r = representativeness(train, test, feature_columns=["kind"], min_support=10)
    feature = r.table.filter(pl.col("kind") == "feature").row(0, named=True)
    assert feature["note"] == "a single category in both sets: no test" and feature["psi"] == 0.0
    classes = r.table.filter(pl.col("kind") == "class").select("name", "n_test", "note").rows()
    assert classes == [("p", 0, None), ("q", 0, "support 5 < 10 in train")]
    assert r.status == "warn"


@pytest.mark.parametrize("missing, null, status", [
    (1.0, False, "warn"),  # all NaN in test
    (0.9, False, "warn"),
    (0.9, True, "warn"),  # polars nulls, not NaN
    (0.0, False, "pass"),
])
def test_numeric_feature_missing_in_test_is_flagged_with_its_missing_shares(missing, null, status):
    rng = np.random.default_rng(3)
    train = pl.DataFrame({"x": rng.normal(size=500), "label": rng.choice([0, 1], 500)})
    x = rng.normal(size=300)
    n_missing = int(missing * 300)
    values = [None] * n_missing + x[n_missing:].tolist() if null else np.r_[np.full(n_missing, np.nan), x[n_missing:]]
    test = pl.DataFrame({"x": pl.Series(values, dtype=pl.Float64), "label": rng.choice([0, 1], 300)})
    r = representativeness(train, test, feature_columns=["x"])
    row = r.table.filter(pl.col("name") == "x").row(0, named=True)
    assert r.status == status and row["flagged"] is (status == "warn")
    assert (row["missing_train"], row["missing_test"]) == (0.0, pytest.approx(missing))
    if status == "warn":
        shares = f"missing share 0.0% in train vs {missing:.1%} in test"
        assert shares in row["note"] and "x (" in r.message and shares in r.message
        assert row["missing_p_value"] == pytest.approx(proportions_ztest([0, n_missing], [500, 300])[1], rel=1e-9)
        assert row["missing_psi"] >= 0.1
    else:
        assert np.isnan(row["missing_p_value"]) and r.message == "Test set looks like the training set."


def test_equal_missing_shares_are_not_flagged():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=2000), rng.normal(size=1000)
    a[:200], b[:100] = np.nan, np.nan  # 10 % missing in both
    r = representativeness(pl.DataFrame({"x": a}), pl.DataFrame({"x": b}), feature_columns=["x"], label_column=None)
    row = r.table.row(0, named=True)
    assert row["missing_p_value"] == pytest.approx(1.0) and not row["flagged"] and r.status == "pass"


def test_same_distribution_passes():
    rng = np.random.default_rng(2)
    train = pl.DataFrame({"x": rng.normal(size=2000), "label": rng.choice([0, 1], 2000)})
    test = pl.DataFrame({"x": rng.normal(size=1000), "label": rng.choice([0, 1], 1000)})
    r = representativeness(train, test, feature_columns=["x"])
    assert r.status == "pass" and r.figures["n_shifted_features"] == 0


# ---------------------------------------------------------------- prevalence stability
def _history(shares_per_period, n):
    rows = []
    for t, shares in enumerate(shares_per_period):
        for cls, share in zip("abc", shares):
            rows.append({"period": t, "class": cls, "count": int(round(share * n))})
    return pl.DataFrame(rows)


def test_prevalence_tests_match_scipy_and_statsmodels():
    counts = _history([(0.5, 0.3, 0.2), (0.48, 0.31, 0.21), (0.40, 0.35, 0.25)], 2000)
    r = prevalence_stability(counts)
    ref = np.array([1000, 600, 400])
    chi_p_adjusted = []
    for t, cur in ((1, np.array([960, 620, 420])), (2, np.array([800, 700, 500]))):
        sub = r.table.filter(pl.col("period") == t)
        chi = stats.chi2_contingency(np.vstack([ref, cur]))
        assert sub["chi2_statistic"][0] == pytest.approx(chi.statistic)
        p, q = ref / ref.sum(), cur / cur.sum()
        assert sub["psi"][0] == pytest.approx(np.sum((q - p) * np.log(q / p)))
        assert sub["abs_change"].to_numpy() == pytest.approx(q - p)
        z_p = []
        for i, row in enumerate(sub.iter_rows(named=True)):
            z, pv = proportions_ztest([cur[i], ref[i]], [cur.sum(), ref.sum()])
            assert row["z_statistic"] == pytest.approx(z) and row["z_p_value"] == pytest.approx(pv, rel=1e-6, abs=0)
            z_p.append(pv)
        # monitoring's family: all tests of one period (the per-class z-tests and the chi-squared) corrected together
        chi_p_adjusted.append(multipletests([*z_p, chi.pvalue], method="fdr_bh")[1][-1])
    assert r.table.unique("period", maintain_order=True)["chi2_p_adjusted"].to_numpy() == pytest.approx(
        chi_p_adjusted, rel=1e-6)
    assert r.table.group_by("period").agg(pl.col("period_unstable").first()).sort("period")[
        "period_unstable"].to_list() == [False, True]
    assert r.status == "warn" and r.figures["counts_n_unstable_periods"] == 1
    assert "period 2: class 'a' 50.0% -> 40.0% (-10.0 points)" in r.message


@pytest.mark.parametrize("shift, stable", [(0.003, True), (0.05, False)])
def test_practical_threshold_on_large_counts(shift, stable):
    """At 10M rows a 0.3-point change is significant but must not count; a 5-point one must."""
    counts = _history([(0.5, 0.3, 0.2), (0.5 + shift, 0.3 - shift, 0.2)], 10_000_000)
    r = prevalence_stability(counts)
    assert r.table["chi2_p_adjusted"][0] < 1e-6  # significant either way
    assert r.figures["stable"] == float(stable) and r.status == ("pass" if stable else "warn")


def test_labels_where_present_and_predictions_always():
    rows = pl.DataFrame({"period": [1] * 100 + [2] * 100,
                         "label": ["a"] * 50 + ["b"] * 50 + [None] * 100,
                         "prediction": ["a"] * 50 + ["b"] * 50 + ["a"] * 80 + ["b"] * 20})
    counts = class_counts(rows)
    assert counts.filter(pl.col("source") == "label")["period"].unique().to_list() == [1]
    assert counts.filter(pl.col("source") == "prediction")["count"].to_list() == [50, 50, 80, 20]
    r = prevalence_stability(counts)
    assert set(r.table["source"].unique()) == {"prediction"}  # labels have no later period
    assert r.figures["prediction_stable"] == 0.0
    assert r.table["abs_change"].to_list() == pytest.approx([0.3, -0.3])
    merged = pl.concat([class_counts(rows.head(120)), class_counts(rows.tail(80))]).group_by(
        "source", "period", "class").agg(pl.col("count").sum()).sort("source", "period", "class")
    assert merged.equals(counts)


def test_reference_window_as_list_pools_periods():
    counts = _history([(0.5, 0.3, 0.2), (0.4, 0.4, 0.2), (0.45, 0.35, 0.2)], 1000)
    r = prevalence_stability(counts, reference=[0, 1])
    assert r.table["period"].unique().to_list() == [2]
    assert r.table["reference_prevalence"].to_list() == pytest.approx([0.45, 0.35, 0.2])


# ---------------------------------------------------------------- price stability
def test_price_stability_against_scipy_and_relative_changes():
    rng = np.random.default_rng(3)
    a0, b0 = rng.lognormal(1, 0.3, 300), rng.lognormal(2, 0.3, 300)
    a1, b1 = rng.lognormal(1, 0.3, 300), rng.lognormal(2, 0.3, 300) * 1.3
    prices = pl.DataFrame({"period": [0] * 600 + [1] * 600, "class": (["a"] * 300 + ["b"] * 300) * 2,
                           "price": np.concatenate([a0, b0, a1, b1])})
    r = price_stability(prices)
    rows = {row["class"]: row for row in r.table.iter_rows(named=True)}
    for cls, ref, cur in (("a", a0, a1), ("b", b0, b1)):
        ks = stats.ks_2samp(ref, cur)
        assert rows[cls]["ks_statistic"] == pytest.approx(ks.statistic) and rows[cls]["ks_p_value"] == pytest.approx(
            ks.pvalue)
        assert rows[cls]["median_change"] == pytest.approx(np.median(cur) / np.median(ref) - 1)
        assert rows[cls]["mean_change"] == pytest.approx(cur.mean() / ref.mean() - 1)
    assert (rows["a"]["flagged"], rows["b"]["flagged"]) == (False, True)
    assert r.status == "warn" and r.figures["n_flagged"] == 1 and "class 'b'" in r.message
    assert r.figures["max_abs_median_change"] == pytest.approx(abs(rows["b"]["median_change"]))
    assert r.figures["max_ks_statistic"] == pytest.approx(max(rows["a"]["ks_statistic"], rows["b"]["ks_statistic"]))


def test_class_missing_in_a_period_is_noted_not_flagged():
    prices = pl.DataFrame({"period": [0, 0, 0, 1, 1], "class": ["a", "a", "b", "a", "a"],
                           "price": [1.0, 2.0, 3.0, 1.0, 2.0]})
    r = price_stability(prices)
    b = r.table.filter(pl.col("class") == "b").row(0, named=True)
    assert b["n"] == 0 and np.isnan(b["ks_statistic"]) and b["flagged"] is False
    assert r.status == "pass" and "1 (period, class) pair(s) had no prices" in r.message


@pytest.mark.parametrize("names", [("period", "label", "price"), ("month", "y", "unit_price")])
def test_label_prices_leave_unlabelled_rows_and_their_prices_out(names):
    period, label, price = names
    rows = pl.DataFrame({period: [1, 1, 1, 2, 2, 2], label: ["a", None, "b", "a", None, "b"],
                         price: [2.0, None, 5.0, 3, float("nan"), 6]})  # the unlabelled rows' prices are not used
    got = label_prices(rows, period_column=period, label_column=label, price_column=price)
    assert got.columns == ["period", "class", "price"]
    assert got.rows() == [(1, "a", 2.0), (1, "b", 5.0), (2, "a", 3.0), (2, "b", 6.0)]
    assert price_stability(got).table.select("class", "n_reference", "n").rows() == [("a", 1, 1), ("b", 1, 1)]


# ---------------------------------------------------------------- bad input
_T = pl.DataFrame({"id": [1, 2], "x": [0.1, 0.2], "label": [0, 1]})


@pytest.mark.parametrize("call, match", [
    (lambda: leakage(_T, _T.clear(), feature_columns=["x"]), "test: the table is empty"),
    (lambda: leakage(_T, _T, feature_columns=["nope"]), r"train: column\(s\) \['nope'\] not found"),
    (lambda: leakage(_T, _T.with_columns(pl.col("x").cast(pl.String)), feature_columns=["x"]),
     "column 'x' is Float64 in train but String in test"),
    (lambda: leakage(_T, _T, feature_columns=[]), "feature_columns: expected a non-empty list"),
    (lambda: leakage(_T, _T, feature_columns=["x", "x"]), "feature_columns: duplicate names"),
    (lambda: leakage(_T, _T, feature_columns=["x"], auroc_threshold=0.4), "auroc_threshold"),
    (lambda: leakage([1, 2], _T, feature_columns=["x"]), "train: expected a polars"),
    (lambda: representativeness(_T, _T, feature_columns=["x"], min_support=-1), "min_support"),
    (lambda: representativeness(_T, _T, feature_columns=["x", "label"]), "the label column 'label' is listed"),
    (lambda: leakage(_T, _T, feature_columns=["x"], label_column="y"), r"train: column\(s\) \['y'\] not found"),
    (lambda: prevalence_stability(pl.DataFrame({"period": [1, 2], "class": ["a", "a"], "count": [5, -1]})),
     r"counts column 'count': null, NaN, infinite or negative value in 1 row\(s\), e.g. row 1 = -1.0"),
    (lambda: prevalence_stability(pl.DataFrame({"period": [1, 2], "class": ["a", "a"], "count": [5, 1]}),
                                  reference=2), "reference: a window of 2 period"),
    (lambda: prevalence_stability(pl.DataFrame({"period": [1, 2], "class": ["a", "a"], "count": [5, 1]}),
                                  reference=[7]), r"reference: period\(s\) \[7\] not in the data"),
    (lambda: prevalence_stability(pl.DataFrame({"period": [1, 2, 2], "class": ["a", "a", "b"], "count": [5, 0, 0]})),
     "period 2 of source 'counts' has no rows"),
    (lambda: price_stability(pl.DataFrame({"period": [1, 2], "class": ["a", "a"], "price": [1.0, float("nan")]})),
     r"prices column 'price': null, NaN or infinite value in 1 row\(s\), e.g. row 1 = nan"),
    (lambda: class_counts(pl.DataFrame({"period": [1], "label": ["a"], "prediction": [None]})), "null prediction"),
    (lambda: prevalence_stability(pl.DataFrame({"period": [1, 2], "class": ["a", "a"], "count": [5.0, 1.5]})),
     r"non-integer count in 1 row\(s\), e.g. row 1 = 1.5"),
    (lambda: price_stability(pl.DataFrame({"period": [1, 2], "class": ["a", None], "price": [1.0, 2.0]})),
     r"prices column 'class': null value in 1 row\(s\), e.g. row 1"),
    (lambda: class_counts(pl.DataFrame({"month": [1, None], "label": ["a", "b"]}), period_column="month"),
     r"rows column 'month': null value in 1 row\(s\), e\.g\. row 1"),
    (lambda: label_prices(pl.DataFrame({"period": [1, 2, 2], "label": ["a", None, "a"],
                                        "p": [1.0, None, float("inf")]}), price_column="p"),
     r"rows column 'p': null, NaN or infinite value in 1 row\(s\), e\.g\. row 2"),
    (lambda: label_prices(pl.DataFrame({"period": [1, None], "label": ["a", "a"], "price": [1.0, 2.0]})),
     r"rows column 'period': null value in 1 row\(s\)"),
])
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(InputError, match=match):
        call()
