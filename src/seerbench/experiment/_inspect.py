"""Models that stand in for the real ones when a run is planned (``--dry-run``) or its prompts are
rebuilt (``seerbench show``)."""

from __future__ import annotations

import hashlib
import math
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from seerbench.config import CACHE_DIR_ENV, cache_dir
from seerbench.errors import ModelError
from seerbench.models import (
    Backend,
    ChatMessage,
    GenerateConfig,
    Model,
    RetryPolicy,
    Sample,
    TokenLogprob,
    TopLogprob,
    Usage,
    UsageTracker,
    to_messages,
)


@dataclass
class Repeats:
    """The requests a plan has made so far, over all its cells, and how many of the current
    cell's calls (and their tokens) repeat one of them exactly: in a run the disk cache answers
    those (e.g. random consultancy's consultant says what consultancy's already said)."""

    seen: set[tuple[Any, ...]] = field(default_factory=set)
    calls: int = 0
    tokens: int = 0

    def see(self, key: tuple[Any, ...], usage: Usage) -> None:
        if key in self.seen:
            self.calls += 1
            self.tokens += usage.prompt_tokens + usage.completion_tokens
        else:
            self.seen.add(key)


class CountingBackend(Backend):
    """Answers at once for :meth:`Experiment.plan`, with the capabilities of the backend it stands
    in for (``real``; None: every capability), so a judge's elicitation takes the calls it would
    take: exact option log probabilities only where the real backend reads them, top log
    probabilities only where it returns them, else on to the next method. Every text answer
    names option A and parses as a probability ('A: 50%, B: 50%'), so the first method the
    backend can do succeeds; it is followed by a tag of the request (:func:`_tag`). Usage is
    estimated prompt tokens (chars / 4) and the call's ``max_tokens``. With ``repeats``, each
    request of model ``spec`` is noted there."""

    name = "plan"
    default_concurrency = 1000
    ANSWER = "A: 50%, B: 50%"

    def __init__(
        self, real: Backend | None = None, *, spec: str = "", repeats: Repeats | None = None
    ) -> None:
        self._exact = real is None or type(real).option_logprobs is not Backend.option_logprobs
        self._top = real is None or real.supports_logprobs
        self._spec = spec
        self._repeats = repeats

    def _see(self, messages: Sequence[ChatMessage], what: Any, usage: Usage) -> tuple[Any, ...]:
        key = (self._spec, tuple((m.role, m.content) for m in messages), what)
        if self._repeats is not None:
            self._repeats.see(key, usage)
        return key

    @property
    def model_id(self) -> str:
        return "plan"

    @property
    def supports_logprobs(self) -> bool:
        return self._top

    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        prompt = sum(len(m.content) for m in messages) // 4 + 1
        usage = Usage(prompt_tokens=prompt, completion_tokens=config.max_tokens)
        key = self._see(messages, (config.model_dump_json(), seed), usage)
        logprobs = None
        if config.logprobs and self._top:  # every letter among the top tokens, equally likely
            top = tuple(TopLogprob(token=c, logprob=-math.log(26)) for c in string.ascii_uppercase)
            logprobs = [TokenLogprob(token="A", logprob=-math.log(26), top=top)]
        text = f"{self.ANSWER} ({_tag(key)})"
        return Sample(text=text, logprobs=logprobs, usage=usage, finish_reason="stop")

    async def option_logprobs(
        self, messages: Sequence[ChatMessage], options: Sequence[str]
    ) -> tuple[dict[str, float], Usage] | None:
        if not self._exact:
            return None
        usage = Usage(prompt_tokens=sum(len(m.content) for m in messages) // 4 + 1, completion_tokens=1)
        self._see(messages, ("options", *options), usage)
        return {o: -math.log(len(options)) for o in options}, usage


#: The letters of :func:`_tag`: none an option letter (uppercase) could be read from, no digit.
_TAG_LETTERS = "kmnpqrstvwxz"


def _tag(key: tuple[Any, ...]) -> str:
    """Eight letters that differ with the request (a digest of it), so that a stand-in answer, like
    a real one the cache keeps, is the same for one request and differs between two: where a later
    prompt quotes it (a debate's next speech), two questions' prompts then differ as they would in
    the run, and only a request the run repeats exactly is counted as a repeat."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
    return "".join(_TAG_LETTERS[b % len(_TAG_LETTERS)] for b in digest)


class NoCallBackend(Backend):
    """Stands in for a model's backend when prompts are rebuilt from the cache: same cache keys,
    and a miss is an error instead of a model call."""

    def __init__(self, real: Backend) -> None:
        self.real = real
        self.name = real.name
        self.default_concurrency = real.default_concurrency

    @property
    def model_id(self) -> str:
        return self.real.model_id

    @property
    def supports_logprobs(self) -> bool:
        return self.real.supports_logprobs

    def _miss(self) -> ModelError:
        return ModelError(
            f"the model cache in {cache_dir()} does not hold this run's calls (cleared, or the run used "
            "another cache dir), so its prompts cannot be rebuilt exactly: give the cache dir the run "
            f"used (seerbench --cache-dir DIR show ..., or {CACHE_DIR_ENV}=DIR), or pass --allow-calls "
            "to regenerate them"
        )

    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        raise self._miss()

    async def option_logprobs(
        self, messages: Sequence[ChatMessage], options: Sequence[str]
    ) -> tuple[dict[str, float], Usage] | None:
        if type(self.real).option_logprobs is Backend.option_logprobs:
            return None  # the real backend has no exact option logprobs either
        raise self._miss()


class RecordingModel(Model):
    """A model that logs each request's messages (for ``seerbench show``)."""

    def __init__(self, real: Model, role: str, log: list[dict[str, Any]], allow_calls: bool) -> None:
        backend = real.backend if allow_calls else NoCallBackend(real.backend)
        super().__init__(
            real.spec,
            backend,
            cache=real._cache_opt,
            max_concurrency=real.max_concurrency,
            retry=RetryPolicy(max_attempts=1),
            provenance=real.provenance,  # the real model's cache keys, whatever backend stands in
        )
        self._role, self._log = role, log

    async def _sample(self, msgs: list[ChatMessage], cfg: GenerateConfig, index: int) -> Sample:
        sample = await super()._sample(msgs, cfg, index)
        self._log.append(
            {
                "role": self._role,
                "model": self.spec,
                "kind": "generate",
                "sample": index,
                "messages": [m.model_dump(mode="json") for m in msgs],
                "output": sample.text,
            }
        )
        return sample

    async def option_logprobs(
        self, messages: Any, options: Sequence[str]
    ) -> tuple[dict[str, float], bool] | None:
        res = await super().option_logprobs(messages, options)
        if res is not None:
            self._log.append(
                {
                    "role": self._role,
                    "model": self.spec,
                    "kind": "option_logprobs",
                    "messages": [m.model_dump(mode="json") for m in to_messages(messages)],
                    "output": res[0],
                }
            )
        return res


def counting_factory(
    base: Callable[[str, str], Model], usage: UsageTracker, repeats: Repeats | None = None
) -> Callable[[str, str], Model]:
    """A model factory for planning: each model answers at once through a :class:`CountingBackend`
    with the capabilities of ``base``'s model of that spec (nothing is loaded or called), uncached,
    its calls counted in ``usage`` and its requests noted in ``repeats``."""

    def make(spec: str, role: str) -> Model:
        backend = CountingBackend(base(spec, role).backend, spec=spec, repeats=repeats)
        return Model(spec, backend, cache=False, usage=usage)

    return make


def stand_in_factory() -> Callable[[str, str], Model]:
    """A model factory that resolves nothing and calls nothing: for building a protocol only to
    read what it says about itself (an older protocol's folder name)."""
    usage = UsageTracker()
    return lambda spec, role: Model(spec, CountingBackend(), cache=False, usage=usage)


def recording_factory(
    base: Callable[[str, str], Model], log: list[dict[str, Any]], allow_calls: bool
) -> Callable[[str, str], Model]:
    """A model factory for ``seerbench show --prompts``: ``base``'s models, each request logged in
    ``log`` (with the role: judge, agent, or the protocol keyword it was built for); with
    ``allow_calls=False`` a cache miss raises instead of calling the model."""
    return lambda spec, role: RecordingModel(base(spec, role), role, log, allow_calls)
