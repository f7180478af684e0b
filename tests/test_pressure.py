"""Optimization pressure (seed 003): cells that differ only in best-of-N, compared along N.

The statistics are checked on a hand-worked example and on synthetic grids with a known slope
(recovered within its CI; Monte Carlo coverage of the slope CI and of the successive-N difference
CI, with independent and with clustered questions, and near accuracy 1). The wiring is checked on a
real best-of-N run of examples/best_of_n.yaml (scripted model): every number equals the one worked
out independently from the run's exported per-question rows."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from seerbench.analysis import (
    PressureResult,
    optimization_pressure,
    paired_difference,
    pressure_from_values,
    summarize,
)
from seerbench.analysis.run import summarize_run
from seerbench.cli._pressure import pressure_tables
from seerbench.errors import ConfigError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.export import export_rows
from tests.test_cli_global import run_main

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "best_of_n.yaml"


# ---- hand-worked ---------------------------------------------------------------------------------


def test_hand_worked_example() -> None:
    """Three questions, N = 1 and 2. Means: ASD 2 -> 3, ASE 1 -> 2, so the line through
    (1, 2) and (2, 3) has slope 1 and intercept 1. Paired ASD differences 1, 0, 2: mean 1,
    sample std 1, SE 1/sqrt(3)."""
    per_n, steps, slope = pressure_from_values(
        [1, 2],
        {"asd": [[1, 2, 3], [2, 2, 5]], "ase": [[0, 1, 2], [1, 2, 3]], "accuracy": [[1, 0, 1], [1, 1, 1]]},
        n_boot=200,
        seed=3,
    )
    assert [p["asd"].mean for p in per_n] == [2.0, 3.0]
    assert [p["ase"].mean for p in per_n] == [1.0, 2.0]
    assert per_n[0]["accuracy"].mean == pytest.approx(2 / 3)
    d = steps[0]["asd"]
    assert (d.mean, d.std, d.n) == (1.0, 1.0, 3)
    assert d.se == pytest.approx(1 / math.sqrt(3))
    assert steps[0]["accuracy"].mean == pytest.approx(1 / 3)
    assert slope is not None
    assert slope.estimate == pytest.approx(1.0) and slope.intercept == pytest.approx(1.0)
    # every bootstrap replicate resamples the same questions at both N; the ASE difference is 1
    # on every question, so each replicate's slope is its mean ASD difference: within [0, 2]
    assert 0.0 <= slope.ci_low <= slope.estimate <= slope.ci_high <= 2.0


def test_four_points_least_squares() -> None:
    """Slope of ASD on ASE over N = 1, 2, 4, 8 is the least-squares line through the means:
    points (0, 1), (1, 1), (2, 3), (3, 3): slope 0.8, intercept 0.8 (worked by hand:
    x-bar 1.5, y-bar 2, Sxy = 4, Sxx = 5)."""
    ase = np.array([[0.0] * 4, [1.0] * 4, [2.0] * 4, [3.0] * 4])
    asd = np.array([[1.0, 0, 2, 1], [1, 1, 1, 1], [3, 2, 4, 3], [3, 3, 3, 3]])
    _, _, slope = pressure_from_values(
        [1, 2, 4, 8], {"asd": asd, "ase": ase, "accuracy": np.ones((4, 4))}, n_boot=100
    )
    assert slope is not None
    assert slope.estimate == pytest.approx(0.8) and slope.intercept == pytest.approx(0.8)


def test_independent_questions_reuse_summarize_and_paired_difference() -> None:
    """One question per cluster: the joint bootstrap draws the same indices as summarize, so a
    per-N summary is summarize of its values and a step is paired_difference, CI included."""
    rng = np.random.default_rng(7)
    vals = {m: rng.normal(size=(3, 30)) for m in ("asd", "ase", "accuracy")}
    per_n, steps, _ = pressure_from_values([1, 2, 4], vals, n_boot=500, seed=11)
    for j in range(3):
        got, want = per_n[j]["asd"], summarize(vals["asd"][j], n_boot=500, seed=11)
        assert (got.mean, got.ci_low, got.ci_high) == (want.mean, want.ci_low, want.ci_high)
        assert got.se == pytest.approx(want.se)  # the sandwich SE with one question per cluster
    want = paired_difference(list(vals["ase"][2]), list(vals["ase"][1]), n_boot=500, seed=11)
    got = steps[1]["ase"]
    assert (got.mean, got.std, got.ci_low, got.ci_high) == pytest.approx(
        (want.mean, want.std, want.ci_low, want.ci_high)
    )


def test_flat_ase_leaves_the_slope_undefined() -> None:
    same = [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]
    _, _, slope = pressure_from_values([1, 2], {"asd": [[1, 2, 3], [0, 1, 2]], "ase": same, "accuracy": same})
    assert slope is None


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        pressure_from_values(
            [1, 2], {"asd": [[1, math.inf], [0, 1]], "ase": [[0, 1], [1, 2]], "accuracy": [[1, 1], [1, 1]]}
        )
    with pytest.raises(ValueError, match="cluster labels"):
        pressure_from_values(
            [1, 2], {m: [[0, 1], [1, 2]] for m in ("asd", "ase", "accuracy")}, clusters=["a"]
        )


# ---- a real best-of-N run ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bon_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/best_of_n.yaml as shipped (scripted coin model), on 20 questions."""
    out = tmp_path_factory.mktemp("bon") / "runs" / "best-of-n"
    cfg = ExperimentConfig.from_yaml(EXAMPLE).with_updates(out=str(out), limit=20)
    for res in Experiment(cfg).run():
        assert res.n_errors == 0
    return out


def _independent(run: Path, protocol: str) -> dict[int, dict[str, float]]:
    """Per-N means of ASD, ASE_b1 (log) and judge accuracy from the exported rows."""
    rows = [r for r in export_rows(run).rows if r["protocol"] == protocol and not r["excluded"]]
    ns = sorted({r["best_of_n"] for r in rows})
    common = set.intersection(*({r["question_id"] for r in rows if r["best_of_n"] == n} for n in ns))
    out = {}
    for n in ns:
        sel = [r for r in rows if r["best_of_n"] == n and r["question_id"] in common]
        out[n] = {
            "asd": float(np.mean([r["asd_log"] for r in sel])),
            "ase": float(np.mean([r["ase_b1_log"] for r in sel])),
            "accuracy": float(np.mean([r["judge_accuracy"] for r in sel])),
            "n": len(sel),
        }
    return out


def test_real_run_numbers_equal_the_exported_rows(bon_run: Path) -> None:
    res = optimization_pressure(bon_run)
    assert isinstance(res, PressureResult)
    protocols = sorted(g.axes["protocol"] for g in res.groups)
    assert protocols == ["Consultancy_t1", "SimultaneousDebate_t1"]
    for g in res.groups:
        want = _independent(bon_run, g.axes["protocol"])
        assert [p.best_of_n for p in g.points] == [1, 2, 4, 8]
        assert g.n_questions == want[1]["n"] == 20
        for p in g.points:
            for m in ("asd", "ase", "accuracy"):
                assert getattr(p, m).mean == pytest.approx(want[p.best_of_n][m])
        for s in g.steps:
            assert s.asd.mean == pytest.approx(want[s.to_n]["asd"] - want[s.from_n]["asd"])
        x = [want[n]["ase"] for n in (1, 2, 4, 8)]
        y = [want[n]["asd"] for n in (1, 2, 4, 8)]
        if g.slope is not None:
            assert g.slope.estimate == pytest.approx(float(np.polyfit(x, y, 1)[0]))


def test_stats_json_has_pressure_and_cell_cis_agree(bon_run: Path) -> None:
    """The stats summary carries `pressure`; with nothing dropped and one question per cluster
    (arithmetic has no passages), a per-N CI is the cell's own stats CI."""
    summary = summarize_run(bon_run)
    pressure = summary["pressure"]
    assert pressure == json.loads(json.dumps(optimization_pressure(bon_run).to_dict()))
    cells = {c["cell"]: c for c in summary["cells"]}
    for g in pressure["groups"]:
        assert g["n_clusters"] == g["n_questions"]
        for p in g["points"]:
            assert p["dropped"] == 0
            assert p["asd"]["ci_low"] == cells[p["cell"]]["metrics"]["asd"]["log"]["ci_low"]
            assert p["ase"]["ci_high"] == cells[p["cell"]]["metrics"]["ase_b1"]["log"]["ci_high"]
            # accuracy: the same mean; its interval is the Wilson form (kept near 0 and 1)
            assert p["accuracy"]["mean"] == pytest.approx(
                cells[p["cell"]]["metrics"]["judge_accuracy"]["mean"]
            )


def test_stats_cli_table_and_json(
    bon_run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run_main(["stats", str(bon_run)], capsys, monkeypatch)
    assert code == 0
    assert "optimization pressure: Consultancy_t1" in out and "slope dASD/dASE" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    code, out, _ = run_main(
        ["stats", str(bon_run), "--json", "--beta", "0", "--score", "brier"], capsys, monkeypatch
    )
    assert code == 0
    d = json.loads(out)
    assert d["pressure"]["beta"] == 0.0 and d["pressure"]["score"] == "brier"
    again = optimization_pressure(bon_run, beta=0.0, score="brier").to_dict()
    assert d["pressure"]["groups"][0]["points"][2]["ase"]["mean"] == pytest.approx(
        again["groups"][0]["points"][2]["ase"]["mean"]
    )


def test_no_pressure_without_several_n(bon_run: Path, tmp_path: Path) -> None:
    """One N per protocol: no `pressure` key (the shape stats --json had before)."""
    one = tmp_path / "one"
    shutil.copytree(bon_run, one)
    for d in one.glob("*/*_bo*"):
        shutil.rmtree(d)
    assert "pressure" not in summarize_run(one)
    assert optimization_pressure(one).groups == []


def test_dropped_questions_are_counted(bon_run: Path, tmp_path: Path) -> None:
    """A question missing at N = 4 leaves every N of that group: counted in `dropped`."""
    run = tmp_path / "drop"
    shutil.copytree(bon_run, run)
    f = next(run.glob("Consultancy_t1/*_bo4_*")) / "results.jsonl"
    lines = f.read_text().splitlines()
    f.write_text("\n".join(lines[1:]) + "\n")
    g = next(g for g in optimization_pressure(run).groups if g.axes["protocol"] == "Consultancy_t1")
    assert g.n_questions == 19
    assert [p.dropped for p in g.points] == [1, 1, 0, 1]


def test_cluster_option(bon_run: Path) -> None:
    with pytest.raises(ConfigError, match="cluster must be"):
        optimization_pressure(bon_run, cluster="passage")
    with pytest.raises(ConfigError, match="no metadata key 'nope'"):
        optimization_pressure(bon_run, cluster="metadata:nope")
    # every arithmetic question has metadata dataset=arithmetic: all in one cluster -> nothing
    # measures the spread: NaN, not a collapsed interval
    one = optimization_pressure(bon_run, cluster="metadata:dataset").groups[0]
    assert one.n_clusters == 1
    asd = one.points[0].asd
    assert (
        math.isnan(asd.ci_low) and math.isnan(asd.ci_high) and math.isnan(asd.se) and not math.isnan(asd.mean)
    )
    assert one.slope is not None and math.isnan(one.slope.ci_low)
    console = Console(width=80, record=True)
    for table in pressure_tables(
        one_run := optimization_pressure(bon_run, cluster="metadata:dataset").to_dict()
    ):
        console.print(table)
    text = console.export_text()
    assert "[n/a, n/a]" in text and "only 1 independent" in text and one_run["groups"][0]["n_clusters"] == 1
    assert any("only 1 independent question cluster" in n for n in one.notes)


# ---- synthetic grids with a known slope: recovery and Monte Carlo coverage ----------------------

NS = [1, 2, 4, 8]
ASE_MEANS = np.array([-0.9, -0.6, -0.4, -0.3])  # mean ASE at each N: agents get more persuasive
SLOPE, INTERCEPT = -0.8, 0.2  # mean ASD_N = INTERCEPT + SLOPE * mean ASE_N


def _grid(
    rng: np.random.Generator, *, n_clusters: int, per_cluster: int, cluster_sd: float
) -> tuple[dict[str, np.ndarray], list[int]]:
    """Per-question values for NS. Question i of cluster c at step j (N = NS[j]):
    ASE = ASE_MEANS[j] + a_c + q_i + 0.2 b_c j + e, ASD = INTERCEPT + SLOPE * ASE + u_c + r_i +
    0.2 w_c j + f, with cluster effects a, b, u, w (sd ``cluster_sd``) shared by the cluster's
    questions (b and w make a cluster's own trend along N, which is what moves the slope),
    question levels q, r shared by every N, and noise e, f.
    All effects have mean 0, so mean ASD_N = INTERCEPT + SLOPE * mean ASE_N: the true slope is
    SLOPE, and the true ASD step from N_j to N_j+1 is SLOPE * (ASE_MEANS[j+1] - ASE_MEANS[j])."""
    n = n_clusters * per_cluster
    c = np.repeat(np.arange(n_clusters), per_cluster)
    a, b, u, w = (rng.normal(0, cluster_sd, n_clusters)[c] for _ in range(4))
    steps = np.arange(len(NS))[:, None]
    qa, qu = rng.normal(0, 0.5, n), rng.normal(0, 0.5, n)  # a question's own level, the same at every N
    ase = ASE_MEANS[:, None] + a + qa + 0.2 * b * steps + rng.normal(0, 0.3, (len(NS), n))
    asd = INTERCEPT + SLOPE * ase + u + qu + 0.2 * w * steps + rng.normal(0, 0.3, (len(NS), n))
    acc = (rng.random((len(NS), n)) < 0.7).astype(float)
    return {"asd": asd, "ase": ase, "accuracy": acc}, list(c)


def test_known_slope_is_recovered_within_its_ci() -> None:
    rng = np.random.default_rng(2026)
    vals, _ = _grid(rng, n_clusters=2000, per_cluster=1, cluster_sd=0.0)
    _, steps, slope = pressure_from_values(NS, vals, n_boot=1000, seed=1)
    assert slope is not None
    assert slope.ci_low <= SLOPE <= slope.ci_high
    assert abs(slope.estimate - SLOPE) < 0.15 and slope.ci_high - slope.ci_low < 0.6
    true_step = SLOPE * (ASE_MEANS[1] - ASE_MEANS[0])
    assert steps[0]["asd"].ci_low <= true_step <= steps[0]["asd"].ci_high


def _coverage(
    *, n_clusters: int, per_cluster: int, cluster_sd: float, use_clusters: bool, reps: int = 300
) -> tuple[float, float]:
    rng = np.random.default_rng(17)
    true_step = SLOPE * (ASE_MEANS[2] - ASE_MEANS[1])
    hit_slope = hit_step = 0
    for r in range(reps):
        vals, clusters = _grid(rng, n_clusters=n_clusters, per_cluster=per_cluster, cluster_sd=cluster_sd)
        _, steps, slope = pressure_from_values(
            NS, vals, clusters=clusters if use_clusters else None, n_boot=300, seed=r
        )
        assert slope is not None
        hit_slope += slope.ci_low <= SLOPE <= slope.ci_high
        hit_step += steps[1]["asd"].ci_low <= true_step <= steps[1]["asd"].ci_high
    return hit_slope / reps, hit_step / reps


@pytest.mark.slow
def test_coverage_independent_questions() -> None:
    """300 synthetic grids of 150 independent questions: the 95% CIs of the slope and of an ASD
    step cover the truth about 95% of the time (binomial sd of the rate at 300 draws: 1.3%)."""
    slope_cov, step_cov = _coverage(n_clusters=150, per_cluster=1, cluster_sd=0.0, use_clusters=False)
    assert 0.91 <= slope_cov <= 0.99, slope_cov
    assert 0.91 <= step_cov <= 0.99, step_cov


@pytest.mark.slow
def test_coverage_clustered_questions() -> None:
    """40 passages of 5 questions each with passage effects: resampling passages keeps the
    coverage; treating the 200 questions as independent does not (the CIs come out too narrow)."""
    slope_cov, step_cov = _coverage(n_clusters=40, per_cluster=5, cluster_sd=1.0, use_clusters=True)
    assert 0.90 <= slope_cov <= 0.99, slope_cov
    assert 0.90 <= step_cov <= 0.99, step_cov
    naive_slope, naive_step = _coverage(n_clusters=40, per_cluster=5, cluster_sd=1.0, use_clusters=False)
    assert naive_slope < 0.8 and naive_step < 0.89, (naive_slope, naive_step)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "p"), [(50, (0.97, 0.99)), (50, (0.98, 0.98)), (200, (0.02, 0.05)), (100, (0.5, 0.6))]
)
def test_accuracy_coverage_near_the_boundary(n: int, p: tuple[float, float]) -> None:
    """Judge accuracy near 1 (or 0), where a percentile interval collapses onto an all-correct
    sample (measured: 64% coverage at n = 50, accuracy 0.98): the Wilson-form interval of a
    per-N accuracy and the interval of a successive-N difference keep 95%. Correctness at the
    two N is correlated through a shared per-question latent (half the questions)."""
    rng = np.random.default_rng(5)
    reps, hit_acc, hit_diff = 300, 0, 0
    for r in range(reps):
        shared = rng.random(n)
        latent = np.where(rng.random((2, n)) < 0.5, shared, rng.random((2, n)))
        acc = (latent < np.array(p)[:, None]).astype(float)
        other = rng.normal(size=(2, n))
        per_n, steps, _ = pressure_from_values(
            [1, 2],
            {"asd": other, "ase": other + np.array([[0.0], [1.0]]), "accuracy": acc},
            n_boot=300,
            seed=r,
        )
        hit_acc += per_n[0]["accuracy"].ci_low <= p[0] <= per_n[0]["accuracy"].ci_high
        hit_diff += steps[0]["accuracy"].ci_low <= p[1] - p[0] <= steps[0]["accuracy"].ci_high
    assert 0.91 <= hit_acc / reps <= 1.0, hit_acc / reps
    assert 0.92 <= hit_diff / reps <= 1.0, hit_diff / reps


def test_all_correct_accuracy_keeps_a_width() -> None:
    """Every question right at both N: the percentile interval would be [1, 1]; the Wilson form
    at n = 20 is [0.839, 1] (worked: z^2 = 3.8415, centre (1 + z^2/40) / (1 + z^2/20) = 0.9194,
    half-width z sqrt(z^2/1600) / (1 + z^2/20) = 0.0806)."""
    ones = np.ones((2, 20))
    other = np.random.default_rng(0).normal(size=(2, 20))
    per_n, steps, _ = pressure_from_values([1, 2], {"asd": other, "ase": other, "accuracy": ones}, n_boot=200)
    a = per_n[0]["accuracy"]
    assert a.mean == 1.0 and a.ci_high == 1.0 and a.ci_low == pytest.approx(0.8389, abs=1e-3)
    assert steps[0]["accuracy"].ci_low < 0 < steps[0]["accuracy"].ci_high


# ---- the embedded model --------------------------------------------------------------------------


@pytest.mark.model
@pytest.mark.slow
def test_embedded_model_tiny_grid(tmp_path: Path) -> None:
    """examples/best_of_n.yaml on the embedded model (`local`), Consultancy, N = 1 and 2, two
    questions: the best-of-2 consultant really sampled 2 arguments and kept the one the judge
    rated highest for its side, and the pressure numbers equal the exported rows."""
    run = tmp_path / "local"
    cfg = ExperimentConfig.from_yaml(EXAMPLE).with_updates(
        out=str(run),
        limit=2,
        judge_models=["local"],
        agent_models=["local"],
        protocols=["Consultancy"],
        best_of_n=[1, 2],
        agent_generation={"temperature": 0.8, "max_tokens": 40, "max_words": 30},
    )
    for cell in Experiment(cfg).run():
        assert cell.n_errors == 0
    lines = [
        json.loads(x)
        for f in run.glob("Consultancy_t1/*_bo2_*/results.jsonl")
        for x in f.read_text().splitlines()
    ]
    assert len(lines) == 2
    for ln in lines:
        for case in ln["answer_cases"]:
            turn = next(t for t in case["case_probs"]["transcript"] if t["role"] == "agent")
            meta = turn["metadata"]
            assert meta["best_of_n"] == 2 and len(meta["preference_scores"]) == 2
    (g,) = optimization_pressure(run).groups
    want = _independent(run, "Consultancy_t1")
    assert [p.best_of_n for p in g.points] == [1, 2]
    for p in g.points:
        assert p.asd.mean == pytest.approx(want[p.best_of_n]["asd"])
        assert p.ase.mean == pytest.approx(want[p.best_of_n]["ase"])
    assert g.n_questions == 0 or any(
        "independent question cluster" in n for n in g.notes
    )  # 2 questions: too few


def test_run_json_and_stats_json_share_the_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --json` carries the same `pressure` as `stats --json` on the folder it wrote."""
    out = tmp_path / "bon"
    code, text, _ = run_main(
        ["run", str(EXAMPLE), "--out", str(out), "--limit", "6", "--json"], capsys, monkeypatch
    )
    assert code == 0
    ran = json.loads(text)
    code, text, _ = run_main(["stats", str(out), "--json"], capsys, monkeypatch)
    assert code == 0
    stats = json.loads(text)
    assert set(ran) - {"failed_question_runs", "usage", "wall_s"} == set(stats) and "pressure" in ran
    assert ran["pressure"] == stats["pressure"]


def test_verdicts_cap_the_accuracy_interval() -> None:
    """A question's accuracy averaging 2 verdicts (values 0, 0.5, 1) has less variance than one
    0/1 verdict: with verdicts = 2n the Wilson interval may use the smaller variance, so it is no
    wider than with the default cap of one verdict per question. Fewer verdicts than questions
    is refused."""
    rng = np.random.default_rng(4)
    acc = (rng.random((2, 2, 60)) < 0.6).mean(axis=0)  # 2 verdicts per question, independent
    other = rng.normal(size=(2, 60))
    vals = {"asd": other, "ase": other + np.array([[0.0], [1.0]]), "accuracy": acc}
    one, _, _ = pressure_from_values([1, 2], vals, n_boot=400)
    two, _, _ = pressure_from_values([1, 2], vals, n_boot=400, verdicts=[120, 120])
    w1 = one[0]["accuracy"].ci_high - one[0]["accuracy"].ci_low
    w2 = two[0]["accuracy"].ci_high - two[0]["accuracy"].ci_low
    assert w2 < w1
    with pytest.raises(ValueError, match="at least one verdict per question"):
        pressure_from_values([1, 2], vals, verdicts=[30, 120])


@pytest.mark.slow
def test_accuracy_coverage_two_verdicts_per_question() -> None:
    """Consultancy-like accuracies (the mean of 2 correlated verdicts per question) near 1, with
    verdicts = 2n: the intervals still cover about 95%."""
    rng = np.random.default_rng(3)
    n, p, reps, hit_acc, hit_diff = 50, (0.97, 0.99), 300, 0, 0
    for r in range(reps):
        q = rng.random(n)  # shared by the question's 2 verdicts and by both N, half the time
        latent = np.where(rng.random((2, 2, n)) < 0.5, q, rng.random((2, 2, n)))
        acc = (latent < np.array(p)[:, None, None]).mean(axis=1)
        other = rng.normal(size=(2, n))
        per_n, steps, _ = pressure_from_values(
            [1, 2],
            {"asd": other, "ase": other + np.array([[0.0], [1.0]]), "accuracy": acc},
            n_boot=300,
            seed=r,
            verdicts=[2 * n, 2 * n],
        )
        hit_acc += per_n[0]["accuracy"].ci_low <= p[0] <= per_n[0]["accuracy"].ci_high
        hit_diff += steps[0]["accuracy"].ci_low <= p[1] - p[0] <= steps[0]["accuracy"].ci_high
    assert 0.92 <= hit_acc / reps <= 1.0, hit_acc / reps
    assert 0.92 <= hit_diff / reps <= 1.0, hit_diff / reps


def test_one_grid_point_twice_is_refused(bon_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "dup"
    shutil.copytree(bon_run, run)
    shutil.copytree(run / "Consultancy_t1", run / "Consultancy_t1_copy")
    with pytest.raises(ConfigError, match="same protocol, agent, judge, tools and best_of_n"):
        optimization_pressure(run)


def test_questions_sharing_a_passage_are_one_cluster(tmp_path: Path) -> None:
    """12 questions on 4 passages (3 each): cluster="source" resamples 4 clusters, "none" 12."""
    from seerbench.types import AnswerCase, Question

    qs = [
        Question(
            id=f"p{i // 3}-q{i}",
            text=f"Question {i} about passage {i // 3}?",
            source_text=f"Passage number {i // 3}.",
            answer_cases=[
                AnswerCase(short="A", long=f"yes {i}", value=1.0),
                AnswerCase(short="B", long=f"no {i}", value=0.0),
            ],
        )
        for i in range(12)
    ]
    cfg = ExperimentConfig.parse(
        {
            "name": "passages",
            "dataset": "arithmetic",
            "judge_models": ["scripted:coin"],
            "agent_models": ["scripted:coin"],
            "protocols": ["Consultancy"],
            "best_of_n": [1, 2],
            "agent_generation": {"temperature": 0.8},
            "n_boot": 200,
        }
    )
    out = tmp_path / "passages"
    Experiment(cfg, questions=qs, out=out).run()
    (g,) = optimization_pressure(out).groups
    assert (g.n_questions, g.n_clusters) == (12, 4)
    assert any("only 4 independent question cluster" in n for n in g.notes)
    (flat,) = optimization_pressure(out, cluster="none").groups
    assert flat.n_clusters == 12
    assert flat.points[0].asd.mean == g.points[0].asd.mean


def test_a_protocol_without_asd_is_not_a_pressure_group(tmp_path: Path) -> None:
    """RandomConsultancy runs one answer case a question: no ASD, so no pressure group (it was
    listed with '0 questions' and 'nothing to compare', and numpy warned of an empty mean)."""
    import warnings

    cfg = ExperimentConfig.parse(
        {
            "name": "rc",
            "dataset": {"name": "arithmetic", "n": 10},
            "judge_models": ["scripted:coin"],
            "agent_models": ["scripted:coin"],
            "protocols": ["RandomConsultancy", "Consultancy"],
            "best_of_n": [1, 2],
            "n_boot": 200,
            "out": str(tmp_path / "rc"),
        }
    )
    Experiment(cfg).run()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = optimization_pressure(tmp_path / "rc")
    assert [g.axes["protocol"] for g in result.groups] == ["Consultancy_t1"]
    assert result.groups[0].n_questions == 10
    # its stats keep the shape of every cell: undefined metrics are null, not missing keys
    rc = next(c for c in summarize_run(tmp_path / "rc")["cells"] if c["protocol"] == "RandomConsultancy_t1")
    assert rc["metrics"]["asd"] == {"log": None, "logodds": None, "brier": None, "accuracy": None}
    assert list(rc["metrics"]) == [
        "asd",
        "jse_b0",
        "jse_b1",
        "jse_binf",
        "ase_b0",
        "ase_b1",
        "ase_binf",
        "judge_accuracy",
    ]
