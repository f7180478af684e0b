"""The researcher's pages, behind the admin token: progress and statistics (:func:`admin_router`)
and the judgments as CSV or JSONL (:func:`export_router`)."""

from __future__ import annotations

import hmac
import io
import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from seerbench.study._results import export_rows, store_stats, write_csv
from seerbench.study._web import HTTPError, StudyWeb, json_safe

__all__ = ["admin_router", "export_router"]


def _admin_ok(web: StudyWeb, request: Request) -> None:
    """The admin token as ``?token=`` or ``Authorization: Bearer``; else 403."""
    token = request.query_params.get("token") or ""
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        token = auth[7:].strip()
    if not token or not hmac.compare_digest(token.encode(), web.st.admin_token.encode()):
        raise HTTPError(403, "The admin pages need the admin token.")


def admin_router(web: StudyWeb) -> APIRouter:
    """``/admin`` (progress and statistics) and ``/admin/stats.json``."""
    st, m = web.st, web.m
    router = APIRouter()

    def stats(intervals: bool = True) -> dict[str, Any] | None:
        # a validation study's marks are measured in the critique study they validate
        return None if m.task == "validation" else store_stats(st, intervals=intervals)

    @router.get("/admin", response_class=HTMLResponse)
    def admin(request: Request) -> Response:
        _admin_ok(web, request)
        s = stats(intervals=m.task != "critique")  # the page shows critique means only
        critique = s if m.task == "critique" else None
        judging = s if s is not None and critique is None else {"conditions": {}}
        return web.render(
            "admin.html", prog=st.progress(), stats=judging, critique=critique, token=st.admin_token
        )

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
