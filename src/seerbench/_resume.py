"""Resumable output folders of the commands that write one JSON line per item (``seerbench rate``:
``ratings.jsonl``, ``seerbench critique``: ``critiques.jsonl``).

The rules, one place for both:

- a folder belongs to one config: its fingerprint is recorded in a small JSON file beside the
  lines, and a folder holding finished lines of another config is refused (one with no finished
  line yet is taken over);
- finished lines are kept across runs, also those a smaller ``limit`` leaves out this time (a
  rerun never deletes work), and a torn last line (what a crash leaves) is dropped;
- the file is rewritten atomically (temporary file, then rename), in the dataset's order.

The lines themselves are read and written by the record store, :mod:`seerbench.store`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from seerbench.errors import ConfigError
from seerbench.store import atomic_write_text, keyed_lines


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
    if keyed_lines(out / lines_name, key):
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
    atomic_write_text(meta, json.dumps({**record, "fingerprint": fingerprint}, indent=2) + "\n")


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
