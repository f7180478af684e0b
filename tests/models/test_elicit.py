"""Probability elicitation: renormalised logprobs, verbalised probabilities, letters, vote shares,
and the fallback chain ending in a recorded parse failure (never a made-up number)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from seerbench.errors import ConfigError
from seerbench.models import (
    ChatMessage,
    ElicitConfig,
    GenerateConfig,
    Model,
    PriceTable,
    Sample,
    ScriptedBackend,
    TokenLogprob,
    TopLogprob,
    UsageTracker,
    elicit,
    parse_letter,
    parse_verbalized,
    renormalise,
)
from seerbench.models._elicit import option_logprobs_from_top

AB = ["A", "B"]


def _model(responder: object, cache: bool = False) -> tuple[Model, ScriptedBackend]:
    backend = ScriptedBackend(responder)  # type: ignore[arg-type]
    return Model("scripted:test", backend, cache=cache, usage=UsageTracker(PriceTable())), backend


# -- renormalisation -------------------------------------------------------------------------------


def test_renormalise_two_options_by_hand() -> None:
    p = renormalise({"A": -1.0, "B": -2.0})
    assert p["A"] == pytest.approx(1 / (1 + math.exp(-1)), abs=1e-12)
    assert p["A"] == pytest.approx(0.7310585786, abs=1e-9)
    assert p["B"] == pytest.approx(0.2689414214, abs=1e-9)


def test_renormalise_three_options_and_extreme_values() -> None:
    p = renormalise({"A": math.log(0.2), "B": math.log(0.1), "C": math.log(0.1)})
    assert p == pytest.approx({"A": 0.5, "B": 0.25, "C": 0.25})
    # very negative logprobs must not underflow to 0/0
    q = renormalise({"A": -1000.0, "B": -1001.0})
    assert q["A"] == pytest.approx(0.7310585786) and sum(q.values()) == pytest.approx(1.0)
    assert renormalise({"A": -3.0, "B": -3.0}) == {"A": 0.5, "B": 0.5}


def _sample(first: str, top: dict[str, float]) -> Sample:
    return Sample(
        text=first,
        logprobs=[
            TokenLogprob(
                token=first,
                logprob=top.get(first, -0.1),
                top=tuple(TopLogprob(token=t, logprob=v) for t, v in top.items()),
            )
        ],
    )


def test_option_logprobs_from_top_sums_spelling_variants() -> None:
    lp = option_logprobs_from_top(
        _sample("A", {"A": math.log(0.3), " A": math.log(0.1), "B": math.log(0.2), "x": -0.5}), AB
    )
    assert isinstance(lp, dict)
    assert lp["A"] == pytest.approx(math.log(0.4))  # "A" and " A" together
    assert lp["B"] == pytest.approx(math.log(0.2))
    assert renormalise(lp) == pytest.approx({"A": 2 / 3, "B": 1 / 3})


def test_option_logprobs_from_top_failures() -> None:
    missing = option_logprobs_from_top(_sample("A", {"A": -0.1, "C": -3.0}), AB)
    assert isinstance(missing, str) and "B" in missing
    none = option_logprobs_from_top(Sample(text="A"), AB)
    assert isinstance(none, str) and "no logprobs" in none


# -- verbalised probabilities ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "p_a"),
    [
        ("70%", 0.7),
        ("0.7", 0.7),
        ("probability: 7/10", 0.7),
        ("I'd put it at 70 %.", 0.7),
        ("Probability that A is correct: .35", 0.35),
        ("A: 60%, B: 40%", 0.6),
        ("B: 40%\nA: 60%", 0.6),
        ("A = 0.2, B = 0.8", 0.2),
        ("A: 30%, B: 30%", 0.5),  # labelled values are normalised to sum 1
        ("B: 0.3", 0.7),  # a single label names its own option
        ("A: 0.9", 0.9),
        ("0", 0.0),
        ("100%", 1.0),
        ("3/4", 0.75),
    ],
)
def test_parse_verbalized_messy_strings(text: str, p_a: float) -> None:
    p = parse_verbalized(text, AB)
    assert isinstance(p, dict), p
    assert p["A"] == pytest.approx(p_a) and p["B"] == pytest.approx(1 - p_a)


@pytest.mark.parametrize(
    "text",
    [
        "garbage",
        "",
        "I am not sure.",
        "150%",
        "A: 150%, B: 0%",
        "1.5",
        "-0.2",
        "0.6 or maybe 0.8",
        "7/0",
        "A: 0%, B: 0%",
    ],
)
def test_parse_verbalized_failures_are_errors_not_numbers(text: str) -> None:
    assert isinstance(parse_verbalized(text, AB), str)


def test_parse_verbalized_three_options() -> None:
    assert parse_verbalized("A: 50%, B: 30%, C: 20%", ["A", "B", "C"]) == pytest.approx(
        {"A": 0.5, "B": 0.3, "C": 0.2}
    )
    # with more than two options an unlabelled number is meaningless
    assert isinstance(parse_verbalized("70%", ["A", "B", "C"]), str)
    assert isinstance(parse_verbalized("A: 50%, B: 50%", ["A", "B", "C"]), str)


# -- letters --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("B", "B"),
        (" b", "B"),
        ("(A)", "A"),
        ("A) 7", "A"),
        ("Answer: B", "B"),
        ("answer is A.", "A"),
        ("**B**", "B"),
        ("C", None),
        ("Apple", None),
        ("", None),
        ("I don't know", None),
        ("12", None),
    ],
)
def test_parse_letter(text: str, letter: str | None) -> None:
    assert parse_letter(text, AB) == letter


# -- the fallback chain -----------------------------------------------------------------------------


async def test_scripted_logprobs_are_used_first() -> None:
    def with_logprobs(msgs: Sequence[ChatMessage], cfg: GenerateConfig, seed: int | None) -> Sample | str:
        if cfg.logprobs:
            return _sample("A", {"A": -1.0, "B": -2.0})
        return "0.1"

    m, _ = _model(with_logprobs)
    v = await elicit(m, "Which? A) x B) y", AB)
    assert v.ok and v.method == "logprobs"
    assert v.prob("A") == pytest.approx(0.7310585786, abs=1e-9)
    assert v.metadata["source"] == "top-20"


async def test_no_logprobs_falls_back_to_verbalized() -> None:
    seen: list[str] = []

    def verbal(msgs: Sequence[ChatMessage], cfg: GenerateConfig, seed: int | None) -> str:
        seen.append(msgs[-1].content)
        return "I'd say 0.8"

    m, backend = _model(verbal)
    v = await elicit(m, "Which is larger? A) 12 B) 7", AB)
    assert v.ok and v.method == "verbalized"
    assert v.probabilities == pytest.approx({"A": 0.8, "B": 0.2})
    assert v.raw == "I'd say 0.8"
    assert [a["method"] for a in v.metadata["attempts"]] == ["logprobs", "verbalized"]
    assert "no logprobs" in v.metadata["attempts"][0]["error"]
    assert backend.calls == 2  # the logprob attempt, then the verbalised one: vote never ran
    assert "Which is larger? A) 12 B) 7" in seen[-1] and "probability" in seen[-1]


async def test_unparseable_everywhere_is_a_recorded_parse_failure() -> None:
    m, backend = _model(lambda msgs, cfg, seed: "I refuse to answer that.")
    v = await elicit(m, "Which? A) x B) y", AB, ElicitConfig(vote_samples=3))
    assert not v.ok and v.parse_status == "failed"
    assert v.probabilities is None
    assert "I refuse to answer that." in v.raw
    assert all(m_ in (v.error or "") for m_ in ("logprobs:", "verbalized:", "vote:"))
    assert [a["method"] for a in v.metadata["attempts"]] == ["logprobs", "verbalized", "vote"]
    assert backend.calls == 1 + 1 + 3
    with pytest.raises(ValueError, match="no probabilities"):
        v.prob("A")


async def test_vote_shares() -> None:
    cfg = GenerateConfig(seed=0)
    answers = {cfg.sample_seed(i): a for i, a in enumerate(["A", "A", "B", "Answer: A", "hmm"])}

    def voter(msgs: Sequence[ChatMessage], c: GenerateConfig, seed: int | None) -> str:
        assert c.temperature == 1.0 and seed is not None
        return answers[seed]

    m, _ = _model(voter)
    v = await elicit(m, "Which? A) x B) y", AB, ElicitConfig(order=("vote",), vote_samples=5))
    assert v.ok and v.method == "vote" and v.n_samples == 5
    assert v.probabilities == {"A": 0.75, "B": 0.25}  # 3 of the 4 valid votes; "hmm" is not counted
    assert v.metadata["votes"] == ["A", "A", "B", "A", None]


async def test_order_is_configurable() -> None:
    def both(msgs: Sequence[ChatMessage], cfg: GenerateConfig, seed: int | None) -> str:
        return "B" if cfg.max_tokens <= 4 else "A: 10%, B: 90%"

    m, _ = _model(both)
    v1 = await elicit(m, "Which? A) x B) y", AB, ElicitConfig(order=("vote", "verbalized"), vote_samples=2))
    assert v1.method == "vote" and v1.probabilities == {"A": 0.0, "B": 1.0}
    v2 = await elicit(m, "Which? A) x B) y", AB, ElicitConfig(order=("verbalized", "vote")))
    assert v2.method == "verbalized" and v2.probabilities == pytest.approx({"A": 0.1, "B": 0.9})


async def test_elicitation_is_cached() -> None:
    m, backend = _model(lambda msgs, cfg, seed: "0.6", cache=True)
    v1 = await elicit(m, "Which? A) x B) y", AB)
    calls = backend.calls
    v2 = await elicit(m, "Which? A) x B) y", AB)
    assert backend.calls == calls
    assert (
        v1.probabilities == v2.probabilities
        and v2.metadata["cached"] is True
        and v1.metadata["cached"] is False
    )


def test_invalid_config() -> None:
    with pytest.raises(ConfigError):
        ElicitConfig(order=("telepathy",))  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ElicitConfig(order=())
    with pytest.raises(ConfigError):
        ElicitConfig(vote_samples=0)


async def test_options_must_be_distinct_and_at_least_two() -> None:
    m, _ = _model("echo")
    with pytest.raises(ConfigError):
        await elicit(m, "q", ["A"])
    with pytest.raises(ConfigError):
        await elicit(m, "q", ["A", "A"])
