"""`CellStats.add_stored` (what `seerbench stats` and the report use) takes exactly the values
`add(rescore(line))` takes, on a real run's lines: parse failures under both policies, a symmetric
judge, a judge without verdicts (BlindTrust), other eps and betas; and the fast path is the one taken
where both cases have a verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import seerbench.results as results_mod
from seerbench.results import CellStats, rescore
from seerbench.runs import RunFolder
from tests.test_export import CONS, make_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("stored") / "out")


@pytest.mark.parametrize("policy", ["exclude", "half"])
@pytest.mark.parametrize(("eps", "betas"), [(1e-6, (0.0, 1.0, math.inf)), (0.1, (0.0, 0.5, 1.0, math.inf))])
def test_add_stored_keeps_what_add_of_rescore_keeps(
    run_dir: Path, policy: str, eps: float, betas: tuple[float, ...]
) -> None:
    cells = RunFolder(run_dir).cells()
    assert len(cells) == 6  # NaiveJudge, BlindTrust, (Random)Consultancy with and without a tool
    for cell in cells:
        lines = list(cell.results())
        slow, fast = (CellStats(betas=betas, paired_score="logodds") for _ in range(2))
        for ln in lines:
            slow.add(rescore(ln, eps=eps, policy=policy, betas=betas))  # type: ignore[arg-type]
            fast.add_stored(ln, eps=eps, policy=policy)  # type: ignore[arg-type]
        a = slow.stats({}, eps=eps, policy=policy, n_boot=50)  # type: ignore[arg-type]
        b = fast.stats({}, eps=eps, policy=policy, n_boot=50)  # type: ignore[arg-type]
        assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True), cell.key
        for key in ("asd", "judge_accuracy"):
            assert slow.paired_values(key) == fast.paired_values(key)


def test_both_verdicts_scored_skip_rescore(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Consultancy's lines with two verdicts are scored without building the line; the question
    whose verdict failed to parse goes through rescore. The ASD (log) of a question is worked out
    by hand from the scripted judge: q = (0.8, 0.2) after A was argued, (0.3, 0.7) after B."""
    calls: list[str] = []
    real = results_mod.rescore

    def counting(ln: dict[str, object], **kw: object) -> dict[str, object]:
        calls.append(str(ln["question_id"]))
        return real(ln, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(results_mod, "rescore", counting)
    (cell,) = [c for c in RunFolder(run_dir).cells() if c.key == CONS]
    acc = CellStats(paired_score="log")
    true: dict[str, str] = {}
    for ln in cell.results():
        acc.add_stored(ln, eps=1e-6, policy="exclude")
        true[ln["question_id"]] = next(c["short"] for c in ln["question"]["answer_cases"] if c["value"])
    assert acc.n_lines == 5 and acc.n_kept == 4
    assert calls == ["q2"]  # the parse failure: rescore says it is excluded
    # AS_A = log 0.8 (P(A) after A was argued), AS_B = log 0.7 (P(B) after B): ASD = AS_T - AS_F
    as_ = {"A": math.log(0.8), "B": math.log(0.7)}
    expected = {q: as_[t] - as_["B" if t == "A" else "A"] for q, t in true.items() if q != "q2"}
    assert {true[q] for q in expected} == {"A", "B"}  # both signs checked
    assert acc.paired_values("asd") == pytest.approx(expected)
