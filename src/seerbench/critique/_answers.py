"""Answers to critique (seed 002, section 3.2): a model answer, a reference answer, and a
misleading answer with a planted flaw and its intended critique.

The planted flaws are made by construction, so the intended critique is known:

- ``number``: one number of the reference answer is changed everywhere it occurs (the final result
  of an arithmetic answer becomes a wrong value);
- ``entity``: one named entity (a capitalised phrase) is swapped for another one of the question's
  material (the wrong option, or another name in the passage);
- ``omission``: one supporting sentence of a multi-sentence reference answer is left out.

The reference answer is the true option with the dataset's worked steps (arithmetic) or supporting
facts (reading) when the question carries them, so it has something to omit and numbers to change.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seerbench.errors import DataError
from seerbench.records import CritiquedAnswer
from seerbench.types import Question

__all__ = [
    "ANSWER_TEMPERATURES",
    "FLAW_KINDS",
    "PlantedFlaw",
    "answer_correct",
    "answer_temperature",
    "plant_flaw",
    "read_user_answers",
    "reference_answer",
]

FLAW_KINDS = ("number", "entity", "omission")
#: The seed's "randomly chosen temperature": uniform on {0, 0.1, ..., 1}.
ANSWER_TEMPERATURES = tuple(round(i / 10, 1) for i in range(11))

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\d)")
_ENTITY = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class PlantedFlaw:
    """A misleading answer and what makes it wrong."""

    kind: str
    answer: str
    flaw: str
    critique: str
    original: str  # the text that was changed or left out
    replacement: str | None  # what it became (None for an omission)


def reference_answer(question: Question) -> str:
    """The honest answer: the true option, with the dataset's steps or supporting facts."""
    truth = question.true_case.long.strip()
    md = question.metadata
    steps = [str(s).strip() for s in md.get("steps") or []]
    facts = [str(s).strip() for s in md.get("supporting_facts") or []]
    body = [s if s.endswith(".") else s + "." for s in (steps or facts)]
    return " ".join([*body, f"The answer is {truth}."])


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text.strip()) if s]


def _other_number(value: str, question: Question, ref: str, rng: random.Random) -> str:
    """A number the answer does not contain: a wrong option's value when it is one, else value
    plus or minus a small step."""
    taken = set(_NUMBER.findall(ref))
    for a in question.answer_cases:
        if a.value < 1 and _NUMBER.fullmatch(a.long.strip()) and a.long.strip() not in taken:
            return a.long.strip()
    num = float(value)
    digits = len(value.split(".")[1]) if "." in value else 0
    for step in rng.sample([1, 2, 3, 4, 5, 10, 11, 12], 8):
        new = num + step if rng.random() < 0.5 or num - step < 0 else num - step
        text = f"{new:.{digits}f}"
        if text not in taken:
            return text
    return f"{num * 10 + 7:.{digits}f}"


def _plant_number(ref: str, question: Question, rng: random.Random) -> PlantedFlaw | None:
    nums = _NUMBER.findall(ref)
    if not nums:
        return None
    truth = question.true_case.long.strip()
    value = truth if truth in nums else nums[-1]
    new = _other_number(value, question, ref, rng)
    pattern = re.compile(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)")
    answer = pattern.sub(new, ref)
    return PlantedFlaw(
        "number",
        answer,
        f"changed number: {value} -> {new}",
        f"The answer states {new} where the correct value is {value}.",
        value,
        new,
    )


def _plant_entity(ref: str, question: Question, rng: random.Random) -> PlantedFlaw | None:
    truth = question.true_case.long.strip()
    present = set(_ENTITY.findall(ref)) - {"The"}
    if truth in present:
        target = truth
    else:
        target = next((e for e in _ENTITY.findall(ref) if e in present and " " in e), "") or min(
            present, default=""
        )
    if not target:
        return None
    # a replacement the question's material offers: a wrong option first, else another passage name
    wrong = [
        a.long.strip() for a in question.answer_cases if a.value < 1 and _ENTITY.fullmatch(a.long.strip())
    ]
    pool = sorted(set(_ENTITY.findall(question.source_text or "")) - present - {"The"})
    # a passage name like the target: as many words, and a sentence subject when the target is one
    starts = {
        m.group(0) for m in re.finditer(r"(?:^|(?<=[.!?] ))" + _ENTITY.pattern, question.source_text or "")
    }
    alike = [e for e in pool if e.count(" ") == target.count(" ") and (e in starts) == (target in starts)]
    choices = [w for w in wrong if w != target] or alike or pool
    if not choices:
        return None
    new = choices[0] if wrong and choices[0] in wrong else rng.choice(choices)
    answer = re.sub(rf"\b{re.escape(target)}\b", new, ref)
    return PlantedFlaw(
        "entity",
        answer,
        f"swapped entity: {target} -> {new}",
        f"The answer names {new} where it should name {target}.",
        target,
        new,
    )


def _plant_omission(ref: str, question: Question, rng: random.Random) -> PlantedFlaw | None:
    sents = _sentences(ref)
    if len(sents) < 2:
        return None
    i = rng.randrange(len(sents) - 1)  # never the conclusion
    dropped = sents[i]
    answer = " ".join(s for j, s in enumerate(sents) if j != i)
    return PlantedFlaw(
        "omission",
        answer,
        f"omitted key point: {dropped}",
        f"The answer leaves out a key point: {dropped}",
        dropped,
        None,
    )


_PLANTERS = {"number": _plant_number, "entity": _plant_entity, "omission": _plant_omission}


def plant_flaw(
    question: Question, kinds: tuple[str, ...] = FLAW_KINDS, *, seed: int = 0
) -> PlantedFlaw | None:
    """A misleading version of the reference answer with one planted flaw of one of ``kinds``
    (tried in an order drawn from ``seed`` and the question id; the first that applies wins), or
    None when none applies to this question."""
    rng = random.Random(f"{seed}|flaw|{question.id}")
    order = list(kinds)
    rng.shuffle(order)
    ref = reference_answer(question)
    for kind in order:
        out = _PLANTERS[kind](ref, question, rng)
        if out is not None and out.answer != ref:
            return out
    return None


def answer_temperature(question_id: str, seed: int = 0) -> float:
    """The seed's randomly chosen temperature for a model answer, reproducible per question."""
    return random.Random(f"{seed}|answer-temperature|{question_id}").choice(ANSWER_TEMPERATURES)


def _folded(text: str) -> str:
    return " ".join(text.lower().split())


_FINAL = re.compile(r"(?i)\banswer is:?\s*(.+?)\s*(?:\.\s*)?$", re.M)


def answer_correct(question: Question, answer: str) -> bool | None:
    """Whether a free-text answer picks the true option. Its conclusion is what counts: the text
    after its last "the answer is" when it has one, else the whole text. True when that names the
    true option's text and no wrong one, False when it names a wrong one and not the true one,
    None otherwise (not known)."""
    finals = _FINAL.findall(answer)
    text = _folded(finals[-1] if finals else answer)

    def named(a: str) -> bool:
        return re.search(rf"(?<!\w){re.escape(_folded(a))}(?!\w)", text) is not None

    right = any(named(a.long) for a in question.true_cases)
    wrong = any(named(a.long) for a in question.answer_cases if a.value < 1)
    if right and not wrong:
        return True
    if wrong and not right:
        return False
    return None


_USER_KEYS = {
    "question_id",
    "question",
    "passage",
    "answer_id",
    "answer_kind",
    "answer",
    "correct",
    "intended_flaw",
    "intended_critique",
    "metadata",
}


def read_user_answers(path: str | Path) -> list[CritiquedAnswer]:
    """Answers to critique from a JSONL file: one answer per line with ``question_id``,
    ``question``, ``answer_kind`` (model, reference or misleading), ``answer`` and optionally
    ``answer_id`` (default ``<question_id>:<kind>``), ``passage``, ``correct``, and, for a
    misleading answer, ``intended_flaw`` and ``intended_critique``."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"answers file {p} does not exist")
    out: list[CritiquedAnswer] = []
    seen: set[str] = set()
    for n, raw in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            row: Any = json.loads(raw)
        except json.JSONDecodeError as e:
            raise DataError(f"{p}:{n}: not JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise DataError(f"{p}:{n}: an answer must be a JSON object")
        unknown = sorted(set(row) - _USER_KEYS)
        if unknown:
            raise DataError(f"{p}:{n}: unknown keys {unknown}; an answer has {sorted(_USER_KEYS)}")
        row.setdefault("answer_id", f"{row.get('question_id')}:{row.get('answer_kind')}")
        try:
            ans = CritiquedAnswer.model_validate(row)
        except ValueError as e:
            first = str(e).splitlines()
            raise DataError(f"{p}:{n}: {' '.join(first[1:3]).strip() or first[0]}") from None
        if ans.answer_id in seen:
            raise DataError(
                f"{p}:{n}: answer_id {ans.answer_id!r} appears twice; give each answer its own answer_id"
            )
        seen.add(ans.answer_id)
        out.append(ans)
    if not out:
        raise DataError(f"answers file {p} holds no answers")
    return out
