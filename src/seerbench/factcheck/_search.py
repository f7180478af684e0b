"""Offline search over a factcheck corpus: SQLite FTS5 (standard library), ranked by bm25.

A query is split into words, common English function words (:data:`STOPWORDS`: "the", "was",
"in"...) are dropped, and any page holding one of the rest matches (``"w1" OR "w2" ...``, each word
quoted so FTS5 operators in user text are plain words); pages are ordered by FTS5's bm25 over the
title (weight 2) and the text (weight 1), best first, ties broken by corpus order. Dropping function
words changes little in the ranking (bm25 gives a word found on nearly every page almost no
weight) but spares scoring every page that has "the" (a query of only such words searches them).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from seerbench.errors import ConfigError
from seerbench.factcheck._generate import Page
from seerbench.tools import Tool

_WORD = re.compile(r"\w+", re.UNICODE)
#: Words left out of a query (unless the query has nothing else).
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "he",
        "her",
        "his",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "she",
        "that",
        "the",
        "their",
        "there",
        "this",
        "to",
        "was",
        "were",
        "which",
        "who",
        "with",
    }
)


@dataclass(frozen=True)
class SearchResult:
    """One ranked hit: the page and its bm25 score (lower is better, as SQLite reports it)."""

    page: Page
    score: float


def fts_available() -> bool:
    try:
        con = sqlite3.connect(":memory:")
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        con.close()
        return True
    except sqlite3.OperationalError:
        return False


def fts_query(query: str) -> str | None:
    """The FTS5 MATCH expression for free text (None when it has no word)."""
    words = [w.lower() for w in _WORD.findall(query)]
    if not words:
        return None
    words = [w for w in words if w not in STOPWORDS] or words
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(words))


class CorpusIndex:
    """A corpus in an FTS5 table (in memory, or in a file given as ``path``), searchable by
    :meth:`search`. Pages are kept by id for quote checks (:meth:`page`)."""

    def __init__(self, pages: Iterable[Page], path: str | Path | None = None) -> None:
        if not fts_available():  # pragma: no cover - every CPython build we support has FTS5
            raise ConfigError("this Python's SQLite has no FTS5; the factcheck corpus needs it")
        self._pages: dict[str, Page] = {}
        self.con = sqlite3.connect(str(path) if path is not None else ":memory:", check_same_thread=False)
        self.con.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS pages USING "
            "fts5(page_id UNINDEXED, title, text, tokenize='unicode61')"
        )
        rows = []
        for p in pages:
            if p.id in self._pages:
                raise ConfigError(f"corpus: page id {p.id!r} appears twice")
            self._pages[p.id] = p
            rows.append((p.id, p.title, p.text))
        self.con.execute("DELETE FROM pages")
        self.con.executemany("INSERT INTO pages(page_id, title, text) VALUES (?, ?, ?)", rows)
        self.con.commit()

    def __len__(self) -> int:
        return len(self._pages)

    def page(self, page_id: str) -> Page | None:
        return self._pages.get(page_id)

    def search(self, query: str, k: int = 5) -> list[SearchResult]:
        """The ``k`` best pages for ``query`` by bm25 (an empty list when the query has no word)."""
        q = fts_query(query)
        if q is None or k < 1:
            return []
        rows = self.con.execute(
            "SELECT page_id, bm25(pages, 0.0, 2.0, 1.0) AS s FROM "
            "pages WHERE pages MATCH ? ORDER BY s, rowid LIMIT ?",
            (q, k),
        ).fetchall()
        return [SearchResult(self._pages[pid], float(s)) for pid, s in rows]

    def close(self) -> None:
        self.con.close()


def format_results(query: str, results: list[SearchResult]) -> str:
    """Search results as the rater's model reads them: page id, title, URL, year and the text."""
    if not results:
        return f'SEARCH("{query}"): no results'
    lines = [f'SEARCH("{query}"):']
    for r in results:
        p = r.page
        lines.append(f"[{p.id}] {p.title} <{p.url}> (updated {p.updated})\n{p.text}")
    return "\n".join(lines)


def search_tool(index: CorpusIndex, k: int = 5) -> Tool:
    """The ``SEARCH(query)`` tool over ``index`` (seerbench's tool mechanism: a named function
    from an argument string to a result string)."""
    return Tool(
        "SEARCH",
        "SEARCH(<words>) searches the document collection and returns the best pages",
        lambda q: format_results(q, index.search(q, k)),
    )
