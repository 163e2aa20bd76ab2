"""metrics_core reports against scikit-learn and polars-ds, measured in one process (`make bench`).

Prints seconds, the ratio to each peer and the peak extra resident memory (RSS above the level
before the call) relative to the input size, for tie-heavy (4-decimal) and distinct float64 binary
scores. scikit-learn runs once; the fast peers run in interleaved rounds (best kept). Not a test: machines are
shared and noisy, so nothing is asserted.
Usage: python benchmarks/bench_metrics.py [--sizes 1000000 10000000] [--classes 10] [--mc-size N] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import binary_data, fmt_bytes, measure, multiclass_data, race  # noqa: E402

import metrics_core as mc  # noqa: E402

try:
    import polars_ds  # noqa: F401
    HAVE_PDS = True
except ImportError:  # an optional peer (pip install ".[bench]")
    HAVE_PDS = False


def sklearn_binary(y, s, threshold=0.5):
    from sklearn import metrics as m

    pred = (s >= threshold).astype(np.int8)
    m.confusion_matrix(y, pred)
    m.precision_recall_fscore_support(y, pred, average="binary", zero_division=np.nan)
    m.fbeta_score(y, pred, beta=2.0, zero_division=np.nan)
    m.matthews_corrcoef(y, pred)
    m.cohen_kappa_score(y, pred)
    m.balanced_accuracy_score(y, pred)
    auc = m.roc_auc_score(y, s)
    ap = m.average_precision_score(y, s)
    m.roc_curve(y, s, drop_intermediate=False)
    m.precision_recall_curve(y, s)
    m.log_loss(y, s)
    m.brier_score_loss(y, s)
    return auc, ap


def polars_ds_binary(y, s):
    import polars_ds as pds

    df = pl.DataFrame({"y": y, "s": s})
    return df.select(pds.query_binary_metrics("y", "s", threshold=0.5)).item()


def sklearn_multiclass(y, p):
    from sklearn import metrics as m

    pred = p.argmax(axis=1)
    m.confusion_matrix(y, pred)
    for avg in ("micro", "macro", "weighted"):
        m.precision_recall_fscore_support(y, pred, average=avg, zero_division=np.nan)
    m.balanced_accuracy_score(y, pred)
    m.cohen_kappa_score(y, pred)
    m.matthews_corrcoef(y, pred)
    macro = m.roc_auc_score(y, p, multi_class="ovr", average="macro")
    m.roc_auc_score(y, p, multi_class="ovr", average="weighted")
    m.log_loss(y, p)
    return macro


def row(name, seconds, peak, input_bytes, peers):
    ratios = "  ".join(f"{peer}: {ps / seconds:6.1f}x" for peer, ps in peers.items())
    print(f"  {name:<38} {seconds:8.3f} s   peak extra {fmt_bytes(peak):>10} "
          f"({peak / input_bytes:4.2f}x inputs)   {ratios}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--mc-size", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=7,
                    help="timed rounds of the fast peers, interleaved after a warm-up round (best kept)")
    args = ap.parse_args()

    for n in args.sizes:
        y, s_distinct = binary_data(n)
        in_bytes = y.nbytes + s_distinct.nbytes
        # tie-heavy (a model that writes 4 decimals: ~10k distinct scores) and distinct float64 scores
        for kind, s in (("tie-heavy scores (rounded to 4 decimals)", np.round(s_distinct, 4)),
                        ("distinct float64 scores", s_distinct)):
            print(f"\nbinary, {n:,} rows, {kind} (inputs {fmt_bytes(in_bytes)})")
            t_sk, p_sk, (auc_sk, ap_sk) = measure(lambda: sklearn_binary(y, s), repeat=1)
            peers = {"vs sklearn": t_sk}
            fast = {"mc": lambda: mc.binary_report(y, s)}
            if HAVE_PDS:
                fast["pds"] = lambda: polars_ds_binary(y, s)
            timed = race(fast, repeat=args.repeat)
            t_mc, p_mc, r = timed["mc"]
            if HAVE_PDS:
                t_pds, p_pds, res_pds = timed["pds"]
                peers["vs polars-ds"] = t_pds
            t_iv, p_iv, _ = measure(lambda: mc.binary_report(y, s).intervals, repeat=1)
            print(f"  |auroc - sklearn| = {abs(r.metrics['auroc'] - auc_sk):.1e}   "
                  f"|AP - sklearn| = {abs(r.metrics['average_precision'] - ap_sk):.1e}"
                  + (f"   |auroc - polars-ds| = {abs(r.metrics['auroc'] - res_pds['roc_auc']):.1e}" if HAVE_PDS else
                     "   (polars-ds not installed: pip install polars-ds)"))
            row("scikit-learn metric set", t_sk, p_sk, in_bytes, {})
            if HAVE_PDS:
                row("polars-ds query_binary_metrics", t_pds, p_pds, in_bytes, {})
            row("mc.binary_report", t_mc, p_mc, in_bytes, peers)
            target = (f"target at 10M rows: >= 2x polars-ds (here {t_pds / t_mc:.1f}x)" if "tie" in kind and HAVE_PDS
                      else f"target at 10M rows: >= 80x scikit-learn (here {t_sk / t_mc:.1f}x)")
            print(f"  {target}")
            row("mc.binary_report + 1,000-rep intervals", t_iv, p_iv, in_bytes, {"vs sklearn": t_sk})

    n = args.mc_size
    y, p = multiclass_data(n, args.classes)
    in_bytes = y.nbytes + p.nbytes
    print(f"load average {os.getloadavg()} on {os.cpu_count()} CPUs: compare the ratios, measured in the same run")
    print(f"\nmulticlass, {n:,} rows x {args.classes} classes (inputs {fmt_bytes(in_bytes)})")
    t_sk, p_sk, auc_sk = measure(lambda: sklearn_multiclass(y, p), repeat=1)
    t_mc, p_mc, r = measure(lambda: mc.multiclass_report(y, y_score=p), repeat=2)
    print(f"  |auroc_ovr_macro - sklearn| = {abs(r.metrics['auroc_ovr_macro'] - auc_sk):.1e}")
    row("scikit-learn metric set", t_sk, p_sk, in_bytes, {})
    row("mc.multiclass_report", t_mc, p_mc, in_bytes, {"vs sklearn": t_sk})


if __name__ == "__main__":
    main()
