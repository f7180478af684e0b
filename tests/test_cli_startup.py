"""Start-up imports (issue 27): `seerbench --version` imports no command, a command imports only
its own module, and the command table names every command the full application has."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import typer.main

from seerbench.cli import COMMAND_MODULES, _command_name, app

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _imported_after(argv: list[str]) -> tuple[str, set[str]]:
    code = (
        "import json, sys\n"
        f"sys.argv = ['seerbench', *{argv!r}]\n"
        "from seerbench.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    *text, mods = out.stdout.strip().splitlines()
    return "\n".join(text), set(json.loads(mods))


def test_the_command_table_names_every_command_of_the_application() -> None:
    group = typer.main.get_command(app)
    assert sorted(COMMAND_MODULES) == sorted(group.commands)  # type: ignore[attr-defined]


def test_the_command_name_is_the_first_word_after_the_root_options() -> None:
    assert _command_name(["run", "x.yaml"]) == "run"
    assert _command_name(["-v", "--cache-dir", "run", "stats", "out"]) == "stats"
    assert _command_name(["--cache-dir=c", "-q", "report", "out"]) == "report"
    assert _command_name(["--version"]) is None and _command_name([]) is None


def test_version_imports_no_command_and_no_scientific_library() -> None:
    text, mods = _imported_after(["--version"])
    assert text.startswith("seerbench ")
    # the application shell (seerbench.cli._app, its root options) but no command module
    assert not {m for m in mods if m.startswith("seerbench.cli._") and m != "seerbench.cli._app"}
    assert not mods & {"scipy", "numpy", "pydantic", "rich"}


def test_a_command_imports_its_own_module_only() -> None:
    text, mods = _imported_after(["run", "--help"])
    assert "Usage: seerbench run" in text
    # the shared helper _common (the one number/interval formatter is seerbench._format, below cli)
    shared = {"seerbench.cli._common"}
    assert {m for m in mods if m.startswith("seerbench.cli._") and m not in shared} <= {
        "seerbench.cli._app",
        "seerbench.cli._run",
        "seerbench.cli._pressure",
    }
    assert "seerbench.cli._estimate" not in mods


def test_help_still_lists_every_command() -> None:
    text, _ = _imported_after(["--help"])
    for name in COMMAND_MODULES:
        assert name in text
