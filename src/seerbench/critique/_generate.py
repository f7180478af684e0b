"""``seerbench critique CONFIG``: answers -> critiques at several temperatures, de-duplicated,
scored for helpfulness and sorted (seed 002, section 3.2).

Every model call goes through the model layer (disk cache, retries, concurrency, usage), so a
rerun of the same config costs no calls, and a run resumes: answers already in ``critiques.jsonl``
are kept, a folder written by another config is refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from seerbench._resume import claim_folder, config_path, content_id
from seerbench.config import explain_validation, read_yaml_mapping
from seerbench.critique._answers import (
    FLAW_KINDS,
    answer_correct,
    answer_temperature,
    plant_flaw,
    read_user_answers,
    reference_answer,
)
from seerbench.critique._assess import critique_summary, refine, validate_intended
from seerbench.critique._dedup import DEFAULT_THRESHOLD, dedup
from seerbench.critique._format import Critique, CritiquedAnswer, dump_answer, read_critiques
from seerbench.errors import ConfigError, DataError
from seerbench.experiment._config import ElicitationSpec
from seerbench.models import Model, elicit, get_model
from seerbench.quotes import verify_quote
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

DEFAULT_TEMPERATURES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0)
Kind = Literal["model", "reference", "misleading"]
Flaw = Literal["number", "entity", "omission"]
_KINDS: tuple[Kind, ...] = ("model", "reference", "misleading")
_FLAWS: tuple[Flaw, ...] = ("number", "entity", "omission")
assert _FLAWS == FLAW_KINDS


class CritiqueConfig(BaseModel):
    """What ``seerbench critique`` reads (see examples/critique.yaml and docs/critique.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="critique", min_length=1)
    out: str = Field(
        default="runs/critique", min_length=1, description="Run folder (relative to the config)."
    )
    model: str = Field(default="local", min_length=1, description="The critic (and answerer) model spec.")
    answer_model: str | None = Field(
        default=None, description="Model that writes `model` answers (default: model)."
    )
    helpfulness_model: str | None = Field(
        default=None, description="Model that scores helpfulness (default: model)."
    )
    validate_intended: bool = Field(
        default=True, description="Misleading answers: P(each critique covers the intended flaw)."
    )
    validation_model: str | None = Field(
        default=None, description="Model that checks intended flaws (default: model)."
    )
    refine: bool = Field(
        default=True, description="Critique-conditional vs direct refinement (answers with ground truth)."
    )
    refine_model: str | None = Field(
        default=None, description="Model that rewrites answers (default: model)."
    )
    dataset: dict[str, Any] | None = Field(default=None, description="name + options: questions to answer.")
    answers: str | None = Field(
        default=None, description="JSONL of user-supplied answers (relative to the config)."
    )
    kinds: list[Kind] = Field(default_factory=lambda: list(_KINDS))
    flaws: list[Flaw] = Field(default_factory=lambda: list(_FLAWS))
    temperatures: list[float] = Field(default_factory=lambda: list(DEFAULT_TEMPERATURES))
    dedup_threshold: float = Field(default=DEFAULT_THRESHOLD, gt=0, le=100)
    max_tokens: int = Field(default=160, ge=8)
    elicitation: ElicitationSpec = ElicitationSpec()
    seed: int = 0
    limit: int | None = Field(default=None, ge=1, description="Only the first N questions (or answers).")
    concurrency: int = Field(default=8, ge=1, description="Answers in flight at once.")

    @field_validator("temperatures")
    @classmethod
    def _temps(cls, v: list[float]) -> list[float]:
        if not v:
            raise ValueError("give at least one temperature")
        if any(not 0 <= t <= 2 for t in v):
            raise ValueError("temperatures must lie in [0, 2]")
        if len(set(v)) != len(v):
            raise ValueError("temperatures repeat")
        return v

    @model_validator(mode="after")
    def _source(self) -> CritiqueConfig:
        if (self.dataset is None) == (self.answers is None):
            raise ValueError(
                "give exactly one of `dataset` (questions to answer) and `answers` (a JSONL of answers)"
            )
        if self.dataset is not None and not isinstance(self.dataset.get("name"), str):
            raise ValueError("dataset needs a name (e.g. {name: reading, n: 20})")
        if not self.kinds or len(set(self.kinds)) != len(self.kinds):
            raise ValueError("kinds must be a non-empty list of model, reference, misleading without repeats")
        if not self.flaws:
            raise ValueError("flaws must name at least one of number, entity, omission")
        return self

    @classmethod
    def from_yaml(cls, path: str | Path) -> CritiqueConfig:
        p = Path(path)
        data = read_yaml_mapping(p, "critique config")
        cfg = cls.parse(data, str(p))
        # paths in the config are read from its folder: out, answers, a dataset file
        updates: dict[str, Any] = {"out": config_path(p.parent, cfg.out)}
        if cfg.answers is not None:
            updates["answers"] = config_path(p.parent, cfg.answers)
        if cfg.dataset is not None and isinstance(cfg.dataset.get("path"), str):
            updates["dataset"] = {**cfg.dataset, "path": config_path(p.parent, cfg.dataset["path"])}
        return cfg.model_copy(update=updates)

    @classmethod
    def parse(cls, data: dict[str, Any], where: str = "(dict)") -> CritiqueConfig:
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ConfigError(
                explain_validation(e, f"critique config {where}", model=cls, docs="docs/critique.md")
            ) from None

    def fingerprint(self) -> str:
        """What decides the critiques (not where they go, how many, or how many at once; input
        files by their content, not their path)."""
        keep = self.model_dump(exclude={"out", "concurrency", "limit", "name"})
        if keep.get("answers") is not None:
            keep["answers"] = content_id(keep["answers"])
        if isinstance((keep.get("dataset") or {}).get("path"), str):
            keep["dataset"] = {**keep["dataset"], "path": content_id(keep["dataset"]["path"])}
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


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
        "flaw in the answer that a careful reader should fix?\nA) Yes, it is helpful\nB) No, it is not helpful"
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
                    f"question {q.id!r}: none of the flaws {cfg.flaws} can be planted in its reference answer "
                    f"({reference_answer(q)!r}); add a flaw kind or drop `misleading` from kinds"
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
    return f"{src}Question: {question.strip()}\n\nAnswer the question. Explain briefly, then end with 'The answer is <answer>.'"


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
                f"question {q.id!r} has {len(q.true_cases)} true options; answers to critique need exactly one "
                "(the reference answer and the ground truth)"
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
    model calls fail is listed in ``failed`` and left out (run again to retry it)."""
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
