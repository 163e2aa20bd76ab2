"""Mergeable statistics of a period's input features: range-free numeric bins, capped categories, hashed tokens, a row sample.

Every statistic here is fixed before any row is read, so the statistics of two batches, files
or Dask partitions add up to those of their union, and a reference and a period scanned apart
compare bin for bin:

- **numeric** (integer and float columns): counts over a fixed *floating-point* binning that
  needs no known range: the sign, the binary exponent and the first :data:`MANTISSA_BITS` (6)
  bits of the mantissa of ``|x|`` name the bin (the bits of an IEEE double, as in HDR histograms
  and DDSketch). Each bin of ``[2**e (1 + j/64), 2**e (1 + (j+1)/64))`` is represented by its
  midpoint, at most ``|x| / 128`` (0.78 %) from any value in it; ``|x| < 2**-20`` (about 1e-6)
  is one bin at 0 and ``|x| >= 2**40`` (about 1.1e12) an overflow bin at +-2**40, counted in
  the details. Hence, against the statistics on the rows (bounds reported with each test):
  ``|W_bins - W_rows| <= (E|X_ref| + E|X_cur|) / 128 + 2 * 2**-20`` (each value moves at most
  that far; Wasserstein-1 is a transport distance), and ``0 <= D_rows - D_bins <= the largest
  share of either sample in one bin`` for the KS statistic (the binned ECDFs equal the rows'
  at every bin edge). Integers up to 64 keep a bin of their own.
- **string, dictionary and bool columns**: exact counts per value while at most
  :data:`MAX_CATEGORIES` (1,000) distinct values are met; beyond, counts of
  :data:`CATEGORY_BUCKETS` (1,024) buckets of a seeded hash of the value (the switch depends only
  on the union's distinct values, so merging stays exact). Also, for text, the tokens per row
  (lowercased runs of letters and digits; 0-63 and 64+) and the counts of every token in a table
  of :data:`TOKEN_BUCKETS` (131,072) buckets of its seeded hash.
- **a row sample**: the :data:`SAMPLE_ROWS` (2,000) rows of lowest seeded hash of their feature
  values (a bottom-k sample: the bottom k of two parts' bottom k is the bottom k of their union),
  with the numeric features and each string feature's token count, for the multivariate test.

Missing values (null, NaN) are counted per feature and kept out of the distributions. Seeded
hashes are polars' (stable within one polars version: a reference and a period are compared
within one run).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from metrics_core.errors import InputError

__all__ = ["FeatureStats", "feature_update", "numeric_index", "numeric_points", "feature_type", "MAX_CATEGORIES",
           "CATEGORY_BUCKETS", "TOKEN_BUCKETS", "MAX_TOKENS", "SAMPLE_ROWS", "MANTISSA_BITS", "EXP_RANGE",
           "N_NUMERIC_BINS", "SEED", "Categories", "with_features"]

#: Mantissa bits of a numeric bin: 64 bins per factor of two, each at most 1/128 of |x| from its midpoint.
MANTISSA_BITS = 6
#: Binary exponents binned: |x| under 2**-20 is one bin at 0, |x| from 2**40 on the overflow bin.
EXP_RANGE = (-20, 40)
_NQ = (EXP_RANGE[1] - EXP_RANGE[0]) << MANTISSA_BITS  # bins per sign
#: Bins of a numeric feature: overflow below, negatives, zero, positives, overflow above.
N_NUMERIC_BINS = 2 * _NQ + 3
_SHIFT = np.uint64(52 - MANTISSA_BITS)
_Q0 = (1023 + EXP_RANGE[0]) << MANTISSA_BITS

#: Distinct values of a string feature counted exactly; beyond, hashed buckets.
MAX_CATEGORIES = 1000
#: Hashed buckets of a string feature with more than MAX_CATEGORIES values.
CATEGORY_BUCKETS = 1024
#: Hashed buckets of the token table of a text feature (1 MB a feature).
TOKEN_BUCKETS = 1 << 17
#: Tokens per row counted one by one; more are counted together (the last bin).
MAX_TOKENS = 64
#: Rows of the bottom-k sample kept for the multivariate test.
SAMPLE_ROWS = 2000
#: The seed of every hash here.
SEED = 35
_TOKEN = r"[\p{L}\p{N}]+"


def _lookup() -> np.ndarray:
    """Bin of every value of the top 18 bits of a double (sign, exponent, 6 mantissa bits); the
    exponent of inf and NaN: inf's pattern (mantissa bits 0) overflows, a quiet NaN's goes to bin
    :data:`N_NUMERIC_BINS` (missing). The bins in order: overflow below, negatives, |x| < 2**-20,
    positives, overflow above."""
    top = np.arange(1 << 18, dtype=np.int64)
    q = (top & ((1 << 17) - 1)) - _Q0
    np.clip(q, -1, _NQ, out=q)
    out = np.where(top >> 17, _NQ - q, _NQ + 2 + q)
    nan = ((top >> MANTISSA_BITS) & 0x7FF) == 0x7FF
    nan &= (top & ((1 << MANTISSA_BITS) - 1)) != 0
    out[nan] = N_NUMERIC_BINS
    return out


_LOOKUP = _lookup()


def numeric_index(x: np.ndarray) -> np.ndarray:
    """Bin of each value in the floating-point binning (0 .. :data:`N_NUMERIC_BINS` - 1; a NaN:
    :data:`N_NUMERIC_BINS`): one shift and one look-up a value.

    >>> numeric_index(np.array([-np.inf, -1.0, 0.0, 1e-9, 1.0, 1.01, 2.0, np.inf, np.nan])).tolist()
    [0, 2560, 3841, 3841, 5122, 5122, 5186, 7682, 7683]
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    idx = (x.view(np.uint64) >> _SHIFT).view(np.int64)
    # in place, element by element (mode "clip" takes no buffer; every index is in range)
    return np.take(_LOOKUP, idx, out=idx, mode="clip")


def numeric_points() -> np.ndarray:
    """The value each numeric bin stands for (increasing): midpoints, 0, and +-2**40 for the overflow bins.

    >>> p = numeric_points()
    >>> p.size == N_NUMERIC_BINS, float(p[numeric_index(np.array([1.0]))[0]]), bool(np.all(np.diff(p) > 0))
    (True, 1.0078125, True)
    """
    q = np.arange(_NQ)
    e = EXP_RANGE[0] + (q >> MANTISSA_BITS)
    j = q & ((1 << MANTISSA_BITS) - 1)
    mid = np.ldexp(1.0 + (j + 0.5) / (1 << MANTISSA_BITS), e)
    top = np.ldexp(1.0, EXP_RANGE[1])
    return np.concatenate(([-top], -mid[::-1], [0.0], mid, [top]))


def feature_type(column: str, arrow_type: pa.DataType) -> str:
    """``"numeric"`` (integers, floats, decimals) or ``"string"`` (strings, dictionaries, bools); an
    InputError naming the column for any other type."""
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "numeric"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_boolean(arrow_type) \
            or pa.types.is_dictionary(arrow_type) or pa.types.is_string_view(arrow_type):
        return "string"
    raise InputError(f"features: column {column!r} has type {arrow_type}, which is neither numeric nor text; "
                     f"watch numbers, strings, categories or booleans (cast it, or leave it out of features).")


@dataclass(frozen=True)
class Categories:
    """Counts of one string feature's values: exact (``values``) up to :data:`MAX_CATEGORIES`
    distinct values, else per hashed bucket (``buckets``)."""

    values: dict | None
    buckets: np.ndarray | None = None

    def merge(self, other: "Categories") -> "Categories":
        if self.values is not None and other.values is not None:
            out = dict(self.values)
            for k, v in other.values.items():
                out[k] = out.get(k, 0) + v
            return _capped(out)
        return Categories(None, self._as_buckets() + other._as_buckets())

    def _as_buckets(self) -> np.ndarray:
        if self.buckets is not None:
            return self.buckets
        keys = pl.Series(list(self.values), dtype=pl.String)
        idx = (keys.hash(seed=SEED) % CATEGORY_BUCKETS).to_numpy().astype(np.int64)
        return np.bincount(idx, weights=np.fromiter(self.values.values(), np.float64, len(self.values)),
                           minlength=CATEGORY_BUCKETS).astype(np.int64)

    def counts(self) -> dict:
        """Category -> rows (hashed buckets as ``"#<bucket>"``)."""
        if self.values is not None:
            return dict(self.values)
        return {f"#{i}": int(c) for i, c in enumerate(self.buckets) if c}


def _capped(values: dict) -> Categories:
    c = Categories(values)
    return c if len(values) <= MAX_CATEGORIES else Categories(None, c._as_buckets())


@dataclass(frozen=True)
class FeatureStats:
    """The mergeable statistics of a period's input features (see the module's notes for each).

    Parameters
    ----------
    columns : tuple of str
        The features, in the spec's order.
    types : tuple of str
        ``"numeric"`` or ``"string"`` per feature (:func:`feature_type`).
    n_rows : int
        Rows summarised.
    missing : numpy.ndarray of int64, shape (F,)
        Null or NaN values per feature.
    numeric : numpy.ndarray of int64, shape (F_numeric, N_NUMERIC_BINS)
        Counts per floating-point bin of each numeric feature.
    categories : tuple of Categories
        Value counts of each string feature.
    token_rows : numpy.ndarray of int64, shape (F_string, MAX_TOKENS + 1)
        Rows with 0, 1, ..., 63 and 64+ tokens, per string feature.
    tokens : numpy.ndarray of int64, shape (F_string, TOKEN_BUCKETS)
        Token counts per hashed bucket, per string feature.
    sample_hash : numpy.ndarray of uint64, shape (k,)
        Hashes of the sampled rows, ascending (k <= :data:`SAMPLE_ROWS`).
    sample : numpy.ndarray of float64, shape (k, F)
        Their numeric features and token counts (NaN when missing), in ``columns`` order.

    Merge (:meth:`merge`) sums the counts, merges the categories and keeps the bottom
    :data:`SAMPLE_ROWS` of both samples: the statistics of the union.
    """

    columns: tuple
    types: tuple
    n_rows: int
    missing: np.ndarray
    numeric: np.ndarray
    categories: tuple
    token_rows: np.ndarray
    tokens: np.ndarray
    sample_hash: np.ndarray
    sample: np.ndarray

    def merge(self, other: "FeatureStats") -> "FeatureStats":
        """The statistics of both parts; an InputError when the features or their types differ."""
        if self.columns != other.columns or self.types != other.types:
            raise InputError(f"features: cannot merge statistics of features {dict(zip(self.columns, self.types))} "
                             f"with {dict(zip(other.columns, other.types))}; a feature changed type between parts.")
        h = np.concatenate((self.sample_hash, other.sample_hash))
        keep = np.argsort(h, kind="stable")[:SAMPLE_ROWS]
        return FeatureStats(self.columns, self.types, self.n_rows + other.n_rows, self.missing + other.missing,
                            self.numeric + other.numeric,
                            tuple(a.merge(b) for a, b in zip(self.categories, other.categories)),
                            self.token_rows + other.token_rows, self.tokens + other.tokens, h[keep],
                            np.concatenate((self.sample, other.sample))[keep])

    def of_type(self, kind: str) -> list[str]:
        """The features of one type, in order."""
        return [c for c, t in zip(self.columns, self.types) if t == kind]


def _floats(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A numeric column as float64 with NaN for nulls."""
    if pa.types.is_decimal(column.type):
        column = column.cast(pa.float64())
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


def _numeric(batch, names: list[str], keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts per bin of each numeric feature, its NaN count and its values on the sampled rows
    ``keep``, a block of features at a time through one buffer (about 32 MB, whatever the batch)."""
    f, n = len(names), batch.num_rows
    out = np.empty((f, N_NUMERIC_BINS), dtype=np.int64)
    nan = np.empty(f, dtype=np.int64)
    sample = np.empty((f, keep.size))
    width = N_NUMERIC_BINS + 1
    step = max(1, (1 << 22) // max(n, 1))
    buffer = np.empty((min(step, f), n))
    for lo in range(0, f, step):
        block = buffer[:min(step, f - lo)]
        for j in range(block.shape[0]):
            block[j] = _floats(batch.column(names[lo + j]))
        sample[lo:lo + block.shape[0]] = block[:, keep]
        idx = numeric_index(block)
        idx += (np.arange(block.shape[0]) * width)[:, None]
        counts = np.bincount(idx.ravel(), minlength=block.shape[0] * width).reshape(block.shape[0], width)
        out[lo:lo + block.shape[0]] = counts[:, :-1]
        nan[lo:lo + block.shape[0]] = counts[:, -1]
    return out, nan, sample.T


def _strings(column: pa.Array | pa.ChunkedArray) -> pl.Series:
    if pa.types.is_dictionary(column.type) or pa.types.is_boolean(column.type) or pa.types.is_string_view(column.type):
        column = column.cast(pa.large_string())
    return pl.Series(column)


def _text(s: pl.Series) -> tuple[Categories, np.ndarray, np.ndarray, np.ndarray]:
    """Value counts, rows per token count, token counts per hashed bucket, and tokens per row (NaN when null)."""
    vc = s.drop_nulls().value_counts()
    cats = _capped(dict(zip(vc[:, 0].to_list(), vc[:, 1].to_list())))
    words = s.str.to_lowercase().str.extract_all(_TOKEN)
    per_row = words.list.len().fill_null(0).to_numpy().astype(np.int64)
    rows = np.bincount(np.minimum(per_row, MAX_TOKENS)[s.is_not_null().to_numpy()], minlength=MAX_TOKENS + 1)
    flat = words.explode().drop_nulls()
    tokens = np.bincount((flat.hash(seed=SEED) % TOKEN_BUCKETS).to_numpy().astype(np.int64), minlength=TOKEN_BUCKETS)
    per_row = per_row.astype(np.float64)
    per_row[s.is_null().to_numpy()] = np.nan
    return cats, rows.astype(np.int64), tokens.astype(np.int64), per_row


def feature_update(batch: pa.RecordBatch | pa.Table, columns: tuple, types: tuple | None = None) -> FeatureStats:
    """The feature statistics of one batch (the 'update' step; merge batches with :meth:`FeatureStats.merge`).

    Parameters
    ----------
    batch : pyarrow.RecordBatch or Table
        Rows with the feature columns.
    columns : tuple of str
        The features to summarise.
    types : tuple of str, optional
        Their types; default read from the batch's schema (:func:`feature_type`).

    Returns
    -------
    FeatureStats
        Counts, categories, token tables and the bottom-k row sample of the batch.

    Examples
    --------
    >>> s = feature_update(pa.table({"size": [1.0, 2.0, None], "shop": ["a", "b", "a"]}), ("size", "shop"))
    >>> s.types, s.missing.tolist(), int(s.numeric.sum()), sorted(s.categories[0].counts().items())
    (('numeric', 'string'), [1, 0], 2, [('a', 2), ('b', 1)])
    """
    columns = tuple(columns)
    types = tuple(types) if types is not None else tuple(feature_type(c, batch.schema.field(c).type) for c in columns)
    n = batch.num_rows
    frame = pl.from_arrow(batch.select(list(columns))) if isinstance(batch, pa.Table) else \
        pl.from_arrow(pa.Table.from_batches([batch]).select(list(columns)))
    h = frame.hash_rows(seed=SEED).to_numpy()
    keep = np.argsort(h, kind="stable")[:SAMPLE_ROWS]
    sample = np.empty((keep.size, len(columns)))
    num = [i for i, t in enumerate(types) if t == "numeric"]
    missing = np.zeros(len(columns), dtype=np.int64)
    numeric, missing[num], sample[:, num] = _numeric(batch, [columns[i] for i in num], keep)
    cats, rows, tokens = [], [], []
    for i, t in enumerate(types):
        if t == "string":
            s = _strings(batch.column(columns[i]))
            c, r, tok, per_row = _text(s)
            sample[:, i] = per_row[keep]
            cats.append(c), rows.append(r), tokens.append(tok)
            missing[i] = s.null_count()
    n_str = len(cats)
    return FeatureStats(columns, types, n, missing, numeric, tuple(cats),
                        np.array(rows, dtype=np.int64).reshape(n_str, MAX_TOKENS + 1),
                        np.array(tokens, dtype=np.int64).reshape(n_str, TOKEN_BUCKETS), h[keep], sample)


def with_features(a: FeatureStats | None, b: FeatureStats | None) -> FeatureStats | None:
    """Merge two parts' feature statistics (None: no features watched in either)."""
    if a is None or b is None:
        if a is not None or b is not None:
            raise InputError("Cannot merge period statistics with and without feature statistics.")
        return None
    return a.merge(b)

