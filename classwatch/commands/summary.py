"""What the monitoring commands print of their periods: the alert table, reasons, estimates, the next sample."""

from __future__ import annotations

import textwrap

from rich.markup import escape
from rich.table import Table

def alert_table(periods: list, title: str = "Retraining alerts per period") -> Table:
    """One row per monitored period (:class:`tasks.monitor.PeriodResult`): rows, labels present
    (without them, whether the label-lag estimate is flagged unreliable), alert (RETRAIN, "not
    enough labels" when the headline test could not see a drop, or none), the strongest reason
    without its details (they are in the run)."""
    table = Table(title=title)
    for col in ("period", "rows", "labels", "alert"):
        table.add_column(col)
    table.add_column("strongest reason (number of reasons)", overflow="fold")  # a long class name wraps, uncut
    shown = {"retrain": "[bold red]RETRAIN[/bold red]",
             "not enough labels to judge": "[yellow]not enough labels[/yellow]"}
    for p in periods:
        first = escape(strongest(p.reasons[0])) if p.reasons else ""
        sampled = p.metrics.get("sample/labelled_rows")
        labels = (f"sample of {int(sampled):,}" if sampled is not None else "yes" if p.labelled
                  else "no, estimate UNRELIABLE" if p.metrics.get("estimated/reliable") == 0.0 else "no")
        table.add_row(p.period, f"{int(p.metrics.get('n_rows', 0)):,}", labels,
                      shown.get(p.verdict, "none"),
                      f"{first} ({len(p.reasons)})" if p.reasons else "")
    return table


def strongest(reason, width: int = 90) -> str:
    """A reason's one-line summary cut to about ``width`` characters, its caveat (an estimate flagged
    UNRELIABLE and why, without the figures in brackets) kept at the end: the cut must not drop what
    the figure cannot be read without."""
    caveat = f", {reason.caveat}" if reason.caveat else ""
    head = reason.summary[:len(reason.summary) - len(caveat)]
    if len(head) + len(caveat) <= width:
        return head + caveat
    caveat = caveat.split(" (", 1)[0]  # "UNRELIABLE: <why>", without its figures (they are in the run)
    room = max(70, width - len(caveat))
    cut = textwrap.shorten(head, room, placeholder=" ...")
    if cut == "...":  # its first word alone is longer than the room (a long segment value): cut inside it
        cut = head[:room - 4] + " ..."
    return cut + caveat


#: Reasons of an alerting period the summary lists; the rest are counted (all are in the run's alert.md).
MOST_REASONS = 3


def reason_lines(result, most: int = MOST_REASONS) -> list[str]:
    """The reasons of an alerting period (:class:`tasks.monitor.PeriodResult`) as lines to print:
    the period and the count, then the first ``most`` (the strongest: the alert decision orders
    them) one per line, then how many more and where they are; [] without reasons.
    Rich markup in a reason's text (e.g. an interval "[0.88, 0.93]") is printed as it is."""
    if not result.reasons:
        return []
    n = len(result.reasons)
    lines = [f"[bold]{result.period}[/bold]: {n} reason(s)" + (", the strongest:" if n > most else ":")]
    lines += [f"  - {escape(r.text)}" for r in result.reasons[:most]]
    if n > most:
        lines.append(f"  and {n - most} more (all of them in alert.md of the period's run)")
    return lines


def feature_lines(periods: list) -> list[str]:
    """The reasons an input feature gave, one line per alerting period that has any (``feature`` kinds:
    :mod:`metrics_core.monitoring.kinds.features`), as the table's strongest reason may be another
    test's; [] when no feature alerted.

    >>> from types import SimpleNamespace
    >>> from metrics_core.monitoring import Reason, TestKey
    >>> r = Reason(TestKey("feature_numeric", "pack_size"), 0.256, 0.1, 1e-70, 485.6, 415.2)
    >>> feature_lines([SimpleNamespace(period="2024-09", reasons=(r,))])
    ['Input features: 2024-09 feature pack_size: distribution shifted, mean 485.6 -> 415.2, Wasserstein 0.256 reference SDs >= 0.1.']
    """
    lines = []
    for p in periods:
        named = [r.summary for r in p.reasons if r.kind.startswith("feature")]
        if named:
            lines.append(f"Input features: {p.period} {escape('; '.join(named))}.")
    return lines


#: Strata the "label next period" line names (the rest are in the run's next_sample.json).
MOST_STRATA = 4


def next_sample_line(result, most: int = MOST_STRATA) -> str:
    """What to label in the period after ``result`` (:class:`tasks.monitor.PeriodResult`) when its
    labels were a sample: the rows in all and in the strata with the most (docs/label-lag.md); "" else.

    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(period="2024-08", metrics={"sample/next_rows": 412.0, "sample/next_rows/tea": 120.0,
    ...                                                "sample/next_rows/wine": 292.0})
    >>> next_sample_line(r)
    'Label next period (after 2024-08): 412 rows, 292 in wine, 120 in tea (per stratum in next_sample.json).'
    """
    m = result.metrics
    if "sample/next_rows" not in m:
        return ""
    head = "sample/next_rows/"
    per = sorted(((k[len(head):], int(v)) for k, v in m.items() if k.startswith(head)), key=lambda kv: -kv[1])
    shown = ", ".join(f"{n:,} in {escape(c)}" for c, n in per[:most]) + (", ..." if len(per) > most else "")
    return (f"Label next period (after {result.period}): {int(m['sample/next_rows']):,} rows"
            + (f", {shown}" if shown else "") + " (per stratum in next_sample.json).")


def estimated_line(periods: list, metric: str = "balanced_accuracy") -> str:
    """The headline estimated from calibrated scores for the periods without labels (docs/label-lag.md)."""
    parts = []
    for p in periods:
        key = f"estimated/{metric}"
        if not p.labelled and key in p.metrics:
            m = p.metrics
            parts.append(f"{p.period} {m[key]:.3f} [{m.get(key + '_ci_low', float('nan')):.3f}, "
                         f"{m.get(key + '_ci_high', float('nan')):.3f}]" + _estimate_mark(m))
    if not parts:
        return ""
    return f"Estimated {metric} without labels (95% interval, from calibrated scores): {'; '.join(parts)}."


def _estimate_mark(metrics: dict) -> str:
    """What a label-lag estimate's figure must not be shown without: `` UNRELIABLE`` when it is
    flagged (``estimated/reliable`` 0, docs/label-lag.md), `` (label shift)`` when the class
    priors were re-estimated; ``""`` otherwise."""
    if metrics.get("estimated/reliable") == 0.0:
        return " UNRELIABLE" + (" (degenerate scores)" if metrics.get("estimated/degenerate") == 1.0 else "")
    return " (label shift)" if metrics.get("estimated/label_shift") == 1.0 else ""
