"""GSM8K (Cobbe et al. 2021): grade-school maths word problems with a numeric answer.

Real format (``train.jsonl`` / ``test.jsonl``; hub ``openai/gsm8k`` config ``main``):
``question`` and ``answer``, where the answer is a worked solution with calculator annotations
``<<48/2=24>>`` and ends in ``#### <number>``.

GSM8K has no wrong options, so they are supplied (a per-record ``incorrect_answers`` list, or the
``wrong_answers`` option mapping question id -> list) or generated. Generated wrong answers prefer
the solution's own intermediate results (stopping a step early is the classic slip), then
near misses of the final answer; the choice is deterministic given ``seed`` and the question id.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path

from seerbench.datasets._common import Collector, Questions, RecordError, hub_records, req, shuffled_order
from seerbench.errors import ConfigError
from seerbench.tables import Record, iter_jsonl
from seerbench.types import AnswerCase, Question

_FINAL = re.compile(r"####\s*(.+?)\s*$")
_CALC = re.compile(r"<<[^<>=]*=([^<>]+)>>")


def parse_number(text: str) -> Fraction:
    """A GSM8K number ('1,000', '$5', '-3.5') as an exact fraction."""
    cleaned = text.strip().replace(",", "").replace("$", "").rstrip(".")
    try:
        return Fraction(cleaned)
    except (ValueError, ZeroDivisionError) as e:
        raise RecordError(f"{text!r} is not a number") from e


def format_number(x: Fraction) -> str:
    """Integers without a decimal point; other values as short decimals."""
    if x.denominator == 1:
        return str(x.numerator)
    return f"{float(x):.6g}"


def generate_wrong_answers(answer: Fraction, solution: str, n: int, rng: random.Random) -> list[Fraction]:
    """``n`` distinct plausible wrong answers, intermediates of the worked solution first."""
    out: list[Fraction] = []

    def take(x: Fraction) -> None:
        if x != answer and x not in out and x >= 0 and len(out) < n:
            out.append(x)

    intermediates: list[Fraction] = []
    for m in _CALC.finditer(solution):
        try:
            intermediates.append(parse_number(m.group(1)))
        except RecordError:
            continue
    # The last intermediate before the answer is the most plausible slip (one step short).
    for x in reversed(intermediates):
        take(x)
    near = [answer + d for d in (1, -1, 2, -2, 10, -10)] + [answer * 2, answer / 2, answer * 10]
    rng.shuffle(near)
    for x in near:
        take(x)
    step = 3
    while len(out) < n:  # always terminates: answer + step grows without bound
        take(answer + step)
        step += 1
    return out


def _parse(
    rec: Record, *, k: int, seed: int, wrong_answers: Mapping[str, Sequence[str | float | int]] | None
) -> list[Question]:
    row = rec.data
    solution = req(row, "answer")
    m = _FINAL.search(solution)
    if m is None:
        raise RecordError("answer has no final '#### <number>' line")
    answer = parse_number(m.group(1))
    qid = str(row.get("id") or f"gsm8k-{rec.index}")
    supplied = row.get("incorrect_answers")
    if supplied is None and wrong_answers is not None:
        supplied = wrong_answers.get(qid)
    if supplied is not None:
        wrong = [parse_number(str(x)) for x in supplied][: k - 1]
        if any(w == answer for w in wrong):
            raise RecordError(f"a supplied wrong answer equals the true answer {format_number(answer)}")
        if len(wrong) < k - 1:
            raise RecordError(f"{len(wrong)} wrong answer(s) supplied, {k - 1} needed for k={k}")
        origin = "supplied"
    else:
        wrong = generate_wrong_answers(answer, solution, k - 1, random.Random(f"{seed}:{qid}:wrong"))
        origin = "generated"
    values = [answer, *wrong]
    order = shuffled_order(len(values), seed, qid)
    labels = [chr(ord("A") + i) for i in range(len(values))]
    cases = [
        AnswerCase(
            short=lab,
            long=format_number(values[i]),
            value=1.0 if i == 0 else 0.0,
            metadata={"original_index": i},
        )
        for lab, i in zip(labels, order, strict=True)
    ]
    return [
        Question(
            id=qid,
            text=req(row, "question"),
            answer_cases=cases,
            metadata={
                "dataset": "gsm8k",
                "solution": solution,
                "wrong_answers": origin,
                # the first wrong answer is the most plausible one by construction
                "best_distractor": labels[order.index(1)],
                "option_seed": seed,
            },
        )
    ]


def load_gsm8k(
    path: str | Path | None = None,
    *,
    k: int = 2,
    seed: int = 0,
    wrong_answers: Mapping[str, Sequence[str | float | int]] | None = None,
    split: str = "test",
    lenient: bool = False,
) -> Questions:
    """Load GSM8K as ``k``-option questions (1 true numeric answer, ``k - 1`` wrong ones)."""
    if k < 2:
        raise ConfigError(f"k must be at least 2, got {k}")
    records = (
        iter_jsonl(path) if path is not None else hub_records("openai/gsm8k", config="main", split=split)
    )
    return Collector(lenient=lenient, source=str(path or "gsm8k")).run(
        records, lambda r: _parse(r, k=k, seed=seed, wrong_answers=wrong_answers)
    )
