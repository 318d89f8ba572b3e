"""End to end in headless Chromium (Debian's, driven by Playwright; no browser download): run the
default preset on the embedded SmolLM2 and check what a person would see (saves docs/screenshot.png),
then the self-speculation preset with the layers typed into its field."""
from __future__ import annotations

import os
import shutil

import pytest

from helpers import ROOT, launched

pytestmark = [pytest.mark.browser, pytest.mark.integration]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOT = ROOT / "docs" / "screenshot.png"
# Keep the browser off the network: every host name but the app's loopback address fails to resolve.
ARGS = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--no-sandbox", "--disable-gpu"]
BOTH_DONE = """() => ['standard', 'speculative'].every(lane => {
    const el = document.querySelector(`#${lane}-lane .lane`);
    return el && el.dataset.finished === 'true'; })"""
SELF_DONE = """() => { const el = document.querySelector('#speculative-lane .lane');
    return el && el.innerText.includes('self · layers 0-14') && el.dataset.finished === 'true'; }"""


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if CHROMIUM is None or sync_playwright is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium and playwright (see .ci/run)")
        pytest.skip("needs Debian's chromium and the playwright package")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def store():
    """One model store for the module's apps, as one server keeps one for all its sessions: the
    embedded model loads and warms up once."""
    from specdec.playground.store import ModelStore
    return ModelStore(device="cpu")


def test_default_preset_runs_in_the_browser(browser, store):
    import space_config

    with launched(limits=space_config.LOCAL_LIMITS, store=store) as (url, _):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.wait_for_selector("#run", timeout=60_000)
        assert page.locator("#component-0, .gradio-container").count() > 0
        assert not page.locator("#run-phone").is_visible()  # the phone's Run, under the prompt, only below 700 px
        # 24 new tokens keep the run short on a CPU; the rest is the default preset as a user finds it.
        number = page.get_by_label("Max new tokens").and_(page.locator("input[type=number]"))
        number.fill("24")
        number.press("Enter")
        page.locator("#run").click()
        page.wait_for_function(BOTH_DONE, timeout=300_000)
        page.wait_for_function("() => document.querySelectorAll('#chart-speedup .js-plotly-plot').length > 0 && "
                               "document.querySelector('#stats-table').innerText.includes('outputs identical')",
                               timeout=30_000)

        for lane in ("standard", "speculative"):
            text = page.locator(f"#{lane}-lane .lane-text").inner_text()
            assert text.strip(), lane
        assert int(page.locator("#speculative-lane .lane").get_attribute("data-tokens")) <= 24
        assert page.locator("#speculative-lane .tok").count() > 0  # coloured by fate
        assert page.locator(".legend .tok-accepted, .legend .tok-corrected, .legend .tok-bonus").count() == 3
        for chart in ("rounds", "hist", "speedup", "positions"):
            assert page.locator(f"#chart-{chart} .js-plotly-plot .main-svg").count() > 0, chart
        table = page.locator("#stats-table").inner_text()
        for quantity in ("tokens/s, standard", "speedup, measured", "α (acceptance rate)", "c (draft cost ratio)",
                         "outputs identical"):
            assert quantity in table
        assert "yes" in table  # greedy: the two lanes' outputs are identical

        # One verdict, once the run has ended, with its interval (issue #20).
        page.wait_for_function("() => !document.querySelector('#result-card').innerText.includes('appears here')",
                               timeout=30_000)
        card = page.locator("#result-card").inner_text()
        assert card.split(" ", 1)[1].startswith(("faster", "slower")) and "tokens per target pass" in card, card
        page.locator("#replay:not([disabled])").wait_for(timeout=10_000)  # Replay on, Stop off, once it ended
        assert not page.locator("#stop").is_enabled()

        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        assert SCREENSHOT.stat().st_size > 20_000

        # The self-speculation preset: its layers field appears, and what is typed there is what drafts.
        assert not page.locator("#draft-layers textarea, #draft-layers input").first.is_visible()
        page.get_by_label("Model pair preset").click()
        page.get_by_role("option", name="SmolLM2-135M · self-speculation (offline)").click()
        layers = page.locator("#draft-layers").locator("textarea, input").first
        layers.wait_for(state="visible", timeout=10_000)
        layers.fill("0-14")
        number.fill("8")  # a shorter run: this one checks the wiring, the first one the whole page
        number.press("Enter")
        page.locator("#run").click()
        page.wait_for_function(SELF_DONE, timeout=300_000)
        page.wait_for_function("() => document.querySelector('#stats-table').innerText.includes('self · layers 0-14')",
                               timeout=30_000)
        assert "yes" in page.locator("#stats-table").inner_text()


def test_a_phone_stacks_the_lanes_and_stop_leaves_a_replayable_run(browser, store):
    """Issue #20: at 390 px the lanes stack; no verdict while a run streams; Stop says where it
    stopped and the run so far replays."""
    import space_config

    with launched(limits=space_config.LOCAL_LIMITS, store=store) as (url, _):
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(url)
        page.wait_for_selector("#run", timeout=60_000)
        standard, speculative = (page.locator(f"#{lane}-lane").bounding_box() for lane in ("standard", "speculative"))
        assert speculative["y"] >= standard["y"] + standard["height"] - 1  # one under the other
        assert not page.locator("#stop").is_enabled() and not page.locator("#replay").is_enabled()
        number = page.get_by_label("Max new tokens").and_(page.locator("input[type=number]"))
        number.fill("400")
        number.press("Enter")
        run = page.locator("#run-phone")
        top = page.evaluate("document.querySelector('#run-phone').getBoundingClientRect().top + window.scrollY")
        assert run.is_visible() and top < 844  # Run within the first screen, under the prompt
        run.click()
        page.wait_for_function("() => Number(document.querySelector('#speculative-lane .lane').dataset.tokens) > 3",
                               timeout=120_000)
        assert "appears here when a run ends" in page.locator("#result-card").inner_text()
        page.locator("#stop").click()
        page.wait_for_function("() => document.querySelector('#speculative-lane').innerText.includes('stopped after')",
                               timeout=30_000)
        page.locator("#replay:not([disabled])").wait_for(timeout=10_000)
        assert not page.locator("#stop").is_enabled()
        page.wait_for_timeout(2_000)  # a frame still in flight at Stop would land by now
        for lane in ("standard", "speculative"):
            assert "running" not in page.locator(f"#{lane}-lane .lane").inner_text()
            assert "stopped after" in page.locator(f"#{lane}-lane").inner_text()


def test_a_failed_run_shows_one_message_and_leaves_the_lanes_idle(browser, store):
    """Issue #20: an error is one message (no badge on every output), and the lanes say the run
    failed instead of 'loading' forever; Stop goes off again."""
    import space_config

    with launched(limits=space_config.LOCAL_LIMITS, store=store) as (url, _):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.wait_for_selector("#run", timeout=60_000)
        page.get_by_label("Target model").fill("/no/such/model-folder")
        page.locator("#run").click()
        page.wait_for_function("() => document.querySelector('#speculative-lane').innerText.includes('failed')",
                               timeout=60_000)
        assert "loading" not in page.locator("#standard-lane").inner_text()
        assert page.locator(".toast-body").count() == 1
        assert page.get_by_text("Error", exact=True).filter(visible=True).count() == 1  # the toast's title
        assert not page.locator("#stop").is_enabled()
