"""The embedded backend on xllamacpp: llama.cpp's own server, in-process, from a prebuilt wheel.

One ``xllamacpp.Server`` per model file and process, with ``n_parallel`` slots (1 unless
``SEERBENCH_LOCAL_PARALLEL`` says more): up to that many calls are decoded together (continuous
batching), where llama-cpp-python serialises them. Calls go
straight to the server's chat-completions handler (no HTTP). Option probabilities are exact: one
token is generated with the log probabilities of the most likely :data:`TOP_FIRST` vocabulary
tokens at that position (the raw softmax of the logits, before temperature, over the whole
vocabulary), and an option's mass is that of the tokens ``A`` and `` A`` (see
:meth:`XLlamaCppBackend.option_logprobs`). Where a spelling is not among them, the call is made
again with the whole vocabulary's list: the same numbers, 12x the answer to serialise and parse.

The server's OpenMP threads wait passively (``OMP_WAIT_POLICY=PASSIVE``, unless the user set the
variable): spinning at every barrier cost 5x the CPU per call on a loaded 2-core machine.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seerbench.config import available_cpus
from seerbench.errors import ModelError
from seerbench.models._backend import Backend
from seerbench.models._local import DEFAULT_N_CTX, N_CTX_ENV, default_model_path, env_int, model_file
from seerbench.models._types import ChatMessage, GenerateConfig, Sample, Usage, chat_request, parse_completion

#: Calls decoded together; each slot has the full per-request context (SEERBENCH_LOCAL_N_CTX).
#: One by default: a request batched with others gets slightly different numbers from llama.cpp
#: (measured up to 0.054 in an option's log probability, 0.21 with flash attention), so results
#: would depend on scheduling. SEERBENCH_LOCAL_PARALLEL=4 generates ~40% more tokens/s on 2
#: cores at that price.
DEFAULT_PARALLEL = 1
PARALLEL_ENV = "SEERBENCH_LOCAL_PARALLEL"
#: More than any vocabulary: the server clamps it to the vocabulary size.
ALL_TOKENS = 1 << 20
#: Next-token entries asked for first. The server computes every token's probability and sorts
#: them whatever this is; the cost is the answer (JSON built, converted, read in Python): 4,096
#: entries cost nothing measurable over 20, the whole vocabulary (49,152 entries, 5 MB) +0.5 s of
#: CPU per call. On SmolLM2's judge prompts `` A`` and `` B`` rank in the low thousands.
TOP_FIRST = 4096
#: The OpenMP setting for the embedded engine's threads, unless the environment has one.
OMP_WAIT_ENV = "OMP_WAIT_POLICY"

_servers: dict[tuple[str, int, int], Any] = {}
_lock = threading.Lock()
#: Per model file: how many vocabulary entries spell each option spelling seen so far (read from a
#: whole-vocabulary answer; a property of the vocabulary, not of a prompt).
_spelling_counts: dict[str, dict[str, int]] = {}


def _server(path: Path, n_ctx: int, n_parallel: int) -> Any:
    key = (str(path.resolve()), n_ctx, n_parallel)
    with _lock:
        if key in _servers:
            return _servers[key]
        # Read by libgomp when it loads (with xllamacpp): idle threads sleep instead of spinning.
        os.environ.setdefault(OMP_WAIT_ENV, "PASSIVE")
        try:
            import xllamacpp
        except ImportError as e:
            raise ModelError("xllamacpp is not installed: `pip install xllamacpp`") from e
        p = xllamacpp.CommonParams()
        p.model.path = str(path)
        p.n_ctx = n_ctx * n_parallel  # llama.cpp splits the context between the slots
        p.n_parallel = n_parallel
        # As llama-cpp-python does: half the usable cores decode, all of them read the prompt; no
        # busy polling. llama.cpp's own default (every core the host has, polling) spins its
        # threads against each other on a shared machine: measured 25x more CPU per token at a
        # load of 10 on 2 cores.
        cpus = available_cpus()
        p.cpuparams.n_threads = max(1, cpus // 2)
        p.cpuparams_batch.n_threads = cpus
        p.cpuparams.poll = 0
        p.cpuparams_batch.poll = 0
        # Every prompt evaluated whole: reusing the cache changes llama.cpp's numbers, which would make
        # results depend on call order. Measured 2026-11-25: a chat prompt that repeats the slot's
        # previous one (all but its last token reused) moved an option's log probability by up to
        # 0.47; a shared prefix with a new suffix gave identical numbers in 25 of 25 cases, but
        # nothing in the request can keep a call from being a repeat (the fallback below is one).
        p.cache_prompt = False
        # Flash attention (llama.cpp's "auto" turns it on) gives a request different numbers when
        # it shares a batch with others: measured up to 0.21 in an option's log probability
        # between 8 judge prompts run one by one and at once; without it, identical.
        p.flash_attn_type = xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
        p.use_jinja = True  # the chat template in the GGUF file, as llama-cpp-python applies it
        p.verbosity = -1  # quiet
        p.warmup = False
        p.endpoint_metrics = False
        try:
            srv = xllamacpp.Server(p)
        except Exception as e:  # the extension raises RuntimeError/ValueError subclasses
            raise ModelError(f"could not load GGUF model {path}: {e}") from e
        _servers[key] = srv
        return srv


class XLlamaCppBackend(Backend):
    """llama.cpp's server in-process via xllamacpp. ``path=None`` is the embedded SmolLM2."""

    name = "local"

    def __init__(
        self, path: str | Path | None = None, *, n_ctx: int | None = None, n_parallel: int | None = None
    ) -> None:
        self.path = default_model_path() if path is None else model_file(path)
        self.n_ctx = n_ctx or env_int(N_CTX_ENV, DEFAULT_N_CTX)
        self.n_parallel = n_parallel or env_int(PARALLEL_ENV, DEFAULT_PARALLEL)
        self.default_concurrency = self.n_parallel  # more would only queue in the server
        self._srv: Any = None
        #: Option-probability calls that needed the whole vocabulary's list (benchmarks report it).
        self.whole_vocabulary_calls = 0

    @property
    def model_id(self) -> str:
        # The file name (a cache survives moving the venv) and the engine: another llama.cpp build
        # gives slightly different numbers, so its answers are not the same cache entries.
        return f"{self.path.name}#xllamacpp"

    @property
    def version(self) -> str:  # type: ignore[override]
        from seerbench.provenance import package_version

        return f"xllamacpp {package_version('xllamacpp')}"

    def content_identity(self) -> str:
        # the file's bytes: two files of one name are two models (hashed once, then remembered)
        from seerbench.provenance import file_digest

        return f"sha256:{file_digest(self.path)}"

    def _call(self, body: dict[str, Any]) -> dict[str, Any]:
        if self._srv is None:
            self._srv = _server(self.path, self.n_ctx, self.n_parallel)
        r: dict[str, Any] = self._srv.handle_chat_completions(body)
        err = r.get("error") if isinstance(r, dict) else None
        if err is not None or not isinstance(r, dict) or "choices" not in r:
            msg = (
                err.get("message", str(err))
                if isinstance(err, dict)
                else str(err if err is not None else r)[:300]
            )
            if "context" in msg and ("exceed" in msg or "size" in msg):
                raise ModelError(
                    f"{msg}. The prompt is longer than the local model's context ({self.n_ctx} tokens): "
                    f"set {N_CTX_ENV} higher, or shorten the material."
                )
            raise ModelError(f"the embedded llama.cpp server refused the request: {msg}")
        return r

    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        r = await asyncio.to_thread(self._call, chat_request(self.path.name, messages, config, seed))
        return parse_completion(r, config, "the embedded llama.cpp server")

    async def option_logprobs(
        self, messages: Sequence[ChatMessage], options: Sequence[str]
    ) -> tuple[dict[str, float], Usage] | None:
        """Exact next-token log probability of each option label (``A`` and `` A`` summed) at the
        start of the assistant's answer, the numbers of the whole vocabulary's log probabilities;
        None if no token spells a label.

        The server is asked for its :data:`TOP_FIRST` most likely entries; where every vocabulary
        entry that spells a label is among them (how many there are is learnt from the first
        whole-vocabulary answer for those spellings), the options' masses are summed from them,
        the same entries in the same order as in the whole list. Otherwise the call is repeated
        for the whole vocabulary (prompts are evaluated whole, so its numbers are the same)."""
        wanted = {v for o in options for v in (o, " " + o)}
        counts = _spelling_counts.setdefault(str(self.path.resolve()), {})
        if wanted <= counts.keys():
            if any(counts[o] + counts[" " + o] == 0 for o in options):
                return None  # no vocabulary entry spells a label: known without asking
            r = await asyncio.to_thread(self._call, _logprob_body(messages, TOP_FIRST))
            entries = _first_entries(r)
            found = Counter(e["token"] for e in entries if e["token"] in wanted)
            if all(found[w] == counts[w] for w in wanted):
                return _with_usage(option_masses(entries, options), r)
        self.whole_vocabulary_calls += 1
        r = await asyncio.to_thread(self._call, _logprob_body(messages, ALL_TOKENS))
        entries = _first_entries(r)
        found = Counter(e["token"] for e in entries if e["token"] in wanted)
        counts.update({w: found[w] for w in wanted})
        return _with_usage(option_masses(entries, options), r)


def _logprob_body(messages: Sequence[ChatMessage], top: int) -> dict[str, Any]:
    return {
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "max_tokens": 1,
        "temperature": 0.0,
        "logprobs": True,
        "top_logprobs": top,
    }


def _first_entries(r: dict[str, Any]) -> list[dict[str, Any]]:
    (first,) = r["choices"][0]["logprobs"]["content"][:1]
    entries: list[dict[str, Any]] = first["top_logprobs"]
    return entries


def _with_usage(masses: dict[str, float] | None, r: dict[str, Any]) -> tuple[dict[str, float], Usage] | None:
    if masses is None:
        return None
    return masses, Usage(
        prompt_tokens=int((r.get("usage") or {}).get("prompt_tokens", 0)), completion_tokens=1
    )


def option_masses(entries: Sequence[dict[str, Any]], options: Sequence[str]) -> dict[str, float] | None:
    """Log probability of each option from a full next-token distribution (``{token, logprob}``
    entries for the whole vocabulary): log of the summed probability of the tokens spelling the
    label with and without a leading space, as the server computed them (its float32 log
    probabilities sum to 1 within about 1e-4; a judge's probabilities are renormalised over the
    options anyway). None when a label is no single token."""
    by_text: dict[str, list[float]] = {}
    wanted = {v for o in options for v in (o, " " + o)}
    for e in entries:
        if e["token"] in wanted:
            by_text.setdefault(e["token"], []).append(e["logprob"])
    out: dict[str, float] = {}
    for o in options:
        vals = by_text.get(o, []) + by_text.get(" " + o, [])
        if not vals:
            return None
        m = max(vals)
        out[o] = m + math.log(math.fsum(math.exp(v - m) for v in vals))
    return out
