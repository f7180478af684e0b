"""The task page over HTTP: overlapping snippets (issue 14.10) and a reclaimed task (issue 14.11)."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from seerbench.study import create_app, export_rows
from seerbench.study._server import segment_passage

from .conftest import FakeClock, question


def _render(tokens: list[dict[str, Any]]) -> str:
    """Tokens as a compact string: <id#*> opens a span (# first piece, * shared), </> closes it."""
    out = ""
    for t in tokens:
        if "text" in t:
            out += t["text"]
        elif "open" in t:
            o = t["open"]
            out += f"<{o['snip']}{'#' if o['id'] else ''}{'*' if o['shared'] else ''}>"
        else:
            out += "</>"
    return out


def test_segment_passage_nests_and_splits_overlapping_snippets() -> None:
    p = "0123456789"
    # B's snippet inside A's: a span inside a span, shared
    tokens, anchors = segment_passage(p, [["2345"], ["34"]])
    assert _render(tokens) == "01<snip-0-0#>2<snip-1-0#*>34</>5</>6789"
    assert anchors == {(0, 0): "snip-0-0", (1, 0): "snip-1-0"}
    # crossing: B starts inside A and ends after it: B's first piece (with the id) is inside A,
    # its second piece follows A
    tokens, _ = segment_passage(p, [["2345"], ["4567"]])
    assert _render(tokens) == "01<snip-0-0#>23<snip-1-0#*>45</></><snip-1-0>67</>89"
    # the same snippet for both options: both linked
    tokens, anchors = segment_passage(p, [["23"], ["23"]])
    assert _render(tokens) == "01<snip-0-0#><snip-1-0#*>23</></>456789"
    assert set(anchors) == {(0, 0), (1, 0)}
    # A's snippet inside B's (the longer one is the outer span, whatever the option)
    tokens, _ = segment_passage(p, [["45"], ["3456"]])
    assert _render(tokens) == "012<snip-1-0#>3<snip-0-0#*>45</>6</>789"
    # two snippets of one option overlapping: not shared
    tokens, _ = segment_passage(p, [["1234", "23"], []])
    assert _render(tokens) == "0<snip-0-0#>1<snip-0-1#>23</>4</>56789"
    # a snippet not in the passage stays unlinked; quotes and spaces around a snippet are ignored
    tokens, anchors = segment_passage(p, [["xyz"], [' "89" ']])
    assert _render(tokens) == "01234567<snip-1-0#>89</>" and anchors == {(1, 0): "snip-1-0"}


def _csrf(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, html[:500]
    return m.group(1)


def _enter(store, pid: str) -> tuple[TestClient, str, str]:
    c = TestClient(create_app(store))
    r = c.get(f"/start?PROLIFIC_PID={pid}")
    csrf = _csrf(r.text)
    r = c.post("/tutorial", data={"csrf": csrf, "q0": "0"})
    assert "/task/" in str(r.url), r.text[:300]
    return c, csrf, str(r.url).rsplit("/", 1)[-1]


def test_overlapping_snippets_are_all_links_into_the_passage(make_study) -> None:
    q = question("q0", "A")
    q["answer_cases"][0]["quotes"] = ["she recorded only three ships, all of them fishing boats"]
    q["answer_cases"][1]["quotes"] = ["three ships"]  # inside A's snippet, as in 419 real questions
    store = make_study(questions=[q], conditions=["PSA"], ratings_per_item=1, tasks_per_rater=1)
    c, csrf, aid = _enter(store, "ov")
    html = c.post(f"/task/{aid}/start", data={"csrf": csrf}).text
    links = re.findall(r'<a href="#(snip-\d-\d)" class="snippet-link opt-(\d)"', html)
    assert links == [("snip-0-0", "0"), ("snip-1-0", "1")]
    assert 'class="snippet-text"' not in html  # no snippet left unlinked
    passage = html[html.index('class="passage-text"') :]
    assert (
        '<span class="snip opt-0" id="snip-0-0" data-snip="snip-0-0" data-option="0">she recorded only '
        '<span class="snip opt-1 shared" id="snip-1-0" data-snip="snip-1-0" data-option="1">three '
        "ships</span>, all of them fishing boats</span>"
    ) in passage


def test_reclaimed_task_says_so(make_study) -> None:
    # one slot; rater A opens it and never starts the timer; after assignment_timeout_s rater B
    # gets the slot. A's page, "start timer" and submit all say the task expired and went to
    # someone else (not "Start the timer before answering"), and nothing of A's is stored.
    clock = FakeClock()
    store = make_study(
        questions=[question("only", "A")],
        conditions=["P"],
        ratings_per_item=1,
        tasks_per_rater=1,
        clock=clock,
        completion_url=None,
    )
    ca, csrf_a, aid_a = _enter(store, "a")
    clock.advance(store.manifest.assignment_timeout_s + 1)
    cb, csrf_b, aid_b = _enter(store, "b")
    assert aid_b != aid_a

    r = ca.post(f"/task/{aid_a}/submit", data={"csrf": csrf_a, "answer": "A"})
    assert r.status_code == 409
    assert "This task has expired" in r.text and "given to" in r.text and "Start the timer" not in r.text
    assert 'href="/next" id="continue"' in r.text
    r = ca.get(f"/task/{aid_a}")
    assert r.status_code == 409 and "This task has expired" in r.text and "start-timer" not in r.text
    r = ca.post(f"/task/{aid_a}/start", data={"csrf": csrf_a})
    assert r.status_code == 409 and "This task has expired" in r.text
    # continuing: nothing left for A, who earned no code
    assert ca.get("/next").url.path == "/full"

    cb.post(f"/task/{aid_b}/start", data={"csrf": csrf_b})
    assert cb.post(f"/task/{aid_b}/submit", data={"csrf": csrf_b, "answer": "A"}).status_code == 200
    rows = export_rows(store)
    assert [(r["rater_external_id"], r["judgment_id"], r["answer"], r["correct"]) for r in rows] == [
        ("prolific:b", aid_b, "A", 1.0)
    ]


def test_reclaim_needs_another_rater(make_study) -> None:
    # an expired task nobody else took is still the rater's: the page shows it as usual
    clock = FakeClock()
    store = make_study(
        questions=[question("only", "A")],
        conditions=["P"],
        ratings_per_item=1,
        tasks_per_rater=1,
        clock=clock,
    )
    c, csrf, aid = _enter(store, "a")
    clock.advance(store.manifest.assignment_timeout_s + 1)
    r = c.get(f"/task/{aid}")
    assert r.status_code == 200 and 'id="start-timer"' in r.text
    r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "A"})
    assert r.status_code == 400 and "Start the timer before answering." in r.text
