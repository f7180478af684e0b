"""Seed 002's critique measures (sections 3.3 and 3.3.1) on a hand-made export, worked by hand;
merging a validation study's marks; and the interval of counts per answer under clustering."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seerbench.errors import ConfigError, DataError
from seerbench.study import merge_validations, read_export, study_stats, write_export
from seerbench.study._critique_results import CRITIQUE_FIELDS, _measure


def _task(
    jid: str, cond: str, item: str, rater: str, likert: int, seconds: float, critiques: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    base = dict.fromkeys(CRITIQUE_FIELDS)
    base.update(
        judgment_id=jid,
        task="critique",
        item=item,
        answer_id=item,
        answer_kind="misleading",
        has_intended_flaw=True,
        condition=cond,
        assist=cond.endswith(".assist"),
        rater_id=rater,
        likert=likert,
        seconds=seconds,
        n_critiques=len(critiques),
    )
    if not critiques:
        return [base]
    return [{**base, "critique_id": f"{jid}-{n}", "critique_n": n, **c} for n, c in enumerate(critiques)]


def _c(
    sev: str, cat: str, used: bool, edited: bool, valid: float | None, covers: float | None, novel: bool
) -> dict[str, Any]:
    return {
        "critique_text": f"{sev} {cat}",
        "severity": sev,
        "category": cat,
        "used": used,
        "edited": edited,
        "valid": valid,
        "covers_intended": covers,
        "novel": novel,
    }


A, N = "misleading.assist", "misleading.no_assist"


def _rows(validated: bool = True) -> list[dict[str, Any]]:
    v = (lambda x: x) if validated else (lambda x: None)
    return [
        # assisted: t1 used one model critique unchanged and wrote one of its own (invalid);
        # t2 used and edited one
        *_task(
            "t1",
            A,
            "m1",
            "r1",
            3,
            100.0,
            [
                _c("major", "accuracy", True, False, v(1.0), v(1.0), False),
                _c("minor", "coverage", False, False, v(0.0), v(0.0), True),
            ],
        ),
        *_task("t2", A, "m2", "r2", 4, 80.0, [_c("critical", "accuracy", True, True, v(1.0), v(0.0), False)]),
        # unassisted: t3 one novel valid critique covering the flaw; t4 none
        *_task("t3", N, "m1", "r2", 5, 60.0, [_c("minor", "coherence", False, False, v(1.0), v(1.0), True)]),
        *_task("t4", N, "m2", "r1", 6, 40.0, []),
    ]


def _mean(x: dict[str, Any]) -> float:
    return float(x["mean"])


def test_measures_match_hand_worked_numbers() -> None:
    s = study_stats(_rows(), seed=1)
    assert s["task"] == "critique" and s["validated"]
    a, n = s["conditions"][A], s["conditions"][N]
    assert (a["tasks"], a["critiques"], a["used"], n["tasks"], n["critiques"], n["used"]) == (
        2,
        3,
        2,
        2,
        1,
        0,
    )
    # section 3.3: critiques per answer (3 over 2 tasks; 1 over 2), by severity and category
    assert _mean(a["critiques_per_answer"]) == pytest.approx(1.5)
    assert _mean(n["critiques_per_answer"]) == pytest.approx(0.5)
    assert {k: _mean(v) for k, v in a["by_severity"].items()} == pytest.approx(
        {"minor": 0.5, "medium": 0.0, "major": 0.5, "critical": 0.5}
    )
    assert {k: _mean(v) for k, v in n["by_severity"].items()} == pytest.approx(
        {"minor": 0.5, "medium": 0.0, "major": 0.0, "critical": 0.0}
    )
    assert {k: _mean(v) for k, v in a["by_category"].items()} == pytest.approx(
        {"accuracy": 1.0, "coherence": 0.0, "coverage": 0.5}
    )
    assert {k: _mean(v) for k, v in n["by_category"].items()} == pytest.approx(
        {"accuracy": 0.0, "coherence": 0.5, "coverage": 0.0}
    )
    assert _mean(a["any_critique"]) == 1.0 and _mean(n["any_critique"]) == 0.5
    assert _mean(a["likert"]) == 3.5 and _mean(n["likert"]) == 5.5
    assert _mean(a["seconds"]) == 90.0 and _mean(n["seconds"]) == 50.0
    assert _mean(a["used_edited"]) == 0.5  # of t1's and t2's used critiques, t2's was edited
    assert n["used_edited"]["n"] == 0 and math.isnan(n["used_edited"]["mean"])
    # section 3.3.1: found = some critique covers the intended flaw (t1 yes, t2 no; t3 yes, t4 none)
    assert _mean(a["intended_flaw_found"]) == 0.5 and _mean(n["intended_flaw_found"]) == 0.5
    assert _mean(a["valid_share"]) == pytest.approx(2 / 3) and _mean(n["valid_share"]) == 1.0
    assert _mean(a["valid_per_answer"]) == 1.0 and _mean(n["valid_per_answer"]) == 0.5
    # novel valid: t1's own critique is invalid, the rest were used -> 0; t3's is novel and valid
    assert _mean(a["valid_novel_per_answer"]) == 0.0 and _mean(n["valid_novel_per_answer"]) == 0.5
    d = s["differences"]["misleading"]
    assert (d["assist"], d["no_assist"]) == (A, N)
    for k, want in {
        "critiques_per_answer": 1.0,
        "any_critique": 0.5,
        "likert": -2.0,
        "seconds": 40.0,
        "intended_flaw_found": 0.0,
        "valid_share": -1 / 3,
        "valid_per_answer": 0.5,
        "valid_novel_per_answer": -0.5,
    }.items():
        assert d[k]["mean"] == pytest.approx(want), k
        assert d[k]["ci_low"] <= d[k]["mean"] <= d[k]["ci_high"], k
    assert d["by_severity"]["critical"]["mean"] == pytest.approx(0.5)
    assert d["by_category"]["coverage"]["mean"] == pytest.approx(0.5)
    for c in (a, n):
        for k in ("critiques_per_answer", "any_critique", "valid_share", "valid_per_answer"):
            assert c[k]["ci_low"] <= c[k]["mean"] <= c[k]["ci_high"], k
    # counts keep a width when every task gave the same count (Poisson floor), and stay >= 0
    assert a["by_severity"]["critical"]["ci_high"] > 0.5 and a["by_severity"]["medium"]["ci_low"] == 0.0
    # no medium critique in 2 tasks: [0, -ln(0.05)/2], the exact Poisson bound for zero events
    # (exp(-2 mu) = 0.05; the rule of three, 3/2, rounds it)
    med = a["by_severity"]["medium"]
    assert med["ci_low"] == 0.0 and med["ci_high"] == pytest.approx(math.log(20) / 2)


def test_without_validations_the_3_3_1_measures_are_absent() -> None:
    s = study_stats(_rows(validated=False))
    assert not s["validated"]
    assert "valid_share" not in s["conditions"][A] and "intended_flaw_found" not in s["conditions"][N]
    assert _mean(s["conditions"][A]["critiques_per_answer"]) == pytest.approx(1.5)


def test_export_round_trips_through_csv(tmp_path: Path) -> None:
    rows = _rows()
    back = read_export(write_export(rows, tmp_path / "c.csv"))
    assert [(r["used"], r["edited"], r["severity"], r["valid"], r["likert"]) for r in back] == [
        (r["used"], r["edited"], r["severity"], r["valid"], r["likert"]) for r in rows
    ]
    assert study_stats(back, seed=1)["conditions"] == study_stats(rows, seed=1)["conditions"]


def _marks(critique_id: str, valid: bool, covers: bool | None) -> dict[str, Any]:
    return {"task": "validation", "critique_id": critique_id, "valid": valid, "covers_intended": covers}


def test_merge_validations_takes_the_share_of_validators() -> None:
    rows = _rows(validated=False)
    merged = merge_validations(
        rows,
        [
            _marks("t1-0", True, True),
            _marks("t1-0", False, True),  # a second validator disagrees on validity
            _marks("t1-1", False, False),
            _marks("t2-0", True, False),
            _marks("t3-0", True, True),
        ],
    )
    by_id = {r["critique_id"]: (r["valid"], r["covers_intended"]) for r in merged}
    assert by_id == {
        "t1-0": (0.5, 1.0),
        "t1-1": (0.0, 0.0),
        "t2-0": (1.0, 0.0),
        "t3-0": (1.0, 1.0),
        None: (None, None),
    }
    s = study_stats(merged)
    assert _mean(s["conditions"][A]["valid_share"]) == pytest.approx(1.5 / 3)
    # t1 is only fully validated when each critique has a mark: here all are
    assert s["conditions"][A]["validated_tasks"] == 2


def test_merge_refuses_marks_of_another_study() -> None:
    with pytest.raises(DataError, match="not in the critique export"):
        merge_validations(_rows(validated=False), [_marks("zz-0", True, None)])
    with pytest.raises(DataError, match="not a validation"):
        merge_validations(_rows(validated=False), [{"task": "critique", "critique_id": "t1-0"}])


def test_partially_validated_tasks_are_left_out_of_the_validity_measures() -> None:
    rows = _rows(validated=False)
    merged = merge_validations(rows, [_marks("t1-0", True, True), _marks("t3-0", True, True)])
    s = study_stats(merged)
    # t1 has one unvalidated critique, t2 none validated: only t4 (no critiques) and t3 count
    assert s["conditions"][A]["validated_tasks"] == 0 and s["conditions"][A]["valid_share"]["n"] == 0
    assert s["conditions"][N]["validated_tasks"] == 2
    assert _mean(s["conditions"][N]["valid_per_answer"]) == 0.5


def test_refusals() -> None:
    with pytest.raises(DataError, match="partial export"):
        study_stats(_rows()[1:])  # t1's first critique row missing
    with pytest.raises(ConfigError, match="validation study has no statistics"):
        study_stats([_marks("t1-0", True, None)])


@pytest.mark.slow
@pytest.mark.parametrize(("mean_count", "n_raters"), [(0.1, 8), (0.3, 8), (2.0, 8), (2.0, 30)])
def test_count_interval_covers_under_clustering(mean_count: float, n_raters: int) -> None:
    # Critiques per answer with answer and rater effects (log-normal multipliers on a Poisson
    # rate); 40 answers, each critiqued by 3 of n_raters raters. The 95% interval should cover the
    # true mean in about 95% of studies; near zero included (measured on these 150 studies: 0.98,
    # 0.987, 0.953, 0.967; the symmetric t interval it replaced: 0.965, 0.955, 0.915, 0.925 over 200;
    # with the normal quantile instead of t, 0.875 at 8 raters).
    rng = np.random.default_rng(7)
    sims, hits = 150, 0
    for s in range(sims):
        ia = rng.normal(0, 0.5, 40)
        rb = rng.normal(0, 0.3, n_raters)
        units = []
        for i in range(40):
            for r in rng.choice(n_raters, 3, replace=False):
                lam = mean_count * math.exp(ia[i] + rb[r] - 0.5**2 / 2 - 0.3**2 / 2)
                units.append((float(rng.poisson(lam)), "c", f"i{i}", f"r{r}"))
        per, _ = _measure(units, ["c"], {}, "count", seed=s)
        # the true mean over this study's answers and raters is mean_count in expectation
        hits += per["c"]["ci_low"] <= mean_count <= per["c"]["ci_high"]
    assert hits / sims >= 0.9, hits / sims


@pytest.mark.slow
def test_paired_count_difference_covers_under_clustering() -> None:
    # assist - no assist in critiques per answer: every answer critiqued in both conditions by
    # different raters (answer effect shared by the pair, rater effects), true difference 0.8.
    # Measured: 0.977 over 300 studies (conservative: the variance floored at the larger one-way
    # part runs about 17% above the true one here); 0.905 before the small-sample correction.
    rng = np.random.default_rng(11)
    sims, hits = 150, 0
    for s in range(sims):
        ia = rng.normal(0, 0.5, 40)
        rb = rng.normal(0, 0.3, 10)
        units = []
        for i in range(40):
            ra, rn = rng.choice(10, 2, replace=False)
            for cond, base, r in (("a", 1.8, ra), ("n", 1.0, rn)):
                lam = base * math.exp(ia[i] + rb[r] - 0.5**2 / 2 - 0.3**2 / 2)
                units.append((float(rng.poisson(lam)), cond, f"i{i}", f"r{r}"))
        _, diff = _measure(units, ["a", "n"], {"x": ("a", "n")}, "count", seed=s)
        hits += diff["x"]["ci_low"] <= 0.8 <= diff["x"]["ci_high"]
    assert hits / sims >= 0.9, hits / sims


def test_means_without_intervals_equal_the_bootstrapped_ones() -> None:
    from seerbench.study._critique_results import critique_stats

    full, quick = critique_stats(_rows(), seed=1), critique_stats(_rows(), seed=1, intervals=False)
    for cond, c in full["conditions"].items():
        for k in ("critiques_per_answer", "any_critique", "likert", "valid_share", "valid_novel_per_answer"):
            assert quick["conditions"][cond][k]["mean"] == pytest.approx(c[k]["mean"], nan_ok=True)
            assert "ci_low" not in quick["conditions"][cond][k]
    assert quick["differences"]["misleading"]["likert"] == {"mean": -2.0}


def _crossed_study(
    rng: np.random.Generator, mean_count: float, n_answers: int, per_answer: int, n_raters: int
) -> list[tuple[float, str, str, str]]:
    """Critiques per answer: Poisson counts with log-normal answer (sd 0.5) and rater (sd 0.3)
    multipliers of mean one, so the mean count over the population is ``mean_count``."""
    sa, sb = 0.5, 0.3
    ia, rb = rng.normal(0, sa, n_answers), rng.normal(0, sb, n_raters)
    units = []
    for i in range(n_answers):
        for r in rng.choice(n_raters, per_answer, replace=False):
            lam = mean_count * math.exp(ia[i] + rb[r] - sa**2 / 2 - sb**2 / 2)
            units.append((float(rng.poisson(lam)), "c", f"i{i}", f"r{r}"))
    return units


@pytest.mark.slow
@pytest.mark.parametrize("mean_count", [2.0, 0.2])
def test_count_interval_covers_at_nominal_with_crossed_effects(mean_count: float) -> None:
    # 40 answers, each critiqued by 3 of 12 raters, about 2 critiques per answer (and near the
    # boundary, 0.2). 400 seeded studies: coverage >= 0.93 (nominal 0.95; one binomial SE at 400
    # is 0.011). Measured on these seeds: 0.945 at 2.0 and 0.96 at 0.2; the symmetric t interval
    # with the uncorrected bootstrap variance it replaces gave 0.9225 at 2.0 (in 20 of its 31 misses the
    # interval lay below the true mean), so this test fails it.
    rng = np.random.default_rng(7)
    sims, hits = 400, 0
    for s in range(sims):
        units = _crossed_study(rng, mean_count, 40, 3, 12)
        per, _ = _measure(units, ["c"], {}, "count", seed=s)
        c = per["c"]
        # always holds its estimate, never zero width (the counts vary in every study here)
        assert c["ci_low"] <= c["mean"] <= c["ci_high"] and c["ci_high"] > c["ci_low"] >= 0.0
        hits += c["ci_low"] <= mean_count <= c["ci_high"]
    assert hits / sims >= 0.93, hits / sims


def test_count_interval_of_equal_counts_keeps_a_width() -> None:
    # every answer got exactly one critique: the bootstrap variance is 0, the interval is the
    # quasi-Poisson score interval at n_eff = n (the Poisson variance of independent counts)
    units = [(1.0, "c", f"i{i}", f"r{i % 4}") for i in range(12)]
    per, _ = _measure(units, ["c"], {}, "count", seed=0)
    c = per["c"]
    assert c["mean"] == 1.0 and c["ci_low"] < 1.0 < c["ci_high"]
    # t at 3 df (4 raters less one); the roots of (1 - mu)^2 = q^2 mu / 12
    q = 3.182446305284263
    b = 2 + q * q / 12
    roots = ((b - math.sqrt(b * b - 4)) / 2, (b + math.sqrt(b * b - 4)) / 2)
    assert (c["ci_low"], c["ci_high"]) == pytest.approx(roots)
