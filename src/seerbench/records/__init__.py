"""The records every layer passes around, below everything that makes or reads them: one run of
a protocol on an answer case (:class:`CaseRun`), every run on one question (:class:`QuestionRun`),
one AI rating of a fact-check sentence (:class:`AIRating`, a line of ``ratings.jsonl``) with
seed 000's binarisation of labels, and the ``critiques.jsonl`` format of seed 002
(:class:`CritiquedAnswer`, :func:`read_critiques`).

They are re-exported where they were first defined (``seerbench.protocols``,
``seerbench.complementarity``, ``seerbench.critique``), so either import works. This package
imports nothing above the core, so scoring and reading results never load the model stack.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from seerbench.errors import DataError
from seerbench.records._critiques import (
    AnswerKind,
    Critique,
    CritiquedAnswer,
    Refinement,
    dump_answer,
    read_critiques,
    write_critiques,
)
from seerbench.store import RecordReader, atomic_write_lines
from seerbench.types import Question, Transcript, Verdict

__all__ = [
    "ACCURATE",
    "AGENT_CHOICE_FAILED",
    "CANT_ASSESS",
    "INACCURATE",
    "AIRating",
    "AnswerKind",
    "CaseRun",
    "Critique",
    "CritiquedAnswer",
    "QuestionRun",
    "Refinement",
    "binarize",
    "dump_answer",
    "rating_correct",
    "read_ai_ratings",
    "read_critiques",
    "write_ai_ratings",
    "write_critiques",
]


#: How a question's verdict reads when the agent of an open protocol (OpenConsultancy) could not
#: say which answer it believes: no case was argued, so no judge was asked.
AGENT_CHOICE_FAILED = "agent's choice of side: "


@dataclass
class CaseRun:
    """One run of a protocol with the agent assigned ``answer_case``."""

    answer_case: str
    transcript: Transcript
    verdict: Verdict


@dataclass
class QuestionRun:
    """Every run of a protocol on one question. ``cases`` is keyed by the answer case argued for;
    a symmetric protocol ran once and both keys hold the same run. Random and open consultancy run
    one case only, the ``chosen_case``."""

    question: Question
    protocol: str
    cases: dict[str, CaseRun]
    symmetric: bool = False
    chosen_case: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)


# ---- seed 000: the AI rater's ratings -------------------------------------------------------------

ACCURATE = "accurate"
INACCURATE = "inaccurate"
CANT_ASSESS = "cant_assess"


def binarize(label: str | None) -> str | None:
    """Seed 000's binarisation: ``accurate`` stays, every other label (inaccurate, unsupported,
    disputed, no_claim / doesn't require attribution, ...) is ``inaccurate``; "can't assess",
    a skip and no label give None (no label)."""
    if label is None:
        return None
    s = str(label).strip().lower()
    if s in ("", "skip", CANT_ASSESS, "can't confidently assess", "cant confidently assess"):
        return None
    return ACCURATE if s == ACCURATE else INACCURATE


def rating_correct(rating: str | None, truth: str | None) -> float | None:
    """Seed 000's score of one factuality rating against the golden label (section 2.2): 1.0 when
    the binarised rating matches the binarised truth, else 0.0; "Can't confidently assess" is
    incorrect; "Doesn't require assessment" (``no_claim``) is binarised to Inaccurate like
    "Doesn't require attribution" (the appendix's T1 study coded it as always incorrect; section
    2.2 is the rule of the paper's analyses and of seerbench's); None for a skip or no rating (not
    counted). The one definition that the study app's ``correct``, ``study stats``, the admin
    page, the report and ``seerbench complementarity`` all use."""
    if rating is None or str(rating).strip().lower() in ("", "skip"):
        return None
    return 1.0 if binarize(rating) == binarize(truth) else 0.0


@dataclass(frozen=True)
class AIRating:
    """One sentence rated by the AI rater (a line of ``ratings.jsonl``)."""

    item_id: str
    label: str
    rating: str | None
    confidence: float | None
    sentence: str = ""
    n_samples: int = 0
    n_verified: int = 0
    votes: dict[str, int] | list[Any] | None = None
    trace: dict[str, Any] = field(default_factory=dict)


def read_ai_ratings(path: str | Path) -> list[AIRating]:
    """The AI rater's ratings from ``ratings.jsonl`` or the run folder holding it (what
    :func:`seerbench.factcheck.rate` writes and the complementarity analysis reads)."""
    p = Path(path)

    if p.is_dir():
        p = p / "ratings.jsonl"
    if not p.is_file():
        raise DataError(
            f"{p} does not exist; give the AI rater's run folder (with ratings.jsonl) or the file"
        )
    # through the record store: a malformed line raises DataError naming it; a torn last line
    # (what a crash leaves) is skipped with a warning; a repeated item_id is refused
    out = []
    for n, d in RecordReader(p, "item_id", strict=True).numbered():
        try:
            conf = d.get("confidence")
            r = AIRating(
                item_id=str(d["item_id"]),
                label=str(d["label"]),
                rating=None if d.get("rating") is None else str(d["rating"]),
                confidence=None if conf is None else float(conf),
                sentence=str(d.get("sentence", "")),
                n_samples=int(d.get("n_samples") or 0),
                n_verified=int(d.get("n_verified") or 0),
                votes=d.get("votes"),
                trace=d.get("trace") or {},
            )
        except (KeyError, TypeError, ValueError) as e:
            raise DataError(f"{p}:{n}: not an AI rating line ({type(e).__name__}: {e})") from None
        out.append(r)
    return out


def write_ai_ratings(ratings: Iterable[AIRating], path: str | Path) -> Path:
    """Write ratings as the AI rater's ``ratings.jsonl`` (``path`` is the file, or a folder that
    gets one), e.g. simulated ones (:func:`seerbench.complementarity.simulate_ai_ratings`)."""
    p = Path(path)
    if p.suffix != ".jsonl":
        p.mkdir(parents=True, exist_ok=True)
        p = p / "ratings.jsonl"
    return atomic_write_lines(p, (json.dumps(asdict(r)) for r in ratings))
