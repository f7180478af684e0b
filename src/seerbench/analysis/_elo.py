"""Elo / Bradley-Terry ratings of debaters from a cross-play tournament's judge verdicts.

Following Khan et al. 2024 (arXiv:2402.06782), each debater gets two ratings, one for when it
argues for the correct answer and one for when it argues for the incorrect answer (the correct side
has an advantage of its own), and an aggregate rating from a separate fit with one rating per
debater whichever side it argued. A match is one debate of debater ``i`` (correct side) against
debater ``j`` (incorrect side) on one question; its outcome is the judge's probability of the
correct answer ``p`` (a soft win for ``i``; a 0/1 verdict works too). Both fits are Bradley-Terry on
the logistic scale::

    side ratings:       P(correct side wins) = sigmoid(c_i - u_j)
    aggregate ratings:  P(correct side wins) = sigmoid(a_i - a_j)

with ``c`` the correct-side, ``u`` the incorrect-side and ``a`` the aggregate ratings (natural-log
units), each fitted by maximum likelihood with the soft outcome (``p log s + (1 - p) log(1 - s)``)
by the one fitter :func:`fit_logits` with its own design (:func:`side_design`,
:func:`aggregate_design`). The seed's quantity of interest is ``c_i - u_i`` (correct minus
incorrect), which Khan et al. report rising with the aggregate rating.

seerbench's choices, where the authors' released code (ucl-dark/llm_debate at 5c5ada04,
``core/scoring/ratings.py``; docs/tournaments.md) differs:

- ratings are fitted by (penalised) maximum likelihood over the single debates with the judge's
  probability as a soft outcome; theirs by least squares between predicted and observed win rates
  (share of 0/1 verdicts) per pairing, every pairing weighted alike whatever its number of
  debates (on the exact win rates of tests/test_elo.py's simulation, a balanced round robin, the
  aggregates agree within 0.02 Elo: theirs 52.70 / -5.74 / -46.96, seerbench's 52.69 / -5.74 /
  -46.95);
- a small ridge penalty (:data:`RIDGE`, a N(0, 1/RIDGE) prior on each logit rating) keeps the fit
  finite when a debater always wins; it also fixes each fit's one free constant (only differences
  are identified), so the mean side rating is 0 and so is the mean aggregate rating;
- ratings are reported in Elo points (``400 / ln 10`` per logit unit), centred on 0 rather than
  their starting 1500;
- intervals (theirs report none for Elo) are bootstraps clustered by question: all debates on a
  question are resampled together (they share its difficulty), with both fits redone in every
  replicate on the same resampled questions (so the slope of correct minus incorrect on aggregate
  has paired replicates); the percentile interval is widened to the t interval on
  (questions - 1) df with the replicates' SD (:func:`seerbench.stats.replicate_interval`): at 40
  questions the percentile interval alone covered 0.88 to 0.93, widened 0.95 to 0.96
  (tests/test_elo.py).

All functions are pure; :func:`fit_elo` takes :class:`Match` records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seerbench.stats import ClusterBootstrap, Interval, replicate_interval

#: Elo points per logit unit: a 400-point gap is 10:1 odds.
ELO_PER_LOGIT = 400.0 / math.log(10.0)
#: Ridge penalty on the logit ratings (a weak N(0, 1/RIDGE) prior): finite fits under separation.
RIDGE = 1e-3
DEFAULT_N_BOOT = 1000
_MAX_NEWTON = 100
_TOL = 1e-10
_MAX_STEP = 2.0  # logits per Newton step: no overshoot far into a flat tail


@dataclass(frozen=True)
class Match:
    """One debate of the tournament: ``correct`` argued for the correct answer against
    ``incorrect``, and the judge gave the correct answer probability ``p_correct`` (averaged over
    both option orders when the run had them)."""

    question_id: str
    correct: str
    incorrect: str
    p_correct: float


@dataclass(frozen=True)
class DebaterRating:
    """One debater's ratings in Elo points, each with its bootstrap interval."""

    debater: str
    aggregate: Interval
    correct: Interval
    incorrect: Interval
    difference: Interval  # correct minus incorrect
    n_matches: int

    def as_dict(self) -> dict[str, Any]:
        def iv(x: Interval) -> dict[str, Any]:
            return _interval_dict(x)

        return {
            "debater": self.debater,
            "aggregate": iv(self.aggregate),
            "correct": iv(self.correct),
            "incorrect": iv(self.incorrect),
            "difference": iv(self.difference),
            "n_matches": self.n_matches,
        }


@dataclass(frozen=True)
class EloResult:
    """The fitted tournament: per-debater ratings, the win-rate matrix, and the bootstrap
    replicates (Elo points, columns ``c_0..c_{n-1}, u_0..u_{n-1}`` of the side fit, then
    ``a_0..a_{n-1}`` of the aggregate fit, each fit refitted on the same resampled questions) for
    further contrasts."""

    debaters: list[str]
    ratings: list[DebaterRating]
    win_rate: np.ndarray  # [i, j]: mean judge probability of i's side in i-vs-j debates (NaN: none)
    n_questions: int
    n_matches: int
    confidence: float
    n_boot: int
    seed: int
    replicates: np.ndarray = field(repr=False)
    estimate: np.ndarray = field(repr=False)  # the point fit, same columns

    def rating(self, debater: str) -> DebaterRating:
        return self.ratings[self._index(debater)]

    def _index(self, debater: str) -> int:
        try:
            return self.debaters.index(debater)
        except ValueError:
            raise KeyError(f"no debater {debater!r} in this tournament; debaters: {self.debaters}") from None

    def contrast(self, a: str, b: str, which: str = "aggregate") -> Interval:
        """Rating of ``a`` minus rating of ``b`` (``which``: aggregate, correct, incorrect or
        difference), with the interval of the paired replicates (``replicate_interval``)."""
        i, j, n = self._index(a), self._index(b), len(self.debaters)

        def col(x: np.ndarray, k: int) -> np.ndarray:
            return _kind(x, k, n, which)

        return replicate_interval(
            float(col(self.estimate, i) - col(self.estimate, j)),
            col(self.replicates, i) - col(self.replicates, j),
            self.n_questions,
            self.confidence,
        )

    def trend(self) -> Interval:
        """Khan et al.'s figure in one number: the least-squares slope of correct-minus-incorrect
        rating on aggregate rating across the debaters (NaN for fewer than three), with the
        interval of its bootstrap replicates."""
        n = len(self.debaters)
        if n < 3:
            return Interval(math.nan, math.nan, math.nan)
        from seerbench.analysis._pressure import _ols

        ks = range(n)

        def slope(x: np.ndarray) -> np.ndarray:
            agg = np.stack([_kind(x, k, n, "aggregate") for k in ks], axis=-1)
            diff = np.stack([_kind(x, k, n, "difference") for k in ks], axis=-1)
            return _ols(agg, diff)[0]

        return replicate_interval(
            float(slope(self.estimate)), slope(self.replicates), self.n_questions, self.confidence
        )

    def as_dict(self) -> dict[str, Any]:
        t = self.trend()
        return {
            "debaters": self.debaters,
            "trend": _interval_dict(t),
            "ratings": [r.as_dict() for r in self.ratings],
            "win_rate": [[None if math.isnan(v) else float(v) for v in row] for row in self.win_rate],
            "n_questions": self.n_questions,
            "n_matches": self.n_matches,
            "confidence": self.confidence,
            "n_boot": self.n_boot,
            "seed": self.seed,
        }


def _interval_dict(x: Interval) -> dict[str, Any]:
    """An interval as the Elo record holds it; ``note`` only where there is no interval."""
    d: dict[str, Any] = {"estimate": x.estimate, "ci_low": x.ci_low, "ci_high": x.ci_high}
    if x.note is not None:
        d["note"] = x.note
    return d


def _kind(x: np.ndarray, k: int, n: int, which: str) -> np.ndarray:
    c, u = x[..., k], x[..., n + k]
    if which == "aggregate":
        return x[..., 2 * n + k]
    if which == "correct":
        return c
    if which == "incorrect":
        return u
    if which == "difference":
        return c - u
    raise ValueError(f"which must be aggregate, correct, incorrect or difference, got {which!r}")


def _design(
    matches: Sequence[Match], debaters: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(correct index, incorrect index, outcome, question code) per match."""
    idx = {d: k for k, d in enumerate(debaters)}
    ci = np.array([idx[m.correct] for m in matches], dtype=np.int64)
    ui = np.array([idx[m.incorrect] for m in matches], dtype=np.int64)
    y = np.array([m.p_correct for m in matches], dtype=float)
    first: dict[str, int] = {}
    q = np.array([first.setdefault(m.question_id, len(first)) for m in matches], dtype=np.int64)
    return ci, ui, y, q


def fit_logits(
    win: np.ndarray, lose: np.ndarray, y: np.ndarray, m: int, weights: np.ndarray, ridge: float = RIDGE
) -> np.ndarray:
    """Penalised soft-outcome Bradley-Terry fit by Newton's method, for a batch of match weights.

    The design says which of the ``m`` logit ratings meet in each match: match ``k`` is won (by the
    judge's probability ``y[k]``) with probability ``sigmoid(theta[win[k]] - theta[lose[k]])``. The
    side ratings are ``win = correct``, ``lose = n + incorrect`` with ``m = 2n``
    (:func:`side_design`); the aggregate ratings ``win = correct``, ``lose = incorrect`` with
    ``m = n`` (:func:`aggregate_design`). ``weights`` is (replicates x matches); returns
    (replicates x m) logit ratings."""
    w = np.atleast_2d(weights).astype(float)
    b = w.shape[0]
    # every debate of one pairing (same two ratings) has the same prediction, so the fit works on
    # per-pairing sums of weight and weighted outcome (no BLAS: the arrays are tiny)
    pairs, inv = np.unique(win * m + lose, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(inv[order]) != 0])
    wp = np.add.reduceat(w[:, order], starts, axis=1)
    yp = np.add.reduceat((w * y[None, :])[:, order], starts, axis=1)
    pi, pj = pairs // m, pairs % m
    theta = np.zeros((b, m))
    diag = np.arange(m)
    for _ in range(_MAX_NEWTON):
        mu = 1.0 / (1.0 + np.exp(-(theta[:, pi] - theta[:, pj])))
        g = np.zeros((b, m, m))
        g[:, pi, pj] = yp - wp * mu
        s = np.zeros((b, m, m))
        s[:, pi, pj] = wp * mu * (1 - mu)
        grad = g.sum(axis=2) - g.sum(axis=1) - ridge * theta
        h = -(s + s.transpose(0, 2, 1))
        h[:, diag, diag] += s.sum(axis=2) + s.sum(axis=1)
        h += np.eye(m) * ridge
        step = np.clip(np.linalg.solve(h, grad[..., None])[..., 0], -_MAX_STEP, _MAX_STEP)
        theta = theta + step
        if float(np.max(np.abs(step))) < _TOL:
            break
    return theta


def side_design(ci: np.ndarray, ui: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Two ratings per debater: the correct side's ``c_i`` (index ``i``) against the incorrect
    side's ``u_j`` (index ``n + j``)."""
    return ci, n + ui, 2 * n


def aggregate_design(ci: np.ndarray, ui: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """One rating per debater whichever side it argued (Khan et al.'s aggregate Elo)."""
    return ci, ui, n


def _fit_elo_points(
    ci: np.ndarray, ui: np.ndarray, y: np.ndarray, n: int, weights: np.ndarray, ridge: float
) -> np.ndarray:
    """Both fits in Elo points, columns ``c_0..c_{n-1}, u_0..u_{n-1}, a_0..a_{n-1}``, each centred
    on its own: the mean of the side ratings is 0 and so is the mean aggregate rating."""
    out = []
    for design in (side_design, aggregate_design):
        win, lose, m = design(ci, ui, n)
        th = fit_logits(win, lose, y, m, weights, ridge) * ELO_PER_LOGIT
        out.append(th - th.mean(axis=1, keepdims=True))
    return np.concatenate(out, axis=1)


def win_rates(matches: Sequence[Match], debaters: Sequence[str]) -> np.ndarray:
    """[i, j]: the mean judge probability of debater i's side over its debates against j (both
    sides, both orders), NaN where they never met; ``W[i, j] + W[j, i] = 1``."""
    n = len(debaters)
    idx = {d: k for k, d in enumerate(debaters)}
    s, c = np.zeros((n, n)), np.zeros((n, n))
    for mt in matches:
        i, j = idx[mt.correct], idx[mt.incorrect]
        s[i, j] += mt.p_correct
        s[j, i] += 1 - mt.p_correct
        c[i, j] += 1
        c[j, i] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.where(c > 0, c, 1), np.nan)


def check_matches(matches: Sequence[Match]) -> list[str]:
    """The debaters, in order of first appearance; refuse what a fit cannot use."""
    if not matches:
        raise ValueError("no debates to rate: a tournament needs at least one cross-play debate")
    debaters: dict[str, None] = {}
    for m in matches:
        if not 0.0 <= m.p_correct <= 1.0 or math.isnan(m.p_correct):
            raise ValueError(f"question {m.question_id!r}: judge probability {m.p_correct} is not in [0, 1]")
        if m.correct == m.incorrect:
            raise ValueError(
                f"question {m.question_id!r}: {m.correct!r} debated itself; self-play says nothing "
                "about relative strength (run cross-play: two different debaters)"
            )
        debaters.setdefault(m.correct)
        debaters.setdefault(m.incorrect)
    if len(debaters) < 2:
        raise ValueError("a tournament needs at least two debaters")
    return list(debaters)


def fit_elo(
    matches: Iterable[Match],
    *,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    ridge: float = RIDGE,
) -> EloResult:
    """Ratings of every debater in ``matches`` (see the module docstring), with bootstrap
    intervals that resample questions (seeded, ``n_boot`` replicates; percentile widened to t).
    With one question there is no interval: NaN bounds with a note."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    ms = list(matches)
    debaters = check_matches(ms)
    n = len(debaters)
    ci, ui, y, q = _design(ms, debaters)
    n_q = int(q.max()) + 1
    point = _fit_elo_points(ci, ui, y, n, np.ones((1, len(ms))), ridge)[0]
    reps: list[np.ndarray] = []
    if n_boot >= 2 and n_q >= 2:  # one question resampled is itself again: no interval from it
        for wt in ClusterBootstrap(n_q, 1, len(ms), n_boot=n_boot, seed=seed).blocks():
            if wt.mode != "items":
                break  # the question bootstrap only; the other modes come after it
            assert wt.a is not None
            reps.append(_fit_elo_points(ci, ui, y, n, wt.a[:, q], ridge))
    boot = np.concatenate(reps, axis=0) if reps else np.full((0, 3 * n), np.nan)
    counts = np.bincount(ci, minlength=n) + np.bincount(ui, minlength=n)
    ratings = []
    for k, d in enumerate(debaters):
        ivs = {
            w: replicate_interval(float(_kind(point, k, n, w)), _kind(boot, k, n, w), n_q, confidence)
            for w in ("aggregate", "correct", "incorrect", "difference")
        }
        ratings.append(DebaterRating(d, **ivs, n_matches=int(counts[k])))
    return EloResult(
        debaters,
        ratings,
        win_rates(ms, debaters),
        n_q,
        len(ms),
        confidence,
        n_boot,
        seed,
        replicates=boot,
        estimate=point,
    )


# ---- from a run folder ---------------------------------------------------------------------------


def matches_from_line(line: dict[str, Any]) -> list[Match]:
    """The debates of one cross-play results line (one per answer case the agent argued): the
    judge's probability of the true option, with the debater on each side. Self-play lines (no
    ``adversary``), excluded lines and unscored cases give none."""
    adversary, agent = line.get("adversary"), line.get("agent")
    if adversary is None or agent is None or line.get("excluded"):
        return []
    cases = line.get("answer_cases") or []
    true = [c["short"] for c in cases if c.get("value") == 1.0]
    if len(true) != 1:
        return []
    out = []
    for c in cases:
        probs = (c.get("case_probs") or {}).get("probabilities")
        if not probs or probs.get(true[0]) is None:
            continue  # a parse failure: no verdict to rate
        p = float(probs[true[0]])
        correct, incorrect = (agent, adversary) if c["short"] == true[0] else (adversary, agent)
        out.append(Match(str(line["question_id"]), str(correct), str(incorrect), p))
    return out


def elo_section(
    run_dir: Any, *, n_boot: int = DEFAULT_N_BOOT, seed: int = 0, confidence: float = 0.95
) -> dict[str, Any]:
    """``{"tournaments": [...]}``: one Elo fit per protocol folder and judge over a run's cross-play
    cells (``debaters`` in the config), each with ``protocol`` and ``judge`` and
    :meth:`EloResult.as_dict`; ``{}`` when the run has no cross-play cell."""
    from seerbench.runs import ResultsFile, RunFolder

    groups: dict[tuple[str, str], list[Match]] = {}
    for cell in RunFolder(run_dir).cells():
        for ln in ResultsFile(cell.results_path):
            if ln.get("adversary") is None:
                break  # a self-play cell: every line of it is
            key = (str(ln.get("protocol")), str(ln.get("judge")))
            groups.setdefault(key, []).extend(matches_from_line(ln))
    out = []
    for (protocol, judge), ms in groups.items():
        if len({m.correct for m in ms} | {m.incorrect for m in ms}) < 2:
            continue
        r = fit_elo(ms, confidence=confidence, n_boot=n_boot, seed=seed)
        out.append({"protocol": protocol, "judge": judge, **r.as_dict()})
    return {"tournaments": out} if out else {}


__all__ = [
    "ELO_PER_LOGIT",
    "RIDGE",
    "DebaterRating",
    "EloResult",
    "Match",
    "aggregate_design",
    "check_matches",
    "elo_section",
    "fit_elo",
    "fit_logits",
    "matches_from_line",
    "side_design",
    "win_rates",
]
