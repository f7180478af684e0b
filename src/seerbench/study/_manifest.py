"""The study manifest: a YAML file saying what raters judge, under which conditions, how often.

Validated with pydantic; every error names the offending key (``conditions.1.show``) so a study
author can fix the file without reading code. See ``docs/study.md`` for the reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from seerbench.conditions import JUDGING_CONDITIONS, JudgingCondition, get_condition
from seerbench.config import explain_validation, read_yaml_mapping
from seerbench.errors import ConfigError

__all__ = [
    "ANSWER_KINDS",
    "ASSISTANCE_PARTS",
    "CRITIQUE_TASKS",
    "SHOW_PARTS",
    "Condition",
    "ItemSource",
    "QuizQuestion",
    "StudyManifest",
    "Tutorial",
    "load_manifest",
]

TaskType = Literal["two_option", "factuality", "expert_routing", "critique", "validation"]
ShowPart = Literal["passage", "snippets", "arguments", "transcript"]
AssistancePart = Literal[
    "search_results", "evidence", "reasoning", "judgments", "confidence", "two_sided", "critiques"
]
AnswerKind = Literal["model", "reference", "misleading"]

SHOW_PARTS: tuple[str, ...] = ("passage", "snippets", "arguments", "transcript")
ASSISTANCE_PARTS: tuple[str, ...] = (
    "search_results",
    "evidence",
    "reasoning",
    "judgments",
    "confidence",
    "two_sided",
    "critiques",
)
ANSWER_KINDS: tuple[str, ...] = ("model", "reference", "misleading")
#: Task types about critiques (seed 002): no options to choose, no catch trials, untimed.
CRITIQUE_TASKS: tuple[str, ...] = ("critique", "validation")
DEFAULT_CATEGORIES = ["accuracy", "coverage", "coherence", "other"]

DEFAULT_WARNING = (
    "This AI fact-verification assistant is still learning and can make mistakes. Be critical of the "
    "information it provides and use it only to the extent you judge it valid."
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class QuizQuestion(_Strict):
    """One tutorial quiz question; ``answer`` is the 0-based index of the correct option."""

    question: str = Field(min_length=1)
    options: list[str] = Field(min_length=2)
    answer: int = Field(ge=0)
    explanation: str = ""

    @model_validator(mode="after")
    def _answer_in_range(self) -> QuizQuestion:
        if self.answer >= len(self.options):
            raise ValueError(f"answer {self.answer} is not an index into {len(self.options)} options")
        return self


class Tutorial(_Strict):
    """Tutorial text (paragraphs separated by blank lines) and a quiz every rater must pass."""

    text: str = ""
    quiz: list[QuizQuestion] = Field(default_factory=list)


class ItemSource(_Strict):
    """Where items come from; exactly one of ``questions``, ``results``, ``question``, ``ratings``
    or ``critiques``.

    - ``questions``: a seerbench questions JSONL file (one :class:`~seerbench.types.Question` per line)
    - ``results``: a protocol run's ``results.jsonl``; one item per (question, answer case transcript)
    - ``question``: one question written inline
    - ``ratings``: the AI rater's run folder (``seerbench rate``; task ``factuality``): one item per
      rated sentence, the rater's trace as assistance; ``max_confidence: T`` keeps confidence <= T
    - ``critiques``: a ``critiques.jsonl`` of ``seerbench critique`` (task ``critique``: one item per answer)
    - ``judgments``: a critique study's export (``.jsonl``; task ``validation``: one item per judgment
      with critiques), with ``critiques`` naming the critiques.jsonl its answers came from
    ``catch: true`` marks the items as ready-made catch trials (e.g. QuALITY's quick questions),
    usable in every condition.
    """

    questions: str | None = None
    results: str | None = None
    question: dict[str, Any] | None = None
    ratings: str | None = None
    max_confidence: float | None = Field(default=None, ge=0, le=1)
    critiques: str | None = None
    judgments: str | None = None
    catch: bool = False

    @model_validator(mode="after")
    def _exactly_one(self) -> ItemSource:
        if self.max_confidence is not None and self.ratings is None:
            raise ValueError("max_confidence filters the AI rater's 'ratings'; use it with ratings")
        given = [
            k
            for k in ("questions", "results", "question", "ratings", "critiques")
            if getattr(self, k) is not None
        ]
        if self.judgments is not None and self.critiques is None:
            raise ValueError(
                "'judgments' (a critique study's export) needs "
                "'critiques' (the critiques.jsonl of its answers)"
            )
        if len(given) != 1:
            raise ValueError(
                "each items entry needs exactly one of 'questions' (a JSONL file), 'results' "
                "(a results.jsonl), 'question' (inline), 'ratings' (an AI rater's run) or 'critiques' "
                f"(a critiques.jsonl); got {given or 'none'}"
            )
        return self


class Condition(_Strict):
    """One experimental condition: what the rater sees besides the question and its options.

    Two-option and expert-routing tasks use ``show`` (``passage``, ``snippets``, ``arguments``,
    ``transcript``); factuality rating uses ``assistance`` (any subset of :data:`ASSISTANCE_PARTS`).
    A bare string is shorthand: a seed-004 judging condition (``Q``, ``S``, ``SA``, ``P``, ``PS``,
    ``PSA`` or their long names, any case: the one table in :mod:`seerbench.conditions`),
    ``transcript``, ``baseline`` (no assistance), seed 000's assistance conditions for factuality
    (``none``, ``search``, ``search+evidence``, ``trace``, ``trace+ratings``,
    ``trace+ratings+confidence``, ``ratings``, ``ratings+confidence``, ``debate``: the table in
    :mod:`seerbench.factcheck._study`); for critique tasks (seed 002) ``assist`` /
    ``no_assist`` (model critiques shown or not) or ``KIND.assist`` / ``KIND.no_assist`` with
    ``KIND`` an answer kind (``model``, ``reference``, ``misleading``): only answers of that kind are
    shown (``answer_kinds``; empty = all). :attr:`judging` says what the seed's rules
    (passage needed, catch trials noticeable) make of ``show``.
    """

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.+-]+$")
    show: list[ShowPart] = Field(default_factory=list)
    assistance: list[AssistancePart] = Field(default_factory=list)
    answer_kinds: list[AnswerKind] = Field(default_factory=list)
    description: str = ""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        s = v.strip()
        if s.lower() == "transcript":
            return {"name": s, "show": ["transcript"]}
        if s.lower() == "baseline":
            return {"name": s}
        from seerbench.factcheck import assistance_condition

        seed000 = assistance_condition(s)  # none, search, search+evidence, trace, ... (factuality)
        if seed000 is not None:
            return seed000
        kind, _, assist = s.rpartition(".")
        if assist in ("assist", "no_assist") and (kind in ANSWER_KINDS or not kind):
            return {
                "name": s,
                "assistance": ["critiques"] if assist == "assist" else [],
                "answer_kinds": [kind] if kind else [],
            }
        try:
            return {"name": s, "show": list(get_condition(s).show)}
        except ConfigError:
            raise ValueError(
                f"unknown condition shorthand {v!r}; use {', '.join(JUDGING_CONDITIONS)} (seed 004's "
                "letters), transcript, baseline, assist, no_assist, KIND.assist, KIND.no_assist (critique "
                "tasks), or a mapping with name/show/assistance"
            ) from None

    @property
    def judging(self) -> JudgingCondition:
        """The seed-004 judging condition of the parts this condition shows (``transcript`` and
        factuality ``assistance`` aside)."""
        return JudgingCondition.from_show(self.show)


class StudyManifest(_Strict):
    """A human judging study. See ``docs/study.md`` for every key."""

    name: str = Field(min_length=1)
    task: TaskType = "two_option"
    items: list[ItemSource] = Field(min_length=1)
    conditions: list[Condition] = Field(min_length=1)
    ratings_per_item: int = Field(default=3, ge=1, description="Ratings of each item in each condition.")
    tasks_per_rater: int = Field(default=10, ge=1, description="Tasks (catch trials included) per rater.")
    time_limit_s: float | None = Field(default=90.0, gt=0, description="Reading timer; null = untimed.")
    finalise_s: float = Field(default=30.0, ge=0, description="Window to finalise after the timer.")
    submit_grace_s: float = Field(default=3.0, ge=0, description="Network slack on server deadlines.")
    assignment_timeout_s: float = Field(default=1800.0, gt=0, description="Reclaim unsubmitted tasks after.")
    probability: Literal["off", "optional", "required"] = "optional"
    feedback: bool = True
    catch_rate: float = Field(default=0.1, ge=0, lt=1)
    catch_min: int = Field(default=5, ge=1)
    catch_threshold: float = Field(default=0.6, ge=0, le=1)
    catch_rule: Literal["stop", "per_condition"] = Field(
        default="stop",
        description=(
            "stop: seed 004's rule, the rater completes no more tasks once it fires in one condition; "
            "per_condition: removed from that condition only (not the seed's rule)."
        ),
    )
    catch_per_condition: int = Field(
        default=0,
        ge=0,
        description="Catch trials every rater gets in each condition where they fit (at least).",
    )
    tutorial: Tutorial = Field(default_factory=Tutorial)
    instructions: str = ""
    warning: str = DEFAULT_WARNING
    completion_code: str = Field(min_length=1, max_length=64)
    completion_url: str | None = "https://app.prolific.com/submissions/complete?cc={code}"
    stopped_code: str | None = None
    min_tasks_for_code: int | None = Field(
        default=None,
        ge=1,
        description="Judged tasks (catch trials not counted) that earn the code when the study is full.",
    )
    full_code: str | None = Field(default=None, min_length=1, max_length=64)
    max_duration_s: float | None = Field(
        default=None, gt=0, description="Longest time a rater may take; the session cookie lasts this long."
    )
    allow_missing_passage: bool = False
    allow_anonymous: bool = False
    admin_token: str | None = Field(default=None, min_length=16)
    categories: list[str] = Field(
        default_factory=lambda: list(DEFAULT_CATEGORIES),
        min_length=1,
        description="Critique categories (task critique).",
    )
    seed: int = 0

    @field_validator("conditions")
    @classmethod
    def _unique_names(cls, v: list[Condition]) -> list[Condition]:
        names = [c.name for c in v]
        if len(set(names)) != len(names):
            raise ValueError(f"condition names must be unique, got {names}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> StudyManifest:
        self._check_critique_task()
        rated = [n for n, src in enumerate(self.items) if src.ratings is not None]
        if rated and self.task != "factuality":
            raise ValueError(
                f"items {rated}: 'ratings' (the AI rater's run folder) are items of task factuality"
            )
        if self.task == "factuality":
            bad = [c.name for c in self.conditions if c.show]
            if bad:
                raise ValueError(f"factuality conditions use 'assistance', not 'show' (conditions {bad})")
        elif self.task not in CRITIQUE_TASKS:
            bad = [c.name for c in self.conditions if c.assistance]
            if bad:
                raise ValueError(f"'assistance' is only for task: factuality (conditions {bad})")
        if self.time_limit_s is not None and self.task not in CRITIQUE_TASKS:
            need = self.time_limit_s + self.finalise_s + self.submit_grace_s
            if self.assignment_timeout_s <= need:
                raise ValueError(
                    f"assignment_timeout_s ({self.assignment_timeout_s}) must exceed time_limit_s + "
                    f"finalise_s + submit_grace_s ({need}), or raters lose tasks they are still doing"
                )
        if self.completion_url is not None and "{code}" not in self.completion_url:
            raise ValueError(
                f"completion_url {self.completion_url!r} has no {{code}}: write where the code goes, e.g. "
                "https://app.prolific.com/submissions/complete?cc={code} (a URL holding the code itself "
                "would hand it to raters who did not earn it), or null to show the code only"
            )
        if self.timed and self.max_duration_s is not None:
            one = self.time_limit_s + self.finalise_s + self.submit_grace_s  # type: ignore[operator]
            if self.max_duration_s < one:
                raise ValueError(
                    f"max_duration_s ({self.max_duration_s}) is shorter than one timed task (time_limit_s + "
                    f"finalise_s + submit_grace_s = {one}): sessions would end mid-task; raise max_duration_s"
                )
        if self.min_tasks_for_code is not None and self.min_tasks_for_code > self.tasks_per_rater:
            raise ValueError(
                f"min_tasks_for_code ({self.min_tasks_for_code}) cannot exceed tasks_per_rater "
                f"({self.tasks_per_rater})"
            )
        return self

    def _check_critique_task(self) -> None:
        """Critique tasks (seed 002) show no judging material, only critiques as assistance, and
        have no catch trials (there is no option to get wrong); answer kinds only for them."""
        kinds = [c.name for c in self.conditions if c.answer_kinds]
        critique_help = [c.name for c in self.conditions if "critiques" in c.assistance]
        if self.task not in CRITIQUE_TASKS and (kinds or critique_help):
            raise ValueError(
                f"conditions {sorted(set(kinds + critique_help))} are critique conditions (answer kinds, "
                "critiques as assistance): use them with task: critique"
            )
        if self.task != "critique" and self.categories != DEFAULT_CATEGORIES:
            raise ValueError("categories are for task: critique")
        if self.task not in CRITIQUE_TASKS:
            return
        bad = [c.name for c in self.conditions if c.show or any(p != "critiques" for p in c.assistance)]
        if bad:
            raise ValueError(
                f"{self.task} conditions show no judging material: use assist / no_assist (conditions {bad})"
            )
        if self.task == "validation" and critique_help:
            raise ValueError(f"validation conditions take no assistance (conditions {critique_help})")
        for key in ("catch_rate", "catch_per_condition"):
            if key in self.model_fields_set and getattr(self, key) > 0:
                raise ValueError(
                    f"task {self.task} has no catch trials (no option to get wrong): remove {key}"
                )
        self.catch_rate = 0.0
        self.catch_per_condition = 0
        if len(set(self.categories)) != len(self.categories) or not all(c.strip() for c in self.categories):
            raise ValueError(f"categories must be distinct and not blank, got {self.categories}")

    @property
    def session_s(self) -> float:
        """How long a rater's session lasts: ``max_duration_s``, by default every task's timeout."""
        return self.max_duration_s or self.tasks_per_rater * self.assignment_timeout_s

    @property
    def timed(self) -> bool:
        return self.time_limit_s is not None and self.task not in ("factuality", *CRITIQUE_TASKS)

    #: What raters must not see in anything published about the study (the codes earn pay).
    SECRET_FIELDS: ClassVar[tuple[str, ...]] = ("completion_code", "stopped_code", "full_code", "admin_token")

    def public_dump(self) -> dict[str, Any]:
        """The manifest as JSON data with the codes and the admin token replaced by ``"(hidden)"``
        (for reports and other files that may be shared)."""
        data = self.model_dump(mode="json")
        for k in self.SECRET_FIELDS:
            if data.get(k) is not None:
                data[k] = "(hidden)"
        return data

    def condition(self, name: str) -> Condition:
        for c in self.conditions:
            if c.name == name:
                return c
        raise KeyError(name)


def load_manifest(source: str | Path | dict[str, Any]) -> StudyManifest:
    """Read and validate a manifest from a YAML path or a dict; raises :class:`ConfigError`."""
    where = "(dict)"
    if isinstance(source, dict):
        data: Any = source
    else:
        path = Path(source)
        where = str(path)
        data = read_yaml_mapping(path, "study manifest")
    if not isinstance(data, dict):
        raise ConfigError(f"study manifest {where} must be a mapping of keys to values")
    try:
        return StudyManifest.model_validate(data)
    except ValidationError as e:
        raise ConfigError(
            explain_validation(e, f"study manifest {where}", model=StudyManifest, docs="docs/study.md")
        ) from None
