"""Task routes: show a task, start its timer, submit it (once), and its feedback page. What a page
shows and how its answer is read is the task type's :class:`~seerbench.study._tasks.TaskPage`."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from seerbench.study._critique_tasks import TASK_PAGES  # the critique pages register themselves there
from seerbench.study._manifest import CRITIQUE_TASKS
from seerbench.study._schema import Assignment
from seerbench.study._tasks import comment_field
from seerbench.study._web import HTTPError, StudyWeb, form_handler

__all__ = ["AUTO_SUBMIT_SLACK_S", "task_router"]

#: How early (seconds, on the server's clock) a submission the page's timer sent may come before the
#: final deadline and still count as timed out (network and clock jitter).
AUTO_SUBMIT_SLACK_S = 1.0


ANSWERED_ELSEWHERE = (
    "This task was already answered in another tab or window; the answer on this page was not saved."
)


def _other_answer(form: dict[str, Any], a: Assignment) -> bool:
    """Whether ``form`` answers differently from the answer stored for ``a`` (a double click of
    the same answer is not)."""
    sent = form.get("answer")
    return sent is not None and a.answer is not None and str(sent) != a.answer


def task_router(web: StudyWeb) -> APIRouter:
    """``/task/{aid}`` and its ``/start``, ``/submit`` and ``/feedback``."""
    st, m = web.st, web.m
    page = TASK_PAGES.lookup(m.task)(m)
    router = APIRouter()

    def task_context(
        a: Assignment, error: str | None = None, *, csrf: str, state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        now = st.clock()
        if m.timed:
            if a.timer_started_at is None:
                phase = "question"
            elif a.read_deadline is not None and now < a.read_deadline:
                phase = "reading"
            else:
                phase = "finalise"
        else:
            phase = "untimed"
        remaining = None
        if phase == "reading" and a.read_deadline is not None:
            remaining = max(0.0, a.read_deadline - now)
        elif phase == "finalise" and a.final_deadline is not None:
            remaining = max(0.0, a.final_deadline - now)
        cond = m.condition(a.condition)
        return {
            **page.context(st.item(a.item_id), a, cond, phase),
            **(state or {}),
            "a": a,
            "cond": cond,
            "phase": phase,
            "remaining": None if remaining is None else math.ceil(remaining),
            # the deadlines on the server's clock (ms) and the server's time now: the page
            # estimates its clock offset and the network delay, so it counts down to the
            # server's deadline, not from the moment the page arrived
            "server_now_ms": int(now * 1000),
            "read_deadline_ms": None if a.read_deadline is None else int(a.read_deadline * 1000),
            "final_deadline_ms": None if a.final_deadline is None else int(a.final_deadline * 1000),
            "finalise_s": m.finalise_s,
            "csrf": csrf,
            "error": error,
            "progress": (a.seq + 1, m.tasks_per_rater),
        }

    def reclaimed_page() -> HTMLResponse:
        return web.render("reclaimed.html", 409)

    @router.get("/task/{aid}", response_class=HTMLResponse)
    def task(request: Request, aid: str) -> Response:
        rid, a = web.own(request, aid)
        if a.status == "submitted":
            return RedirectResponse(f"/task/{aid}/feedback", 303)
        if st.reclaimed(a):
            return reclaimed_page()
        if m.timed and a.final_deadline is not None and st.clock() > a.final_deadline + m.submit_grace_s:
            st.submit(aid, rid, {}, auto=True)
            return RedirectResponse(f"/task/{aid}/feedback", 303)
        if a.shown_at is None:
            st.mark_shown(aid)
        return web.render(page.template, **task_context(a, csrf=web.csrf_for(*web.session_of(request))))

    def task_start(request: Request, form: dict[str, Any]) -> Response:
        aid = request.path_params["aid"]
        rid, a = web.own(request, aid)
        web.check_csrf(form, *web.session_of(request))
        if st.reclaimed(a):
            return reclaimed_page()
        st.start_timer(aid, rid)
        return RedirectResponse(f"/task/{aid}", status_code=303)

    router.add_api_route("/task/{aid}/start", form_handler(task_start), methods=["POST"])

    def task_submit(request: Request, form: dict[str, Any]) -> Response:
        aid = request.path_params["aid"]
        rid, a = web.own(request, aid)
        web.check_csrf(form, *web.session_of(request))
        if a.status == "submitted":
            if _other_answer(form, a):
                # another tab answered first: this page's (different) answer is not stored, and
                # the feedback of the other answer would be about an answer this page never gave
                raise HTTPError(409, ANSWERED_ELSEWHERE)
            return RedirectResponse(f"/task/{aid}/feedback", status_code=303)
        if st.reclaimed(a):
            return reclaimed_page()
        if m.timed and a.timer_started_at is None:
            raise HTTPError(400, "Start the timer before answering.")
        now = st.clock()
        late = m.timed and a.final_deadline is not None and now > a.final_deadline + m.submit_grace_s
        # The page's timer ran out (auto=1): believed only when the server's clock agrees. The
        # page counts down from a remaining time rounded up, so its timer ends at the deadline or
        # after; an earlier auto=1 (a page whose clock ran fast, or a forged form) is an ordinary
        # submission, parsed and checked like any other.
        auto = (
            str(form.get("auto", "")) == "1"
            and m.timed
            and a.final_deadline is not None
            and now >= a.final_deadline - AUTO_SUBMIT_SLACK_S
        )
        fields: dict[str, Any] = comment_field(form)
        if not (auto or late):
            it = st.item(a.item_id)
            csrf = web.csrf_for(*web.session_of(request))
            if page.redisplay(form):
                return web.render(
                    page.template, **task_context(a, csrf=csrf, state=page.form_state(form, it, a))
                )
            fields, err = page.parse(form, it, a)
            if err:
                state = page.form_state(form, it, a)
                return web.render(page.template, 400, **task_context(a, err, csrf=csrf, state=state))
        res = st.submit(aid, rid, fields, auto=auto)
        if res is None:
            raise HTTPError(404, "Task not found.")
        if res.outcome == "reclaimed":
            return reclaimed_page()
        if res.outcome == "duplicate" and _other_answer(form, res.assignment):
            raise HTTPError(409, ANSWERED_ELSEWHERE)  # the same race, decided in the database
        return RedirectResponse(f"/task/{aid}/feedback", status_code=303)

    router.add_api_route("/task/{aid}/submit", form_handler(task_submit), methods=["POST"])

    @router.get("/task/{aid}/feedback", response_class=HTMLResponse)
    def feedback(request: Request, aid: str) -> Response:
        _r, a = web.own(request, aid)
        if a.status != "submitted" or not m.feedback or m.task in CRITIQUE_TASKS:
            return RedirectResponse("/next", status_code=303)
        it = st.item(a.item_id)
        return web.render(
            "feedback.html",
            a=a,
            item=it,
            correct_case=it.question.true_cases[0] if it.question.true_cases else None,
        )

    return router
