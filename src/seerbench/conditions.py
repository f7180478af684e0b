"""Seed 004's judging conditions and catch trials: the one home every part of seerbench uses.

**Judging conditions** say what a judge (human or model) sees besides the question and its
options. The seed's letters: **P** = the passage (the question's hidden ``source_text``), **S** =
each option's snippets (quotes), **A** = each option's argument.

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

The seed ran P, PS and PSA; S and SA are PS and PSA without the passage (for data without
passages), Q is the no-material baseline. Names are case-insensitive; no other letter combination
is a condition (a study may still show any parts through a mapping, see ``docs/study.md``).

Users: :func:`judge_material` (datasets), ``EvidenceDebate(condition=...)`` (the conditions that
show snippets, :data:`EVIDENCE_CONDITIONS`), and the study manifest's shorthand conditions.

**Catch trials** (:func:`make_catch_trials`) follow the seed's Appendix E: the argument and
snippets of another question on the same passage go onto the *wrong* option, so an attentive
judge sees which option is supported. They fit the conditions that show snippets or arguments
(:attr:`JudgingCondition.fits_mismatch_catch`).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from seerbench.errors import ConfigError, DataError
from seerbench.types import AnswerCase, Question

__all__ = [
    "EVIDENCE_CONDITIONS",
    "JUDGING_CONDITIONS",
    "LETTERS",
    "PARTS",
    "JudgeMaterial",
    "JudgingCondition",
    "OptionMaterial",
    "canonical_condition",
    "get_condition",
    "has_material",
    "has_passage",
    "judge_material",
    "make_catch_trials",
]

PARTS: tuple[str, ...] = ("passage", "snippets", "arguments")
"""The parts a judging condition can show, in the order of the seed's letters."""
LETTERS: dict[str, str] = {"P": "passage", "S": "snippets", "A": "arguments"}


def has_passage(question: Question) -> bool:
    """Whether ``question`` has a passage to show: a ``source_text`` that is not only white space
    (a blank passage is no passage: a judge would see nothing and no snippet could be found)."""
    return bool((question.source_text or "").strip())


def has_material(case: AnswerCase) -> bool:
    """Whether an option carries human material: an argument or at least one snippet."""
    return bool(case.argument) or bool(case.quotes)


@dataclass(frozen=True)
class JudgingCondition:
    """What a judge sees besides the question and its options.

    ``show`` holds the shown parts of :data:`PARTS` in P, S, A order; ``name`` is the seed's
    letters (``"Q"`` when nothing is shown).
    """

    name: str
    show: tuple[str, ...]
    description: str = ""
    aliases: tuple[str, ...] = ()

    @classmethod
    def from_show(cls, show: Iterable[str]) -> JudgingCondition:
        """The condition showing the seed parts among ``show`` (other entries, e.g. a study's
        ``transcript``, are not seed parts and are ignored): a table entry when there is one."""
        parts = tuple(p for p in PARTS if p in set(show))
        name = "".join(k for k, v in LETTERS.items() if v in parts) or "Q"
        return JUDGING_CONDITIONS.get(name) or cls(name, parts)

    @property
    def passage(self) -> bool:
        return "passage" in self.show

    @property
    def snippets(self) -> bool:
        return "snippets" in self.show

    @property
    def arguments(self) -> bool:
        return "arguments" in self.show

    @property
    def needs_source_text(self) -> bool:
        """Whether the question must have a passage (:func:`has_passage`) to be judged here."""
        return self.passage

    @property
    def fits_mismatch_catch(self) -> bool:
        """Whether the seed's catch trials (wrong option with another question's material) can
        be noticed here: only when snippets or arguments are on screen."""
        return self.snippets or self.arguments

    def missing(self, question: Question) -> str | None:
        """What ``question`` lacks for this condition, as a message, or None when nothing."""
        if self.passage and not has_passage(question):
            plain = self.name.replace("P", "") or "Q"
            return (
                f"condition {self.name} shows the passage, but question {question.id!r} has no source_text "
                f"(for single_turn_debate pass quality_path=...; or use condition {plain})"
            )
        if self.snippets and not any(a.quotes for a in question.answer_cases):
            return f"condition {self.name} shows snippets, but question {question.id!r} has none"
        if self.arguments and not any(a.argument for a in question.answer_cases):
            return (
                f"condition {self.name} shows arguments, but question {question.id!r} has no "
                "human-written arguments"
            )
        return None


JUDGING_CONDITIONS: dict[str, JudgingCondition] = {
    c.name: c
    for c in (
        JudgingCondition("Q", (), "question and options only", ("question", "none")),
        JudgingCondition("S", ("snippets",), "question, options and each option's snippets", ("snippets",)),
        JudgingCondition(
            "SA",
            ("snippets", "arguments"),
            "question, options, each option's snippets and argument",
            ("snippets+arguments",),
        ),
        JudgingCondition("P", ("passage",), "question, options and the passage", ("passage",)),
        JudgingCondition(
            "PS",
            ("passage", "snippets"),
            "question, options, the passage and each option's snippets",
            ("passage+snippets",),
        ),
        JudgingCondition(
            "PSA",
            ("passage", "snippets", "arguments"),
            "question, options, the passage, each option's snippets and argument (the seed's main condition)",
            ("passage+snippets+arguments",),
        ),
    )
}
"""The judging conditions by name (see the module)."""

EVIDENCE_CONDITIONS: tuple[str, ...] = tuple(n for n, c in JUDGING_CONDITIONS.items() if c.snippets)
"""The conditions that show snippets: EvidenceDebate's (its quotes always reach the judge)."""

_BY_ALIAS = {a: c for c in JUDGING_CONDITIONS.values() for a in (c.name.lower(), *c.aliases)}


def get_condition(condition: str) -> JudgingCondition:
    """The judging condition named ``condition`` (a name or alias, any case); :class:`ConfigError`
    for anything else."""
    c = _BY_ALIAS.get(condition.strip().lower())
    if c is None:
        raise ConfigError(
            f"unknown judging condition {condition!r}; use one of {', '.join(JUDGING_CONDITIONS)} "
            "(or their long names)"
        )
    return c


def canonical_condition(condition: str) -> str:
    """The canonical name ('Q', 'S', 'SA', 'P', 'PS', 'PSA') of a condition or alias."""
    return get_condition(condition).name


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
    """What a judge may see of ``question`` under ``condition`` (see :data:`JUDGING_CONDITIONS`).

    Raises :class:`DataError` when the condition needs material the question lacks: a passage
    (:func:`has_passage`: a blank ``source_text`` counts as none) for P conditions, human snippets
    for S, human arguments for A.
    """
    c = get_condition(condition)
    problem = c.missing(question)
    if problem is not None:
        raise DataError(problem)
    return JudgeMaterial(
        condition=c.name,
        question_id=question.id,
        question=question.text,
        passage=question.source_text if c.passage else None,
        options=[
            OptionMaterial(
                short=a.short,
                text=a.long,
                snippets=list(a.quotes) if c.snippets else None,
                argument=(a.argument or "") if c.arguments else None,
            )
            for a in question.answer_cases
        ],
    )


def _passage_key(q: Question) -> str | None:
    """Which passage a question is on: ``metadata['passage_id']`` where the data names it
    (single_turn_debate, with or without its articles), else the passage text; None without both."""
    pid = q.metadata.get("passage_id")
    if pid is not None and str(pid) != "":
        return f"id:{pid}"
    text = " ".join((q.source_text or "").split())
    return f"text:{text}" if text else None


def _same_text(a: Question, b: Question) -> bool:
    return " ".join(a.text.split()).casefold() == " ".join(b.text.split()).casefold()


def _rank(seed: int, qid: str) -> str:
    return hashlib.sha256(f"catch:{seed}:{qid}".encode()).hexdigest()


def make_catch_trials(questions: Sequence[Question], *, fraction: float = 0.1, seed: int) -> list[Question]:
    """Catch trials as in seed 004 (Appendix E): copies of questions whose *wrong* option carries
    the argument and snippets of another question on the same passage, so an attentive judge picks
    the true option. The one rule:

    - **Targets**: binary questions (two options, one true) whose true option has human material
      (an argument or a snippet), so the true option keeps related material while the wrong one
      shows unrelated material. Questions that are themselves catch trials are skipped.
    - **How many**: ``round(fraction * number of targets)``, the targets ranked by a hash of
      ``(seed, question id)``; ``fraction=1`` makes one per target (the study does that).
    - **Donor**: another question with material and another text (a duplicate of the target under
      another id would carry *related* material), preferably on the same passage
      (``metadata['passage_id']``, else the same passage text), else any such question. One of
      the donor's options with material is drawn, and its argument and snippets, as they are,
      replace the wrong option's.
    - **Randomness** depends only on ``(seed, question id)`` and the donors available, never on the
      order of ``questions``' other members. Targets without any donor get no catch trial.

    Ids get the upstream prefix ``ct_``; ``metadata`` gains ``catch_trial=True``, ``catch_of``
    (the original id), ``catch_donor`` (the donor's id) and ``catch_seed``; the wrong option's
    metadata gains ``catch_donor`` as ``donor_id/option``. Returned in the order of ``questions``.
    """
    if not 0 <= fraction <= 1:
        raise ConfigError(f"fraction must lie in [0, 1], got {fraction}")
    real = [q for q in questions if not q.metadata.get("catch_trial")]
    donors = sorted((q for q in real if any(has_material(a) for a in q.answer_cases)), key=lambda q: q.id)
    targets = [q for q in real if q.is_binary and has_material(q.true_case)]
    chosen = {
        q.id for q in sorted(targets, key=lambda q: _rank(seed, q.id))[: round(fraction * len(targets))]
    }
    out: list[Question] = []
    for q in targets:
        if q.id not in chosen:
            continue
        others = [d for d in donors if d.id != q.id and not _same_text(d, q)]
        key = _passage_key(q)
        same = [d for d in others if key is not None and _passage_key(d) == key]
        pool = same or others
        if not pool:
            continue
        rng = random.Random(f"catch:{seed}:{q.id}")
        donor = rng.choice(pool)
        donor_case = rng.choice([a for a in donor.answer_cases if has_material(a)])
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
