"""The domain model: plain pydantic data that crosses every stage boundary.

dataset -> :class:`Question` -> protocol run (a :class:`Transcript` of :class:`Turn`) ->
judgment (a :class:`Verdict`) -> scores.

A question's ``source_text`` is *hidden*: judges never see it unless a protocol grants it.
:meth:`Question.judge_view` returns the copy a judge may see.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "AnswerCase",
    "ElicitationMethod",
    "ParseStatus",
    "Question",
    "Quote",
    "Transcript",
    "Turn",
    "Verdict",
    "check_verdict",
]


class _Model(BaseModel):
    # inf/nan survive a JSON round trip (scores such as logodds can be infinite).
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class AnswerCase(_Model):
    """One answer option of a question; the agent is *assigned* one of these to argue for.

    ``value`` is the ground-truth value of the option (1.0 true, 0.0 false for the usual case).
    ``argument`` and ``quotes`` optionally carry human-written material for this option (e.g. the
    single_turn_debate dataset), which a replay agent returns verbatim.
    """

    short: str = Field(min_length=1, description="Label shown to models, e.g. 'A'.")
    long: str = Field(description="The option's text.")
    value: float = Field(description="Ground-truth value: 1.0 for the true option, 0.0 for false.")
    argument: str | None = None
    quotes: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def is_true(self) -> bool:
        return self.value > 0.5


class Question(_Model):
    """A question with K >= 2 answer options and known ground truth."""

    id: str = Field(min_length=1)
    text: str
    answer_cases: list[AnswerCase] = Field(min_length=2)
    source_text: str | None = Field(
        default=None, description="Hidden material (e.g. a passage) that judges never see by default."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("answer_cases")
    @classmethod
    def _unique_shorts(cls, v: list[AnswerCase]) -> list[AnswerCase]:
        shorts = [a.short for a in v]
        if len(set(shorts)) != len(shorts):
            raise ValueError(f"answer case labels must be unique, got {shorts}")
        return v

    @property
    def k(self) -> int:
        return len(self.answer_cases)

    @property
    def shorts(self) -> list[str]:
        return [a.short for a in self.answer_cases]

    @property
    def true_cases(self) -> list[AnswerCase]:
        return [a for a in self.answer_cases if a.is_true]

    @property
    def true_case(self) -> AnswerCase:
        """The single true option; raises if there is not exactly one."""
        t = self.true_cases
        if len(t) != 1:
            raise ValueError(f"question {self.id!r} has {len(t)} true options; expected exactly 1")
        return t[0]

    @property
    def is_binary(self) -> bool:
        return self.k == 2 and len(self.true_cases) == 1

    def case(self, short: str) -> AnswerCase:
        for a in self.answer_cases:
            if a.short == short:
                return a
        raise KeyError(f"question {self.id!r} has no option {short!r}; options are {self.shorts}")

    def other(self, short: str) -> AnswerCase:
        """For a binary question: the option that is not ``short``."""
        if self.k != 2:
            raise ValueError(f"question {self.id!r} has {self.k} options; 'other' needs exactly 2")
        self.case(short)
        return next(a for a in self.answer_cases if a.short != short)

    def judge_view(self, *, with_source: bool = False) -> Question:
        """The question as a judge may see it: no hidden source text, no ground truth values,
        no human-written per-option material, unless ``with_source`` grants the source text."""
        return self.model_copy(
            update={
                "source_text": self.source_text if with_source else None,
                "answer_cases": [
                    a.model_copy(update={"value": 0.0, "argument": None, "quotes": [], "metadata": {}})
                    for a in self.answer_cases
                ],
                "metadata": {},
            }
        )


class Quote(_Model):
    """A snippet an agent quotes from the hidden source text, checked verbatim."""

    text: str
    verified: bool | None = Field(
        default=None, description="True if found verbatim in the source text; None if not checked."
    )


Role = Literal["system", "question", "agent", "adversary", "judge", "assistant", "note"]


class Turn(_Model):
    """One message in a protocol transcript."""

    role: Role
    speaker: str = Field(description="Who said it, e.g. 'consultant', 'debater_A', 'judge'.")
    content: str
    answer_case: str | None = Field(default=None, description="The option the speaker argues for.")
    quotes: list[Quote] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Transcript(_Model):
    """What happened in one protocol run for one answer case."""

    question_id: str
    protocol: str
    turns: list[Turn] = Field(default_factory=list)

    def add(self, turn: Turn) -> None:
        self.turns.append(turn)


ElicitationMethod = Literal["logprobs", "verbalized", "vote", "trust", "human", "none"]
ParseStatus = Literal["ok", "failed"]


def check_verdict(probabilities: dict[str, float] | None, parse_status: str) -> None:
    """What a verdict's probabilities must be (ValueError saying why not): with parse_status 'ok',
    values in [0, 1] that sum to 1 (within 1e-6); after a parse failure, none. :class:`Verdict`
    checks its own with it, and so does scoring a results line's stored verdict
    (:func:`seerbench.metrics.resolve_stored`)."""
    if parse_status == "ok":
        if probabilities is None:
            raise ValueError("a verdict with parse_status='ok' needs probabilities")
        total = sum(probabilities.values())
        if any(p < 0 or p > 1 for p in probabilities.values()) or abs(total - 1.0) > 1e-6:
            raise ValueError(f"probabilities must lie in [0, 1] and sum to 1, got {probabilities}")
    elif probabilities is not None:
        raise ValueError("a failed verdict carries no probabilities")


class Verdict(_Model):
    """A judge's belief over the options, and how it was obtained.

    A parse failure has ``parse_status='failed'`` and ``probabilities=None``: it is never silently
    turned into a number; the raw output is kept for inspection.
    """

    probabilities: dict[str, float] | None = None
    method: ElicitationMethod = "none"
    parse_status: ParseStatus = "ok"
    raw: str = ""
    error: str | None = None
    n_samples: int = 1
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> Verdict:
        check_verdict(self.probabilities, self.parse_status)
        return self

    @property
    def ok(self) -> bool:
        return self.parse_status == "ok"

    @classmethod
    def failure(cls, raw: str, error: str, method: ElicitationMethod = "none", **kw: Any) -> Verdict:
        return cls(probabilities=None, method=method, parse_status="failed", raw=raw, error=error, **kw)

    def prob(self, short: str) -> float:
        if self.probabilities is None:
            raise ValueError(f"verdict failed to parse ({self.error}); it has no probabilities")
        return self.probabilities[short]
