"""Options every command takes (--version, -h, -v/-q, --log-file, --prices, shell completion) and
the entry point's error handling: a user's mistake is one line and exit 2, a bug a traceback."""

from __future__ import annotations

import errno
import importlib.metadata
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import seerbench.cli._models as cli_models
from seerbench.cli import app, main, user_os_error
from seerbench.cli._common import NORMAL, QUIET, VERBOSE, configure_logging, quiet, verbose
from seerbench.errors import AuthenticationError
from seerbench.models import _usage as usage_mod
from seerbench.models import register_scripted
from seerbench.models._registry import make_backend
from seerbench.models._usage import Price, PriceTable, UsageTracker

runner = CliRunner()


def run_main(
    argv: Sequence[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """Run the console script's entry point as `seerbench ARGV`: (exit status, stdout, stderr)."""
    monkeypatch.setattr("sys.argv", ["seerbench", *argv])
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main()
    out, err = capsys.readouterr()
    code = e.value.code
    return (code if isinstance(code, int) else 0 if code is None else 1), out, err


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    configure_logging(NORMAL)


# -- --version, -h, completion ----------------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run_main(["--version"], capsys, monkeypatch)
    assert (code, out, err) == (0, f"seerbench {importlib.metadata.version('seerbench')}\n", "")


def _command_paths(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    if isinstance(getattr(cmd, "commands", None), dict):  # a group (typer vendors its own click)
        for name, sub in cmd.commands.items():
            paths += _command_paths(sub, (*path, name))
    return paths


def test_h_is_help_on_every_command() -> None:
    paths = _command_paths(typer.main.get_command(app))
    assert ("export",) in paths and ("cache", "clear") in paths and ("datasets", "show") in paths
    for path in paths:
        long = runner.invoke(app, [*path, "--help"], terminal_width=100)
        short = runner.invoke(app, [*path, "-h"], terminal_width=100)
        assert long.exit_code == 0 and short.exit_code == 0, (path, short.output)
        assert "Usage: seerbench" in short.stdout
        assert short.stdout == long.stdout, path


def test_a_groups_help_gives_each_command_its_first_paragraph_on_one_line() -> None:
    import inspect

    root = typer.main.get_command(app)
    for path in [p for p in _command_paths(root) if len(p) <= 1]:
        group: Any = root
        for name in path:
            group = group.commands[name]
        if not isinstance(getattr(group, "commands", None), dict):
            continue
        out = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "1000"}).stdout
        for name, cmd in group.commands.items():
            if getattr(cmd, "commands", None) is not None:
                continue  # a sub-group: its own help= line
            summary = " ".join(inspect.cleandoc(cmd.help).split("\n\n")[0].split())  # its docstring's
            row = next(ln for ln in out.splitlines() if ln.strip(" │").startswith(name + " "))
            assert summary in row, (path, name, row)


def test_every_option_says_what_it_does() -> None:
    for path in _command_paths(typer.main.get_command(app)):
        cmd: Any = typer.main.get_command(app)
        for name in path:
            cmd = cmd.commands[name]
        for param in cmd.params:
            if param.param_type_name == "option" and not param.hidden:
                assert param.help, (path, param.opts)


def test_usage_lines_and_errors_name_arguments_in_capitals() -> None:
    r = runner.invoke(app, ["run", "-h"], terminal_width=200)
    assert "Usage: seerbench run [OPTIONS] CONFIG" in r.stdout and "{config}" not in r.stdout
    r = runner.invoke(app, ["report", "-h"], terminal_width=200)
    assert "Usage: seerbench report [OPTIONS] [RUN_DIRS]..." in r.stdout, r.stdout


def test_root_help_lists_global_options_and_completion() -> None:
    r = runner.invoke(app, ["--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    for opt in (
        "--version",
        "--verbose",
        "-v",
        "--quiet",
        "-q",
        "--log-file",
        "--cache-dir",
        "--prices",
        "--install-completion",
        "--show-completion",
        "-h",
    ):
        assert opt in r.stdout, opt


def test_show_completion_prints_a_bash_script(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the shell from the argument, not detected from the parent process (none under nohup or a
    # daemonised CI runner: typer then says "Shell  not supported")
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    code, out, err = run_main(["--show-completion", "bash"], capsys, monkeypatch)
    assert code == 0, err
    assert "complete -o default -F _seerbench_completion seerbench" in out
    assert "_SEERBENCH_COMPLETE=complete_bash" in out


# -- -v / -q / --log-file ---------------------------------------------------------------------------


def test_configure_logging_levels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = logging.getLogger("seerbench.test_global")
    log_file = tmp_path / "run.log"

    def emit() -> str:
        capsys.readouterr()
        log.debug("d-msg")
        log.info("i-msg")
        log.warning("w-msg")
        log.error("e-msg")
        return capsys.readouterr().err

    configure_logging(NORMAL)
    assert emit() == "warning: w-msg\nerror: e-msg\n"
    assert not quiet() and not verbose()
    configure_logging(QUIET, log_file)
    assert emit() == "error: e-msg\n"
    assert quiet() and not verbose()
    # the file gets info and up whatever stderr shows
    text = log_file.read_text()
    assert "i-msg" in text and "w-msg" in text and "e-msg" in text and "d-msg" not in text
    configure_logging(VERBOSE, log_file)
    err = emit()
    assert (
        all(m in err for m in ("d-msg", "i-msg", "w-msg", "e-msg")) and "DEBUG seerbench.test_global" in err
    )
    assert verbose() and not quiet()
    assert log_file.read_text().count("d-msg") == 1  # appended, debug now included
    # a second call replaced the handlers: one copy of each record
    assert err.count("w-msg") == 1
    configure_logging(NORMAL)
    assert "d-msg" not in emit()


def test_global_flags_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log_file = tmp_path / "cli.log"
    code, out, err = run_main(["-v", "--log-file", str(log_file), "models", "--json"], capsys, monkeypatch)
    assert code == 0 and out.lstrip().startswith("[")
    assert "DEBUG seerbench.cli: seerbench" in err and "argv ['-v', '--log-file'" in err
    assert "DEBUG seerbench.cli" in log_file.read_text()
    code, _, err = run_main(["-q", "models", "--json"], capsys, monkeypatch)
    assert code == 0 and err == ""
    assert quiet()
    code, _, err = run_main(["models", "--json"], capsys, monkeypatch)
    assert code == 0 and err == "" and not quiet()


def test_verbose_and_quiet_exclude_each_other(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_main(["-v", "-q", "models"], capsys, monkeypatch)
    assert code == 2 and "exclude each other" in one_line_error(err)


def test_unwritable_log_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, _, err = run_main(["--log-file", str(blocker / "x.log"), "models"], capsys, monkeypatch)
    assert code == 2 and f"--log-file {blocker / 'x.log'}: cannot open it for writing" in one_line_error(err)


# -- OS errors: the user's paths are one line, anything else a traceback -------------------------------


def test_user_os_error_messages(tmp_path: Path) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("x")
    assert user_os_error(NotADirectoryError(errno.ENOTDIR, "Not a directory", str(blocker / "d" / "x"))) == (
        f"{blocker / 'd' / 'x'}: {blocker} is a file, not a folder"
    )
    assert (
        user_os_error(FileExistsError(errno.EEXIST, "File exists", str(blocker)))
        == f"{blocker} is a file, not a folder"
    )
    assert (
        user_os_error(NotADirectoryError(errno.ENOTDIR, "Not a directory", "/a/f/x"))
        == "/a/f/x: Not a directory"
    )
    assert user_os_error(PermissionError(errno.EACCES, "Permission denied", "/r")) == "/r: Permission denied"
    assert (
        user_os_error(OSError(errno.EXDEV, "Invalid cross-device link", "/a", "/b")) is None
    )  # not the user's doing
    assert (
        user_os_error(FileExistsError(errno.EEXIST, "File exists", "/a", None, "/b"))
        == "/a -> /b: File exists"
    )
    assert user_os_error(OSError(errno.EIO, "Input/output error", "/dev/x")) is None
    assert user_os_error(PermissionError(errno.EACCES, "Permission denied")) is None  # names no path


def test_os_error_about_a_path_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real one: converting a dataset to a path under a file."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"question": "1 + 1?", "options": ["2", "3"], "answer": 0}\n')
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, _, err = run_main(
        ["datasets", "convert", "generic", str(src), str(blocker / "out.jsonl")], capsys, monkeypatch
    )
    assert code == 2, err
    assert one_line_error(err) == f"error: {blocker} is a file, not a folder"


def test_os_error_raised_inside_a_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied() -> None:
        raise PermissionError(errno.EACCES, "Permission denied", "/srv/out/results.jsonl")

    monkeypatch.setattr(cli_models, "list_backends", denied)
    code, _, err = run_main(["models"], capsys, monkeypatch)
    assert code == 2 and one_line_error(err) == "error: /srv/out/results.jsonl: Permission denied"


def test_bugs_keep_their_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def io_error() -> None:
        raise OSError(errno.EIO, "Input/output error")

    def bug() -> None:
        raise KeyError("oops")

    # a bug shows its traceback and exits 3: never taken for a partial run (1) or a user error (2)
    monkeypatch.setattr(cli_models, "list_backends", io_error)
    code, _, err = run_main(["models"], capsys, monkeypatch)
    assert code == 3 and "Traceback" in err and "OSError: [Errno 5] Input/output error" in err
    assert err.strip().splitlines()[-1].startswith("internal error: ")
    monkeypatch.setattr(cli_models, "list_backends", bug)
    code, _, err = run_main(["models"], capsys, monkeypatch)
    assert code == 3 and "KeyError: 'oops'" in err


# -- prices -----------------------------------------------------------------------------------------


def test_a_price_for_local_applies() -> None:
    # 2M prompt tokens at $1/Mtok + 1M completion tokens at $3/Mtok = $5
    t = UsageTracker(PriceTable({"local": Price(1.0, 3.0)}))
    t.record_call("local", 2_000_000, 1_000_000)
    assert t.by_model["local"].cost == pytest.approx(5.0)
    # unpriced local and scripted models still cost nothing; other unpriced ones are unknown
    assert PriceTable().cost("local:/m.gguf", 10, 10) == 0.0
    assert PriceTable().cost("scripted:x", 10, 10) == 0.0
    assert PriceTable().cost("openai/m", 10, 10) is None


def test_price_lookup_and_unmatched_entries() -> None:
    table = PriceTable(
        {"openai/gpt-4o": Price(2.0, 8.0), "openai/gpt-4o-mnii": Price(1.0, 1.0), "local": Price(0.5, 0.5)}
    )
    # a server-qualified spec falls back to the model's entry: 1M prompt tokens at $2
    assert table.cost("openai/gpt-4o@http://127.0.0.1:8000/v1", 1_000_000, 0) == pytest.approx(2.0)
    assert table.unmatched(
        ["openai/gpt-4o@http://127.0.0.1:8000/v1", "openai/gpt-4o-mini", "scripted:x"]
    ) == ["openai/gpt-4o-mnii", "local"]
    assert table.unmatched([]) == list(table.prices)


def test_price_table_file_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_main(["--prices", str(tmp_path / "none.yaml"), "models"], capsys, monkeypatch)
    assert (
        code == 2
        and one_line_error(err)
        == f"error: price table {tmp_path / 'none.yaml'} (from --prices) does not exist"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("local: {prompt: cheap, completion: 1}\n")
    code, _, err = run_main(["--prices", str(bad), "models"], capsys, monkeypatch)
    assert code == 2 and "entry 'local': prompt and completion must be numbers" in one_line_error(err)
    bad.write_text("local: [unclosed\n")
    code, _, err = run_main(["--prices", str(bad), "models"], capsys, monkeypatch)
    assert code == 2 and "is not valid YAML" in one_line_error(err)
    bad.write_text("local: {prompt: 1, completion: 2}\nlocal: {prompt: 0, completion: 0}\n")
    code, _, err = run_main(["--prices", str(bad), "models"], capsys, monkeypatch)
    assert code == 2 and "key 'local' is written twice (first at line 1)" in one_line_error(err)


def _cheap(messages: object, config: object, seed: int | None) -> str:
    return "A"


register_scripted("global-price", _cheap, replace=True)


@pytest.fixture
def fresh_tracker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process whose default usage tracker has not been made yet, with no price table set."""
    monkeypatch.setattr(usage_mod, "_default_tracker", None)
    # setenv first, so that the variable --prices sets is undone after the test
    monkeypatch.setenv(usage_mod.PRICES_ENV, "")
    monkeypatch.delenv(usage_mod.PRICES_ENV)


@pytest.mark.usefixtures("fresh_tracker")
def test_prices_option_prices_calls_and_warns_about_unused_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "scripted:global-price: {prompt: 1000, completion: 3000}\n"
        "openai/gpt-4o-mnii: {prompt: 1, completion: 1}\n"
    )
    # no model used: nothing to warn about
    code, _, err = run_main(["--prices", str(prices), "models"], capsys, monkeypatch)
    assert code == 0 and err == ""
    code, _, err = run_main(
        ["--prices", str(prices), "ask", "--model", "scripted:global-price", "Pick A or B.", "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    u = usage_mod.default_tracker().by_model["scripted:global-price"]
    assert u.calls >= 1 and u.prompt_tokens > 0
    # $1000 and $3000 per million tokens
    assert u.cost is not None and u.cost > 0
    assert u.cost == pytest.approx(u.prompt_tokens * 1000e-6 + u.completion_tokens * 3000e-6)
    warning = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert len(warning) == 1 and "'openai/gpt-4o-mnii'" in warning[0] and "global-price" not in warning[0]
    assert usage_mod.os.environ[usage_mod.PRICES_ENV] == str(prices)
    # every entry used: no warning
    prices.write_text("scripted:global-price: {prompt: 1000, completion: 3000}\n")
    code, _, err = run_main(
        ["--prices", str(prices), "ask", "--model", "scripted:global-price", "Pick A or B.", "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0 and "warning" not in err


# -- the OpenAI key message ---------------------------------------------------------------------------


def test_missing_openai_key_names_the_model(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(AuthenticationError, match=r"^no API key for openai/gpt-4o-mini: set OPENAI_API_KEY"):
        make_backend("openai/gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "")  # set but empty is no key either
    with pytest.raises(AuthenticationError, match=r"openai/gpt-4o-mini@<base_url>"):
        make_backend("openai/gpt-4o-mini")
    code, _, err = run_main(["ask", "--model", "openai/gpt-4o-mini", "Pick A or B."], capsys, monkeypatch)
    assert code == 2 and one_line_error(err).startswith("error: no API key for openai/gpt-4o-mini: ")


def test_ctrl_c_says_what_was_kept_and_exits_130(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from seerbench.experiment import Experiment

    async def interrupted(self: Experiment, *args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Experiment, "arun", interrupted)
    cfg = tmp_path / "xp.yaml"
    cfg.write_text(
        f"name: k\ndataset: {{name: arithmetic, n: 2}}\njudge_models: [scripted:coin]\n"
        f"protocols: [NaiveJudge]\nout: {tmp_path / 'out'}\n"
    )
    code, _, err = run_main(["run", str(cfg)], capsys, monkeypatch)
    assert code == 130
    assert "interrupted: every finished question is saved; the same command resumes a run" in err
    assert "Traceback" not in err


def test_a_reader_that_goes_away_is_not_taken_for_failed_questions() -> None:
    """`seerbench ... | head -1`: the closed pipe exits 141 (what a shell reports for SIGPIPE),
    not 1, which means "some questions failed", and prints no traceback."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes a byte
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", "from seerbench.cli import main; main()", "--help"],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        check=False,
    )
    os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert "Traceback" not in proc.stderr


# -- output to a pipe ---------------------------------------------------------------------------------


def test_tables_on_a_pipe_keep_cell_names_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a pipe (no terminal, no COLUMNS) rich would lay tables out in 80 columns and break
    `Consultancy_t1` and `ASE_b1(log)` across lines; the CLI gives its consoles PIPE_WIDTH."""
    from seerbench.cli._common import PIPE_WIDTH
    from tests.test_export import make_run

    monkeypatch.delenv("COLUMNS", raising=False)
    run = make_run(tmp_path / "run")
    code, out, _ = run_main(["stats", "--wide", str(run)], capsys, monkeypatch)
    assert code == 0
    lines = out.splitlines()
    header = next(ln for ln in lines if "protocol" in ln)
    assert all(h in header for h in ("JSE_b1(log)", "ASE_b1(log)", "accuracy")), header
    assert any("RandomConsultancy_t1" in ln for ln in lines), out
    assert max(len(ln) for ln in lines) <= PIPE_WIDTH


def test_help_shows_no_type_for_flags(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flag takes no value: its help row has no `<bool>` (typer's own label), an option that
    takes one keeps its type."""
    monkeypatch.setenv("COLUMNS", "160")
    code, out, _ = run_main(["run", "--help"], capsys, monkeypatch)
    assert code == 0
    assert "<bool>" not in out
    dry_run = next(ln for ln in out.splitlines() if "--dry-run" in ln)
    assert dry_run.split("--dry-run")[1].split()[0] == "Show", dry_run
    assert "<int>" in next(ln for ln in out.splitlines() if "--limit" in ln)


@pytest.mark.parametrize(
    ("command", "option", "shown"),
    [
        ("stats", "--score", "[log|logodds|brier|accuracy]"),
        ("stats", "--parse-failures", "[exclude|half]"),
        ("run", "--executor", "[local|ray]"),
        ("export", "--format", "[csv|parquet|inspect|rewards]"),
        ("estimate", "--interval", "[score|wald]"),
        ("plan", "--score", "[log|logodds|brier|accuracy]"),
        ("report", "--critique", "<path>"),  # a repeatable option: its items' type, not <list[Path]>
        ("report", "RUN_DIRS...", "<path>"),
    ],
)
def test_help_shows_what_an_option_takes(
    command: str, option: str, shown: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_main([command, "--help"], capsys, monkeypatch)
    assert code == 0
    row = next(ln for ln in out.splitlines() if f" {option} " in ln)
    assert next(w for w in row.split(option)[1].split() if w[0] in "[<") == shown, row
    assert "<list[" not in out


@pytest.mark.parametrize(
    ("command", "argv", "said"),
    [
        ("stats", ["--score", "best"], "score must be one of log, logodds, brier, accuracy; got 'best'"),
        ("stats", ["--parse-failures", "all"], "parse failures must be 'exclude' or 'half'; got 'all'"),
        (
            "export",
            ["--format", "xlsx"],
            "--format must be one of csv, parquet, inspect, rewards; got 'xlsx'",
        ),
    ],
)
def test_a_value_outside_the_choices_is_the_commands_own_one_line_error(
    tmp_path: Path,
    command: str,
    argv: list[str],
    said: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The choices in the help are for show: the command checks the value, in one line."""
    from tests.test_export import make_run

    run = make_run(tmp_path / "run")
    code, _, err = run_main([command, str(run), *argv], capsys, monkeypatch)
    assert code == 2 and one_line_error(err) == f"error: {said}", err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["run", "cfg.yaml", "-q"],
            "-q is an option of seerbench itself, not of `run`: "
            "put it before the command (seerbench -q run ...)",
        ),
        (["stats", "runs/x", "--plugin", "p.py"], "(seerbench --plugin p.py stats ...)"),
        (["-v", "report", "r", "--cache-dir=/tmp/c"], "(seerbench --cache-dir=/tmp/c report ...)"),
    ],
)
def test_a_root_option_after_the_command_says_where_it_goes(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_main(argv, capsys, monkeypatch)
    assert code == 2 and said in one_line_error(err) and out == ""


def test_root_options_in_their_place_and_after_a_double_dash_are_left_alone(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from seerbench.cli import _misplaced_root_option

    assert _misplaced_root_option(["-q", "run", "cfg.yaml", "--limit", "2"]) is None
    assert _misplaced_root_option(["ask", "--", "-q"]) is None
    assert _misplaced_root_option(["nosuchcommand", "-q"]) is None  # click says what is wrong


# -- click's own refusals (unknown command or option, missing argument, bad value): one line too ---


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["bogus"], "No such command 'bogus'. (seerbench -h)"),
        (["stat", "runs/big"], "No such command 'stat'. Did you mean 'stats', 'estimate'? (seerbench -h)"),
        (
            ["stats", "runs/big", "--wid"],
            "No such option: --wid (Possible options: --wide) (seerbench stats -h)",
        ),
        (["stats"], "Missing argument 'RUN_DIR'. (seerbench stats -h)"),
        (["stats", "a", "b"], "Got unexpected extra argument(s) (b) (seerbench stats -h)"),
        (
            ["run", "x.yaml", "--limit", "abc"],
            "Invalid value for '--limit': Input should be a valid integer, unable to parse string as an "
            "integer (seerbench run -h)",
        ),
        (
            ["cache", "clear", "--jsn"],
            "No such option: --jsn (Possible options: --json, --yes) (seerbench cache clear -h)",
        ),
        (["--bogus"], "No such option: --bogus (Possible options: --verbose) (seerbench -h)"),
    ],
)
def test_a_command_line_click_refuses_is_one_line_with_where_the_help_is(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_main(argv, capsys, monkeypatch)
    assert (code, out) == (2, "") and one_line_error(err) == f"error: {said}"


def test_the_console_script_prints_a_usage_error_in_one_line() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src"), "COLUMNS": "60"}
    exe = Path(sys.executable).parent / "seerbench"
    p = subprocess.run([str(exe), "stat", "runs/big"], capture_output=True, text=True, timeout=120, env=env)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == "error: No such command 'stat'. Did you mean 'stats', 'estimate'? (seerbench -h)\n"


def test_no_command_prints_the_help_and_a_declined_confirmation_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_main([], capsys, monkeypatch)
    assert code == 2 and "Usage: seerbench [OPTIONS] COMMAND" in out and err == ""
    code, out, err = run_main(["cache"], capsys, monkeypatch)
    assert code == 2 and "Usage: seerbench cache [OPTIONS] COMMAND" in out and err == ""
    monkeypatch.setenv("SEERBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("n\n"))
    code, out, err = run_main(["cache", "clear"], capsys, monkeypatch)
    assert code == 1 and err == "Aborted!\n" and "Delete all entries in" in out
    assert "deleted" not in out


# -- a value a flag gave, refused by the config's validation, is the flag's --------------------------

EXAMPLES = Path(__file__).parents[1] / "examples"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--limit", "-1"], "--limit -1: must be 1 or more"),
        (["--concurrency", "0"], "--concurrency 0: must be 1 or more"),
        (
            ["--limit", "0", "--concurrency", "0"],
            "--limit 0: must be 1 or more; --concurrency 0: must be 1 or more",
        ),
    ],
)
def test_a_run_flags_refused_value_names_the_flag_not_the_config(
    tmp_path: Path,
    argv: list[str],
    said: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = tmp_path / "xp.yaml"
    cfg.write_text(
        f"name: k\ndataset: {{name: arithmetic, n: 2}}\njudge_models: [scripted:coin]\n"
        f"protocols: [NaiveJudge]\nout: {tmp_path / 'out'}\n"
    )
    code, out, err = run_main(["run", str(cfg), *argv], capsys, monkeypatch)
    assert (code, out) == (2, "") and one_line_error(err) == f"error: {said}"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["rate", "critique"])
def test_a_model_flag_refused_by_the_config_names_the_flag(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = EXAMPLES / ("factcheck.yaml" if command == "rate" else "critique.yaml")
    argv = [command, str(config), "--model", "", "--out", str(tmp_path / "o")]
    code, _, err = run_main(argv, capsys, monkeypatch)
    assert code == 2 and one_line_error(err) == "error: --model '': must not be empty"


def test_a_key_no_flag_set_is_still_the_configs() -> None:
    from seerbench.errors import ConfigError
    from seerbench.experiment import ExperimentConfig

    cfg = ExperimentConfig.parse(
        {"name": "k", "dataset": {"name": "arithmetic"}, "protocols": ["NaiveJudge"]}
    )
    with pytest.raises(ConfigError) as e:
        cfg.with_updates(flags={"limit": "--limit"}, limit=0, concurrency=0)
    assert str(e.value) == (
        "--limit 0: must be 1 or more; "
        "invalid config: concurrency: Input should be greater than or equal to 1 (got 0)"
    )
