"""Input-feature statistics and tests: oracles on the rows (scipy), merge = union, the alert goals by simulation."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from metrics_core.errors import InputError
from metrics_core.monitoring import assess_period
from metrics_core.monitoring.features import (MAX_CATEGORIES, SAMPLE_ROWS, feature_update, numeric_index,
                                              numeric_points)
from metrics_core.monitoring.kinds.features import (_category_counts, _category_test, domain_test, feature_roles,
                                                    numeric_test)
from metrics_core.monitoring.period import binned
from metrics_core.monitoring.scan import scan_period


def _binned_of(values: np.ndarray):
    s = feature_update(pa.table({"x": values}), ("x",))
    return binned(numeric_points(), s.numeric[0])


@pytest.mark.parametrize("seed, dist", [(0, "normal"), (1, "lognormal"), (2, "mixed"), (3, "integers")])
def test_numeric_ks_and_wasserstein_within_the_documented_bounds_of_scipy_on_the_rows(seed, dist):
    rng = np.random.default_rng(seed)
    draw = {"normal": lambda n, s: rng.normal(100 + s, 15, n), "lognormal": lambda n, s: rng.lognormal(s, 2, n),
            "mixed": lambda n, s: np.concatenate((rng.normal(-5e3, 1e3, n // 2), rng.exponential(1 + s, n - n // 2))),
            "integers": lambda n, s: rng.choice([250, 400, 500, 750, 1000], n).astype(float) + 50 * s}[dist]
    a, b = draw(3000, 0.0), draw(2500, 0.3)
    t = numeric_test(_binned_of(a), _binned_of(b))
    d_rows = stats.ks_2samp(a, b).statistic
    d = t.details
    assert d["ks_d"] <= d_rows + 1e-12 and d_rows - d["ks_d"] <= d["ks_bound"] + 1e-12
    w_rows = stats.wasserstein_distance(a, b)
    assert abs(d["wasserstein"] - w_rows) <= d["wasserstein_bound"]
    assert d["wasserstein_bound"] <= (np.abs(a).mean() + np.abs(b).mean()) / 120 + 1e-5


def test_numeric_bins_are_range_free_and_each_value_is_within_1_128_of_its_point():
    x = np.concatenate((np.geomspace(1e-5, 1e11, 5000), -np.geomspace(1e-5, 1e11, 5000)))
    p = numeric_points()[numeric_index(x)]
    assert np.all(np.abs(p - x) <= np.abs(x) / 128)
    assert numeric_index(np.array([3e12]))[0] == numeric_points().size - 1  # overflow, counted


def test_categorical_feature_equals_scipy_chi2_contingency_and_counts_unseen_values():
    ref = pa.table({"shop": ["a"] * 500 + ["b"] * 300 + [None] * 20})
    cur = pa.table({"shop": ["a"] * 400 + ["b"] * 350 + ["new"] * 50 + [None] * 20})
    r, c = (feature_update(t, ("shop",)) for t in (ref, cur))
    t = _category_test(_category_counts(r, "shop"), _category_counts(c, "shop"))
    table = np.array([[500, 300, 0, 20], [400, 350, 50, 20]])
    chi2, p, *_ = stats.chi2_contingency(table, correction=False)
    assert t.statistic == pytest.approx(chi2) and t.p_value == pytest.approx(p)
    assert t.details["unseen_rows"] == 50 and t.details["unseen_share"] == pytest.approx(50 / 820)


def test_more_values_than_the_cap_go_to_hashed_buckets_and_still_merge_exactly():
    values = [f"v{i}" for i in range(MAX_CATEGORIES + 200)]
    whole = feature_update(pa.table({"id": values}), ("id",))
    parts = feature_update(pa.table({"id": values[:700]}), ("id",)).merge(
        feature_update(pa.table({"id": values[700:]}), ("id",)))
    assert whole.categories[0].values is None and int(whole.categories[0].buckets.sum()) == len(values)
    assert np.array_equal(whole.categories[0].buckets, parts.categories[0].buckets)


rows = st.lists(st.tuples(st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False)),
                          st.sampled_from(["a b c", "Tesco Finest tea 400g", "x", None, "milk 1L"])),
                min_size=1, max_size=60)


@settings(max_examples=25, deadline=None)
@given(rows, st.integers(1, 59))
def test_merge_of_two_parts_equals_the_statistics_of_their_union(data, cut):
    cut = min(cut, len(data))
    table = pa.table({"x": pa.array([r[0] for r in data], pa.float64()), "t": pa.array([r[1] for r in data], pa.string())})
    whole = feature_update(table, ("x", "t"))
    if cut == len(data):
        return
    merged = feature_update(table.slice(0, cut), ("x", "t")).merge(feature_update(table.slice(cut), ("x", "t")))
    for name in ("missing", "numeric", "token_rows", "tokens", "sample_hash"):
        assert np.array_equal(getattr(whole, name), getattr(merged, name)), name
    assert np.array_equal(whole.sample, merged.sample, equal_nan=True)
    assert whole.categories[0].counts() == merged.categories[0].counts() and whole.n_rows == merged.n_rows


def test_the_row_sample_is_the_bottom_k_of_the_union_whatever_the_split():
    rng = np.random.default_rng(0)
    table = pa.table({"x": rng.normal(size=6000), "y": rng.normal(size=6000)})
    whole = feature_update(table, ("x", "y"))
    parts = [feature_update(table.slice(i, 1000), ("x", "y")) for i in range(0, 6000, 1000)]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    assert len(whole.sample_hash) == SAMPLE_ROWS and np.array_equal(whole.sample, merged.sample)


def test_scan_by_partitions_merges_to_the_whole_scan(tmp_path):
    import pyarrow.parquet as pq

    from metrics_core.dataset import parts_of

    rng = np.random.default_rng(1)
    n = 5000
    table = pa.table({"prediction": rng.choice(["a", "b"], n), "pack": rng.choice([250.0, 500.0], n),
                      "w": rng.lognormal(size=n)})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=1000)
    kw = dict(prediction="prediction", features=("pack", "w"))
    whole = scan_period(str(tmp_path / "d.parquet"), "binary", ["a", "b"], batch_rows=700, **kw)
    parts = [scan_period(str(tmp_path / "d.parquet"), "binary", ["a", "b"], parts=[p], **kw)
             for p in parts_of(str(tmp_path / "d.parquet"), target_rows=2000)]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    assert np.array_equal(whole.features.numeric, merged.features.numeric)
    assert np.array_equal(whole.features.sample, merged.features.sample)


def test_a_feature_that_is_neither_numeric_nor_text_is_an_error_naming_it():
    table = pa.table({"prediction": ["a", "b"], "when": pa.array([1, 2], pa.timestamp("s"))})
    with pytest.raises(InputError, match="'when'"):
        scan_period(table, "binary", ["a", "b"], prediction="prediction", features=("when",))
    with pytest.raises(InputError, match="'size'"):
        scan_period(table, "binary", ["a", "b"], prediction="prediction", features=("size",))


def test_roles_text_for_titles_categories_for_codes_and_few_numeric_levels():
    t = pa.table({"title": ["Tesco Finest Mature Cheddar 400g"] * 30, "shop": ["shop_07"] * 30,
                  "pack": [250, 500, 750] * 10, "price": np.linspace(1, 9, 30), "ok": [True, False] * 15})
    roles = feature_roles(feature_update(t, tuple(t.column_names)))
    assert roles == {"title": "text", "shop": "category", "pack": "category", "price": "numeric", "ok": "category"}


def test_domain_classifier_auroc_is_half_on_stable_samples_and_high_on_a_correlation_change():
    rng = np.random.default_rng(3)
    aucs = []
    for seed in range(8):
        r, c = np.random.default_rng(seed).normal(size=(2, 2000, 5))
        t = domain_test(r, c, rng.integers(0, 2 ** 63, 2000, dtype=np.uint64),
                        rng.integers(0, 2 ** 63, 2000, dtype=np.uint64))
        aucs.append(t.effect_size)
    assert max(aucs) < 0.55 and abs(np.mean(aucs) - 0.5) < 0.02
    r = rng.normal(size=(2000, 2))
    z = rng.normal(size=2000)
    c = np.column_stack((z, z * 0.95 + 0.3 * rng.normal(size=2000))) / np.array([1, 0.99])  # same margins, correlated
    t = domain_test(r, c, rng.integers(0, 2 ** 63, 2000, dtype=np.uint64),
                    rng.integers(0, 2 ** 63, 2000, dtype=np.uint64))
    assert t.effect_size > 0.6 and t.p_value < 1e-6


def _month(rng: np.random.Generator, n: int, pack_p=(0.25, 0.25, 0.25, 0.25)) -> pl.DataFrame:
    y = rng.choice(["bread", "milk", "tea"], n)
    return pl.DataFrame({"label": y, "prediction": y, "pack_size": rng.choice([250, 400, 500, 750], n, p=pack_p),
                         "weight_g": rng.lognormal(6, 0.5, n), "shop": rng.choice([f"shop_{i:02d}" for i in range(20)], n),
                         "title": [f"Tesco Finest {w} {s}" for w, s in zip(rng.choice(["Cheddar", "Milk", "Tea"], n),
                                                                           rng.choice(["400g", "1L"], n))]})


COLUMNS = {"features": ["pack_size", "weight_g", "shop", "title"]}


@pytest.mark.parametrize("seed", range(3))
def test_a_pack_size_drift_that_moves_nothing_else_alerts_and_names_the_feature(seed):
    rng = np.random.default_rng(seed)
    ref, cur = _month(rng, 4000), _month(rng, 4000, pack_p=(0.10, 0.25, 0.25, 0.40))
    out = assess_period(ref, cur, columns=COLUMNS, report_options={"n_boot": 0})
    assert out.alert and out.reasons[0].key.cls == "pack_size"
    assert out.reasons[0].text.startswith("feature pack_size: values shifted, PSI")
    assert out.metrics["n_features_alerting"] == 1 and out.metrics["n_features_tested"] == 4
    assert out.tables["feature_drift.json"]["feature"][0] == "pack_size"
    assert not any(k.startswith("p_adj/feature") for k in out.metrics)


def test_twelve_stable_months_with_features_watched_raise_at_most_one_false_alarm():
    from metrics_core.monitoring import assess_stats

    rng = np.random.default_rng(12)

    def stats(frame):
        return scan_period(frame.to_arrow(), "multiclass", ["bread", "milk", "tea"], label="label",
                           prediction="prediction", features=COLUMNS["features"])

    ref = stats(_month(rng, 20_000))  # a reference of 20,000 rows, months of 10,000, as the demo's
    runs = [assess_stats(ref, stats(_month(rng, 10_000)), report_options={"n_boot": 0}) for _ in range(12)]
    assert sum(r.alert for r in runs) <= 1
    assert max(r.metrics["feature_domain_auroc"] for r in runs) < 0.56


def test_the_pack_size_shift_passes_both_halves_of_the_rule_in_every_one_of_200_seeds():
    from metrics_core.monitoring import POLICY

    rng = np.random.default_rng(5)
    ref = rng.multinomial(4000, [0.25] * 4, size=200)
    cur = rng.multinomial(4000, [0.10, 0.25, 0.25, 0.40], size=200)
    stable = rng.multinomial(4000, [0.25] * 4, size=200)
    names = ["250", "400", "500", "750"]
    shifted = [_category_test(dict(zip(names, r)), dict(zip(names, c))) for r, c in zip(ref, cur)]
    assert all(t.p_value < 1e-6 and t.effect_size >= POLICY.feature_psi for t in shifted)
    assert max(_category_test(dict(zip(names, r)), dict(zip(names, c))).effect_size
               for r, c in zip(ref, stable)) < POLICY.feature_psi / 3


def test_a_retailer_renaming_its_products_alerts_on_unseen_tokens_and_a_stable_month_does_not():
    from classwatch.demo.quotes import quotes

    ref = quotes(6000, 1, "2024-01")
    stable, renamed = quotes(6000, 2, "2024-02"), quotes(6000, 3, "2024-03")
    rng = np.random.default_rng(0)
    new = [f"Shop07 Zesty{rng.integers(100)} Crumbly{rng.integers(100)} Snack" for _ in range(900)]
    renamed = renamed.with_columns(title=pl.Series(new + renamed["title"].to_list()[900:]))
    kw = dict(columns={"features": ["title"], "price": None, "weight": None}, report_options={"n_boot": 0})
    ref, stable, renamed = (f.with_columns(prediction=f["label"]) for f in (ref, stable, renamed))
    quiet = assess_period(ref, stable, **kw)
    loud = assess_period(ref, renamed, **kw)
    assert not [r for r in quiet.reasons if r.key.cls == "title"]
    unseen = next(r for r in loud.reasons if r.key.kind == "feature_unseen")
    assert unseen.key.cls == "title" and unseen.text.startswith("feature title: ")
    assert unseen.current == pytest.approx(unseen.effect + unseen.reference) and unseen.current > 0.1


def test_numbers_beyond_the_bins_are_a_loud_warning_naming_the_feature():
    ids = pl.DataFrame({"prediction": ["a", "b", "c", "d"] * 25, "order_id": np.arange(100) * 10 ** 13})
    with pytest.warns(UserWarning, match="feature order_id: 99 reference and 99 period values beyond"):
        assess_period(ids, ids, columns={"features": ["order_id"]}, report_options={"n_boot": 0})
