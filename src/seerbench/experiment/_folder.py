"""An experiment's output folder: which folder can take a grid's results (per cell identity and per
question content), and the metadata a run records there (experiment.json, config.yaml, cell.json)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from seerbench._version import __version__
from seerbench.errors import ConfigError
from seerbench.experiment._config import ExperimentConfig, _hash
from seerbench.experiment._files import _diff_keys, _group, _legacy_fingerprint
from seerbench.experiment._grid import RunSpec
from seerbench.experiment._identity import prompt_hashes
from seerbench.experiment._questions import QuestionStore
from seerbench.provenance import describe_changes
from seerbench.store import RecordReader, atomic_write_text

#: A cell's identity (:meth:`seerbench.experiment.Experiment.cell_identity`).
Identity = Callable[[RunSpec], dict[str, Any]]


def _rescore_hint(problems: Sequence[str], out: Path) -> str:
    """When only scoring settings differ, say that stats rescores the stored results."""
    scoring = {"eps", "parse_failures"}
    diffs = [set(p.partition("differs in: ")[2].removesuffix(")").split(", ")) for p in problems]
    if not diffs or not all(d and d <= scoring for d in diffs):
        return ""
    return (
        f" eps and parse_failures only change scoring: `seerbench stats {out} --eps X "
        "--parse-failures half|exclude` rescores the stored results without a model call."
    )


def cell_conflicts(
    config: ExperimentConfig, out: Path, specs: Sequence[RunSpec], identity: Identity
) -> list[str]:
    """Why ``out`` cannot take this grid's results: cells whose recorded identity differs (what
    changed named: a keyword, or a user module's code, or a model's file)."""
    meta_path = out / "experiment.json"
    if not meta_path.exists():
        return []
    from seerbench.runs import read_experiment_json

    old = read_experiment_json(meta_path)
    if "cells" not in old:  # written by seerbench 0.1: one fingerprint for the whole config
        if old.get("fingerprint") != _legacy_fingerprint(config):
            diff = _diff_keys(old.get("config", {}), config.model_dump(mode="json"))
            return [f"the whole folder (differs in: {', '.join(diff) or 'unknown'})"]
        return []
    problems = []
    for spec in specs:
        cj = out / spec.protocol_dir / spec.pair_dir / "cell.json"
        if not cj.exists():
            continue
        try:
            rec = json.loads(cj.read_text())
        except (OSError, json.JSONDecodeError):
            problems.append(f"{spec.key} (its cell.json is unreadable)")
            continue
        ident = identity(spec)
        if rec.get("fingerprint") != _hash(ident):
            old_ident = rec.get("identity", {})
            diff = _diff_keys(
                {k: v for k, v in old_ident.items() if k not in ("code", "models")},
                {k: v for k, v in ident.items() if k not in ("code", "models")},
                nested=True,
            ) + describe_changes(old_ident, ident)
            problems.append(f"{spec.key} (differs in: {', '.join(diff) or 'unknown'})")
    return problems


def question_conflicts(
    out: Path, specs: Sequence[RunSpec], store: QuestionStore, identity: Identity
) -> list[str]:
    """Finished questions whose stored content differs from the dataset's question of that id
    (the cell's own lines only: a foreign line is done again, not compared)."""
    problems = []
    for spec in specs:
        path = out / spec.protocol_dir / spec.pair_dir / "results.jsonl"
        if not path.exists():
            continue
        bad = []
        own = RecordReader(path, "question_id", fingerprint=_hash(identity(spec)))
        for ln in own:  # one line at a time
            i = store.position.get(ln["question_id"])
            if i is not None and ln.get("question") != store.as_json(i):
                bad.append(ln["question_id"])
        if bad:
            more = " ..." if len(bad) > 3 else ""
            problems.append(f"{spec.key}: questions {', '.join(bad[:3])}{more} differ from the dataset's")
    return problems


def choose_out(
    config: ExperimentConfig,
    out: Path,
    specs: Sequence[RunSpec],
    store: QuestionStore,
    identity: Identity,
    *,
    new: bool = False,
) -> Path:
    """The folder this grid writes to: ``out`` when its results can be extended by this grid;
    with ``new``, the first of ``out``, ``out_2``, ``out_3``... that can (so a rerun with ``--new``
    resumes the folder it made last time)."""
    candidates = [out]
    if new:
        i = 2
        while Path(f"{out}_{i}").exists():
            candidates.append(Path(f"{out}_{i}"))
            i += 1
        candidates.append(Path(f"{out}_{i}"))
    for cand in candidates:
        problems = cell_conflicts(config, cand, specs, identity) or question_conflicts(
            cand, specs, store, identity
        )
        if not problems:
            return cand
        if not new:
            raise ConfigError(
                f"{cand} holds results this config would change: {_group(problems)}. Mixing them would be "
                "wrong: use --out NEW_DIR, or --new to write to (or resume) a fresh sibling folder. "
                "Adding cells or questions is fine." + _rescore_hint(problems, cand)
            )
    raise AssertionError("unreachable: the last candidate does not exist")


def write_metadata(
    config: ExperimentConfig,
    out: Path,
    specs: Sequence[RunSpec],
    identity: Identity,
    environment: dict[str, Any] | None = None,
) -> None:
    """Create ``out`` and record the config, the prompt hashes, the environment (package versions,
    git revisions: :func:`seerbench.provenance.environment`) and each cell's identity."""
    cells = {s.key: _hash(identity(s)) for s in specs}
    try:
        out.mkdir(parents=True, exist_ok=True)
        old_cells: dict[str, str] = {}
        meta_path = out / "experiment.json"
        if meta_path.exists():
            from seerbench.runs import read_experiment_json

            old_cells = dict(read_experiment_json(meta_path).get("cells") or {})
        meta = {
            "fingerprint": config.fingerprint(),
            "seerbench_version": __version__,
            "environment": environment or {},
            "config": config.model_dump(mode="json"),
            "prompts": prompt_hashes(config),
            "config_dir": str(config._base_dir.resolve()) if config._base_dir else None,
            "cells": {**old_cells, **cells},  # cells of earlier, smaller grids stay listed
        }
        atomic_write_text(meta_path, json.dumps(meta, indent=2))
        atomic_write_text(
            out / "config.yaml", yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
        )
        for s in specs:
            d = out / s.protocol_dir / s.pair_dir
            d.mkdir(parents=True, exist_ok=True)
            ident = identity(s)
            atomic_write_text(
                d / "cell.json",
                json.dumps({"cell": s.key, "fingerprint": _hash(ident), "identity": ident}, indent=2),
            )
    except OSError as e:
        raise ConfigError(
            f"cannot write the output folder {out}: {e.strerror or e} ({e.filename or out})"
        ) from None


__all__ = ["cell_conflicts", "choose_out", "question_conflicts", "write_metadata"]
