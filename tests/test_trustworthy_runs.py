"""Issue 13: runs a researcher can trust. Each "silently wrong" case from the audit is either a
clear error when the config is read or a correct result; every user error is one line and exit 2;
a run with failed questions exits non-zero. Scripted models throughout; values worked out by hand."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from seerbench.cli import app
from seerbench.errors import ConfigError, SeerbenchError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.models import ChatMessage, GenerateConfig, default_tracker, get_model, register_scripted
from seerbench.prompts import PROMPTS_DIR
from seerbench.results import judge_diagnostics
from seerbench.types import AnswerCase, Question

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]


def _always_a(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    """A fully position-biased judge: 0.9 for whichever option is shown first."""
    return "0.9" if "How likely" in messages[-1].content else "A"


def _says(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    return "My side is right."


def _flaky(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    from seerbench.errors import ModelUnavailableError

    if "number 2." in messages[-1].content:
        raise ModelUnavailableError("server hiccup")
    return "0.8" if "How likely" in messages[-1].content else "A"


register_scripted("tr-judge", _always_a, replace=True)
register_scripted("tr-agent", _says, replace=True)
register_scripted("tr-flaky", _flaky, replace=True)
JUDGE, AGENT = "scripted:tr-judge", "scripted:tr-agent"


def _questions(n: int, *, source: bool = False, tweak: int | None = None) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        q = Question(
            id=f"q{i}",
            text=f"This is question number {i}." + (" (edited)" if i == tweak else ""),
            answer_cases=[
                AnswerCase(short="A", long=f"yes {i}", value=1.0),
                AnswerCase(short="B", long=f"no {i}", value=0.0),
            ],
            source_text=f"Passage {i}." if source else None,
        )
        out.append(q.model_dump(mode="json"))
    return out


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _config_file(folder: Path, **kw: Any) -> Path:
    """A config file in ``folder`` whose dataset is ``questions.jsonl`` beside it (relative path)."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "questions.jsonl").exists():
        _write_jsonl(folder / "questions.jsonl", _questions(4))
    cfg = {
        "name": "tr",
        "dataset": "questions.jsonl",
        "judge_models": [JUDGE],
        "agent_models": [AGENT],
        "protocols": ["NaiveJudge"],
        "elicitation": {"order": ["verbalized"]},
        "n_boot": 100,
        **kw,
    }
    p = folder / "xp.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def _calls(*specs: str) -> int:
    return sum(get_model(s).backend.calls for s in specs)  # type: ignore[attr-defined]


def _one_line_error(r: Any) -> str:
    """A user error: a SeerbenchError, which the console script prints as one line with exit 2
    (checked through the real entry point in test_the_console_script_prints_one_line_and_exits_2)."""
    assert isinstance(r.exception, SeerbenchError), (r.exception, r.output)
    assert "\n" not in str(r.exception)
    return str(r.exception)


# ---- 1. conditions that need a passage ---------------------------------------------------------


@pytest.mark.parametrize(
    "protocol",
    [
        {"name": "EvidenceDebate", "condition": "PSA"},
        {"name": "EvidenceDebate", "condition": ["SA", "PS"]},
        {"name": "NaiveJudge", "judge_sees_source": True},
    ],
)
def test_passage_conditions_are_refused_on_data_without_passages(
    tmp_path: Path, protocol: dict[str, Any]
) -> None:
    cfg = _config_file(
        tmp_path / "c", protocols=[protocol], agent_models=["replay"], out=str(tmp_path / "out")
    )
    r = runner.invoke(app, ["run", str(cfg)])
    msg = _one_line_error(r)
    assert "4 of 4 questions have no source_text" in msg and "condition without P" in msg
    assert ("EvidenceDebate_PS" if protocol["name"] == "EvidenceDebate" else "NaiveJudge_src") in msg
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_passage_conditions_run_when_the_data_has_passages(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    _write_jsonl(folder / "questions.jsonl", _questions(3, source=True))
    cfg = _config_file(
        folder, protocols=[{"name": "NaiveJudge", "judge_sees_source": True}], out=str(tmp_path / "out")
    )
    exp = Experiment(ExperimentConfig.from_yaml(cfg))
    [res] = exp.run()
    assert res.spec.key == "NaiveJudge_src/J_scripted-tr-judge" and res.n_done == 3


def test_evidence_debate_no_longer_drops_judge_sees_source() -> None:
    from seerbench.protocols import EvidenceDebate

    with pytest.raises(ConfigError, match=r"contradicts condition SA.*use condition PSA"):
        EvidenceDebate(None, object(), condition="SA", judge_sees_source=True)


# ---- 2. prompt changes ---------------------------------------------------------------------------


def test_an_edited_prompt_is_refused_like_any_config_change(tmp_path: Path) -> None:
    prompts = tmp_path / "c" / "my_prompts"
    prompts.mkdir(parents=True)
    shutil.copy(PROMPTS_DIR / "judge_system.txt", prompts / "judge_system.txt")
    cfg = _config_file(tmp_path / "c", prompts_dir="my_prompts", out=str(tmp_path / "out"))
    assert runner.invoke(app, ["run", str(cfg)]).exit_code == 0
    meta = json.loads((tmp_path / "out" / "experiment.json").read_text())
    line = json.loads(
        (tmp_path / "out" / "NaiveJudge" / "J_scripted-tr-judge" / "results.jsonl")
        .read_text()
        .splitlines()[0]
    )
    assert line["prompts"] == meta["prompts"] and set(meta["prompts"]) >= {
        "judge_system",
        "judge_decide",
        "agent_system",
    }

    (prompts / "judge_system.txt").write_text("You are a very careful judge.\n")
    msg = _one_line_error(runner.invoke(app, ["run", str(cfg)]))
    assert "prompts.judge_system" in msg and "NaiveJudge/J_scripted-tr-judge" in msg
    # the old results are untouched
    assert json.loads((tmp_path / "out" / "experiment.json").read_text())["prompts"] == meta["prompts"]


def test_prompts_dir_must_exist_and_hold_only_template_names(tmp_path: Path) -> None:
    cfg = _config_file(tmp_path / "c", prompts_dir="nowhere", out=str(tmp_path / "out"))
    assert (
        "prompts_dir" in _one_line_error(runner.invoke(app, ["run", str(cfg)]))
        and not (tmp_path / "out").exists()
    )
    (tmp_path / "c" / "p").mkdir()
    (tmp_path / "c" / "p" / "judge_sytem.txt").write_text("typo in the name")
    cfg = _config_file(tmp_path / "c", prompts_dir="p", out=str(tmp_path / "out"))
    msg = _one_line_error(runner.invoke(app, ["run", str(cfg)]))
    assert "judge_sytem.txt, which no template uses" in msg and "judge_system.txt" in msg


def test_a_prompt_edited_between_two_renders_in_one_process_is_read_again(tmp_path: Path) -> None:
    from seerbench.prompts import render, template_hashes

    (tmp_path / "judge_system.txt").write_text("first")
    h1 = template_hashes(tmp_path)["judge_system"]
    assert render("judge_system", tmp_path) == "first"
    (tmp_path / "judge_system.txt").write_text("second, longer")
    assert render("judge_system", tmp_path) == "second, longer"
    assert template_hashes(tmp_path)["judge_system"] != h1


# ---- 3. failed question runs fail the command ---------------------------------------------------


def test_a_run_with_failed_questions_exits_non_zero_and_says_how_many(tmp_path: Path) -> None:
    cfg = _config_file(
        tmp_path / "c", judge_models=["scripted:tr-flaky"], concurrency=1, out=str(tmp_path / "out")
    )
    r = runner.invoke(app, ["run", str(cfg)])
    assert r.exit_code == 1, r.output
    assert "1 of 4 question runs failed in 1 cells" in r.output
    # the other three are kept, and --json still reports the failure in its exit status
    lines = (
        (tmp_path / "out" / "NaiveJudge" / "J_scripted-tr-flaky" / "results.jsonl").read_text().splitlines()
    )
    assert [json.loads(x)["question_id"] for x in lines] == ["q0", "q1", "q3"]
    r = runner.invoke(app, ["run", str(cfg), "--json", "--out", str(tmp_path / "out2")])
    assert r.exit_code == 1 and json.loads(r.stdout)["failed_question_runs"] == 1


# ---- 4. grid axes stay visible -------------------------------------------------------------------


def test_tools_and_best_of_n_get_columns(tmp_path: Path) -> None:
    cfg = _config_file(
        tmp_path / "c",
        protocols=["Consultancy"],
        agent_tools=[[], ["calculator"]],
        best_of_n=[1, 2],
        out=str(tmp_path / "out"),
    )
    r = runner.invoke(app, ["run", str(cfg)])
    assert r.exit_code == 0, r.output
    rows = [ln for ln in r.stdout.splitlines() if "Consultancy" in ln and "│" in ln]
    assert len(rows) == 4 and len(set(rows)) == 4
    header = next(ln for ln in r.stdout.splitlines() if "protocol" in ln)
    assert (
        "tools" in header and "BoN" in header and "agent" not in header
    )  # agent does not vary: in the title
    cells = json.loads(runner.invoke(app, ["stats", str(tmp_path / "out"), "--json"]).stdout)["cells"]
    assert sorted((tuple(c["tools"]), c["best_of_n"]) for c in cells) == [
        ((), 1),
        ((), 2),
        (("calculator",), 1),
        (("calculator",), 2),
    ]


# ---- 6. a degenerate judge is named --------------------------------------------------------------


def _line(p_first_view: list[tuple[float, float]], *, both_orders: bool = False) -> dict[str, Any]:
    """A results line (the parts judge_diagnostics reads) with one verdict per case."""
    q = {"answer_cases": [{"short": "A", "value": 1.0}, {"short": "B", "value": 0.0}]}
    cases = []
    for short, (pa, pb) in zip("AB", p_first_view, strict=True):
        meta: dict[str, Any] = {}
        probs = {"A": pa, "B": pb}
        if both_orders:  # the swapped run showed B first; recorded in original labels
            meta = {"both_orders": True, "original": {"A": pa, "B": pb}, "swapped": {"A": pb, "B": pa}}
            probs = {"A": 0.5, "B": 0.5}
        cases.append(
            {
                "short": short,
                "case_probs": {
                    "probabilities": probs,
                    "method": "verbalized",
                    "metadata": meta,
                    "transcript": [{"content": short}],
                },
            }
        )
    return {"question": q, "symmetric": False, "answer_cases": cases}


def test_position_bias_warning_points_at_both_orders() -> None:
    lines = [_line([(0.9, 0.1), (0.8, 0.2)]) for _ in range(3)]  # 6 verdicts, all for the first position
    d = judge_diagnostics(lines)
    assert d["first_position_share"] == 1.0 and d["n_verdicts"] == 6
    assert (
        len(d["warnings"]) == 1
        and "100% of 6 verdicts" in d["warnings"][0]
        and "both_orders: true" in d["warnings"][0]
    )
    # with both orders the first position is still picked in every view: named, but not told to turn it on
    d = judge_diagnostics([_line([(0.9, 0.1), (0.8, 0.2)], both_orders=True) for _ in range(3)])
    assert d["n_verdicts"] == 12 and "both_orders is on" in d["warnings"][0]
    # a judge that follows the content: 3 first, 3 second -> no warning
    d = judge_diagnostics([_line([(0.9, 0.1), (0.2, 0.8)]) for _ in range(3)])
    assert d["first_position_share"] == 0.5 and d["warnings"] == []
    # never leaving [0.48, 0.52]: a narrow band
    d = judge_diagnostics([_line([(0.52, 0.48), (0.48, 0.52)]) for _ in range(3)])
    assert "never left [0.48, 0.52]" in d["warnings"][0]


def test_the_table_warns_about_a_position_biased_judge(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    _write_jsonl(tmp_path / "c" / "questions.jsonl", _questions(6))  # 6 verdicts: enough to judge
    cfg = _config_file(tmp_path / "c", out=str(tmp_path / "out"))
    r = runner.invoke(app, ["run", str(cfg)])
    assert r.exit_code == 0 and "position bias" in r.stdout and "both_orders: true" in r.stdout


def test_the_shipped_examples_control_position_bias() -> None:
    for name in ("quickstart.yaml", "single_turn_debate.yaml"):
        assert ExperimentConfig.from_yaml(REPO / "examples" / name).both_orders, name


# ---- 7. one line and exit 2 for ordinary problems ------------------------------------------------


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    cfg = _config_file(tmp_path / "c", out=str(tmp_path / "out"))
    assert runner.invoke(app, ["run", str(cfg)]).exit_code == 0
    return tmp_path / "out"


def test_out_under_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    cfg = _config_file(tmp_path / "c")
    msg = _one_line_error(runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "afile" / "x")]))
    assert "cannot write the output folder" in msg and "Not a directory" in msg


def test_a_corrupt_experiment_json_is_one_line(finished: Path) -> None:
    (finished / "experiment.json").write_text("{")
    msg = _one_line_error(runner.invoke(app, ["stats", str(finished)]))
    assert "experiment.json is corrupt" in msg and "\n" not in msg


def test_stats_skips_and_reports_a_torn_last_line(finished: Path) -> None:
    before = json.loads(runner.invoke(app, ["stats", str(finished), "--json"]).stdout)
    res = finished / "NaiveJudge" / "J_scripted-tr-judge" / "results.jsonl"
    with open(res, "a") as f:
        f.write('{"question_id": "q9", "answ')  # what a crash mid-write leaves
    r = runner.invoke(app, ["stats", str(finished), "--json"])
    assert r.exit_code == 0
    after = json.loads(r.stdout)
    assert (
        after["skipped_lines"] == 1
        and after["cells"][0]["n_questions"] == before["cells"][0]["n_questions"] == 4
    )
    assert after["cells"][0]["metrics"] == before["cells"][0]["metrics"]
    r = runner.invoke(app, ["stats", str(finished)])
    assert r.exit_code == 0 and (
        "a torn last line (what a crash leaves) in NaiveJudge/J_scripted-tr-judge was skipped; "
        "rerunning the config repairs it" in " ".join(r.stdout.split())
    )
    assert "unreadable results line" not in r.stdout and "question(s) unreadable" not in r.stdout


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--beta", "-1"], "beta must be >= 0"),
        (["--eps", "0.7"], "eps must lie strictly between 0 and 0.5"),
        (["--eps", "0"], "eps must lie strictly between 0 and 0.5"),
        (["--score", "hinge"], "score must be one of"),
        (["--parse-failures", "drop"], "parse failures must be 'exclude' or 'half'"),
    ],
)
def test_bad_stats_options_are_one_line(finished: Path, args: list[str], needle: str) -> None:
    assert needle in _one_line_error(runner.invoke(app, ["stats", str(finished), *args]))


def test_stats_json_is_valid_json_even_with_infinite_values(finished: Path) -> None:
    # logodds scores of a probability-1 verdict are infinite: JSON has no Infinity, so null
    r = runner.invoke(app, ["stats", str(finished), "--json", "--score", "logodds", "--beta", "inf"])
    assert r.exit_code == 0

    def no_constants(x: str) -> Any:
        raise AssertionError(f"invalid JSON constant {x}")

    json.loads(r.stdout, parse_constant=no_constants)


def test_the_console_script_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "seerbench"
    p = subprocess.run([str(exe), "stats", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and "no experiment.json" in p.stderr


def test_a_folder_of_runs_names_the_runs_in_it(finished: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("quickstart", "big", "c", "d", "e"):
        shutil.copytree(finished, runs / name)
    (runs / "notes").mkdir()  # not a run
    msg = _one_line_error(runner.invoke(app, ["stats", str(runs)]))
    assert msg == (
        f"{runs} is not an experiment output folder (no experiment.json); it holds runs: {runs / 'big'}, "
        f"{runs / 'c'}, {runs / 'd'}, {runs / 'e'} and 1 more; give one of them"
    )
    msg = _one_line_error(runner.invoke(app, ["stats", str(runs / "notes")]))
    assert msg.endswith("(no experiment.json); run `seerbench run` first")
    # a protocol's folder, or a cell's, inside a run: the run is named
    cell = next((runs / "big").glob("*/*/results.jsonl")).parent
    for inner in (cell.parent, cell):
        msg = _one_line_error(runner.invoke(app, ["stats", str(inner)]))
        assert msg.endswith(f"(no experiment.json); it is inside the run {runs / 'big'}: give that folder")


# ---- comfort: relative paths, growing grids, --new, dry run, show ---------------------------------


def test_relative_paths_are_read_from_the_config_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _config_file(tmp_path / "deep" / "c", out=str(tmp_path / "out"))
    monkeypatch.chdir(tmp_path)  # not the config's folder
    [res] = Experiment(ExperimentConfig.from_yaml(cfg)).run()
    assert res.n_done == 4
    (tmp_path / "deep" / "c" / "questions.jsonl").unlink()
    msg = _one_line_error(runner.invoke(app, ["run", str(cfg)]))
    assert str(tmp_path / "deep" / "c" / "questions.jsonl") in msg  # the resolved path


def test_growing_the_grid_or_the_dataset_only_adds(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    _write_jsonl(folder / "questions.jsonl", _questions(4))
    out = tmp_path / "out"
    cfg = _config_file(folder, out=str(out), limit=2)
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    naive = out / "NaiveJudge" / "J_scripted-tr-judge" / "results.jsonl"
    first = naive.read_text()
    calls = _calls(JUDGE, AGENT)
    # more questions: only the two new ones are judged (one verbalized call each)
    cfg = _config_file(folder, out=str(out), limit=4)
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    assert _calls(JUDGE, AGENT) - calls == 2 and naive.read_text().startswith(first)
    # another protocol: a new cell, the old one untouched
    text = naive.read_text()
    cfg = _config_file(folder, out=str(out), protocols=["NaiveJudge", "Consultancy"])
    res = Experiment(ExperimentConfig.from_yaml(cfg)).run()
    assert [r.spec.key for r in res] == [
        "NaiveJudge/J_scripted-tr-judge",
        "Consultancy_t1/A_scripted-tr-agent_J_scripted-tr-judge",
    ]
    assert naive.read_text() == text
    # changing an existing cell's settings is refused, naming the cell and the key
    cfg = _config_file(
        folder, out=str(out), protocols=["NaiveJudge", "Consultancy"], agent_generation={"max_words": 30}
    )
    with pytest.raises(
        ConfigError,
        match=(
            r"Consultancy_t1/A_scripted-tr-agent_J_scripted-tr-judge "
            r"\(differs in: agent_generation.max_words\)"
        ),
    ):
        Experiment(ExperimentConfig.from_yaml(cfg)).run()
    # a question whose content changed under the same id is refused
    _write_jsonl(folder / "questions.jsonl", _questions(4, tweak=1))
    cfg = _config_file(folder, out=str(out))
    with pytest.raises(ConfigError, match=r"questions q1 differ from the dataset's"):
        Experiment(ExperimentConfig.from_yaml(cfg)).run()


def test_new_resumes_the_sibling_it_made_last_time(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    out = tmp_path / "out"
    Experiment(ExperimentConfig.from_yaml(_config_file(folder, out=str(out)))).run()
    changed = _config_file(folder, out=str(out), eps=1e-3)
    exp = Experiment(ExperimentConfig.from_yaml(changed))
    exp.run(new=True)
    assert exp.out == Path(f"{out}_2")
    calls = _calls(JUDGE)
    exp = Experiment(ExperimentConfig.from_yaml(changed))
    exp.run(new=True)
    assert exp.out == Path(f"{out}_2") and _calls(JUDGE) == calls  # resumed: nothing to do
    assert not Path(f"{out}_3").exists()


def test_dry_run_counts_calls_without_calling(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cfg = _config_file(
        tmp_path / "c", out=str(out), protocols=["NaiveJudge", "Consultancy"], both_orders=True
    )
    calls = _calls(JUDGE, AGENT)
    r = runner.invoke(app, ["run", str(cfg), "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert _calls(JUDGE, AGENT) == calls and not out.exists()
    by = {c["cell"]: c for c in plan["cells"]}
    # NaiveJudge: one verdict per order per question (symmetric) = 2 x 4
    assert by["NaiveJudge_swap/J_scripted-tr-judge"]["calls"] == 8
    # Consultancy, 1 turn: per case and order, one consultant turn and one verdict = 2 x 2 x 2 x 4
    assert by["Consultancy_t1_swap/A_scripted-tr-agent_J_scripted-tr-judge"]["calls"] == 32
    # after running half the questions, only the rest is planned
    Experiment(ExperimentConfig.from_yaml(cfg).with_updates(limit=2)).run()
    plan = json.loads(runner.invoke(app, ["run", str(cfg), "--dry-run", "--json"]).stdout)
    assert [c["to_run"] for c in plan["cells"]] == [2, 2] and plan["total"]["calls"] == 20


def test_dry_run_names_the_calls_the_cache_will_answer(tmp_path: Path, _isolated_cache: Path) -> None:
    """Random consultancy argues one of the cases consultancy already argued, with the same
    prompts: the plan says those calls repeat an earlier request, and the run's cache answers
    exactly them (4 questions x (1 consultant turn + 1 verdict))."""
    out = tmp_path / "out"
    cfg = _config_file(tmp_path / "c", out=str(out), protocols=["Consultancy", "RandomConsultancy"])
    plan = json.loads(runner.invoke(app, ["run", str(cfg), "--dry-run", "--json"]).stdout)
    by = {c["cell"].split("/")[0]: c for c in plan["cells"]}
    assert by["Consultancy_t1"]["repeat_calls"] == 0 and by["Consultancy_t1"]["calls"] == 16
    assert by["RandomConsultancy_t1"]["repeat_calls"] == by["RandomConsultancy_t1"]["calls"] == 8
    assert plan["total"]["repeat_calls"] == 8
    text = runner.invoke(app, ["run", str(cfg), "--dry-run"]).stdout
    assert "8 of the 24 calls repeat an earlier request" in " ".join(text.split())
    before = default_tracker().totals()
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    after = default_tracker().totals()
    assert after.cache_hits - before.cache_hits == 8 and after.calls - before.calls == 16


def test_dry_run_counts_have_thousands_separators(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every count of the plan (questions, calls, tokens, the repeat line) as the token columns were."""
    from types import SimpleNamespace

    from seerbench.cli._common import console
    from seerbench.cli._run import _print_plan

    monkeypatch.setattr(console, "width", 200)

    plans = [
        SimpleNamespace(
            spec=SimpleNamespace(key=f"cell{i}"),
            n_questions=12000,
            n_todo=11000,
            calls=132000.0,
            prompt_tokens=2500000.0,
            completion_tokens=1000000.0,
            cost=None,
            repeat_calls=39000.0,
        )
        for i in range(2)
    ]
    exp = SimpleNamespace(out=tmp_path / "out", config=SimpleNamespace(name="big"))
    _print_plan(plans, exp, json_out=False)  # type: ignore[arg-type]
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "11,000/12,000 132,000 2,500,000 1,000,000" in text
    assert "total 22,000 264,000 5,000,000 2,000,000" in text
    assert "78,000 of the 264,000 calls repeat an earlier request of the grid exactly" in text
    assert "expect about 186,000 model calls" in text


def _varies(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    """An agent like a real model: its speech differs with the request (prompt and seed)."""
    import hashlib

    return "My side is right: " + hashlib.sha256(f"{messages[-1].content}|{seed}".encode()).hexdigest()[:8]


register_scripted("tr-varies", _varies, replace=True)


def test_dry_run_repeats_are_the_runs_cache_hits_where_answers_are_quoted(
    tmp_path: Path, _isolated_cache: Path
) -> None:
    """Two-turn debates with sampled speeches quote earlier answers in later prompts; the two
    debate protocols open with the same first speeches. The plan's stand-in answers differ with the
    request as a real model's (cached) ones do, so it counts as repeats exactly the calls the run's
    cache answers (a stand-in answer alike for every request counted later speeches after different
    samples as repeats)."""
    out = tmp_path / "out"
    cfg = _config_file(
        tmp_path / "c",
        out=str(out),
        agent_models=["scripted:tr-varies"],
        protocols=["SimultaneousDebate", "SequentialDebate"],
        num_turns=[2],
        agent_generation={"temperature": 0.8},
        elicitation={"order": ["vote"], "vote_samples": 3},
    )
    plan = json.loads(runner.invoke(app, ["run", str(cfg), "--dry-run", "--json"]).stdout)
    before = default_tracker().totals()
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    after = default_tracker().totals()
    hits, calls = after.cache_hits - before.cache_hits, after.calls - before.calls
    assert plan["total"]["calls"] == hits + calls
    assert plan["total"]["repeat_calls"] == hits


def test_dry_run_on_a_folder_being_written_says_so(tmp_path: Path) -> None:
    """While another process holds the output folder, the plan is a snapshot of a moving folder:
    the table says who writes it, --json carries it (null when nobody does)."""
    from seerbench._lock import lock_folder

    out = tmp_path / "out"
    cfg = _config_file(tmp_path / "c", out=str(out))
    assert (
        json.loads(runner.invoke(app, ["run", str(cfg), "--dry-run", "--json"]).stdout)["in_progress"] is None
    )
    with lock_folder(out, "seerbench run xp.yaml"):
        plan = json.loads(runner.invoke(app, ["run", str(cfg), "--dry-run", "--json"]).stdout)
        assert plan["in_progress"].startswith(f"PID {os.getpid()} on host ")
        text = " ".join(runner.invoke(app, ["run", str(cfg), "--dry-run"]).stdout.split())
    assert f"in progress: PID {os.getpid()} on host" in text and "(seerbench run xp.yaml) is writing" in text
    assert "`seerbench run` on this folder is refused until it ends" in text
    assert "in progress" not in runner.invoke(app, ["run", str(cfg), "--dry-run"]).stdout  # released


def test_show_rebuilds_the_exact_prompts_from_the_cache(finished: Path, _isolated_cache: Path) -> None:
    r = runner.invoke(app, ["show", str(finished), "q1", "--json"])
    assert r.exit_code == 0, r.output
    [rec] = json.loads(r.stdout)
    [req] = rec["prompts"]  # NaiveJudge: one verbalized judge call
    assert req["role"] == "judge" and req["kind"] == "generate"
    assert "This is question number 1." in req["messages"][-1]["content"] and req["output"] == "0.9"
    probs = rec["line"]["answer_cases"][0]["case_probs"]["probabilities"]
    assert probs == {"A": 0.9, "B": pytest.approx(0.1)}
    # another cache dir than the run's: say which was read, and how to give the run's
    other = _isolated_cache.parent / "another-cache"
    msg = _one_line_error(runner.invoke(app, ["--cache-dir", str(other), "show", str(finished), "q1"]))
    assert msg == (
        f"the model cache in {other} does not hold this run's calls (cleared, or the run used another "
        "cache dir), so its prompts cannot be rebuilt exactly: give the cache dir the run used "
        "(seerbench --cache-dir DIR show ..., or SEERBENCH_CACHE_DIR=DIR), or pass --allow-calls to "
        "regenerate them"
    )
    r = runner.invoke(app, ["--cache-dir", str(_isolated_cache), "show", str(finished), "q1", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["prompts"][0]["output"] == "0.9"
    # with the cache gone the prompts cannot be rebuilt exactly: say so (or call with --allow-calls)
    from seerbench.models import default_cache

    default_cache().clear()
    msg = _one_line_error(runner.invoke(app, ["show", str(finished), "q1"]))
    assert "--allow-calls" in msg
    assert runner.invoke(app, ["show", str(finished), "q1", "--allow-calls"]).exit_code == 0
    assert "no results file" in _one_line_error(runner.invoke(app, ["show", str(finished), "nope"]))


def test_an_unknown_tool_is_refused_before_any_cell_runs(tmp_path: Path) -> None:
    cfg = _config_file(
        tmp_path / "c",
        protocols=["NaiveJudge", "Consultancy"],
        agent_tools=[[], ["abacus"]],
        out=str(tmp_path / "out"),
    )
    calls = _calls(JUDGE, AGENT)
    msg = _one_line_error(runner.invoke(app, ["run", str(cfg)]))
    assert "unknown tool 'abacus'" in msg and "calculator" in msg
    assert _calls(JUDGE, AGENT) == calls and not (tmp_path / "out").exists()


def test_quiet_run_prints_nothing_but_errors(tmp_path: Path) -> None:
    cfg = _config_file(tmp_path / "c", out=str(tmp_path / "out"))
    r = runner.invoke(app, ["-q", "run", str(cfg)])
    assert r.exit_code == 0 and r.stdout.strip() == ""
    assert (tmp_path / "out" / "NaiveJudge" / "J_scripted-tr-judge" / "results.jsonl").exists()


def test_progress_on_a_pipe_is_plain_lines(tmp_path: Path) -> None:
    cfg = _config_file(
        tmp_path / "c",
        judge_models=["scripted:coin"],
        agent_models=["scripted:coin"],  # another process: this module's responders are not there
        elicitation={"order": ["vote"], "vote_samples": 1},  # the coin answers a letter: one vote
        out=str(tmp_path / "out"),
    )
    exe = Path(sys.executable).parent / "seerbench"
    p = subprocess.run(
        [str(exe), "run", str(cfg)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SEERBENCH_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert p.returncode == 0, p.stderr
    assert "\x1b[" not in p.stderr  # no live bar on a pipe
    assert "[4/4] eta" in p.stderr and "NaiveJudge/J_scripted-coin 4/4" in p.stderr


def test_eta_weighs_each_cells_questions_by_their_expected_tokens(tmp_path: Path) -> None:
    """The ETA counts what is left in tokens, not questions: a debate question costs many naive
    judge questions, so after the cheap cell the time left is far more than the questions left
    suggest. Weights come from the dry run's plan (prompt + completion tokens per question)."""
    from seerbench.cli._run import _Progress, cost_weights
    from seerbench.experiment import Experiment, ExperimentConfig

    cfg = _config_file(tmp_path / "c", protocols=["NaiveJudge", "Consultancy"], out=str(tmp_path / "out"))
    exp = Experiment(ExperimentConfig.from_yaml(cfg))
    plans = exp.plan(sample=1)
    w = cost_weights(plans)
    (pn,) = (p for p in plans if p.spec.key.startswith("NaiveJudge"))
    (pc,) = (p for p in plans if p.spec.key.startswith("Consultancy"))
    assert w[pn.spec.key] == (pn.prompt_tokens + pn.completion_tokens) / 4  # 4 questions to run
    assert w[pc.spec.key] == (pc.prompt_tokens + pc.completion_tokens) / 4
    assert w[pc.spec.key] > 2 * w[pn.spec.key]  # a consultant's argument and a longer judge prompt

    # by hand: weights 1 and 9, 10 questions each; the cheap cell's 10 questions took 10 s, so
    # this run does 1 unit of work a second and 90 units are left: 90 s (counting questions: 10 s)
    bar = _Progress.__new__(_Progress)
    bar.weights, bar.work_total, bar.done, bar.work0 = {"cheap/J": 1.0, "dear/A_J": 9.0}, 100.0, {}, 0.0
    bar.t0, bar.timing = 1000.0, True
    bar.done["cheap/J"] = 10
    assert bar.eta(1010.0) == pytest.approx(90.0)
    bar.done["dear/A_J"] = 5  # then 45 units more in 45 s: 1 unit a second still, 45 left
    assert bar.eta(1055.0) == pytest.approx(45.0)
    # questions finished before this run (a resume) are not this run's rate
    resumed = _Progress.__new__(_Progress)
    resumed.weights, resumed.work_total, resumed.done, resumed.work0 = dict(bar.weights), 100.0, {}, 10.0
    resumed.t0, resumed.timing, resumed.done["cheap/J"] = 1000.0, True, 10
    assert resumed.eta(1010.0) is None  # nothing done in this run yet: no rate
    resumed.done["dear/A_J"] = 1  # 9 units in 3 s: 3 a second, 81 left
    assert resumed.eta(1003.0) == pytest.approx(27.0)
    # the clock starts at the run's first finished question, which also paid for loading models
    cfg2 = _config_file(tmp_path / "e", protocols=["NaiveJudge", "Consultancy"], out=str(tmp_path / "o2"))
    specs = Experiment(ExperimentConfig.from_yaml(cfg2)).check()
    live = _Progress(specs, 4, enabled=False, weights={specs[0].key: 1.0, specs[1].key: 3.0})
    live.start(specs[0], 0, 4)
    assert live.eta(time.monotonic() + 5) is None  # nothing finished: no pace yet
    live.step(specs[0], 1, 4, 0)
    t1 = live.t0
    assert live.eta(t1 + 5) is None  # only the first question, whose time includes the load
    live.step(specs[0], 3, 4, 0)  # 2 units in 4 s after the first: 0.5 a second; 16 - 3 = 13 left
    assert live.eta(t1 + 4) == pytest.approx(26.0)


def test_a_plan_that_fails_leaves_the_run_going(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ETA's weights come from the dry run's plan; a protocol that cannot run on the plan's
    stand-in answers (a plugin parsing its models' text its own way) must not stop the real run."""

    def broken(self: Experiment, **kw: Any) -> Any:
        raise ValueError("this protocol cannot parse 'A: 50%, B: 50%'")

    monkeypatch.setattr(Experiment, "plan", broken)
    cfg = _config_file(tmp_path / "c", out=str(tmp_path / "out"))
    r = runner.invoke(app, ["run", str(cfg)])
    assert r.exit_code == 0, r.output
    results = tmp_path / "out" / "NaiveJudge" / "J_scripted-tr-judge" / "results.jsonl"
    assert results.read_text().count("\n") == 4


def test_progress_on_a_pipe_prints_a_line_while_no_question_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A slow question (a debate on a slow machine takes minutes) still gets a line every `every`
    seconds, with the usage so far; nothing after the run has ended."""
    from seerbench.cli._run import _Progress
    from seerbench.experiment import Experiment, ExperimentConfig

    cfg = _config_file(tmp_path / "c", out=str(tmp_path / "out"))
    (spec,) = Experiment(ExperimentConfig.from_yaml(cfg)).check()
    with _Progress([spec], 4, enabled=True, every=0.2) as bar:
        bar.start(spec, 1, 4)
        time.sleep(1.0)  # no question ends meanwhile
    after = capsys.readouterr().err.splitlines()
    time.sleep(0.5)
    assert capsys.readouterr().err == ""  # the heartbeat stopped with the run
    lines = [ln for ln in after if ln.startswith("[1/4] eta")]
    assert len(lines) >= 2, after  # the start's line, then heartbeats (about one per 0.2 s)
    assert all(f"{spec.key} 1/4  calls " in ln and "cache hits" in ln and "tokens" in ln for ln in lines)


def test_baseline_may_be_the_protocol_name_when_one_folder_has_it(tmp_path: Path) -> None:
    cfg = _config_file(
        tmp_path / "c", protocols=["NaiveJudge", "Consultancy"], both_orders=True, out=str(tmp_path / "out")
    )
    assert runner.invoke(app, ["run", str(cfg)]).exit_code == 0
    by_name = json.loads(
        runner.invoke(app, ["stats", str(tmp_path / "out"), "--baseline", "NaiveJudge", "--json"]).stdout
    )
    by_folder = json.loads(
        runner.invoke(app, ["stats", str(tmp_path / "out"), "--baseline", "NaiveJudge_swap", "--json"]).stdout
    )
    assert by_name["paired"] == by_folder["paired"] and [p["baseline"] for p in by_name["paired"]] == [
        "NaiveJudge_swap"
    ]
    assert "no protocol folder 'Debate'" in _one_line_error(
        runner.invoke(app, ["stats", str(tmp_path / "out"), "--baseline", "Debate"])
    )
    # misspellings of what a user types most get the close name, written as they wrote theirs
    msg = _one_line_error(runner.invoke(app, ["stats", str(tmp_path / "out"), "--baseline", "NaiveJugde"]))
    assert "no protocol folder 'NaiveJugde' (did you mean NaiveJudge?)" in msg
    msg = _one_line_error(runner.invoke(app, ["stats", str(tmp_path / "uot")]))
    assert f"is not a folder (did you mean {tmp_path / 'out'}?)" in msg
    msg = _one_line_error(runner.invoke(app, ["run", str(tmp_path / "c" / "xq.yaml")]))
    assert f"does not exist (did you mean {tmp_path / 'c' / 'xp.yaml'}?)" in msg
    typo = _config_file(tmp_path / "d", dataset={"name": "arithmetic", "n": 3, "sed": 1})
    msg = _one_line_error(runner.invoke(app, ["run", str(typo)]))
    assert "dataset 'arithmetic' has no option(s) sed (did you mean seed?); it accepts: " in msg


STD_DATA = REPO.parent / "shared" / "data" / "single_turn_debate" / "all_arguments.jsonl"


@pytest.mark.skipif(
    not STD_DATA.is_file(), reason="the shared single_turn_debate data is not beside this checkout"
)
def test_the_single_turn_debate_example_runs_as_shipped_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # its dataset path is read from the config file's folder, not from here
    r = runner.invoke(app, ["run", str(REPO / "examples" / "single_turn_debate.yaml"), "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert [c["cell"] for c in plan["cells"]] == [
        "NaiveJudge_swap/J_local",
        "Consultancy_t1_swap/A_replay_J_local",
        "EvidenceDebate_SA_swap/A_replay_J_local",
    ]
    assert all(c["to_run"] == 20 for c in plan["cells"])


@pytest.mark.parametrize("order", [["logprobs", "verbalized", "vote"], ["logprobs", "vote"]])
def test_dry_run_follows_a_judge_without_logprobs_through_its_fallbacks(
    tmp_path: Path, order: list[str]
) -> None:
    # a scripted judge has no logprobs: each verdict costs a failed logprobs call, then the next
    # method's calls (a vote is vote_samples calls); the plan must count what the run then makes
    out = tmp_path / "out"
    cfg = _config_file(
        tmp_path / "c",
        out=str(out),
        protocols=["NaiveJudge", "Consultancy"],
        elicitation={"order": order, "vote_samples": 3},
    )
    plan = json.loads(runner.invoke(app, ["run", str(cfg), "--dry-run", "--json"]).stdout)
    calls = _calls(JUDGE, AGENT)
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    made = _calls(JUDGE, AGENT) - calls
    per_verdict = 1 + (1 if order[1] == "verbalized" else 3)  # worked out from the chain above
    # NaiveJudge: 4 verdicts; Consultancy: per question 2 cases x (1 consultant turn + 1 verdict)
    assert made == 4 * per_verdict + 4 * 2 * (1 + per_verdict)
    assert plan["total"]["calls"] == made


def test_an_agent_that_cannot_choose_a_side_is_named_not_the_judge(tmp_path: Path) -> None:
    """OpenConsultancy asks the agent which answer it believes before any judge; when that fails
    for every question, the warning's advice is about the agent's model, not the judge's."""
    out = tmp_path / "out"
    cfg = _config_file(
        tmp_path / "c", out=str(out), protocols=["OpenConsultancy"], agent_models=["scripted:echo"]
    )
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    (cell,) = json.loads(runner.invoke(app, ["stats", str(out), "--json"]).stdout)["cells"]
    first = cell["diagnostics"]["warnings"][0]
    assert first.startswith("no question scored: all 4 had a verdict that failed to parse")
    assert "agent's choice of side" in first and "or a stronger agent model" in first
    assert "stronger judge" not in first
