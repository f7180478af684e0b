"""From the AI rater's run folder to study items (seed 000, RQ2): one factuality question per rated
sentence, with the rater's trace as the item's assistance parts, and the seed's assistance
conditions by name.

Conditions (a bare name in a study manifest; each lists the assistance parts it shows):

=============================  ===============================================================
``none``                       nothing (the unassisted baseline)
``search``                     search queries and results
``search+evidence``            + the selected evidence (the seed's "Evidence" experiment)
``trace``                      + the claims and per-claim reasoning
``trace+ratings``              + the per-claim judgments and the overall rating
``trace+ratings+confidence``   + the confidence
``ratings``                    the judgments alone
``ratings+confidence``         the judgments and the confidence
``debate``                     two traces, one for "accurate" and one against (seed 000's Debate)
=============================  ===============================================================
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seerbench.errors import ConfigError, DataError
from seerbench.records import ACCURATE, AIRating, binarize, read_ai_ratings
from seerbench.types import AnswerCase, Question

_TRACE = ("search_results", "evidence", "reasoning")
#: The seed's assistance conditions: name -> the assistance parts shown.
ASSISTANCE_CONDITIONS: dict[str, tuple[str, ...]] = {
    "none": (),
    "search": ("search_results",),
    "search+evidence": ("search_results", "evidence"),
    "trace": _TRACE,
    "trace+ratings": (*_TRACE, "judgments"),
    "trace+ratings+confidence": (*_TRACE, "judgments", "confidence"),
    "ratings": ("judgments",),
    "ratings+confidence": ("judgments", "confidence"),
    "debate": ("two_sided",),
}


def assistance_condition(name: str) -> dict[str, Any] | None:
    """The condition mapping for a seed-000 condition name (case kept), or None if it is not one."""
    parts = ASSISTANCE_CONDITIONS.get(name.strip().lower())
    return None if parts is None else {"name": name.strip(), "assistance": list(parts)}


def _search_part(queries: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {
        f'Search: "{q["query"]}"': [
            f"{h['title']} <{h['url']}> (updated {h['updated']}): {h['snippet']}" for h in q["results"]
        ]
        or ["no results"]
        for q in queries
    }


def _evidence_part(evidence: list[dict[str, Any]]) -> list[str]:
    return [f'[E{e["n"]}] {e["title"]} <{e["url"]}>: "{e["quote"]}"' for e in evidence]


def _reasoning_part(reasoning: list[dict[str, Any]]) -> list[str]:
    return [f"Claim {r['n']}: {r['claim']} | {r['reasoning']}" for r in reasoning]


def _judgments_part(judgments: dict[str, Any]) -> list[str]:
    # each claim named, so the part reads on its own where the reasoning is not shown
    return [f"Claim {j['n']} ({j['claim']}): {j['judgment']}" for j in judgments["claims"]] + [
        f"Overall: {judgments['overall']}"
    ]


def _side(trace: dict[str, Any] | None) -> list[str]:
    if trace is None:
        return ["(no verified sample argues this side)"]
    return (
        _evidence_part(trace["evidence"])
        + _reasoning_part(trace["reasoning"])
        + _judgments_part(trace["judgments"])
    )


def assistance_parts(trace: dict[str, Any]) -> dict[str, Any]:
    """A rater trace as the study page shows it: each part as text, lists and mappings (empty
    when the sentence had no verified sample)."""
    if "judgments" not in trace:
        return {}
    c = trace["confidence"]
    return {
        "search_results": _search_part(trace["search_results"]),
        "evidence": _evidence_part(trace["evidence"]),
        "reasoning": _reasoning_part(trace["reasoning"]),
        "judgments": _judgments_part(trace["judgments"]),
        "confidence": f"Model confidence: {c['level']} ({round(100 * c['value'])}%)",
        "two_sided": {
            "For (accurate)": _side(trace["two_sided"]["for"]),
            "Against (not accurate)": _side(trace["two_sided"]["against"]),
        },
    }


def rating_question(r: AIRating) -> Question:
    """One rated sentence as a factuality study question: options accurate / inaccurate (the
    binarised label is true), ``metadata.ai_correct`` (the rater's binarised rating is right; a
    sentence with no rating counts as wrong, as in the analysis) and ``metadata.assistance``."""
    truth = binarize(r.label)
    if truth is None:
        raise DataError(f"AI ratings: item {r.item_id!r} has no usable label ({r.label!r})")
    acc = truth == ACCURATE
    rating = binarize(r.rating)
    return Question(
        id=r.item_id,
        text=r.sentence or r.item_id,
        answer_cases=[
            AnswerCase(short="accurate", long="Accurate", value=1.0 if acc else 0.0),
            AnswerCase(short="inaccurate", long="Not accurate", value=0.0 if acc else 1.0),
        ],
        metadata={
            "ai_correct": rating is not None and rating == truth,
            "ai_rating": r.rating,
            "ai_confidence": r.confidence,
            "label": r.label,
            "assistance": assistance_parts(r.trace),
        },
    )


def rating_questions(path: str | Path, max_confidence: float | None = None) -> list[Question]:
    """The sentences of a rater run folder (or its ratings.jsonl) as study questions; with
    ``max_confidence`` T only the low-confidence slice, confidence <= T (a sentence with no verified
    sample has no confidence and is taken as 0, so it is always in the slice, as in the analysis)."""
    if max_confidence is not None and not 0.0 <= max_confidence <= 1.0:
        raise ConfigError(f"max_confidence must lie in [0, 1], got {max_confidence}")
    ratings = read_ai_ratings(path)
    keep = [r for r in ratings if max_confidence is None or (r.confidence or 0.0) <= max_confidence]
    if not keep:
        raise DataError(
            f"{path}: no rated sentence has confidence <= {max_confidence} ({len(ratings)} sentences)"
        )
    return [rating_question(r) for r in keep]
