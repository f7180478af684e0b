"""Study items: loading them from the manifest's sources and building catch trials.

An item is what one rater judges once: a question (with its hidden passage and per-option
material) and, for items from a finished protocol run, the transcript of one answer case.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seerbench.conditions import has_passage, make_catch_trials
from seerbench.datasets import DuplicateQuestions, read_questions_jsonl
from seerbench.errors import ConfigError, DataError
from seerbench.store import RecordReader
from seerbench.study._critique_items import critique_items, validation_items
from seerbench.study._item import StudyItem
from seerbench.study._manifest import Condition, ItemSource, StudyManifest
from seerbench.types import Question, Transcript

__all__ = ["StudyItem", "build_catch_trials", "eligible", "load_items"]


def _resolve(path: str, base: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else base / p


def _existing(path: Path, where: str) -> Path:
    """A file the manifest names; a missing one is an error in the manifest (naming its key)."""
    if not path.is_file():
        raise ConfigError(f"{where}: file {path} does not exist")
    return path


def _line_key(rec: dict[str, Any]) -> Any:
    """A results line's question: ``question_id`` (as ``seerbench run`` writes it) or the id of its
    ``question`` (a hand-made file)."""
    q = rec.get("question")
    return rec.get("question_id") or (q.get("id") if isinstance(q, dict) else None)


def _results_lines(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """The lines of a results file, read through the record store as ``stats`` reads them: a torn
    last line, a question's second line and a line of another config (beside a run's
    ``cell.json``) are skipped with a warning; any other unusable line is refused, naming it."""
    from seerbench.runs import cell_fingerprint

    reader = RecordReader(
        path, _line_key, fingerprint=cell_fingerprint(path), strict=True, refuse_duplicates=False
    )
    for n, rec in reader.numbered():
        yield f"{path.name}:{n}", rec


def _question(obj: Any, where: str) -> Question:
    try:
        return Question.model_validate(obj)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise DataError(f"{where}: not a valid question ({loc}: {first['msg']})") from None


def _case_transcript(
    c: dict[str, Any], q: Question, protocol: str, where: str, short: str
) -> Transcript | None:
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
        raise DataError(
            f"{where}: invalid transcript for answer case {short!r}: {e.errors()[0]['msg']}"
        ) from None


def _results_items(path: Path, catch: bool) -> list[StudyItem]:
    """Items from a results.jsonl: lines with ``question`` and ``answer_cases``.

    ``answer_cases`` may be a list of objects with ``short`` and a transcript or a mapping from the
    label to such an object; the transcript is the case's ``transcript`` or, in the lines
    ``seerbench run`` writes, ``case_probs.transcript`` (a list of turns). Entries without
    transcript turns (NaiveJudge, BlindTrust) are skipped, other keys ignored. A symmetric run (a
    debate: one transcript for both answer cases) gives one item, keyed ``question_id#both``.
    """
    items = []
    for where, obj in _results_lines(_existing(path, "items.results")):
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
    if src.critiques is not None:
        crit = _existing(_resolve(src.critiques, base), f"items.{index}.critiques")
        if src.judgments is None:
            return critique_items(crit)
        return validation_items(_existing(_resolve(src.judgments, base), f"items.{index}.judgments"), crit)
    if src.ratings is not None:
        from seerbench.factcheck import rating_questions

        return [
            StudyItem(prefix + q.id, q, catch=kind)
            for q in rating_questions(_resolve(src.ratings, base), src.max_confidence)
        ]
    if src.questions is not None:
        path = _existing(_resolve(src.questions, base), f"items.{index}.questions")
        return [StudyItem(prefix + q.id, q, catch=kind) for q in read_questions_jsonl(path)]
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
            wants_critique = manifest.task in ("critique", "validation")
            if wants_critique != ("critique" in it.question.metadata):
                raise DataError(
                    f"item {it.key!r}: task {manifest.task} needs items from "
                    + (
                        "'critiques' (a critiques.jsonl)"
                        if wants_critique
                        else "questions or results, not 'critiques'"
                    )
                )
            if manifest.task == "critique" and src.judgments is not None:
                raise DataError(f"items.{n}: 'judgments' are items of task validation, not critique")
            if manifest.task == "validation" and src.judgments is None:
                raise DataError(
                    f"items.{n}: task validation takes 'judgments' "
                    "(a critique study's export) with 'critiques'"
                )
            items.append(it)
    if not any(it.catch is None for it in items):
        raise ConfigError("the manifest's items hold no (non-catch) items to judge")
    return items


def build_catch_trials(items: list[StudyItem], seed: int) -> list[StudyItem]:
    """Seed 004's catch trials for a study: :func:`seerbench.conditions.make_catch_trials` (the one
    rule: the wrong option carries another question's argument and snippets, preferably from the
    same passage) with ``fraction=1`` over the binary question items (no transcript).

    A catch item keeps its question's id (the catch question's ``ct_`` id goes back to the
    original), so the study's rule that a rater never sees a question twice covers it; its key is
    ``catch:<id>`` and ``catch`` is ``"mismatch"``.
    """
    pool = [
        it.question for it in items if it.catch is None and it.transcript is None and it.question.is_binary
    ]
    return [
        StudyItem(
            f"catch:{ct.metadata['catch_of']}",
            ct.model_copy(update={"id": ct.metadata["catch_of"]}),
            catch="mismatch",
        )
        for ct in make_catch_trials(pool, fraction=1.0, seed=seed)
    ]


def eligible(item: StudyItem, cond: Condition, task: str) -> bool:
    """Whether ``item`` can be shown under ``cond``: transcript conditions need a transcript,
    others take question items; seed-004 catch trials need a condition where they can be noticed
    (:attr:`seerbench.conditions.JudgingCondition.fits_mismatch_catch`: snippets or arguments)."""
    if task == "factuality":
        return item.transcript is None
    if task in ("critique", "validation"):
        kind = item.question.metadata.get("critique", {}).get("answer_kind")
        return not cond.answer_kinds or kind in cond.answer_kinds
    wants_transcript = "transcript" in cond.show
    if wants_transcript != (item.transcript is not None):
        return False
    if item.catch == "mismatch":
        return cond.judging.fits_mismatch_catch
    return True


def dedupe_items(items: list[StudyItem]) -> tuple[list[StudyItem], list[tuple[str, str]]]:
    """Drop questions that repeat an earlier question's content under another id.

    Two questions are the same when their text, option texts and passage (``source_text``, or
    ``metadata.passage_id`` when there is no text) agree, ignoring case and white space
    (:class:`seerbench.datasets.DuplicateQuestions`, the rule ``seerbench run`` merges by too); the
    published single_turn_debate data has such pairs (e.g. 20006_10 and 20006_12). Left in, one
    rater could judge the same question twice. The first id is kept; returns the kept items and
    (dropped id, kept id) pairs. Raises :class:`DataError` when duplicates disagree about the answer.
    """
    same = DuplicateQuestions()
    out = [it for it in items if same.first(it.question) is None]
    return out, sorted(same.merged)


def missing_passages(items: list[StudyItem], manifest: StudyManifest) -> dict[str, list[str]]:
    """Per condition that shows the passage: the keys of items it would show with no passage."""
    out: dict[str, list[str]] = {}
    if manifest.task == "factuality":
        return out
    for cond in manifest.conditions:
        if not cond.judging.needs_source_text:
            continue
        keys = [it.key for it in items if eligible(it, cond, manifest.task) and not has_passage(it.question)]
        if keys:
            out[cond.name] = keys
    return out
