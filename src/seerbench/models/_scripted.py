"""Deterministic rule-based "models" for tests and simulations. Never the default.

A responder is a function ``(messages, config, seed) -> str | Sample``; register one under a name
with :func:`register_scripted` and use it as the model spec ``scripted:<name>``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

from seerbench.errors import UnknownModelError
from seerbench.models._backend import Backend
from seerbench.models._types import ChatMessage, GenerateConfig, Sample, Usage
from seerbench.plugins import Registry

Responder = Callable[[Sequence[ChatMessage], GenerateConfig, "int | None"], "str | Sample"]

#: Responder name -> responder: the model specs ``scripted:<name>``.
RESPONDERS: Registry[Responder] = Registry("scripted responder", error=UnknownModelError)


def register_scripted(name: str, responder: Responder, *, replace: bool = False) -> None:
    """Make ``responder`` available as the model spec ``scripted:<name>``; another responder
    under a taken name is refused (:class:`ConfigError`) unless ``replace=True``."""
    RESPONDERS.add(name, responder, replace=replace)


def scripted_names() -> list[str]:
    return sorted(RESPONDERS.names())


def _echo(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    users = [m.content for m in messages if m.role == "user"]
    return users[-1] if users else ""


_OPTION = re.compile(r"(?m)^\s*\(?([A-Z])\)\s")


def _coin(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    """Picks one of the option letters listed in the prompt (lines like 'A) ...'), pseudo-randomly
    but deterministically from the prompt and seed; for judges and agents in simulations."""
    text = "\n".join(m.content for m in messages)
    letters = sorted(set(_OPTION.findall(text))) or ["A", "B"]
    h = hashlib.sha256(f"{seed}|{text}".encode()).digest()
    return letters[h[0] % len(letters)]


register_scripted("echo", _echo)
register_scripted("coin", _coin)


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


class ScriptedBackend(Backend):
    """Runs a registered (or given) responder. ``calls`` counts backend calls, for tests."""

    name = "scripted"
    default_concurrency = 64

    def __init__(self, responder: str | Responder = "echo") -> None:
        if isinstance(responder, str):
            self._name = responder
            self._fn = RESPONDERS.lookup(responder)
        else:
            self._name = getattr(responder, "__name__", "custom")
            self._fn = responder
        self.calls = 0

    @property
    def model_id(self) -> str:
        return self._name

    def content_identity(self) -> str | None:
        # a user's responder: its code (and the user modules it imports) decides the answers
        from seerbench.provenance import code_hash

        h = code_hash(self._fn)
        return f"code:{h}" if h else None

    @property
    def supports_logprobs(self) -> bool:
        return False

    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        self.calls += 1
        out = self._fn(messages, config, seed)
        if isinstance(out, Sample):
            return out
        prompt = sum(_tokens(m.content) for m in messages)
        return Sample(
            text=out, usage=Usage(prompt_tokens=prompt, completion_tokens=_tokens(out)), finish_reason="stop"
        )
