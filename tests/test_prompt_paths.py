"""Renders reuse where a template was found (issue 27: no path work per prompt), yet a run still
renders the files its recorded hashes came from, and the cache follows its configured place."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from seerbench.config import CACHE_DIR_ENV
from seerbench.models._cache import default_cache
from seerbench.prompts import PROMPTS_DIR, render, template_hashes


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_an_override_added_later_is_used_from_the_next_hashes_on(tmp_path: Path) -> None:
    builtin = (PROMPTS_DIR / "judge_system.txt").read_text()
    assert render("judge_system", tmp_path) == builtin.strip()
    (tmp_path / "judge_system.txt").write_text("an override")
    # what a run does first: hash the templates as the folder resolves them, then render
    assert template_hashes(tmp_path)["judge_system"] == _h("an override")
    assert render("judge_system", tmp_path) == "an override"


def test_a_removed_override_falls_back_to_the_built_in_template(tmp_path: Path) -> None:
    (tmp_path / "judge_system.txt").write_text("an override")
    assert template_hashes(tmp_path)["judge_system"] == _h("an override")
    assert render("judge_system", tmp_path) == "an override"
    (tmp_path / "judge_system.txt").unlink()
    assert render("judge_system", tmp_path) == (PROMPTS_DIR / "judge_system.txt").read_text().strip()


def test_the_default_cache_follows_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "one"))
    one = default_cache()
    assert default_cache() is one and one.path == tmp_path / "one" / "cache.sqlite"
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "two"))
    assert default_cache().path == tmp_path / "two" / "cache.sqlite"
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "one"))
    assert default_cache() is one
