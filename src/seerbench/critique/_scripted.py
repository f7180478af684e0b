"""``scripted:critic``: a deterministic rule-based critic for tests, docs and benchmarks (never the
default, and its critiques mean little). It checks the worked steps ``a op b = c`` of an answer and
names a false one; otherwise it points at one sentence of the answer picked from the temperature.
Asked whether a critique is helpful, it gives 0.9 to a critique that names a false step, 0.4 to
others; asked for a model answer it answers with the question's last number, or says it cannot
tell; asked to revise an answer after a critique that names a false step it corrects it (and
otherwise repeats it); asked whether a critique covers an intended changed number, 0.95 when the
critique names a false step with both numbers, else 0.05."""

from __future__ import annotations

import hashlib
import operator
import re
from collections.abc import Callable, Sequence

from seerbench.models import ChatMessage, GenerateConfig, register_scripted

_STEP = re.compile(
    r"(?<![-+*/x×\d]\s)(?<![-+*/x×\d.])(\d+(?:\.\d+)?)\s*([-+*/x×])\s*(\d+(?:\.\d+)?)\s*=\s*(\d+(?:\.\d+)?)"
)
_OPS: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "x": operator.mul,
    "×": operator.mul,
    "/": operator.truediv,
}


def false_steps(text: str) -> list[tuple[str, str]]:
    """Each worked step ``a op b = c`` of ``text`` whose arithmetic is wrong, with the right value."""
    out = []
    for m in _STEP.finditer(text):
        a, op, b, c = m.groups()
        try:
            value = _OPS[op](float(a), float(b))
        except ZeroDivisionError:
            continue
        if abs(value - float(c)) > 1e-9:
            out.append((m.group(0), f"{value:g}"))
    return out


def _field(text: str, name: str) -> str:
    m = re.search(rf"(?ms)^{name}: (.*?)(?:\n\n|\Z)", text)
    return m.group(1).strip() if m else ""


def _critic(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    text = messages[-1].content if messages else ""
    answer = _field(text, "Answer")
    if "Does this critique point out the intended flaw" in text:
        flaw = re.search(r"The answer has this flaw: changed number: (\S+) -> (\S+)", text)
        crit = _field(text, "Critique")
        hit = (
            flaw is not None
            and "is wrong" in crit
            and all(re.search(rf"\b{re.escape(x)}\b", crit) for x in flaw.groups())
        )
        return "0.95" if hit else "0.05"
    if "Is this critique helpful" in text:
        return "0.9" if "is wrong" in _field(text, "Critique") else "0.4"
    if "Write one critique" in text:
        bad = false_steps(answer)
        if bad:
            step, right = bad[0]
            return f'The step {step} is wrong: it should give {right}.\nQUOTE: "{step}"'
        sents = [s for s in re.split(r"(?<=[.!?])\s+", answer) if s]
        if not sents:
            return ""
        h = hashlib.sha256(f"{seed}|{config.temperature}".encode()).digest()[0]
        pick = sents[h % len(sents)]
        return f'The sentence "{pick}" is not explained.\nQUOTE: "{pick}"'
    if "Revise the answer" in text:
        critique = _field(text, "Critique")
        m = re.search(r"The step (.+?) is wrong: it should give (\S+)\.", critique)
        if m and m.group(1) in answer:
            wrong = m.group(1).rsplit("=", 1)[1].strip()
            return answer.replace(wrong, m.group(2).rstrip("."))
        return answer
    if "Answer the question" in text:
        nums = re.findall(r"\d+", _field(text, "Question"))
        return f"The answer is {nums[-1]}." if nums else "I cannot tell."
    return ""


register_scripted("critic", _critic, replace=True)
