"""xllamacpp's option probabilities from the server's top entries, the whole vocabulary only as a
fallback (issue 27): the numbers are those of the whole-vocabulary computation, exactly. A fake
server with a hand-made vocabulary checks the bookkeeping; the real SmolLM2 checks the numbers."""

from __future__ import annotations

import math
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from seerbench.models import ChatMessage
from seerbench.models import _xllamacpp as xl
from seerbench.models._xllamacpp import ALL_TOKENS, XLlamaCppBackend, option_masses


class FakeServer:
    """Answers with the ``top_logprobs`` most likely entries of a fixed next-token distribution."""

    def __init__(self, vocab: list[tuple[str, float]]) -> None:
        self.entries = [
            {"id": i, "token": t, "logprob": math.log(p)}
            for i, (t, p) in enumerate(sorted(vocab, key=lambda x: -x[1]))
        ]
        self.asked: list[int] = []

    def handle_chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(body["top_logprobs"])
        top = self.entries[: body["top_logprobs"]]
        return {
            "choices": [{"logprobs": {"content": [{**top[0], "top_logprobs": top}]}}],
            "usage": {"prompt_tokens": 7},
        }


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xl, "_spelling_counts", {})
    monkeypatch.setattr(xl, "TOP_FIRST", 3)


def _backend(tmp_path: Path, vocab: list[tuple[str, float]]) -> tuple[XLlamaCppBackend, FakeServer]:
    f = tmp_path / "m.gguf"
    f.write_bytes(b"")
    b = XLlamaCppBackend(f)
    srv = FakeServer(vocab)
    b._srv = srv
    return b, srv


PROMPT = [ChatMessage(role="user", content="A or B?")]


async def test_top_entries_when_every_spelling_is_among_them(tmp_path: Path, fresh: None) -> None:
    # A = "A" 0.4 + " A" 0.3, B = "B" 0.2, no " B": all three spellings in the top 3
    b, srv = _backend(tmp_path, [("A", 0.4), (" A", 0.3), ("B", 0.2), ("x", 0.06), ("y", 0.04)])
    first = await b.option_logprobs(PROMPT, ["A", "B"])
    assert srv.asked == [ALL_TOKENS]  # the first call learns how many entries spell each label
    second = await b.option_logprobs(PROMPT, ["A", "B"])
    assert srv.asked == [ALL_TOKENS, 3] and b.whole_vocabulary_calls == 1
    assert first is not None and second is not None
    assert second[0] == first[0]
    assert second[0]["A"] == pytest.approx(math.log(0.7), abs=1e-12)
    assert second[0]["B"] == pytest.approx(math.log(0.2), abs=1e-12)
    assert second[1].prompt_tokens == 7 and second[1].completion_tokens == 1


async def test_a_spelling_outside_the_top_entries_asks_for_the_whole_vocabulary(
    tmp_path: Path, fresh: None
) -> None:
    # " B" (0.05) ranks 4th: the top 3 cannot give B's mass, so the call is repeated in full
    b, srv = _backend(tmp_path, [("A", 0.5), ("B", 0.25), ("x", 0.15), (" B", 0.05), ("y", 0.05)])
    await b.option_logprobs(PROMPT, ["A", "B"])
    got = await b.option_logprobs(PROMPT, ["A", "B"])
    assert srv.asked == [ALL_TOKENS, 3, ALL_TOKENS] and b.whole_vocabulary_calls == 2
    assert got is not None and got[0]["B"] == pytest.approx(math.log(0.3), abs=1e-12)
    assert got[0]["A"] == pytest.approx(math.log(0.5), abs=1e-12)


async def test_a_second_entry_with_the_same_spelling_outside_the_top_is_not_missed(
    tmp_path: Path, fresh: None
) -> None:
    # two vocabulary entries read "B" (0.2 in the top 3, 0.05 beyond it): B = 0.25, not 0.2
    b, srv = _backend(tmp_path, [("A", 0.5), ("B", 0.2), ("x", 0.15), ("y", 0.1), ("B", 0.05)])
    await b.option_logprobs(PROMPT, ["A", "B"])
    got = await b.option_logprobs(PROMPT, ["A", "B"])
    assert srv.asked == [ALL_TOKENS, 3, ALL_TOKENS]
    assert got is not None and got[0]["B"] == pytest.approx(math.log(0.25), abs=1e-12)


async def test_a_label_no_token_spells_is_none_and_known_after_one_call(tmp_path: Path, fresh: None) -> None:
    b, srv = _backend(tmp_path, [("A", 0.5), ("B", 0.25), ("x", 0.25)])
    assert await b.option_logprobs(PROMPT, ["A", "Maybe"]) is None
    assert await b.option_logprobs(PROMPT, ["A", "Maybe"]) is None
    assert srv.asked == [ALL_TOKENS]


def test_omp_threads_wait_passively_unless_the_user_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []

    class Loaded(Exception):
        pass

    def params() -> None:  # xllamacpp.CommonParams: the library is loaded by now
        seen.append(xl.os.environ.get("OMP_WAIT_POLICY"))
        raise Loaded

    monkeypatch.setitem(sys.modules, "xllamacpp", types.SimpleNamespace(CommonParams=params))
    monkeypatch.setattr(xl, "_servers", {})
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with pytest.raises(Loaded):
        xl._server(Path("m.gguf"), 64, 1)
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    with pytest.raises(Loaded):
        xl._server(Path("m.gguf"), 64, 1)
    assert seen == ["PASSIVE", "ACTIVE"]


@pytest.mark.model
async def test_top_entries_give_the_whole_vocabulary_numbers_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real SmolLM2: after the first call, judge prompts are answered from the top entries,
    and every option log probability equals, to the last bit, the one summed from the server's
    whole-vocabulary list for the same prompt."""
    monkeypatch.setattr(xl, "_spelling_counts", {})
    b = XLlamaCppBackend()
    prompts = [
        [
            ChatMessage(
                role="user",
                content=f"Which is larger, {x} or {y}?\nA) {x}\nB) {y}\n\n"
                "Answer with the letter of the correct option only (A or B).",
            )
        ]
        for x, y in ((7, 12), (40, 4), (15, 51), (3, 9))
    ]
    for p in prompts:
        got = await b.option_logprobs(p, ["A", "B"])
        full = b._call(xl._logprob_body(p, ALL_TOKENS))
        entries = full["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        assert len(entries) == 49152
        assert got is not None and got[0] == option_masses(entries, ["A", "B"])
        # and against a plain sum over the whole list, without seerbench's helper
        for o in ("A", "B"):
            mass = sum(math.exp(e["logprob"]) for e in entries if e["token"] in (o, " " + o))
            assert got[0][o] == pytest.approx(math.log(mass), abs=1e-9)
    assert b.whole_vocabulary_calls == 1  # only the first prompt's call needed the whole list
