"""UI: the MLflow UI in a real (headless) chromium shows the evaluation run's headline metric and ROC plot."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]

CHROMIUM = "/usr/bin/chromium"
# No sandbox (root in CI containers), no GPU, nothing that phones home (measured: E2E-NOTES).
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
WAIT_MS = 90_000


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (`make e2e-deps`) to run the UI test")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def _close_assistant(page) -> None:
    """MLflow 3 opens an "MLflow Assistant" side panel; close it (if shown) so the run fills the page."""
    close = page.get_by_role("button", name="Close")
    if close.count():
        close.first.click()
        page.wait_for_timeout(300)


def test_run_page_shows_headline_metric_and_roc_image(servers, evaluated, browser, tmp_path):
    run = evaluated.run
    base = f"{servers.mlflow.url}/#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}"
    headline = run.data.tags["classwatch.headline"]
    value = run.data.metrics[headline]

    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(base)
    row = page.get_by_role("row").filter(has_text=headline).first
    row.wait_for(timeout=WAIT_MS)
    text = row.inner_text()
    assert repr(value)[:6] in text, f"{headline} = {value} not in the UI's row {text!r}"
    _close_assistant(page)
    page.get_by_placeholder("Search metrics").fill(headline)  # the headline, its interval and baselines
    page.get_by_role("row").filter(has_text=f"{headline}_ci_low").first.wait_for(timeout=WAIT_MS)
    page.screenshot(path=str(tmp_path / "mlflow-run.png"))
    page.close()

    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(f"{base}/artifacts/roc.png")
    page.locator('[data-testid="artifact-tree-node"][artifact-name="roc.png"]').first.wait_for(timeout=WAIT_MS)
    image = page.locator('img[alt="roc.png"]').first
    image.wait_for(timeout=WAIT_MS)
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle(),
                           timeout=WAIT_MS)
    width = image.evaluate("img => img.naturalWidth")
    assert width >= 300
    _close_assistant(page)
    page.screenshot(path=str(tmp_path / "mlflow-roc.png"))
    page.close()
    keep = Path(servers.root) / "screenshots"  # one place to look at them after the session
    keep.mkdir(exist_ok=True)
    for name in ("mlflow-run.png", "mlflow-roc.png"):
        shutil.copy(tmp_path / name, keep / name)
    print(f"screenshots: {keep}")


# ------------------------------------------------------------------ the monitoring runs, as a user sees them
PERIODS_SHOWN = ("2024-02", "2024-04")  # a stable month and the shifted one (e2e_support)


def _keep(config, *paths: Path) -> None:
    """Copy screenshots to .pytest_cache/d/e2e/screenshots, where they outlive pytest's rotated tmp dirs
    (with ``-p no:cacheprovider`` there is no cache: they stay in the test's tmp_path)."""
    if getattr(config, "cache", None) is None:
        return
    keep = Path(config.cache.mkdir("e2e")) / "screenshots"
    keep.mkdir(exist_ok=True)
    for path in paths:
        shutil.copy(path, keep / path.name)
    print(f"screenshots: {keep}")


@pytest.fixture(scope="module")
def monitored(servers, e2e_data):
    """``classwatch monitor`` of a stable and a shifted month on the session's MLflow server."""
    from e2e_support import EXPERIMENT, run_cli

    args = [a for p in PERIODS_SHOWN for a in ("--period", p)]
    run_cli(servers, "monitor", "--spec", str(e2e_data.spec), *args, timeout=420)
    client = servers.mlflow.client()
    exp = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([exp.experiment_id], filter_string="tags.`classwatch.kind` = 'monitor'")
    periods = {r.data.tags["classwatch.period"]: r for r in runs if "classwatch.period" in r.data.tags}
    parent = client.get_run(periods[PERIODS_SHOWN[0]].data.tags["mlflow.parentRunId"])
    return exp, parent, periods


def _page(browser, url: str):
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.goto(url)
    return page


def test_runs_table_shows_each_month_and_its_alert(servers, monitored, browser, tmp_path, pytestconfig):
    from classwatch.commands.flows import experiment_links

    exp, parent, periods = monitored
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    links = dict(experiment_links(servers.mlflow.url, servers.mlflow.url))  # what `classwatch ui` prints
    page = _page(browser, links[exp.name])
    row = page.get_by_role("row").filter(has_text=parent.info.run_name).first
    row.wait_for(timeout=WAIT_MS)
    assert "/runs" in page.url and page.get_by_role("columnheader", name="Run Name").count()  # the runs view
    row.locator('button[data-component-id$="runnamecellrenderer.tsx_46"]').first.click()  # expand the periods
    for period in PERIODS_SHOWN:
        run = periods[period]
        verdict = "ALERT" if run.data.tags["classwatch.alert"] == "retrain" else "ok"
        assert run.info.run_name.startswith(f"{period} {verdict} · ")
        name = page.locator(f'a[href$="/runs/{run.info.run_id}"] span').first
        name.wait_for(timeout=WAIT_MS)
        # the period and the verdict fit in the cell (the rest of the name may be cut with an ellipsis)
        shown, room = name.evaluate("""(el, prefix) => {
            const c = document.createElement('canvas').getContext('2d');
            c.font = getComputedStyle(el).font;
            return [c.measureText(prefix + '\u2026').width, el.getBoundingClientRect().width]; }""",
                                    f"{period} {verdict}")
        assert shown <= room + 1, f"{period} {verdict!r} needs {shown:.0f} px, the cell shows {room:.0f}"
    assert periods["2024-04"].data.tags["classwatch.alert"] == "retrain"
    assert periods["2024-02"].data.tags["classwatch.alert"] == "none"
    _close_assistant(page)
    page.screenshot(path=str(tmp_path / "mlflow-runs-table.png"))
    page.close()
    _keep(pytestconfig, tmp_path / "mlflow-runs-table.png")


def test_period_run_description_and_chart_order(servers, monitored, browser, tmp_path, pytestconfig):
    exp, parent, periods = monitored
    run = periods["2024-04"]
    base = f"{servers.mlflow.url}/#/experiments/{exp.experiment_id}/runs/{run.info.run_id}"
    page = _page(browser, base + "?workflowType=machine_learning")
    page.get_by_text("2024-04, cw-e2e: retraining alert").first.wait_for(timeout=WAIT_MS)  # the description
    _close_assistant(page)
    page.screenshot(path=str(tmp_path / "mlflow-period-run.png"))
    page.close()
    page = _page(browser, base + "/model-metrics?workflowType=machine_learning")
    page.locator(".js-plotly-plot").first.wait_for(timeout=WAIT_MS)
    first = page.get_by_text("1 headline and alert").first
    first.wait_for(timeout=WAIT_MS)
    tops = {name: page.get_by_text(name).first.bounding_box()["y"]
            for name in ("1 headline and alert", "2 prevalence") if page.get_by_text(name).count()}
    assert tops["1 headline and alert"] < tops.get("2 prevalence", float("inf"))  # the first section on the page
    _close_assistant(page)
    page.screenshot(path=str(tmp_path / "mlflow-period-charts.png"))
    page.close()
    _keep(pytestconfig, tmp_path / "mlflow-period-run.png", tmp_path / "mlflow-period-charts.png")


def test_over_time_chart_is_logged_and_referenced(servers, monitored, browser, tmp_path, pytestconfig):
    exp, parent, periods = monitored
    assert "monitoring_over_time.png" in parent.data.tags["mlflow.note.content"]
    base = f"{servers.mlflow.url}/#/experiments/{exp.experiment_id}/runs/{parent.info.run_id}"
    page = _page(browser, base + "?workflowType=machine_learning")
    page.get_by_text("monitoring_over_time.png").first.wait_for(timeout=WAIT_MS)  # the description names it
    assert page.get_by_text("Time (wall)").count()  # and says how to read the charts' x axis as dates
    page.close()
    page = _page(browser, f"{base}/artifacts/monitoring_over_time.png")
    image = page.locator('img[alt="monitoring_over_time.png"]').first
    image.wait_for(timeout=WAIT_MS)
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle(),
                           timeout=WAIT_MS)
    assert image.evaluate("img => img.naturalWidth") >= 600
    _close_assistant(page)
    page.screenshot(path=str(tmp_path / "mlflow-over-time.png"))
    page.close()
    local = servers.mlflow.client().download_artifacts(parent.info.run_id, "monitoring_over_time.png", str(tmp_path))
    _keep(pytestconfig, tmp_path / "mlflow-over-time.png", Path(local))


def test_the_parents_list_of_periods_links_each_to_its_run_in_the_model_training_view(servers, monitored, browser,
                                                                                     tmp_path, pytestconfig):
    """A click on a period in the parent's description opens that period's run (in a new tab) with
    workflowType=machine_learning in the address: the view the UI shows it in whatever this browser
    chose before (a fresh one defaults to GenAI)."""
    exp, parent, periods = monitored
    run = periods["2024-04"]
    page = _page(browser, f"{servers.mlflow.url}/#/experiments/{exp.experiment_id}/runs/{parent.info.run_id}"
                          "?workflowType=machine_learning")
    link = page.get_by_role("link", name="2024-04 ALERT").first
    link.wait_for(timeout=WAIT_MS)
    with page.context.expect_page(timeout=WAIT_MS) as opened:  # the UI opens description links in a new tab
        link.click()
    parent_page, page = page, opened.value
    page.get_by_text("2024-04, cw-e2e: retraining alert").first.wait_for(timeout=WAIT_MS)  # the period's description
    assert f"/runs/{run.info.run_id}" in page.url and "workflowType=machine_learning" in page.url
    assert page.get_by_role("tab", name="Model metrics").count()  # the classic run page, not GenAI's
    _close_assistant(page)
    page.screenshot(path=str(tmp_path / "mlflow-period-from-parent.png"))
    parent_page.close()  # closes the new tab too (one browser context)
    _keep(pytestconfig, tmp_path / "mlflow-period-from-parent.png")
