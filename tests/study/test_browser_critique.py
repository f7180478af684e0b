"""The critique task (seed 002, issue 10.4) end to end in headless Chromium: the passage on demand,
two critiques of the rater's own, a model critique "used" (filled in place by the page's script)
and edited, severity and category required, a Likert rating, one submission (double-clicked),
and the export's used/edited flags. Screenshots go to test-artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest

from seerbench.study import create_study, export_rows, load_manifest

from .conftest import XSS
from .test_browser import CHROMIUM, _shot
from .test_browser import browser as browser  # the headless Chromium fixture
from .test_critique_study import critique_manifest, critiqued_answers, write_critiques

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"
    ),
]


def test_critique_task_in_chromium(browser, live_server, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    answers = [a for a in critiqued_answers() if a["answer_id"] == "q3-misleading"]
    answers[0]["critiques"][1]["text"] += f" {XSS}"  # model text is shown and pre-filled as text only
    write_critiques(tmp_path / "critiques.jsonl", answers)
    store = create_study(
        load_manifest(critique_manifest(conditions=["misleading.assist"], tasks_per_rater=1)),
        tmp_path / "cr.sqlite",
        base_dir=tmp_path,
    )
    srv = live_server(store)
    ctx = browser.new_context(viewport={"width": 1000, "height": 900})
    page = ctx.new_page()
    page.goto(f"{srv.url}/start?PROLIFIC_PID=crit1")
    expect(page.locator("#answer")).to_contain_text("It is 21 km long.")
    expect(page.locator(".passage-text")).not_to_be_visible()  # the passage only on demand
    page.click("#passage summary")
    expect(page.locator(".passage-text")).to_contain_text("Birch Lake is 12 km long")
    expect(page.locator(".helpfulness")).to_have_text(["helpfulness 0.81", "helpfulness 0.32"])
    _shot(page, "30-critique-task")

    # two critiques of the rater's own ("add" reloads the page with the first kept)
    page.fill("#c0-text", "The length is wrong.")
    page.select_option("#c0-severity", "critical")
    page.select_option("#c0-category", "accuracy")
    page.click("#add-critique")
    expect(page.locator("#c0-text")).to_have_value("The length is wrong.")
    page.fill("#c1-text", "It does not say the lake freezes.")
    page.select_option("#c1-category", "coverage")  # no severity yet
    page.click("#add-critique")

    # "use" the second model critique: the script fills the empty box in place (no reload)
    page.evaluate("window.__same_page = 1")
    page.click("#mc-1 button.use")
    assert page.evaluate("window.__same_page") == 1
    expect(page.locator("#c2-text")).to_have_value(answers[0]["critiques"][1]["text"])
    assert page.evaluate("window.__pwned === undefined")
    page.fill("#c2-text", "The answer does not say where the figure comes from; the passage says 12 km.")
    page.select_option("#c2-severity", "major")
    page.select_option("#c2-category", "other")
    page.check("#likert-2")

    # severity is required: the error names the critique and every entry survives
    page.click("#submit-answer")
    expect(page.locator("#form-error")).to_have_text("Critique 2: choose a severity.")
    expect(page.locator("#c2-text")).to_have_value(
        "The answer does not say where the figure comes from; the passage says 12 km."
    )
    expect(page.locator("#c1-text")).to_have_value("It does not say the lake freezes.")
    assert store.critiques() == {}
    page.select_option("#c1-severity", "minor")
    page.select_option("#c2-category", "")  # and a category too
    page.click("#submit-answer")
    expect(page.locator("#form-error")).to_have_text("Critique 3: choose a category.")
    page.select_option("#c2-category", "other")
    # the Likert rating was kept across the reloads
    expect(page.locator("#likert-2")).to_be_checked()
    _shot(page, "31-critique-filled")
    page.dblclick("#submit-answer")  # submitted once
    expect(page.locator("body")).to_contain_text("CRIT1")

    rows = export_rows(store)
    assert [(r["critique_text"], r["severity"], r["category"], r["used"], r["edited"]) for r in rows] == [
        ("The length is wrong.", "critical", "accuracy", False, False),
        ("It does not say the lake freezes.", "minor", "coverage", False, False),
        (
            "The answer does not say where the figure comes from; the passage says 12 km.",
            "major",
            "other",
            True,
            True,
        ),
    ]
    assert {(r["likert"], r["n_critiques"], r["model_critique_id"] is not None) for r in rows} == {
        (2, 3, False),
        (2, 3, True),
    }
    assert len({r["judgment_id"] for r in rows}) == 1
    ctx.close()
