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


def _case_transcript(c: dict[str, Any], q: Question, protocol: str, where: str, short: str) -> Transcript | None:
    """The transcript of one answer case: a Transcript object or a list of turns, under the case
    itself (``transcript``) or, as ``seerbench run`` writes it, under ``case_probs.transcript``."""
    raw = c.get("transcript")
    if raw is None and isinstance(c.get("case_probs"), dict):
        raw = c["case_probs"].get("transcript")
    if not raw:
        return None
    try:
        if isinstance(raw, list):
            return Transcript.model_validate({"question_id": q.id, "protocol": protocol, "turns": raw})
        return Transcript.model_validate(raw)
    except ValidationError as e:
        raise DataError(f"{where}: invalid transcript for answer case {short!r}: {e.errors()[0]['msg']}") from None


def _results_items(path: Path, catch: bool) -> list[StudyItem]:
    """Items from a results.jsonl: lines with ``question`` and ``answer_cases``.

    ``answer_cases`` may be a list of objects with ``short`` and a transcript or a mapping from the
    label to such an object; the transcript is the case's ``transcript`` or, in the lines
    ``seerbench run`` writes, ``case_probs.transcript`` (a list of turns). Entries without
    transcript turns (NaiveJudge, BlindTrust) are skipped, other keys ignored. A symmetric run (a
    debate: one transcript for both answer cases) gives one item, keyed ``question_id#both``.
    """
    items = []
    for i, obj in _read_jsonl(path, "items.results"):
        where = f"{path}:{i}"
        if "question" not in obj:
            raise DataError(f"{where}: a results line needs a 'question' object")
        q = _question(obj["question"], where)
        protocol = str(obj.get("protocol") or "unknown")
        cases = obj.get("answer_cases") or []
        if isinstance(cases, dict):
            cases = [{"short": k, **(v if isinstance(v, dict) else {})} for k, v in cases.items()]
        if not isinstance(cases, list):
            raise DataError(f"{where}: 'answer_cases' must be a list or a mapping")
        found: list[tuple[str, Transcript]] = []
        for c in cases:
            if not isinstance(c, dict):
                continue
            short = str(c.get("short") or c.get("answer_case") or "")
            tr = _case_transcript(c, q, protocol, where, short)
            if tr is None or not tr.turns:
                continue
            if short not in q.shorts:
                raise DataError(f"{where}: answer case {short!r} is not an option of question {q.id!r}")
            found.append((short, tr))
        prefix = "catch:" if catch else ""
        kind = "explicit" if catch else None
        if obj.get("symmetric") and len(found) > 1 and all(t == found[0][1] for _, t in found):
            items.append(StudyItem(f"{prefix}{q.id}#both", q, found[0][1], None, kind))
            continue
        items.extend(StudyItem(f"{prefix}{q.id}#{short}", q, tr, short, kind) for short, tr in found)
    if not items:
        raise DataError(
            f"{path}: no line holds a transcript with turns to show (a NaiveJudge or BlindTrust run has "
            "none); use the results.jsonl of a protocol with agents, e.g. Consultancy or a debate"
        )
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


def _norm(s: str | None) -> str:
    return " ".join((s or "").split()).casefold()


def dedupe_items(items: list[StudyItem]) -> tuple[list[StudyItem], list[tuple[str, str]]]:
    """Drop questions that repeat an earlier question's content under another id.

    Two questions are the same when their text, option texts and passage (``source_text``, or
    ``metadata.passage_id`` when there is no text) agree, ignoring case and white space; the
    published single_turn_debate data has such pairs (e.g. 20006_10 and 20006_12). Left in, one
    rater could judge the same question twice. The first id is kept; returns the kept items and
    (dropped id, kept id) pairs. Raises :class:`DataError` when duplicates disagree about the answer.
    """
    first: dict[tuple[Any, ...], tuple[str, frozenset[str]]] = {}
    merged: dict[str, str] = {}
    out = []
    for it in items:
        q = it.question
        key = (
            _norm(q.text),
            _norm(q.source_text) or str(q.metadata.get("passage_id") or ""),
            tuple(sorted(_norm(c.long) for c in q.answer_cases)),
        )
        truth = frozenset(_norm(c.long) for c in q.true_cases)
        kept_id, kept_truth = first.setdefault(key, (q.id, truth))
        if kept_id == q.id:
            out.append(it)
            continue
        if truth != kept_truth:
            raise DataError(
                f"questions {kept_id!r} and {q.id!r} have the same text and options but different true "
                "answers; fix the data or remove one of them"
            )
        merged[q.id] = kept_id
    return out, sorted(merged.items())


def missing_passages(items: list[StudyItem], manifest: StudyManifest) -> dict[str, list[str]]:
    """Per condition that shows the passage: the keys of items it would show with no passage."""
    out: dict[str, list[str]] = {}
    if manifest.task == "factuality":
        return out
    for cond in manifest.conditions:
        if "passage" not in cond.show:
            continue
        keys = [
            it.key
            for it in items
            if eligible(it, cond, manifest.task) and not (it.question.source_text or "").strip()
        ]
        if keys:
            out[cond.name] = keys
    return out
