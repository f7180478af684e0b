"""Security: escaping, rater isolation, admin token, CSRF, server-side deadlines, no stack traces."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from seerbench.study import StudyStore, create_app, export_rows, invite_link
from seerbench.study._web import STALE_PAGE

from .conftest import XSS, FakeClock, question


def _csrf(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, html[:500]
    return m.group(1)


def _enter(store: StudyStore, pid: str) -> tuple[TestClient, str, str]:
    """A rater through the tutorial to a task page; returns (client, csrf, assignment id)."""
    c = TestClient(create_app(store))
    r = c.get(f"/start?PROLIFIC_PID={pid}&STUDY_ID=S&SESSION_ID=X")
    csrf = _csrf(r.text)
    r = c.post("/tutorial", data={"csrf": csrf, "q0": "0"})
    assert "/task/" in str(r.url)
    return c, csrf, str(r.url).rsplit("/", 1)[-1]


def test_model_and_dataset_text_is_escaped(make_study) -> None:
    q = question("x", text=f"Which? {XSS}", passage=f"Start. {XSS} she recorded only three ships. End.")
    q["answer_cases"][0]["argument"] = f"Trust me {XSS}"
    q["answer_cases"][1]["quotes"] = [XSS]
    q["answer_cases"][1]["long"] = f"Option {XSS}"
    store = make_study(questions=[q], conditions=["PSA"], ratings_per_item=1, tasks_per_rater=1)
    c, csrf, aid = _enter(store, "p1")
    r = c.post(f"/task/{aid}/start", data={"csrf": csrf})
    html = r.text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "<script>window" not in html and "<img src=x" not in html
    assert html.count("&lt;img src=x onerror=") >= 5  # question, option, passage, argument, snippet
    # CSP forbids inline script even if something slipped through
    assert "script-src 'self'" in r.headers["content-security-policy"]


def test_transcript_text_is_escaped(make_study) -> None:
    tr = {
        "question_id": "t",
        "protocol": "consultancy",
        "turns": [
            {
                "role": "agent",
                "speaker": f"bot{XSS}",
                "content": f"Say {XSS}",
                "answer_case": "A",
                "quotes": [{"text": XSS, "verified": False}],
            }
        ],
    }
    results = [{"question": question("t"), "answer_cases": [{"short": "A", "transcript": tr}]}]
    store = make_study(
        items=[{"results": "results.jsonl"}],
        extra_files={"results.jsonl": results},
        conditions=["transcript"],
        ratings_per_item=1,
        tasks_per_rater=1,
    )
    c, csrf, aid = _enter(store, "p1")
    html = c.post(f"/task/{aid}/start", data={"csrf": csrf}).text
    assert 'id="transcript"' in html
    assert "<script>window" not in html and html.count("&lt;script&gt;") == 3


def test_rater_cannot_reach_another_raters_assignment(make_study) -> None:
    store = make_study()
    ca, csrf_a, aid_a = _enter(store, "alice")
    cb, csrf_b, aid_b = _enter(store, "bob")
    assert aid_a != aid_b
    assert cb.get(f"/task/{aid_a}").status_code == 404
    assert cb.post(f"/task/{aid_a}/start", data={"csrf": csrf_b}).status_code == 404
    assert cb.post(f"/task/{aid_a}/submit", data={"csrf": csrf_b, "answer": "A"}).status_code == 404
    assert cb.get(f"/task/{aid_a}/feedback").status_code == 404
    # Alice's CSRF token does not work from Bob's session either
    assert cb.post(f"/task/{aid_b}/start", data={"csrf": csrf_a}).status_code == 403
    # no session at all, or a forged cookie
    anon = TestClient(create_app(store))
    assert anon.get(f"/task/{aid_a}").status_code == 401
    anon.cookies.set("sb_rater", "forged.value")
    assert anon.get(f"/task/{aid_a}").status_code == 401
    assert ca.get(f"/task/{aid_a}").status_code == 200
    assert export_rows(store) == []


def test_admin_routes_need_the_token(make_study) -> None:
    store = make_study()
    c = TestClient(create_app(store))
    for path in ("/admin", "/admin/export.csv", "/admin/export.jsonl", "/admin/stats.json"):
        c.cookies.clear()  # the login of the previous path
        assert c.get(path).status_code == 403
        assert c.get(path + "?token=wrong-token-wrong-token").status_code == 403
        assert c.get(path, headers={"Authorization": "Bearer nope"}).status_code == 403
        ok = c.get(f"{path}?token={store.admin_token}")
        assert ok.status_code == 200
        assert c.get(path, headers={"Authorization": f"Bearer {store.admin_token}"}).status_code == 200
    # a rater's session grants nothing on admin pages
    rc, _, _ = _enter(store, "p1")
    assert rc.get("/admin").status_code == 403


def test_csrf_is_required_on_every_form(make_study) -> None:
    store = make_study()
    c = TestClient(create_app(store))
    r = c.get("/start?PROLIFIC_PID=p1")
    assert c.post("/tutorial", data={"q0": "0"}).status_code == 403
    assert c.post("/tutorial", data={"q0": "0", "csrf": "0" * 64}).status_code == 403
    r = c.post("/tutorial", data={"q0": "0", "csrf": _csrf(r.text)})
    aid = str(r.url).rsplit("/", 1)[-1]
    assert c.post(f"/task/{aid}/start", data={}).status_code == 403
    assert (
        store.get_assignment(aid, store.rater_for("prolific:p1", "prolific")["id"]).timer_started_at is None
    )
    assert c.post(f"/task/{aid}/submit", data={"answer": "A"}).status_code == 403
    assert export_rows(store) == []


def test_late_submission_is_marked_timed_out(make_study) -> None:
    clock = FakeClock()
    store = make_study(clock=clock)
    c, csrf, aid = _enter(store, "p1")
    r = c.post(f"/task/{aid}/start", data={"csrf": csrf})
    assert 'data-remaining="90"' in r.text and 'id="material"' in r.text
    clock.advance(95)  # reading time over: the material is no longer served
    r = c.get(f"/task/{aid}")
    assert (
        'id="material"' not in r.text and 'id="finalise-note"' in r.text and 'data-remaining="25"' in r.text
    )
    clock.advance(40)  # past 90 + 30 + 3 s grace; the client claims nothing about time
    r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "A", "probability": "90"})
    assert r.status_code == 200 and "Time ran out" in r.text
    (row,) = export_rows(store)
    assert row["timed_out"] is True and row["answer"] is None and row["correct"] == 0.0
    assert row["seconds"] == 135.0


def test_the_page_timer_flag_is_checked_against_the_server_clock(make_study) -> None:
    # a form with auto=1 (the page's timer ran out) well before the server's final deadline is an
    # ordinary submission: the answer is read and checked, not stored as timed out
    clock = FakeClock()
    store = make_study(clock=clock, conditions=["P"], tasks_per_rater=2)
    c, csrf, aid = _enter(store, "p1")
    c.post(f"/task/{aid}/start", data={"csrf": csrf})
    clock.advance(30)
    r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, "auto": "1", "comment": "early"})
    assert r.status_code == 400 and "Please choose one of the answers." in r.text  # parsed like any other
    r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, "auto": "1", "answer": "B", "comment": "early"})
    assert r.status_code == 200
    (row,) = export_rows(store)
    assert (row["timed_out"], row["auto_submitted"], row["answer"], row["comment"]) == (
        False,
        False,
        "B",
        "early",
    )
    # at the final deadline (90 + 30 s) the page's submission is a time-out, and its comment is kept
    r = c.get("/next")
    aid2 = str(r.url).rsplit("/", 1)[-1]
    c.post(f"/task/{aid2}/start", data={"csrf": csrf})
    clock.advance(119.5)  # within the 1 s the page's timer may be early by
    c.post(f"/task/{aid2}/submit", data={"csrf": csrf, "auto": "1", "answer": "A", "comment": "ran out"})
    row2 = next(r for r in export_rows(store) if r["judgment_id"] == aid2)
    assert (row2["timed_out"], row2["auto_submitted"], row2["answer"], row2["comment"]) == (
        True,
        True,
        None,
        "ran out",
    )
    assert row2["correct"] == 0.0


def test_answer_validation_and_timer_required(make_study) -> None:
    store = make_study(probability="required")
    c, csrf, aid = _enter(store, "p1")
    assert (
        c.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "A", "probability": "80"}).status_code
        == 400
    )
    c.post(f"/task/{aid}/start", data={"csrf": csrf})
    r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "Z", "probability": "80"})
    assert r.status_code == 400 and "choose one of the answers" in r.text
    r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "A"})
    assert r.status_code == 400 and "how sure" in r.text
    r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "A", "probability": "30"})
    assert r.status_code == 400 and "between 50 and 100" in r.text
    r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "A", "probability": "75"})
    assert r.status_code == 200
    assert [x["probability"] for x in export_rows(store)] == [0.75]


def test_entry_links(make_study) -> None:
    store = make_study()
    c = TestClient(create_app(store))
    assert c.get("/start").status_code == 403  # no anonymous entry unless the manifest allows it
    assert c.get("/start?PROLIFIC_PID=<script>").status_code == 400
    assert c.get("/invite/not-a-valid-token").status_code == 403
    r = c.get(invite_link(store, "participant-7", "http://testserver"))
    assert r.status_code == 200 and "/tutorial" in str(r.url)
    assert store.rater_for("invite:participant-7", "invite")["source"] == "invite"


def test_errors_show_no_stack_trace(make_study, monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_study()
    c, csrf, aid = _enter(store, "p1")

    def boom(*a: object, **k: object) -> None:
        raise RuntimeError("secret internal detail /etc/passwd")

    monkeypatch.setattr(store, "start_timer", boom)
    r = c.post(f"/task/{aid}/start", data={"csrf": csrf})
    assert r.status_code == 500
    assert "Traceback" not in r.text and "secret internal detail" not in r.text
    assert "Something went wrong" in r.text
    r = c.get("/no/such/page")
    assert r.status_code == 404 and "Traceback" not in r.text


def _cookie_header(r) -> str:
    (h,) = (
        [v for k, v in r.history[0].headers.multi_items() if k == "set-cookie"]
        if r.history
        else [r.headers["set-cookie"]]
    )
    return str(h)


def test_cookie_is_secure_behind_https_and_lasts_the_study(make_study) -> None:
    # issue 14.6: 4 tasks x 1800 s assignment timeout = 7200 s (the old cookie: 7 days, never Secure)
    store = make_study()
    for base, secure in (("https://study.example.org", True), ("http://127.0.0.1:8000", False)):
        c = TestClient(create_app(store, base_url=base))
        h = _cookie_header(c.get("/start?PROLIFIC_PID=p1"))
        assert "Max-Age=7200" in h and "HttpOnly" in h and "SameSite=lax" in h
        assert ("Secure" in h) is secure
    store2 = make_study(max_duration_s=3600)
    h = _cookie_header(TestClient(create_app(store2)).get("/start?PROLIFIC_PID=p1"))
    assert "Max-Age=3600" in h


def test_cookie_expires_on_the_server_too(make_study, monkeypatch: pytest.MonkeyPatch) -> None:
    from itsdangerous.timed import TimestampSigner

    store = make_study(max_duration_s=3600)
    c, _csrf, aid = _enter(store, "p1")
    now = TimestampSigner.get_timestamp(TimestampSigner("k"))
    monkeypatch.setattr(TimestampSigner, "get_timestamp", lambda self: now + 3601)
    assert c.get(f"/task/{aid}").status_code == 401  # a kept cookie is refused after the study's length


def test_session_and_csrf_rotate_on_entry(make_study) -> None:
    # issue 14.6: each entry through the link gives a new cookie and CSRF token; the old ones stop working
    store = make_study()
    c, csrf1, aid = _enter(store, "p1")
    old_cookie = c.cookies.get("sb_rater")
    r = c.get("/start?PROLIFIC_PID=p1&STUDY_ID=S&SESSION_ID=X2")  # the same rater, again
    assert str(r.url).endswith(f"/task/{aid}")  # resumes the open task
    csrf2 = _csrf(r.text)
    assert csrf2 != csrf1 and c.cookies.get("sb_rater") != old_cookie
    assert c.post(f"/task/{aid}/start", data={"csrf": csrf1}).status_code == 403  # old token
    stale = TestClient(create_app(store))
    stale.cookies.set("sb_rater", str(old_cookie))
    old_page = stale.get(f"/task/{aid}")  # old cookie: told the page is out of date, shown nothing
    assert old_page.status_code == 403 and STALE_PAGE in html.unescape(old_page.text)
    assert 'name="csrf"' not in old_page.text and stale.get("/next").status_code == 401
    assert c.post(f"/task/{aid}/start", data={"csrf": csrf2}).status_code == 200


def test_second_link_does_not_switch_identity_mid_study(make_study) -> None:
    # issue 14.6: p1 is mid-study; opening p2's link in the same browser asks first
    store = make_study()
    c, csrf, aid = _enter(store, "p1")
    r = c.get("/start?PROLIFIC_PID=p2&STUDY_ID=S&SESSION_ID=Y")
    assert r.status_code == 409 and "already taking part" in r.text and 'id="current-id">p1<' in r.text
    assert (
        store.rater_for("prolific:p1", "prolific")["id"] and c.get(f"/task/{aid}").status_code == 200
    )  # still p1
    assert "p2" not in {x["external_id"].split(":")[-1] for x in store.progress()["raters"]}
    # a forged switch (no CSRF) does nothing; the confirmed one logs in p2
    assert c.post("/switch", data={"target": "/start?PROLIFIC_PID=p2"}).status_code == 403
    assert c.post("/switch", data={"csrf": csrf, "target": "https://evil.example/"}).status_code == 400
    target = re.search(r'name="target" value="([^"]+)"', r.text).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
    r = c.post("/switch", data={"csrf": _csrf(r.text), "target": target})
    assert r.status_code == 200 and "/tutorial" in str(r.url)
    assert c.get(f"/task/{aid}").status_code == 404  # p1's task is not p2's
    p2 = store.rater_for("prolific:p2", "prolific")
    assert p2["study_param"] == "S" and p2["session_param"] == "Y"


def test_full_study_sends_no_code(make_study) -> None:
    # issue 14.5: one slot, taken by "a"; "b" enters, gets nothing and sees "study full", no code
    store = make_study(
        questions=[question("only")],
        conditions=["P"],
        ratings_per_item=1,
        tasks_per_rater=1,
        full_code="FULL42",
    )
    ra = str(store.rater_for("prolific:a", "prolific")["id"])
    a, _ = store.next_assignment(ra)
    assert a is not None
    c = TestClient(create_app(store))
    r = c.get("/start?PROLIFIC_PID=b")
    r = c.post("/tutorial", data={"csrf": _csrf(r.text), "q0": "0"})
    assert str(r.url).endswith("/full") and "This study is full" in r.text
    assert "DONE123" not in r.text and "FULL42" in r.text and "cc=FULL42" in r.text
    assert "You submitted 0 of the 1 tasks that complete the study." in " ".join(r.text.split())
    assert c.get("/done").history[0].headers["location"] == "/next"  # no way to the code
    assert store.rater_for("prolific:b", "prolific")["finished_at"] is None
    # without a full_code: Prolific's return flow
    store2 = make_study(questions=[question("only")], conditions=["P"], ratings_per_item=1, tasks_per_rater=1)
    store2.next_assignment(str(store2.rater_for("prolific:a", "prolific")["id"]))
    c2 = TestClient(create_app(store2))
    r = c2.get("/start?PROLIFIC_PID=b")
    r = c2.post("/tutorial", data={"csrf": _csrf(r.text), "q0": "0"})
    assert "return" in r.text and 'id="return-note"' in r.text and "DONE123" not in r.text


def test_a_rater_removed_from_a_condition_is_not_told_others_took_the_tasks(make_study) -> None:
    # P takes no catch trial, PS takes seed-004 catch trials (nearly every PS task is one). The
    # P slots are all taken by others; "r" answers PS catch trials wrong until the rule (2 in PS
    # below 0.5) removes them from PS: no task is left for them, and the page says why
    from sqlalchemy import update

    from seerbench.study._storage import slot_t

    store = make_study(
        questions=[question(f"q{i}", "AB"[i % 2]) for i in range(6)],
        conditions=["P", "PS"],
        ratings_per_item=1,
        catch_rate=0.99,
        catch_min=2,
        catch_threshold=0.5,
        tasks_per_rater=6,
        catch_rule="per_condition",  # the seed's rule (stop) would stop them instead
    )
    with store.engine.begin() as c:
        c.execute(update(slot_t).where(slot_t.c.condition == "P").values(status="done"))
    c, _csrf_token, aid = _enter(store, "r")
    rid = str(store.rater_for("prolific:r", "prolific")["id"])
    while True:
        a = store.get_assignment(aid, rid)
        assert a is not None and a.condition == "PS"
        store.start_timer(a.id, rid)
        truth = store.item(a.item_id).correct
        store.submit(a.id, rid, {"answer": "B" if truth == "A" else "A"})
        nxt, reason = store.next_assignment(rid)
        if nxt is None:
            break
        aid = nxt.id
    assert reason == "exhausted" and store.removed_from(rid) == {"PS"}
    r = c.get("/next")
    assert str(r.url).endswith("/full")
    assert "No more tasks for you" in r.text and "Other participants" not in r.text
    done = store.submitted(rid)
    assert done >= 2 and f"You submitted {done} of the {store.manifest.tasks_per_rater} tasks" in " ".join(
        r.text.split()
    )
    assert "no completion code" in r.text and "DONE123" not in r.text


def _raw(port: int, head: bytes, chunks: tuple[bytes, ...] | list[bytes] = ()) -> tuple[int, int]:
    """Send a raw HTTP request (``chunks`` as a chunked body, sent until the server answers or
    closes); returns (status, body bytes the client managed to send)."""
    import socket

    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    sent = 0
    try:
        s.sendall(head)
        for ch in chunks:
            try:
                s.sendall(b"%x\r\n%s\r\n" % (len(ch), ch))
            except OSError:
                break  # the server answered and closed
            sent += len(ch)
        data = s.recv(4096)
    finally:
        s.close()
    return int(data.split(b" ", 2)[1]), sent


def test_oversized_bodies_are_refused_before_parsing(make_study, live_server) -> None:
    # issue 28.4: an unauthenticated 300 MB form POST was read and parsed before its 401 (RSS
    # 154 -> 448 MB); a 200 MB multipart body was spooled to disk
    from seerbench.study._web import MAX_BODY_BYTES

    srv = live_server(make_study())
    port = srv.port
    # a declared length over the limit: refused without reading a byte of the body
    head = b"POST /admin HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    status, _ = _raw(port, head + b"Content-Length: 300000000\r\n\r\n")
    assert status == 413
    # multipart is refused whatever its size (no page sends one)
    mp = b"POST /tutorial HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=zz\r\n"
    status, _ = _raw(port, mp + b"Content-Length: 10\r\n\r\n--zz--\r\n\r\n")
    assert status == 415
    # a streamed (chunked) body is cut off once it passes the limit, long before its end
    chunked = head.replace(b"/admin", b"/tutorial") + b"Transfer-Encoding: chunked\r\n\r\n"
    status, sent = _raw(port, chunked, [b"a=" + b"x" * 65534] * 3200)  # 200 MB offered
    assert status == 413 and sent < 100 * MAX_BODY_BYTES
    # an ordinary form still works
    c = TestClient(create_app(srv.store))
    r = c.get("/start?PROLIFIC_PID=small")
    assert c.post("/tutorial", data={"csrf": _csrf(r.text), "q0": "0"}).status_code == 200


def test_admin_token_stays_out_of_urls(make_study) -> None:
    # issue 28.6: the admin token travelled in every link of the admin page (and so into access
    # logs, history and referrers)
    store = make_study()
    c = TestClient(create_app(store))
    r = c.get("/admin")
    assert r.status_code == 403 and 'action="/admin/login"' in r.text
    assert c.post("/admin/login", data={"token": "wrong" * 4}).status_code == 403
    r = c.post("/admin/login", data={"token": store.admin_token})
    assert r.status_code == 200 and str(r.url).endswith("/admin")
    assert store.admin_token not in r.text and "?token=" not in r.text
    assert c.get("/admin/export.jsonl").status_code == 200  # the login cookie is enough
    # an old link with ?token= logs in and moves to the bare address
    c2 = TestClient(create_app(store))
    r = c2.get(f"/admin?token={store.admin_token}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/admin"
    # scripts keep the Bearer header; no cookie, no token: refused
    bare = TestClient(create_app(store))
    assert bare.get("/admin/export.csv").status_code == 403
    auth = {"Authorization": f"Bearer {store.admin_token}"}
    assert bare.get("/admin/export.csv", headers=auth).status_code == 200


def test_ids_never_look_like_spreadsheet_formulas() -> None:
    from seerbench.study._schema import _new_id

    ids = [_new_id() for _ in range(5000)]
    assert not [i for i in ids if i[0] in "-=+@"] and len(set(ids)) == 5000


def test_task_page_counts_down_to_the_servers_deadline(make_study) -> None:
    # issue 28.5: the page counted down from when it arrived, so with 2 s of latency each way an
    # answer clicked at "1 s left" reached the server after deadline + grace. The page now gets
    # the deadlines on the server's clock and the server's time, to correct its clock and delay.
    clock = FakeClock()
    store = make_study(clock=clock, conditions=["P"], tasks_per_rater=1)  # 90 s + 30 s to finalise
    c, csrf, aid = _enter(store, "p1")
    started = clock()
    c.post(f"/task/{aid}/start", data={"csrf": csrf})
    clock.advance(10)
    html = c.get(f"/task/{aid}").text
    attrs = dict(re.findall(r'data-(server-now|read-deadline|final-deadline|remaining)="([^"]*)"', html))
    assert int(attrs["server-now"]) == int((started + 10) * 1000)
    assert int(attrs["read-deadline"]) == int((started + 90) * 1000)
    assert int(attrs["final-deadline"]) == int((started + 120) * 1000)
    assert attrs["remaining"] == "80"  # what the page shows without its script


def test_a_second_tab_is_told_what_happened(make_study) -> None:
    # issue 28.5: opening the link again ended the first tab's session ("This form has expired",
    # answer lost, no word why); a tab whose answer was discarded was told "Correct." for the
    # other tab's answer
    store = make_study(time_limit_s=None, conditions=["P"], tasks_per_rater=2)
    c, csrf1, aid = _enter(store, "p1")
    r = c.get("/start?PROLIFIC_PID=p1&STUDY_ID=S&SESSION_ID=X2")  # the link again, a second tab
    assert str(r.url).endswith(f"/task/{aid}")  # the same task is kept
    csrf2 = _csrf(r.text)
    old_tab = c.post(f"/task/{aid}/submit", data={"csrf": csrf1, "answer": "A"})
    assert old_tab.status_code == 403 and "opened again" in old_tab.text and "still open" in old_tab.text
    a = store.get_assignment(aid, str(store.rater_for("prolific:p1", "prolific")["id"]))
    assert a is not None
    truth = store.item(a.item_id).correct
    wrong = "B" if truth == "A" else "A"
    assert c.post(f"/task/{aid}/submit", data={"csrf": csrf2, "answer": truth}).status_code == 200
    # the same answer again (a double click) shows its feedback; another answer is refused, not
    # told "Correct." about the stored one
    assert "Correct." in c.post(f"/task/{aid}/submit", data={"csrf": csrf2, "answer": truth}).text
    other = c.post(f"/task/{aid}/submit", data={"csrf": csrf2, "answer": wrong})
    assert other.status_code == 409 and "already answered in another tab" in other.text
    assert [row["answer"] for row in export_rows(store)] == [truth]


def test_a_page_left_open_in_another_browser_is_told_it_is_out_of_date(make_study) -> None:
    # new-user trial: the link opened in a second browser (its own cookie jar); the first
    # browser's page asked POST /session and was told "out of date", but its submit (and its
    # timer start, and a reload) said 404 "Task not found." instead of the documented message
    store = make_study(time_limit_s=None, conditions=["P"], tasks_per_rater=2)
    first, csrf1, aid = _enter(store, "p1")
    second = TestClient(create_app(store))
    r = second.get("/start?PROLIFIC_PID=p1&STUDY_ID=S&SESSION_ID=X2")
    assert str(r.url).endswith(f"/task/{aid}")  # the same task, kept
    assert first.post("/session", data={"csrf": csrf1}).json() == {"current": False, "message": STALE_PAGE}
    for resp in (
        first.post(f"/task/{aid}/submit", data={"csrf": csrf1, "answer": "A"}),
        first.post(f"/task/{aid}/start", data={"csrf": csrf1}),
        first.get(f"/task/{aid}"),
        first.get(f"/task/{aid}/feedback"),
    ):
        assert resp.status_code == 403 and STALE_PAGE in html.unescape(resp.text), resp.text[:300]
        assert "Task not found" not in resp.text and 'name="csrf"' not in resp.text  # nothing shown
    a = store.get_assignment(aid, str(store.rater_for("prolific:p1", "prolific")["id"]))
    assert a is not None and a.status == "active" and export_rows(store) == []  # the task stays open
    # a task that is not this rater's, or no task at all, is still "not found" (not probeable)
    _other, _c, aid_other = _enter(store, "p2")
    assert first.get(f"/task/{aid_other}").status_code == 404
    assert first.post("/task/nosuchtask/submit", data={"csrf": csrf1}).status_code == 404
    # a forged cookie is refused as before; the newest browser answers the task
    forged = TestClient(create_app(store))
    forged.cookies.set("sb_rater", "forged.value")
    assert forged.get(f"/task/{aid}").status_code == 401
    csrf2 = _csrf(r.text)
    assert second.post(f"/task/{aid}/submit", data={"csrf": csrf2, "answer": "A"}).status_code == 200


def test_a_page_asks_whether_its_session_is_current(make_study) -> None:
    # issue 28.5: a tab asks POST /session with its CSRF token (on focus and every 20 s) and is
    # told at once when the study link was opened again, in this browser or another one
    store = make_study(time_limit_s=None, conditions=["P"], tasks_per_rater=2)
    c, csrf1, aid = _enter(store, "p1")
    rid = str(store.rater_for("prolific:p1", "prolific")["id"])
    session_before = store.rater(rid)["session"]
    page = c.get(f"/task/{aid}")
    assert f'data-session-csrf="{csrf1}"' in page.text  # the page knows the token it sends
    r = c.post("/session", data={"csrf": csrf1})
    assert r.status_code == 200 and r.json() == {"current": True}
    assert r.headers["content-type"] == "application/json" and r.headers["cache-control"] == "no-store"
    assert store.rater(rid)["session"] == session_before  # asking changes nothing

    # the link again in this browser: the new cookie replaces the old one, the old page is stale
    csrf2 = _csrf(c.get("/start?PROLIFIC_PID=p1&STUDY_ID=S&SESSION_ID=X2").text)
    stale = c.post("/session", data={"csrf": csrf1}).json()
    assert stale["current"] is False
    assert "not saved" in stale["message"] and "Continue in the newest tab" in stale["message"]
    # what the old page's submit then says is the same message
    refused = c.post(f"/task/{aid}/submit", data={"csrf": csrf1, "answer": "A"})
    assert refused.status_code == 403 and stale["message"] in refused.text
    assert c.post("/session", data={"csrf": csrf2}).json() == {"current": True}
    assert c.post("/session", data={"csrf": "0" * 64}).json()["current"] is False  # a made-up token
    assert c.post("/session", data={}).json()["current"] is False

    # the link in another browser: this browser's cookie is of an ended session
    elsewhere = TestClient(create_app(store))
    csrf3 = _csrf(elsewhere.get("/start?PROLIFIC_PID=p1&STUDY_ID=S&SESSION_ID=X3").text)
    assert c.post("/session", data={"csrf": csrf2}).json() == {"current": False, "message": stale["message"]}
    assert elsewhere.post("/session", data={"csrf": csrf3}).json() == {"current": True}

    # no session cookie: told to open the link, nothing about anyone (p1's token is of no use)
    nobody = TestClient(create_app(store))
    anon = nobody.post("/session", data={"csrf": csrf3})
    assert anon.status_code == 200 and anon.json()["current"] is False
    assert anon.json()["message"] == "Please open the study through your personal link."
    a = store.get_assignment(aid, rid)
    assert a is not None and a.status == "active" and export_rows(store) == []  # the task is kept
