"""The monitoring report page: one self-contained HTML file per period and one across periods (no network, < 2 MB)."""

from __future__ import annotations

import base64
import io
import math
from html import escape
from pathlib import Path
from typing import Mapping, Sequence

import polars as pl

from tasks.render.feature_panel import feature_table

__all__ = ["period_page", "parent_page", "period_report", "parent_report", "headline_lines", "thin_table",
           "png_data_uri", "MAX_BYTES", "MAX_ROWS", "FEATURES_CAPTION"]

#: The page's size limit: MLflow's artifact view loads the whole file into an iframe.
MAX_BYTES = 2_000_000
#: Rows a table shows at most (the largest effects); the full tables are the run's JSON tables.
MAX_ROWS = 50
#: Widest image embedded (pixels); wider PNGs are downscaled.
MAX_IMAGE_WIDTH = 1400

#: Columns a table is sorted by, the first present (largest first; by absolute value for an effect).
_SORT = ("effect_over_threshold", "effect_size", "effect", "psi")

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:16px 24px;color:#1a1a1a;font-size:14px}
h1{font-size:20px;margin:0 0 8px} h2{font-size:16px;margin:22px 0 6px;border-bottom:1px solid #ddd}
.verdict{display:inline-block;padding:4px 10px;border-radius:4px;font-weight:600;color:#fff}
.retrain{background:#c0392b} .noalert{background:#2e7d32} .unjudged{background:#b7791f}
table{border-collapse:collapse;font-size:12px;margin:4px 0;display:block;overflow-x:auto;max-width:100%} td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}
th{background:#f4f4f4} td.num{text-align:right;font-variant-numeric:tabular-nums} tr.alert td{background:#fdecea}
.note{color:dimgray} img{max-width:100%;height:auto;border:1px solid #eee}
"""


def png_data_uri(png: bytes | Path, max_width: int = MAX_IMAGE_WIDTH) -> str:
    """A PNG as a ``data:image/png;base64,...`` URI, downscaled to ``max_width`` pixels when wider.

    >>> png_data_uri(b"").startswith("data:image/png;base64,")
    True
    """
    data = Path(png).read_bytes() if isinstance(png, Path) else png
    if data:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            if im.width > max_width:
                small = im.resize((max_width, round(im.height * max_width / im.width)), Image.LANCZOS)
                out = io.BytesIO()
                small.save(out, format="PNG", optimize=True)
                data = out.getvalue()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def thin_table(table: pl.DataFrame, max_rows: int = MAX_ROWS) -> pl.DataFrame:
    """The table sorted by effect (the first of :data:`_SORT` it has: largest first, by absolute
    value for a signed effect; undefined last) and cut to its first ``max_rows`` rows.

    >>> thin_table(pl.DataFrame({"name": ["a", "b", "c"], "effect_size": [0.1, -0.5, None]}), 2)["name"].to_list()
    ['b', 'a']
    """
    col = next((c for c in _SORT if c in table.columns and table.schema[c].is_numeric()), None)
    if col is not None:
        key = pl.col(col).abs() if col in ("effect_size", "effect") else pl.col(col)
        table = table.sort(key.fill_nan(None), descending=True, nulls_last=True, maintain_order=True)
    return table.head(max_rows)


def _cell(value) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    if value is None:
        return ""
    return escape(str(value))


def _table_html(name: str, table: pl.DataFrame, max_rows: int) -> str:
    """A table's section: its name, the rows shown of all, the thinned rows (alerting rows marked)."""
    shown = thin_table(table, max_rows)
    cols = [c for c in shown.columns if shown.schema[c] not in (pl.List, pl.Struct, pl.Object)]
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    alert_col = next((c for c in ("alert", "drift") if c in cols), None)
    rows = []
    for r in shown.select(cols).iter_rows(named=True):
        cls = ' class="alert"' if alert_col and r[alert_col] else ""
        cells = "".join(f'<td class="num">{_cell(v)}</td>' if isinstance(v, (int, float)) and not isinstance(v, bool)
                        else f"<td>{_cell(v)}</td>" for v in r.values())
        rows.append(f"<tr{cls}>{cells}</tr>")
    count = f"{shown.height:,} of {table.height:,} rows" + (", the largest effects" if shown.height < table.height
                                                            else "")
    return (f"<h2>{escape(name)}</h2><p class=note>{count}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _verdict(verdict: str) -> str:
    css = {"retrain": "retrain", "no alert": "noalert"}.get(verdict, "unjudged")
    return f'<span class="verdict {css}">{escape(verdict)}</span>'


def _document(title: str, body: list[str]) -> str:
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{escape(title)}</title>"
            f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>")


def _fit(build, max_rows: int, images: Mapping[str, bytes | Path], max_bytes: int) -> str:
    """``build(rows, image URIs)`` under ``max_bytes``: the images are made narrower while they take
    more than half of the limit, then the tables get fewer rows (down to 5)."""
    width, uris = MAX_IMAGE_WIDTH, {}
    while True:
        if width not in uris:
            uris[width] = {k: png_data_uri(v, width) for k, v in images.items()}
        page = build(max_rows, uris[width])
        if len(page.encode("utf-8")) < max_bytes:
            return page
        if sum(map(len, uris[width].values())) > max_bytes // 2 and width > 100:
            width //= 2
        elif max_rows > 5:
            max_rows = max(5, max_rows // 2)
        else:
            return page


def period_page(title: str, verdict: str, reasons: Sequence[str], notes: Sequence[str],
                headline: Mapping[str, str], tables: Mapping[str, pl.DataFrame],
                images: Mapping[str, bytes | Path] | None = None, *, max_rows: int = MAX_ROWS,
                max_bytes: int = MAX_BYTES) -> str:
    """The report page of one period, as one self-contained HTML document.

    Parameters
    ----------
    title : str
        The page's title (model and period).
    verdict : str
        ``"retrain"``, ``"not enough labels to judge"`` or ``"no alert"``.
    reasons, notes : sequence of str
        The alert's reasons (strongest first) and its notes (labels needed, segments not tested).
    headline : mapping of str to str
        Label -> value lines of the headline section (value with interval, reference, floor,
        label-lag estimate).
    tables : mapping of str to polars.DataFrame
        Every table of the assessment (drift table, per class, segments, ...): each shown sorted by
        effect (:func:`thin_table`), at most ``max_rows`` rows.
    images : mapping of str to bytes or Path, optional
        Caption -> PNG (the over-time panels), embedded as data URIs.
    max_rows, max_bytes : int
        Rows per table; the page's size limit (rows, then image widths, are cut until it fits).

    Returns
    -------
    str
        The HTML: inline CSS, images as data URIs, no script and no link to fetch; every data
        string (class names, segment values, reasons) escaped.

    Examples
    --------
    >>> page = period_page("m 2024-08", "retrain", ["<b>x</b> rose"], [], {"f1": "0.8"}, {})
    >>> "&lt;b&gt;x&lt;/b&gt; rose" in page and "<script" not in page
    True
    """
    def build(rows: int, uris: Mapping[str, str]) -> str:
        body = [f"<h1>{escape(title)}</h1><p>{_verdict(verdict)}</p>"]
        if reasons:
            body.append("<h2>Reasons</h2><ol>" + "".join(f"<li>{escape(r)}</li>" for r in reasons) + "</ol>")
        if notes:
            body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
        if headline:
            body.append("<h2>Headline</h2><table>" + "".join(
                f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in headline.items()) + "</table>")
        body += [_table_html(name.removesuffix(".json"), t, rows) for name, t in tables.items()]
        body += [f"<h2>{escape(cap)}</h2><img alt=\"{escape(cap)}\" src=\"{uri}\">" for cap, uri in uris.items()]
        return _document(title, body)

    return _fit(build, max_rows, images or {}, max_bytes)


def parent_page(title: str, periods: pl.DataFrame, images: Mapping[str, bytes | Path] | None = None, *,
                features: pl.DataFrame | None = None, max_rows: int = 120, max_bytes: int = MAX_BYTES) -> str:
    """The report page across periods: one row per period (newest ``max_rows``) and the over-time panels.

    Parameters
    ----------
    title : str
        The page's title (the model).
    periods : polars.DataFrame
        One row per period, in time order (period, verdict, rows, headline, reasons, ...).
    images : mapping of str to bytes or Path, optional
        Caption -> PNG, embedded as data URIs.
    features : polars.DataFrame, optional
        One row per period, in time order, of the input features' logged summary
        (:func:`tasks.render.feature_panel.feature_table`), shown after the periods (newest first).

    Returns
    -------
    str
        The self-contained HTML document (see :func:`period_page`).
    """
    def build(rows: int, uris: Mapping[str, str]) -> str:
        shown = periods.tail(rows)
        body = [f"<h1>{escape(title)}</h1>"]
        body += [f"<h2>{escape(cap)}</h2><img alt=\"{escape(cap)}\" src=\"{uri}\">" for cap, uri in uris.items()]
        body.append(_table_html("periods", shown.reverse(), shown.height))
        if features is not None:
            recent = features.tail(rows)
            body.append(_table_html("input features per period", recent.reverse(), recent.height))
        return _document(title, body)

    return _fit(build, max_rows, images or {}, max_bytes)


def _interval(value: float, low: float, high: float) -> str:
    text = f"{value:.4f}"
    return text + (f" (interval {low:.4f} - {high:.4f})" if math.isfinite(low) and math.isfinite(high) else "")


def headline_lines(metrics: Mapping[str, float], metric: str, n_labelled: int | None = None) -> dict[str, str]:
    """The headline section of a period's page from its semantic metrics: the measured value with
    its interval, the reference, the floor, the labelled rows, and the label-lag estimate with
    its interval (when the period was estimated).

    >>> headline_lines({"f1": 0.8, "f1_ci_low": 0.78, "f1_ci_high": 0.82, "f1_floor": 0.75}, "f1")
    {'f1': '0.8000 (interval 0.7800 - 0.8200)', 'f1 floor': '0.7500'}
    """
    nan = math.nan
    out = {}
    if metric in metrics:
        out[metric] = _interval(metrics[metric], metrics.get(f"{metric}_ci_low", nan),
                                metrics.get(f"{metric}_ci_high", nan))
    for suffix, label in (("_reference", "reference"), ("_floor", "floor")):
        if f"{metric}{suffix}" in metrics:
            out[f"{metric} {label}"] = f"{metrics[metric + suffix]:.4f}"
    if n_labelled:
        out["labelled rows"] = f"{n_labelled:,}"
    est = f"estimated/{metric}"
    if est in metrics:
        out[f"{metric}, label-lag estimate"] = _interval(metrics[est], metrics.get(f"{est}_ci_low", nan),
                                                         metrics.get(f"{est}_ci_high", nan))
    return out


#: The caption of the input features' panel (:mod:`tasks.render.feature_panel`) on the pages.
FEATURES_CAPTION = "input features over time"


def _images(plot: Path | None, feature_plot: Path | None) -> dict[str, Path]:
    return {k: v for k, v in (("over time", plot), (FEATURES_CAPTION, feature_plot)) if v is not None}


def period_report(model: str, period: str, assessment, metrics: Mapping[str, float], plot: Path | None,
                  feature_plot: Path | None = None) -> str:
    """:func:`period_page` of a monitored period (:class:`metrics_core.monitoring.PeriodAssessment`,
    its semantic ``metrics``, the over-time PNG ``plot`` and the input features' ``feature_plot``)."""
    d = assessment.decision
    head = assessment.headline
    lines = headline_lines(metrics, assessment.headline_metric, head.n_labelled if head is not None else None)
    return period_page(f"{model}: period {period}", d.verdict, d.texts, d.notes, lines, assessment.tables,
                       _images(plot, feature_plot))


def parent_report(model: str, rows: Sequence[Mapping], plot: Path | None, features: pl.DataFrame | None = None,
                  feature_plot: Path | None = None) -> str:
    """:func:`parent_page` of a model's monitoring: ``rows`` one mapping per period (in time order);
    ``features`` the input features' panel table (:func:`tasks.render.feature_panel.feature_frame`)
    and ``feature_plot`` its PNG, when features are watched."""
    return parent_page(f"{model}: monitoring across periods", pl.DataFrame(list(rows), infer_schema_length=None),
                       _images(plot, feature_plot), features=None if features is None else feature_table(features))
