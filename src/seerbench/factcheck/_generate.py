"""The generated ``factcheck`` set: a fictional knowledge base, a corpus written from it, and
sentences whose label is known by construction.

Knowledge base. Each entity (a town, a company or a scientist, names made of invented syllables so
no model has memorised them) has five attributes. Every attribute has one of four *statuses*, which
say what the corpus does with it:

- ``stated``: every page that mentions the attribute gives the true value;
- ``outdated``: an archived page (updated 1998-2008) gives a former value, a current page
  (2016-2024) the true one;
- ``disputed``: two current pages of the same year give two different values and nothing settles it;
- ``unstated``: no page mentions the attribute at all.

Corpus. Each entity gets three to five short pages (an almanac entry, a registry record, a news item,
a community wiki page...), each with an id, a title, a fictional URL, an ``updated`` year and a few
sentences written from the attribute templates.

Sentences. One or two claims about one entity, each claim ``(attribute, value)``. A claim's label
follows from the attribute's status and the value (:func:`claim_label`); the sentence's label from
its claims' (:func:`sentence_label`). Labels are seed 000's set: accurate, inaccurate, unsupported,
disputed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from seerbench.errors import ConfigError

#: Seed 000's claim-level and overall labels (section A.2.2.1).
LABELS: tuple[str, ...] = ("accurate", "inaccurate", "unsupported", "disputed")
STATUSES: tuple[str, ...] = ("stated", "outdated", "disputed", "unstated")

_ONSETS = ["br", "k", "v", "t", "m", "d", "s", "l", "g", "h", "r", "z", "f", "n", "p", "dr", "st", "th"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ou", "ei"]
_CODAS = ["", "n", "r", "l", "k", "s", "th", "m", "nd", "rt"]
_TOWN_SUFFIX = ["wick", "ford", "holm", "by", "stad", "mere", "dale", "ton"]
_FIRST = [
    "Ilsa",
    "Teodor",
    "Maren",
    "Jovan",
    "Oriel",
    "Sabine",
    "Ludo",
    "Vesna",
    "Anselm",
    "Kaja",
    "Rurik",
    "Petra",
    "Emrys",
    "Halina",
    "Cosmin",
    "Liesel",
    "Bram",
    "Signe",
    "Dorian",
    "Yelka",
]
_RIVERS = ["Aldra", "Venn", "Soriel", "Tamsk", "Oure", "Kelda", "Brisa", "Mornel", "Lusk", "Irrow"]
_PROVINCES = ["Westmarch", "Caldria", "Norvale", "Ostrand", "Hallow Reach", "Pellin", "Sarvane", "Dunmor"]
_PRODUCTS = [
    "ceramic valves",
    "wind turbines",
    "river barges",
    "insulin pumps",
    "glass lenses",
    "bicycle frames",
    "seed drills",
    "ferry engines",
    "textile looms",
    "water filters",
]
_FIELDS = [
    "glaciology",
    "number theory",
    "marine botany",
    "acoustics",
    "paleoclimate",
    "crystallography",
    "seismology",
    "protein folding",
    "radio astronomy",
    "soil chemistry",
]
_AWARDS = [
    "Halvard Medal",
    "Orrin Prize",
    "Selka Award",
    "Brunel Circle Medal",
    "Kestrel Prize",
    "Aster Laureateship",
]

#: Attribute schema per kind: attribute -> (value kind, sentence template for pages and claims).
#: Templates use {name} and {value}; each has a fixed phrase a reader can find in the pages.
TEMPLATES: dict[str, dict[str, tuple[str, str]]] = {
    "town": {
        "founded": ("year", "{name} was founded in {value}"),
        "population": ("count", "{name} has a population of {value}"),
        "river": ("river", "{name} lies on the river {value}"),
        "province": ("province", "{name} is in the province of {value}"),
        "mayor": ("person", "the mayor of {name} is {value}"),
    },
    "company": {
        "founded": ("year", "{name} was founded in {value}"),
        "headquarters": ("town", "{name} has its headquarters in {value}"),
        "founder": ("person", "{name} was founded by {value}"),
        "employees": ("count", "{name} employs {value} people"),
        "product": ("product", "{name} is best known for its {value}"),
    },
    "scientist": {
        "born": ("year", "{name} was born in {value}"),
        "birthplace": ("town", "{name} was born in the town of {value}"),
        "field": ("field", "{name} works in {value}"),
        "award": ("award", "{name} received the {value}"),
        "university": ("university", "{name} teaches at the University of {value}"),
    },
}
_KINDS = tuple(TEMPLATES)
_SOURCES = [
    ("almanac", "The Open Almanac"),
    ("registry", "Regional Registry"),
    ("gazette", "The Northern Gazette"),
    ("wiki", "Community Wiki"),
    ("digest", "Weekly Digest"),
]


@dataclass
class Attribute:
    """One attribute of an entity: its true value, what the corpus does with it (``status``) and
    the other value the corpus gives (the former one when outdated, the rival one when disputed)."""

    name: str
    value: str
    status: str
    other: str | None = None


@dataclass
class Entity:
    id: str
    kind: str
    name: str
    attributes: dict[str, Attribute]


@dataclass
class Page:
    """One corpus document."""

    id: str
    entity_id: str
    title: str
    url: str
    updated: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Claim:
    entity_id: str
    attribute: str
    value: str
    label: str
    text: str


@dataclass
class FactItem:
    """A sentence to rate, its label and (for generated items) its claims."""

    id: str
    sentence: str
    label: str
    claims: list[Claim] = field(default_factory=list)
    entity_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def claim_label(attr: Attribute, value: str) -> str:
    """The label of claiming ``value`` for ``attr``, judged against the corpus written from it.

    unstated: unsupported (nothing in the corpus says anything either way). disputed: either of
    the two values the pages give is disputed, any other value is contradicted by both pages
    (inaccurate). stated and outdated: the true (current) value is accurate, anything else,
    including the former value of an outdated attribute, is inaccurate."""
    if attr.status == "unstated":
        return "unsupported"
    if attr.status == "disputed":
        return "disputed" if value in (attr.value, attr.other) else "inaccurate"
    return "accurate" if value == attr.value else "inaccurate"


def sentence_label(labels: list[str]) -> str:
    """A sentence's label from its claims': accurate only when every claim is (seed 000, A.2.3);
    otherwise the first of inaccurate, disputed, unsupported that a claim has (a contradiction
    outranks a dispute, a dispute outranks missing evidence)."""
    for lab in ("inaccurate", "disputed", "unsupported"):
        if lab in labels:
            return lab
    return "accurate"


class _Names:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int) -> str:
        parts = [
            self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) + self.rng.choice(_CODAS)
            for _ in range(syllables)
        ]
        return "".join(parts).capitalize()

    def unique(self, make: Any) -> str:
        for _ in range(1000):
            n = make()
            if n not in self.used:
                self.used.add(n)
                return str(n)
        raise RuntimeError("ran out of names")  # pragma: no cover - 10^6 combinations

    def town(self) -> str:
        return self.unique(lambda: self.word(1) + self.rng.choice(_TOWN_SUFFIX))

    def company(self) -> str:
        return self.unique(
            lambda: (
                self.word(2) + " " + self.rng.choice(["Works", "Industries", "Group", "Ltd", "Cooperative"])
            )
        )

    def person(self) -> str:
        return self.rng.choice(_FIRST) + " " + self.word(2)

    def scientist(self) -> str:
        return self.unique(self.person)


def _value(kind: str, rng: random.Random, names: _Names) -> str:
    if kind == "year":
        return str(rng.randint(1780, 1995))
    if kind == "count":
        return f"{rng.randint(12, 980) * 100:,}"
    if kind == "person":
        return names.person()
    if kind == "town":
        return names.word(1) + rng.choice(_TOWN_SUFFIX)
    if kind == "university":
        return names.word(2)
    pool = {
        "river": _RIVERS,
        "province": _PROVINCES,
        "product": _PRODUCTS,
        "field": _FIELDS,
        "award": _AWARDS,
    }[kind]
    return rng.choice(pool)


def _other_value(kind: str, value: str, rng: random.Random, names: _Names) -> str:
    """A different value of the same kind (a plausible wrong one)."""
    for _ in range(100):
        if kind == "year":
            v = str(int(value) + rng.choice([-1, 1]) * rng.randint(2, 40))
        elif kind == "count":
            hundreds = max(1, int(value.replace(",", "")) // 100 + rng.choice([-1, 1]) * rng.randint(5, 300))
            v = f"{hundreds * 100:,}"
        else:
            v = _value(kind, rng, names)
        if v != value:
            return v
    raise RuntimeError("no other value")  # pragma: no cover


def generate_kb(entities: int, seed: int) -> list[Entity]:
    """``entities`` fictional entities with attribute statuses drawn so every entity has at least
    one stated attribute and, across entities, every status is common."""
    rng = random.Random(f"factcheck-kb:{seed}")
    names = _Names(rng)
    out = []
    for i in range(entities):
        kind = _KINDS[i % len(_KINDS)]
        name = {"town": names.town, "company": names.company, "scientist": names.scientist}[kind]()
        attrs: dict[str, Attribute] = {}
        statuses = ["stated"] + [rng.choices(STATUSES, weights=[4, 2, 2, 2])[0] for _ in range(4)]
        rng.shuffle(statuses)
        if "stated" not in statuses:  # pragma: no cover - the first draw is stated
            statuses[0] = "stated"
        for (attr, (vkind, _)), status in zip(TEMPLATES[kind].items(), statuses, strict=True):
            value = _value(vkind, rng, names)
            other = _other_value(vkind, value, rng, names) if status in ("outdated", "disputed") else None
            attrs[attr] = Attribute(attr, value, status, other)
        out.append(Entity(f"e{i:05d}", kind, name, attrs))
    return out


def fact_sentence(kind: str, attribute: str, name: str, value: str) -> str:
    """The clause stating ``attribute = value`` of an entity (pages and claims share it)."""
    return TEMPLATES[kind][attribute][1].format(name=name, value=value)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def write_pages(entity: Entity, rng: random.Random) -> list[Page]:
    """Three to five short pages about ``entity``. Page 0 is an archived page (updated 1998-2008),
    the others are current (2016-2024). Stated attributes appear on one or two pages with the true
    value; an outdated one on the archived page with the former value and on a current page with
    the true one; a disputed one on two current pages of the same year with the two values (so
    neither supersedes the other); an unstated one nowhere. Every page has at least one fact."""
    n_pages = rng.randint(3, min(5, len(_SOURCES)))
    sources = rng.sample(_SOURCES, n_pages)
    years = [rng.randint(1998, 2008)] + [rng.randint(2016, 2024) for _ in range(n_pages - 1)]
    current = list(range(1, n_pages))
    dispute_year = rng.randint(2016, 2024)
    facts: list[list[tuple[str, str]]] = [[] for _ in range(n_pages)]
    for a in entity.attributes.values():
        if a.status == "stated":
            for p in rng.sample(range(n_pages), rng.randint(1, 2)):
                facts[p].append((a.name, a.value))
        elif a.status == "outdated":
            facts[0].append((a.name, str(a.other)))
            facts[rng.choice(current)].append((a.name, a.value))
        elif a.status == "disputed":
            p, q = rng.sample(current, 2)
            facts[p].append((a.name, a.value))
            facts[q].append((a.name, str(a.other)))
            years[p] = years[q] = dispute_year
    out = []
    stated = [a for a in entity.attributes.values() if a.status == "stated"]
    for i, ((src, src_title), fs) in enumerate(zip(sources, facts, strict=True)):
        if not fs:
            fs.append((stated[0].name, stated[0].value))
        rng.shuffle(fs)
        body = " ".join(_cap(fact_sentence(entity.kind, n, entity.name, v)) + "." for n, v in fs)
        intro = {"town": "is a town", "company": "is a company", "scientist": "is a scientist"}[entity.kind]
        slug = entity.name.lower().replace(" ", "-")
        out.append(
            Page(
                id=f"{entity.id}-p{i}",
                entity_id=entity.id,
                title=f"{entity.name} ({src_title})",
                url=f"https://{src}.example/{entity.kind}/{slug}",
                updated=years[i],
                text=f"{entity.name} {intro}. {body} (Last updated {years[i]}.)",
            )
        )
    return out


def _claim(entity: Entity, attr: str, value: str) -> Claim:
    return Claim(
        entity.id,
        attr,
        value,
        claim_label(entity.attributes[attr], value),
        fact_sentence(entity.kind, attr, entity.name, value),
    )


def _claim_with(
    entity: Entity, want: str, rng: random.Random, names: _Names, avoid: set[str]
) -> Claim | None:
    """A claim about ``entity`` whose label is ``want``, or None when the entity cannot give one."""
    options = []
    for a in entity.attributes.values():
        if a.name in avoid:
            continue
        vkind = TEMPLATES[entity.kind][a.name][0]
        if want == "accurate" and a.status in ("stated", "outdated"):
            options.append((a.name, a.value))
        elif want == "unsupported" and a.status == "unstated":
            options.append((a.name, rng.choice([a.value, _other_value(vkind, a.value, rng, names)])))
        elif want == "disputed" and a.status == "disputed":
            options.append((a.name, rng.choice([a.value, str(a.other)])))
        elif want == "inaccurate" and a.status != "unstated":
            wrong = str(a.other) if a.status == "outdated" and rng.random() < 0.5 else None
            if wrong is None:
                wrong = _other_value(vkind, a.value, rng, names)
                while wrong == a.other:
                    wrong = _other_value(vkind, a.value, rng, names)
            options.append((a.name, wrong))
    if not options:
        return None
    attr, value = rng.choice(options)
    return _claim(entity, attr, value)


def make_sentences(entity: Entity, per_entity: int, rng: random.Random) -> Iterator[FactItem]:
    """Up to ``per_entity`` distinct sentences about ``entity``, cycling through the four labels (one or two
    claims each; in a two-claim sentence the second claim is accurate, so the label comes from the
    first one and from :func:`sentence_label`)."""
    names = _Names(rng)
    targets = list(LABELS)
    rng.shuffle(targets)
    made = 0
    seen: set[str] = set()
    for k in range(per_entity * 3):
        if made == per_entity:
            break
        want = targets[k % len(targets)]
        first = _claim_with(entity, want, rng, names, set())
        if first is None:
            continue
        claims = [first]
        if rng.random() < 0.4:
            second = _claim_with(entity, "accurate", rng, names, {first.attribute})
            if second is not None:
                claims.append(second)
        text = " and ".join(c.text for c in claims)
        if text in seen:  # the same sentence twice would be one item under two ids
            continue
        seen.add(text)
        label = sentence_label([c.label for c in claims])
        yield FactItem(f"{entity.id}-s{made}", _cap(text) + ".", label, claims, entity.id)
        made += 1


@dataclass
class FactcheckSet:
    """Sentences to rate and the corpus their evidence lives in (and, when generated, the
    knowledge base both came from)."""

    items: list[FactItem]
    pages: list[Page]
    entities: list[Entity] = field(default_factory=list)
    name: str = "factcheck"


def generate_factcheck(
    entities: int = 300, per_entity: int = 8, seed: int = 0, n: int | None = None
) -> FactcheckSet:
    """The generated set: ``entities`` entities (default 300: about 1,200 pages and 2,400
    sentences), ``per_entity`` sentences each, all deterministic from ``seed``; ``n`` keeps the
    first n sentences (the corpus stays whole)."""
    if entities < 1:
        raise ConfigError(f"factcheck: entities must be at least 1, got {entities}")
    if per_entity < 1:
        raise ConfigError(f"factcheck: per_entity must be at least 1, got {per_entity}")
    if n is not None and n < 0:
        raise ConfigError(f"factcheck: n must be >= 0, got {n}")
    kb = generate_kb(entities, seed)
    pages: list[Page] = []
    items: list[FactItem] = []
    for e in kb:
        rng = random.Random(f"factcheck-entity:{seed}:{e.id}")
        pages.extend(write_pages(e, rng))
        items.extend(make_sentences(e, per_entity, rng))
    # interleave entities so the first n sentences cover many entities and every label
    order = random.Random(f"factcheck-order:{seed}")
    order.shuffle(items)
    if n is not None:
        items = items[:n]
    return FactcheckSet(items, pages, kb)
