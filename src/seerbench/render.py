"""How questions and transcripts are shown to models, in one place so agents and judges agree."""

from __future__ import annotations

from collections.abc import Sequence

from seerbench.types import Question, Turn


def options_block(question: Question) -> str:
    return "\n".join(f"{a.short}) {a.long}" for a in question.answer_cases)


def source_block(source_text: str | None, label: str = "Passage") -> str:
    """The hidden material, for those allowed to see it (agents; judges only when granted)."""
    if not source_text:
        return ""
    return f"{label}:\n{source_text.strip()}\n\n"


def turn_text(turn: Turn) -> str:
    side = f" (arguing for {turn.answer_case})" if turn.answer_case else ""
    lines = [f"{turn.speaker}{side}: {turn.content.strip()}"]
    where = turn.metadata.get("quotes_in", "passage")  # a critique quotes the answer it critiques
    for i, q in enumerate(turn.quotes, 1):
        mark = {True: f"verified in the {where}", False: f"NOT found in the {where}", None: "unchecked"}[
            q.verified
        ]
        lines.append(f'  Quote {i} [{mark}]: "{q.text.strip()}"')
    return "\n".join(lines)


def transcript_block(turns: Sequence[Turn], heading: str = "Transcript") -> str:
    if not turns:
        return ""
    body = "\n\n".join(turn_text(t) for t in turns)
    return f"\n{heading}:\n{body}\n"
