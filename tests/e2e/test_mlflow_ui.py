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
