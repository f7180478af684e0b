"""Remake the screenshots docs/report.md shows: a scripted run and a small study, their reports,
and each figure (and the transcript browser) captured from headless Chromium.

    python docs/img/report_screenshots.py

Writes docs/img/report-*.png (each under 150 KB)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IMG = REPO / "docs" / "img"
CHROMIUM = "/usr/bin/chromium"


def make_run(tmp: Path) -> Path:
    from seerbench.experiment import Experiment, ExperimentConfig

    cfg = ExperimentConfig.parse({
        "name": "report-demo", "dataset": {"name": "arithmetic", "n": 60, "seed": 0},
        "judge_models": ["scripted:coin"], "agent_models": ["scripted:coin", "scripted:echo"],
        "protocols": ["NaiveJudge", "Consultancy", "SimultaneousDebate"], "best_of_n": [1, 2, 4],
        "elicitation": {"order": ["vote"], "vote_samples": 5}, "agent_generation": {"temperature": 0.8},
        "n_boot": 500, "out": str(tmp / "report-demo"),
    })
    Experiment(cfg).run()
    return tmp / "report-demo"


def make_study(tmp: Path) -> Path:
    sys.path.insert(0, str(REPO))
    from seerbench.study import create_study, load_manifest
    from tests.study.conftest import FakeClock, base_manifest, question

    qs = [question(f"q{i}", "AB"[i % 2]) for i in range(12)]
    (tmp / "items.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    db = tmp / "study.sqlite"
    store = create_study(load_manifest(base_manifest(catch_rate=0.3, catch_min=1, tasks_per_rater=4)), db, base_dir=tmp)
    clock = FakeClock()
    store.clock = clock
    for n in range(20):
        rid = str(store.rater_for(f"prolific:r{n}", "prolific")["id"])
        task, _ = store.next_assignment(rid)
        while task is not None:
            store.start_timer(task.id, rid)
            clock.advance(15 + 7 * (n % 5))
            store.submit(task.id, rid, {"answer": "A" if n % 3 else "B", "probability": 0.7})
            task, _ = store.next_assignment(rid)
    store.close()
    return db


def shoot(html: Path, prefix: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"], headless=True)
        page = b.new_context(viewport={"width": 1000, "height": 800}, offline=True).new_page()
        page.goto(html.resolve().as_uri())
        seen: set[str] = set()
        figs = page.locator(".fig")
        for i in range(figs.count()):
            name = str(figs.nth(i).get_attribute("data-figure"))
            if name in seen:
                continue
            seen.add(name)
            figs.nth(i).locator("svg").screenshot(path=str(IMG / f"{prefix}-{name}.png"))
        if page.locator("#browser").count():
            page.select_option("#tb-protocol", "Consultancy_t1")
            page.evaluate("() => window.scrollTo(0, document.getElementById('browser').offsetTop)")
            box = page.locator("#browser").bounding_box()  # in the viewport, after the scroll
            assert box is not None
            page.screenshot(path=str(IMG / f"{prefix}-browser.png"),
                            clip={"x": box["x"], "y": box["y"], "width": box["width"], "height": 620})
        b.close()


def main() -> None:
    from seerbench.report import build_report, build_study_report

    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        run = make_run(tmp)
        db = make_study(tmp)
        shoot(build_report([run], tmp / "run.html"), "report")
        shoot(build_study_report(db, tmp / "study.html"), "report")
    for png in sorted(IMG.glob("report-*.png")):
        print(f"{png.relative_to(REPO)}  {png.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
