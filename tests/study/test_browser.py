"""End to end in real headless Chromium (Debian's ``chromium`` driven by Playwright).

A rater fails then passes the tutorial quiz, judges one item in each of two conditions, clicks a
snippet (the passage scrolls to it and highlights it), lets one timer run out (the page submits
itself), and is redirected with the completion code. The server runs on a fake clock that the test
moves forward, so a 60-second timer can run out in about a second of real time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from seerbench.study import export_rows

from .conftest import XSS, FakeClock, question

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(os.environ.get("SEERBENCH_TEST_ARTIFACTS", "test-artifacts"))
COMPLETE = "https://prolific.example/submissions/complete"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"),
]


@pytest.fixture
def browser() -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def _shot(page: object, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"study-{name}.png"), full_page=True)  # type: ignore[attr-defined]


def test_rater_journey(browser, make_study, live_server) -> None:
    from playwright.sync_api import expect

    clock = FakeClock()
    qs = [question("q0", "A", text=f"Q zero {XSS}"), question("q1", "B", text=f"Q one {XSS}")]
    store = make_study(
        questions=qs,
        conditions=["P", "PSA"],
        ratings_per_item=1,
        tasks_per_rater=2,
        time_limit_s=60,
        finalise_s=2,
        completion_url=COMPLETE + "?cc={code}",
        clock=clock,
    )
    srv = live_server(store)
    ctx = browser.new_context(viewport={"width": 1000, "height": 700})
    page = ctx.new_page()
    page.route(
        "https://prolific.example/**",
        lambda route: route.fulfill(status=200, content_type="text/html", body="<p id=ok>back on Prolific</p>"),
    )
    page.goto(f"{srv.url}/start?PROLIFIC_PID=pw1&STUDY_ID=s&SESSION_ID=x")

    # tutorial: a wrong answer is refused with feedback, the right one lets the rater in
    page.check("input[name=q0][value='1']")
    page.click("#quiz-submit")
    expect(page.locator("#quiz-error")).to_be_visible()
    _shot(page, "1-quiz-wrong")
    page.check("input[name=q0][value='0']")
    page.click("#quiz-submit")

    seen = set()
    for _ in range(2):
        expect(page.locator("#start-timer")).to_be_visible()
        assert page.evaluate("window.__pwned") is None  # the <script> in the question is text
        expect(page.locator("#question")).to_contain_text("<script>window.__pwned = 1</script>")
        page.click("#start-timer")
        expect(page.locator("#material")).to_be_visible()
        aid = page.url.rsplit("/", 1)[-1]
        a = store.get_assignment(aid, store.rater_for("prolific:pw1", "prolific")["id"])
        assert a is not None
        cond = a.condition
        seen.add(cond)
        if cond == "PSA":
            target = page.locator("#snip-1-0")
            expect(target).not_to_be_in_viewport()
            _shot(page, "2-psa-before-click")
            page.click("a.snippet-link[data-target='snip-1-0']")
            expect(target).to_have_class("snip opt-1 highlight active")
            expect(target).to_be_in_viewport()
            _shot(page, "3-psa-snippet-highlighted")
            truth = store.item(a.item_id).correct
            page.check(f"input[name=answer][value='{truth}']")
            page.fill("#probability", "85")
            page.click("#submit-answer")
            expect(page.locator("#feedback-result")).to_have_text("Correct.")
        else:
            # move the server clock to 1 s before the reading deadline; the page follows the server
            clock.advance(59)
            page.reload()
            expect(page.locator("#timer")).to_be_visible()
            page.check("input[name=answer][value='A']")  # chosen but never submitted
            expect(page.locator("#material")).to_be_hidden()  # reading time over: material gone
            expect(page.locator("#finalise-note-js")).to_be_visible()
            _shot(page, "4-p-finalise")
            expect(page.locator("#feedback-result")).to_contain_text("Time ran out")  # submitted itself
            _shot(page, "5-p-timed-out")
        page.click("#next-task")
    assert seen == {"P", "PSA"}
    # done page shows the code, then the browser is sent back with it
    page.wait_for_url(COMPLETE + "?cc=DONE123")
    _shot(page, "6-completed")
    rows = sorted(export_rows(store), key=lambda r: r["condition"])
    assert [(r["condition"], r["timed_out"], r["auto_submitted"], r["answer"]) for r in rows] == [
        ("P", True, True, None),
        ("PSA", False, False, rows[1]["true_answer"]),
    ]
    assert rows[1]["probability"] == 0.85
    ctx.close()


def test_works_without_javascript(browser, make_study, live_server) -> None:
    from playwright.sync_api import expect

    store = make_study(questions=[question("q0", "A")], conditions=["PSA"], ratings_per_item=1, tasks_per_rater=1, completion_url=None)
    srv = live_server(store)
    ctx = browser.new_context(java_script_enabled=False)
    page = ctx.new_page()
    page.goto(f"{srv.url}/start?PROLIFIC_PID=nojs")
    page.check("input[name=q0][value='0']")
    page.click("#quiz-submit")
    page.click("#start-timer")
    # a snippet is a plain anchor: following it targets the passage span (CSS :target marks it)
    page.click("a.snippet-link[data-target='snip-0-0']")
    assert page.url.endswith("#snip-0-0")
    page.check("input[name=answer][value='A']")
    page.click("#submit-answer")
    expect(page.locator("#feedback-result")).to_have_text("Correct.")
    page.click("#next-task")
    expect(page.locator("#completion-code")).to_have_text("DONE123")
    _shot(page, "7-nojs-done")
    ctx.close()
