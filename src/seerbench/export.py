"""A flat table of an experiment's per-question results, for pandas and spreadsheets.

One row per question per grid cell, with the same numbers ``seerbench stats`` averages: the
lines are rescored with the run's own ``eps`` and parse-failure policy. Columns (:data:`COLUMNS`,
in this order, stable across versions; new columns are only ever appended):

- the cell: ``cell``, ``protocol``, ``agent``, ``judge``, ``tools`` (joined by ``+``),
  ``best_of_n``;
- the question: ``question_id``, ``true_option`` (its letter), ``true_answer`` (its text),
  ``chosen_case`` (the case a protocol ran alone: OpenConsultancy, RandomConsultancy);
- per answer case, ``t_`` for the case where the agent argued the true option and ``f_`` for the
  false one: ``p_true`` (the judge's probability of the true option), ``choice`` (the option the
  judge rated highest; empty on a tie, as the accuracy score counts ties, or a failed verdict),
  ``judge_log/brier/accuracy`` (judge score JS), ``agent_log/brier/accuracy`` (agent score AS),
  ``method`` (how the probabilities were elicited), ``parse_status``; empty when that case was not
  run or could not be scored;
- the question's metrics: ``asd_log/logodds/brier/accuracy``, ``jse_b0/b1/binf_log``,
  ``ase_b0/b1/binf_log``, ``judge_accuracy``, ``excluded``, ``parse_failures``, ``eps``,
  ``parse_failure_policy``.

A missing value is None (an empty CSV field, a parquet null).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from seerbench.errors import ConfigError
from seerbench.metrics import DEFAULT_EPS, TIE_TOL
from seerbench.results import rescore
from seerbench.runs import RunFolder, check_eps, check_policy, check_score, json_safe

Format = Literal["csv", "parquet"]
FORMATS: tuple[Format, ...] = ("csv", "parquet")

_CASE_FIELDS: tuple[tuple[str, str], ...] = (
    ("p_true", "float"),
    ("choice", "str"),
    ("judge_log", "float"),
    ("judge_brier", "float"),
    ("judge_accuracy", "float"),
    ("agent_log", "float"),
    ("agent_brier", "float"),
    ("agent_accuracy", "float"),
    ("method", "str"),
    ("parse_status", "str"),
)

#: (column, type) of every exported column, in order; type is one of str, int, float, bool.
SCHEMA: tuple[tuple[str, str], ...] = (
    ("cell", "str"),
    ("protocol", "str"),
    ("agent", "str"),
    ("judge", "str"),
    ("tools", "str"),
    ("best_of_n", "int"),
    ("question_id", "str"),
    ("true_option", "str"),
    ("true_answer", "str"),
    ("chosen_case", "str"),
    *((f"{role}_{name}", kind) for role in ("t", "f") for name, kind in _CASE_FIELDS),
    ("asd_log", "float"),
    ("asd_logodds", "float"),
    ("asd_brier", "float"),
    ("asd_accuracy", "float"),
    ("jse_b0_log", "float"),
    ("jse_b1_log", "float"),
    ("jse_binf_log", "float"),
    ("ase_b0_log", "float"),
    ("ase_b1_log", "float"),
    ("ase_binf_log", "float"),
    ("judge_accuracy", "float"),
    ("excluded", "bool"),
    ("parse_failures", "int"),
    ("eps", "float"),
    ("parse_failure_policy", "str"),
)
COLUMNS: tuple[str, ...] = tuple(c for c, _ in SCHEMA)

PARQUET_HINT = "pip install 'seerbench[parquet]'"


@dataclass
class Export:
    """The rows of a run folder and what was left out on the way."""

    run_dir: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    n_cells: int = 0
    skipped_lines: dict[str, int] = field(default_factory=dict)  # cell key -> lines skipped (torn or corrupt)

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped_lines.values())


def export_rows(
    run_dir: str | Path, *, eps: float | None = None, parse_failures: str | None = None
) -> Export:
    """Every results line of every cell of ``run_dir`` as a flat row (see the module docstring),
    rescored with ``eps`` and ``parse_failures`` (default: the run's own). A torn or corrupt line
    is skipped and counted in :attr:`Export.skipped_lines`; the folder is not changed."""
    folder = RunFolder(run_dir)
    cfg = folder.config
    eps_v = check_eps(cfg.get("eps", DEFAULT_EPS) if eps is None else eps)
    policy = check_policy(parse_failures or cfg.get("parse_failures", "exclude"))
    out = Export(folder.path)
    for cell in folder.cells():
        lines, skipped = cell.read()
        out.n_cells += 1
        if skipped:
            out.skipped_lines[cell.key] = skipped
        for line in lines:
            out.rows.append(flat_row(rescore(line, eps=eps_v, policy=policy), cell.key))
    return out


def flat_row(line: dict[str, Any], cell: str) -> dict[str, Any]:
    """One scored results line as a row of :data:`COLUMNS`."""
    q_cases = line["question"]["answer_cases"]
    true = next((c for c in q_cases if c["value"] > 0.5), None)
    true_short = true["short"] if true else None
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    tools = line.get("tools") or []
    row.update(
        cell=cell,
        protocol=line.get("protocol"),
        agent=line.get("agent"),
        judge=line.get("judge"),
        tools="+".join(str(t) for t in tools) if isinstance(tools, list) else str(tools),
        best_of_n=line.get("best_of_n"),
        question_id=line["question_id"],
        true_option=true_short,
        true_answer=true["long"] if true else None,
        chosen_case=line.get("chosen_case"),
    )
    by_role: dict[str, dict[str, Any]] = {}
    for c in line["answer_cases"]:
        role = "t" if c["short"] == true_short else "f"
        by_role.setdefault(role, c)  # with more than two options, f_ is the first false case
    for role, c in by_role.items():
        row.update({f"{role}_{k}": v for k, v in _case_fields(c, true_short).items()})
    for st in ("log", "logodds", "brier", "accuracy"):
        row[f"asd_{st}"] = _get(line.get("asd"), st)
    for kind in ("jse", "ase"):
        for b in ("b0", "b1", "binf"):
            row[f"{kind}_{b}_log"] = _get(line.get(f"{kind}_{b}"), "log")
    row.update(
        judge_accuracy=line.get("judge_accuracy"),
        excluded=bool(line.get("excluded")),
        parse_failures=line.get("parse_failures"),
        eps=line.get("eps"),
        parse_failure_policy=line.get("parse_failure_policy"),
    )
    return row


def _case_fields(case: dict[str, Any], true_short: str | None) -> dict[str, Any]:
    cp = case["case_probs"]
    probs = cp.get("probabilities") if cp.get("parse_status") != "failed" else None
    js, ag = cp.get("judge_score"), case.get("agent_score")
    return {
        "p_true": float(probs[true_short]) if probs and true_short in probs else None,
        "choice": _choice(probs) if probs else None,
        "judge_log": _get(js, "log"),
        "judge_brier": _get(js, "brier"),
        "judge_accuracy": _get(js, "accuracy"),
        "agent_log": _get(ag, "log"),
        "agent_brier": _get(ag, "brier"),
        "agent_accuracy": _get(ag, "accuracy"),
        "method": cp.get("method"),
        "parse_status": cp.get("parse_status"),
    }


def _choice(probs: dict[str, float]) -> str | None:
    """The option rated highest; None on a tie (within TIE_TOL, as the accuracy score counts ties)."""
    top = max(probs.values())
    best = [o for o, p in probs.items() if p >= top - TIE_TOL]
    return best[0] if len(best) == 1 else None


def _get(d: Any, key: str) -> float | None:
    if not isinstance(d, dict):
        return None
    v = d.get(key)
    # + 0.0 turns -0.0 (a perfect Brier score) into 0.0
    return float(v) + 0.0 if isinstance(v, int | float) and math.isfinite(v) else None


# ---- writers ------------------------------------------------------------------------------------


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def write_csv(rows: list[dict[str, Any]], f: IO[str]) -> None:
    """Rows as CSV (header first; empty field = missing; booleans as true/false; floats in full
    precision) to an open text file."""
    w = csv.writer(f, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([_csv_value(r.get(c)) for c in COLUMNS])


def to_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    write_csv(rows, buf)
    return buf.getvalue()


def parquet_available() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def write_parquet(rows: list[dict[str, Any]], path: str | Path) -> None:
    """Rows as a parquet file with a fixed schema (strings, int64, float64, bool; nulls where
    missing). Needs pyarrow (``pip install 'seerbench[parquet]'``)."""
    if not parquet_available():
        raise ConfigError(
            f"parquet export needs pyarrow, which is not installed: {PARQUET_HINT} (or use --format csv)"
        )
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    schema = pa.schema([(c, types[k]) for c, k in SCHEMA])
    table = pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in rows], schema=schema)
    pq.write_table(table, str(path))


# ---- Inspect AI logs ----------------------------------------------------------------------------

INSPECT_HINT = "pip install 'seerbench[inspect]'"
#: The scorer name the exported logs carry.
INSPECT_SCORER = "seerbench"


def inspect_available() -> bool:
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class InspectExport:
    """What :func:`export_inspect` wrote: one ``.eval`` log per grid cell."""

    run_dir: Path
    out_dir: Path
    logs: dict[str, Path] = field(default_factory=dict)  # cell key -> log file
    samples: dict[str, int] = field(default_factory=dict)  # cell key -> samples written
    skipped_lines: dict[str, int] = field(default_factory=dict)  # cell key -> lines skipped (torn or corrupt)

    @property
    def n_samples(self) -> int:
        return sum(self.samples.values())


def export_inspect(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    eps: float | None = None,
    parse_failures: str | None = None,
) -> InspectExport:
    """Write every grid cell of ``run_dir`` as an Inspect AI log (``.eval``), built with Inspect's
    own log API (:func:`inspect_ai.log.write_eval_log`), into ``out_dir`` (default
    ``RUN_DIR/inspect``): ``inspect view --log-dir OUT_DIR`` browses them.

    A log's samples are the cell's results lines (one per question, id = question id): the question
    and its options as input, the true option as target, each answer case's transcript as
    messages (a system note per case, the turns as assistant messages named by speaker, then the
    judge's verdict), and two scores: ``judge_accuracy`` (answer: the option the judge rated
    highest in each case; metadata: per case the probabilities, elicitation method, parse status,
    judge and agent scores) and ``asd`` (under the log score). The log's results hold the cell's
    means with the same bootstrap CIs ``seerbench stats`` prints. Lines are rescored with ``eps``
    and ``parse_failures`` (default: the run's own); an excluded question has no scores. Needs
    inspect-ai (``pip install 'seerbench[inspect]'``)."""
    if not inspect_available():
        raise ConfigError(f"--format inspect needs inspect-ai, which is not installed: {INSPECT_HINT}")
    from seerbench.results import CellStats
    from seerbench.runs import cell_meta

    folder = RunFolder(run_dir)
    cfg = folder.config
    eps_v = check_eps(cfg.get("eps", DEFAULT_EPS) if eps is None else eps)
    policy = check_policy(parse_failures or cfg.get("parse_failures", "exclude"))
    target = Path(out_dir) if out_dir is not None else folder.path / "inspect"
    out = InspectExport(folder.path, target)
    cells = folder.cells()
    if not cells:
        raise ConfigError(f"no results.jsonl under {folder.path}: the run has not finished a question yet")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create {target}: {e.strerror or e}") from None
    for cell in cells:
        stats = CellStats()
        samples = []
        f = cell.results()
        for line in f:
            scored = rescore(line, eps=eps_v, policy=policy)
            stats.add(scored)
            samples.append(_inspect_sample(scored))
        if f.skipped:
            out.skipped_lines[cell.key] = f.skipped
        record = stats.stats(
            cell_meta(stats, cell),
            eps=eps_v,
            policy=policy,
            n_boot=cfg.get("n_boot", 2000),
            seed=cfg.get("seed", 0),
        )
        log = _inspect_log(folder, cell.key, cell.results_path, record, samples, cfg)
        path = target / (cell.key.replace("/", "__") + ".eval")
        _write_inspect(log, path)
        out.logs[cell.key] = path
        out.samples[cell.key] = len(samples)
    return out


def _options_text(question: dict[str, Any]) -> str:
    return "\n".join(f"{c['short']}) {c['long']}" for c in question["answer_cases"])


def _probs_text(probs: dict[str, float] | None) -> str:
    return ", ".join(f"P({k})={v:.3f}" for k, v in probs.items()) if probs else "no probabilities"


def _inspect_sample(line: dict[str, Any]) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageSystem, ChatMessageUser
    from inspect_ai.scorer import Score

    q = line["question"]
    true = next((c["short"] for c in q["answer_cases"] if c["value"] > 0.5), "")
    prompt = f"{q['text']}\n\n{_options_text(q)}"
    messages: list[ChatMessage] = [ChatMessageUser(content=prompt, source="input")]
    cases = line["answer_cases"]
    if line.get("symmetric") and cases:
        cases = cases[:1]  # one run serves every case (e.g. NaiveJudge): shown once
    per_case: dict[str, Any] = {}
    answers = []
    for c in line["answer_cases"]:
        cp = c["case_probs"]
        probs = cp.get("probabilities") if cp.get("parse_status") != "failed" else None
        choice = _choice(probs) if probs else None
        answers.append(f"{c['short']}->{choice or '-'}")
        per_case[c["short"]] = {
            "probabilities": cp.get("probabilities"),
            "method": cp.get("method"),
            "parse_status": cp.get("parse_status"),
            "error": cp.get("error"),
            "n_samples": cp.get("n_samples"),
            "choice": choice,
            "judge_score": cp.get("judge_score"),
            "agent_score": c.get("agent_score"),
        }
    for c in cases:
        cp = c["case_probs"]
        head = (
            "one run serves every answer case"
            if line.get("symmetric")
            else f"answer case {c['short']}: the agent argues for {c['short']}) {c['long']}"
        )
        messages.append(ChatMessageSystem(content=head, metadata={"answer_case": c["short"]}))
        for t in cp.get("transcript") or []:
            text = str(t.get("content", ""))
            quotes = t.get("quotes") or []
            if quotes:
                text += "\n\n" + "\n".join(
                    "quote ("
                    + (
                        "verified"
                        if qt.get("verified")
                        else "unverified"
                        if qt.get("verified") is False
                        else "unchecked"
                    )
                    + f"): {qt.get('text')}"
                    for qt in quotes
                )
            meta = {
                "speaker": t.get("speaker"),
                "role": t.get("role"),
                "answer_case": t.get("answer_case"),
                "quotes": quotes,
            }
            if t.get("role") in ("question", "system", "note"):
                messages.append(ChatMessageSystem(content=text, metadata=meta))
            else:
                messages.append(
                    ChatMessageAssistant(
                        content=f"[{t.get('speaker')}] {text}",
                        metadata=meta,
                        model=str(line.get("agent") or line.get("judge")),
                    )
                )
        verdict = (
            f"[judge {line.get('judge')}] {_probs_text(cp.get('probabilities'))} "
            f"({cp.get('method')}, {cp.get('parse_status')})"
        )
        if cp.get("error"):
            verdict += f": {cp['error']}"
        messages.append(
            ChatMessageAssistant(
                content=verdict, model=str(line.get("judge")), metadata={"verdict": per_case[c["short"]]}
            )
        )
    scores = {}
    if not line.get("excluded") and line.get("judge_accuracy") is not None:
        scores["judge_accuracy"] = Score(
            value=float(line["judge_accuracy"]),
            answer="; ".join(answers),
            explanation=f"true option {true}; "
            + "; ".join(f"argued {k}: {_probs_text(v['probabilities'])}" for k, v in per_case.items()),
            metadata={"cases": per_case, "true_option": true},
        )
        asd = _get(line.get("asd"), "log")
        if asd is not None:
            scores["asd"] = Score(value=asd, metadata={"asd": line.get("asd")})
    return EvalSample(
        id=line["question_id"],
        epoch=1,
        input=prompt,
        choices=[str(c["long"]) for c in q["answer_cases"]],
        target=true,
        messages=messages,
        scores=scores or None,
        metadata={
            "chosen_case": line.get("chosen_case"),
            "excluded": bool(line.get("excluded")),
            "parse_failures": line.get("parse_failures"),
            "notes": line.get("notes") or {},
            **{k: line.get(k) for k in ("jse_b0", "jse_b1", "jse_binf", "ase_b0", "ase_b1", "ase_binf")},
        },
    )


def _inspect_log(
    folder: RunFolder,
    key: str,
    results_path: Path,
    record: dict[str, Any],
    samples: list[Any],
    cfg: dict[str, Any],
) -> Any:
    import hashlib
    from datetime import UTC, datetime

    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalResults, EvalScore, EvalSpec

    created = datetime.fromtimestamp(results_path.stat().st_mtime, UTC).isoformat()
    run_id = hashlib.sha256(str(folder.path.resolve()).encode()).hexdigest()[:22]
    task_id = hashlib.sha256(f"{run_id}/{key}".encode()).hexdigest()[:22]
    metrics = record["metrics"]
    n_scored = record["n_scored"]

    def eval_score(name: str, summary: dict[str, Any] | None) -> EvalScore:
        ms = {}
        for m, field_name in (
            ("mean", "mean"),
            ("stderr", "se"),
            ("ci_low", "ci_low"),
            ("ci_high", "ci_high"),
        ):
            v = (summary or {}).get(field_name)
            if isinstance(v, int | float) and math.isfinite(v):
                ms[m] = EvalMetric(name=m, value=float(v))
        scored = int((summary or {}).get("n") or 0)
        return EvalScore(
            name=name,
            scorer=INSPECT_SCORER,
            scored_samples=scored,
            unscored_samples=len(samples) - scored,
            metrics=ms,
        )

    ds = cfg.get("dataset")
    ds_name = ds if isinstance(ds, str) else (ds or {}).get("name") or (ds or {}).get("path")
    axes = {k: record.get(k) for k in ("protocol", "agent", "judge", "tools", "best_of_n")}
    spec = EvalSpec(
        eval_id=task_id,
        created=created,
        task=f"seerbench/{record.get('protocol')}",
        task_id=task_id,
        run_id=run_id,
        task_args={k: v for k, v in axes.items() if k != "protocol"},
        dataset=EvalDataset(
            name=str(ds_name) if ds_name else None, samples=len(samples), sample_ids=[s.id for s in samples]
        ),
        model=str(record.get("judge")),
        config=EvalConfig(),
        metadata={
            "seerbench_cell": key,
            "run_dir": str(folder.path),
            "experiment": cfg.get("name"),
            **axes,
            "eps": record["eps"],
            "parse_failure_policy": record["parse_failure_policy"],
            "bootstrap": record["bootstrap"],
        },
    )
    results = EvalResults(
        total_samples=len(samples),
        completed_samples=len(samples),
        scores=[
            eval_score("judge_accuracy", metrics.get("judge_accuracy")),
            eval_score("asd", (metrics.get("asd") or {}).get("log")),
        ],
        metadata={
            "n_scored": n_scored,
            "n_excluded": record["n_excluded"],
            "parse_failures": record["parse_failures"],
            "metrics": json_safe(metrics),
        },
    )
    return EvalLog(status="success", eval=spec, results=results, samples=samples)


def _write_inspect(log: Any, path: Path) -> None:
    """Write through a temporary sibling and rename, so a failed export leaves no half log."""
    from inspect_ai.log import write_eval_log

    from seerbench.store import atomic_path

    try:
        with atomic_path(path, ".eval") as tmp:
            write_eval_log(log, str(tmp), format="eval")
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror or e}") from None


# ---- reward data (seed 003: "a scalable oversight mechanism is equivalent to a human feedback model")


@dataclass
class RewardExport:
    """What :func:`export_rewards` wrote."""

    out_dir: Path
    rewards: Path
    preferences: Path
    n_rewards: int = 0
    n_preferences: int = 0
    n_ties: int = 0  # questions whose two arguments earned the same reward: no preference
    skipped_lines: dict[str, int] = field(default_factory=dict)


def reward_prompt(question: dict[str, Any]) -> str:
    """The prompt both of a question's arguments answer: the question and its options."""
    opts = "\n".join(f"{c['short']}) {c['long']}" for c in question["answer_cases"])
    return f"{question['text']}\n\nOptions:\n{opts}\n\nArgue for one answer."


def _argument(case: dict[str, Any]) -> str | None:
    """The turns that argued for this case's option in its transcript: the agent's (in a
    symmetric self-play debate one transcript serves both cases, and the turns for the other option
    are the same agent's, marked adversary)."""
    turns = (case.get("case_probs") or {}).get("transcript") or []
    mine = [
        str(t.get("content", ""))
        for t in turns
        if t.get("role") in ("agent", "adversary") and t.get("answer_case") == case["short"]
    ]
    return f"Answer: {case['long']}\n\n" + "\n\n".join(mine) if mine else None


def reward_records(line: dict[str, Any], cell: str, score: str = "log") -> list[dict[str, Any]]:
    """One record per argument of a scored results line: the prompt, the agent's argument as the
    completion, and the protocol's reward to it (its agent score under ``score``; ``judge_probability``,
    the judge's probability of the argued option, beside it). Unscored cases give none."""
    prompt = reward_prompt(line["question"])
    out = []
    for c in line.get("answer_cases") or []:
        reward = (c.get("agent_score") or {}).get(score)
        probs = (c.get("case_probs") or {}).get("probabilities") or {}
        text = _argument(c)
        if reward is None or text is None or not math.isfinite(float(reward)):
            continue
        out.append(
            {
                "prompt": prompt,
                "completion": text,
                "reward": float(reward),
                "judge_probability": probs.get(c["short"]),
                "correct": c.get("value") == 1.0,
                "question_id": line["question_id"],
                "cell": cell,
                "agent": line.get("agent"),
                "adversary": line.get("adversary"),
                "judge": line.get("judge"),
                "answer_case": c["short"],
                "score": score,
            }
        )
    return out


def preference_record(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The preference pair of one question's two rewarded arguments (same prompt): the higher-
    rewarded one chosen, the lower rejected; None for fewer than two or a tie."""
    if len(records) != 2:
        return None
    hi, lo = sorted(records, key=lambda r: -r["reward"])
    if hi["reward"] - lo["reward"] <= TIE_TOL:
        return None
    return {
        "prompt": hi["prompt"],
        "chosen": hi["completion"],
        "rejected": lo["completion"],
        "chosen_reward": hi["reward"],
        "rejected_reward": lo["reward"],
        "chosen_correct": hi["correct"],
        "question_id": hi["question_id"],
        "cell": hi["cell"],
        "score": hi["score"],
    }


def export_rewards(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    score: str = "log",
    eps: float | None = None,
    parse_failures: str | None = None,
) -> RewardExport:
    """Write ``rewards.jsonl`` (one record per argument: ``prompt``, ``completion``, ``reward``)
    and ``preferences.jsonl`` (one per question and cell: ``prompt``, ``chosen``, ``rejected``,
    the shape TRL's reward and DPO trainers read) to ``out_dir`` (default ``RUN_DIR/rewards``).
    The rewards are the agent scores of the lines rescored with the run's ``eps`` and policy."""
    check_score(score)
    folder = RunFolder(run_dir)
    cfg = folder.config
    eps_v = check_eps(cfg.get("eps", DEFAULT_EPS) if eps is None else eps)
    policy = check_policy(parse_failures or cfg.get("parse_failures", "exclude"))
    target = Path(out_dir) if out_dir is not None else folder.path / "rewards"
    ex = RewardExport(target, target / "rewards.jsonl", target / "preferences.jsonl")
    rewards: list[str] = []
    prefs: list[str] = []
    cells = folder.cells()
    if not cells:
        raise ConfigError(f"no results.jsonl under {run_dir}: the run has not finished a question yet")
    for cell in cells:
        lines, skipped = cell.read()
        if skipped:
            ex.skipped_lines[cell.key] = skipped
        for line in lines:
            recs = reward_records(rescore(line, eps=eps_v, policy=policy), cell.key, score)
            rewards.extend(json.dumps(r) for r in recs)
            pair = preference_record(recs)
            if pair is not None:
                prefs.append(json.dumps(pair))
            elif len(recs) == 2:
                ex.n_ties += 1
    ex.n_rewards, ex.n_preferences = len(rewards), len(prefs)
    try:
        target.mkdir(parents=True, exist_ok=True)
        for path, rows in ((ex.rewards, rewards), (ex.preferences, prefs)):
            tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
            tmp.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
            os.replace(tmp, path)
    except OSError as e:
        raise ConfigError(f"cannot write {target}: {e.strerror or e}") from None
    return ex


__all__ = [
    "COLUMNS",
    "FORMATS",
    "INSPECT_HINT",
    "PARQUET_HINT",
    "SCHEMA",
    "Export",
    "InspectExport",
    "RewardExport",
    "export_inspect",
    "export_rewards",
    "export_rows",
    "flat_row",
    "inspect_available",
    "parquet_available",
    "to_csv",
    "write_csv",
    "write_parquet",
]
