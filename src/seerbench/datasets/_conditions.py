"""What a judge may see: the judging conditions of seed 004, and its catch trials.

The seed's letters: **P** = the passage (the hidden ``source_text``), **S** = each option's
snippets (quotes), **A** = each option's argument. The question and its options are always shown.

=========  ==================================  ==================================
condition  shows besides question + options    aliases
=========  ==================================  ==================================
Q          nothing                             question, none
S          snippets                            snippets
SA         snippets + arguments                snippets+arguments
P          passage                             passage
PS         passage + snippets                  passage+snippets
PSA        passage + snippets + arguments      passage+snippets+arguments
=========  ==================================  ==================================

Conditions with P need the passage (e.g. single_turn_debate loaded with ``quality_path``);
without it, S and SA are the seed's PS and PSA minus the passage.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from seerbench.errors import ConfigError, DataError
from seerbench.types import Question

CONDITIONS: dict[str, str] = {
    "Q": "question and options only",
    "S": "question, options and each option's snippets",
    "SA": "question, options, each option's snippets and argument",
    "P": "question, options and the passage",
    "PS": "question, options, the passage and each option's snippets",
    "PSA": "question, options, the passage, each option's snippets and argument (the seed's main condition)",
}
_ALIASES = {
    "question": "Q",
    "none": "Q",
    "snippets": "S",
    "snippets+arguments": "SA",
    "passage": "P",
    "passage+snippets": "PS",
    "passage+snippets+arguments": "PSA",
}


def canonical_condition(condition: str) -> str:
    """The canonical name ('Q', 'S', 'SA', 'P', 'PS', 'PSA') of a condition or alias."""
    c = condition.strip()
    if c.upper() in CONDITIONS:
        return c.upper()
    if c.lower() in _ALIASES:
        return _ALIASES[c.lower()]
    raise ConfigError(
        f"unknown judging condition {condition!r}; use one of {', '.join(CONDITIONS)} (or their long names)"
    )


class OptionMaterial(BaseModel):
    """One option as the judge sees it."""

    model_config = ConfigDict(extra="forbid")
    short: str
    text: str
    snippets: list[str] | None = Field(default=None, description="Shown only in S conditions.")
    argument: str | None = Field(default=None, description="Shown only in A conditions.")


class JudgeMaterial(BaseModel):
    """Everything a judge may see for one question under one condition; never the ground truth."""

    model_config = ConfigDict(extra="forbid")
    condition: str
    question_id: str
    question: str
    options: list[OptionMaterial]
    passage: str | None = None

    def render(self) -> str:
        """Plain text for a model or human judge."""
        parts = [f"Question: {self.question}"]
        if self.passage is not None:
            parts.append(f"Passage:\n{self.passage}")
        for o in self.options:
            block = [f"Option {o.short}: {o.text}"]
            if o.snippets is not None:
                if o.snippets:
                    block += [f'  Snippet #{i}: "{s}"' for i, s in enumerate(o.snippets, start=1)]
                else:
                    block.append("  (no snippets)")
            if o.argument is not None:
                block.append(f"  Argument: {o.argument}")
            parts.append("\n".join(block))
        return "\n\n".join(parts)

    def __str__(self) -> str:
        return self.render()


def judge_material(question: Question, condition: str = "Q") -> JudgeMaterial:
    """What a judge may see of ``question`` under ``condition`` (see :data:`CONDITIONS`).

    Raises :class:`DataError` when the condition needs material the question lacks: the passage
    for P conditions, human snippets for S, human arguments for A.
    """
    c = canonical_condition(condition)
    if "P" in c and question.source_text is None:
        raise DataError(
            f"condition {c} shows the passage, but question {question.id!r} has no source_text "
            f"(for single_turn_debate pass quality_path=...; or use condition {c.replace('P', '') or 'Q'})"
        )
    if "S" in c and not any(a.quotes for a in question.answer_cases):
        raise DataError(f"condition {c} shows snippets, but question {question.id!r} has none")
    if "A" in c and not any(a.argument for a in question.answer_cases):
        raise DataError(
            f"condition {c} shows arguments, but question {question.id!r} has no human-written arguments"
        )
    return JudgeMaterial(
        condition=c,
        question_id=question.id,
        question=question.text,
        passage=question.source_text if "P" in c else None,
        options=[
            OptionMaterial(
                short=a.short,
                text=a.long,
                snippets=list(a.quotes) if "S" in c else None,
                argument=(a.argument or "") if "A" in c else None,
            )
            for a in question.answer_cases
        ],
    )


def make_catch_trials(questions: Sequence[Question], *, fraction: float = 0.1, seed: int) -> list[Question]:
    """Catch trials as in seed 004: copies of questions whose *incorrect* option carries the
    argument and snippets of another question from the same passage, so an attentive judge
    should pick the true option. About ``fraction`` of the questions (those with human material)
    are used; ids get the upstream prefix ``ct_`` and ``metadata['catch_trial']`` is True."""
    if not 0 <= fraction <= 1:
        raise ConfigError(f"fraction must lie in [0, 1], got {fraction}")
    eligible = [q for q in questions if q.is_binary and any(a.argument or a.quotes for a in q.answer_cases)]
    rng = random.Random(f"catch:{seed}")
    chosen = rng.sample(eligible, round(fraction * len(eligible)))
    by_passage: dict[object, list[Question]] = defaultdict(list)
    for q in eligible:
        by_passage[q.metadata.get("passage_id")].append(q)
    out: list[Question] = []
    for q in chosen:
        donors = [d for d in by_passage[q.metadata.get("passage_id")] if d.id != q.id] or [
            d for d in eligible if d.id != q.id
        ]
        if not donors:
            continue
        donor = rng.choice(donors)
        donor_case = rng.choice(donor.answer_cases)
        cases = [
            a
            if a.is_true
            else a.model_copy(
                update={
                    "argument": donor_case.argument,
                    "quotes": list(donor_case.quotes),
                    "metadata": {**a.metadata, "catch_donor": f"{donor.id}/{donor_case.short}"},
                }
            )
            for a in q.answer_cases
        ]
        meta = {
            **q.metadata,
            "catch_trial": True,
            "catch_of": q.id,
            "catch_donor": donor.id,
            "catch_seed": seed,
        }
        out.append(q.model_copy(update={"id": f"ct_{q.id}", "answer_cases": cases, "metadata": meta}))
    return out
