"""Fixtures for the human-study tests: small hand-written questions, a study factory, a fake clock
and a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from seerbench.study import StudyStore, create_app, create_study, load_manifest

XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'

PASSAGE = (
    "The lighthouse keeper kept a log of every ship. In the winter of the storm she recorded only "
    "three ships, all of them fishing boats.\n\n"
    + "Filler sentence about the sea and the gulls. "
    * 40
    + "\n\n"
    "When the supply boat failed to arrive she rationed her lamp oil. In spring the harbour master "
    "thanked her because no ship had been lost on the point."
)


def question(qid: str, true: str = "A", passage: str = PASSAGE, text: str | None = None) -> dict[str, Any]:
    """A binary question on ``passage`` whose options carry an argument and one snippet each."""
    return {
        "id": qid,
        "text": text or f"Question {qid}: how many ships did she record?",
        "source_text": passage,
        "answer_cases": [
            {
                "short": "A",
                "long": "Three",
                "value": 1.0 if true == "A" else 0.0,
                "argument": f"Argument for A on {qid} (#1).",
                "quotes": ["she recorded only three ships"],
            },
            {
                "short": "B",
                "long": "None",
                "value": 1.0 if true == "B" else 0.0,
                "argument": f"Argument for B on {qid} (#1).",
                "quotes": ["no ship had been lost on the point"],
            },
        ],
    }


class FakeClock:
    """A clock the test moves by hand, so deadlines are tested without sleeping."""

    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


def base_manifest(**over: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "name": "test-study",
        "task": "two_option",
        "items": [{"questions": "items.jsonl"}],
        "conditions": ["P", "PSA"],
        "ratings_per_item": 2,
        "tasks_per_rater": 4,
        "time_limit_s": 90,
        "finalise_s": 30,
        "catch_rate": 0.0,
        "completion_code": "DONE123",
        "tutorial": {
            "text": "Pick the correct answer.",
            "quiz": [{"question": "How many answers are correct?", "options": ["One", "Two"], "answer": 0}],
        },
        "seed": 3,
    }
    m.update(over)
    return m


@pytest.fixture
def make_study(tmp_path: Path) -> Iterator[Callable[..., StudyStore]]:
    """Write items + manifest into tmp_path and create the study; returns the store."""
    stores: list[StudyStore] = []

    def make(
        questions: list[dict[str, Any]] | None = None,
        clock: Callable[[], float] | None = None,
        extra_files: dict[str, list[dict[str, Any]]] | None = None,
        **over: Any,
    ) -> StudyStore:
        qs = questions if questions is not None else [question(f"q{i}", "AB"[i % 2]) for i in range(6)]
        (tmp_path / "items.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
        for name, rows in (extra_files or {}).items():
            (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        m = load_manifest(base_manifest(**over))
        db = tmp_path / f"study{len(stores)}.sqlite"
        store = create_study(m, db, base_dir=tmp_path)
        if clock is not None:
            store.clock = clock
        stores.append(store)
        return store

    yield make
    for s in stores:
        s.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """uvicorn serving a study's app in a background thread."""

    def __init__(self, store: StudyStore) -> None:
        self.store = store
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(store), host="127.0.0.1", port=self.port, log_level="warning", backlog=2048
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        while not self.server.started:  # started within a second; no timing asserted
            if not self.thread.is_alive():
                raise RuntimeError("uvicorn failed to start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def live_server() -> Iterator[Callable[[StudyStore], LiveServer]]:
    servers: list[LiveServer] = []

    def start(store: StudyStore) -> LiveServer:
        srv = LiveServer(store).__enter__()
        servers.append(srv)
        return srv

    yield start
    for s in servers:
        s.__exit__()
