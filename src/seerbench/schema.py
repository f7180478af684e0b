"""The results-file schema: one line of ``results.jsonl`` per question and grid cell.

This module is the one place that says what a results line holds. The runner writes lines through
:func:`dump_line` (after :func:`seerbench.results.result_line` builds them), and every reader
(``seerbench stats``, ``show``, ``export``, the Python API) goes through :func:`parse_line`, which
checks a line against :class:`ResultLine` and says why a line is unusable. ``docs/results-schema.md``
documents every field; a test keeps the two in step.

Lines carry ``schema_version``. Version 1 is the layout below; lines written before the field
existed (seerbench 0.1) have the same layout and read as version 1. A line of a newer version than
this seerbench reads is refused with a message that says to upgrade, never guessed at; so is a
``schema_version`` that is no version number (``"2"``, ``2.0``, ``true``, ``0``).

Numbers and booleans are read as the writer writes them, JSON's own types (pydantic's strict
types): an int field takes an integer (not ``1.0`` or ``"1"``), a float field a number (not
``true`` or ``"0.5"``), a bool field ``true`` or ``false`` (not ``1`` or ``"yes"``). Lax reading
would turn ``"2"`` into 2 and ``true`` into 1.0: a line something else wrote, read as if it meant
that.

Typed access for your own analysis::

    from seerbench.schema import iter_result_lines
    for line in iter_result_lines("runs/quickstart/NaiveJudge_swap/J_local/results.jsonl"):
        print(line.question_id, line.judge_accuracy, line.answer_cases[0].case_probs.probabilities)
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, ValidationError

from seerbench._precheck import compile_precheck
from seerbench.errors import DataError
from seerbench.store import RecordReader, sibling_fingerprint
from seerbench.types import Question, Turn

#: The results-line layout this seerbench writes and reads.
SCHEMA_VERSION = 1


class _Record(BaseModel):
    # Every field is documented; an unknown one is a line from something else (or a newer
    # seerbench), not something to drop silently.
    model_config = ConfigDict(extra="forbid")


class Scores(_Record):
    """One score under the four scoring rules of seed 003 (section "Metrics")."""

    log: StrictFloat
    logodds: StrictFloat
    brier: StrictFloat
    accuracy: StrictFloat


class CaseProbs(_Record):
    """The judge's verdict on one answer case's run, and that run's transcript."""

    probabilities: dict[str, StrictFloat] | None = Field(
        description="P(option) by option label; null when no verdict parsed."
    )
    method: str = Field(
        description="Elicitation method that produced the verdict (logprobs, verbalized, vote, ...)."
    )
    parse_status: str = Field(description="ok, or why the verdict could not be parsed.")
    error: str | None
    raw: str = Field(description="The judge's raw output (or the votes).")
    n_samples: StrictInt
    metadata: dict[str, Any] = Field(
        description="Method details; with both_orders: both views' probabilities."
    )
    transcript: list[Turn]
    judge_score: Scores | None = Field(description="Score of P(true option); null when the case is unscored.")


class CaseResult(_Record):
    """One answer case (the option an agent argued for) of a question."""

    short: str
    long: str
    value: StrictFloat = Field(description="1.0 for the true option, 0.0 for a false one.")
    case_probs: CaseProbs
    agent_score: Scores | None = Field(description="Score of P(this case's option): the agent's reward.")


class ResultLine(_Record):
    """One line of ``results.jsonl``."""

    schema_version: StrictInt = SCHEMA_VERSION
    question_id: str
    protocol: str = Field(description="Protocol configuration folder, e.g. Consultancy_t1_swap.")
    agent: str | None = Field(description="Agent model entry; null for protocols without agents.")
    judge: str
    tools: list[str]
    best_of_n: StrictInt
    adversary: str | None = Field(
        default=None,
        description="Cross-play only: the opposing debater (as `agent` names the agent); "
        "absent in self-play.",
    )
    question: Question
    symmetric: StrictBool = Field(description="True when one run serves every answer case (e.g. NaiveJudge).")
    chosen_case: str | None = Field(description="The option an open consultant chose to argue; else null.")
    notes: dict[str, Any]
    parse_failures: StrictInt
    answer_cases: list[CaseResult]
    excluded: StrictBool = Field(description="A needed case is unscored (parse failure under 'exclude').")
    judge_accuracy: StrictFloat | None
    asd: Scores | None = None
    jse_b0: Scores | None = None
    jse_b1: Scores | None = None
    jse_binf: Scores | None = None
    ase_b0: Scores | None = None
    ase_b1: Scores | None = None
    ase_binf: Scores | None = None
    eps: StrictFloat
    parse_failure_policy: Literal["exclude", "half"]
    fingerprint: str | None = Field(
        default=None, description="Hash of the cell's settings (absent in 0.1 lines)."
    )
    prompts: dict[str, str] | None = Field(
        default=None, description="Prompt template hashes (absent in 0.1 lines)."
    )


class LineError(ValueError):
    """A results line that cannot be used, with the reason in words."""


def _reason(e: ValidationError) -> str:
    first = e.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "line"
    more = f" (+{e.error_count() - 1} more)" if e.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _admit(rec: Any) -> None:
    """Refuse what is no line of this layout before any field is looked at: not an object
    (:class:`LineError`), a newer schema version (:class:`DataError`: upgrade), or a
    ``schema_version`` that is no version number (:class:`DataError`)."""
    if not isinstance(rec, dict):
        raise LineError("not a JSON object")
    version = rec.get("schema_version", SCHEMA_VERSION)
    if type(version) is not int or version < 1:  # "2", 2.0, true: never read as a version
        raise DataError(
            f"schema_version {_json_repr(version)} is not a version number (an integer from 1; this "
            f"seerbench writes {SCHEMA_VERSION}): the line was written or edited by something else; "
            "correct it or remove it"
        )
    if version > SCHEMA_VERSION:
        raise DataError(
            f"results written with schema version {version}; this seerbench reads up to {SCHEMA_VERSION}: "
            "upgrade seerbench to read them"
        )


def _json_repr(value: Any) -> str:
    """``value`` as the line has it (``"2"``, ``true``), at most 40 characters."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _validate(rec: Any) -> ResultLine:
    _admit(rec)
    try:
        return ResultLine.model_validate(rec)
    except ValidationError as e:
        raise LineError(_reason(e)) from None


@functools.cache
def _fits() -> Callable[[Any], bool]:
    """The pre-check of :class:`ResultLine`, compiled from it once (:mod:`seerbench._precheck`):
    True only for a line pydantic is certain to accept; the rest pydantic decides."""
    return compile_precheck(ResultLine)


def check_line(rec: Any) -> dict[str, Any]:
    """``rec`` (a parsed line) when it fits :class:`ResultLine`; :class:`LineError` saying why not.
    A line of a newer schema version raises :class:`seerbench.errors.DataError` (upgrade).

    A line that plainly fits passes the pre-check compiled from :class:`ResultLine`
    (:mod:`seerbench._precheck`), at a fraction of pydantic's cost; any other line is pydantic's
    to accept, or to refuse with its reason."""
    _admit(rec)
    if not _fits()(rec):
        _validate(rec)
    return rec


def _loads(raw: str | bytes) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise LineError(f"not JSON ({e.msg}): a torn line from a crash, or not a results file") from None


def parse_line(raw: str | bytes) -> dict[str, Any]:
    """One raw results line, checked: the line as a dict (what statistics read)."""
    return check_line(_loads(raw))


def dump_line(line: dict[str, Any]) -> str:
    """The text of one results line (no newline). NaN is written as JSON's NaN, as Python reads it."""
    return json.dumps({"schema_version": SCHEMA_VERSION, **line}, allow_nan=True)


def iter_result_lines(path: str | Path, *, skip_bad: bool = True) -> Iterator[ResultLine]:
    """Typed lines of one ``results.jsonl``, read through the record store
    (:class:`seerbench.store.RecordReader`) as ``seerbench stats`` reads them: a question's first
    line only, lines of another config (their ``fingerprint`` is not the one in ``cell.json``
    beside the file) left out. Unusable lines (a torn last line, a line of another layout) are
    skipped, or raise :class:`LineError` with its line number when ``skip_bad`` is False."""
    p = Path(path)
    typed: list[ResultLine] = []  # the line the check just validated

    def check(rec: dict[str, Any]) -> dict[str, Any]:
        typed[:] = [_validate(rec)]
        return rec

    reader = RecordReader(
        p, "question_id", fingerprint=sibling_fingerprint(p, "cell.json"), check=check, warn=False
    )
    for _ in reader:
        if reader.first_unusable is not None and not skip_bad:
            break
        yield typed[0]
    if reader.first_unusable is not None and not skip_bad:
        raise LineError(reader.first_unusable)
