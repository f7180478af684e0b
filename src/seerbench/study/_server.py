"""The rater-facing and admin web app: FastAPI with server-rendered Jinja2 pages.

Everything works without JavaScript except the visible countdown, the automatic submission when
the finalise window ends, and snippet highlighting (a snippet is still a plain ``#anchor`` link that
scrolls to the passage, and CSS ``:target`` marks it). The server never trusts the client about
time: deadlines are stored when the timer starts and checked against the server clock.
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import json
import logging
import math
import re
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from itsdangerous import BadSignature, URLSafeSerializer, URLSafeTimedSerializer
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from seerbench.study._items import StudyItem
from seerbench.study._results import EXPORT_FIELDS, _csv_cell, export_rows, study_stats
from seerbench.study._storage import Assignment, StudyStore

__all__ = ["app_from_env", "create_app", "invite_link"]

log = logging.getLogger("seerbench.study")

_HERE = Path(__file__).parent
_COOKIE = "sb_rater"
_ID_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")

FACTUALITY_RATINGS: tuple[tuple[str, str], ...] = (
    ("accurate", "Accurate"),
    ("inaccurate", "Inaccurate"),
    ("unsupported", "Unsupported"),
    ("disputed", "Disputed"),
    ("no_claim", "Doesn't require assessment"),
    ("cant_assess", "Can't confidently assess"),
)
CONFIDENCE_LEVELS = ("Not at all confident", "Slightly confident", "Fairly confident", "Very confident")
HELPFULNESS_LEVELS = ("Not helpful", "Somewhat helpful", "Very helpful")


class _HTTPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message


def invite_link(store: StudyStore, label: str, base_url: str) -> str:
    """A signed invitation link for a rater called ``label`` (an email, a participant number)."""
    token = URLSafeSerializer(store.secret, salt="invite").dumps(label)
    return f"{base_url.rstrip('/')}/invite/{token}"


def segment_passage(passage: str, quotes: list[list[str]]) -> tuple[list[dict[str, Any]], dict[tuple[int, int], str]]:
    """Mark the snippets in ``passage``, overlapping ones included.

    ``quotes[i]`` are option i's snippets. Each snippet found verbatim (its first occurrence)
    becomes a ``<span>`` with an anchor id; returns the passage as a flat list of tokens to render
    in order (``{"text": ...}``, ``{"open": {...}}`` for a ``<span>``, ``{"close": True}`` for its
    ``</span>``) and a map (option, quote index) -> anchor id. Snippets not in the passage stay
    unlinked.

    Snippets may overlap (in the single_turn_debate data one option's snippet often lies inside
    the other's): a snippet inside another is a ``<span>`` inside its ``<span>``, and one that
    crosses another's end is split into pieces, the first carrying the anchor id, every piece the
    snippet's ``data-snip``. A piece inside another option's snippet is ``shared`` (shown in both
    colours).
    """
    found: list[tuple[int, int, int, int]] = []
    for oi, qs in enumerate(quotes):
        for qi, q in enumerate(qs):
            text = q.strip().strip("\"'“”").strip()
            if not text:
                continue
            start = passage.find(text)
            if start >= 0:
                found.append((start, start + len(text), oi, qi))
    # outer before inner: earlier start first, then the longer one
    found.sort(key=lambda f: (f[0], -f[1], f[2], f[3]))
    anchors = {(oi, qi): f"snip-{oi}-{qi}" for _, _, oi, qi in found}
    tokens: list[dict[str, Any]] = []
    stack: list[tuple[int, int, int, int]] = []  # open spans, outermost first
    opened: set[tuple[int, int]] = set()  # snippets whose first piece (with the id) was opened

    def open_span(f: tuple[int, int, int, int]) -> None:
        _, _, oi, qi = f
        sid = anchors[(oi, qi)]
        first = (oi, qi) not in opened
        opened.add((oi, qi))
        shared = any(o[2] != oi for o in stack)
        tokens.append({"open": {"id": sid if first else None, "snip": sid, "option": oi, "shared": shared}})
        stack.append(f)

    bounds = sorted({b for f in found for b in f[:2]} | {0, len(passage)})
    starts = iter(found)
    nxt = next(starts, None)
    for pos, stop in zip(bounds, [*bounds[1:], None], strict=True):
        ending = [i for i, f in enumerate(stack) if f[1] == pos]
        if ending:
            # close down to the outermost span that ends here; reopen those that go on
            cut = ending[0]
            going_on = [f for f in stack[cut:] if f[1] > pos]
            tokens.extend({"close": True} for _ in stack[cut:])
            del stack[cut:]
            for f in going_on:
                open_span(f)
        while nxt is not None and nxt[0] == pos:
            open_span(nxt)
            nxt = next(starts, None)
        if stop is not None and stop > pos:
            tokens.append({"text": passage[pos:stop]})
    tokens.extend({"close": True} for _ in stack)
    return tokens, anchors


def _json_safe(v: Any) -> Any:
    """NaN and infinities become null: strict JSON has no spelling for them."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _json_safe(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_safe(x) for x in v]
    return v


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text or "") if p.strip()]


_OOPS = "Something went wrong on our side. Please try again."
_SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"frame-ancestors 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class _SecurityHeaders:
    """Pure ASGI middleware (cheaper than ``BaseHTTPMiddleware``): security headers on every
    response, and an HTML error page instead of any stack trace."""

    def __init__(self, app: ASGIApp, error_page: Callable[[], Response]) -> None:
        self.app = app
        self.error_page = error_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (k, v) for k, v in _SECURITY_HEADERS if k not in names
                ]
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:  # never show a stack trace; the server log keeps it
            log.exception("unhandled error on %s", scope.get("path"))
            if started:
                raise
            await self.error_page()(scope, receive, send_with_headers)


def create_app(store: StudyStore | str | Path, *, base_url: str = "") -> FastAPI:
    """The study web app over ``store`` (a :class:`StudyStore` or a database path/URL).

    ``base_url`` is the address raters use; when it is ``https://...`` the session cookie is
    ``Secure`` (sent over https only)."""
    if not isinstance(store, StudyStore):
        store = StudyStore(store)
    st: StudyStore = store
    m = st.manifest
    secure = base_url.lower().startswith("https://")
    # The session cookie holds (rater id, session id), signed and dated: it expires with the
    # study's length, and a new entry through a link gives a new session id, ending the old one.
    signer = URLSafeTimedSerializer(st.secret, salt="rater-session")
    invites = URLSafeSerializer(st.secret, salt="invite")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_HERE / "templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,  # templates are package files: no stat() of each on every render
    )
    env.filters["paragraphs"] = _paragraphs
    env.filters["tojson_attr"] = lambda v: json.dumps(v)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # The study's items, the app and its libraries live as long as the server: keep them out
        # of the garbage collector's way. Otherwise every full collection walks them all (about
        # 100 ms with the 1,472 single_turn_debate questions), stalling every request in flight.
        gc.collect()
        gc.freeze()
        yield
        gc.unfreeze()

    app = FastAPI(
        title=f"seerbench study: {m.name}", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    app.state.store = st
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")

    def render(name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        ctx.setdefault("study", m)
        ctx.setdefault("csrf", "")
        return HTMLResponse(env.get_template(name).render(**ctx), status_code=status)

    def csrf_for(rater_id: str, session: str) -> str:
        return hmac.new(st.secret.encode(), f"csrf:{rater_id}:{session}".encode(), hashlib.sha256).hexdigest()

    def session_of(request: Request) -> tuple[str, str]:
        """(rater id, session id) from the signed session cookie (no DB read; the session id is
        checked against the rater's current one where the rater or a task is read)."""
        known = getattr(request.state, "sb_session", None)  # checked once a request
        if known is not None:
            return known
        raw = request.cookies.get(_COOKIE)
        if not raw:
            raise _HTTPError(401, "Please open the study through your personal link.")
        try:
            rid, sess = signer.loads(raw, max_age=int(m.session_s))
        except (BadSignature, TypeError, ValueError):
            raise _HTTPError(401, "Your session is not valid; please open your study link again.") from None
        request.state.sb_session = (str(rid), str(sess))
        return request.state.sb_session

    def current_rater(request: Request) -> dict[str, Any]:
        rid, sess = session_of(request)
        r = st.rater(rid)
        if r is None or r["session"] is None or not hmac.compare_digest(str(r["session"]), sess):
            raise _HTTPError(401, "Your session is not valid; please open your study link again.")
        return r

    def check_csrf(form: dict[str, Any], rater_id: str, session: str) -> None:
        token = str(form.get("csrf", ""))
        if not hmac.compare_digest(token, csrf_for(rater_id, session)):
            raise _HTTPError(403, "This form has expired or did not come from this site. Go back and reload.")

    def login(rater: dict[str, Any]) -> RedirectResponse:
        resp = RedirectResponse("/next", status_code=303)
        resp.set_cookie(
            _COOKIE,
            signer.dumps([rater["id"], rater["session"]]),
            httponly=True,
            samesite="lax",
            secure=secure,
            max_age=int(m.session_s),
        )
        return resp

    def enter(request: Request, external_id: str, source: str, study_p: str | None = None, session_p: str | None = None) -> Response:
        """Log in through a link. A browser already in the study as someone else who has not
        finished is asked first, so a second link never switches identity mid-study."""
        if request.cookies.get(_COOKIE):
            try:
                cur = current_rater(request)
            except _HTTPError:
                cur = None
            if (
                cur is not None
                and cur["external_id"] != external_id
                and cur["finished_at"] is None
                and not cur["stopped"]
                and st.has_tasks(cur["id"])
            ):
                return render(
                    "switch.html",
                    409,
                    current=cur["external_id"].split(":", 1)[-1],
                    new=external_id.split(":", 1)[-1],
                    target=request.url.path + (f"?{request.url.query}" if request.url.query else ""),
                    csrf=csrf_for(cur["id"], cur["session"]),
                )
        return login(st.rater_for(external_id, source, study_p, session_p, new_session=True))

    app.add_middleware(_SecurityHeaders, error_page=lambda: render("error.html", 500, message=_OOPS))

    @app.exception_handler(_HTTPError)
    async def _http_error(request: Request, exc: _HTTPError) -> Response:
        return render("error.html", exc.status, message=exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def _starlette_error(request: Request, exc: StarletteHTTPException) -> Response:
        msg = "Page not found." if exc.status_code == 404 else "The request could not be handled."
        return render("error.html", exc.status_code, message=msg)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
        return render("error.html", 400, message="The request was malformed.")

    # ------------------------------------------------------------------ entry
    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> Response:
        if request.cookies.get(_COOKIE):
            return RedirectResponse("/next", status_code=303)
        return render("error.html", 200, message="Welcome. Please open the study through your personal link.")

    @app.get("/start")
    def start(request: Request) -> Response:
        qp = request.query_params
        pid = qp.get("PROLIFIC_PID")
        if pid:
            if not _ID_RE.match(pid):
                raise _HTTPError(400, "The participant id in your link is not valid.")
            study_p, session_p = qp.get("STUDY_ID"), qp.get("SESSION_ID")
            for v in (study_p, session_p):
                if v is not None and not _ID_RE.match(v):
                    raise _HTTPError(400, "The study link is not valid.")
            return enter(request, f"prolific:{pid}", "prolific", study_p, session_p)
        if request.cookies.get(_COOKIE):
            return RedirectResponse("/next", status_code=303)
        if m.allow_anonymous:
            return login(st.rater_for(f"anon:{secrets.token_urlsafe(9)}", "anonymous", new_session=True))
        raise _HTTPError(403, "This study needs a personal or Prolific link.")

    @app.get("/invite/{token}")
    def invite(request: Request, token: str) -> Response:
        try:
            label = str(invites.loads(token))
        except BadSignature:
            raise _HTTPError(403, "This invitation link is not valid.") from None
        return enter(request, f"invite:{label}", "invite")

    @app.post("/switch")
    async def switch(request: Request) -> Response:
        form = dict(await request.form())
        return await run_in_threadpool(_switch, request, form)

    def _switch(request: Request, form: dict[str, Any]) -> Response:
        """Leave the current session (confirmed on the page :func:`enter` showed) and follow the
        new link, which then logs in its own rater."""
        rid, sess = session_of(request)
        check_csrf(form, rid, sess)
        target = str(form.get("target", ""))
        if not re.match(r"^/(start\?|invite/)[A-Za-z0-9_.\-=&%]*$", target):
            raise _HTTPError(400, "The request was malformed.")
        resp = RedirectResponse(target, status_code=303)
        resp.delete_cookie(_COOKIE, httponly=True, samesite="lax", secure=secure)
        return resp

    # ------------------------------------------------------------------ tutorial
    def _tutorial_needed() -> bool:
        return bool(m.tutorial.quiz or m.tutorial.text)

    @app.get("/tutorial", response_class=HTMLResponse)
    def tutorial(request: Request) -> Response:
        r = current_rater(request)
        return render("tutorial.html", tutorial=m.tutorial, csrf=csrf_for(r["id"], r["session"]), wrong=[], answers={})

    @app.post("/tutorial")
    async def tutorial_post(request: Request) -> Response:
        form = dict(await request.form())
        return await run_in_threadpool(_tutorial_post, request, form)

    def _tutorial_post(request: Request, form: dict[str, Any]) -> Response:
        r = current_rater(request)
        check_csrf(form, r["id"], r["session"])
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
            return render(
                "tutorial.html", 200, tutorial=m.tutorial, csrf=csrf_for(r["id"], r["session"]), wrong=wrong, answers=answers
            )
        return RedirectResponse("/next", status_code=303)

    # ------------------------------------------------------------------ tasks
    @app.get("/next")
    def next_task(request: Request) -> Response:
        r = current_rater(request)
        if not r["tutorial_passed"] and _tutorial_needed():
            return RedirectResponse("/tutorial", status_code=303)
        a, reason = st.next_assignment(r["id"])
        if a is not None:
            return RedirectResponse(f"/task/{a.id}", status_code=303)
        if reason == "stopped":
            return RedirectResponse("/stopped", status_code=303)
        # "done" (quota reached) earns the code; "exhausted" only after min_tasks_for_code
        return RedirectResponse("/done" if st.finish(r["id"]) else "/full", status_code=303)

    def own(request: Request, aid: str) -> tuple[str, Assignment]:
        rid, sess = session_of(request)
        a = st.get_assignment(aid, rid, sess) if _ID_RE.match(aid) else None
        if a is None:
            # Same answer whether the task exists or belongs to someone else: ids are not probeable.
            raise _HTTPError(404, "Task not found.")
        return rid, a

    def task_context(rid: str, a: Assignment, error: str | None = None, *, csrf: str) -> dict[str, Any]:
        it: StudyItem = st.item(a.item_id)
        cond = m.condition(a.condition)
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
        show_material = phase in ("reading", "untimed")
        q = it.question
        options = [{"short": c.short, "long": c.long, "index": i} for i, c in enumerate(q.answer_cases)]
        passage_segments: list[dict[str, Any]] = []
        anchors: dict[tuple[int, int], str] = {}
        shows = set(cond.show)
        if show_material and "passage" in shows and q.source_text:
            quotes = [list(c.quotes) if "snippets" in shows else [] for c in q.answer_cases]
            passage_segments, anchors = segment_passage(q.source_text, quotes)
        per_option = []
        for i, c in enumerate(q.answer_cases):
            per_option.append(
                {
                    "short": c.short,
                    "long": c.long,
                    "index": i,
                    "argument": c.argument if "arguments" in shows else None,
                    "snippets": [
                        {"text": s, "anchor": anchors.get((i, j))} for j, s in enumerate(c.quotes)
                    ]
                    if "snippets" in shows
                    else [],
                }
            )
        transcript = it.transcript.turns if (it.transcript is not None and "transcript" in shows) else []
        assistance = {}
        if m.task == "factuality":
            data = q.metadata.get("assistance") or {}
            assistance = {k: data[k] for k in cond.assistance if k in data}
        remaining = None
        if phase == "reading" and a.read_deadline is not None:
            remaining = max(0.0, a.read_deadline - now)
        elif phase == "finalise" and a.final_deadline is not None:
            remaining = max(0.0, a.final_deadline - now)
        expert_case = None
        if m.task == "expert_routing" and a.expert_option is not None:
            expert_case = q.case(a.expert_option)
        return {
            "a": a,
            "q": q,
            "cond": cond,
            "phase": phase,
            "show_material": show_material,
            "options": options,
            "per_option": per_option,
            "passage_segments": passage_segments,
            "transcript": transcript,
            "assistance": assistance,
            "remaining": None if remaining is None else math.ceil(remaining),
            "finalise_s": m.finalise_s,
            "csrf": csrf,
            "error": error,
            "expert_case": expert_case,
            "ratings": FACTUALITY_RATINGS,
            "confidence_levels": CONFIDENCE_LEVELS,
            "helpfulness_levels": HELPFULNESS_LEVELS,
            "progress": (a.seq + 1, m.tasks_per_rater),
        }

    def reclaimed_page() -> HTMLResponse:
        return render("reclaimed.html", 409)

    @app.get("/task/{aid}", response_class=HTMLResponse)
    def task(request: Request, aid: str) -> Response:
        rid, a = own(request, aid)
        if a.status == "submitted":
            return RedirectResponse(f"/task/{aid}/feedback", 303)
        if st.reclaimed(a):
            return reclaimed_page()
        if m.timed and a.final_deadline is not None and st.clock() > a.final_deadline + m.submit_grace_s:
            st.submit(aid, rid, {}, auto=True)
            return RedirectResponse(f"/task/{aid}/feedback", 303)
        if a.shown_at is None:
            st.mark_shown(aid)
        return render("task.html", **task_context(rid, a, csrf=csrf_for(*session_of(request))))

    @app.post("/task/{aid}/start")
    async def task_start(request: Request, aid: str) -> Response:
        form = dict(await request.form())
        return await run_in_threadpool(_task_start, request, aid, form)

    def _task_start(request: Request, aid: str, form: dict[str, Any]) -> Response:
        rid, a = own(request, aid)
        check_csrf(form, *session_of(request))
        if st.reclaimed(a):
            return reclaimed_page()
        st.start_timer(aid, rid)
        return RedirectResponse(f"/task/{aid}", status_code=303)

    def parse_answer(form: dict[str, Any], a: Assignment) -> tuple[dict[str, Any], str | None]:
        it = st.item(a.item_id)
        out: dict[str, Any] = {}
        comment = str(form.get("comment") or "").strip()
        out["comment"] = comment[:5000] or None
        if m.task == "two_option":
            ans = form.get("answer")
            if ans not in it.question.shorts:
                return out, "Please choose one of the answers."
            out["answer"] = ans
            raw = str(form.get("probability") or "").strip()
            if m.probability != "off" and raw:
                try:
                    p = float(raw)
                except ValueError:
                    return out, "The probability must be a number between 50 and 100."
                if not 50 <= p <= 100 or math.isnan(p):
                    return out, "The probability must be a number between 50 and 100."
                out["probability"] = p / 100.0
            elif m.probability == "required":
                return out, "Please say how sure you are (50 to 100)."
        elif m.task == "expert_routing":
            ans = form.get("answer")
            if ans not in ("yes", "no"):
                return out, "Please answer yes or no."
            out["answer"] = ans
        else:
            if form.get("action") == "skip":
                out["answer"] = out["rating"] = "skip"
                return out, None
            rating = form.get("rating")
            labels = dict(FACTUALITY_RATINGS)
            if rating not in labels:
                return out, "Please choose a rating (or skip)."
            out["rating"] = rating
            out["answer"] = {"accurate": "accurate", "inaccurate": "inaccurate", "unsupported": "inaccurate", "disputed": "inaccurate"}.get(str(rating), str(rating))
            for key, n in (("confidence", len(CONFIDENCE_LEVELS)), ("helpfulness", len(HELPFULNESS_LEVELS))):
                v = str(form.get(key) or "")
                if v:
                    if not v.isdigit() or not 1 <= int(v) <= n:
                        return out, f"The {key} must be between 1 and {n}."
                    out[key] = int(v)
        return out, None

    @app.post("/task/{aid}/submit")
    async def task_submit(request: Request, aid: str) -> Response:
        form = dict(await request.form())
        return await run_in_threadpool(_task_submit, request, aid, form)

    def _task_submit(request: Request, aid: str, form: dict[str, Any]) -> Response:
        rid, a = own(request, aid)
        check_csrf(form, *session_of(request))
        auto = str(form.get("auto", "")) == "1"
        if a.status == "submitted":
            return RedirectResponse(f"/task/{aid}/feedback", status_code=303)
        if st.reclaimed(a):
            return reclaimed_page()
        if m.timed and a.timer_started_at is None:
            raise _HTTPError(400, "Start the timer before answering.")
        late = m.timed and a.final_deadline is not None and st.clock() > a.final_deadline + m.submit_grace_s
        fields: dict[str, Any] = {}
        if not (auto or late):
            fields, err = parse_answer(form, a)
            if err:
                return render("task.html", 400, **task_context(rid, a, err, csrf=csrf_for(*session_of(request))))
        res = st.submit(aid, rid, fields, auto=auto)
        if res is None:
            raise _HTTPError(404, "Task not found.")
        if res.outcome == "reclaimed":
            return reclaimed_page()
        return RedirectResponse(f"/task/{aid}/feedback", status_code=303)

    @app.get("/task/{aid}/feedback", response_class=HTMLResponse)
    def feedback(request: Request, aid: str) -> Response:
        _r, a = own(request, aid)
        if a.status != "submitted" or not m.feedback:
            return RedirectResponse("/next", status_code=303)
        it = st.item(a.item_id)
        return render("feedback.html", a=a, item=it, correct_case=it.question.true_cases[0] if it.question.true_cases else None)

    @app.get("/done", response_class=HTMLResponse)
    def done(request: Request) -> Response:
        r = current_rater(request)
        if r["finished_at"] is None:
            return RedirectResponse("/next", status_code=303)
        url = m.completion_url.replace("{code}", quote(m.completion_code)) if m.completion_url else None
        return render("done.html", code=m.completion_code, url=url)

    @app.get("/full", response_class=HTMLResponse)
    def full(request: Request) -> Response:
        """No task is left for this rater before they earned the code: ask them to return the
        study (Prolific's flow for a participant who cannot complete), with ``full_code`` if set."""
        r = current_rater(request)
        if r["finished_at"] is not None:
            return RedirectResponse("/done", status_code=303)
        if r["stopped"]:
            return RedirectResponse("/stopped", status_code=303)
        url = m.completion_url.replace("{code}", quote(m.full_code)) if (m.completion_url and m.full_code) else None
        return render("full.html", code=m.full_code, url=url, prolific=r["source"] == "prolific")

    @app.get("/stopped", response_class=HTMLResponse)
    def stopped(request: Request) -> Response:
        r = current_rater(request)
        if not r["stopped"]:
            return RedirectResponse("/next", status_code=303)
        return render("stopped.html", code=m.stopped_code)

    # ------------------------------------------------------------------ admin
    def admin_ok(request: Request) -> None:
        token = request.query_params.get("token") or ""
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            token = auth[7:].strip()
        if not token or not hmac.compare_digest(token.encode(), st.admin_token.encode()):
            raise _HTTPError(403, "The admin pages need the admin token.")

    @app.get("/admin", response_class=HTMLResponse)
    def admin(request: Request) -> Response:
        admin_ok(request)
        prog = st.progress()
        stats = study_stats(export_rows(st), seed=m.seed)
        return render("admin.html", prog=prog, stats=stats, token=st.admin_token)

    @app.get("/admin/export.jsonl")
    def admin_jsonl(request: Request) -> Response:
        admin_ok(request)
        body = "".join(json.dumps(row) + "\n" for row in export_rows(st))
        return PlainTextResponse(body, media_type="application/x-ndjson")

    @app.get("/admin/export.csv")
    def admin_csv(request: Request) -> Response:
        import csv
        import io

        admin_ok(request)
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(EXPORT_FIELDS))
        w.writeheader()
        for row in export_rows(st):
            w.writerow({k: _csv_cell(row.get(k)) for k in EXPORT_FIELDS})
        return PlainTextResponse(
            buf.getvalue(),
            media_type="text/csv",
            headers={"Content-Disposition": 'attachment; filename="judgments.csv"'},
        )

    @app.get("/admin/stats.json")
    def admin_stats(request: Request) -> Response:
        admin_ok(request)
        return JSONResponse(_json_safe({"progress": st.progress(), "stats": study_stats(export_rows(st), seed=m.seed)}))

    return app


def app_from_env() -> FastAPI:
    """The app for several worker processes: ``SEERBENCH_STUDY_DB=... uvicorn --factory
    seerbench.study:app_from_env --workers N``. Each worker opens the study in
    ``SEERBENCH_STUDY_DB`` (a SQLite path or a database URL) itself; ``SEERBENCH_STUDY_PUBLIC_URL``
    is the raters' address (``https://...`` makes the cookie ``Secure``). The assignment guarantees
    live in the database, so they hold across the workers."""
    import os

    from seerbench.errors import ConfigError

    db = os.environ.get("SEERBENCH_STUDY_DB")
    if not db:
        raise ConfigError("set SEERBENCH_STUDY_DB to the study's database (a SQLite file or a database URL)")
    return create_app(db, base_url=os.environ.get("SEERBENCH_STUDY_PUBLIC_URL", ""))
