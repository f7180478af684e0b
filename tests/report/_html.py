"""Reading a report back: its tables' exact numbers (``data-v``) and its embedded JSON."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any


class Tables(HTMLParser):
    """Rows of every table whose class is ``stats-*`` or ``cells``:
    ``{class: [(run, row attrs, {data-k: value})]}``, ``run`` being the label of the run column the
    table sits in."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[str | None, dict[str, str], dict[str, Any]]]] = {}
        self.run: str | None = None
        self.cls: str | None = None
        self.row: tuple[dict[str, str], dict[str, Any]] | None = None
        self.figures: list[str] = []
        self.json: dict[str, str] = {}
        self._script: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "div" and "data-run" in a:
            self.run = a["data-run"]
        if tag == "div" and "data-figure" in a:
            self.figures.append(a["data-figure"])
        if tag == "table":
            self.cls = a.get("class") or None
        if tag == "tr" and self.cls:
            self.row = (a, {})
        if tag == "td" and self.row is not None and "data-k" in a:
            self.row[1][a["data-k"]] = json.loads(a["data-v"])
        if tag == "script" and a.get("type") == "application/json":
            self._script = a["id"]
            self.json[self._script] = ""

    def handle_data(self, data: str) -> None:
        if self._script:
            self.json[self._script] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self.row is not None and self.cls:
            if self.row[1]:
                self.tables.setdefault(self.cls, []).append((self.run, *self.row))
            self.row = None
        if tag == "table":
            self.cls = None
        if tag == "script":
            self._script = None


def read_report(path: Path) -> Tables:
    t = Tables()
    t.feed(path.read_text(encoding="utf-8"))
    return t
