"""``seerbench critique CONFIG``: answers -> critiques at several temperatures, de-duplicated,
scored for helpfulness and sorted (seed 002, section 3.2).

Every model call goes through the model layer (disk cache, retries, concurrency, usage), so a
rerun of the same config costs no calls, and a run resumes: answers already in ``critiques.jsonl``
are kept, a folder written by another config is refused.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seerbench._lock import command_line, lock_folder
from seerbench._resume import claim_folder
from seerbench.critique._answers import (
    answer_correct,
    answer_temperature,
    plant_flaw,
    read_user_answers,
    reference_answer,
)
from seerbench.critique._assess import critique_summary, refine, validate_intended
from seerbench.critique._config import DEFAULT_TEMPERATURES, CritiqueConfig
from seerbench.critique._dedup import dedup
from seerbench.errors import DataError
from seerbench.models import USAGE_LOG, Model, UsageLog, default_tracker, elicit, get_model
from seerbench.quotes import verify_quote
from seerbench.records import Critique, CritiquedAnswer, dump_answer, read_critiques
from seerbench.store import append_line, atomic_write_text, keep_in_order
from seerbench.types import Question

__all__ = [
    "DEFAULT_TEMPERATURES",
    "CritiqueConfig",
    "CritiqueRun",
    "critique_answer",
    "generate_critiques",
    "helpfulness",
    "parse_critique",
    "sort_by_helpfulness",
]

# ---- prompts and parsing ------------------------------------------------------------------------

_QUOTE = re.compile(r'(?im)^\s*QUOTE\s*:\s*"?(.*?)"?\s*$')


def _material(ans: CritiquedAnswer) -> str:
    passage = f"Passage:\n{ans.passage.strip()}\n\n" if ans.passage else ""
    return f"{passage}Question: {ans.question.strip()}\n\nAnswer: {ans.answer.strip()}"


def critique_prompt(ans: CritiquedAnswer) -> str:
    return (
        f"{_material(ans)}\n\nWrite one critique of the answer: name one specific flaw (a wrong fact or "
        "number, a wrong name, a missing key point, or unclear reasoning) in one or two sentences. "
        'Then, on its own line, quote the words of the answer or passage it is about, as QUOTE: "<words>".'
    )


def parse_critique(text: str) -> tuple[str, str | None]:
    """The critique text and its quote (None when it gives none) from a model's reply."""
    m = _QUOTE.search(text)
    quote = m.group(1).strip() if m and m.group(1).strip() else None
    body = _QUOTE.sub("", text).strip()
    body = " ".join(body.split())
    return body, quote


def quote_verified(quote: str | None, ans: CritiquedAnswer) -> bool | None:
    """Whether the quote occurs verbatim in the answer or the passage (None with no quote)."""
    if quote is None:
        return None
    return bool(verify_quote(quote, ans.answer) or verify_quote(quote, ans.passage))


def helpfulness_prompt(ans: CritiquedAnswer, critique: str) -> str:
    return (
        f"{_material(ans)}\n\nCritique: {critique}\n\nIs this critique helpful: does it point out a real "
        "flaw in the answer that a careful reader should fix?\n"
        "A) Yes, it is helpful\nB) No, it is not helpful"
    )


async def helpfulness(model: Model, ans: CritiquedAnswer, critique: str, cfg: CritiqueConfig) -> float:
    """P(helpful) elicited from ``model`` (the elicitation chain's first method that works);
    raises :class:`DataError` when no method yields a probability (never a made-up number)."""
    v = await elicit(model, helpfulness_prompt(ans, critique), ["A", "B"], cfg.elicitation.build(cfg.seed))
    if not v.ok or v.probabilities is None:
        raise DataError(f"answer {ans.answer_id!r}: no helpfulness probability ({v.error})")
    return float(v.prob("A"))


def sort_by_helpfulness(critiques: list[Critique]) -> list[Critique]:
    """Highest helpfulness first; ties keep their order (stable)."""
    return sorted(critiques, key=lambda c: -c.helpfulness)


async def critique_answer(
    critic: Model, judge: Model, ans: CritiquedAnswer, cfg: CritiqueConfig, validator: Model | None = None
) -> CritiquedAnswer:
    """``ans`` with one critique per temperature, near duplicates merged, helpfulness scored and
    sorted; for a misleading answer (with ``validator``), P(each critique covers the intended flaw).
    A temperature whose reply holds no critique text gives none."""
    prompt = critique_prompt(ans)
    outs = await asyncio.gather(
        *(
            critic.generate(prompt, temperature=t, max_tokens=cfg.max_tokens, seed=cfg.seed)
            for t in cfg.temperatures
        )
    )
    raw = [(t, *parse_critique(o.text)) for t, o in zip(cfg.temperatures, outs, strict=True)]
    raw = [r for r in raw if r[1]]
    groups = dedup([r[1] for r in raw], cfg.dedup_threshold)
    kept = [raw[g[0]] for g in groups]
    scores = await asyncio.gather(*(helpfulness(judge, ans, text, cfg) for _, text, _ in kept))
    crits = [
        Critique(
            id=f"c{i}",
            text=text,
            temperature=t,
            helpfulness=h,
            quote=quote,
            quote_verified=quote_verified(quote, ans),
            merged=[raw[j][1] for j in g[1:]],
        )
        for i, ((t, text, quote), h, g) in enumerate(zip(kept, scores, groups, strict=True))
    ]
    crits = sort_by_helpfulness(crits)
    if validator is not None and ans.answer_kind == "misleading":
        covers = await validate_intended(validator, ans, crits, cfg.elicitation.build(cfg.seed))
        crits = [c.model_copy(update={"covers_intended": p}) for c, p in zip(crits, covers, strict=True)]
    return ans.model_copy(update={"critiques": crits})


# ---- answers ------------------------------------------------------------------------------------


@dataclass
class _Todo:
    """An answer to critique; ``question`` (the ground truth) when it comes from a dataset; a model
    answer's text is written first (``write``)."""

    answer: CritiquedAnswer
    question: Question | None = None
    write: bool = False


def _question_answers(q: Question, cfg: CritiqueConfig) -> list[_Todo]:
    base = {"question_id": q.id, "question": q.text, "passage": q.source_text}
    out: list[_Todo] = []
    for kind in cfg.kinds:
        aid = f"{q.id}:{kind}"
        if kind == "reference":
            out.append(
                _Todo(
                    CritiquedAnswer(
                        **base,
                        answer_id=aid,
                        answer_kind="reference",
                        answer=reference_answer(q),
                        correct=True,
                    ),
                    q,
                )
            )
        elif kind == "misleading":
            flaw = plant_flaw(q, tuple(cfg.flaws), seed=cfg.seed)
            if flaw is None:
                raise DataError(
                    f"question {q.id!r}: none of the flaws {cfg.flaws} can be planted in its reference "
                    f"answer ({reference_answer(q)!r}); add a flaw kind or drop `misleading` from kinds"
                )
            out.append(
                _Todo(
                    CritiquedAnswer(
                        **base,
                        answer_id=aid,
                        answer_kind="misleading",
                        answer=flaw.answer,
                        correct=False,
                        intended_flaw=flaw.flaw,
                        intended_critique=flaw.critique,
                        metadata={
                            "flaw_kind": flaw.kind,
                            "original": flaw.original,
                            "replacement": flaw.replacement,
                        },
                    ),
                    q,
                )
            )
        else:
            out.append(
                _Todo(
                    CritiquedAnswer(
                        **base,
                        answer_id=aid,
                        answer_kind="model",
                        answer="",
                        answer_temperature=answer_temperature(q.id, cfg.seed),
                    ),
                    q,
                    write=True,
                )
            )
    return out


def answer_prompt(question: str, passage: str | None) -> str:
    src = f"Passage:\n{passage.strip()}\n\n" if passage else ""
    return (
        f"{src}Question: {question.strip()}\n\n"
        "Answer the question. Explain briefly, then end with 'The answer is <answer>.'"
    )


async def _write_model_answer(model: Model, todo: _Todo, cfg: CritiqueConfig) -> CritiquedAnswer:
    ans, q = todo.answer, todo.question
    assert q is not None and ans.answer_temperature is not None
    out = await model.generate(
        answer_prompt(ans.question, ans.passage),
        temperature=ans.answer_temperature,
        max_tokens=cfg.max_tokens,
        seed=cfg.seed,
    )
    text = out.text.strip()
    if not text:
        raise DataError(f"answer {ans.answer_id!r}: the model wrote an empty answer")
    return ans.model_copy(update={"answer": text, "correct": answer_correct(q, text)})


def _todos(cfg: CritiqueConfig) -> tuple[list[_Todo], list[str]]:
    """The answers this run covers (the first ``limit`` answers, or those of the first ``limit``
    questions) and the ids of all the answers the whole dataset gives, in order."""
    if cfg.answers is not None:
        answers = read_user_answers(cfg.answers)
        return [_Todo(a) for a in answers[: cfg.limit]], [a.answer_id for a in answers]
    from seerbench.datasets import load_dataset

    assert cfg.dataset is not None
    qs = list(load_dataset(str(cfg.dataset["name"]), **{k: v for k, v in cfg.dataset.items() if k != "name"}))
    if not qs:
        raise DataError(f"dataset {cfg.dataset['name']!r} gave no questions")
    order = [f"{q.id}:{kind}" for q in qs for kind in cfg.kinds]  # _question_answers' ids
    qs = qs[: cfg.limit] if cfg.limit else qs
    for q in qs:
        if len(q.true_cases) != 1:
            raise DataError(
                f"question {q.id!r} has {len(q.true_cases)} true options; answers to critique need exactly "
                "one (the reference answer and the ground truth)"
            )
    return [t for q in qs for t in _question_answers(q, cfg)], order


# ---- the run ------------------------------------------------------------------------------------


@dataclass
class CritiqueRun:
    out: Path
    answers: list[CritiquedAnswer]
    failed: list[tuple[str, str]] = field(default_factory=list)
    resumed: int = 0
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.out / "critiques.jsonl"


async def generate_critiques(
    cfg: CritiqueConfig,
    *,
    critic: Model | None = None,
    answerer: Model | None = None,
    judge: Model | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> CritiqueRun:
    """Write ``cfg.out``/``critiques.jsonl`` (one :class:`CritiquedAnswer` per answer, in the
    answers' order) and ``critique.json`` (the config and its fingerprint). Resumes; an answer whose
    model calls fail is listed in ``failed`` and left out (run again to retry it). The folder is
    locked for the whole run: a second process on it is refused."""
    with lock_folder(Path(cfg.out), command_line()), ExitStack() as usage:
        return await _generate_critiques(
            cfg, critic=critic, answerer=answerer, judge=judge, progress=progress, usage=usage
        )


async def _generate_critiques(
    cfg: CritiqueConfig,
    *,
    critic: Model | None,
    answerer: Model | None,
    judge: Model | None,
    progress: Callable[[int, int, int], None] | None,
    usage: ExitStack,
) -> CritiqueRun:
    todos, order = _todos(cfg)
    out = Path(cfg.out)
    claim_folder(
        out,
        "critique.json",
        "critiques.jsonl",
        "answer_id",
        cfg.fingerprint(),
        "critiques",
        "models, answers, temperatures, dedup or elicitation",
        {"config": cfg.model_dump()},
    )
    # the folder is claimed: every model event is appended to its usage log as it happens
    usage.enter_context(UsageLog(out / USAGE_LOG).attached(default_tracker()))
    path = out / "critiques.jsonl"
    done = keep_in_order(path, "answer_id", order)  # answers past this run's limit are kept
    critic = critic or get_model(cfg.model)

    def role(spec: str | None) -> Model:
        return critic if spec in (None, cfg.model) else get_model(str(spec))

    answerer = answerer or role(cfg.answer_model)
    judge = judge or role(cfg.helpfulness_model)
    validator = role(cfg.validation_model) if cfg.validate_intended else None
    refiner = role(cfg.refine_model) if cfg.refine else None
    todo = [t for t in todos if t.answer.answer_id not in done]
    failed: list[tuple[str, str]] = []
    n_done = len(todos) - len(todo)
    sem = asyncio.Semaphore(cfg.concurrency)
    if progress:
        progress(n_done, len(todos), 0)

    async def one(t: _Todo) -> None:
        nonlocal n_done
        async with sem:
            try:
                ans = await _write_model_answer(answerer, t, cfg) if t.write else t.answer
                ans = await critique_answer(critic, judge, ans, cfg, validator)
                if refiner is not None and t.question is not None:
                    ans = ans.model_copy(update={"refinement": await refine(refiner, ans, t.question, cfg)})
            except Exception as e:  # a model failure (after retries): this answer failed, not the run
                failed.append((t.answer.answer_id, f"{type(e).__name__}: {e}"))
            else:
                append_line(path, dump_answer(ans))
            n_done += 1
            if progress:
                progress(n_done, len(todos), len(failed))

    await asyncio.gather(*(one(t) for t in todo))
    keep_in_order(path, "answer_id", order)  # the answers' order
    answers = read_critiques(path)
    summary = critique_summary(answers, seed=cfg.seed)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2))
    return CritiqueRun(out, answers, failed, resumed=len(todos) - len(todo), summary=summary)
