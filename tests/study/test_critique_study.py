"""Critique studies end to end without a browser (seed 002, issue 10.4-10.6): items from a
critiques.jsonl, assignment (a rater never sees a passage twice), the critique form (use, edit,
required severity and category, Likert, one submission), the export's used/edited flags, a
validation study over that export, and the merged statistics through the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from seerbench.cli import app as cli
from seerbench.errors import ConfigError, DataError
from seerbench.study import StudyStore, create_app, create_study, export_rows, load_manifest, write_export

P1 = "Alder is a river town of 4,200 people.\n\nIts mill closed in 1990 and the school in 2004."
P2 = "Birch Lake is 12 km long and freezes every winter."


def critiqued_answers() -> list[dict[str, Any]]:
    """Three questions (two on passage P1, one on P2), each with a model, reference and misleading
    answer, each answer with two model critiques sorted by helpfulness."""
    out = []
    for qid, text, passage, right, wrong in (
        ("q1", "How many people live in Alder?", P1, "4,200 people live there.", "5,100 people live there."),
        ("q2", "When did the mill close?", P1, "In 1990.", "In 2004."),
        ("q3", "How long is Birch Lake?", P2, "It is 12 km long.", "It is 21 km long."),
    ):
        for kind, answer, correct in (
            ("model", right, True),
            ("reference", right, True),
            ("misleading", wrong, False),
        ):
            out.append(
                {
                    "question_id": qid,
                    "question": text,
                    "passage": passage,
                    "answer_id": f"{qid}-{kind}",
                    "answer_kind": kind,
                    "answer": answer,
                    "correct": correct,
                    "intended_flaw": "changed number" if kind == "misleading" else None,
                    "intended_critique": f"The number is wrong: {right}" if kind == "misleading" else None,
                    "critiques": [
                        {
                            "id": f"{qid}-{kind}-c0",
                            "text": "The answer states the wrong number.",
                            "temperature": 0.0,
                            "helpfulness": 0.81,
                            "quote": None,
                            "quote_verified": None,
                        },
                        {
                            "id": f"{qid}-{kind}-c1",
                            "text": "The answer does not say where the figure comes from.",
                            "temperature": 1.0,
                            "helpfulness": 0.32,
                            "quote": None,
                            "quote_verified": None,
                        },
                    ],
                }
            )
    return out


def write_critiques(path: Path, answers: list[dict[str, Any]]) -> Path:
    """The file as ``seerbench critique`` writes it (its writer, from checked records)."""
    from seerbench.critique import CritiquedAnswer
    from seerbench.critique import write_critiques as write

    return write(path, [CritiquedAnswer.model_validate(a) for a in answers])


def critique_manifest(**over: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "name": "critique-test",
        "task": "critique",
        "items": [{"critiques": "critiques.jsonl"}],
        "conditions": [
            f"{k}.{a}" for k in ("model", "reference", "misleading") for a in ("assist", "no_assist")
        ],
        "ratings_per_item": 1,
        "tasks_per_rater": 2,
        "completion_code": "CRIT1",
        "seed": 5,
    }
    m.update(over)
    return m


@pytest.fixture
def critique_study(tmp_path: Path):
    write_critiques(tmp_path / "critiques.jsonl", critiqued_answers())
    stores: list[StudyStore] = []

    def make(**over: Any) -> StudyStore:
        store = create_study(
            load_manifest(critique_manifest(**over)), tmp_path / f"cr{len(stores)}.sqlite", base_dir=tmp_path
        )
        stores.append(store)
        return store

    yield make
    for s in stores:
        s.close()


def _csrf(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m is not None
    return m.group(1)


def _enter(client: TestClient, pid: str) -> Any:
    return client.get(f"/start?PROLIFIC_PID={pid}", follow_redirects=True)


def _simple_submit(client: TestClient, r: Any, likert: str = "5", critiques: int = 1) -> Any:
    aid = str(r.url).rsplit("/", 1)[-1]
    data = {"csrf": _csrf(r.text), "n_rows": str(critiques + 1), "likert": likert}
    for i in range(critiques):
        data |= {
            f"c{i}_text": f"Critique {i} of mine.",
            f"c{i}_severity": "minor",
            f"c{i}_category": "coverage",
        }
    return client.post(f"/task/{aid}/submit", data=data, follow_redirects=True)


def test_a_rater_never_sees_a_passage_twice(critique_study) -> None:
    store = critique_study()
    assert {c: p["total"] for c, p in store.progress()["conditions"].items()} == {
        "model.assist": 3,
        "model.no_assist": 3,
        "reference.assist": 3,
        "reference.no_assist": 3,
        "misleading.assist": 3,
        "misleading.no_assist": 3,
    }
    app = create_app(store)
    for n in range(12):
        c = TestClient(app)
        r = _enter(c, f"p{n}")
        while "/task/" in str(r.url):
            r = _simple_submit(c, r)
    rows = export_rows(store)
    passage = {a["answer_id"]: a["passage"] for a in critiqued_answers()}
    by_rater: dict[str, list[str]] = {}
    for row in rows:
        by_rater.setdefault(row["rater_id"], []).append(passage[row["answer_id"]])
    assert all(len(ps) == len(set(ps)) for ps in by_rater.values())  # two passages: at most two tasks each
    assert max(len(ps) for ps in by_rater.values()) == 2
    # every answer critiqued once with and once without assistance
    seen = sorted((row["answer_id"], row["assist"]) for row in rows)
    assert seen == sorted((a["answer_id"], x) for a in critiqued_answers() for x in (True, False))
    kinds = {row["condition"].split(".")[0] == row["answer_kind"] for row in rows}
    assert kinds == {True}


def _first_task(
    client: TestClient, assist: bool, store: StudyStore, start: int = 0
) -> tuple[TestClient, Any]:
    app = client.app
    for n in range(start, start + 40):
        c = TestClient(app)
        r = _enter(c, f"find{n}")
        while "/task/" in str(r.url):
            if ('name="use"' in r.text) == assist:
                return c, r
            r = _simple_submit(c, r)
    raise AssertionError("no such task")


def test_critique_form_use_edit_required_fields_and_one_submission(critique_study) -> None:
    store = critique_study()
    c, r = _first_task(TestClient(create_app(store)), True, store)
    aid = str(r.url).rsplit("/", 1)[-1]
    csrf = _csrf(r.text)
    html = r.text
    assert "helpfulness 0.81" in html and "helpfulness 0.32" in html
    assert html.index("helpfulness 0.81") < html.index("helpfulness 0.32")  # sorted by helpfulness
    assert 'id="passage"' in html and "<details" in html  # the passage on demand
    assert (
        "intended" not in html.lower() or "The number is wrong" not in html
    )  # the planted flaw stays hidden
    uses = re.findall(r'name="use" value="([^"]+)"', html)
    assert len(uses) == 2
    # "use" without JavaScript: the form comes back with the entry kept and a pre-filled critique
    r = c.post(
        f"/task/{aid}/submit",
        data={
            "csrf": csrf,
            "n_rows": "1",
            "c0_text": "Too short.",
            "c0_severity": "minor",
            "c0_category": "coverage",
            "use": uses[0],
        },
    )
    assert r.status_code == 200 and "Too short." in r.text
    assert r.text.count('class="critique-row"') == 3  # mine, the used one, a blank one
    assert re.search(r'id="c1-source" value="' + re.escape(uses[0]), r.text)
    assert "The answer states the wrong number.</textarea>" in r.text
    full = {
        "csrf": csrf,
        "n_rows": "4",
        "c0_text": "Too short.",
        "c0_severity": "minor",
        "c0_category": "coverage",
        "c1_text": "The answer states the wrong number: the passage gives another.",  # edited
        "c1_source": uses[0],
        "c1_severity": "major",
        "c1_category": "accuracy",
        "c2_text": "The answer does not say where the figure comes from.",  # used unchanged
        "c2_source": uses[1],
        "c2_severity": "medium",
        "c2_category": "other",
        "likert": "3",
    }
    # severity and category are required for every critique; the entries survive the error
    for drop, msg in (
        ("c1_severity", "Critique 2: choose a severity."),
        ("c2_category", "Critique 3: choose a category."),
    ):
        r = c.post(f"/task/{aid}/submit", data={k: v for k, v in full.items() if k != drop})
        assert r.status_code == 400 and msg in r.text
        assert "the passage gives another." in r.text
    r = c.post(f"/task/{aid}/submit", data={k: v for k, v in full.items() if k != "likert"})
    assert r.status_code == 400 and "from 1 to 7" in r.text
    assert export_rows(store) == [
        row for row in export_rows(store) if row["judgment_id"] != aid
    ]  # nothing stored
    r1 = c.post(f"/task/{aid}/submit", data=full, follow_redirects=False)
    r2 = c.post(
        f"/task/{aid}/submit", data=full, follow_redirects=False
    )  # a double click stores nothing more
    assert r1.status_code == 303 and r2.status_code == 303
    mine = [row for row in export_rows(store) if row["judgment_id"] == aid]
    assert [
        (x["critique_text"], x["severity"], x["category"], x["used"], x["edited"], x["novel"]) for x in mine
    ] == [
        ("Too short.", "minor", "coverage", False, False, True),
        (
            "The answer states the wrong number: the passage gives another.",
            "major",
            "accuracy",
            True,
            True,
            False,
        ),
        ("The answer does not say where the figure comes from.", "medium", "other", True, False, False),
    ]
    assert {(x["likert"], x["n_critiques"], x["model_critiques"], x["assist"]) for x in mine} == {
        (3, 3, 2, True)
    }
    assert [x["model_critique_id"] for x in mine] == [None, uses[0], uses[1]]


def test_no_assist_shows_no_model_critiques_and_ignores_a_forged_source(critique_study) -> None:
    store = critique_study()
    c, r = _first_task(TestClient(create_app(store)), False, store)
    aid = str(r.url).rsplit("/", 1)[-1]
    assert "AI-written critiques" not in r.text
    key = next(store.item(a.item_id).key for a, _ in store.assignments(submitted_only=False) if a.id == aid)
    forged = next(a for a in critiqued_answers() if a["answer_id"] == key)["critiques"][0]
    r = c.post(
        f"/task/{aid}/submit",
        data={
            "csrf": _csrf(r.text),
            "n_rows": "1",
            "c0_text": forged["text"],
            "c0_source": forged["id"],
            "c0_severity": "minor",
            "c0_category": "accuracy",
            "likert": "6",
        },
        follow_redirects=False,
    )
    assert r.status_code == 303
    row = next(x for x in export_rows(store) if x["judgment_id"] == aid)
    # not used (nothing was shown), and not novel: it repeats a model critique of the answer
    assert (row["used"], row["edited"], row["novel"], row["model_critiques"]) == (False, False, False, 0)


def test_validation_study_and_merged_stats(critique_study, tmp_path: Path) -> None:
    store = critique_study()
    app = create_app(store)
    # every task: one own critique; raters do their tasks until the study is full
    for n in range(12):
        c = TestClient(app)
        r = _enter(c, f"v{n}")
        while "/task/" in str(r.url):
            r = _simple_submit(c, r, critiques=1 if n % 2 == 0 else 2)
    rows = export_rows(store)
    write_export(rows, tmp_path / "written.jsonl")
    (tmp_path / "val.yaml").write_text(
        "name: critique-validation\ntask: validation\n"
        "items:\n  - {judgments: written.jsonl, critiques: critiques.jsonl}\n"
        "conditions: [{name: validation}]\nratings_per_item: 1\ntasks_per_rater: 18\ncompletion_code: VAL1\n"
    )
    vstore = create_study(tmp_path / "val.yaml", tmp_path / "val.sqlite")
    assert vstore.progress()["conditions"]["validation"]["total"] == len({r["judgment_id"] for r in rows})
    c = TestClient(create_app(vstore))
    r = _enter(c, "author")
    marked = 0
    while "/task/" in str(r.url):
        aid = str(r.url).rsplit("/", 1)[-1]
        k = r.text.count('class="critique-check"')
        intended = 'id="intended"' in r.text
        assert intended == ("The number is wrong" in r.text)
        bad = c.post(f"/task/{aid}/submit", data={"csrf": _csrf(r.text)})
        assert bad.status_code == 400 and "say whether it is valid" in bad.text
        data = {"csrf": _csrf(r.text)}
        for i in range(k):
            data[f"v{i}_valid"] = "yes" if i == 0 else "no"  # the first critique of each task is valid
            if intended:
                data[f"v{i}_covers"] = "yes" if i == 0 else "no"
        if intended:
            short = {k2: v for k2, v in data.items() if not k2.endswith("_covers")}
            bad = c.post(f"/task/{aid}/submit", data=short)
            assert bad.status_code == 400 and "intended flaw" in bad.text
        r = c.post(f"/task/{aid}/submit", data=data, follow_redirects=True)
        marked += k
    assert marked == sum(1 for row in rows if row["critique_id"])
    runner = CliRunner()
    res = runner.invoke(
        cli,
        [
            "study",
            "stats",
            "--db",
            str(store.url.split("///")[1]),
            "--validation",
            str(tmp_path / "val.sqlite"),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    for cond, cs in s["conditions"].items():
        own = [row for row in rows if row["condition"] == cond]
        tasks = {row["judgment_id"] for row in own}
        # worked by hand: each task has 1 valid critique (its first); found = 1 on misleading answers
        assert cs["valid_per_answer"]["mean"] == pytest.approx(1.0)
        assert cs["valid_share"]["mean"] == pytest.approx(len(tasks) / len(own))
        assert cs["critiques_per_answer"]["mean"] == pytest.approx(len(own) / len(tasks))
        assert cs["valid_novel_per_answer"]["mean"] == pytest.approx(1.0)  # written, not used
        if cond.startswith("misleading"):
            assert cs["intended_flaw_found"]["mean"] == pytest.approx(1.0)
        else:
            assert cs["intended_flaw_found"]["n"] == 0
    assert set(s["differences"]) == {"model", "reference", "misleading"}
    # the merged export carries validity
    res = runner.invoke(
        cli,
        [
            "study",
            "export",
            str(tmp_path / "merged.csv"),
            "--db",
            str(store.url.split("///")[1]),
            "--validation",
            str(tmp_path / "val.sqlite"),
        ],
    )
    assert res.exit_code == 0, res.output
    head = (tmp_path / "merged.csv").read_text().splitlines()[0].split(",")
    assert {"used", "edited", "severity", "category", "valid", "covers_intended"} <= set(head)
    # a validation study has no statistics of its own; --validation needs a critique study
    res = runner.invoke(cli, ["study", "stats", "--db", str(tmp_path / "val.sqlite")])
    assert isinstance(res.exception, ConfigError) and "merge its export" in str(res.exception)
    res = runner.invoke(
        cli,
        [
            "study",
            "stats",
            "--db",
            str(tmp_path / "val.sqlite"),
            "--validation",
            str(tmp_path / "val.sqlite"),
        ],
    )
    assert isinstance(res.exception, ConfigError) and "for critique studies" in str(res.exception)
    # the admin page shows the critique measures
    page = TestClient(app).get(f"/admin?token={store.admin_token}")
    assert page.status_code == 200 and 'id="critique-stats"' in page.text


@pytest.mark.parametrize(
    ("over", "msg"),
    [
        ({"catch_rate": 0.1}, "no catch trials"),
        ({"conditions": [{"name": "x", "show": ["passage"]}]}, "show no judging material"),
        ({"conditions": ["assist", "no_assist"], "task": "two_option"}, "use them with task: critique"),
        ({"categories": ["accuracy", "accuracy"]}, "distinct"),
        (
            {"task": "two_option", "categories": ["a"], "conditions": ["P"]},
            "categories are for task: critique",
        ),
        ({"conditions": ["nonsense.assist"]}, "unknown condition shorthand"),
    ],
)
def test_manifest_refusals(over: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        load_manifest(critique_manifest(**over))


def test_items_refusals(tmp_path: Path) -> None:
    write_critiques(tmp_path / "critiques.jsonl", critiqued_answers())
    (tmp_path / "q.jsonl").write_text("")
    with pytest.raises(DataError, match="task validation takes 'judgments'"):
        create_study(
            load_manifest(critique_manifest(task="validation", conditions=[{"name": "v"}])),
            tmp_path / "a.sqlite",
            base_dir=tmp_path,
        )
    with pytest.raises(DataError, match="needs items from"):
        create_study(
            load_manifest(critique_manifest(task="two_option", conditions=["Q"], catch_rate=0)),
            tmp_path / "b.sqlite",
            base_dir=tmp_path,
        )
    only_model = [a for a in critiqued_answers() if a["answer_kind"] == "model"]
    write_critiques(tmp_path / "critiques.jsonl", only_model)
    with pytest.raises(
        ConfigError, match=r"\['misleading.assist'\] have no items to show: the critiques file"
    ):
        create_study(
            load_manifest(critique_manifest(conditions=["model.assist", "misleading.assist"])),
            tmp_path / "m.sqlite",
            base_dir=tmp_path,
        )
    dup = critiqued_answers()
    write_critiques(tmp_path / "critiques.jsonl", [*dup, dup[0]])
    with pytest.raises(DataError, match="appears twice"):
        create_study(load_manifest(critique_manifest()), tmp_path / "c.sqlite", base_dir=tmp_path)
