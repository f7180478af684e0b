"""Remake the screenshots docs/study.md shows: a rater's task page of each task type (two-option
judging, expert routing, factuality, critique writing, critique validation) at a laptop's width
(1366 px) and a phone's (390 px), captured from headless Chromium on small hand-written studies.

    python docs/img/study_screenshots.py

Writes docs/img/study-<task>-<width>.png."""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
IMG = REPO / "docs" / "img"
CHROMIUM = "/usr/bin/chromium"
WIDTHS = {1366: 900, 390: 844}  # width -> height of the window


def _studies(tmp: Path) -> dict[str, Any]:
    """task -> its study store, each in its own folder of ``tmp``."""
    sys.path.insert(0, str(REPO))
    from fastapi.testclient import TestClient

    from seerbench.study import create_app, create_study, export_rows, load_manifest, write_export
    from tests.study.conftest import base_manifest, question
    from tests.study.test_critique_study import critique_manifest, critiqued_answers, write_critiques

    stores: dict[str, Any] = {}

    def make(task: str, manifest: dict[str, Any], questions: list[dict[str, Any]] | None = None) -> Any:
        d = tmp / task
        d.mkdir()
        if questions is not None:
            (d / "items.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
        stores[task] = create_study(load_manifest(manifest), d / "study.sqlite", base_dir=d)
        return stores[task]

    qs = [question(f"q{i}", "AB"[i % 2]) for i in range(4)]
    make("two_option", base_manifest(conditions=["PSA"], time_limit_s=None), qs)
    three = [
        {
            "id": f"e{i}",
            "text": f"Which city is the capital of country {i + 1}?",
            "answer_cases": [
                {"short": "A", "long": "Orvel", "value": 1.0},
                {"short": "B", "long": "Kavo", "value": 0.0},
                {"short": "C", "long": "Tessa", "value": 0.0},
            ],
        }
        for i in range(4)
    ]
    make("expert_routing", base_manifest(task="expert_routing", conditions=["Q"], time_limit_s=None), three)
    facts = [
        {
            "id": f"f{i}",
            "text": f"Strawberries are a good source of vitamin C (sentence {i + 1}).",
            "answer_cases": [
                {"short": "accurate", "long": "Accurate", "value": 1.0},
                {"short": "inaccurate", "long": "Not accurate", "value": 0.0},
            ],
            "metadata": {
                "assistance": {
                    "evidence": ["USDA: 58.8 mg of vitamin C per 100 g of raw strawberries."],
                    "judgments": "Accurate",
                    "confidence": "high (95%)",
                }
            },
        }
        for i in range(4)
    ]
    make(
        "factuality",
        base_manifest(
            task="factuality",
            conditions=[{"name": "evidence", "assistance": ["evidence", "judgments", "confidence"]}],
            time_limit_s=None,
        ),
        facts,
    )
    d = tmp / "critique"
    d.mkdir()
    write_critiques(d / "critiques.jsonl", critiqued_answers())
    crit = create_study(
        load_manifest(
            critique_manifest(conditions=["misleading.assist"], tasks_per_rater=2, ratings_per_item=4)
        ),
        d / "study.sqlite",
        base_dir=d,
    )
    stores["critique"] = crit
    # validation: the critiques some raters wrote in the critique study, marked valid or not
    c = TestClient(create_app(crit))
    for n in range(2):
        c.cookies.clear()
        r = c.get(f"/start?PROLIFIC_PID=w{n}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
        r = c.post("/tutorial", data={"csrf": csrf, "q0": "0"}) if "/tutorial" in str(r.url) else r
        while "/task/" in str(r.url):
            aid = str(r.url).rsplit("/", 1)[-1]
            form = {"csrf": csrf, "n_rows": "1", "likert": "2", "action": "submit"}
            form.update(c0_text="The number is wrong: the passage says 4,200.", c0_severity="critical")
            form.update(c0_category="accuracy")
            r = c.post(f"/task/{aid}/submit", data=form)
            r = c.get("/next")
    write_export(export_rows(crit), d / "written.jsonl")
    (d / "val.yaml").write_text(
        "name: critique-validation\ntask: validation\n"
        "items:\n  - {judgments: written.jsonl, critiques: critiques.jsonl}\n"
        "conditions: [{name: validation}]\nratings_per_item: 1\ntasks_per_rater: 3\ncompletion_code: VAL1\n"
    )
    stores["validation"] = create_study(d / "val.yaml", d / "val.sqlite")
    return stores


def main() -> None:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(REPO))
    from tests.study.conftest import LiveServer

    with tempfile.TemporaryDirectory() as t, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        for task, store in _studies(Path(t)).items():
            with LiveServer(store) as srv:
                for width, height in WIDTHS.items():
                    ctx = browser.new_context(viewport={"width": width, "height": height})
                    page = ctx.new_page()
                    page.goto(f"{srv.url}/start?PROLIFIC_PID=shot{width}")
                    if "/tutorial" in page.url:
                        page.check("input[name=q0][value='0']")
                        page.click("button[type=submit]")
                    if page.locator("#start-timer").count():
                        page.click("#start-timer")
                    page.wait_for_load_state("networkidle")
                    out = IMG / f"study-{task}-{width}.png"
                    page.screenshot(path=str(out))
                    print(f"{out.relative_to(REPO)}: {out.stat().st_size // 1024} KB")
                    ctx.close()
        browser.close()


if __name__ == "__main__":
    main()
