"""The rater pages in headless Chromium (issue 14.10-14.12): overlapping snippets, an answer form that
stays in view, and the factuality and expert-routing pages. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from seerbench.study import export_rows

from .conftest import question
from .test_browser import ARGS, CHROMIUM, _shot

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"
    ),
]

BLUE, ORANGE = "rgb(207, 227, 255)", "rgb(255, 224, 179)"  # .snip.highlight.opt-0 / .opt-1


@pytest.fixture
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def _enter(browser, url: str, pid: str, width: int = 1000, height: int = 700):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    page.goto(f"{url}/start?PROLIFIC_PID={pid}")
    page.check("input[name=q0][value='0']")
    page.click("#quiz-submit")
    return ctx, page


def _style(page, selector: str, prop: str) -> str:
    return str(page.eval_on_selector(selector, f"el => getComputedStyle(el)['{prop}']"))


def test_overlapping_snippets_link_and_highlight_in_both_colours(browser, make_study, live_server) -> None:
    # issue 14.10: B's snippet lies inside A's. Both are links that scroll to their snippet; the
    # text they share shows both options' colours, whichever is highlighted.
    from playwright.sync_api import expect

    q = question("q0", "A")
    q["answer_cases"][0]["quotes"] = ["she recorded only three ships, all of them fishing boats"]
    q["answer_cases"][1]["quotes"] = ["three ships"]
    q["answer_cases"][1]["argument"] = "The log names three ships (#1)."
    store = make_study(questions=[q], conditions=["PSA"], ratings_per_item=1, tasks_per_rater=1)
    srv = live_server(store)
    ctx, page = _enter(browser, srv.url, "ov1")
    page.click("#start-timer")
    expect(page.locator("#passage")).to_be_visible()
    inner, outer = page.locator("#snip-1-0"), page.locator("#snip-0-0")
    page.eval_on_selector(".passage-text", "el => { el.scrollTop = el.scrollHeight; }")
    expect(inner).not_to_be_in_viewport()

    page.click("a.snippet-link[data-target='snip-1-0']")  # B's snippet, inside A's
    expect(inner).to_be_in_viewport()
    expect(inner).to_have_class(re.compile(r"\bhighlight\b.*\bactive\b"))
    expect(outer).not_to_have_class(re.compile(r"\bhighlight\b"))
    shared = _style(page, "#snip-1-0", "backgroundImage")
    assert BLUE in shared and ORANGE in shared
    _shot(page, "11-overlap-b")

    page.click("a.snippet-link[data-target='snip-0-0']")  # A's snippet, around B's
    expect(outer).to_have_class(re.compile(r"\bhighlight\b.*\bactive\b"))
    expect(inner).not_to_have_class(re.compile(r"\bhighlight\b"))
    assert _style(page, "#snip-0-0", "backgroundColor") == BLUE
    shared = _style(page, "#snip-1-0", "backgroundImage")
    assert BLUE in shared and ORANGE in shared  # the shared words, in both colours
    _shot(page, "12-overlap-a")
    ctx.close()


def test_answer_form_stays_in_view(browser, make_study, live_server) -> None:
    # issue 14.11: while reading (passage, arguments, page scrolled to the end) the answer form is
    # on screen; a submit without a choice shows the error next to the form, on screen
    from playwright.sync_api import expect

    store = make_study(
        questions=[question("q0", "A"), question("q1", "B")],
        conditions=["PSA"],
        ratings_per_item=1,
        tasks_per_rater=2,
    )
    srv = live_server(store)
    ctx, page = _enter(browser, srv.url, "fv1")
    page.click("#start-timer")
    submit = page.locator("#submit-answer")
    expect(submit).to_be_in_viewport()
    page.click("a.snippet-link[data-target='snip-1-0']")
    expect(submit).to_be_in_viewport()
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    expect(page.locator("#material-1")).to_be_in_viewport()
    expect(submit).to_be_in_viewport()
    _shot(page, "13-form-beside-material")

    page.click("#submit-answer")  # no answer chosen
    err = page.locator("#answer-form #form-error")
    expect(err).to_have_text("Please choose one of the answers.")
    expect(err).to_be_in_viewport()
    expect(submit).to_be_in_viewport()
    _shot(page, "14-form-error")
    truth = "A" if "Question q0" in page.locator("#question").inner_text() else "B"  # q0: A, q1: B
    page.check(f"input[name=answer][value='{truth}']")
    page.click("#submit-answer")
    expect(page.locator("#feedback-result")).to_have_text("Correct.")
    page.click("#next-task")

    # a phone-sized window: the form is docked at the bottom of the window
    page.set_viewport_size({"width": 400, "height": 760})
    page.click("#start-timer")
    expect(submit).to_be_in_viewport()
    page.evaluate("window.scrollTo(0, document.body.scrollHeight / 2)")
    expect(submit).to_be_in_viewport()
    _shot(page, "15-form-docked-narrow")
    ctx.close()


def _factuality_item(qid: str, true: str) -> dict:
    return {
        "id": qid,
        "text": f"Strawberries are a source of vitamin C ({qid}).",
        "answer_cases": [
            {"short": "accurate", "long": "Accurate", "value": 1.0 if true == "accurate" else 0.0},
            {"short": "inaccurate", "long": "Not accurate", "value": 1.0 if true == "inaccurate" else 0.0},
        ],
        "metadata": {
            "ai_correct": True,
            "context": "User: is it healthy?",
            "assistance": {
                "search_results": [{"query": "strawberries vitamin c", "result": "USDA FoodData Central"}],
                "evidence": ["USDA: 58.8 mg per 100 g"],
                "judgments": "Accurate",
            },
        },
    }


def test_factuality_page(browser, make_study, live_server) -> None:
    # issue 14.12: the assistance parts start collapsed (seed 000) and open on a click; Skip does
    # not look like Submit; a rating and a skip are stored as chosen
    from playwright.sync_api import expect

    store = make_study(
        questions=[_factuality_item("f0", "accurate"), _factuality_item("f1", "inaccurate")],
        task="factuality",
        time_limit_s=None,
        ratings_per_item=1,
        tasks_per_rater=2,
        completion_url=None,
        conditions=[{"name": "evidence", "assistance": ["search_results", "evidence", "judgments"]}],
    )
    srv = live_server(store)
    ctx, page = _enter(browser, srv.url, "fa1")
    expect(page.locator("#assistance .warning")).to_contain_text("could be misleading")
    parts = page.locator("details.assist-part")
    assert parts.count() == 3
    for i in range(3):
        assert parts.nth(i).get_attribute("open") is None
    evidence = page.locator("#assist-evidence")
    expect(evidence.get_by_text("USDA: 58.8 mg per 100 g")).to_be_hidden()
    expect(evidence.locator("summary")).to_contain_text("Selected evidence")
    _shot(page, "16-factuality-collapsed")
    evidence.locator("summary").click()
    expect(evidence.get_by_text("USDA: 58.8 mg per 100 g")).to_be_visible()
    expect(
        page.locator("#assist-judgments").get_by_text("Accurate", exact=True)
    ).to_be_hidden()  # the others stay shut

    skip_bg, submit_bg = (
        _style(page, "#skip", "backgroundColor"),
        _style(page, "#submit-answer", "backgroundColor"),
    )
    assert skip_bg != submit_bg
    assert _style(page, "#skip", "color") != _style(page, "#submit-answer", "color")
    _shot(page, "17-factuality-open")

    first = re.search(r"\((f\d)\)", page.locator("#question").inner_text()).group(1)  # type: ignore[union-attr]
    page.check("#rating-unsupported")
    page.check("input[name=confidence][value='3']")
    page.check("input[name=helpfulness][value='2']")
    page.click("#submit-answer")
    expect(page.locator("#feedback-result")).to_be_visible()
    page.click("#next-task")
    page.click("#skip")
    expect(page.locator("#feedback-result")).to_have_text("Thank you, your answer was recorded.")
    page.click("#next-task")
    expect(page.locator("#completion-code")).to_have_text("DONE123")
    rows = {r["question_id"]: r for r in export_rows(store)}
    second = ({"f0", "f1"} - {first}).pop()
    r1, r2 = rows[first], rows[second]
    # unsupported -> binarised "inaccurate": right on f1 (inaccurate), wrong on f0
    assert (r1["rating"], r1["answer"], r1["confidence"], r1["helpfulness"]) == (
        "unsupported",
        "inaccurate",
        3,
        2,
    )
    assert r1["correct"] == (1.0 if first == "f1" else 0.0)
    assert (r2["rating"], r2["answer"], r2["correct"]) == ("skip", "skip", None)
    ctx.close()


def test_expert_routing_page(browser, make_study, live_server) -> None:
    # issue 14.12: the expert is asked about one option k; "yes" is right when k is the answer,
    # "no" when it is not
    from playwright.sync_api import expect

    def q3(qid: str) -> dict:
        return {
            "id": qid,
            "text": f"Which city is the capital of France? ({qid})",
            "answer_cases": [
                {"short": "A", "long": "Paris", "value": 1.0},
                {"short": "B", "long": "Rome", "value": 0.0},
                {"short": "C", "long": "Oslo", "value": 0.0},
            ],
        }

    store = make_study(
        questions=[q3("e0"), q3("e1")],
        task="expert_routing",
        conditions=["Q"],
        ratings_per_item=1,
        tasks_per_rater=2,
        time_limit_s=None,
        completion_url=None,
    )
    srv = live_server(store)
    ctx, page = _enter(browser, srv.url, "ex1")
    answers = {}
    for n in range(2):
        legend = page.locator("#answer-form legend")
        expect(legend).to_contain_text("Is the correct answer")
        m = re.search(r"Is the correct answer ([ABC]): (\w+)\?", legend.inner_text())
        assert m is not None
        k, city = m.group(1), m.group(2)
        assert city == {"A": "Paris", "B": "Rome", "C": "Oslo"}[k]
        expect(page.locator("#submit-answer")).to_be_in_viewport()
        if n == 0:
            _shot(page, "18-expert-routing")
        # the first time say "yes", the second "no", whatever k is
        choice = "yes" if n == 0 else "no"
        page.check(f"#answer-{choice}")
        page.click("#submit-answer")
        right = (choice == "yes") == (k == "A")
        expect(page.locator("#feedback-result")).to_have_text("Correct." if right else "Not correct.")
        answers[k, choice] = 1.0 if right else 0.0
        page.click("#next-task")
    expect(page.locator("#completion-code")).to_have_text("DONE123")
    rows = export_rows(store)
    assert sorted((r["expert_option"], r["answer"], r["correct"]) for r in rows) == sorted(
        (k, choice, v) for (k, choice), v in answers.items()
    )
    ctx.close()
