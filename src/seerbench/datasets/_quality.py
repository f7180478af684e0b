"""QuALITY (Pang et al. 2021): long articles with four-option questions.

Real format: one JSON object per line per article (``QuALITY.v1.0.1.htmlstripped.dev`` and the
HTML version), fields ``article_id``, ``set_unique_id``, ``title``, ``author``, ``year``,
``topic``, ``source``, ``article`` and ``questions``; each question has ``question``,
``question_unique_id``, ``options`` (4 strings), ``gold_label`` (1-based; absent in the test split),
``writer_label``, ``difficult`` (0/1), ``validation`` (untimed annotators, with
``untimed_best_distractor``) and ``speed_validation`` (timed annotators, ``speed_answer``).
"""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from seerbench.datasets._common import Collector, Questions, RecordError, make_question, req
from seerbench.tables import Record, iter_jsonl
from seerbench.types import Question

_HTML_HINT = re.compile(r"</?(p|br|div|html|body|head|h\d|pre|i|b|em|strong|span|a|hr)\b[^>]*>", re.I)
_BLOCK_TAGS = {"p", "br", "div", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "hr", "li", "tr", "title"}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def strip_html(text: str) -> str:
    """Plain text of an HTML article: tags removed, entities decoded, paragraphs kept as blank-line
    separated blocks. Text without HTML tags is returned unchanged (the ``htmlstripped`` files)."""
    if not _HTML_HINT.search(text):
        return text
    p = _TextExtractor()
    p.feed(text)
    p.close()
    joined = "".join(p.parts)
    lines = [" ".join(line.split()) for line in joined.splitlines()]
    # Collapse runs of empty lines into one paragraph break.
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _majority(labels: list[int]) -> int | None:
    """Most frequent label; ties go to the smallest label so the choice is deterministic."""
    if not labels:
        return None
    counts = Counter(labels)
    top = max(counts.values())
    return min(lab for lab, c in counts.items() if c == top)


def _questions_of_article(rec: Record) -> list[Question]:
    art = rec.data
    article_id = str(req(art, "article_id", (str, int)))
    article = strip_html(req(art, "article"))
    qs = req(art, "questions", list)
    out: list[Question] = []
    for j, q in enumerate(qs):
        try:
            out.append(_one(art, article_id, article, q))
        except (RecordError, ValueError, TypeError) as e:
            raise RecordError(f"questions[{j}]: {e}") from e
    return out


def _one(art: dict[str, Any], article_id: str, article: str, q: dict[str, Any]) -> Question:
    options = req(q, "options", list)
    if "gold_label" not in q:
        raise RecordError("no 'gold_label' (the QuALITY test split has no answers; use train or dev)")
    gold = req(q, "gold_label", int)
    if not 1 <= gold <= len(options):
        raise RecordError(f"gold_label {gold} out of range 1..{len(options)}")
    validation = q.get("validation") or []
    speed = q.get("speed_validation") or []
    distractors = [
        v["untimed_best_distractor"]
        for v in validation
        if isinstance(v, dict)
        and isinstance(v.get("untimed_best_distractor"), int)
        and v["untimed_best_distractor"] != gold
    ]
    best = _majority(distractors)
    speed_answers = [s.get("speed_answer") for s in speed if isinstance(s, dict)]
    untimed_answers = [v.get("untimed_answer") for v in validation if isinstance(v, dict)]

    def share_correct(answers: list[Any]) -> float | None:
        return sum(a == gold for a in answers) / len(answers) if answers else None

    qid = str(q.get("question_unique_id") or f"{art.get('set_unique_id', article_id)}_{len(options)}")
    return make_question(
        id=qid,
        text=req(q, "question"),
        options=options,
        correct=gold - 1,
        source_text=article,
        best_distractor=None if best is None else best - 1,
        metadata={
            "dataset": "quality",
            "article_id": article_id,
            "passage_id": article_id,
            "set_unique_id": art.get("set_unique_id"),
            "title": art.get("title"),
            "author": art.get("author"),
            "year": art.get("year"),
            "topic": art.get("topic"),
            "source": art.get("source"),
            "writer_label": q.get("writer_label"),
            "difficult": q.get("difficult"),
            "speed_validation_accuracy": share_correct(speed_answers),
            "untimed_validation_accuracy": share_correct(untimed_answers),
            "validation": validation,
            "speed_validation": speed,
        },
    )


def load_quality(path: str | Path, *, lenient: bool = False) -> Questions:
    """Load a QuALITY split file (HTML or ``htmlstripped``). The article becomes the hidden
    ``source_text``; ``difficult``, validator accuracies and the majority untimed best distractor
    are kept in metadata. QuALITY has no schema-faithful hub copy, so a local path is required."""
    return Collector(lenient=lenient, source=str(path)).run(iter_jsonl(path), _questions_of_article)


def quality_articles(paths: str | Path | list[str | Path]) -> dict[str, str]:
    """``article_id -> plain article text`` from one or more QuALITY files (for attaching passages
    to other datasets, such as single_turn_debate, that reference QuALITY articles by id)."""
    out: dict[str, str] = {}
    for p in [paths] if isinstance(paths, str | Path) else paths:
        for rec in iter_jsonl(p):
            if rec.error is None and isinstance(rec.data, dict) and "article" in rec.data:
                out[str(rec.data.get("article_id"))] = strip_html(str(rec.data["article"]))
    return out
