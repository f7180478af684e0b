"""``scripted:factcheck``: a rule-based stand-in for the rater's model, for tests, docs and planning
a study without a model (never the default; the rater is the model's job).

It plays the rater's protocol: step 1 splits the sentence on " and " into claims and searches each
(and the first three words of the first, usually the entity's name);
step 2 reads the returned pages, finds for each claim the page sentences about the same attribute
(the same start, then a value of as many words), and judges from the most recent of them:
one value equal to the claim's -> accurate, two values -> disputed (or inaccurate if neither is the
claim's), another value -> inaccurate, nothing -> unsupported. It quotes the sentences it used.
Each sample then errs on purpose, from its seed: with a per-sentence error rate between 0 and 0.5
its overall rating is replaced by another label (consistently with its claim judgments), and one
sample in ten leaves out the OVERALL line (the format verifier rejects it). Its confidence therefore
varies from sentence to sentence and its errors are not all on the same sentences.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from seerbench.factcheck._generate import LABELS
from seerbench.models import ChatMessage, GenerateConfig, register_scripted

_PAGE = re.compile(r"(?m)^\[(\S+)\] .*\(updated (\d+)\)\n(.+)$")


def _unit(*parts: object) -> float:
    h = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def _sentences(text: str) -> list[str]:
    return [s.strip() + "." for s in re.split(r"(?<=[a-z0-9])\.\s+", text.rstrip(".").strip()) if s.strip()]


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.lower(), b.lower(), strict=False):
        if x != y:
            break
        n += 1
    return n


def _same_attribute(claim: str, sentence: str) -> bool:
    """The sentence states what the claim states, perhaps with another value: they share at least
    half the claim from the start and what differs has as many words on both sides."""
    n = _common(claim, sentence)
    return n >= 0.5 * len(claim) and len(claim[n:].split()) == len(sentence[n:].split())


def _judge(claim: str, pages: list[tuple[str, int, str]]) -> tuple[str, list[tuple[str, str]]]:
    """(label, [(page id, quoted sentence)]) for one claim."""
    c = claim.rstrip(".")
    same = [
        (pid, year, s)
        for pid, year, text in pages
        for s in _sentences(text)
        if _same_attribute(c, s.rstrip("."))
    ]
    if not same:
        return "unsupported", ([(pages[0][0], _sentences(pages[0][2])[0])] if pages else [])
    latest = max(year for _, year, _ in same)
    current = [(pid, s) for pid, year, s in same if year == latest]
    values = {s.rstrip(".").lower() for _, s in current}
    if len(values) > 1:
        label = "disputed" if c.lower() in values else "inaccurate"
    else:
        label = "accurate" if c.lower() in values else "inaccurate"
    return label, current[:2]


def factcheck_responder(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    first = next((m.content for m in messages if m.role == "user"), "")
    sentence = first.split("Sentence: ", 1)[-1].split("\n", 1)[0].strip()
    claims = [c.strip() for c in sentence.rstrip(".").split(" and ") if c.strip()]
    if len(messages) <= 2:
        return "\n".join(
            [f"CLAIM {i}: {c[:1].upper() + c[1:]}." for i, c in enumerate(claims, 1)]
            + [f"SEARCH({c})" for c in claims]
            + [f"SEARCH({' '.join(claims[0].split()[:3])})"]
        )
    pages = list({pid: (pid, int(y), text) for pid, y, text in _PAGE.findall(messages[-1].content)}.values())
    lines, reasoning, judgments, labels = [], [], [], []
    n = 0
    for i, c in enumerate(claims, 1):
        label, quotes = _judge(c, pages)
        refs = []
        for pid, q in quotes:
            n += 1
            lines.append(f'EVIDENCE {n}: [{pid}] "{q}"')
            refs.append(f"E{n}")
        reasoning.append(
            f"REASONING {i}: The pages say {', '.join(refs) or 'nothing'}, so the claim is {label}."
        )
        judgments.append(f"JUDGMENT {i}: {label}")
        labels.append(label)
    overall = next((lab for lab in ("inaccurate", "disputed", "unsupported") if lab in labels), "accurate")
    rate = 0.5 * _unit("rate", sentence)
    if _unit("err", sentence, config.seed) < rate:  # this sample errs: another overall rating
        overall = [lab for lab in LABELS if lab != overall][int(3 * _unit("which", sentence, config.seed))]
        judgments[0] = f"JUDGMENT 1: {overall}"
        for k in range(1, len(judgments)):
            judgments[k] = f"JUDGMENT {k + 1}: accurate" if overall == "accurate" else judgments[k]
    out = [*lines, *reasoning, *judgments]
    if _unit("drop", sentence, config.seed) >= 0.1:
        out.append(f"OVERALL: {overall}")
    return "\n".join(out)


register_scripted("factcheck", factcheck_responder, replace=True)
