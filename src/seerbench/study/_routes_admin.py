"""The researcher's pages, behind the admin token: progress and statistics (:func:`admin_router`)
and the judgments as CSV or JSONL (:func:`export_router`)."""

from __future__ import annotations

import hmac
import io
import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from itsdangerous import BadSignature

from seerbench.study._results import export_rows, store_stats, write_csv
from seerbench.study._web import HTTPError, StudyWeb, json_safe

__all__ = ["admin_router", "export_router"]


ADMIN_COOKIE = "seerbench_admin"


def _token_ok(web: StudyWeb, token: str) -> bool:
    return bool(token) and hmac.compare_digest(token.encode(), web.st.admin_token.encode())


def _admin_ok(web: StudyWeb, request: Request) -> None:
    """The admin cookie (set by the login form), ``Authorization: Bearer TOKEN`` (scripts) or
    ``?token=`` (kept for old links; it lands in access logs); else 403."""
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer ") and _token_ok(web, auth[7:].strip()):
        return
    if _token_ok(web, request.query_params.get("token") or ""):
        return
    cookie = request.cookies.get(ADMIN_COOKIE)
    if cookie:
        try:
            web.admin_signer.loads(cookie, max_age=ADMIN_SESSION_S)
            return
        except BadSignature:
            pass
    raise HTTPError(403, "The admin pages need the admin token.")


#: How long the admin login lasts.
ADMIN_SESSION_S = 12 * 3600


def _admin_session(web: StudyWeb, to: str = "/admin") -> RedirectResponse:
    resp = RedirectResponse(to, status_code=303)
    resp.set_cookie(
        ADMIN_COOKIE,
        web.admin_signer.dumps("admin"),
        httponly=True,
        samesite="strict",
        secure=web.secure,
        max_age=ADMIN_SESSION_S,
        path="/admin",
    )
    return resp


def admin_router(web: StudyWeb) -> APIRouter:
    """``/admin`` (progress and statistics) and ``/admin/stats.json``."""
    st, m = web.st, web.m
    router = APIRouter()

    def stats(intervals: bool = True) -> dict[str, Any] | None:
        # a validation study's marks are measured in the critique study they validate
        return None if m.task == "validation" else store_stats(st, intervals=intervals)

    @router.get("/admin", response_class=HTMLResponse)
    def admin(request: Request) -> Response:
        if "token" in request.query_params and _token_ok(web, request.query_params["token"]):
            return _admin_session(web)  # the token leaves the address bar, history and links
        try:
            _admin_ok(web, request)
        except HTTPError:
            return web.render("admin_login.html", 403)
        s = stats(intervals=m.task != "critique")  # the page shows critique means only
        critique = s if m.task == "critique" else None
        judging = s if s is not None and critique is None else {"conditions": {}}
        return web.render("admin.html", prog=st.progress(), stats=judging, critique=critique)

    @router.post("/admin/login")
    async def admin_login(request: Request) -> Response:
        form = await request.form()
        if not _token_ok(web, str(form.get("token") or "")):
            return web.render("admin_login.html", 403, wrong=True)
        return _admin_session(web)

    @router.get("/admin/stats.json")
    def admin_stats(request: Request) -> Response:
        _admin_ok(web, request)
        return JSONResponse(json_safe({"progress": st.progress(), "stats": stats()}))

    return router


def export_router(web: StudyWeb) -> APIRouter:
    """``/admin/export.jsonl`` and ``/admin/export.csv``: every submitted judgment."""
    st = web.st
    router = APIRouter()

    @router.get("/admin/export.jsonl")
    def admin_jsonl(request: Request) -> Response:
        _admin_ok(web, request)
        body = "".join(json.dumps(row) + "\n" for row in export_rows(st))
        return PlainTextResponse(body, media_type="application/x-ndjson")

    @router.get("/admin/export.csv")
    def admin_csv(request: Request) -> Response:
        _admin_ok(web, request)
        buf = io.StringIO()
        write_csv(buf, export_rows(st), st.manifest.task)
        return PlainTextResponse(
            buf.getvalue(),
            media_type="text/csv",
            headers={"Content-Disposition": 'attachment; filename="judgments.csv"'},
        )

    return router
