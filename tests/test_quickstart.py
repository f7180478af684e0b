"""The README's main job runs end to end on the embedded model (with a small --limit)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seerbench.cli import app
from seerbench.models import default_tracker

EXAMPLE = Path(__file__).parent.parent / "examples" / "quickstart.yaml"


@pytest.mark.model
@pytest.mark.slow
def test_quickstart_runs_on_the_embedded_model(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "qs"
    r = runner.invoke(app, ["run", str(EXAMPLE), "--limit", "2", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    stats = {c["cell"]: c for c in json.loads(r.output)["cells"]}
    protocols = {s["protocol"] for s in stats.values()}
    # the example runs both option orders (position-bias control): folder names end in _swap
    assert {
        "NaiveJudge_swap",
        "BlindTrust_swap",
        "Consultancy_t1_swap",
        "SimultaneousDebate_t1_swap",
    } <= protocols
    for key, s in stats.items():
        assert (out / key / "results.jsonl").read_text().count("\n") == 2
        assert s["n_questions"] == 2
    # BlindTrust: the judge adopts the argued answer, so ASD = log(1-eps) - log(1-eps) = 0.
    bt = next(s for s in stats.values() if s["protocol"] == "BlindTrust_swap")
    assert bt["metrics"]["asd"]["log"]["mean"] == 0.0
    # Real probabilities from the real model: every scored verdict sums to 1.
    for line in (out / "Consultancy_t1_swap").glob("*/results.jsonl"):
        for row in map(json.loads, line.read_text().splitlines()):
            for case in row["answer_cases"]:
                p = case["case_probs"]["probabilities"]
                if p is not None:
                    assert math.isclose(sum(p.values()), 1.0, abs_tol=1e-9)
    meta = json.loads((out / "experiment.json").read_text())
    assert meta["seerbench_version"] and meta["config"]["name"] == "quickstart"
    assert (out / "all_stats.json").exists()

    # A second run of the finished experiment makes no model call.
    before = default_tracker().totals().calls
    r2 = runner.invoke(app, ["run", str(EXAMPLE), "--limit", "2", "--out", str(out), "--json"])
    assert r2.exit_code == 0, r2.output
    assert default_tracker().totals().calls == before
    assert {c["cell"]: c for c in json.loads(r2.output)["cells"]} == stats

    r3 = runner.invoke(app, ["stats", str(out), "--baseline", "NaiveJudge_swap", "--json"])
    assert r3.exit_code == 0, r3.output
    assert len(json.loads(r3.output)["cells"]) == len(stats)
