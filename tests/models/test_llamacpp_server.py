"""The OpenAI-compatible backend against a real llama.cpp server (issue 15.4): a separate process
runs llama.cpp's HTTP server (xllamacpp's ``Server``) on 127.0.0.1 with the embedded SmolLM2 file,
and the backend talks to it over HTTP exactly as to vLLM or a remote llama-server. Expected values
are read from the server's raw JSON with urllib, not through seerbench's parser."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from seerbench.errors import ModelError
from seerbench.models import ElicitConfig, Model, PriceTable, UsageTracker, elicit
from seerbench.models._openai import OpenAIBackend
from tests.models.conftest import FAST_RETRY

pytestmark = pytest.mark.model

# Runs in the server process: llama.cpp's server on a free port of 127.0.0.1, serving until its
# stdin closes. n_ctx is small so a long prompt overflows it (the failure-path test).
SERVER = """
import sys, xllamacpp
from seerbench.models._local import default_model_path
p = xllamacpp.CommonParams()
p.model.path = str(default_model_path())
p.hostnames = ["127.0.0.1"]
p.port = 0
p.n_ctx = 1024
p.n_parallel = 2
p.use_jinja = True
p.verbosity = -1
p.cpuparams.n_threads = 1
p.cpuparams.poll = 0
p.cpuparams_batch.poll = 0
srv = xllamacpp.Server(p)
print(srv.listening_address, flush=True)
sys.stdin.read()
"""

BARE = "Which is larger, 7 or 12?\nA) 7\nB) 12"
QUESTION = BARE + "\n\nAnswer with the letter of the correct option only (A or B)."  # elicit's instruction


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        address = proc.stdout.readline().strip()
        assert address.startswith("http://127.0.0.1:"), f"the server did not start: {address!r}"
        yield address + "/v1"
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _raw(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        out: dict[str, Any] = json.loads(r.read())
    return out


def _model(url: str) -> Model:
    backend = OpenAIBackend("smollm2", base_url=url, api_key="unused")
    return Model("openai/smollm2", backend, cache=False, retry=FAST_RETRY, usage=UsageTracker(PriceTable()))


async def test_generation_matches_the_servers_own_answer(server_url: str) -> None:
    m = _model(server_url)
    out = await m.generate("Say hello.", max_tokens=8, seed=1)
    raw = _raw(
        server_url,
        {
            "model": "smollm2",
            "messages": [{"role": "user", "content": "Say hello."}],
            "max_tokens": 8,
            "temperature": 0.0,
            "seed": (1 * 1_000_003) % (2**31 - 1),
        },
    )
    assert out.text == raw["choices"][0]["message"]["content"] and out.text.strip()
    assert out.usage.prompt_tokens == raw["usage"]["prompt_tokens"] > 3
    assert out.usage.completion_tokens == raw["usage"]["completion_tokens"] <= 8
    assert out.samples[0].finish_reason == raw["choices"][0]["finish_reason"]
    await m.aclose()


async def test_logprobs_are_parsed_as_the_server_sent_them(server_url: str) -> None:
    m = _model(server_url)
    out = await m.generate(QUESTION, max_tokens=1, logprobs=True, top_logprobs=5)
    (tok,) = out.samples[0].logprobs or []
    raw = _raw(
        server_url,
        {
            "model": "smollm2",
            "messages": [{"role": "user", "content": QUESTION}],
            "max_tokens": 1,
            "temperature": 0.0,
            "seed": 0,
            "logprobs": True,
            "top_logprobs": 5,
        },
    )
    first = raw["choices"][0]["logprobs"]["content"][0]
    assert tok.token == first["token"] and tok.logprob == pytest.approx(first["logprob"], abs=1e-6)
    assert [(t.token, round(t.logprob, 5)) for t in tok.top] == [
        (t["token"], round(t["logprob"], 5)) for t in first["top_logprobs"]
    ]
    assert len(tok.top) == 5
    lps = [t.logprob for t in tok.top]
    assert lps == sorted(lps, reverse=True) and all(v <= 0 for v in lps)
    assert tok.logprob == pytest.approx(lps[0], abs=1e-6)  # greedy: the chosen token is the likeliest
    await m.aclose()


async def test_logprob_elicitation_against_the_real_server(server_url: str) -> None:
    m = _model(server_url)
    v = await elicit(m, BARE, ["A", "B"], ElicitConfig(order=("logprobs",)))  # elicit adds the instruction
    assert v.ok and v.method == "logprobs"
    assert v.probabilities is not None and sum(v.probabilities.values()) == pytest.approx(1.0, abs=1e-12)
    # worked out from the server's raw top-20 at the first answer token: an option's mass is that
    # of "A" and " A" where they appear, renormalised over the two options
    raw = _raw(
        server_url,
        {
            "model": "smollm2",
            "messages": [{"role": "user", "content": QUESTION}],
            "max_tokens": 1,
            "temperature": 0.0,
            "seed": 0,
            "logprobs": True,
            "top_logprobs": 20,
        },
    )
    top = raw["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    mass = {o: sum(math.exp(t["logprob"]) for t in top if t["token"] in (o, " " + o)) for o in ("A", "B")}
    assert mass["A"] > 0 and mass["B"] > 0  # both letters are among the likeliest first tokens
    assert v.prob("A") == pytest.approx(mass["A"] / (mass["A"] + mass["B"]), abs=1e-5)
    await m.aclose()


async def test_a_prompt_longer_than_the_context_is_a_model_error_not_retried(server_url: str) -> None:
    m = _model(server_url)
    with pytest.raises(ModelError, match=r"HTTP 400") as ei:
        await m.generate("word " * 3000, max_tokens=4)
    assert "context" in str(ei.value)
    assert m.usage.by_model["openai/smollm2"].retries == 0
    await m.aclose()
