"""classwatch.demo.quotes: each quote's retailer is the store its title starts with; one retailer's new titles."""

from __future__ import annotations

from classwatch.demo.quotes import Shift, quotes


def test_the_retailer_is_the_titles_store_and_only_the_retitled_one_changes():
    before = quotes(3_000, 5, "2024-10")
    after = quotes(3_000, 5, "2024-11", retitled=Shift().retitled_retailer)
    assert all(t.startswith(r) for t, r in zip(before["title"], before["retailer"]))
    changed = [r for t0, t1, r in zip(before["title"], after["title"], after["retailer"]) if t0 != t1]
    assert changed and set(changed) == {"Aldi"}
    assert len(changed) == (after["retailer"] == "Aldi").sum()  # every one of its titles, no other
