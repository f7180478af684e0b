"""Binary view: two-option questions (true answer + one distractor) for two-answer protocols."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from typing import Literal

from seerbench.errors import ConfigError, DataError
from seerbench.types import AnswerCase, Question

DistractorRule = Literal["best_or_random", "best", "random"]
DistractorChoice = DistractorRule | Mapping[str, str] | Callable[[Question], str]


def _pick_distractor(q: Question, rule: DistractorChoice, rng: random.Random) -> tuple[AnswerCase, str]:
    false = [a for a in q.answer_cases if not a.is_true]
    if isinstance(rule, str):
        best = q.metadata.get("best_distractor")
        if rule in ("best", "best_or_random") and best is not None:
            return q.case(best), "best"
        if rule == "best":
            raise DataError(f"question {q.id!r} has no best distractor; use distractor='best_or_random'")
        if rule not in ("best_or_random", "random"):
            raise ConfigError(
                f"unknown distractor rule {rule!r}; use 'best_or_random', "
                "'best', 'random', a mapping or a function"
            )
        return rng.choice(false), "random"
    short = rule(q) if callable(rule) else rule.get(q.id)
    if short is None:
        raise ConfigError(f"no distractor given for question {q.id!r}")
    case = q.case(short)
    if case.is_true:
        raise ConfigError(f"the given distractor {short!r} of question {q.id!r} is a true option")
    return case, "given"


def binary_view(
    questions: Iterable[Question],
    *,
    seed: int,
    distractor: DistractorChoice = "best_or_random",
) -> list[Question]:
    """Two-option copies of ``questions``: the true option and one distractor, in a seeded random
    order, relabelled 'A'/'B'.

    ``distractor`` is ``'best_or_random'`` (the format's best distractor where it has one, else a
    seeded random wrong option), ``'best'`` (error if missing), ``'random'``, a mapping
    question id -> original option label, or a function of the question returning that label.
    Randomness depends only on ``(seed, question id)``, so a question gets the same view in any
    subset. Question ids are kept; ``metadata['binary_view']`` records the seed, the rule used and
    the original labels/indices in A/B order, and every option keeps ``original_short`` and
    ``original_index`` in its metadata, so results map back to the published options.
    Already-binary questions are shuffled and relabelled too (published order can be biased).
    """
    out: list[Question] = []
    for q in questions:
        if len(q.true_cases) != 1:
            raise DataError(
                f"question {q.id!r} has {len(q.true_cases)} true options; binary view needs exactly 1"
            )
        rng = random.Random(f"binary:{seed}:{q.id}")
        wrong, how = _pick_distractor(q, distractor, rng)
        pair = [q.true_case, wrong]
        rng.shuffle(pair)
        cases = []
        for label, a in zip("AB", pair, strict=True):
            meta = dict(a.metadata)
            meta["original_short"] = a.short
            meta["original_index"] = a.metadata.get("original_index", q.answer_cases.index(a))
            cases.append(a.model_copy(update={"short": label, "metadata": meta}))
        meta = dict(q.metadata)
        meta.pop("best_distractor", None)  # the view has one wrong option; labels changed
        meta["binary_view"] = {
            "seed": seed,
            "distractor": how,
            "original_shorts": [a.short for a in pair],
            "original_indices": [c.metadata["original_index"] for c in cases],
            "original_k": q.k,
        }
        out.append(q.model_copy(update={"answer_cases": cases, "metadata": meta}))
    return out
