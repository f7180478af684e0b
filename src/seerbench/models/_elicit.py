"""Probability elicitation: turn a judge's context into a :class:`~seerbench.types.Verdict`.

Methods, tried in a configurable order until one succeeds (the method used is recorded):

``logprobs``
    Ask for the option letter only and renormalise the probabilities of the option tokens at the
    first answer position: exact from the full distribution where the backend can read it (the
    embedded model), else from the top-20 alternatives (OpenAI-compatible servers); if an option is
    not among them, this method fails rather than inventing a number.
``verbalized``
    Ask for a probability in words and parse it ("70%", "0.7", "7/10", "A: 70%, B: 30%").
``vote``
    Sample the letter-only answer k times at a temperature; probabilities are the vote shares of the
    samples that parse.

If every method fails the verdict is a parse failure carrying the raw text: never a made-up number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from seerbench.errors import ConfigError
from seerbench.models._model import MessagesLike, Model, to_messages
from seerbench.models._types import ChatMessage, Sample
from seerbench.types import Verdict

Method = Literal["logprobs", "verbalized", "vote"]
METHODS: tuple[Method, ...] = ("logprobs", "verbalized", "vote")
TOP_LOGPROBS = 20


@dataclass(frozen=True)
class ElicitConfig:
    """How to elicit probabilities. ``order`` is the fallback chain."""

    order: tuple[Method, ...] = METHODS
    vote_samples: int = 5
    vote_temperature: float = 1.0
    verbalized_max_tokens: int = 48
    seed: int = 0

    def __post_init__(self) -> None:
        bad = [m for m in self.order if m not in METHODS]
        if bad or not self.order:
            raise ConfigError(
                f"elicitation order {list(self.order)} is invalid; use a non-empty list of {list(METHODS)}"
            )
        if self.vote_samples < 1:
            raise ConfigError("vote_samples must be >= 1")


def letter_instruction(options: Sequence[str]) -> str:
    return f"Answer with the letter of the correct option only ({' or '.join(options)})."


def verbalized_instruction(options: Sequence[str]) -> str:
    if len(options) == 2:
        return (
            f"How likely is it that the answer is {options[0]}? Reply with a single probability "
            f"between 0 and 1 that {options[0]} is correct, e.g. 0.7."
        )
    lines = ", ".join(f"{o}: <percent>" for o in options)
    return (
        "Give the probability that each option is correct, "
        f"as percentages that sum to 100, in the form {lines}."
    )


def _with_instruction(messages: list[ChatMessage], instruction: str) -> list[ChatMessage]:
    """Append the method's instruction to the last user message (or add one)."""
    if messages and messages[-1].role == "user":
        last = messages[-1]
        return [*messages[:-1], ChatMessage(role="user", content=f"{last.content}\n\n{instruction}")]
    return [*messages, ChatMessage(role="user", content=instruction)]


def renormalise(logprobs: dict[str, float]) -> dict[str, float]:
    """Softmax over the given option log probabilities (they need not sum to 1)."""
    top = max(logprobs.values())
    w = {k: math.exp(v - top) for k, v in logprobs.items()}
    z = sum(w.values())
    return {k: v / z for k, v in w.items()}


def option_logprobs_from_top(sample: Sample, options: Sequence[str]) -> dict[str, float] | str:
    """Per-option log probability from the first token's top alternatives (a token matches an
    option when it equals the label after stripping spaces; matches are summed). Returns an error
    string when the sample has no logprobs or an option is missing."""
    if not sample.logprobs:
        return "the backend returned no logprobs"
    first = sample.logprobs[0]
    alts = {a.token: a.logprob for a in first.top}
    alts.setdefault(first.token, first.logprob)
    found: dict[str, list[float]] = {o: [] for o in options}
    for token, lp in alts.items():
        if token.strip() in found:
            found[token.strip()].append(lp)
    missing = [o for o, v in found.items() if not v]
    if missing:
        return f"option(s) {missing} not among the top {len(alts)} first tokens"
    return {o: _logsumexp(v) for o, v in found.items()}


def _logsumexp(v: list[float]) -> float:
    m = max(v)
    return m + math.log(sum(math.exp(x - m) for x in v))


# A leading minus is captured so that "-0.2" is rejected rather than read as 0.2.
_NUM = r"(-?(?:\d+(?:\.\d+)?|\.\d+))"
_VALUE = re.compile(_NUM + r"\s*(?:(%)|/\s*" + _NUM + r")?")


def _to_prob(num: str, pct: str | None, den: str | None) -> float | None:
    x = float(num)
    if den is not None:
        d = float(den)
        x = x / d if d > 0 else math.nan
    elif pct:
        x = x / 100.0
    elif x > 1:
        # A bare whole number above 1 ("70") is a percentage; a bare "1.5" is not a probability.
        if not x.is_integer():
            return None
        x = x / 100.0
    return x if 0.0 <= x <= 1.0 else None


def parse_verbalized(text: str, options: Sequence[str]) -> dict[str, float] | str:
    """Parse a verbalised probability. Labelled values for every option ("A: 70%, B: 30%") are
    normalised to sum 1; for two options one labelled value ("B: 30%") is that option's
    probability, and a single unlabelled value is the probability of the first option ("70%",
    "0.7", "probability: 7/10"; a bare whole number above 1 such as "70" is read as a percentage).
    Anything else (no number, several unlabelled numbers, a value outside [0, 1] such as "150%",
    "1.5" or "-0.2") is an error string."""
    labelled: dict[str, float] = {}
    for o in options:
        m = re.search(r"(?<![A-Za-z])" + re.escape(o) + r"\)?\s*[:=\-]\s*" + _VALUE.pattern, text)
        if m:
            p = _to_prob(m.group(1), m.group(2), m.group(3))
            if p is None:
                return f"value for {o} is not a probability: {m.group(0)!r}"
            labelled[o] = p
    if len(labelled) == len(options):
        total = sum(labelled.values())
        if total <= 0:
            return "all option probabilities are zero"
        return {o: v / total for o, v in labelled.items()}
    if len(options) == 2 and len(labelled) == 1:
        # "B: 0.3" alone is the probability of B, whichever option it names.
        ((o, p),) = labelled.items()
        return (
            {options[0]: p, options[1]: 1.0 - p} if o == options[0] else {options[0]: 1.0 - p, options[1]: p}
        )
    if len(options) == 2:
        values = [(m, _to_prob(m.group(1), m.group(2), m.group(3))) for m in _VALUE.finditer(text)]
        if len(values) == 1:
            p = values[0][1]
            if p is None:
                return f"{values[0][0].group(0)!r} is not a probability"
            return {options[0]: p, options[1]: 1.0 - p}
        if len(values) > 1:
            return f"ambiguous: {len(values)} numbers and no option labels"
    return "no probability found"


_LETTER = re.compile(r"^\W*(?:answer\s*(?:is)?\s*:?\s*)?\(?([A-Za-z])\b", re.IGNORECASE)


def parse_letter(text: str, options: Sequence[str]) -> str | None:
    """The option a letter-only answer names ('B', ' (B)', 'Answer: B) ...'), or None."""
    m = _LETTER.match(text)
    if not m:
        return None
    letter = m.group(1)
    for o in options:
        if o == letter or o == letter.upper():
            return o
    return None


@dataclass
class _Attempt:
    method: Method
    error: str | None
    raw: str
    cached: bool
    info: dict[str, Any] = field(default_factory=dict)


async def _by_logprobs(
    model: Model, msgs: list[ChatMessage], options: Sequence[str], cfg: ElicitConfig
) -> tuple[dict[str, float] | None, _Attempt]:
    prompt = _with_instruction(msgs, letter_instruction(options))
    exact = await model.option_logprobs(prompt, options)
    if exact is not None:
        lps, cached = exact
        return renormalise(lps), _Attempt(
            "logprobs", None, "", cached, {"logprobs": lps, "source": "full distribution"}
        )
    out = await model.generate(
        prompt, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=TOP_LOGPROBS, seed=cfg.seed
    )
    s = out.samples[0]
    res = option_logprobs_from_top(s, options)
    if isinstance(res, str):
        return None, _Attempt("logprobs", res, s.text, s.cached)
    return renormalise(res), _Attempt(
        "logprobs", None, s.text, s.cached, {"logprobs": res, "source": f"top-{TOP_LOGPROBS}"}
    )


async def _by_verbalized(
    model: Model, msgs: list[ChatMessage], options: Sequence[str], cfg: ElicitConfig
) -> tuple[dict[str, float] | None, _Attempt]:
    prompt = _with_instruction(msgs, verbalized_instruction(options))
    out = await model.generate(prompt, max_tokens=cfg.verbalized_max_tokens, temperature=0.0, seed=cfg.seed)
    res = parse_verbalized(out.text, options)
    if isinstance(res, str):
        return None, _Attempt("verbalized", res, out.text, out.cached)
    return res, _Attempt("verbalized", None, out.text, out.cached)


async def _by_vote(
    model: Model, msgs: list[ChatMessage], options: Sequence[str], cfg: ElicitConfig
) -> tuple[dict[str, float] | None, _Attempt]:
    prompt = _with_instruction(msgs, letter_instruction(options))
    out = await model.generate(
        prompt, n=cfg.vote_samples, max_tokens=4, temperature=cfg.vote_temperature, seed=cfg.seed
    )
    votes = [parse_letter(s.text, options) for s in out.samples]
    valid = [v for v in votes if v is not None]
    raw = " | ".join(s.text for s in out.samples)
    info = {"votes": votes, "valid": len(valid)}
    if not valid:
        return None, _Attempt("vote", f"none of {len(votes)} samples named an option", raw, out.cached, info)
    return {o: valid.count(o) / len(valid) for o in options}, _Attempt("vote", None, raw, out.cached, info)


_IMPL = {"logprobs": _by_logprobs, "verbalized": _by_verbalized, "vote": _by_vote}


async def elicit(
    model: Model, messages: MessagesLike, options: Sequence[str], config: ElicitConfig | None = None
) -> Verdict:
    """Ask ``model`` which option is correct given ``messages`` and return its :class:`Verdict`.

    Methods are tried in ``config.order``; the first that yields probabilities wins. The verdict's
    metadata records every attempt (method, error) and whether the answer came from the cache.
    """
    cfg = config or ElicitConfig()
    if len(options) < 2 or len(set(options)) != len(options):
        raise ConfigError(f"need at least two distinct options, got {list(options)}")
    msgs = to_messages(messages)
    attempts: list[_Attempt] = []
    for method in cfg.order:
        probs, att = await _IMPL[method](model, msgs, options, cfg)
        attempts.append(att)
        if probs is not None:
            return Verdict(
                probabilities=probs,
                method=method,
                raw=att.raw,
                n_samples=cfg.vote_samples if method == "vote" else 1,
                metadata={"cached": att.cached, "attempts": _log(attempts), **att.info, "model": model.spec},
            )
    return Verdict.failure(
        raw="\n---\n".join(f"[{a.method}] {a.raw}" for a in attempts),
        error="; ".join(f"{a.method}: {a.error}" for a in attempts),
        method=cfg.order[-1],
        metadata={"cached": all(a.cached for a in attempts), "attempts": _log(attempts), "model": model.spec},
    )


def _log(attempts: list[_Attempt]) -> list[dict[str, Any]]:
    return [{"method": a.method, "error": a.error} for a in attempts]


class ElicitationSpec(BaseModel):
    """The ``elicitation:`` block of a config (experiment or critique generation): the methods
    in order and the vote settings; :meth:`build` gives the :class:`ElicitConfig`."""

    model_config = ConfigDict(extra="forbid")
    order: list[Method] = ["logprobs", "verbalized", "vote"]
    vote_samples: int = Field(default=5, ge=1)
    vote_temperature: float = Field(default=1.0, ge=0.0)

    def build(self, seed: int) -> ElicitConfig:
        return ElicitConfig(
            order=tuple(self.order),
            vote_samples=self.vote_samples,
            vote_temperature=self.vote_temperature,
            seed=seed,
        )
