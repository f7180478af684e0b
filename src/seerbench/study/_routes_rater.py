"""The rater's way through a study: entry by link (Prolific, invitation, anonymous), switching
between two links in one browser, the tutorial quiz, the next task, and the end pages."""

from __future__ import annotations

import re
import secrets
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from itsdangerous import BadSignature

from seerbench.study._slots import StudyBusyError
from seerbench.study._web import COOKIE, ID_RE, STALE_PAGE, HTTPError, StudyWeb, form_handler

__all__ = ["rater_router"]


def rater_router(web: StudyWeb) -> APIRouter:
    """Entry, consent to switch, whether a page is current, tutorial, ``/next`` and the done /
    full / stopped pages."""
    st, m = web.st, web.m
    router = APIRouter()

    def enter(
        request: Request,
        external_id: str,
        source: str,
        study_p: str | None = None,
        session_p: str | None = None,
    ) -> Response:
        """Log in through a link. A browser already in the study as someone else who has not
        finished is asked first, so a second link never switches identity mid-study."""
        if request.cookies.get(COOKIE):
            try:
                cur = web.current_rater(request)
            except HTTPError:
                cur = None
            if (
                cur is not None
                and cur["external_id"] != external_id
                and cur["finished_at"] is None
                and not cur["stopped"]
                and st.has_tasks(cur["id"])
            ):
                return web.render(
                    "switch.html",
                    409,
                    current=cur["external_id"].split(":", 1)[-1],
                    new=external_id.split(":", 1)[-1],
                    target=request.url.path + (f"?{request.url.query}" if request.url.query else ""),
                    csrf=web.csrf_for(cur["id"], cur["session"]),
                )
        return web.login(st.rater_for(external_id, source, study_p, session_p, new_session=True))

    # ------------------------------------------------------------------ entry
    @router.get("/", response_class=HTMLResponse)
    def index(request: Request) -> Response:
        if request.cookies.get(COOKIE):
            return RedirectResponse("/next", status_code=303)
        return web.render(
            "error.html", 200, message="Welcome. Please open the study through your personal link."
        )

    @router.get("/start")
    def start(request: Request) -> Response:
        qp = request.query_params
        pid = qp.get("PROLIFIC_PID")
        if pid:
            if not ID_RE.match(pid):
                raise HTTPError(400, "The participant id in your link is not valid.")
            study_p, session_p = qp.get("STUDY_ID"), qp.get("SESSION_ID")
            for v in (study_p, session_p):
                if v is not None and not ID_RE.match(v):
                    raise HTTPError(400, "The study link is not valid.")
            return enter(request, f"prolific:{pid}", "prolific", study_p, session_p)
        if request.cookies.get(COOKIE):
            return RedirectResponse("/next", status_code=303)
        if m.allow_anonymous:
            return web.login(st.rater_for(f"anon:{secrets.token_urlsafe(9)}", "anonymous", new_session=True))
        raise HTTPError(403, "This study needs a personal or Prolific link.")

    @router.get("/invite/{token}")
    def invite(request: Request, token: str) -> Response:
        try:
            label = str(web.invites.loads(token))
        except BadSignature:
            raise HTTPError(403, "This invitation link is not valid.") from None
        return enter(request, f"invite:{label}", "invite")

    def switch(request: Request, form: dict[str, Any]) -> Response:
        """Leave the current session (confirmed on the page :func:`enter` showed) and follow the
        new link, which then logs in its own rater."""
        rid, sess = web.session_of(request)
        web.check_csrf(form, rid, sess)
        target = str(form.get("target", ""))
        if not re.match(r"^/(start\?|invite/)[A-Za-z0-9_.\-=&%]*$", target):
            raise HTTPError(400, "The request was malformed.")
        resp = RedirectResponse(target, status_code=303)
        resp.delete_cookie(COOKIE, httponly=True, samesite="lax", secure=web.secure)
        return resp

    router.add_api_route("/switch", form_handler(switch), methods=["POST"])

    # ------------------------------------------------------------------ is this page current?
    def session_state(request: Request, form: dict[str, Any]) -> Response:
        """``{"current": true}`` while the page that sent its CSRF token belongs to the rater's
        current session; else ``{"current": false, "message": ...}`` (what the page shows: its
        input is not saved, continue in the newest tab). Read-only: one signature check and at
        most one read of the rater's row; a page asks on focus and every little while."""
        try:
            if web.page_is_current(request, str(form.get("csrf", ""))):
                return JSONResponse({"current": True})
            return JSONResponse({"current": False, "message": STALE_PAGE})
        except HTTPError as e:  # no valid session cookie in this browser any more
            return JSONResponse({"current": False, "message": e.message})

    router.add_api_route("/session", form_handler(session_state), methods=["POST"])

    # ------------------------------------------------------------------ tutorial
    def tutorial_needed() -> bool:
        return bool(m.tutorial.quiz or m.tutorial.text)

    @router.get("/tutorial", response_class=HTMLResponse)
    def tutorial(request: Request) -> Response:
        r = web.current_rater(request)
        return web.render(
            "tutorial.html",
            tutorial=m.tutorial,
            csrf=web.csrf_for(r["id"], r["session"]),
            wrong=[],
            answers={},
        )

    def tutorial_post(request: Request, form: dict[str, Any]) -> Response:
        r = web.current_rater(request)
        web.check_csrf(form, r["id"], r["session"])
        answers: dict[int, int] = {}
        wrong = []
        for i, q in enumerate(m.tutorial.quiz):
            raw = form.get(f"q{i}")
            try:
                answers[i] = int(str(raw))
            except (TypeError, ValueError):
                answers[i] = -1
            if answers[i] != q.answer:
                wrong.append(i)
        st.record_quiz(r["id"], passed=not wrong)
        if wrong:
            return web.render(
                "tutorial.html",
                200,
                tutorial=m.tutorial,
                csrf=web.csrf_for(r["id"], r["session"]),
                wrong=wrong,
                answers=answers,
            )
        return RedirectResponse("/next", status_code=303)

    router.add_api_route("/tutorial", form_handler(tutorial_post), methods=["POST"])

    # ------------------------------------------------------------------ next task and the end
    @router.get("/next")
    def next_task(request: Request) -> Response:
        r = web.current_rater(request)
        if not r["tutorial_passed"] and tutorial_needed():
            return RedirectResponse("/tutorial", status_code=303)
        try:
            a, reason = st.next_assignment(r["id"])
        except StudyBusyError:
            # slots are open but every claim lost its race: the page reloads itself shortly
            return HTMLResponse(
                '<!doctype html><meta http-equiv="refresh" content="2;url=/next">'
                "<p>Many people are starting at once; your next task loads in a moment.</p>",
                status_code=503,
                headers={"Retry-After": "2"},
            )
        if a is not None:
            return RedirectResponse(f"/task/{a.id}", status_code=303)
        if reason == "stopped":
            return RedirectResponse("/stopped", status_code=303)
        # "done" (quota reached) earns the code; "exhausted" only after min_tasks_for_code
        return RedirectResponse("/done" if st.finish(r["id"]) else "/full", status_code=303)

    @router.get("/done", response_class=HTMLResponse)
    def done(request: Request) -> Response:
        r = web.current_rater(request)
        if r["finished_at"] is None:
            return RedirectResponse("/next", status_code=303)
        url = m.completion_url.replace("{code}", quote(m.completion_code)) if m.completion_url else None
        return web.render("done.html", code=m.completion_code, url=url)

    @router.get("/full", response_class=HTMLResponse)
    def full(request: Request) -> Response:
        """No task is left for this rater before they earned the code: ask them to return the
        study (Prolific's flow for a participant who cannot complete), with ``full_code`` if set."""
        r = web.current_rater(request)
        if r["finished_at"] is not None:
            return RedirectResponse("/done", status_code=303)
        if r["stopped"]:
            return RedirectResponse("/stopped", status_code=303)
        url = (
            m.completion_url.replace("{code}", quote(m.full_code))
            if (m.completion_url and m.full_code)
            else None
        )
        return web.render(
            "full.html",
            code=m.full_code,
            url=url,
            prolific=r["source"] == "prolific",
            removed=bool(st.removed_from(r["id"])),
            tasks=m.tasks_per_rater,
            done=st.submitted(r["id"]),
        )

    @router.get("/stopped", response_class=HTMLResponse)
    def stopped(request: Request) -> Response:
        r = web.current_rater(request)
        if not r["stopped"]:
            return RedirectResponse("/next", status_code=303)
        return web.render("stopped.html", code=m.stopped_code)

    return router
