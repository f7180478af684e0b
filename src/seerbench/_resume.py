"""Resumable output folders of the commands that write one JSON line per item (``seerbench rate``:
``ratings.jsonl``, ``seerbench critique``: ``critiques.jsonl``).

The rules, one place for both:

- a folder belongs to one config: its fingerprint is recorded in a small JSON file beside the
  lines, and a folder holding finished lines of another config is refused (one with no finished
  line yet is taken over);
- finished lines are kept across runs, also those a smaller ``limit`` leaves out this time (a
  rerun never deletes work), and a torn last line (what a crash leaves) is dropped;
- the file is rewritten atomically (temporary file, then rename), in the dataset's order.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from seerbench._lock import tmp_name
from seerbench.errors import ConfigError


def read_keyed_lines(path: Path, key: str) -> dict[str, str]:
    """The complete JSON lines of ``path`` by the value of ``key`` (the first line of an id wins;
    a line that does not parse, a torn last line among them, is dropped)."""
    done: dict[str, str] = {}
    if not path.is_file():
        return done
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            done.setdefault(str(json.loads(raw)[key]), raw)
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return done


def write_lines(path: Path, lines: Iterable[str]) -> None:
    """Replace ``path`` with ``lines`` (one per line) atomically: a crash leaves the old file or
    the new one, never half of it."""
    tmp = tmp_name(path)
    with open(tmp, "w", encoding="utf-8") as f:
        for ln in lines:
            f.write(ln + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def keep_in_order(path: Path, key: str, order: Iterable[str]) -> dict[str, str]:
    """Rewrite ``path`` with its finished lines in ``order`` (the ids of the whole dataset, past any
    limit), dropping lines of ids the dataset no longer has (an empty file when none). Returns the
    kept lines by id."""
    done = read_keyed_lines(path, key)
    kept = {k: done[k] for k in order if k in done}
    write_lines(path, kept.values())
    return kept


def claim_folder(
    out: Path,
    meta_name: str,
    lines_name: str,
    key: str,
    fingerprint: str,
    what: str,
    differ: str,
    record: dict[str, object],
) -> None:
    """Make ``out`` this config's folder: refuse it when it holds finished ``lines_name`` lines of
    another config (``what``: 'ratings'; ``differ``: which settings make a config another), then
    record ``record`` (with the fingerprint) in ``meta_name``."""
    out.mkdir(parents=True, exist_ok=True)
    meta = out / meta_name
    if read_keyed_lines(out / lines_name, key):
        if not meta.is_file():
            raise ConfigError(f"{out} has {lines_name} but no {meta_name}; give a new `out`")
        try:
            old = json.loads(meta.read_text(encoding="utf-8")).get("fingerprint")
        except (json.JSONDecodeError, AttributeError):
            old = None
        if old != fingerprint:
            raise ConfigError(
                f"{out} holds {what} made with another {meta_name.removesuffix('.json')} config ({differ} "
                "differ); give a new `out` or delete the folder"
            )
    write_lines(meta, [json.dumps({**record, "fingerprint": fingerprint}, indent=2)])


def content_id(path: str | Path) -> str:
    """What a config's input file contributes to its fingerprint: its bytes' hash, so the same
    file reached by another relative path (a run from another folder) is the same config, and an
    edited file is another. A path that is not a file stays as it is."""
    p = Path(path)
    if not p.is_file():
        return str(path)
    return "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest()[:16]


def config_path(base: Path, value: str) -> str:
    """A path from a config file, read from the config's folder, made absolute (so it means the
    same after a change of working directory; ``examples/../runs`` tidied)."""
    return os.path.abspath(base / Path(value).expanduser())
