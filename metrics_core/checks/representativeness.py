"""Representativeness: is a test or current set drawn from the training distribution?"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import polars as pl

from metrics_core import drift
from metrics_core.checks.frames import MAX_EXAMPLES, CheckResult, _examples, _numeric, _status, _train_test
from metrics_core.checks.frames import require_columns
from metrics_core.errors import InputError
from metrics_core.significance import correct

SCHEMA = {"kind": pl.String, "name": pl.String, "test": pl.String, "n_train": pl.Int64, "n_test": pl.Int64,
          "statistic": pl.Float64, "p_value": pl.Float64, "p_adjusted": pl.Float64, "psi": pl.Float64,
          "unseen": pl.Int64, "missing_train": pl.Float64, "missing_test": pl.Float64, "missing_p_value": pl.Float64,
          "missing_p_adjusted": pl.Float64, "missing_psi": pl.Float64, "flagged": pl.Boolean, "note": pl.String}


def _category_counts(a: pl.Series, b: pl.Series) -> tuple[list, np.ndarray, np.ndarray]:
    """Categories (null as "<null>") and their counts in each set, aligned and sorted."""
    ca = a.cast(pl.String).fill_null("<null>").value_counts(name="n")
    cb = b.cast(pl.String).fill_null("<null>").value_counts(name="n")
    both = ca.join(cb, on=a.name, how="full", coalesce=True, suffix="_b").fill_null(0).sort(a.name)
    return both[a.name].to_list(), both["n"].to_numpy(), both["n_b"].to_numpy()


def _numeric_feature(row: dict, a: pl.Series, b: pl.Series, n_train: int, n_test: int, bins: int) -> None:
    """KS test and PSI of a numeric feature, nulls and NaN dropped and their share reported."""
    fa, fb = a.cast(pl.Float64), b.cast(pl.Float64)
    xa = fa.filter(fa.is_finite().fill_null(False)).to_numpy()
    xb = fb.filter(fb.is_finite().fill_null(False)).to_numpy()
    row.update(test="ks", n_train=xa.size, n_test=xb.size,
               missing_train=1 - xa.size / n_train, missing_test=1 - xb.size / n_test)
    if xa.size and xb.size:
        res = drift.ks(xa, xb)
        row.update(statistic=float(res.statistic), p_value=float(res.p_value),
                   psi=float(drift.psi(xa, xb, bins=bins).statistic))
    else:
        row["note"] = "no finite values in " + ("train" if not xa.size else "test")
    if xa.size < n_train or xb.size < n_test:
        # KS and PSI see only the finite values, so a feature that goes missing in test would pass them; its
        # missing share is judged as the categorical path judges a null category: a test of the shares and a PSI.
        ka, kb = n_train - xa.size, n_test - xb.size
        row.update(missing_p_value=float(drift.two_proportion_z(ka, n_train, kb, n_test).p_value),
                   missing_psi=float(drift.psi({"missing": ka, "present": xa.size},
                                               {"missing": kb, "present": xb.size}).statistic))


def _categorical_feature(row: dict, a: pl.Series, b: pl.Series, n_train: int, n_test: int) -> None:
    """Chi-squared test, PSI over the category shares and the test rows of unseen categories."""
    cats, na, nb = _category_counts(a, b)
    unseen = (na == 0) & (nb > 0)
    row.update(test="chi_squared", n_train=int(na.sum()), n_test=int(nb.sum()), unseen=int(nb[unseen].sum()),
               psi=float(drift.psi(dict(zip(cats, na)), dict(zip(cats, nb))).statistic),
               missing_train=a.null_count() / n_train, missing_test=b.null_count() / n_test)
    if len(cats) > 1:
        res = drift.chi_squared_counts(na, nb)
        row.update(statistic=float(res.statistic), p_value=float(res.p_value))
    else:
        row["note"] = "a single category in both sets: no test"
    if unseen.any():
        row["note"] = f"categories not in train: {_examples([c for c, u in zip(cats, unseen) if u])}"


def _feature_rows(tr: pl.DataFrame, te: pl.DataFrame, features: list[str], alpha: float, psi_threshold: float,
                  ks_threshold: float, bins: int) -> list[dict]:
    """One row per feature, p-values BH-adjusted together and each feature flagged or not."""
    rows = []
    for f in features:
        a, b = tr[f], te[f]
        row = {"kind": "feature", "name": f, "test": None, "n_train": 0, "n_test": 0, "statistic": np.nan,
               "p_value": np.nan, "psi": np.nan, "unseen": 0, "missing_train": 0.0, "missing_test": 0.0,
               "missing_p_value": np.nan, "missing_psi": np.nan, "note": None}
        if _numeric(a.dtype):
            _numeric_feature(row, a, b, tr.height, te.height, bins)
        else:
            _categorical_feature(row, a, b, tr.height, te.height)
        rows.append(row)
    # One BH family: the distribution tests and the missing-share tests (nan, left out, where nothing is missing).
    adjusted = correct([r["p_value"] for r in rows] + [r["missing_p_value"] for r in rows], "bh", alpha)
    p_adj, reject = np.split(np.asarray(adjusted.p_adjusted), 2), np.split(np.asarray(adjusted.reject), 2)
    for r, adj, rej, m_adj, m_rej in zip(rows, p_adj[0], reject[0], p_adj[1], reject[1]):
        effect = r["psi"] >= psi_threshold or (r["test"] == "ks" and r["statistic"] >= ks_threshold)
        missing = bool(m_rej and r["missing_psi"] >= psi_threshold)
        r["p_adjusted"], r["missing_p_adjusted"] = float(adj), float(m_adj)
        r["flagged"] = bool(rej and effect) or r["unseen"] > 0 or missing
        if missing:
            shares = f"missing share {r['missing_train']:.1%} in train vs {r['missing_test']:.1%} in test"
            r["note"] = shares if r["note"] is None else f"{r['note']}; {shares}"
    return rows


def _class_support(tr: pl.DataFrame, te: pl.DataFrame, label_column: str) -> tuple[pl.DataFrame, bool]:
    """(class, rows in train, rows in test) and whether the test set has labels at all."""
    support_tr = tr[label_column].drop_nulls().value_counts(name="n_train")
    test_labelled = label_column in te.columns and te[label_column].null_count() < te.height
    if not test_labelled:  # an unlabelled current period only has its training support checked
        return support_tr.with_columns(n_test=pl.lit(None, dtype=pl.UInt32)), False
    support_te = te[label_column].drop_nulls().value_counts(name="n_test")
    return support_tr.join(support_te, on=label_column, how="full", coalesce=True), True


def _class_rows(tr: pl.DataFrame, te: pl.DataFrame, label_column: str, min_support: int
                ) -> tuple[list[dict], list]:
    """One row per class with its support in each set and what is wrong with it; classes absent from train."""
    require_columns(tr, "train", [label_column])
    support, test_labelled = _class_support(tr, te, label_column)
    rows, absent_in_train = [], []
    for cls, ntr, nte in support.sort(label_column).iter_rows():
        ntr, notes = ntr or 0, []
        if ntr == 0:
            notes.append("absent from train")
            absent_in_train.append(cls)
        if test_labelled and not nte:
            notes.append("absent from test")
            nte = 0
        for set_name, n in (("train", ntr), ("test", nte)):
            if n is not None and 0 < n < min_support:
                notes.append(f"support {n} < {min_support} in {set_name}")
        rows.append({"kind": "class", "name": str(cls), "test": None, "n_train": ntr, "n_test": nte or 0,
                     "statistic": np.nan, "p_value": np.nan, "psi": np.nan, "unseen": 0, "missing_train": 0.0,
                     "missing_test": 0.0, "missing_p_value": np.nan, "missing_p_adjusted": np.nan,
                     "missing_psi": np.nan, "note": "; ".join(notes) or None, "p_adjusted": np.nan,
                     "flagged": bool(notes)})
    return rows, absent_in_train


def _summary(table: pl.DataFrame, n_features: int, n_absent: int) -> tuple[dict, str]:
    """The figures and the message of :func:`representativeness`."""
    shifted = table.filter(pl.col("flagged") & (pl.col("kind") == "feature"))
    classes = table.filter(pl.col("flagged") & (pl.col("kind") == "class"))
    figures = {"n_features": n_features, "n_shifted_features": shifted.height,
               "n_unseen_category_rows": int(table["unseen"].sum()), "n_flagged_classes": classes.height,
               "n_classes_absent_from_train": n_absent,
               "max_psi": float(np.nanmax(table["psi"].to_numpy())) if table["psi"].is_not_nan().any() else np.nan}
    notes = []
    if shifted.height:
        # PSI is nan when a set has no finite values (the note says so): then only the note is shown
        notes.append(f"{shifted.height} feature(s) differ between train and test: " + "; ".join(
            f"{n} ({', '.join(([f'PSI {p:.3f}'] if p == p else []) + ([t] if t else []))})" for n, p, t in
            shifted.select("name", "psi", "note").head(MAX_EXAMPLES).iter_rows()) + ".")
    if classes.height:
        notes.append(f"{classes.height} class(es) flagged: " + "; ".join(
            f"{n!r}: {t}" for n, t in classes.select("name", "note").head(MAX_EXAMPLES).iter_rows()) + ".")
    return figures, " ".join(notes) or "Test set looks like the training set."


def representativeness(train: Any, test: Any, *, feature_columns: Sequence[str], label_column: str | None = "label",
                       min_support: int = 30, alpha: float = 0.05, psi_threshold: float = 0.1,
                       ks_threshold: float = 0.1, bins: int = 10) -> CheckResult:
    """Is the test/current set drawn from the training distribution? (ISO/IEC TS 4213 5.3, ONS Annex F)

    Parameters
    ----------
    train, test : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        The two sets, with the same feature columns and dtypes.
    feature_columns : sequence of str
        The features compared.
    label_column : str or None
        The label, for the class support; None to skip it.
    min_support : int
        Fewest rows a class needs in a set where it occurs.
    alpha : float
        Level of the BH-adjusted p-values.
    psi_threshold : float
        PSI at which a significant shift matters in practice.
    ks_threshold : float
        KS statistic at which a significant numeric shift matters in practice.
    bins : int
        Reference-quantile bins of the numeric PSI.

    Returns
    -------
    CheckResult
        ``table`` with one row per feature (``kind="feature"``) and per class
        (``kind="class"``); ``figures``: n_features, n_shifted_features,
        n_unseen_category_rows, n_flagged_classes, n_classes_absent_from_train, max_psi (nan
        when no PSI is defined).

    Notes
    -----
    Per feature, train as reference:

    - numeric: two-sample KS (:func:`metrics_core.drift.ks`) and PSI over ``bins`` reference
      quantile bins (:func:`metrics_core.drift.psi`), nulls, NaN and infinities dropped and
      their share reported (``missing_train``, ``missing_test``); without finite values in a set
      the test is nan and noted. The missing share is judged too (the categorical path counts
      null as a category; KS and PSI alone would pass a feature that is missing in test): when a
      set has a missing value, the two-proportion z-test of the shares
      (:func:`metrics_core.drift.two_proportion_z`, ``missing_p_value``) and the PSI over the two
      shares (missing, present; ``missing_psi``); both nan when nothing is missing;
    - categorical (strings, booleans, categoricals; null is a category): chi-squared test of
      the 2 x C table of category counts (:func:`metrics_core.drift.chi_squared_counts`), PSI
      over the category shares, and the test rows whose category never occurs in train
      (``unseen``).

    p-values, the missing-share ones included, are BH-adjusted together
    (:func:`metrics_core.significance.correct`; an undefined test stays nan and out of the
    family). A feature is flagged when its adjusted p-value is below ``alpha`` and its effect
    passes a practical threshold (PSI >= ``psi_threshold`` or, numeric, KS statistic >=
    ``ks_threshold``), when it has unseen categories, or (numeric) when its adjusted
    missing-share p-value is below ``alpha`` and ``missing_psi`` >= ``psi_threshold``: a numeric
    feature that is finite in train and 90% or all missing in test warns, its note and the
    message giving both missing shares.

    Per class: support in each set; flagged when the class is absent from one set or has fewer
    than ``min_support`` rows in a set where it occurs. A test set without labels (no column,
    or all null) has only the training support checked.

    Status: "fail" when a class of the test set never occurs in train (the model cannot predict
    it), "warn" for any other flag, else "pass".

    Examples
    --------
    >>> train = pl.DataFrame({"shop": ["a"] * 50 + ["b"] * 50, "label": [0, 1] * 50})
    >>> test = pl.DataFrame({"shop": ["a"] * 40 + ["c"] * 10, "label": [0, 1] * 25})
    >>> r = representativeness(train, test, feature_columns=["shop"])
    >>> r.status, r.figures["n_unseen_category_rows"]
    ('warn', 10)
    """
    tr, te, features = _train_test(train, test, feature_columns, label_column)
    if not isinstance(min_support, (int, np.integer)) or min_support < 0:
        raise InputError(f"min_support: expected a non-negative integer, got {min_support!r}.")
    rows = _feature_rows(tr, te, features, alpha, psi_threshold, ks_threshold, bins)
    absent_in_train = []
    if label_column is not None:
        class_rows, absent_in_train = _class_rows(tr, te, label_column, min_support)
        rows.extend(class_rows)
    table = pl.DataFrame(rows, schema=SCHEMA)
    figures, message = _summary(table, len(features), len(absent_in_train))
    warn = bool(figures["n_shifted_features"] or figures["n_flagged_classes"])
    return CheckResult("representativeness", _status(bool(absent_in_train), warn), table, message, figures)
