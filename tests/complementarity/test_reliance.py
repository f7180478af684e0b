"""Reliance (seed 000, 2.4.3) on simulated raters with a known tendency f to adopt the shown AI
rating: the accuracy change against unassisted is -f * pbar_wrong where the AI is wrong and
f * (1 - pbar_right) where it is right, where pbar is the unassisted accuracy on that slice
(computed here by Monte Carlo integration); the seed's over-reliance (assisted error rate where the
AI is wrong) is 1 - (1 - f) pbar_wrong and its under-reliance (assisted error rate where the AI is
right) (1 - f)(1 - pbar_right)."""

from __future__ import annotations

import numpy as np

from seerbench.complementarity import ai_items, human_data, reliance, simulate_ai_ratings, simulate_judgments

SKILL, SKILL_SD, DIFF_SD, WRONG_SHIFT = 1.0, 0.5, 1.0, 0.5


def _pbar(shift: float) -> float:
    rng = np.random.default_rng(2024)
    x = SKILL + rng.normal(0, SKILL_SD, 2_000_000) - rng.normal(shift, DIFF_SD, 2_000_000)
    return float((1 / (1 + np.exp(-x))).mean())


def test_reliance_recovers_sign_and_size_and_no_effect_is_rarely_significant() -> None:
    f = 0.4
    true_over = -f * _pbar(WRONG_SHIFT)
    true_under = f * (1 - _pbar(0.0))
    true_over_rate = 1 - (1 - f) * _pbar(WRONG_SHIFT)
    true_under_rate = (1 - f) * (1 - _pbar(0.0))
    cover_rates = 0
    sims = 200
    cover_over = cover_under = 0
    sign_right = 0
    false_pos = 0
    est_over: list[float] = []
    for s in range(sims):
        ai = simulate_ai_ratings(150, seed=s)
        rows = simulate_judgments(
            ai,
            {"none": 0.0, "trace": f, "search": 0.0},
            n_raters=40,
            ratings_per_item=3,
            skill=SKILL,
            skill_sd=SKILL_SD,
            difficulty_sd=DIFF_SD,
            wrong_item_difficulty=WRONG_SHIFT,
            seed=10_000 + s,
        )
        a = ai_items(ai)
        rel = reliance(a, human_data(rows, a), unassisted="none", n_boot=200, seed=s)
        by = {c.condition: c for c in rel.conditions}
        o, u = by["trace"].accuracy_change_ai_wrong, by["trace"].accuracy_change_ai_right
        assert o is not None and u is not None
        ro, ru = by["trace"].over_reliance, by["trace"].under_reliance
        assert ro is not None and ru is not None
        cover_rates += ro.ci_low <= true_over_rate <= ro.ci_high  # type: ignore[operator]
        cover_rates += ru.ci_low <= true_under_rate <= ru.ci_high  # type: ignore[operator]
        cover_over += o.ci_low <= true_over <= o.ci_high  # type: ignore[operator]
        cover_under += u.ci_low <= true_under <= u.ci_high  # type: ignore[operator]
        sign_right += o.ci_high < 0  # type: ignore[operator]
        assert o.estimate is not None
        est_over.append(o.estimate)
        for e in (by["search"].accuracy_change_ai_wrong, by["search"].accuracy_change_ai_right):  # no effect
            assert e is not None
            false_pos += not (e.ci_low <= 0.0 <= e.ci_high)  # type: ignore[operator]
    assert cover_over / sims >= 0.9, cover_over / sims
    assert cover_rates / (2 * sims) >= 0.9, cover_rates / (2 * sims)
    assert cover_under / sims >= 0.9, cover_under / sims
    assert abs(np.mean(est_over) - true_over) < 0.02, (np.mean(est_over), true_over)
    assert sign_right / sims >= 0.9  # the effect (about -0.23) is found, with its sign
    assert 0.01 <= false_pos / (2 * sims) <= 0.10, false_pos / (2 * sims)


def test_reliance_table_rows_and_unassisted_first() -> None:
    ai = simulate_ai_ratings(60, seed=1)
    rows = simulate_judgments(ai, {"trace": 0.5, "none": 0.0}, n_raters=10, ratings_per_item=2, seed=2)
    a = ai_items(ai)
    rel = reliance(a, human_data(rows, a), unassisted="none", n_boot=50)
    assert [c.condition for c in rel.conditions] == ["none", "trace"]
    assert rel.conditions[0].over_reliance is None
    # judgment counts: 2 per item per condition, split by AI right / wrong
    n_wrong = int((a.correct == 0).sum())
    assert rel.conditions[1].ai_wrong.judgments == 2 * n_wrong
    assert rel.conditions[1].ai_right.judgments == 2 * (60 - n_wrong)
