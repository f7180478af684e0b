"""single_turn_debate (Parrish et al. 2022, seed 004): human-written arguments for both options.

Real format (``all_arguments.jsonl``): one line per writing assignment with ``hit_id``,
``assignment_id``, ``worker_id`` and ``output_data``, a list of arguments, each with
``passage_id``, ``question_id``, ``question_text``, ``argue_for``, ``argue_against``,
``argue_for_id``/``argue_against_id`` (0/1, the original option order), ``selected_snippets``
(1-3 passage quotes; empty strings occur), ``argue_for_correct`` and ``argument``.

Arguments are paired by ``(passage_id, question_id)`` into one two-option question whose options
carry the human argument and its non-empty snippets. ``question_id`` restarts at 1 in every
passage, so the question id is ``"<passage_id>_<question_id>"``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from seerbench.datasets._common import Collector, Questions, RecordError, log, req
from seerbench.datasets._quality import quality_articles
from seerbench.tables import iter_jsonl
from seerbench.types import AnswerCase, Question

_FIELDS: dict[str, type | tuple[type, ...]] = {
    "passage_id": (str, int),
    "question_id": (str, int),
    "question_text": str,
    "argue_for": str,
    "argue_against": str,
    "argue_for_id": int,
    "argue_against_id": int,
    "selected_snippets": list,
    "argue_for_correct": bool,
    "argument": str,
}


def _check_argument(arg: Any) -> dict[str, Any]:
    for name, kind in _FIELDS.items():
        req(arg, name, kind)
    if {arg["argue_for_id"], arg["argue_against_id"]} != {0, 1}:
        raise RecordError(
            "argue_for_id/argue_against_id should be 0 and 1, "
            f"found {arg['argue_for_id']}/{arg['argue_against_id']}"
        )
    if not all(isinstance(s, str) for s in arg["selected_snippets"]):
        raise RecordError("selected_snippets should be a list of strings")
    return arg


def _pair(key: tuple[str, str], items: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> Question:
    if len(items) != 2:
        raise RecordError(f"expected 2 arguments (one per option), found {len(items)}")
    (_, a, ha), (_, b, hb) = sorted(items, key=lambda t: t[1]["argue_for_id"])
    if a["argue_for_id"] == b["argue_for_id"]:
        raise RecordError("both arguments argue for the same option")
    if a["argue_for_correct"] == b["argue_for_correct"]:
        raise RecordError(f"both arguments have argue_for_correct={a['argue_for_correct']}")
    if a["argue_for"] != b["argue_against"] or b["argue_for"] != a["argue_against"]:
        raise RecordError("the two arguments disagree about the option texts")
    if a["question_text"].strip() != b["question_text"].strip():
        raise RecordError("the two arguments disagree about the question text")

    def case(short: str, arg: dict[str, Any], hit: dict[str, Any]) -> AnswerCase:
        return AnswerCase(
            short=short,
            long=arg["argue_for"].strip(),
            value=1.0 if arg["argue_for_correct"] else 0.0,
            argument=arg["argument"],
            # Writers left unused snippet slots as empty strings; they are not quotes.
            quotes=[s for s in arg["selected_snippets"] if s.strip()],
            metadata={
                "original_index": arg["argue_for_id"],
                "worker_id": hit.get("worker_id"),
                "hit_id": hit.get("hit_id"),
                "assignment_id": hit.get("assignment_id"),
            },
        )

    passage_id, question_id = key
    return Question(
        id=f"{passage_id}_{question_id}",
        text=a["question_text"].strip(),
        answer_cases=[case("A", a, ha), case("B", b, hb)],
        metadata={
            "dataset": "single_turn_debate",
            "passage_id": passage_id,
            "question_id": question_id,
        },
    )


def load_single_turn_debate(
    path: str | Path,
    *,
    quality_path: str | Path | list[str | Path] | None = None,
    lenient: bool = False,
) -> Questions:
    """Load ``all_arguments.jsonl`` into two-option questions (option order as published; use
    :func:`binary_view` to shuffle). With ``quality_path`` (one or more QuALITY files), each
    question's passage becomes its hidden ``source_text``; questions whose passage is missing
    from those files keep ``source_text=None`` and are counted in the log."""
    coll = Collector(lenient=lenient, source=str(path))
    groups: dict[tuple[str, str], list[tuple[str, dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for rec in iter_jsonl(path):
        if rec.error is not None:
            coll.bad(rec.where, rec.error)
            continue
        try:
            args = req(rec.data, "output_data", list)
        except RecordError as e:
            coll.bad(rec.where, str(e), e)
            continue
        hit = {k: rec.data.get(k) for k in ("hit_id", "assignment_id", "worker_id")}
        for j, arg in enumerate(args):
            where = f"{rec.where} output_data[{j}]"
            try:
                _check_argument(arg)
            except RecordError as e:
                coll.bad(where, str(e), e)
                continue
            groups[(str(arg["passage_id"]), str(arg["question_id"]))].append((where, arg, hit))

    articles = quality_articles(quality_path) if quality_path is not None else {}
    missing = 0
    for key, items in groups.items():
        where = " and ".join(w for w, _, _ in items)
        try:
            q = _pair(key, items)
        except RecordError as e:
            coll.bad(where, f"question {key[0]}_{key[1]}: {e}", e)
            continue
        if quality_path is not None:
            text = articles.get(key[0])
            if text is None:
                missing += 1
            else:
                q = q.model_copy(update={"source_text": text})
        coll.add(q, where)
    if missing:
        log.warning("%d question(s) have no passage in the supplied QuALITY file(s)", missing)
    coll.out.sort(key=lambda q: (q.metadata["passage_id"], _num(q.metadata["question_id"])))
    return coll.finish()


def _num(s: str) -> tuple[int, str]:
    return (int(s), s) if s.isdigit() else (10**9, s)
