"""Synthetic web-scraped price quotes for the demo: product titles, COICOP-like classes, prices, weights, months."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

#: class -> (prevalence, median price, product nouns, class brands)
CLASSES: dict[str, tuple[float, float, tuple[str, ...], tuple[str, ...]]] = {
    "bread_cereals": (0.19, 1.30, ("wholemeal bread", "white loaf", "bagels", "porridge oats", "cornflakes",
                                   "granola", "rice", "spaghetti", "penne pasta", "crumpets"),
                      ("Hovis", "Warburtons", "Kellogg's", "Quaker")),
    "meat": (0.15, 4.20, ("chicken breast", "beef mince", "pork sausages", "smoked bacon", "lamb chops",
                          "turkey slices", "sirloin steak", "chicken thighs"), ("Richmond", "Birchwood", "Heck")),
    "fish": (0.05, 4.80, ("salmon fillets", "cod fillets", "tuna chunks", "king prawns", "smoked mackerel",
                          "fish fingers"), ("John West", "Birds Eye", "Young's")),
    "dairy_eggs": (0.16, 1.70, ("semi skimmed milk", "mature cheddar", "greek yogurt", "free range eggs",
                                "butter", "double cream", "mozzarella"), ("Cathedral City", "Yeo Valley", "Anchor")),
    "oils_fats": (0.04, 2.60, ("olive oil", "sunflower oil", "vegetable oil", "spreadable", "margarine"),
                  ("Filippo Berio", "Flora", "Bertolli")),
    "fruit": (0.10, 1.60, ("bananas", "gala apples", "strawberries", "blueberries", "seedless grapes",
                           "easy peeler oranges", "mango"), ("Del Monte", "Chiquita")),
    "vegetables": (0.12, 1.00, ("carrots", "broccoli", "baby potatoes", "cherry tomatoes", "red onions",
                                "iceberg lettuce", "frozen peas"), ("Florette", "Bonduelle")),
    "sugar_sweets": (0.08, 1.50, ("milk chocolate", "granulated sugar", "strawberry jam", "honey",
                                  "fruit pastilles", "chocolate biscuits"), ("Cadbury", "Nestle", "Bonne Maman")),
    "coffee_tea": (0.05, 3.40, ("ground coffee", "instant coffee", "tea bags", "coffee pods", "green tea",
                                "hot chocolate"), ("Nescafe", "Lavazza", "PG Tips", "Twinings")),
    "soft_drinks": (0.06, 1.40, ("orange juice", "cola", "sparkling water", "lemonade", "apple juice",
                                 "energy drink", "still water"), ("Coca-Cola", "Tropicana", "Evian", "Robinsons")),
}
STORES = ("Tesco", "Sainsbury's", "Asda", "Morrisons", "Aldi", "Lidl", "Waitrose")
WORDS = ("Organic", "Finest", "Value", "British", "Family Pack", "Multipack", "Extra Special", "Reduced Fat",
         "Essentials", "Fairtrade")
SIZES = (("250g", 0.6), ("400g", 0.9), ("500g", 1.0), ("750g", 1.4), ("1kg", 1.8), ("6 pack", 1.6),
         ("1L", 1.0), ("2L", 1.7), ("330ml", 0.5))
#: Share of titles that borrow a noun from another class (the classifier's honest confusion).
CONFUSION = 0.10
#: class -> the pack sizes its products come in, in grams or millilitres (pints of milk: 568 ml). Soft
#: drinks' packs are larger than most, but not so much that their share rising by 8 points moves the
#: pack sizes past the feature threshold (their Wasserstein shift stays under a third of it).
PACK_SIZES: dict[str, tuple[int, ...]] = {
    "bread_cereals": (375, 400, 500, 750, 800, 1000), "meat": (227, 300, 400, 454, 500, 750),
    "fish": (145, 200, 240, 300, 400), "dairy_eggs": (150, 250, 350, 400, 500, 568, 1136),
    "oils_fats": (250, 500, 750, 1000), "fruit": (150, 400, 500, 600, 1000), "vegetables": (200, 250, 500, 750, 1000),
    "sugar_sweets": (45, 110, 200, 340, 454), "coffee_tea": (100, 200, 227, 250, 500),
    "soft_drinks": (200, 250, 330, 500, 750, 1000)}


@dataclass(frozen=True)
class Shift:
    """What changes from ``from_month`` on: one class's prevalence (absolute change) and one
    class's prices (relative change); from ``retitle_month`` on, one retailer's titles
    (``retitled_retailer`` writes its product nouns as short upper-case codes, "WHOBRE" for
    "wholemeal bread", which the classifier never saw); in ``pack_month`` only, one retailer's
    feed gives its pack sizes in kilograms and litres instead of grams and millilitres (``pack_retailer``:
    its ``pack_size`` values are 1,000 times smaller, and nothing else of its quotes changes)."""

    from_month: int = 8
    prevalence_class: str = "soft_drinks"
    prevalence_change: float = 0.08
    price_class: str = "coffee_tea"
    price_change: float = 0.20
    retitle_month: int = 11
    retitled_retailer: str = "Aldi"
    pack_month: int = 9
    pack_retailer: str = "Lidl"


def class_list() -> list[str]:
    return sorted(CLASSES)


def _code(noun: str) -> str:
    """A product noun as a retailer's short code: the first three letters of each word, upper case."""
    return "".join(w[:3] for w in noun.split()).upper()


def quotes(n: int, seed: int, period: str, *, shift: Shift | None = None, retitled: str | None = None,
           pack_in_kilograms: str | None = None) -> pl.DataFrame:
    """``n`` price quotes of one month: id, title, retailer, label, price, weight (expenditure),
    pack_size (grams or millilitres), period.

    Titles read like "Tesco Finest Mature Cheddar 400g": store, optional marketing word, a class
    brand or none, a product noun of the class (10 % from another class), a size. Prices are
    lognormal around the class median, scaled by the size; expenditure weight = price x quantity.
    The ``retailer`` is the title's store; the ``retitled`` retailer's nouns are codes (:func:`_code`).
    ``pack_size`` is one of the sizes of the quote's class (:data:`PACK_SIZES`; the title's size is
    drawn apart, as the title's other parts are), drawn after every other column (so the other columns are those of a frame without it); the ``pack_in_kilograms``
    retailer's pack sizes are given in kilograms and litres.
    """
    rng = np.random.default_rng(seed)
    names = list(CLASSES)
    prior = np.array([CLASSES[c][0] for c in names])
    if shift is not None:
        j = names.index(shift.prevalence_class)
        prior = prior * (1 - shift.prevalence_change) / (1 - prior[j])
        prior[j] = CLASSES[shift.prevalence_class][0] + shift.prevalence_change
    prior = prior / prior.sum()
    y = rng.choice(len(names), size=n, p=prior)
    noun_class = np.where(rng.random(n) < CONFUSION, rng.integers(0, len(names), n), y)
    nouns = [CLASSES[names[c]][2] for c in range(len(names))]
    brands = [CLASSES[names[c]][3] for c in range(len(names))]
    noun = [nouns[c][i % len(nouns[c])] for c, i in zip(noun_class, rng.integers(0, 1000, n))]
    brand = [brands[c][i % len(brands[c])] if r < 0.5 else "" for c, i, r in
             zip(y, rng.integers(0, 1000, n), rng.random(n))]
    store = np.asarray(STORES)[rng.integers(0, len(STORES), n)]
    word = np.where(rng.random(n) < 0.4, np.asarray(WORDS)[rng.integers(0, len(WORDS), n)], "")
    size_i = rng.integers(0, len(SIZES), n)
    size = np.asarray([s for s, _ in SIZES])[size_i]
    factor = np.asarray([f for _, f in SIZES])[size_i]
    if retitled is not None:
        noun = [_code(nn) if st == retitled else nn for nn, st in zip(noun, store)]
    title = [" ".join(w for w in (s, wd, b, nn.title() if r < 0.7 else nn, sz) if w)
             for s, wd, b, nn, sz, r in zip(store, word, brand, noun, size, rng.random(n))]
    median = np.array([CLASSES[names[c]][1] for c in y])
    if shift is not None:
        median = np.where(np.asarray(names)[y] == shift.price_class, median * (1 + shift.price_change), median)
    price = np.round(np.maximum(median * factor * np.exp(0.3 * rng.standard_normal(n)), 0.1), 2)
    weight = np.round(price * np.exp(1.2 + 0.8 * rng.standard_normal(n)), 2)
    packs = [PACK_SIZES[c] for c in names]
    pack = np.array([packs[c][i % len(packs[c])] for c, i in zip(y, rng.integers(0, 1000, n))], dtype=np.float64)
    if pack_in_kilograms is not None:
        pack = np.where(store == pack_in_kilograms, pack / 1000.0, pack)
    return pl.DataFrame({"id": [f"{period}-{i:06d}" for i in range(n)], "title": title, "retailer": store,
                         "label": np.asarray(names)[y], "price": price, "weight": weight, "pack_size": pack,
                         "period": [period] * n})


def history(months: list[str], n_per_month: int, seed: int) -> pl.DataFrame:
    """Stable months (no shift): the training era."""
    return pl.concat([quotes(n_per_month, seed + i, m) for i, m in enumerate(months)])


def labelled_sample(scored: pl.DataFrame, seed: int, *, common: float = 0.03, rare: float = 0.25,
                    n_rare: int = 3) -> pl.DataFrame:
    """A delivery as price collectors label it: labels kept on a sample stratified by predicted class
    (``rare`` of the rows predicted as the ``n_rare`` least predicted classes, ``common`` of the others),
    null elsewhere, and each labelled row's design weight (1 / its sampling rate) in ``design_weight``."""
    counts = scored["prediction"].value_counts()
    rarest = set(counts.sort("count")["prediction"].head(n_rare).to_list())
    rate = np.where(scored["prediction"].is_in(list(rarest)).to_numpy(), rare, common)
    on = pl.Series(np.random.default_rng(seed).random(scored.height) < rate)
    return scored.with_columns(label=pl.when(on).then(pl.col("label")).otherwise(None),
                               design_weight=pl.when(on).then(pl.Series(1.0 / rate)).otherwise(None))
