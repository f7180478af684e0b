"""Tables on a narrow terminal: the names people copy (a protocol folder into ``--baseline``, a cell
key) are never broken across lines, whatever the width (cli._common.WholeNames). A real run of
scripted models (tests/test_export.py's), its stats printed by the CLI at 80 columns and less."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table

from seerbench.analysis.run import summarize_run
from seerbench.cli._common import WholeNames, _shrink, console
from seerbench.cli._run import stats_table
from tests.test_cli_global import run_main
from tests.test_export import make_run

TOOLS = {"none", "calculator"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("narrow") / "out")


def _render(what: WholeNames, width: int) -> list[str]:
    out = io.StringIO()
    what.print(Console(file=out, width=width, color_system=None))
    return out.getvalue().splitlines()


def _whole(lines: list[str], *names: str) -> bool:
    """Some line holds every one of ``names`` whole."""
    return any(all(n in ln for n in names) for ln in lines)


def _stats_cli(run_dir: Path, width: int, *args: str, **kw: Any) -> list[str]:
    capsys, monkeypatch = kw["capsys"], kw["monkeypatch"]
    monkeypatch.setenv("COLUMNS", str(width))  # so the CLI keeps the console's width
    monkeypatch.setattr(console, "width", width)
    code, out, _ = run_main(["stats", str(run_dir), *args], capsys, monkeypatch)
    assert code == 0, out
    return out.splitlines()


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("width", [80, 60, 40])
def test_the_stats_table_never_breaks_a_name(run_dir: Path, width: int, wide: bool) -> None:
    cells = summarize_run(run_dir)["cells"]
    assert {c["protocol"] for c in cells} >= {"RandomConsultancy_t1", "Consultancy_t1", "NaiveJudge"}
    lines = _render(stats_table(cells, title=str(run_dir), wide=wide), width)
    for c in cells:  # each row's protocol and tools, whole, on one line (its row, or its key line)
        tools = "+".join(c["tools"]) or "none"
        assert _whole(lines, f" {c['protocol']} ", f" {tools}"), (c["protocol"], tools, "\n".join(lines))
    # no part of a name on a line of its own, as rich's wrapping leaves it ("RandomConsultancy_" / "t1")
    assert not [ln for ln in lines if "RandomConsultancy_" in ln and "RandomConsultancy_t1" not in ln]
    assert not [ln for ln in lines if ln.strip("│ ") in ("t1", "_t1")], "\n".join(lines)
    # the numbers are whole too: no interval bound cut mid-number
    assert not [ln for ln in lines if ln.rstrip(" │").endswith(("[-", "[0.", "-0."))], "\n".join(lines)
    table = [ln for ln in lines if ln[:1] in "┏┃┡│└"]
    assert table and max(len(ln) for ln in table) <= width


def test_at_80_columns_the_names_stay_in_the_table(run_dir: Path) -> None:
    """The plain table fits 80 columns with its names whole: no key; the intervals wrap at spaces."""
    cells = summarize_run(run_dir)["cells"]
    lines = _render(stats_table(cells, title="t"), 80)
    header = next(ln for ln in lines if "protocol" in ln)
    assert "tools" in header and "#" not in header
    assert _whole(lines, "│ RandomConsultancy_t1 │ calculator │")
    assert max(len(ln) for ln in lines) <= 80


def test_too_narrow_the_names_leave_the_table_for_a_numbered_key(run_dir: Path) -> None:
    cells = summarize_run(run_dir)["cells"]
    lines = _render(stats_table(cells, title="t"), 40)
    header = next(ln for ln in lines if "┃" in ln)
    assert "#" in header and "protocol" not in header and "accuracy" in header
    key_head = lines.index(next(ln for ln in lines if ln.split() == ["#", "protocol", "tools"]))
    key = [ln.split() for ln in lines[key_head + 1 :]]
    want = [[str(i + 1), c["protocol"], "+".join(c["tools"]) or "none"] for i, c in enumerate(cells)]
    assert key == want
    # row i of the table is cell i: its n
    rows = [ln for ln in lines if ln.startswith("│") and ln.split("│")[1].strip()]
    assert [r.split("│")[1].strip() for r in rows] == [str(i + 1) for i in range(len(cells))]
    assert [r.split("│")[2].strip() for r in rows] == [str(c["n_scored"]) for c in cells]


def test_paired_differences_keep_full_cell_keys_on_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the CLI at 80 columns: the cell keys (83 characters, wider than the terminal) are
    printed whole, a line each, never wrapped or cut by rich."""
    summary = summarize_run(run_dir, baseline="Consultancy_t1")
    assert summary["paired"]
    lines = _stats_cli(run_dir, 80, "--baseline", "Consultancy_t1", capsys=capsys, monkeypatch=monkeypatch)
    keys = {c["cell"] for c in summary["paired"]} | {c["baseline_cell"] for c in summary["paired"]}
    assert max(len(k) for k in keys) > 80
    for k in keys:
        assert _whole(lines, k), k
    for c in summary["cells"]:
        assert _whole(lines, f" {c['protocol']} ")


def test_the_stats_command_at_80_columns(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _stats_cli(run_dir, 80, "--wide", capsys=capsys, monkeypatch=monkeypatch)
    header = next(ln for ln in lines if "┃" in ln)
    assert all(h in header for h in ("JSE_b1(log)", "ASE_b1(log)", "accuracy")), header
    cells = summarize_run(run_dir)["cells"]
    for c in cells:
        assert _whole(lines, f" {c['protocol']} ", f" {'+'.join(c['tools']) or 'none'}")


def test_a_name_wider_than_the_terminal_is_printed_whole() -> None:
    t = Table(title="t")
    for col in ("cell", "n"):
        t.add_column(col)
    name = "Protocol_t1/A_" + "x" * 90
    t.add_row(name, "3")
    lines = _render(WholeNames(t, names=1), 60)
    assert _whole(lines, name) and [ln.split() for ln in lines if name in ln] == [["1", "cell", name]]


def test_shrink() -> None:
    assert _shrink([10, 20, 5], [10, 7, 5], 35) == [10, 20, 5]  # fits as it is
    assert _shrink([10, 20, 12], [10, 7, 8], 30) == [10, 10, 10]  # the widest first, never under least
    assert _shrink([10, 20, 12], [10, 7, 8], 25) == [10, 7, 8]
    assert _shrink([10, 20, 12], [10, 7, 8], 24) is None
