"""`seerbench report --complementarity FILE --critique DIR`: the seed-000 and seed-002 sections,
fed with the real outputs of `seerbench rate` + `seerbench complementarity --json` and of
`seerbench critique`; every number shown equals the one in those outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli_global import run_main

from ._html import read_report


def _cli(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    code, out, err = run_main(args, capsys, monkeypatch)
    assert code == 0, err
    return out


@pytest.fixture
def outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path]:
    from seerbench.complementarity import read_ai_ratings, simulate_judgments
    from seerbench.study import write_export

    (tmp_path / "rater.yaml").write_text(
        json.dumps({"model": "scripted:factcheck", "samples": 10, "limit": 40, "out": "fc"})
    )
    _cli(["rate", str(tmp_path / "rater.yaml")], capsys, monkeypatch)
    rows = simulate_judgments(
        read_ai_ratings(tmp_path / "fc"), {"none": 0.0, "trace": 0.5}, n_raters=8, ratings_per_item=3, seed=2
    )
    write_export(rows, tmp_path / "judgments.csv")
    comp = tmp_path / "comp.json"
    comp.write_text(
        _cli(
            [
                "complementarity",
                "--ai",
                str(tmp_path / "fc"),
                "--humans",
                str(tmp_path / "judgments.csv"),
                "--n-boot",
                "100",
                "--no-mixed",
                "--thresholds",
                "0.5:0.9:0.2",
                "--json",
            ],
            capsys,
            monkeypatch,
        )
    )
    (tmp_path / "critique.yaml").write_text(
        json.dumps(
            {
                "model": "scripted:critic",
                "dataset": {"name": "arithmetic", "n": 3, "seed": 1},
                "kinds": ["reference", "misleading"],
                "out": "crit",
            }
        )
    )
    _cli(["critique", str(tmp_path / "critique.yaml")], capsys, monkeypatch)
    return comp, tmp_path / "crit"


def _rows(t: Any, cls: str, attr: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(a[attr], a["data-row"]): shown for _, a, shown in t.tables[cls]}


def test_sections_show_the_analyses_numbers(
    outputs: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    comp, crit = outputs
    out = tmp_path / "a.html"
    _cli(
        ["report", "--complementarity", str(comp), "--critique", str(crit), "--out", str(out)],
        capsys,
        monkeypatch,
    )
    t = read_report(out)
    rep = json.loads(comp.read_text())
    hybrid = _rows(t, "analysis-hybrid", "data-sweep")
    assert len(rep["hybrid"]) == 4  # two conditions x (individual, majority)
    for sw in rep["hybrid"]:
        key = f"{sw['condition']}/{sw['aggregate']}"
        for name in ("ai_alone", "humans_alone"):
            assert (
                hybrid[(key, name)]["estimate"] == sw[name]["estimate"]
                and hybrid[(key, name)]["ci_low"] == sw[name]["ci_low"]
            )
        for row in sw["rows"]:
            shown = hybrid[(key, f"T{row['threshold']!r}")]
            assert (shown["estimate"], shown["ci_low"], shown["ci_high"], shown["n"]) == (
                row["hybrid"]["estimate"],
                row["hybrid"]["ci_low"],
                row["hybrid"]["ci_high"],
                row["routed_items"],
            )
        assert hybrid[(key, "cross_validated")]["estimate"] == sw["cross_validated"]["estimate"]
    rel = _rows(t, "analysis-reliance", "data-condition")
    (trace,) = [c for c in rep["reliance"]["conditions"] if c["condition"] == "trace"]
    for k in ("over_reliance", "under_reliance"):
        assert (
            rel[("trace", k)]["estimate"] == trace[k]["estimate"]
            and rel[("trace", k)]["ci_high"] == trace[k]["ci_high"]
        )
    summary = json.loads((crit / "summary.json").read_text())
    crit_rows = _rows(t, "analysis-critique", "data-critique")
    for k in ("intended_flaw_found", "intended_flaw_found_top1", "refinement_win_rate"):
        assert (
            crit_rows[("crit", k)]["estimate"] == summary[k]["estimate"]
            and crit_rows[("crit", k)]["n"] == summary[k]["n"]
        )
    assert summary["intended_flaw_found"]["n"] == 3  # one misleading answer a question
    assert 'data-figure="hybrid"' in out.read_text() and 'data-figure="critique"' in out.read_text()


def test_with_a_run_and_refusals(
    outputs: tuple[Path, Path],
    quickstart_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    comp, crit = outputs
    # beside a run: the run's sections and browser, then the analyses
    _cli(
        ["report", str(quickstart_run), "--complementarity", str(comp), "--out", str(tmp_path / "b.html")],
        capsys,
        monkeypatch,
    )
    t = read_report(tmp_path / "b.html")
    assert t.tables["stats-asd"] and t.tables["analysis-hybrid"] and "browser-data" in t.json
    # default file: the critique folder's report.html
    _cli(["report", "--critique", str(crit)], capsys, monkeypatch)
    assert (crit / "report.html").is_file()
    # not the JSON of `seerbench complementarity`, not a critique folder: one line, exit 2
    for args, needle in (
        (
            ["--complementarity", str(tmp_path / "judgments.csv")],
            "is not the output of `seerbench complementarity --json`",
        ),
        (["--complementarity", str(tmp_path / "none.json")], "does not exist"),
        (["--critique", str(tmp_path)], "is not a `seerbench critique` folder"),
    ):
        code, _, err = run_main(["report", *args], capsys, monkeypatch)
        assert code == 2 and needle in err, err
