"""Usage accounting and price tables; model spec parsing; the concurrency limit."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from seerbench.errors import ConfigError, ModelError, UnknownModelError
from seerbench.models import (
    SPEC_FORMS,
    Backend,
    ChatMessage,
    GenerateConfig,
    Model,
    PriceTable,
    Sample,
    ScriptedBackend,
    Usage,
    UsageTracker,
    get_model,
    list_backends,
    make_backend,
    register_scripted,
    spec_forms,
)
from seerbench.models._usage import Price

# -- usage and prices -------------------------------------------------------------------------------


def test_unknown_price_is_none_not_zero() -> None:
    t = UsageTracker(PriceTable())
    t.record_call("openai/gpt-x", 1000, 200)
    u = t.by_model["openai/gpt-x"]
    assert u.cost is None
    assert (u.calls, u.prompt_tokens, u.completion_tokens) == (1, 1000, 200)
    assert t.totals().cost is None


def test_known_price_by_hand() -> None:
    t = UsageTracker(PriceTable({"openai/gpt-x": Price(prompt_per_mtok=2.5, completion_per_mtok=10.0)}))
    t.record_call("openai/gpt-x", 1000, 200)  # 1000 * 2.5e-6 + 200 * 10e-6 = 0.0025 + 0.002
    assert t.by_model["openai/gpt-x"].cost == pytest.approx(0.0045)
    t.record_call("openai/gpt-x", 3000, 0)  # + 0.0075
    t.record_hit("openai/gpt-x")  # a cache hit costs nothing
    u = t.by_model["openai/gpt-x"]
    assert u.cost == pytest.approx(0.012) and u.cache_hits == 1 and u.calls == 2
    t.record_call("local", 500, 50)  # the embedded model is free
    assert t.by_model["local"].cost == 0.0
    assert t.totals().cost == pytest.approx(0.012)
    t.record_call("openai/unpriced", 1, 1)  # one unknown price makes the total unknown
    assert t.totals().cost is None
    assert t.totals().calls == 4


def test_price_table_from_yaml_and_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    y = tmp_path / "prices.yaml"
    y.write_text("openai/gpt-x:\n  prompt: 2.5\n  completion: 10\n")
    assert PriceTable.load(y).cost("openai/gpt-x", 1_000_000, 1_000_000) == pytest.approx(12.5)
    j = tmp_path / "prices.json"
    j.write_text(json.dumps({"litellm/anthropic/m": {"prompt": 1, "completion": 5}}))
    monkeypatch.setenv("SEERBENCH_PRICES", str(j))
    table = PriceTable.load()
    assert table.cost("litellm/anthropic/m", 2_000_000, 0) == pytest.approx(2.0)
    assert table.cost("openai/other", 10, 10) is None


def test_price_table_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        PriceTable.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("openai/gpt-x:\n  prompt: 2.5\n")
    with pytest.raises(ConfigError, match="completion"):
        PriceTable.load(bad)
    bad.write_text("- just a list\n")
    with pytest.raises(ConfigError):
        PriceTable.load(bad)


async def test_model_records_usage_and_errors() -> None:
    def boom(msgs: Sequence[ChatMessage], cfg: GenerateConfig, seed: int | None) -> str:
        raise ModelError("scripted failure")

    t = UsageTracker(PriceTable())
    ok = Model("scripted:echo", ScriptedBackend("echo"), cache=False, usage=t)
    out = await ok.generate("one two three")
    assert out.usage == Usage(prompt_tokens=3, completion_tokens=3)
    bad = Model("scripted:boom", ScriptedBackend(boom), cache=False, usage=t)
    with pytest.raises(ModelError, match="scripted failure"):
        await bad.generate("x")
    snap = t.snapshot()
    assert snap["scripted:echo"]["calls"] == 1 and snap["scripted:echo"]["prompt_tokens"] == 3
    assert snap["scripted:boom"]["errors"] == 1 and snap["scripted:boom"]["calls"] == 0


# -- the concurrency limit ---------------------------------------------------------------------------


class _Slow(Backend):
    name = "slow"

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0

    @property
    def model_id(self) -> str:
        return "slow"

    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        return Sample(text="ok")


async def test_concurrency_limit_is_respected() -> None:
    backend = _Slow()
    m = Model("slow", backend, cache=False, max_concurrency=3, usage=UsageTracker(PriceTable()))
    await asyncio.gather(*(m.generate(f"q{i}") for i in range(12)))
    assert backend.peak == 3
    # n samples of one request share the same limit
    backend.peak = 0
    await m.generate("q", n=8, temperature=1.0)
    assert backend.peak == 3


# -- model specs ---------------------------------------------------------------------------------


def test_unknown_spec_lists_valid_forms() -> None:
    with pytest.raises(UnknownModelError) as ei:
        make_backend("gpt-5-turbo")
    msg = str(ei.value)
    assert "gpt-5-turbo" in msg
    for form, _ in SPEC_FORMS:
        assert form in msg


@pytest.mark.parametrize("spec", ["openai/", "litellm/claude", "scripted:no-such-responder"])
def test_malformed_specs(spec: str) -> None:
    with pytest.raises(UnknownModelError):
        make_backend(spec)


def test_missing_gguf_is_a_clear_model_error() -> None:
    with pytest.raises(ModelError) as ei:
        make_backend("local:/missing.gguf")
    assert "/missing.gguf" in str(ei.value) and "not found" in str(ei.value)
    with pytest.raises(ModelError):
        get_model("local:/missing.gguf")


def test_litellm_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # as if not installed
    with pytest.raises(ModelError) as ei:
        make_backend("litellm/anthropic/claude-3-5-haiku-latest")
    assert "pip install 'seerbench[litellm]'" in str(ei.value)


def test_scripted_specs_and_registration() -> None:
    b = make_backend("scripted")
    assert isinstance(b, ScriptedBackend) and b.model_id == "echo"
    register_scripted("always-b", lambda msgs, cfg, seed: "B", replace=True)
    assert make_backend("scripted:always-b").model_id == "always-b"
    with pytest.raises(ConfigError, match="already registered"):
        register_scripted("always-b", lambda msgs, cfg, seed: "B")


def test_get_model_shares_models_per_spec() -> None:
    assert get_model("scripted:echo") is get_model("scripted:echo")
    assert get_model("scripted:echo") is not get_model("scripted:echo", cache=False)


def test_list_backends_covers_every_form() -> None:
    infos = list_backends()
    assert [i.form for i in infos] == [f for f, _ in spec_forms()]  # plugins' after SPEC_FORMS
    assert [i.form for i in infos][: len(SPEC_FORMS)] == [f for f, _ in SPEC_FORMS]
    by_form = {i.form: i for i in infos}
    assert by_form["local"].usable  # the embedded model is a core dependency
    assert by_form["scripted[:<name>]"].usable and "echo" in by_form["scripted[:<name>]"].note
