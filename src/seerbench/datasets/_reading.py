"""Bundled generated dataset ``reading``: questions about a generated passage that only agents see.

Each question has its own short passage of facts about a few invented people (town, occupation,
pet, instrument), stated one per sentence in shuffled order. The passage is the hidden
``source_text``: a judge without it has nothing to go on, because every option is an attribute
that *some* person in the passage has (an information gap). One-fact questions ask an attribute of
a named person; two-fact questions identify the person by one attribute and ask another, so the
answer needs two sentences. The supporting sentences are kept in ``metadata['supporting_facts']``.
"""

from __future__ import annotations

import random
import re

from seerbench.datasets._common import Questions, make_question
from seerbench.errors import ConfigError

_FIRST = [
    "Mira",
    "Tobin",
    "Asha",
    "Jonas",
    "Lucia",
    "Oren",
    "Priya",
    "Sven",
    "Talia",
    "Umar",
    "Vera",
    "Wendell",
]
_LAST = ["Voss", "Quill", "Harrow", "Lind", "Okafor", "Brandt", "Ferro", "Nakamura", "Ilves", "Castell"]
_ATTRS: dict[str, list[str]] = {
    "town": [
        "Tallow",
        "Brisk Harbour",
        "Eldermoor",
        "Cobble Ford",
        "Marrow Hill",
        "Ashgrove",
        "Pellin",
        "Quarry End",
    ],
    "job": [
        "baker",
        "surveyor",
        "glassblower",
        "ferry pilot",
        "archivist",
        "beekeeper",
        "locksmith",
        "cartographer",
    ],
    "pet": ["tortoise", "ferret", "parrot", "greyhound", "goldfish", "rabbit", "iguana", "tabby cat"],
    "instrument": ["cello", "accordion", "banjo", "oboe", "harp", "trombone", "sitar", "marimba"],
}
_SENTENCE = {
    "town": "{p} lives in {v}.",
    "job": "{p} works as a {v}.",
    "pet": "{p} keeps a {v}.",
    "instrument": "{p} plays the {v}.",
}
_ASK = {
    "town": "In which town does {who} live?",
    "job": "What does {who} do for a living?",
    "pet": "What pet does {who} keep?",
    "instrument": "Which instrument does {who} play?",
}
_WHO = {
    "town": "the person who lives in {v}",
    "job": "the {v}",
    "pet": "the person who keeps a {v}",
    "instrument": "the person who plays the {v}",
}


def _say(template: str, **kw: str) -> str:
    # "a iguana" -> "an iguana": the vocabulary mixes vowel and consonant initials.
    return re.sub(r"\ba ([aeiouAEIOU])", r"an \1", template.format(**kw))


def generate_reading(n: int = 100, *, seed: int = 0, k: int = 2, people: int = 4) -> Questions:
    """``n`` reading questions, each with its own hidden passage; about half need two facts.
    ``k`` options, all drawn from attributes present in the passage; ``people`` per passage."""
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    if not 2 <= k <= 8:
        raise ConfigError(f"k must be between 2 and 8, got {k}")
    people = max(people, k)
    if people > 8:
        raise ConfigError(f"at most 8 people per passage, got {people}")
    out = Questions()
    for i in range(n):
        r = random.Random(f"reading:{seed}:{i}")
        names = [
            f"{f} {last}" for f, last in zip(r.sample(_FIRST, people), r.sample(_LAST, people), strict=True)
        ]
        facts = {a: dict(zip(names, r.sample(vals, people), strict=True)) for a, vals in _ATTRS.items()}
        sentences = [_say(_SENTENCE[a], p=p, v=v) for a, m in facts.items() for p, v in m.items()]
        r.shuffle(sentences)
        target = r.choice(names)
        asked = r.choice(list(_ATTRS))
        hops = r.choice([1, 2])
        if hops == 1:
            text = _ASK[asked].format(who=target)
            support = [_say(_SENTENCE[asked], p=target, v=facts[asked][target])]
        else:
            key = r.choice([a for a in _ATTRS if a != asked])
            text = _say(_ASK[asked], who=_say(_WHO[key], v=facts[key][target]))
            support = [
                _say(_SENTENCE[key], p=target, v=facts[key][target]),
                _say(_SENTENCE[asked], p=target, v=facts[asked][target]),
            ]
        truth = facts[asked][target]
        wrong = r.sample([facts[asked][p] for p in names if p != target], k - 1)
        options = [truth, *wrong]
        r.shuffle(options)
        out.append(
            make_question(
                id=f"reading-{seed}-{i}",
                text=text,
                options=options,
                correct=options.index(truth),
                source_text=" ".join(sentences),
                metadata={
                    "dataset": "reading",
                    "seed": seed,
                    "hops": hops,
                    "attribute": asked,
                    "supporting_facts": support,
                },
            )
        )
    return out
