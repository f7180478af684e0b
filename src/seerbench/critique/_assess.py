"""Model-side measures of critiques (seed 002, sections 3.3.1 and 4.2).

- **Intended flaw found** (misleading answers): for each critique, ``P(covers)`` elicited from the
  validation model ("does this critique point out the intended flaw?"); the critique covers it when
  ``P(covers) > 1/2``, and the answer's intended flaw is found when one of its critiques does.
- **Critique-conditional refinement** vs **direct refinement** (answers of questions with ground
  truth): the refinement model rewrites the answer once given its most helpful critique and once
  without one; each rewrite is scored ``s = 1`` when it names the true option and no wrong one,
  else ``s = 0``; the answer's win value is ``w = 1`` (conditional right, direct not), ``0``
  (the reverse) or ``1/2`` (a tie).

Rates over answers come with cluster-bootstrap intervals clustered by question (answers of one
question share its difficulty), in the Wilson form of
:func:`seerbench.complementarity.cluster_mean_interval`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from seerbench.critique._answers import answer_correct
from seerbench.errors import DataError
from seerbench.models import ElicitConfig, Model, elicit
from seerbench.records import Critique, CritiquedAnswer, Refinement
from seerbench.stats import CLUSTER_N_BOOT as DEFAULT_N_BOOT
from seerbench.stats import cluster_mean_interval, codes
from seerbench.types import Question

if TYPE_CHECKING:
    from seerbench.critique._config import CritiqueConfig

__all__ = ["Refinement", "critique_summary", "rate_interval", "refine", "validate_intended", "win_value"]


def win_value(conditional_correct: bool, direct_correct: bool) -> float:
    return 0.5 + 0.5 * (int(conditional_correct) - int(direct_correct))


def _material(ans: CritiquedAnswer) -> str:
    passage = f"Passage:\n{ans.passage.strip()}\n\n" if ans.passage else ""
    return f"{passage}Question: {ans.question.strip()}\n\nAnswer: {ans.answer.strip()}"


def refine_prompt(ans: CritiquedAnswer, critique: str | None) -> str:
    crit = f"\n\nCritique: {critique.strip()}" if critique is not None else ""
    how = "taking the critique into account" if critique is not None else "fixing anything wrong or missing"
    return (
        f"{_material(ans)}{crit}\n\nRevise the answer, {how}. Reply with the revised answer only, "
        "ending with 'The answer is <answer>.'"
    )


async def refine(
    model: Model, ans: CritiquedAnswer, question: Question, cfg: CritiqueConfig
) -> Refinement | None:
    """Both rewrites of ``ans`` (None when it has no critique to condition on)."""
    if not ans.critiques:
        return None
    top = ans.critiques[0]
    cond = await model.generate(
        refine_prompt(ans, top.text), temperature=0.0, max_tokens=cfg.max_tokens, seed=cfg.seed
    )
    direct = await model.generate(
        refine_prompt(ans, None), temperature=0.0, max_tokens=cfg.max_tokens, seed=cfg.seed
    )
    c_ok = answer_correct(question, cond.text) is True
    d_ok = answer_correct(question, direct.text) is True
    return Refinement(
        critique_id=top.id,
        conditional=cond.text.strip(),
        direct=direct.text.strip(),
        conditional_correct=c_ok,
        direct_correct=d_ok,
        win=win_value(c_ok, d_ok),
    )


def covers_prompt(ans: CritiquedAnswer, critique: str) -> str:
    return (
        f"{_material(ans)}\n\nThe answer has this flaw: {ans.intended_flaw}\n"
        f"The intended critique: {ans.intended_critique}\n\nCritique: {critique}\n\n"
        "Does this critique point out the intended flaw?\n"
        "A) Yes, it covers the intended flaw\nB) No, it does not"
    )


async def validate_intended(
    model: Model, ans: CritiquedAnswer, critiques: Sequence[Critique], cfg: ElicitConfig
) -> list[float]:
    """P(covers the intended flaw) for each critique of a misleading answer."""
    out = []
    for c in critiques:
        v = await elicit(model, covers_prompt(ans, c.text), ["A", "B"], cfg)
        if not v.ok or v.probabilities is None:
            raise DataError(
                f"answer {ans.answer_id!r}: no probability that critique {c.id} covers the flaw ({v.error})"
            )
        out.append(float(v.prob("A")))
    return out


def rate_interval(values: Sequence[float], clusters: Sequence[str], *, seed: int = 0) -> dict[str, Any]:
    """Mean of [0, 1] values with a cluster-bootstrap interval (clusters: question ids)."""
    if not values:
        return {"n": 0, "estimate": None, "ci_low": None, "ci_high": None}
    items, _ = codes(list(clusters))
    raters = np.arange(len(values))  # each answer its own unit: only the question clusters
    iv = cluster_mean_interval(
        np.asarray(values, dtype=float), items, raters, n_boot=DEFAULT_N_BOOT, seed=seed
    )
    clean = {
        k: (None if v is None or math.isnan(v) else round(float(v), 6))
        for k, v in (("estimate", iv.estimate), ("ci_low", iv.ci_low), ("ci_high", iv.ci_high))
    }
    return {"n": len(values), **clean}


def critique_summary(answers: Sequence[CritiquedAnswer], *, seed: int = 0) -> dict[str, Any]:
    """Per answer kind: answers, critiques per answer, share with a quote verified; over misleading
    answers the intended-flaw found rate; over refined answers the refinement win rate and the
    accuracy of each rewrite; rates with intervals clustered by question."""
    kinds: dict[str, Any] = {}
    for kind in ("model", "reference", "misleading"):
        sel = [a for a in answers if a.answer_kind == kind]
        if sel:
            n_c = [len(a.critiques) for a in sel]
            kinds[kind] = {"answers": len(sel), "critiques_per_answer": sum(n_c) / len(sel)}
    mis = [
        a
        for a in answers
        if a.answer_kind == "misleading" and all(c.covers_intended is not None for c in a.critiques)
    ]
    found = [float(any((c.covers_intended or 0) > 0.5 for c in a.critiques)) for a in mis]
    top1 = [float(bool(a.critiques) and (a.critiques[0].covers_intended or 0) > 0.5) for a in mis]
    refined = [a for a in answers if a.refinement is not None]
    qids = [a.question_id for a in refined]
    out: dict[str, Any] = {
        "kinds": kinds,
        "intended_flaw_found": rate_interval(found, [a.question_id for a in mis], seed=seed),
        "intended_flaw_found_top1": rate_interval(top1, [a.question_id for a in mis], seed=seed),
        "refinement_win_rate": rate_interval(
            [a.refinement.win for a in refined if a.refinement], qids, seed=seed
        ),
        "refined_conditional_accuracy": rate_interval(
            [float(a.refinement.conditional_correct) for a in refined if a.refinement], qids, seed=seed
        ),
        "refined_direct_accuracy": rate_interval(
            [float(a.refinement.direct_correct) for a in refined if a.refinement], qids, seed=seed
        ),
    }
    return out
