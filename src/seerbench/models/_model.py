"""The one model interface everything else uses: cache, concurrency limit, retries, usage."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from typing import Any

from seerbench.models._backend import Backend
from seerbench.models._cache import CACHE_SCOPE, Cache, cache_key, default_cache
from seerbench.models._retry import RetryPolicy, with_retries
from seerbench.models._types import ChatMessage, GenerateConfig, ModelOutput, Sample, TokenLogprob, Usage
from seerbench.models._usage import UsageTracker, default_tracker

MessagesLike = str | Sequence[ChatMessage | dict[str, str]]


def to_messages(messages: MessagesLike) -> list[ChatMessage]:
    """Accept a plain prompt string, dicts or ChatMessages."""
    if isinstance(messages, str):
        return [ChatMessage(role="user", content=messages)]
    return [m if isinstance(m, ChatMessage) else ChatMessage(**m) for m in messages]


class Model:
    """A model spec bound to its backend. Every call is cached on disk (unless ``cache=False``),
    limited to ``max_concurrency`` in flight, retried on transient failures, and accounted.

    Get one with :func:`seerbench.models.get_model` (one shared instance per spec)::

        model = get_model("local")
        out = await model.generate("Name a prime number.", max_tokens=8)   # ModelOutput
        print(out.text, out.samples[0].usage)
        lp = await model.option_logprobs(messages, ["A", "B"])           # exact, where the backend can

    Arguments: ``spec`` is the model string results are labelled with; ``backend`` does one call
    (:class:`~seerbench.models.Backend`); ``cache`` is True (the default disk cache), False, or a
    :class:`~seerbench.models.Cache`; ``retry`` a :class:`~seerbench.models.RetryPolicy`;
    ``usage`` the tracker calls are counted in. Probabilities for a multiple-choice prompt come
    from :func:`seerbench.models.elicit`, not from here.
    """

    def __init__(
        self,
        spec: str,
        backend: Backend,
        *,
        cache: Cache | bool = True,
        max_concurrency: int | None = None,
        retry: RetryPolicy | None = None,
        usage: UsageTracker | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> None:
        self.spec = spec
        self._provenance = provenance  # None: worked out from the backend on first use
        self.backend = backend
        self._cache_opt = cache
        self.max_concurrency = max_concurrency or backend.default_concurrency
        self.retry = retry or RetryPolicy()
        self.usage = usage or default_tracker()
        # asyncio primitives belong to one event loop; a CLI may run several loops in turn.
        self._sems: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._last_sem: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None  # fast path
        self._configs: dict[Any, GenerateConfig] = {}  # (config, overrides) -> validated config

    def __repr__(self) -> str:
        return f"Model({self.spec!r})"

    @property
    def provenance(self) -> dict[str, Any]:
        """What identifies this model's answers (:func:`seerbench.provenance.model_provenance`):
        worked out once, and shared by the cache key and the cell identity."""
        if self._provenance is None:
            from seerbench.provenance import model_provenance, provenance_key

            self._provenance = model_provenance(self.backend)
            self._provenance_key = provenance_key(self._provenance)
        return self._provenance

    @property
    def provenance_key(self) -> str:
        """The part of :attr:`provenance` the cache key adds to the backend name and model id."""
        key: str | None = getattr(self, "_provenance_key", None)
        if key is None:
            from seerbench.provenance import provenance_key

            key = self._provenance_key = provenance_key(self.provenance)
        return key

    def _key(
        self, msgs: list[ChatMessage], cfg: GenerateConfig, index: int, purpose: str = "generate"
    ) -> str:
        return cache_key(
            self.backend.name,
            self.backend.model_id,
            msgs,
            cfg,
            index,
            purpose,
            provenance=self.provenance_key,
            scope=CACHE_SCOPE.get(),
        )

    @property
    def cache(self) -> Cache | None:
        if self._cache_opt is True:
            return default_cache()
        if self._cache_opt is False:
            return None
        return self._cache_opt

    def _sem(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        last = self._last_sem
        if last is not None and last[0] is loop:
            return last[1]
        s = self._sems.get(loop)
        if s is None:
            s = self._sems[loop] = asyncio.Semaphore(self.max_concurrency)
        self._last_sem = (loop, s)
        return s

    def _config(self, cfg: GenerateConfig, overrides: dict[str, Any]) -> GenerateConfig:
        """``cfg`` with ``overrides`` applied and validated; remembered, since callers repeat the
        same few overrides on every call (validation is a sizeable part of a call's CPU)."""
        try:
            key: Any = (cfg, tuple(sorted(overrides.items())))
            hash(key)
        except TypeError:  # an unhashable value (a list of stop strings): validate every time
            return GenerateConfig.model_validate({**cfg.model_dump(), **overrides})
        out = self._configs.get(key)
        if out is None:
            if len(self._configs) >= 1024:
                self._configs.clear()
            out = self._configs[key] = GenerateConfig.model_validate({**cfg.model_dump(), **overrides})
        return out

    async def generate(
        self, messages: MessagesLike, config: GenerateConfig | None = None, **overrides: Any
    ) -> ModelOutput:
        """Generate ``config.n`` samples for a chat. ``overrides`` replace fields of ``config``."""
        cfg = config or GenerateConfig()
        if overrides:
            cfg = self._config(cfg, overrides)
        msgs = to_messages(messages)
        if cfg.n == 1:
            samples = [await self._sample(msgs, cfg, 0)]
        else:
            samples = list(await asyncio.gather(*(self._sample(msgs, cfg, i) for i in range(cfg.n))))
        return ModelOutput(model=self.spec, samples=samples)

    async def _sample(self, msgs: list[ChatMessage], cfg: GenerateConfig, index: int) -> Sample:
        cache = self.cache
        key = ""
        if cache is not None:
            key = self._key(msgs, cfg, index)
            hit = cache.get(key)
            if hit is not None:
                self.usage.record_hit(self.spec)
                hit.cached = True
                return hit
        seed = cfg.sample_seed(index)
        async with self._sem():
            try:
                sample = await with_retries(
                    lambda: self.backend.complete(msgs, cfg, seed),
                    self.retry,
                    what=f"model {self.spec}",
                    on_retry=lambda _a, _e: self.usage.record_retry(self.spec),
                )
            except Exception:
                self.usage.record_error(self.spec)
                raise
        self.usage.record_call(self.spec, sample.usage.prompt_tokens, sample.usage.completion_tokens)
        if cache is not None:
            cache.put(key, self.spec, sample)
        return sample

    async def option_logprobs(
        self, messages: MessagesLike, options: Sequence[str]
    ) -> tuple[dict[str, float], bool] | None:
        """Exact next-token log probabilities of the option labels, where the backend can give
        them (cached like samples). Returns (logprobs, cached) or None."""
        msgs = to_messages(messages)
        cache = self.cache
        key = ""
        if cache is not None:
            cfg = GenerateConfig(max_tokens=1, logprobs=True)
            purpose = "option_logprobs:" + "\x1f".join(options)
            key = self._key(msgs, cfg, 0, purpose)
        if cache is not None:
            hit = cache.get(key)
            if hit is not None and hit.logprobs is not None:
                self.usage.record_hit(self.spec)
                return {t.token: t.logprob for t in hit.logprobs}, True
        async with self._sem():
            res = await self.backend.option_logprobs(msgs, options)
        if res is None:
            return None
        lps, usage = res
        self.usage.record_call(self.spec, usage.prompt_tokens, usage.completion_tokens)
        if cache is not None:
            cache.put(
                key,
                self.spec,
                Sample(
                    text="", logprobs=[TokenLogprob(token=o, logprob=v) for o, v in lps.items()], usage=usage
                ),
            )
        return lps, False

    async def aclose(self) -> None:
        await self.backend.aclose()


__all__ = ["MessagesLike", "Model", "Usage", "to_messages"]
