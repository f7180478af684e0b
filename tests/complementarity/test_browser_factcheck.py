"""The factuality page in headless Chromium with items made from the AI rater's run folder: in each
of seed 000's assistance conditions the page shows exactly that condition's parts, with the
rater's trace in them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from seerbench.factcheck import rate
from seerbench.factcheck._study import ASSISTANCE_CONDITIONS
from seerbench.study import create_study
from tests.complementarity.test_factcheck_study import manifest
from tests.complementarity.test_rater import _config
from tests.study.conftest import LiveServer
from tests.study.test_browser import ARGS, CHROMIUM

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"
    ),
]

#: Text each part shows for sentence s1 (worked out from the scripted samples in test_rater.py).
EXPECTED_TEXT = {
    "search_results": 'Search: "Quorvel"',
    "evidence": '[E1] Quorvel (Almanac) <>: "Quorvel was founded in 1850."',
    "reasoning": "Claim 1: Quorvel was founded in 1850. | The almanac gives 1850 (E1).",
    "judgments": "Overall: accurate",
    "confidence": "Model confidence: medium (75%)",
    "two_sided": "Against (not accurate)",
}


@pytest.fixture
def rated(tmp_path: Path) -> Path:
    """The scripted rater's run folder (made before the browser's event loop starts), and a copy
    holding sentence s1 alone (so every rater gets s1)."""
    asyncio.run(rate(_config(tmp_path)))
    lines = (tmp_path / "run" / "ratings.jsonl").read_text().splitlines()
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "ratings.jsonl").write_text(lines[0] + "\n")
    assert '"item_id": "s1"' in lines[0]
    return tmp_path


@pytest.fixture
def browser() -> Any:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def test_each_condition_shows_exactly_its_parts(rated: Path, browser: Any) -> None:
    from playwright.sync_api import expect

    tmp_path = rated
    for n, (cond, parts) in enumerate(ASSISTANCE_CONDITIONS.items()):
        m = manifest(conditions=[cond], tasks_per_rater=1, items=[{"ratings": "run1", "max_confidence": 0.8}])
        (tmp_path / "study.yaml").write_text(yaml.safe_dump(m))
        store = create_study(tmp_path / "study.yaml", tmp_path / f"s{n}.sqlite")
        with LiveServer(store) as srv:
            ctx = browser.new_context(viewport={"width": 1000, "height": 800})
            page = ctx.new_page()
            page.goto(f"{srv.url}/start?PROLIFIC_PID=r{n}")
            page.check("input[name=q0][value='0']")
            page.click("#quiz-submit")
            text = page.locator("#question").inner_text()
            assert "Quorvel was founded in 1850." in text, text
            ids = page.eval_on_selector_all("details.assist-part", "els => els.map(e => e.id)")
            assert ids == [f"assist-{p}" for p in parts], (cond, ids)
            if not parts:
                expect(page.locator("#assistance")).to_have_count(0)
            for p in parts:
                part = page.locator(f"#assist-{p}")
                part.locator("summary").click()
                expect(part).to_contain_text(EXPECTED_TEXT[p])
            ctx.close()
        store.close()
