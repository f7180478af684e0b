"""The rater-facing and admin web app: FastAPI with server-rendered Jinja2 pages.

:func:`create_app` assembles routers, each in its own module: the rater's way through the study
(:mod:`~seerbench.study._routes_rater`), task pages (:mod:`~seerbench.study._routes_task`, one
:class:`~seerbench.study._tasks.TaskPage` per task type), and the admin pages and exports
(:mod:`~seerbench.study._routes_admin`). Shared state is a :class:`~seerbench.study._web.StudyWeb`.

Everything works without JavaScript except the visible countdown, the automatic submission when
the finalise window ends, and snippet highlighting (a snippet is still a plain ``#anchor`` link that
scrolls to the passage, and CSS ``:target`` marks it). The server never trusts the client about
time: deadlines are stored when the timer starts and checked against the server clock.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from itsdangerous import URLSafeSerializer
from starlette.exceptions import HTTPException as StarletteHTTPException

from seerbench.study._routes_admin import admin_router, export_router
from seerbench.study._routes_rater import rater_router
from seerbench.study._routes_task import task_router
from seerbench.study._storage import StudyStore
from seerbench.study._tasks import CONFIDENCE_LEVELS, FACTUALITY_RATINGS, HELPFULNESS_LEVELS, segment_passage
from seerbench.study._web import HERE, OOPS, BodyLimit, HTTPError, SecurityHeaders, StudyWeb

__all__ = [
    "CONFIDENCE_LEVELS",
    "FACTUALITY_RATINGS",
    "HELPFULNESS_LEVELS",
    "app_from_env",
    "create_app",
    "invite_link",
    "segment_passage",
]


def invite_link(store: StudyStore, label: str, base_url: str) -> str:
    """A signed invitation link for a rater called ``label`` (an email, a participant number)."""
    token = URLSafeSerializer(store.secret, salt="invite").dumps(label)
    return f"{base_url.rstrip('/')}/invite/{token}"


def create_app(store: StudyStore | str | Path, *, base_url: str = "") -> FastAPI:
    """The study web app over ``store`` (a :class:`StudyStore` or a database path/URL).

    ``base_url`` is the address raters use; when it is ``https://...`` the session cookie is
    ``Secure`` (sent over https only)."""
    if not isinstance(store, StudyStore):
        store = StudyStore(store)
    web = StudyWeb(store, base_url=base_url)

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
        title=f"seerbench study: {web.m.name}",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.store = store
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.add_middleware(SecurityHeaders, error_page=lambda: web.render("error.html", 500, message=OOPS))
    app.add_middleware(BodyLimit)  # outermost: a body is refused before any other layer reads it

    @app.exception_handler(HTTPError)
    async def _http_error(request: Request, exc: HTTPError) -> Response:
        return web.render("error.html", exc.status, message=exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def _starlette_error(request: Request, exc: StarletteHTTPException) -> Response:
        msg = "Page not found." if exc.status_code == 404 else "The request could not be handled."
        return web.render("error.html", exc.status_code, message=msg)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
        return web.render("error.html", 400, message="The request was malformed.")

    for router in (rater_router(web), task_router(web), admin_router(web), export_router(web)):
        app.include_router(router)
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
