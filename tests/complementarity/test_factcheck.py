"""The generated factcheck set: ground truth re-derived independently, from the corpus text as a
reader would (which values the pages give, and how recent each page is) and from the knowledge
base; offline search ranked by bm25; the loader for user files; the registry and CLI entries."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from seerbench.datasets import get_dataset, load_dataset
from seerbench.errors import ConfigError, DataError
from seerbench.factcheck import (
    CorpusIndex,
    FactcheckSet,
    Page,
    generate_factcheck,
    load_factcheck,
    load_factcheck_files,
)
from tests.test_cli_global import one_line_error, run_main

# The phrase each attribute is written with on the pages, written out here independently of the
# generator's templates: (attribute, regex capturing the value after the entity's name).
PHRASES = {
    "founded": r"was founded in (\d{4})\b",
    "population": r"has a population of ([\d,]+)",
    "river": r"lies on the river (\w+)",
    "province": r"is in the province of ([\w ]+?)[.]",
    "mayor": r"[Tt]he mayor of {name} is ([\w ]+?)[.]",
    "headquarters": r"has its headquarters in (\w+)",
    "founder": r"was founded by ([\w ]+?)[.]",
    "employees": r"employs ([\d,]+) people",
    "product": r"is best known for its ([\w ]+?)[.]",
    "born": r"was born in (\d{4})\b",
    "birthplace": r"was born in the town of (\w+)",
    "field": r"works in ([\w ]+?)[.]",
    "award": r"received the ([\w ]+?)[.]",
    "university": r"teaches at the University of (\w+)",
}


def _page_values(page: Page, name: str, attribute: str) -> list[str]:
    pat = PHRASES[attribute].replace("{name}", re.escape(name))
    if "{name}" not in PHRASES[attribute]:
        pat = re.escape(name) + " " + pat
    return re.findall(pat, page.text)


def _reader_label(pages: list[Page], name: str, attribute: str, value: str) -> str:
    """What a careful reader of the corpus concludes about one claim: no page on the attribute ->
    unsupported; among the most recent pages that state it, one value -> accurate if it is the
    claimed one, else inaccurate; two values -> disputed if the claim is one of them, else
    inaccurate (both contradict it)."""
    stated = [(p.updated, v) for p in pages for v in _page_values(p, name, attribute)]
    if not stated:
        return "unsupported"
    latest = max(y for y, _ in stated)
    current = {v for y, v in stated if y == latest}
    if len(current) > 1:
        return "disputed" if value in current else "inaccurate"
    return "accurate" if value in current else "inaccurate"


def _combine(labels: list[str]) -> str:
    if "inaccurate" in labels:
        return "inaccurate"
    if "disputed" in labels:
        return "disputed"
    if "unsupported" in labels:
        return "unsupported"
    return "accurate"


@pytest.fixture(scope="module")
def fc() -> FactcheckSet:
    return generate_factcheck(entities=120, per_entity=8, seed=3)


def test_ground_truth_rederived_from_the_corpus_text(fc: FactcheckSet) -> None:
    pages: dict[str, list[Page]] = {}
    for p in fc.pages:
        pages.setdefault(p.entity_id, []).append(p)
    names = {e.id: e.name for e in fc.entities}
    for it in fc.items:
        name = names[str(it.entity_id)]
        # the sentence says exactly its claims, joined by "and"
        assert it.sentence.rstrip(".").lower() == " and ".join(c.text for c in it.claims).lower()
        labels = []
        for c in it.claims:
            got = _reader_label(pages[str(it.entity_id)], name, c.attribute, c.value)
            assert got == c.label, (it.id, c)
            labels.append(got)
        assert _combine(labels) == it.label, it.id


def test_ground_truth_rederived_from_the_knowledge_base(fc: FactcheckSet) -> None:
    kb = {e.id: e for e in fc.entities}
    for it in fc.items:
        for c in it.claims:
            a = kb[c.entity_id].attributes[c.attribute]
            if c.label == "accurate":
                assert c.value == a.value and a.status in ("stated", "outdated")
            elif c.label == "unsupported":
                assert a.status == "unstated"
            elif c.label == "disputed":
                assert a.status == "disputed" and c.value in (a.value, a.other)
            else:
                assert a.status != "unstated" and c.value != a.value


def test_every_status_leaves_its_mark_on_the_corpus(fc: FactcheckSet) -> None:
    pages: dict[str, list[Page]] = {}
    for p in fc.pages:
        pages.setdefault(p.entity_id, []).append(p)
    for e in fc.entities:
        assert 3 <= len(pages[e.id]) <= 5
        for a in e.attributes.values():
            found = {(p.updated, v) for p in pages[e.id] for v in _page_values(p, e.name, a.name)}
            values = {v for _, v in found}
            if a.status == "unstated":
                assert not found
            elif a.status == "stated":
                assert values == {a.value}
            elif a.status == "outdated":  # former value only on an older page than the current one
                assert values == {a.value, a.other}
                assert max(y for y, v in found if v == a.other) < min(y for y, v in found if v == a.value)
            else:
                assert values == {a.value, a.other}
                assert len({y for y, _ in found}) == 1


def test_deterministic_thousands_and_every_label() -> None:
    a, b = generate_factcheck(seed=0), generate_factcheck(seed=0)
    assert [i.to_dict() for i in a.items] == [i.to_dict() for i in b.items]
    assert [p.to_dict() for p in a.pages] == [p.to_dict() for p in b.pages]
    assert len(a.items) >= 2000 and len(a.pages) >= 900
    counts = Counter(i.label for i in a.items)
    assert set(counts) == {"accurate", "inaccurate", "unsupported", "disputed"}
    assert min(counts.values()) > 200
    c = generate_factcheck(seed=1)
    assert [i.sentence for i in c.items[:20]] != [i.sentence for i in a.items[:20]]
    assert [i.id for i in generate_factcheck(seed=0, n=7).items] == [i.id for i in a.items[:7]]


def test_search_ranks_by_bm25() -> None:
    pages = [
        Page("a", "", "Alpha", "", 2020, "Quorvel is a town. The river Venn is wide."),
        Page("b", "", "Beta", "", 2020, "Quorvel Quorvel Quorvel is mentioned three times here."),
        Page("c", "", "Gamma", "", 2020, "Nothing relevant at all."),
    ]
    ix = CorpusIndex(pages)
    # both match "quorvel"; b has it three times in a text of similar length: ranked first
    assert [r.page.id for r in ix.search("quorvel")] == ["b", "a"]
    assert ix.search("venn")[0].page.id == "a"
    assert ix.search("") == [] and ix.search("  ?! ") == []
    assert [r.page.id for r in ix.search('NOT "quorvel" (OR')] == ["b", "a"]  # operators are plain words
    # the title counts twice as much as the text
    ix2 = CorpusIndex(
        [Page("t", "", "Venn", "", 1, "about rivers"), Page("x", "", "Other", "", 1, "about Venn rivers")]
    )
    assert ix2.search("venn")[0].page.id == "t"
    with pytest.raises(ConfigError, match="twice"):
        CorpusIndex([*pages, pages[0]])


def test_search_finds_the_entity_pages(fc: FactcheckSet) -> None:
    ix = CorpusIndex(fc.pages)
    names = {e.id: e.name for e in fc.entities}
    hits = 0
    for it in fc.items[:100]:
        top = ix.search(names[str(it.entity_id)], k=3)
        hits += all(r.page.entity_id == it.entity_id for r in top)
    assert hits >= 95


def test_user_files(tmp_path: Path) -> None:
    s = tmp_path / "s.jsonl"
    s.write_text(
        json.dumps({"id": "x1", "sentence": "Venn is a river.", "label": "Accurate"})
        + "\n"
        + json.dumps({"id": "x2", "sentence": "Venn is dry.", "label": "disputed"})
        + "\n"
    )
    c = tmp_path / "c.csv"
    c.write_text("id,title,text,updated\np1,Venn,Venn is a river.,2020\n")
    fc = load_factcheck_files(s, c)
    assert [(i.id, i.label) for i in fc.items] == [("x1", "accurate"), ("x2", "disputed")]
    assert fc.pages[0].updated == 2020 and fc.pages[0].title == "Venn"
    qs = load_dataset("factcheck_files", path=str(s), corpus=str(c))
    assert [q.true_case.short for q in qs] == ["accurate", "inaccurate"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x1", "sentence": "s", "label": "maybe"}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:1: label 'maybe'"):
        load_factcheck_files(bad, c)
    bad.write_text(json.dumps({"id": "x1", "label": "accurate"}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:1: missing field 'sentence'"):
        load_factcheck_files(bad, c)
    c.write_text("id,text\np1,a\np1,b\n")
    with pytest.raises(DataError, match=r"c.csv:3: page id 'p1' appears twice"):
        load_factcheck_files(s, c)
    with pytest.raises(ConfigError, match="needs corpus"):
        load_factcheck("factcheck_files", path=str(s))
    with pytest.raises(ConfigError, match="no option"):
        load_factcheck("factcheck", bogus=1)


def test_registry_and_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_dataset("factcheck").kind == "generated"
    qs = load_dataset("factcheck", entities=30, n=12, seed=2)
    assert len(qs) == 12
    for q in qs:
        assert q.is_binary and q.true_case.short == (
            "accurate" if q.metadata["label"] == "accurate" else "inaccurate"
        )
        assert q.source_text and q.metadata["entity_id"] in q.source_text
    code, out, err = run_main(["datasets", "show", "factcheck", "-n", "2", "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["total"] == 2
    code, out, err = run_main(["datasets", "show", "factcheck", "-o", "entities=0"], capsys, monkeypatch)
    assert code == 2 and "entities must be at least 1" in one_line_error(err)
