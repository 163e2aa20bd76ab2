"""The worked examples of the seeds (shared/seeds/00*.txt) as fixtures; each test names its seed and page.

Values are the seeds' own, compared at the seed's rounding; where a seed's number is a typo, the
SPEC "ERRATA" value is used and the test says so. 004 (ONS) gives formulas only, so its Annex C
averages are worked by hand here on a small table.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest
import scipy.stats

import metrics_core as mc


def rows_from_matrix(matrix, labels):
    """(y_true, y_pred) rows reproducing a confusion matrix (rows = actual, columns = predicted)."""
    matrix = np.asarray(matrix)
    t, p = [], []
    for i, a in enumerate(labels):
        for j, b in enumerate(labels):
            t += [a] * int(matrix[i, j])
            p += [b] * int(matrix[i, j])
    return np.array(t), np.array(p)


def pct(x: float, digits: int = 1) -> float:
    """A fraction as the seed prints it: percent rounded to ``digits`` decimals."""
    return round(100 * x, digits)


def close(a, b, tol=1e-12):
    return abs(float(a) - float(b)) <= tol


# --------------------------------------------------------------------------------------------------
# 001: lecture slides (CS 4375, "Evaluating Machine Learning Models")
# --------------------------------------------------------------------------------------------------
# Slide "Cost of Classification - Numerical Example": C(P|A) with C(1|1) = -1, C(0|1) = 200,
# C(1|0) = 20, C(0|0) = 0. As SPEC's C[actual, predicted] over labels [0, 1]:
SLIDE_COST = [[0, 20], [200, -1]]


@pytest.mark.parametrize("name, tp, fn, fp, tn, accuracy, cost", [
    ("Model 1", 282, 75, 462, 4841, 90.5, 23_958),
    ("Model 2", 332, 25, 607, 4696, 88.8, 16_808),
])
def test_001_cost_matrix_totals(name, tp, fn, fp, tn, accuracy, cost):
    """Seed 001, slide "Cost of Classification - Numerical Example" (357 positives, 5,303 negatives)."""
    y, p = rows_from_matrix([[tn, fp], [fn, tp]], [0, 1])
    r = mc.binary_report(y, y_pred=p, cost_matrix=SLIDE_COST)
    assert (r.metrics["tp"], r.metrics["fn"], r.metrics["fp"], r.metrics["tn"]) == (tp, fn, fp, tn)
    assert r.metrics["tp"] + r.metrics["fn"] == 357 and r.metrics["fp"] + r.metrics["tn"] == 5303
    assert pct(r.metrics["accuracy"]) == accuracy
    assert r.metrics["total_cost"] == cost
    assert close(r.metrics["mean_cost"], cost / 5660)


# Slide "Multiclass Example": rows = actual, columns = predicted, supports 546 / 92 / 926.
SLIDE_3CLASS = [[512, 12, 22], [2, 77, 13], [36, 59, 831]]


@pytest.fixture(scope="module")
def slide_3class():
    y, p = rows_from_matrix(SLIDE_3CLASS, [0, 1, 2])
    return mc.multiclass_report(y, p)


def test_001_three_class_per_class(slide_3class):
    """Seed 001, slide "Multiclass Example": Rec_k and Prec_k to the slide's rounding."""
    pc = slide_3class.per_class
    assert pc["support"].to_list() == [546, 92, 926]
    assert [pct(v) for v in pc["recall"]] == [93.8, 83.7, 89.7]
    assert [pct(v) for v in pc["precision"]] == [93.1, 52.0, 96.0]
    assert pct(slide_3class.metrics["accuracy"]) == 90.8


def test_001_three_class_averages(slide_3class):
    """Seed 001, slide "Multiclass Example": macro, micro and weighted precision and recall.
    ERRATA: the slide's "89.7 * 926" means 89.7%, and weighted recall equals accuracy, 90.8%."""
    m = slide_3class.metrics
    assert pct(m["precision_macro"]) == 80.4
    assert pct(m["precision_micro"]) == 90.8 and close(m["precision_micro"], m["accuracy"])
    assert pct(m["precision_weighted"]) == 92.4
    assert pct(m["recall_macro"]) == 89.1
    assert pct(m["recall_micro"]) == 90.8 and close(m["recall_micro"], m["accuracy"])
    assert pct(m["recall_weighted"]) == 90.8 and close(m["recall_weighted"], m["accuracy"])  # ERRATA
    assert close(m["accuracy"], Fr(512 + 77 + 831, 1564))


def test_001_multilabel_example():
    """Seed 001, slide "Multi-label": F1 = 1/4 [2*1/3 + 2*2/4 + 2*2/5 + 2*1/4] = 74.2%.
    The slide gives only F1; accuracy (Jaccard), precision and recall of its formulas, worked by hand:
    Jaccard 1/4 [1/2 + 2/2 + 2/3 + 1/3], precision 1/4 [1/1 + 2/2 + 2/2 + 1/2], recall 1/4 [1/2 + 2/2 + 2/3 + 1/2]."""
    Y = [[0, 1, 1], [1, 0, 1], [1, 1, 1], [1, 0, 1]]
    Y_hat = [[0, 0, 1], [1, 0, 1], [1, 1, 0], [1, 1, 0]]
    m = mc.multilabel_report(Y, Y_hat).metrics
    assert pct(m["f1_samples"]) == 74.2
    assert close(m["f1_samples"], (Fr(2, 3) + Fr(4, 4) + Fr(4, 5) + Fr(2, 4)) / 4)
    assert close(m["jaccard_samples"], (Fr(1, 2) + 1 + Fr(2, 3) + Fr(1, 3)) / 4)
    assert close(m["precision_samples"], (1 + 1 + 1 + Fr(1, 2)) / 4)
    assert close(m["recall_samples"], (Fr(1, 2) + 1 + Fr(2, 3) + Fr(1, 2)) / 4)


# Slide "Example of ROC Plot": Ex.ID, Predicted P(Class=1), Actual, TPR, FPR (TPR/FPR in eighths).
SLIDE_ROC = [
    (12, 0.97, 1, 1, 0), (7, 0.96, 1, 2, 0), (15, 0.89, 0, 2, 1), (11, 0.72, 1, 3, 1), (1, 0.68, 1, 4, 1),
    (5, 0.67, 1, 5, 1), (4, 0.54, 0, 5, 2), (2, 0.51, 1, 6, 2), (8, 0.51, 0, 6, 3), (3, 0.50, 0, 6, 4),
    (13, 0.48, 1, 7, 4), (6, 0.47, 0, 7, 5), (10, 0.42, 0, 7, 6), (14, 0.17, 1, 8, 6), (9, 0.09, 0, 8, 7),
    (16, 0.03, 0, 8, 8),
]


def test_001_roc_table_ties_are_one_point():
    """Seed 001, slide "Example of ROC Plot" (16 rows). The slide steps through Ex. 2 and Ex. 8 (both
    scored 0.51) one at a time; under SPEC's tie rule they are ONE point, (FPR 3/8, TPR 6/8), and the
    slide's intermediate (2/8, 6/8) is not on the curve. Every other row is a point, in order."""
    _, score, actual, _, _ = zip(*SLIDE_ROC)
    r = mc.binary_report(np.array(actual), y_score=np.array(score))
    roc = r.curves["roc"]
    expected = [(0, 0)] + [(fpr, tpr) for (ex, _, _, tpr, fpr) in SLIDE_ROC if ex != 2]
    assert len(roc["x"]) == len(expected) == 16
    np.testing.assert_allclose(roc["x"], [f / 8 for f, _ in expected], atol=1e-15)
    np.testing.assert_allclose(roc["y"], [t / 8 for _, t in expected], atol=1e-15)
    assert [t for t in roc["thresholds"][1:]] == sorted(set(score), reverse=True)
    # AUROC by Mann-Whitney, worked by hand: negatives below each positive (+1/2 per tie):
    # 0.97: 8, 0.96: 8, 0.72: 7, 0.68: 7, 0.67: 7, 0.51: 5 + 1/2, 0.48: 4, 0.17: 2 -> 48.5 / 64
    assert r.metrics["auroc"] == 48.5 / 64


# Slide "ROC - More Examples" (first table): 10 bins of 1,000 rows with positive counts; TPR, FPR.
SLIDE_BINNED = [  # (lower edge, positives, negatives, TPR, FPR)
    (0.9, 1000, 0, 0.23, 0.00), (0.8, 900, 100, 0.43, 0.02), (0.7, 800, 200, 0.61, 0.05),
    (0.6, 700, 300, 0.77, 0.11), (0.5, 500, 500, 0.88, 0.20), (0.4, 250, 750, 0.94, 0.33),
    (0.3, 120, 880, 0.97, 0.49), (0.2, 80, 920, 0.99, 0.65), (0.1, 40, 960, 1.00, 0.82),
    (0.0, 20, 980, 1.00, 1.00),
]


def test_001_binned_roc_table():
    """Seed 001, slide "ROC - More Examples": 10 equal-width bins, 4,410 positives and 5,590 negatives;
    the binned statistic reproduces the slide's TPR/FPR columns (2 decimals) at each bin edge."""
    y, s = [], []
    for lower, n_pos, n_neg, *_ in SLIDE_BINNED:
        y += [1] * n_pos + [0] * n_neg
        s += [lower + 0.05] * (n_pos + n_neg)
    r = mc.binary_report(np.array(y), y_score=np.array(s), bins=np.linspace(0, 1, 11))
    roc = r.curves["roc"]
    assert [round(v, 2) for v in roc["y"][1:]] == [row[3] for row in SLIDE_BINNED]
    assert [round(v, 2) for v in roc["x"][1:]] == [row[4] for row in SLIDE_BINNED]
    # every row of a bin sits at the same score, so the binning loses nothing here
    assert r.metrics["auroc"] == mc.binary_report(np.array(y), y_score=np.array(s)).metrics["auroc"]


# --------------------------------------------------------------------------------------------------
# 002: 51Testing tutorial (Chinese): the Linda example, F0.5 / F1 / F2, kappa
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def linda():
    """Seed 002, "Linda" example: 50 items, 20 relevant; 15 recommended of which 12 relevant.
    tp 12, fp 3, fn 8, tn 27."""
    y = np.array([1] * 20 + [0] * 30)
    p = np.array([1] * 12 + [0] * 8 + [1] * 3 + [0] * 27)
    return mc.binary_report(y, y_pred=p)


def test_002_linda_example(linda):
    """Seed 002, Linda example: precision 12/15 = 80%, recall 12/20 = 60%, accuracy (12+27)/50 = 78%.
    ERRATA: specificity is TN/(TN+FP) = 27/30 = 90% (the text's formula says TN/(FP+FN); its number
    27/30 already uses the standard definition)."""
    m = linda.metrics
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (12, 3, 8, 27)
    assert close(m["precision"], 0.8) and close(m["recall"], 0.6)
    assert close(m["specificity"], 27 / 30) and close(m["accuracy"], 0.78)


@pytest.mark.parametrize("beta, exact, printed", [
    (0.5, Fr(3, 4), 75),     # 1.25*.8*.6 / (.25*.8 + .6) = 0.6 / 0.8
    (1.0, Fr(24, 35), 68),   # 0.96 / 1.4 = 0.6857; the text truncates to 68%
    (2.0, Fr(12, 19), 63),   # ERRATA: the line labelled "F1 Score" is F2: 2.4 / 3.8 = 0.6316
])
def test_002_linda_f_scores(beta, exact, printed):
    """Seed 002, F0.5 / F1 / F2 of the Linda example (P = 80%, R = 60%)."""
    y = np.array([1] * 20 + [0] * 30)
    p = np.array([1] * 12 + [0] * 8 + [1] * 3 + [0] * 27)
    r = mc.binary_report(y, y_pred=p, beta=beta)
    assert close(r.metrics["fbeta"], exact)
    assert int(100 * r.metrics["fbeta"]) == printed  # the text truncates to whole percent
    if beta == 1.0:
        assert close(r.metrics["f1"], exact)


def test_002_sklearn_walkthrough():
    """Seed 002, "程序的实现": GTlist / Problist of 10 patients: confusion [[1 3] [1 5]], accuracy 60.0%,
    precision 62.5%, recall 83.3%, F1 71.4%."""
    gt = [1, 1, 0, 1, 1, 0, 1, 0, 0, 1]
    pr = [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]
    m = mc.binary_report(gt, y_pred=pr).metrics
    assert [[m["tn"], m["fp"]], [m["fn"], m["tp"]]] == [[1, 3], [1, 5]]
    assert (pct(m["accuracy"]), pct(m["precision"]), pct(m["recall"]), pct(m["f1"])) == (60.0, 62.5, 83.3, 71.4)


# Seed 002 kappa example: rows = actual A, B, C; columns = predicted (A predicted 239+16+6 = 261).
# ERRATA: the C->C cell is 280 (the text prints 28 once), Pe divides by 664^2 (not 64^2).
KAPPA_MATRIX = [[239, 21, 16], [16, 73, 4], [6, 9, 280]]


def test_002_kappa_example():
    """Seed 002, Kappa系数 example: n 664, P0 = 592/664 = 0.8916; ERRATA: Pe = 170115/664^2 = 0.38584 and
    kappa = 0.82345 (the text's 0.3883 and 0.8228 are rounding slips)."""
    y, p = rows_from_matrix(KAPPA_MATRIX, ["A", "B", "C"])
    r = mc.multiclass_report(y, p)
    m = r.metrics
    assert m["n"] == 664
    assert r.per_class["support"].to_list() == [276, 93, 295]
    assert np.bincount(np.searchsorted(["A", "B", "C"], p)).tolist() == [261, 103, 300]
    p0 = Fr(239 + 73 + 280, 664)
    pe = Fr(261 * 276 + 103 * 93 + 300 * 295, 664 * 664)
    assert round(float(p0), 4) == 0.8916 and close(m["accuracy"], p0)
    assert round(float(pe), 5) == 0.38584
    assert close(m["cohen_kappa"], (p0 - pe) / (1 - pe))  # = 222973/270781 exactly
    # SPEC ERRATA prints 0.82345; the exact value is 0.8234440..., which is 0.82345 only to within 1e-5
    # (it rounds to 0.82344). The exact rational above is the requirement; the ERRATA figure agrees to 1e-5.
    assert (p0 - pe) / (1 - pe) == Fr(222973, 270781)
    assert abs(m["cohen_kappa"] - 0.82345) < 1e-5
    # Pe recovered from the report: kappa = (P0 - Pe) / (1 - Pe)  =>  Pe = (P0 - kappa) / (1 - kappa)
    assert round((m["accuracy"] - m["cohen_kappa"]) / (1 - m["cohen_kappa"]), 5) == 0.38584


# --------------------------------------------------------------------------------------------------
# 003: tutorial "分类任务中常用性能指标": AUC by pairs and by the rank formula, with ties
# --------------------------------------------------------------------------------------------------
def auc_rank_formula(labels, scores) -> float:
    """Seed 003's formula: (sum of ranks of positives - M(M+1)/2) / (M N), tied scores get the mean rank."""
    labels = np.asarray(labels)
    ranks = scipy.stats.rankdata(scores)  # ascending, average ranks for ties
    m, n = labels.sum(), (1 - labels).sum()
    return (ranks[labels == 1].sum() - m * (m + 1) / 2) / (m * n)


def auc_pairs(labels, scores) -> float:
    """Seed 003's pair count: I = 1 if positive above negative, 1/2 if tied, 0 if below, over M x N."""
    labels, scores = np.asarray(labels), np.asarray(scores)
    pos, neg = scores[labels == 1], scores[labels == 0]
    return float(np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg]))


# ERRATA: the tables print score "8.0" for D (and A in the last example); it is 0.8.
SEED_003_AUC = [
    ("pairs, no ties", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.75),
    ("pairs, one tie", [0, 0, 1, 1], [0.1, 0.4, 0.4, 0.8], 0.875),
    ("rank formula, no ties", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.75),  # (4 + 2 - 3) / 4
    ("rank formula, four tied at 0.5", [1, 1, 0, 0, 1, 1, 0], [0.8, 0.7, 0.5, 0.5, 0.5, 0.5, 0.3], 10 / 12),
]


@pytest.mark.parametrize("name, labels, scores, auc", SEED_003_AUC, ids=[c[0] for c in SEED_003_AUC])
def test_003_auc_examples(name, labels, scores, auc):
    """Seed 003, section 8 (AUC): the worked examples equal the report's AUROC (SPEC: Mann-Whitney with
    ties counted 1/2) and both of the seed's formulas."""
    r = mc.binary_report(labels, y_score=scores)
    assert close(r.metrics["auroc"], auc)
    assert close(auc_pairs(labels, scores), auc) and close(auc_rank_formula(labels, scores), auc)


def test_003_twenty_instance_roc_table():
    """Seed 003, section 7 ("一个绘制ROC曲线的例子"): 20 instances, threshold = each score in turn and a
    row is positive when its score >= the threshold, so 20 distinct scores give 20 points after (0, 0)."""
    cls = "ppnpppnnpnpnpnnnpnpn"
    scores = [.9, .8, .7, .6, .55, .54, .53, .52, .51, .505, .4, .39, .38, .37, .36, .35, .34, .33, .30, .1]
    y = np.array([c == "p" for c in cls], dtype=int)
    r = mc.binary_report(y, y_score=scores)
    roc = r.curves["roc"]
    assert len(roc["x"]) == 21
    # the point at threshold 0.6 counts instances 1-4 as positive: TP = 3 (1, 2, 4), FP = 1 (3)
    i = list(roc["thresholds"]).index(0.6)
    assert (roc["y"][i], roc["x"][i]) == (3 / 10, 1 / 10)
    assert close(r.metrics["auroc"], auc_pairs(y, scores)) and close(r.metrics["auroc"], auc_rank_formula(y, scores))


# --------------------------------------------------------------------------------------------------
# 004: ONS advisory paper, Annex C (averaging for multiclass), worked by hand on a small table
# --------------------------------------------------------------------------------------------------
#            predicted A  B  C   | labelled
ONS_TABLE = [[3, 1, 0],        # A   4
             [1, 4, 1],        # B   6
             [0, 2, 8]]        # C  10
# One-versus-rest tables (Annex A, Table 3):      tp  fp  fn  tn
#   A: tp 3, fp 1 (B->A), fn 1 (A->B), tn 15       3   1   1  15
#   B: tp 4, fp 3 (A->B, C->B), fn 2, tn 11        4   3   2  11
#   C: tp 8, fp 1 (B->C), fn 2 (C->B), tn 9        8   1   2   9
# Overall table (Annex A, Table 4): TP 15, FP 5, FN 5, TN 35.
ONS_PRECISION = [Fr(3, 4), Fr(4, 7), Fr(8, 9)]
ONS_RECALL = [Fr(3, 4), Fr(4, 6), Fr(8, 10)]


def _f(p, r, beta=1):
    return (1 + beta ** 2) * p * r / (beta ** 2 * p + r)


@pytest.fixture(scope="module")
def ons():
    y, p = rows_from_matrix(ONS_TABLE, ["A", "B", "C"])
    return {beta: mc.multiclass_report(y, p, beta=beta).metrics for beta in (1.0, 2.0)}


def test_004_annex_c_micro_average(ons):
    """Seed 004, Annex C paragraphs 5-6: micro TPR = 15/(15+5), micro precision = 15/(15+5), micro
    F-beta of those, and micro balanced accuracy = (TPR_micro + TNR_micro) / 2 with TNR_micro = 35/(35+5)."""
    m = ons[1.0]
    assert close(m["recall_micro"], Fr(15, 20)) and close(m["precision_micro"], Fr(15, 20))
    assert close(m["f1_micro"], Fr(3, 4)) and close(ons[2.0]["fbeta_micro"], Fr(3, 4))
    assert close(m["balanced_accuracy_micro"], (Fr(15, 20) + Fr(35, 40)) / 2)  # = 0.8125


def test_004_annex_c_macro_average(ons):
    """Seed 004, Annex C paragraph 7: recall_macro and precision_macro are arithmetic means of the classes'
    one-vs-rest values; F-beta_macro (ONS) is F of those means = SPEC's f1_of_macro / fbeta_of_macro."""
    m = ons[1.0]
    p_macro = sum(ONS_PRECISION) / 3  # 557/756
    r_macro = sum(ONS_RECALL) / 3     # 133/180
    assert p_macro == Fr(557, 756) and r_macro == Fr(133, 180)
    assert close(m["precision_macro"], p_macro) and close(m["recall_macro"], r_macro)
    assert close(m["f1_of_macro"], _f(p_macro, r_macro))
    assert close(ons[2.0]["fbeta_of_macro"], _f(p_macro, r_macro, 2))
    # balanced accuracy = average recall (Annex B paragraph 8, Annex C paragraph 8)
    assert close(m["balanced_accuracy"], r_macro)


def test_004_annex_c_weighted_macro_average(ons):
    """Seed 004, Annex C paragraphs 9-10: w_class = x_class / x_bar with x_bar = 20/3, so w = (0.6, 0.9, 1.5);
    recall_weighted = sum(w recall) / n, precision_weighted likewise (= scikit-learn's support-weighted
    average); F-beta weighted macro = F of those = SPEC's fbeta_of_weighted."""
    x = [4, 6, 10]
    x_bar = Fr(sum(x), 3)
    w = [Fr(v) / x_bar for v in x]
    assert w == [Fr(3, 5), Fr(9, 10), Fr(3, 2)]
    r_w = sum(wi * r for wi, r in zip(w, ONS_RECALL)) / 3
    p_w = sum(wi * p for wi, p in zip(w, ONS_PRECISION)) / 3
    assert r_w == Fr(3, 4)  # support-weighted recall is accuracy, 15/20
    m = ons[1.0]
    assert close(m["recall_weighted"], r_w) and close(m["precision_weighted"], p_w)
    assert close(m["fbeta_of_weighted"], _f(p_w, r_w))
    assert close(ons[2.0]["fbeta_of_weighted"], _f(p_w, r_w, 2))


def test_f1_macro_differs_from_f1_of_macro():
    """SPEC: f1_macro is the mean of per-class F (scikit-learn); f1_of_macro is F of the macro P and R
    (ONS Annex C, Zhou). A class with P 1, R 1/10 and one with P 10/19, R 1 show the difference:
      per-class F: 2/11 and 20/29 -> f1_macro = (2/11 + 20/29) / 2 = 139/319 = 0.4357
      macro P = 29/38, macro R = 11/20 -> f1_of_macro = 2 P R / (P + R) = 319/499 = 0.6393."""
    y, p = rows_from_matrix([[1, 9], [0, 10]], ["a", "b"])
    m = mc.multiclass_report(y, p).metrics
    assert close(m["precision_macro"], Fr(29, 38)) and close(m["recall_macro"], Fr(11, 20))
    assert close(m["f1_macro"], Fr(139, 319))
    assert close(m["f1_of_macro"], Fr(319, 499))
    assert m["f1_of_macro"] - m["f1_macro"] > 0.2
    # ... and on the ONS table above they differ too, by less
    y, p = rows_from_matrix(ONS_TABLE, ["A", "B", "C"])
    m = mc.multiclass_report(y, p).metrics
    f1_macro = (Fr(3, 4) + Fr(8, 13) + Fr(16, 19)) / 3
    assert close(m["f1_macro"], f1_macro)
    assert close(m["f1_of_macro"], _f(Fr(557, 756), Fr(133, 180)))
    assert m["f1_macro"] != pytest.approx(m["f1_of_macro"], abs=1e-3)
