"""From the rater's run folder to a study and back into the analysis: `seerbench rate` (scripted
model, hand-worked in test_rater.py) -> `seerbench study create` with `ratings:` items and the seed's
assistance conditions -> raters submit through the app -> `seerbench complementarity --ai RUN
--humans DB`. Expected values worked by hand:

AI: s1 accurate (truth accurate) at 0.75: right; s2 inaccurate (truth inaccurate) at 1.0: right;
s3 no verified sample (truth unsupported -> inaccurate): wrong, confidence taken as 0.
Humans rate every sentence "inaccurate": wrong on s1, right on s2 and s3.
Hybrid (majority): T=0.5 -> AI on s1, s2, humans on s3: 3/3; T=0.8 -> humans on s1, s3: 2/3.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from seerbench.cli._common import NORMAL, configure_logging
from seerbench.errors import ConfigError, DataError
from seerbench.factcheck import rate
from seerbench.factcheck._study import ASSISTANCE_CONDITIONS, rating_questions
from seerbench.study import StudyStore, create_app, load_manifest
from tests.complementarity.test_rater import _config
from tests.test_cli_global import one_line_error, run_main

TUTORIAL = {
    "text": "Rate the sentence.",
    "quiz": [{"question": "Ready?", "options": ["yes", "no"], "answer": 0}],
}


def manifest(**over: object) -> dict[str, object]:
    m: dict[str, object] = {
        "name": "fc",
        "task": "factuality",
        "items": [{"ratings": "run"}],
        "conditions": ["none", "search+evidence"],
        "ratings_per_item": 1,
        "tasks_per_rater": 3,
        "catch_rate": 0.0,
        "completion_code": "DONE",
        "tutorial": TUTORIAL,
        "seed": 2,
    }
    m.update(over)
    return m


def test_seed_conditions_and_the_low_confidence_slice(tmp_path: Path) -> None:
    asyncio.run(rate(_config(tmp_path)))
    m = load_manifest(manifest(conditions=list(ASSISTANCE_CONDITIONS)))
    shown = {c.name: c.assistance for c in m.conditions}
    assert shown["none"] == [] and shown["search"] == ["search_results"]
    assert shown["search+evidence"] == ["search_results", "evidence"]
    assert shown["trace+ratings+confidence"] == [
        "search_results",
        "evidence",
        "reasoning",
        "judgments",
        "confidence",
    ]
    assert shown["debate"] == ["two_sided"]
    assert [q.id for q in rating_questions(tmp_path / "run")] == ["s1", "s2", "s3"]
    assert [q.id for q in rating_questions(tmp_path / "run", 0.75)] == [
        "s1",
        "s3",
    ]  # <= T; no rating counts as 0
    assert [q.id for q in rating_questions(tmp_path / "run", 0.0)] == ["s3"]
    q1 = rating_questions(tmp_path / "run")[0]
    assert q1.metadata["ai_correct"] is True and q1.true_case.short == "accurate"
    a = q1.metadata["assistance"]
    assert a["evidence"] == ['[E1] Quorvel (Almanac) <>: "Quorvel was founded in 1850."']
    assert a["confidence"] == "Model confidence: medium (75%)"
    assert a["judgments"] == ["Claim 1 (Quorvel was founded in 1850.): accurate", "Overall: accurate"]
    assert (
        rating_questions(tmp_path / "run")[2].metadata["assistance"] == {}
    )  # nothing verified, nothing to show
    with pytest.raises(ConfigError, match="use it with ratings"):
        load_manifest(manifest(items=[{"questions": "x.jsonl", "max_confidence": 0.5}]))
    with pytest.raises(ConfigError, match="max_confidence"):
        load_manifest(manifest(items=[{"ratings": "run", "max_confidence": 1.5}]))
    with pytest.raises(DataError, match=r"no rated sentence has confidence <= 0\.5"):
        rating_questions(_only(tmp_path, "s2"), 0.5)  # s2 alone, at confidence 1.0


def _only(tmp: Path, iid: str) -> Path:
    src = (tmp / "run" / "ratings.jsonl").read_text().splitlines()
    out = tmp / "one.jsonl"
    out.write_text("".join(x + "\n" for x in src if json.loads(x)["item_id"] == iid))
    return out


def test_rater_to_study_to_complementarity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(rate(_config(tmp_path)))
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(manifest()))
    db = tmp_path / "fc.sqlite"
    code, _out, err = run_main(
        ["study", "create", str(tmp_path / "study.yaml"), "--db", str(db)], capsys, monkeypatch
    )
    assert code == 0, err
    store = StudyStore(str(db))
    client = TestClient(create_app(store))
    submitted = 0
    for p in range(4):
        client.cookies.clear()
        r = client.get(f"/start?PROLIFIC_PID=p{p}")
        m = re.search(r'name="csrf" value="([^"]+)"', r.text)
        if m is None:
            continue
        r = client.post("/tutorial", data={"csrf": m.group(1), "q0": "0"})
        while "/task/" in str(r.url) and r.status_code == 200:
            aid = str(r.url).rsplit("/", 1)[-1]
            assert (
                client.post(
                    f"/task/{aid}/submit",
                    data={"csrf": m.group(1), "rating": "inaccurate", "confidence": "3"},
                ).status_code
                == 200
            )
            submitted += 1
            r = client.get("/next")
    store.close()
    assert submitted == 6  # 3 sentences x 2 conditions x 1 rating
    code, out, err = run_main(
        [
            "complementarity",
            "--ai",
            str(tmp_path / "run"),
            "--humans",
            str(db),
            "--thresholds",
            "0.5,0.8",
            "--n-boot",
            "50",
            "--repeats",
            "2",
            "--folds",
            "3",
            "--no-mixed",
            "--json",
        ],
        capsys,
        monkeypatch,
    )
    configure_logging(NORMAL)
    assert code == 0, err
    rep = json.loads(out)
    assert rep["items"] == 3 and rep["unassisted"] == "none"
    sweep = next(s for s in rep["hybrid"] if s["condition"] == "none" and s["aggregate"] == "majority")
    assert sweep["ai_alone"]["estimate"] == pytest.approx(2 / 3)
    assert {r["threshold"]: r["hybrid"]["estimate"] for r in sweep["rows"]} == pytest.approx(
        {0.5: 1.0, 0.8: 2 / 3}
    )
    # the study is one step from the folder: a wrong folder is one line, exit 2
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(manifest(items=[{"ratings": "nowhere"}])))
    code, _out, err = run_main(
        ["study", "create", str(tmp_path / "study.yaml"), "--db", str(tmp_path / "x.sqlite")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "nowhere" in one_line_error(err)


def test_ratings_items_are_for_factuality() -> None:
    with pytest.raises(ConfigError, match=r"items \[0\]: 'ratings' .* task factuality"):
        load_manifest(manifest(task="two_option", conditions=["P"]))


def test_examples_are_valid() -> None:
    from seerbench.factcheck import RaterConfig

    repo = Path(__file__).resolve().parents[2]
    cfg = RaterConfig.from_yaml(repo / "examples" / "factcheck.yaml")
    assert cfg.model == "local" and cfg.samples == 50 and cfg.dataset["name"] == "factcheck"
    assert Path(cfg.out).resolve() == (repo / "runs" / "factcheck").resolve()
    m = load_manifest(repo / "examples" / "factcheck_study.yaml")
    assert (
        m.task == "factuality"
        and m.items[0].ratings == "../runs/factcheck"
        and m.items[0].max_confidence == 0.8
    )
    assert [c.name for c in m.conditions if not c.assistance] == ["none"]
