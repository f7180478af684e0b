"""Study items: loading them from the manifest's sources and building catch trials.

An item is what one rater judges once: a question (with its hidden passage and per-option
material) and, for items from a finished protocol run, the transcript of one answer case.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seerbench.errors import ConfigError, DataError
from seerbench.study._manifest import Condition, ItemSource, StudyManifest
from seerbench.types import Question, Transcript

__all__ = ["StudyItem", "build_catch_trials", "eligible", "load_items"]


@dataclass
class StudyItem:
    """One judgeable unit.

    ``answer_case`` is the option the transcript argues for (items from a results file), ``catch``
    is ``None`` for real items, ``"mismatch"`` for catch trials built as in seed 004 and
    ``"explicit"`` for ready-made ones.
    """

    key: str
    question: Question
    transcript: Transcript | None = None
    answer_case: str | None = None
    catch: str | None = None

    @property
    def correct(self) -> str:
        """The true option's label ('' when a question has no single true option)."""
        t = self.question.true_cases
        return t[0].short if len(t) == 1 else ""

    def to_json(self) -> str:
        return json.dumps(
            {
                "question": self.question.model_dump(mode="json"),
                "transcript": self.transcript.model_dump(mode="json") if self.transcript else None,
            }
        )

    @classmethod
    def from_row(cls, key: str, data: str, answer_case: str | None, catch: str | None) -> StudyItem:
        d = json.loads(data)
        tr = d.get("transcript")
        return cls(
            key=key,
            question=Question.model_validate(d["question"]),
            transcript=Transcript.model_validate(tr) if tr else None,
            answer_case=answer_case,
            catch=catch,
        )


def _resolve(path: str, base: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else base / p


def _read_jsonl(path: Path, where: str) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise ConfigError(f"{where}: file {path} does not exist")
    out = []
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{i}: not valid JSON ({e.msg})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path}:{i}: expected a JSON object")
            out.append((i, obj))
    return out


def _question(obj: Any, where: str) -> Question:
    try:
        return Question.model_validate(obj)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise DataError(f"{where}: not a valid question ({loc}: {first['msg']})") from None


def _results_items(path: Path, catch: bool) -> list[StudyItem]:
    """Items from a results.jsonl: lines with ``question`` and ``answer_cases``.

    ``answer_cases`` may be a list of objects with ``short`` and ``transcript`` or a mapping from
    the label to such an object; entries without a transcript are skipped, other keys ignored.
    """
    items = []
    for i, obj in _read_jsonl(path, "items.results"):
        where = f"{path}:{i}"
        if "question" not in obj:
            raise DataError(f"{where}: a results line needs a 'question' object")
        q = _question(obj["question"], where)
        cases = obj.get("answer_cases") or []
        if isinstance(cases, dict):
            cases = [{"short": k, **(v if isinstance(v, dict) else {})} for k, v in cases.items()]
        if not isinstance(cases, list):
            raise DataError(f"{where}: 'answer_cases' must be a list or a mapping")
        for c in cases:
            if not isinstance(c, dict) or not c.get("transcript"):
                continue
            short = str(c.get("short") or c.get("answer_case") or "")
            if short not in q.shorts:
                raise DataError(f"{where}: answer case {short!r} is not an option of question {q.id!r}")
            try:
                tr = Transcript.model_validate(c["transcript"])
            except ValidationError as e:
                raise DataError(f"{where}: invalid transcript for answer case {short!r}: {e.errors()[0]['msg']}") from None
            key = f"{'catch:' if catch else ''}{q.id}#{short}"
            items.append(StudyItem(key, q, tr, short, "explicit" if catch else None))
    return items


def _source_items(src: ItemSource, base: Path, index: int) -> list[StudyItem]:
    kind = "explicit" if src.catch else None
    prefix = "catch:" if src.catch else ""
    if src.question is not None:
        q = _question(src.question, f"items.{index}.question")
        return [StudyItem(prefix + q.id, q, catch=kind)]
    if src.questions is not None:
        path = _resolve(src.questions, base)
        return [
            StudyItem(prefix + (q := _question(obj, f"{path}:{i}")).id, q, catch=kind)
            for i, obj in _read_jsonl(path, f"items.{index}.questions")
        ]
    assert src.results is not None
    return _results_items(_resolve(src.results, base), src.catch)


def load_items(manifest: StudyManifest, base_dir: str | Path = ".") -> list[StudyItem]:
    """All items named by the manifest (paths relative to ``base_dir``), real and explicit catch."""
    base = Path(base_dir)
    items: list[StudyItem] = []
    seen: set[str] = set()
    for n, src in enumerate(manifest.items):
        for it in _source_items(src, base, n):
            if it.key in seen:
                raise DataError(f"item {it.key!r} appears twice in the manifest's items")
            seen.add(it.key)
            if manifest.task in ("two_option", "factuality") and not it.question.is_binary:
                raise DataError(
                    f"question {it.question.id!r} needs exactly two options, one of them true, for task "
                    f"{manifest.task}"
                )
            if manifest.task == "expert_routing" and len(it.question.true_cases) != 1:
                raise DataError(f"question {it.question.id!r} needs exactly one true option")
            items.append(it)
    if not any(it.catch is None for it in items):
        raise ConfigError("the manifest's items hold no (non-catch) items to judge")
    return items


def build_catch_trials(items: list[StudyItem], seed: int) -> list[StudyItem]:
    """Catch trials as in seed 004: a question whose *wrong* option carries another question's
    argument and snippets, so an attentive rater sees which option is supported.

    The donor is preferably a question on the same passage (as in the seed), else any other
    question with material. Only binary question items (no transcript) are used.
    """
    rng = random.Random(seed)
    pool = [it for it in items if it.catch is None and it.transcript is None and it.question.is_binary]
    has_material = [it for it in pool if any(a.argument or a.quotes for a in it.question.answer_cases)]
    out = []
    for it in pool:
        q = it.question
        donors = [d for d in has_material if d.question.id != q.id]
        if not donors:
            continue
        same = [d for d in donors if q.source_text and d.question.source_text == q.source_text]
        donor = rng.choice(same or donors).question
        material = rng.choice([a for a in donor.answer_cases if a.argument or a.quotes])
        false = next(a for a in q.answer_cases if not a.is_true)
        cases = [
            a.model_copy(update={"argument": material.argument, "quotes": list(material.quotes)})
            if a.short == false.short
            else a
            for a in q.answer_cases
        ]
        cq = q.model_copy(update={"answer_cases": cases, "metadata": {**q.metadata, "catch_donor": donor.id}})
        out.append(StudyItem(f"catch:{q.id}", cq, catch="mismatch"))
    return out


def eligible(item: StudyItem, cond: Condition, task: str) -> bool:
    """Whether ``item`` can be shown under ``cond``: transcript conditions need a transcript,
    others take question items; seed-004 catch trials need snippets or arguments on screen."""
    if task == "factuality":
        return item.transcript is None
    wants_transcript = "transcript" in cond.show
    if wants_transcript != (item.transcript is not None):
        return False
    if item.catch == "mismatch":
        return "snippets" in cond.show or "arguments" in cond.show
    return True
