"""classwatch.demo.quotes: a quote's retailer is its title's store; one retailer's new titles; one's pack sizes in kg."""

from __future__ import annotations

import polars as pl

from classwatch.demo.quotes import Shift, quotes


def test_the_retailer_is_the_titles_store_and_only_the_retitled_one_changes():
    before = quotes(3_000, 5, "2024-10")
    after = quotes(3_000, 5, "2024-11", retitled=Shift().retitled_retailer)
    assert all(t.startswith(r) for t, r in zip(before["title"], before["retailer"]))
    changed = [r for t0, t1, r in zip(before["title"], after["title"], after["retailer"]) if t0 != t1]
    assert changed and set(changed) == {"Aldi"}
    assert len(changed) == (after["retailer"] == "Aldi").sum()  # every one of its titles, no other


def test_a_retailers_pack_sizes_in_kilograms_change_that_column_of_that_retailer_only():
    from classwatch.demo.quotes import CLASSES, PACK_SIZES

    grams = quotes(3_000, 5, "2024-09")
    kilos = quotes(3_000, 5, "2024-09", pack_in_kilograms="Lidl")
    assert kilos.drop("pack_size").equals(grams.drop("pack_size"))  # nothing else of the quotes moves
    lidl = (grams["retailer"] == "Lidl").to_numpy()
    assert 300 < lidl.sum() < 600  # one of seven stores
    assert (kilos["pack_size"].to_numpy()[lidl] * 1000 == grams["pack_size"].to_numpy()[lidl]).all()
    assert kilos.filter(~pl.Series(lidl))["pack_size"].equals(grams.filter(~pl.Series(lidl))["pack_size"])
    # each quote's pack size is one of its class's sizes, and every class has some
    sizes = grams.group_by("label").agg(pl.col("pack_size").unique())
    assert {r["label"]: set(r["pack_size"]) <= set(PACK_SIZES[r["label"]]) for r in sizes.iter_rows(named=True)} \
        == {c: True for c in CLASSES}
