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
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"
    ),
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
        lambda route: route.fulfill(
            status=200, content_type="text/html", body="<p id=ok>back on Prolific</p>"
        ),
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
            # the server's clock reaches the final deadline (60 + 2 s) before the page's own timer
            # submits (2 s of real time): the server, not the page, decides it timed out
            clock.advance(3)
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

    store = make_study(
        questions=[question("q0", "A")],
        conditions=["PSA"],
        ratings_per_item=1,
        tasks_per_rater=1,
        completion_url=None,
    )
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


def _enter(browser, url: str, pid: str):
    """A new browser context through the Prolific link and the tutorial quiz; returns (ctx, page)."""
    ctx = browser.new_context(viewport={"width": 1000, "height": 700})
    page = ctx.new_page()
    page.route(
        "https://prolific.example/**",
        lambda route: route.fulfill(status=200, content_type="text/html", body="<p id=ok>back</p>"),
    )
    page.goto(f"{url}/start?PROLIFIC_PID={pid}&STUDY_ID=s&SESSION_ID={pid}")
    page.check("input[name=q0][value='0']")
    page.click("#quiz-submit")
    return ctx, page


def _judge(
    page, store, rid: str, *, answer: str | None = None, right: bool = True, probability: str = ""
) -> tuple[str, bool]:
    """Do the task on screen: start the timer, choose ``answer`` (or the right / wrong option),
    submit, go on. Returns (condition, is_catch) as stored."""
    from playwright.sync_api import expect

    expect(page.locator("#start-timer")).to_be_visible()
    aid = page.url.rsplit("/", 1)[-1]
    a = store.get_assignment(aid, rid)
    assert a is not None
    truth = store.item(a.item_id).correct
    choice = answer or (truth if right else ("B" if truth == "A" else "A"))
    page.click("#start-timer")
    page.check(f"input[name=answer][value='{choice}']")
    if probability:
        page.fill("#probability", probability)
    page.click("#submit-answer")
    expect(page.locator("#feedback-result")).to_have_text("Correct." if choice == truth else "Not correct.")
    page.click("#next-task")
    return a.condition, a.is_catch


def test_browser_vote_at_50_is_the_chosen_option(browser, make_study, live_server) -> None:
    # issue 14.1: two raters choose B (the true answer) at probability 50: right, majority and unanimous
    from seerbench.study import study_stats

    store = make_study(
        questions=[question("q0", "B")],
        conditions=["P"],
        ratings_per_item=2,
        tasks_per_rater=1,
        completion_url=None,
    )
    srv = live_server(store)
    for pid in ("v1", "v2"):
        ctx, page = _enter(browser, srv.url, pid)
        _judge(
            page,
            store,
            str(store.rater_for(f"prolific:{pid}", "prolific")["id"]),
            answer="B",
            probability="50",
        )
        page.locator("#completion-code").wait_for()
        ctx.close()
    rows = export_rows(store)
    assert [(r["answer"], r["probability"], r["correct"]) for r in rows] == [("B", 0.5, 1.0), ("B", 0.5, 1.0)]
    p = study_stats(rows)["conditions"]["P"]
    assert p["accuracy"]["mean"] == 1.0 and p["vote"] == {"items": 1, "majority": 1.0, "unanimous": 1.0}


def test_browser_catch_rule_removes_from_one_condition(browser, make_study, live_server) -> None:
    # issue 14.3: wrong on the first three catch trials (two of them in one condition): removed
    # from that condition only (catch_rule: per_condition, not the seed's default); the rater
    # finishes the quota in the other and gets the code
    from playwright.sync_api import expect

    store = make_study(
        questions=[question(f"q{i}", "AB"[i % 2]) for i in range(12)],
        conditions=["PS", "PSA"],
        catch_rate=0.99,
        catch_min=2,
        catch_threshold=0.5,
        catch_rule="per_condition",
        tasks_per_rater=8,
        seed=11,
        completion_url=None,
    )
    srv = live_server(store)
    ctx, page = _enter(browser, srv.url, "c1")
    rid = str(store.rater_for("prolific:c1", "prolific")["id"])
    tasks = [_judge(page, store, rid, right=False) for _ in range(3)]
    assert all(catch for _, catch in tasks)
    removed = tasks[2][0]
    tasks += [_judge(page, store, rid, right=True) for _ in range(5)]
    assert {c for c, _ in tasks[3:]} == {"PS", "PSA"} - {removed}
    expect(page.locator("#completion-code")).to_have_text("DONE123")
    _shot(page, "8-catch-per-condition-done")
    assert store.progress()["raters"][0]["removed_from"] == [removed]
    ctx.close()


def test_browser_study_full_shows_no_code(browser, make_study, live_server) -> None:
    # issue 14.5: the only slot is taken; a new rater sees "study full" and Prolific's return flow
    from playwright.sync_api import expect

    store = make_study(
        questions=[question("only")],
        conditions=["P"],
        ratings_per_item=1,
        tasks_per_rater=1,
        completion_url=COMPLETE + "?cc={code}",
    )
    store.next_assignment(str(store.rater_for("prolific:first", "prolific")["id"]))
    srv = live_server(store)
    ctx, page = _enter(browser, srv.url, "late")
    expect(page.locator("h1")).to_have_text("This study is full")
    expect(page.locator("#return-note")).to_contain_text("return")
    assert (
        page.locator("#completion-code").count() == 0
        and page.locator("meta[http-equiv=refresh]").count() == 0
    )
    assert "DONE123" not in page.content() and page.url.endswith("/full")
    _shot(page, "9-study-full")
    page.goto(f"{srv.url}/done")  # no way round it
    expect(page.locator("h1")).to_have_text("This study is full")
    ctx.close()


def test_browser_passage_conditions_show_a_passage(browser, make_study, live_server) -> None:
    # issue 14.9: PS on items without a passage is refused; with passages every snippet is a link
    # into the passage that scrolls to it and highlights it
    import re

    from playwright.sync_api import expect

    from seerbench.errors import ConfigError

    with pytest.raises(ConfigError, match=r"PS: 1 items \(bare\)"):
        make_study(questions=[{**question("bare"), "source_text": None}], conditions=["PS"])
    store = make_study(
        questions=[question("q0", "A")], conditions=["PS"], ratings_per_item=1, tasks_per_rater=1
    )
    srv = live_server(store)
    ctx, page = _enter(browser, srv.url, "ps1")
    page.click("#start-timer")
    expect(page.locator("#passage")).to_be_visible()
    links = page.locator("a.snippet-link")
    assert links.count() == 2 and page.locator("#arguments .argument").count() == 0  # PS: no arguments
    for i in range(2):
        target = page.locator(f"#{links.nth(i).get_attribute('data-target')}")
        links.nth(i).click()
        expect(target).to_be_in_viewport()
        expect(target).to_have_class(re.compile(r"\bhighlight\b"))
    _shot(page, "10-ps-passage")
    ctx.close()


def test_browser_an_old_tab_learns_its_session_ended(browser, make_study, live_server) -> None:
    # issue 28.5: opening the study link again ends the pages opened before; the old tab learned
    # only when its submit was refused (what the rater typed lost). It now asks the server when it
    # comes back into view and every 20 s while visible, and says at once what to do.
    from playwright.sync_api import expect

    store = make_study(time_limit_s=None, conditions=["P"], tasks_per_rater=2)
    srv = live_server(store)
    link = f"{srv.url}/start?PROLIFIC_PID=tabs&STUDY_ID=s&SESSION_ID=tabs"
    ctx = browser.new_context(viewport={"width": 1000, "height": 700})
    old = ctx.new_page()
    old.goto(link)
    old.check("input[name=q0][value='0']")
    old.click("#quiz-submit")
    expect(old.locator("main form button").first).to_be_enabled()
    task_url = old.url
    assert "/task/" in task_url

    def come_back(page):  # the tab comes into view again (what switching to it fires)
        with page.expect_response(lambda r: r.url.endswith("/session")) as resp:
            page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
        return resp.value.json()

    assert come_back(old) == {"current": True}
    assert old.locator("#session-stale").count() == 0
    new = ctx.new_page()  # the link again, in a second tab of the same browser
    new.clock.install()
    new.goto(link)
    assert new.url == task_url  # the task is kept
    state = come_back(old)
    assert state["current"] is False
    banner = old.locator("#session-stale")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("not saved")
    expect(banner).to_contain_text("Continue in the newest tab")
    for i in range(old.locator("main form button").count()):
        expect(old.locator("main form button").nth(i)).to_be_disabled()
    assert come_back(new) == {"current": True}
    assert new.locator("#session-stale").count() == 0

    # the link opened in another browser: the newest tab here learns by its poll, unfocused
    other = browser.new_context(viewport={"width": 1000, "height": 700})
    elsewhere = other.new_page()
    elsewhere.goto(link)
    assert elsewhere.url == task_url
    with new.expect_response(lambda r: r.url.endswith("/session")) as resp:
        new.clock.fast_forward(21_000)
    assert resp.value.json()["current"] is False
    expect(new.locator("#session-stale")).to_contain_text("not saved")
    _shot(old, "10-old-tab-told")
    rid = str(store.rater_for("prolific:tabs", "prolific")["id"])
    a = store.get_assignment(task_url.rsplit("/", 1)[-1], rid)
    assert a is not None and a.status == "active"  # nothing was submitted or lost on the way
    other.close()
    ctx.close()
