"""The embedded model (SmolLM2-135M-Instruct via llama.cpp) really loads, generates and gives
option log probabilities, on both engines (xllamacpp, the default, and llama-cpp-python). Kept few
and short: they run in CI."""

from __future__ import annotations

import importlib.util
import math

import pytest

from seerbench.models import Backend, ChatMessage, Model, PriceTable, UsageTracker, elicit, get_model
from seerbench.models._local import LocalBackend, default_model_path
from seerbench.models._registry import DEFAULT_LOCAL_ENGINE, LOCAL_ENGINE_ENV
from seerbench.models._xllamacpp import ALL_TOKENS, XLlamaCppBackend, option_masses

pytestmark = pytest.mark.model

QUESTION = "Which is larger, 7 or 12?\nA) 7\nB) 12"


@pytest.fixture(scope="module", params=["xllamacpp", "llama-cpp-python"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "xllamacpp":
        return XLlamaCppBackend()
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (pip install 'seerbench[llama-cpp]')")
    return LocalBackend()


def _model(backend: Backend) -> Model:
    return Model("local", backend, cache=False, usage=UsageTracker(PriceTable()))


def test_default_model_file_ships_in_site_packages() -> None:
    p = default_model_path()
    assert p.suffix == ".gguf" and p.is_file() and "site-packages" in str(p)
    assert p.stat().st_size > 50_000_000  # a real 135M-parameter model, not a stub


async def test_generates_text_deterministically(backend: Backend) -> None:
    m = _model(backend)
    out = await m.generate("Say hello.", max_tokens=8)
    assert out.text.strip()
    assert 1 <= out.usage.completion_tokens <= 8 and out.usage.prompt_tokens > 3
    again = await m.generate("Say hello.", max_tokens=8)
    assert again.text == out.text  # temperature 0
    s1 = await m.generate("Name a colour.", max_tokens=6, temperature=1.0, seed=5)
    s2 = await m.generate("Name a colour.", max_tokens=6, temperature=1.0, seed=5)
    assert s1.text == s2.text  # seeded sampling is reproducible


async def test_option_logprobs_are_real_and_agree_with_llama_top_logprobs(backend: Backend) -> None:
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


def test_local_spec_uses_the_default_engine_and_refuses_an_unknown_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from seerbench.errors import UnknownModelError
    from seerbench.models import make_backend

    monkeypatch.delenv(LOCAL_ENGINE_ENV, raising=False)
    assert DEFAULT_LOCAL_ENGINE == "xllamacpp"
    b = make_backend("local")
    assert isinstance(b, XLlamaCppBackend) and b.model_id == "SmolLM2-135M-Instruct.Q4_1.gguf#xllamacpp"
    monkeypatch.setenv(LOCAL_ENGINE_ENV, "llama-cpp-python")
    if importlib.util.find_spec("llama_cpp") is not None:
        other = make_backend("local")
        assert isinstance(other, LocalBackend) and other.model_id == "SmolLM2-135M-Instruct.Q4_1.gguf"
    monkeypatch.setenv(LOCAL_ENGINE_ENV, "vllm")
    with pytest.raises(UnknownModelError, match="xllamacpp, llama-cpp-python"):
        make_backend("local")


def test_option_masses_by_hand() -> None:
    # a five-token vocabulary: A = ("A", " A") = 0.3 + 0.1; B = 0.2 (no " B" token)
    entries = [
        {"token": t, "logprob": math.log(p)}
        for t, p in [("A", 0.3), ("B", 0.2), (" A", 0.1), ("x", 0.25), ("y", 0.15)]
    ]
    got = option_masses(entries, ["A", "B"])
    assert got == pytest.approx({"A": math.log(0.4), "B": math.log(0.2)}, abs=1e-12)
    assert option_masses(entries, ["A", "Maybe"]) is None  # no token spells "Maybe": not exact, so None
    assert option_masses([], ["A"]) is None


async def test_xllamacpp_option_probabilities_are_exact() -> None:
    """Against a direct computation from the server's full next-token distribution, read here
    without seerbench's parsing: every vocabulary token, the option's spellings summed."""
    b = XLlamaCppBackend()
    prompt = QUESTION + "\n\nAnswer with the letter of the correct option only (A or B)."
    m = _model(b)
    res = await m.option_logprobs(prompt, ["A", "B"])
    assert res is not None
    lps, _ = res
    raw = b._call(
        {
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": ALL_TOKENS,
        }
    )
    entries = raw["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert len(entries) == 49152  # SmolLM2's whole vocabulary
    total = sum(math.exp(e["logprob"]) for e in entries)
    assert total == pytest.approx(1.0, abs=1e-3)
    for o in ("A", "B"):
        mass = sum(math.exp(e["logprob"]) for e in entries if e["token"] in (o, " " + o))
        assert lps[o] == pytest.approx(math.log(mass), abs=1e-9)
    # batched with other prompts in the server's slots, every prompt gets the numbers it gets alone
    import asyncio

    others = [
        f"Which is larger, {a} or {b}?\nA) {a}\nB) {b}\n\n"
        "Answer with the letter of the correct option only (A or B)."
        for a, b in ((3, 9), (40, 4), (15, 51))
    ]
    alone = [await b.option_logprobs([_user(p)], ["A", "B"]) for p in others]
    together = await asyncio.gather(*(b.option_logprobs([_user(p)], ["A", "B"]) for p in [prompt, *others]))
    assert together[0] is not None and together[0][0] == pytest.approx(lps, abs=1e-9)
    for one, batched in zip(alone, together[1:], strict=True):
        assert one is not None and batched is not None and batched[0] == pytest.approx(one[0], abs=1e-9)


def _user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


@pytest.mark.parametrize("value", ["four", "0", "-2", "1.5"])
def test_a_bad_local_setting_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    from seerbench.errors import ModelError
    from seerbench.models._xllamacpp import PARALLEL_ENV

    monkeypatch.setenv(PARALLEL_ENV, value)
    with pytest.raises(ModelError, match=f"{PARALLEL_ENV}=.*whole number"):
        XLlamaCppBackend()
    monkeypatch.setenv(PARALLEL_ENV, "3")
    assert XLlamaCppBackend().n_parallel == 3 and XLlamaCppBackend().default_concurrency == 3
