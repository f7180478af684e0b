"""Simulated AI raters and simulated human raters, for tests and for planning a study before
paying raters.

A simulated human rater r has a skill ``s_r ~ Normal(skill, skill_sd)``; an item i has a
difficulty ``d_i ~ Normal(0, difficulty_sd)`` (plus ``wrong_item_difficulty`` on items the AI got
wrong: the seed found those harder for humans too). Unassisted, the rater is right with
probability ``sigmoid(s_r - d_i)``. In a condition with follow tendency ``f`` the rater, with
probability ``f``, adopts the rating the assistant shows (the AI's rating) and otherwise rates as
unassisted. Hence, with ``p = E[sigmoid(s - d)]`` on the slice:

- over-reliance (assisted minus unassisted accuracy where the AI is wrong) is ``-f * p_wrong``;
- under-reliance (the same where the AI is right) is ``f * (1 - p_right)``.

Judgments are written as the study app's export rows (:data:`seerbench.study.EXPORT_FIELDS`),
one per judgment, so everything downstream reads them as it reads a real study.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import numpy as np

from seerbench.errors import ConfigError
from seerbench.records import ACCURATE, INACCURATE, AIRating, binarize

_T0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def simulate_ai_ratings(
    n_items: int,
    *,
    seed: int = 0,
    share_accurate: float = 0.5,
    confidence_low: float = 0.5,
    accuracy_at: Sequence[float] | None = None,
    n_samples: int = 50,
) -> list[AIRating]:
    """AI ratings whose confidence ``c ~ Uniform(confidence_low, 1)`` (rounded to a share of
    ``n_samples``) and whose probability of being right is ``c`` (calibrated), or
    ``accuracy_at[0] + (accuracy_at[1] - accuracy_at[0]) * (c - confidence_low) / (1 - confidence_low)``
    (linear in c, e.g. ``(0.5, 0.7)`` for an overconfident rater)."""
    if n_items < 1:
        raise ConfigError("n_items must be at least 1")
    rng = np.random.default_rng(seed)
    truth = np.where(rng.random(n_items) < share_accurate, ACCURATE, INACCURATE)
    c = np.round(rng.uniform(confidence_low, 1.0, n_items) * n_samples) / n_samples
    if accuracy_at is None:
        p = c
    else:
        lo, hi = accuracy_at
        p = lo + (hi - lo) * (c - confidence_low) / (1.0 - confidence_low)
    right = rng.random(n_items) < p
    out = []
    for i in range(n_items):
        t = str(truth[i])
        rating = t if right[i] else (INACCURATE if t == ACCURATE else ACCURATE)
        agree = round(float(c[i]) * n_samples)
        out.append(
            AIRating(
                item_id=f"sim-{i:06d}",
                label=t,
                rating=rating,
                confidence=float(c[i]),
                sentence=f"Simulated sentence {i}.",
                n_samples=n_samples,
                n_verified=n_samples,
                votes={rating: agree, ("inaccurate" if rating == ACCURATE else ACCURATE): n_samples - agree},
            )
        )
    return out


def simulate_judgments(
    ai: Sequence[AIRating],
    conditions: Mapping[str, float],
    *,
    n_raters: int = 60,
    ratings_per_item: int = 3,
    skill: float = 1.0,
    skill_sd: float = 0.5,
    difficulty_sd: float = 1.0,
    wrong_item_difficulty: float = 0.0,
    seed: int = 0,
    study: str = "simulated",
) -> list[dict[str, object]]:
    """Export rows of simulated raters judging every AI-rated item ``ratings_per_item`` times in
    each condition (``conditions``: name -> follow tendency f, 0 for the unassisted condition).

    As in the study app, a rater never sees the same item twice, in any condition. Each judgment
    also carries a 1-4 confidence: the rater's chance of being right on that item, ``q``, mapped
    by ``1 + round(6 (q - 1/2))`` clipped to 1..4.
    """
    names = list(conditions)
    for name, f in conditions.items():
        if not 0.0 <= f <= 1.0:
            raise ConfigError(f"follow tendency of condition {name!r} must lie in [0, 1], got {f}")
    need = ratings_per_item * len(names)
    if n_raters < need:
        raise ConfigError(
            f"{ratings_per_item} ratings per item in {len(names)} "
            f"conditions need at least {need} raters, got {n_raters}"
        )
    rng = np.random.default_rng(seed)
    n = len(ai)
    truth = np.array([binarize(r.label) for r in ai])
    ai_bin = np.array([binarize(r.rating) for r in ai], dtype=object)
    ai_right = ai_bin == truth
    skills = rng.normal(skill, skill_sd, n_raters)
    diff = rng.normal(0.0, difficulty_sd, n) + np.where(ai_right, 0.0, wrong_item_difficulty)
    # distinct raters per item across all conditions (the app's "never the same question twice")
    picks = np.argsort(rng.random((n, n_raters)), axis=1)[:, :need].reshape(n, len(names), ratings_per_item)
    rows: list[dict[str, object]] = []
    seq = np.zeros(n_raters, dtype=int)
    for ci, name in enumerate(names):
        f = float(conditions[name])
        rr = picks[:, ci, :]  # (items, k)
        q = _sigmoid(skills[rr] - diff[:, None])
        right = rng.random(q.shape) < q
        follow = (rng.random(q.shape) < f) & np.array([b is not None for b in ai_bin])[:, None]
        conf = np.clip(1 + np.round(6 * (q - 0.5)), 1, 4).astype(int)
        for i in range(n):
            t = str(truth[i])
            other = INACCURATE if t == ACCURATE else ACCURATE
            for j in range(ratings_per_item):
                r = int(rr[i, j])
                rating = str(ai_bin[i]) if follow[i, j] else (t if right[i, j] else other)
                seq[r] += 1
                at = _T0 + 60.0 * len(rows)
                rows.append(
                    {
                        "judgment_id": f"{study}-{len(rows):07d}",
                        "study": study,
                        "task": "factuality",
                        "item": ai[i].item_id,
                        "question_id": ai[i].item_id,
                        "answer_case": None,
                        "condition": name,
                        "is_catch": False,
                        "catch_kind": None,
                        "rater_id": f"rater-{r:04d}",
                        "rater_external_id": f"sim-{r:04d}",
                        "rater_source": "simulated",
                        "prolific_study_id": None,
                        "prolific_session_id": None,
                        "seq": int(seq[r]),
                        "options": [ACCURATE, INACCURATE],
                        "true_answer": t,
                        "expert_option": None,
                        "assigned_at": _iso(at),
                        "started_at": _iso(at),
                        "timer_started_at": None,
                        "submitted_at": _iso(at + 45.0),
                        "seconds": 45.0,
                        "timed_out": False,
                        "auto_submitted": False,
                        "answer": rating,
                        "probability": None,
                        "confidence": int(conf[i, j]),
                        "helpfulness": None,
                        "rating": rating,
                        "correct": 1.0 if rating == t else 0.0,
                        "ai_correct": bool(ai_right[i]),
                        "comment": None,
                    }
                )
    return rows


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).isoformat(timespec="milliseconds")


def expected_unassisted_accuracy(
    skill: float, skill_sd: float, difficulty_sd: float, shift: float = 0.0, *, n: int = 64
) -> float:
    """``E[sigmoid(s - d)]`` for ``s ~ N(skill, skill_sd)``, ``d ~ N(shift, difficulty_sd)``: the
    population accuracy of an unassisted simulated rater (Gauss-Hermite quadrature on the
    difference, itself normal with variance ``skill_sd^2 + difficulty_sd^2``)."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    sd = float(np.hypot(skill_sd, difficulty_sd))
    return float((w * _sigmoid(skill - shift + sd * x)).sum() / w.sum())
