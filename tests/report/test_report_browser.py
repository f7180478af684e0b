"""The report in real headless Chromium (Debian's ``chromium`` driven by Playwright) with the network
blocked: it asks for nothing, logs no error, draws every figure, and its transcript browser filters,
pages and shows run text as text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seerbench.report import build_report

from ._html import read_report
from .conftest import XSS

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

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"
    ),
]


@pytest.fixture(scope="module")
def browser(quickstart_run: Path, evidence_run: Path) -> Iterator[Any]:
    # the runs are made first: Playwright's sync API holds an event loop that the runner cannot share
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


class Opened:
    """A report opened offline: every request other than the file itself is aborted and kept."""

    def __init__(self, browser: Any, path: Path, *, folder: Path | None = None) -> None:
        self.ctx = browser.new_context(viewport={"width": 1300, "height": 900}, offline=True)
        self.page = self.ctx.new_page()
        self.requests: list[str] = []
        self.loaded: list[str] = []  # files of ``folder`` (a report folder) the page asked for
        self.errors: list[str] = []
        url = path.resolve().as_uri()
        mine = None if folder is None else folder.resolve().as_uri() + "/"

        def route(r: Any) -> None:
            if r.request.url == url:
                r.continue_()
            elif mine is not None and r.request.url.startswith(mine):
                self.loaded.append(r.request.url[len(mine) :])
                r.continue_()
            else:
                self.requests.append(r.request.url)
                r.abort()

        self.ctx.route("**/*", route)
        self.page.on(
            "console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None
        )
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.errors.append(f"failed: {r.url}"))
        self.page.goto(url)
        self.page.wait_for_load_state("load")

    def rows(self) -> list[str]:
        return list(
            self.page.locator(".tb-row").evaluate_all("els => els.map(e => e.getAttribute('data-cell'))")
        )

    def status(self) -> str:
        return str(self.page.locator("#tb-status").text_content())


@pytest.fixture(scope="module")
def quickstart_html(quickstart_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_report([quickstart_run], tmp_path_factory.mktemp("b") / "quickstart.html")


@pytest.fixture(scope="module")
def evidence_html(evidence_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_report([evidence_run], tmp_path_factory.mktemp("b") / "evidence.html")


def _check_offline_and_figures(o: Opened, path: Path) -> None:
    assert o.requests == [] and o.errors == []
    figs = o.page.locator(".fig")
    assert figs.count() == len(read_report(path).figures) > 0
    for i in range(figs.count()):
        svg = figs.nth(i).locator("svg")
        box = svg.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 100
        assert svg.locator("path").count() > 5  # axes, ticks and the data, drawn


def test_quickstart_report_opens_offline(browser: Any, quickstart_html: Path) -> None:
    o = Opened(browser, quickstart_html)
    _check_offline_and_figures(o, quickstart_html)
    assert (
        o.page.locator("#asd .fig svg").count() == 1 and o.page.locator("#calibration .fig svg").count() == 1
    )
    assert len(o.rows()) == 20  # the first page of 7 cells x 4 questions
    assert o.status() == "rows 1–20 of 28 (of 28)"
    # the quickstart runs both option orders: each scored verdict shows both views it averages
    orders = o.page.locator(".tb-orders").all_text_contents()
    assert orders and all("as asked A " in t and "swapped A " in t for t in orders)
    # NaiveJudge: one judge run serves both answer cases: its verdict is shown once, and says so
    naive = o.page.locator(".tb-row[data-cell^='NaiveJudge']")
    assert naive.count() == 3  # questions 0-2 on the first page (7 rows a question)
    for k in range(3):
        cases = naive.nth(k).locator(".tb-case")
        assert cases.count() == 1 and "verdict (one judge run, for every answer case)" in cases.inner_text()
    consultant = o.page.locator(".tb-row[data-cell^='Consultancy']").first.locator(".tb-case")
    assert consultant.count() == 2 and consultant.first.inner_text().startswith("agent argues")
    # a debate: both sides argue in one run, judged once: one verdict, with the transcript
    debate = o.page.locator(".tb-row[data-cell^='SimultaneousDebate']").first.locator(".tb-case")
    assert debate.count() == 1 and debate.inner_text().startswith(
        "one run, both sides argued (one judge run, for every answer case)"
    )
    assert debate.locator(".tb-turn").count() >= 2
    # a question's id finds its rows, one per cell
    qid = o.page.locator(".tb-row").first.get_attribute("data-question")
    o.page.fill("#tb-search", qid)
    o.page.wait_for_function("() => /^rows 1–7 of 7 /.test(document.getElementById('tb-status').textContent)")
    assert {o.page.locator(".tb-row").nth(i).get_attribute("data-question") for i in range(7)} == {qid}
    o.ctx.close()


def test_filters_change_the_rows(browser: Any, evidence_html: Path, evidence_run: Path) -> None:
    o = Opened(browser, evidence_html)
    _check_offline_and_figures(o, evidence_html)
    page = o.page
    data = json.loads(read_report(evidence_html).json["browser-data"])
    total = len(data["rows"])
    assert o.status() == f"rows 1–20 of {total} (of {total})"
    page.click("#tb-next")
    assert o.status() == f"rows 21–40 of {total} (of {total})" and len(o.rows()) == 20
    page.click("#tb-prev")

    page.select_option("#tb-protocol", "Consultancy_t1")
    assert (
        set(o.rows()) == {"Consultancy_t1/A_scripted-report-agent_J_scripted-report-judge"}
        and len(o.rows()) == 5
    )
    page.check(
        "#tb-wrong"
    )  # consultancy: the judge follows the consultant, so each question has a wrong verdict
    assert len(o.rows()) == 4  # e2 failed to parse: no verdict to be wrong
    page.uncheck("#tb-wrong")
    page.check("#tb-failures")
    assert len(o.rows()) == 1
    assert page.locator(".tb-row").get_attribute("data-question") == "e2"
    page.uncheck("#tb-failures")
    page.select_option("#tb-protocol", "")

    page.select_option("#tb-judge", "trust")
    assert set(o.rows()) == {"BlindTrust/J_trust"}
    page.select_option("#tb-judge", "")

    page.fill("#tb-search", "island 3")  # words of question e3's passage are not searched; its text is
    page.wait_for_timeout(400)
    assert o.rows() == []
    page.fill("#tb-search", "question e3")
    page.wait_for_timeout(400)
    assert {page.locator(".tb-row").nth(i).get_attribute("data-question") for i in range(len(o.rows()))} == {
        "e3"
    }
    assert len(o.rows()) == 8
    page.fill("#tb-search", "ninety ships")  # a quote's text is not searched, the agent's argument is
    page.wait_for_timeout(400)
    assert o.status().startswith("no rows match")
    assert o.errors == [] and o.requests == []
    o.ctx.close()


def test_transcripts_render_as_text(browser: Any, evidence_html: Path) -> None:
    o = Opened(browser, evidence_html)
    page = o.page
    page.select_option("#tb-protocol", "EvidenceDebate_SA")
    texts = page.locator(".tb-text").all_text_contents()
    assert texts and all(XSS in t for t in texts)
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.locator("#tb-rows script, #tb-rows img").count() == 0
    ok = page.locator(".tb-quote.q-ok").all_text_contents()
    bad = page.locator(".tb-quote.q-bad").all_text_contents()
    assert ok and all(t.endswith(" verified") and "three ships" in t for t in ok)
    assert bad and all(t.endswith(" unverified") and "ninety ships" in t for t in bad)
    assert o.errors == [] and o.requests == []
    o.ctx.close()


def test_side_by_side_in_the_browser(
    browser: Any, quickstart_run: Path, evidence_run: Path, tmp_path: Path
) -> None:
    path = build_report([quickstart_run, evidence_run], tmp_path / "both.html")
    o = Opened(browser, path)
    _check_offline_and_figures(o, path)
    assert o.page.locator("#asd .run").count() == 2
    o.page.select_option("#tb-run", "quickstart")
    assert len(o.rows()) == 20 and o.status().endswith("of 28 (of 68)")
    o.ctx.close()


def test_folder_layout_loads_transcripts_on_demand(
    browser: Any, evidence_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the one-file limit: index.html plus transcript files, loaded from file:// by <script src>
    only when a page of rows needs them; the browser shows what the one-file page shows."""
    monkeypatch.setattr("seerbench.report._browser.CHUNK_ROWS", 2)  # 3 files for a cell's 5 rows
    index = build_report([evidence_run], tmp_path / "big.html", one_file_limit=0)
    assert index == tmp_path / "big" / "index.html"
    o = Opened(browser, index, folder=index.parent)
    _check_offline_and_figures(o, index)
    page = o.page
    page.wait_for_function("() => /^rows 1–20 of 40/.test(document.getElementById('tb-status').textContent)")
    assert o.status() == "rows 1–20 of 40 (of 40)" and len(o.rows()) == 20
    # questions e0..e4, each in all 8 cells: the first page is e0, e1 and 4 cells of e2, whose rows
    # are in the first 2 of each cell's 3 files (first 4 cells) or its first file (the others)
    first = set(o.loaded)
    assert first == {"transcripts/q0.js"} | {f"transcripts/c{c}-0.js" for c in range(8)} | {
        f"transcripts/c{c}-1.js" for c in range(4)
    }
    page.select_option("#tb-protocol", "Consultancy_t1")
    page.wait_for_function("() => document.querySelectorAll('.tb-row').length === 5")
    assert set(o.rows()) == {"Consultancy_t1/A_scripted-report-agent_J_scripted-report-judge"}
    page.check("#tb-wrong")
    page.wait_for_function("() => document.querySelectorAll('.tb-row').length === 4")
    page.uncheck("#tb-wrong")
    page.check("#tb-failures")
    page.wait_for_function("() => document.querySelectorAll('.tb-row').length === 1")
    assert page.locator(".tb-row").get_attribute("data-question") == "e2"
    page.uncheck("#tb-failures")
    page.select_option("#tb-protocol", "EvidenceDebate_SA")
    page.wait_for_function("() => document.querySelectorAll('.tb-row').length === 5")
    texts = page.locator(".tb-text").all_text_contents()
    assert texts and all(XSS in t for t in texts)
    assert page.evaluate("() => window.__pwned === undefined")
    page.select_option("#tb-protocol", "")
    page.fill("#tb-search", "question e3")  # a search loads every transcript file
    page.wait_for_function("() => /^rows 1–8 of 8/.test(document.getElementById('tb-status').textContent)")
    assert {page.locator(".tb-row").nth(i).get_attribute("data-question") for i in range(8)} == {"e3"}
    on_disk = {f"transcripts/{p.name}" for p in (index.parent / "transcripts").iterdir()}
    assert set(o.loaded) == on_disk
    assert o.errors == [] and o.requests == []
    o.ctx.close()


def test_browser_keeps_a_question_once_per_content_not_per_id() -> None:
    from seerbench.report._browser import Browser

    def line(qid: str, text: str) -> dict[str, Any]:
        cases = [{"short": "A", "long": "3", "value": 1.0}, {"short": "B", "long": "9", "value": 0.0}]
        return {"question_id": qid, "question": {"id": qid, "text": text, "answer_cases": cases}}

    with Browser() as b:
        x, y = b.rows(), b.rows()  # each cell's reader, as a worker process makes it
        x.add(line("q1", "How many ships?"))
        y.add(line("q1", "How many boats?"))  # the same id, another question (another run)
        y.add(line("q1", "How many ships?"))  # the same question in another cell: one entry
        y.add(line("q1", "How many boats?"))
        assert b.add_cell({"cell": "x"}, x.result()) == 0 and b.add_cell({"cell": "y"}, y.result()) == 1
        assert [json.loads(q)[1] for q in b.questions] == ["How many ships?", "How many boats?"]
        assert [list(q) for q in b._q] == [[0], [1, 0, 1]]
        # the rows as the page gets them: "[cell,question," then the row as read
        rows = json.loads(b.inline_json(False))["rows"]
        assert [r[:2] for r in rows] == [[0, 0], [1, 0], [1, 1], [1, 1]]
        assert b.size == sum(len(q) + 1 for q in b.questions) + sum(
            len(json.dumps(r, separators=(",", ":"))) + 1 for r in rows
        )


@pytest.mark.parametrize("n", [0, 1, 6, 7, 300])
def test_the_index_rows_are_the_json_of_their_numbers_in_any_blocks(n: int) -> None:
    import numpy as np

    from seerbench.report._browser import json_ints

    values = np.random.default_rng(n).integers(0, 10**6, size=n)
    want = json.dumps(values.tolist(), separators=(",", ":"))
    assert [json_ints(values, block) for block in (1, 3, 7, 1 << 16)] == [want] * 4


def test_a_symmetric_line_is_one_verdict_in_the_method_counts() -> None:
    """One run served both answer cases (NaiveJudge, a debate): its verdict is counted once by
    elicitation method, as calibration counts it; a consultancy line's two verdicts count twice."""
    from seerbench.report._browser import Browser
    from seerbench.report._data import _ReadLines

    def line(symmetric: bool) -> dict[str, Any]:
        case = {
            "case_probs": {"method": "logprobs", "probabilities": {"A": 0.7, "B": 0.3}, "parse_status": "ok"}
        }
        q = {
            "id": "q",
            "text": "?",
            "answer_cases": [{"short": "A", "value": 1.0}, {"short": "B", "value": 0.0}],
        }
        return {"question_id": "q", "question": q, "symmetric": symmetric, "answer_cases": [case, case]}

    with Browser() as b:
        for symmetric, want in ((True, 1), (False, 2)):
            read = _ReadLines(b.rows)()
            read.add(line(symmetric))
            _, methods, conf, _ = read.result()
            assert methods == {"logprobs": want} and len(conf) == want
