"""The mixed-effects logistic regression recovers known fixed effects from data simulated from
that model (logit P = X b + u_item + v_rater)."""

from __future__ import annotations

import numpy as np
import pytest

from seerbench.complementarity import AIItems, HumanData, gpboost_available, mixed_effects

pytestmark = pytest.mark.skipif(not gpboost_available(), reason="needs the 'mixed' extra (gpboost)")

CONDS = ["none", "evidence", "trace"]
TRUE = {
    "(Intercept)": 0.5,
    "condition[evidence]": 0.3,
    "condition[trace]": -0.8,
    "ai_correct": 0.4,
    "condition[evidence]:ai_correct": 0.0,
    "condition[trace]:ai_correct": 1.5,
}


def _simulate(seed: int, n_items: int = 150, n_raters: int = 40, k: int = 3) -> tuple[AIItems, HumanData]:
    rng = np.random.default_rng(seed)
    u = rng.normal(0, 1.0, n_items)
    v = rng.normal(0, 0.7, n_raters)
    aic = (rng.random(n_items) < 0.6).astype(float)
    item = np.repeat(np.arange(n_items), k * len(CONDS))
    cond = np.tile(np.repeat(np.arange(len(CONDS)), k), n_items)
    rater = np.argsort(rng.random((n_items, n_raters)), axis=1)[:, : k * len(CONDS)].ravel()
    b_cond = np.array([0.0, TRUE["condition[evidence]"], TRUE["condition[trace]"]])
    b_int = np.array([0.0, TRUE["condition[evidence]:ai_correct"], TRUE["condition[trace]:ai_correct"]])
    eta = (
        TRUE["(Intercept)"]
        + b_cond[cond]
        + (TRUE["ai_correct"] + b_int[cond]) * aic[item]
        + u[item]
        + v[rater]
    )
    y = (rng.random(item.size) < 1 / (1 + np.exp(-eta))).astype(float)
    ids = [f"i{j}" for j in range(n_items)]
    ai = AIItems(
        ids,
        ["accurate"] * n_items,
        ["accurate"] * n_items,
        aic,
        np.full(n_items, 0.6),
        {x: j for j, x in enumerate(ids)},
    )
    h = HumanData(
        item,
        rater,
        cond,
        y,
        np.zeros(item.size, dtype=np.int64),
        np.full(item.size, np.nan),
        [f"r{j}" for j in range(n_raters)],
        CONDS,
        "none",
        [],
    )
    return ai, h


def test_mixed_effects_recovers_known_fixed_effects() -> None:
    est: dict[str, list[float]] = {t: [] for t in TRUE}
    covered = {t: 0 for t in TRUE}
    sims = 30
    for s in range(sims):
        ai, h = _simulate(s)
        fit = mixed_effects(ai, h, reference="none")
        assert fit.reference_condition == "none" and fit.n == h.n
        for c in fit.coefficients:
            assert c.se is not None and c.p is not None and c.z == pytest.approx(c.estimate / c.se)
            est[c.term].append(c.estimate)
            covered[c.term] += abs(c.estimate - TRUE[c.term]) <= 1.96 * c.se
    for term, truth in TRUE.items():
        assert np.mean(est[term]) == pytest.approx(truth, abs=0.12), term
        assert covered[term] / sims >= 0.8, (term, covered[term] / sims)


def test_mixed_effects_without_interaction_and_terms() -> None:
    ai, h = _simulate(0)
    fit = mixed_effects(ai, h, reference="evidence", interaction=False)
    assert [c.term for c in fit.coefficients] == [
        "(Intercept)",
        "condition[none]",
        "condition[trace]",
        "ai_correct",
    ]
    assert fit.formula == "correct ~ condition + ai_correct + (1 | item) + (1 | rater)"
    assert 0.5 < fit.random_effect_sd["item"] < 1.5
