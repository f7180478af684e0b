"""What every router of the study app shares: the store, templates, the signed session cookie,
CSRF tokens, error pages and security headers (:class:`StudyWeb`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from itsdangerous import BadSignature, URLSafeSerializer, URLSafeTimedSerializer
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from seerbench.study._schema import Assignment
from seerbench.study._storage import StudyStore

__all__ = [
    "COOKIE",
    "ID_RE",
    "STALE_PAGE",
    "HTTPError",
    "SecurityHeaders",
    "StudyWeb",
    "form_handler",
    "json_safe",
]

log = logging.getLogger("seerbench.study")

HERE = Path(__file__).parent
COOKIE = "sb_rater"
#: What a page from an ended session is told: at its submit (403) and when it asks whether it is
#: still current (``POST /session``, on focus and every little while).
STALE_PAGE = (
    "This page is out of date: the study was opened again (in another tab, window or browser), "
    "which ends the pages opened before it. What you entered on this page was not saved; "
    "your task is still open. Continue in the newest tab, or reload this page (in another "
    "browser: open your study link again)."
)
ID_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
OOPS = "Something went wrong on our side. Please try again."


class HTTPError(Exception):
    """A page-level error shown to the rater as ``error.html`` with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message


def json_safe(v: Any) -> Any:
    """NaN and infinities become null: strict JSON has no spelling for them."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): json_safe(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [json_safe(x) for x in v]
    return v


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text or "") if p.strip()]


def form_handler(
    fn: Callable[[Request, dict[str, Any]], Response],
) -> Callable[[Request], Awaitable[Response]]:
    """An async POST endpoint that reads the form and runs ``fn(request, form)`` (blocking: it
    writes to the database) in the thread pool; path parameters are in ``request.path_params``."""

    async def endpoint(request: Request) -> Response:
        form = dict(await request.form())
        return await run_in_threadpool(fn, request, form)

    return endpoint


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


class SecurityHeaders:
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
        except _TooLarge:
            raise  # BodyLimit answers it
        except Exception:  # never show a stack trace; the server log keeps it
            log.exception("unhandled error on %s", scope.get("path"))
            if started:
                raise
            await self.error_page()(scope, receive, send_with_headers)


#: The largest request body the app reads (a task's form, critiques included, is a few KiB).
MAX_BODY_BYTES = 256 * 1024


class BodyLimit:
    """Pure ASGI middleware that refuses a request body before anything parses it: a declared
    ``Content-Length`` over :data:`MAX_BODY_BYTES` gets 413 without a byte read, a streamed body is
    cut off (413) as soon as it passes the limit, and a ``multipart/form-data`` body (no page of
    the app sends one; the form parser would spool it to disk) gets 415."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        ctype = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
        if ctype == b"multipart/form-data":
            await _plain(send, 415, "Unsupported request body.")
            return
        length = headers.get(b"content-length")
        try:
            declared = int(length) if length is not None else None
        except ValueError:
            declared = None
        if declared is not None and declared > self.max_bytes:
            await _plain(send, 413, "Request body too large.")
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await _plain(send, 413, "Request body too large.")


class _TooLarge(Exception):
    pass


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")],
        }
    )
    await send({"type": "http.response.body", "body": body})


class StudyWeb:
    """The study app's shared state: the store, its manifest, the templates and the session
    machinery. The session cookie holds (rater id, session id), signed and dated: it expires with
    the study's length, and a new entry through a link gives a new session id, ending the old one."""

    def __init__(self, store: StudyStore, *, base_url: str = "") -> None:
        self.st = store
        self.m = store.manifest
        self.secure = base_url.lower().startswith("https://")
        self.signer = URLSafeTimedSerializer(store.secret, salt="rater-session")
        self.invites = URLSafeSerializer(store.secret, salt="invite")
        self.admin_signer = URLSafeTimedSerializer(store.secret + store.admin_token, salt="admin-session")
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(HERE / "templates")),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            auto_reload=False,  # templates are package files: no stat() of each on every render
        )
        self.env.filters["paragraphs"] = paragraphs
        self.env.filters["tojson_attr"] = lambda v: json.dumps(v)

    def render(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        ctx.setdefault("study", self.m)
        ctx.setdefault("csrf", "")
        return HTMLResponse(self.env.get_template(name).render(**ctx), status_code=status)

    def csrf_for(self, rater_id: str, session: str) -> str:
        return hmac.new(
            self.st.secret.encode(), f"csrf:{rater_id}:{session}".encode(), hashlib.sha256
        ).hexdigest()

    def session_of(self, request: Request) -> tuple[str, str]:
        """(rater id, session id) from the signed session cookie (no DB read; the session id is
        checked against the rater's current one where the rater or a task is read)."""
        known = getattr(request.state, "sb_session", None)  # checked once a request
        if known is not None:
            return known
        raw = request.cookies.get(COOKIE)
        if not raw:
            raise HTTPError(401, "Please open the study through your personal link.")
        try:
            rid, sess = self.signer.loads(raw, max_age=int(self.m.session_s))
        except (BadSignature, TypeError, ValueError):
            raise HTTPError(401, "Your session is not valid; please open your study link again.") from None
        request.state.sb_session = (str(rid), str(sess))
        return str(rid), str(sess)

    def rater_if_current(self, rid: str, sess: str) -> dict[str, Any] | None:
        """The rater ``rid``'s row while ``sess`` is their current session, else ``None`` (the
        study link was opened again since, in this browser or another one, or no such rater): the
        one check of whether a session has ended."""
        r = self.st.rater(rid)
        if r is None or r["session"] is None or not hmac.compare_digest(str(r["session"]), sess):
            return None
        return r

    def current_rater(self, request: Request) -> dict[str, Any]:
        r = self.rater_if_current(*self.session_of(request))
        if r is None:
            raise HTTPError(401, "Your session is not valid; please open your study link again.")
        return r

    def check_csrf(self, form: dict[str, Any], rater_id: str, session: str) -> None:
        token = str(form.get("csrf", ""))
        if not hmac.compare_digest(token, self.csrf_for(rater_id, session)):
            # most often a page from before the study link was opened again (a second tab or
            # window starts a new session): say so, and that the task itself is kept
            raise HTTPError(403, STALE_PAGE)

    def page_is_current(self, request: Request, token: str) -> bool:
        """Whether the page whose CSRF token is ``token`` belongs to the rater's current session:
        the browser's session cookie is the one it was made for (opening the link again in this
        browser replaces the cookie) and still the rater's session (opening it in another browser
        starts a new one). Raises :class:`HTTPError` (401) without a valid session cookie."""
        rid, sess = self.session_of(request)
        if not hmac.compare_digest(token, self.csrf_for(rid, sess)):
            return False
        return self.rater_if_current(rid, sess) is not None

    def login(self, rater: dict[str, Any]) -> RedirectResponse:
        resp = RedirectResponse("/next", status_code=303)
        resp.set_cookie(
            COOKIE,
            self.signer.dumps([rater["id"], rater["session"]]),
            httponly=True,
            samesite="lax",
            secure=self.secure,
            max_age=int(self.m.session_s),
        )
        return resp

    def own(self, request: Request, aid: str) -> tuple[str, Assignment]:
        """The rater's own task ``aid`` (the same 404 whether it exists or belongs to someone
        else: ids are not probeable). A page of the rater's own task from an ended session (the
        link was opened again in another browser, whose cookie this browser does not have) gets
        :data:`STALE_PAGE` (403), as a page from an earlier tab of this browser does at its CSRF
        check."""
        rid, sess = self.session_of(request)
        if not ID_RE.match(aid):
            raise HTTPError(404, "Task not found.")
        a = self.st.get_assignment(aid, rid, sess)
        if a is None:
            # the extra reads only on this rare path: whether the session ended, the task the rater's
            if self.rater_if_current(rid, sess) is None and self.st.get_assignment(aid, rid) is not None:
                raise HTTPError(403, STALE_PAGE)
            raise HTTPError(404, "Task not found.")
        return rid, a
