"""The embedded model (SmolLM2-135M-Instruct via llama.cpp) really loads, generates and gives
option log probabilities. Kept few and short: they run in CI."""

from __future__ import annotations

import math

import pytest

from seerbench.models import Model, PriceTable, UsageTracker, elicit, get_model
from seerbench.models._local import LocalBackend, default_model_path

pytestmark = pytest.mark.model

QUESTION = "Which is larger, 7 or 12?\nA) 7\nB) 12"


@pytest.fixture(scope="module")
def backend() -> LocalBackend:
    return LocalBackend()


def _model(backend: LocalBackend) -> Model:
    return Model("local", backend, cache=False, usage=UsageTracker(PriceTable()))


def test_default_model_file_ships_in_site_packages() -> None:
    p = default_model_path()
    assert p.suffix == ".gguf" and p.is_file() and "site-packages" in str(p)
    assert p.stat().st_size > 50_000_000  # a real 135M-parameter model, not a stub


async def test_generates_text_deterministically(backend: LocalBackend) -> None:
    m = _model(backend)
    out = await m.generate("Say hello.", max_tokens=8)
    assert out.text.strip()
    assert 1 <= out.usage.completion_tokens <= 8 and out.usage.prompt_tokens > 3
    again = await m.generate("Say hello.", max_tokens=8)
    assert again.text == out.text  # temperature 0
    s1 = await m.generate("Name a colour.", max_tokens=6, temperature=1.0, seed=5)
    s2 = await m.generate("Name a colour.", max_tokens=6, temperature=1.0, seed=5)
    assert s1.text == s2.text  # seeded sampling is reproducible


async def test_option_logprobs_are_real_and_agree_with_llama_top_logprobs(backend: LocalBackend) -> None:
    m = _model(backend)
    prompt = QUESTION + "\n\nAnswer with the letter of the correct option only (A or B)."
    res = await m.option_logprobs(prompt, ["A", "B"])
    assert res is not None
    lps, cached = res
    assert not cached and set(lps) == {"A", "B"}
    assert all(v < 0 for v in lps.values())
    assert math.exp(lps["A"]) + math.exp(lps["B"]) <= 1.0 + 1e-9  # a part of the full distribution

    # independently: llama.cpp's own top-20 logprobs of the first generated token at the same
    # position. The option's mass is that of "A" plus " A"; where " A" is not in the top 20 its
    # mass is at most that of the 20th token, which bounds the exact value from both sides.
    out = await m.generate(prompt, max_tokens=1, logprobs=True, top_logprobs=20)
    (first,) = out.samples[0].logprobs or []
    top = {t.token: t.logprob for t in first.top}
    assert len(top) == 20
    floor = min(top.values())
    for o in ("A", "B"):
        assert o in top  # both letters are likely first tokens for this prompt
        low = math.log(sum(math.exp(top[t]) for t in (o, " " + o) if t in top))
        high = math.log(math.exp(low) + (0.0 if " " + o in top else math.exp(floor)))
        assert low - 1e-4 <= lps[o] <= high + 1e-4


async def test_elicit_by_logprobs_sums_to_one() -> None:
    m = get_model("local", cache=False)
    v = await elicit(m, QUESTION, ["A", "B"])
    assert v.ok and v.method == "logprobs"
    assert v.metadata["source"] == "full distribution"
    assert v.probabilities is not None
    assert sum(v.probabilities.values()) == pytest.approx(1.0, abs=1e-9)
    assert all(0.0 < p < 1.0 for p in v.probabilities.values())
    lp = v.metadata["logprobs"]
    assert v.prob("A") == pytest.approx(1 / (1 + math.exp(lp["B"] - lp["A"])), abs=1e-9)
