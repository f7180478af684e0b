"""The AI rater (seed 000, 2.2): the format verifier counts and excludes malformed samples, the
rating is the majority of verified samples and the confidence is over verified samples only,
worked by hand with a scripted model; the run folder resumes and feeds the analysis; the CLI's
failure paths; the embedded model end to end."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from seerbench.complementarity import ai_items, analyze, read_ai_ratings, simulate_judgments
from seerbench.factcheck import Page, RaterConfig, aggregate, rate, verify_sample
from seerbench.models import ChatMessage, GenerateConfig, read_usage, register_scripted
from tests.test_cli_global import one_line_error, run_main

CORPUS = [
    {
        "id": "p1",
        "title": "Quorvel (Almanac)",
        "text": "Quorvel was founded in 1850. (Last updated 2020.)",
        "updated": 2020,
    },
    {
        "id": "p2",
        "title": "Quorvel (Gazette)",
        "text": "Quorvel lies on the river Venn. (Last updated 2019.)",
        "updated": 2019,
    },
]
SENTENCES = [
    {"id": "s1", "sentence": "Quorvel was founded in 1850.", "label": "accurate"},
    {"id": "s2", "sentence": "Quorvel lies on the river Aldra.", "label": "inaccurate"},
    {"id": "s3", "sentence": "Quorvel has three bridges.", "label": "unsupported"},
]

ACC = (
    'EVIDENCE 1: [p1] "Quorvel was founded in 1850."\n'
    "REASONING 1: The almanac gives 1850 (E1).\nJUDGMENT 1: accurate\nOVERALL: accurate"
)
# For s1, sample i gives S1[i]: 4 pass the verifier (3 accurate, 1 inaccurate), 3 do not.
S1 = [
    ACC.replace('1850."', '1851."'),  # 0: quote_not_verbatim
    ACC,  # 1: verified, accurate
    ACC.replace(
        "JUDGMENT 1: accurate\nOVERALL: accurate", "JUDGMENT 1: inaccurate\nOVERALL: inaccurate"
    ),  # 2: verified
    ACC,  # 3: verified, accurate
    ACC.replace("\nOVERALL: accurate", ""),  # 4: no_overall
    ACC,  # 5: verified, accurate
    ACC.replace("JUDGMENT 1: accurate", "JUDGMENT 1: inaccurate"),  # 6: overall_inconsistent
]
VENN = (
    'EVIDENCE 1: [p2] "lies on the river Venn"\n'
    "REASONING 1: The river is the Venn, not the Aldra (E1).\nJUDGMENT 1: inaccurate\nOVERALL: inaccurate"
)
S2 = [VENN.replace("[p2]", "[p9]"), VENN.replace(" (E1)", ""), VENN, VENN, VENN, VENN, VENN]  # 0, 1 rejected


def _responder(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    first_user = next(m.content for m in messages if m.role == "user")
    i = (config.seed or 0) // 7919  # the rater's seed for sample i (config seed 0)
    if len(messages) == 2:
        claim = first_user.split("Sentence: ", 1)[1].split("\n", 1)[0]
        return f"CLAIM 1: {claim}\nSEARCH(Quorvel)"
    if "founded in 1850" in first_user:
        return S1[i]
    if "Aldra" in first_user:
        return S2[i]
    return "I am not sure."


register_scripted("fc-hand", _responder, replace=True)


def _files(tmp: Path) -> tuple[Path, Path]:
    s, c = tmp / "sentences.jsonl", tmp / "corpus.jsonl"
    s.write_text("".join(json.dumps(x) + "\n" for x in SENTENCES))
    c.write_text("".join(json.dumps(x) + "\n" for x in CORPUS))
    return s, c


def _config(tmp: Path, **kw: object) -> RaterConfig:
    s, c = _files(tmp)
    return RaterConfig.parse(
        {
            "model": "scripted:fc-hand",
            "out": str(tmp / "run"),
            "samples": 7,
            "dataset": {"name": "factcheck_files", "path": str(s), "corpus": str(c)},
            **kw,
        }
    )


def test_verifier_counts_and_excludes_malformed_samples(tmp_path: Path) -> None:
    res = asyncio.run(rate(_config(tmp_path)))
    assert not res.failed
    by = {r.item_id: r for r in res.ratings}
    s1, s2, s3 = by["s1"], by["s2"], by["s3"]
    # s1: 7 samples, 4 verified (1, 2, 3, 5): 3 accurate, 1 inaccurate -> accurate, 3/4 (not 3/7)
    assert (s1.n_samples, s1.n_verified, s1.rating, s1.votes) == (
        7,
        4,
        "accurate",
        {"accurate": 3, "inaccurate": 1},
    )
    assert s1.confidence == pytest.approx(0.75)
    assert s1.trace["verifier"]["rejected"] == {
        "no_overall": 1,
        "quote_not_verbatim": 1,
        "overall_inconsistent": 1,
    }
    # representative: the first verified sample giving the rating; two-sided: first for, first against
    assert s1.trace["sample"] == 1
    assert s1.trace["two_sided"]["for"]["sample"] == 1 and s1.trace["two_sided"]["against"]["sample"] == 2
    assert s1.trace["evidence"] == [
        {
            "n": 1,
            "page_id": "p1",
            "quote": "Quorvel was founded in 1850.",
            "title": "Quorvel (Almanac)",
            "url": "",
        }
    ]
    assert s1.trace["reasoning"] == [
        {"n": 1, "claim": "Quorvel was founded in 1850.", "reasoning": "The almanac gives 1850 (E1)."}
    ]
    assert s1.trace["judgments"]["overall"] == "accurate"
    assert s1.trace["search_results"][0]["query"] == "Quorvel"
    assert {h["page_id"] for h in s1.trace["search_results"][0]["results"]} == {"p1", "p2"}
    assert s1.trace["confidence"] == {"value": 0.75, "level": "medium", "verified": 4, "samples": 7}
    # s2: samples 0 (page never retrieved) and 1 (reasoning cites nothing) rejected; 5 of 5 agree
    assert (s2.n_verified, s2.rating, s2.confidence) == (5, "inaccurate", 1.0)
    assert s2.trace["verifier"]["rejected"] == {"evidence_not_retrieved": 1, "uncited_reasoning": 1}
    assert s2.trace["two_sided"]["for"] is None and s2.trace["two_sided"]["against"]["sample"] == 2
    # s3: nothing verified: no rating, no confidence, no guess
    assert (s3.n_verified, s3.rating, s3.confidence, s3.votes) == (0, None, None, {})
    assert s3.trace["verifier"]["rejected"] == {"no_overall": 7}  # claims from step 1, then no OVERALL
    # the samples file says why each sample was rejected
    lines = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    s1_samples = next(x for x in lines if x["item_id"] == "s1")["samples"]
    assert [x["verified"] for x in s1_samples] == [False, True, True, True, False, True, False]


def test_run_folder_feeds_the_analysis_and_resumes(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    asyncio.run(rate(cfg))
    # the folder's usage log: 3 sentences x 7 samples x 2 turns (claims + search, then the rating)
    used = read_usage(tmp_path / "run")
    assert used is not None and used["runs"] == 1
    assert used["models"]["scripted:fc-hand"]["calls"] + used["total"]["cache_hits"] == 3 * 7 * 2
    ai = ai_items(read_ai_ratings(tmp_path / "run"))
    # s1 right at 0.75, s2 right at 1.0 (inaccurate = inaccurate), s3 no rating: wrong, confidence 0
    assert ai.ids == ["s1", "s2", "s3"]
    assert ai.correct.tolist() == [1.0, 1.0, 0.0] and ai.confidence.tolist() == [0.75, 1.0, 0.0]
    ratings = read_ai_ratings(tmp_path / "run")
    rows = simulate_judgments(ratings, {"none": 0.0}, n_raters=6, ratings_per_item=2, seed=1)
    rep = analyze(
        ratings, rows, unassisted="none", thresholds=[0.0, 0.8], n_boot=50, mixed=False, repeats=2, folds=3
    )
    assert rep.hybrid[0].ai_alone.estimate == pytest.approx(2 / 3)
    # resume: a torn last line and a missing sentence are redone, nothing else is
    path = tmp_path / "run" / "ratings.jsonl"
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n" + lines[1][:20])
    res = asyncio.run(rate(cfg))
    assert res.resumed == 1 and [r.item_id for r in res.ratings] == ["s1", "s2", "s3"]
    assert path.read_text().splitlines() == lines
    used = read_usage(tmp_path / "run")  # the second run's 2 sentences added to the first's
    assert used is not None and used["runs"] == 2
    assert used["models"]["scripted:fc-hand"]["calls"] + used["total"]["cache_hits"] == 5 * 7 * 2
    assert len((tmp_path / "run" / "samples.jsonl").read_text().splitlines()) == 3
    # a smaller limit rates nothing new and deletes nothing (it cut both files to the limit)
    samples = (tmp_path / "run" / "samples.jsonl").read_text()
    res = asyncio.run(rate(cfg.model_copy(update={"limit": 1})))
    assert res.resumed == 1 and path.read_text().splitlines() == lines
    assert (tmp_path / "run" / "samples.jsonl").read_text() == samples


def test_aggregate_ties_and_empty() -> None:
    assert aggregate(["accurate", "inaccurate", None]) == (
        "inaccurate",
        0.5,
        {"accurate": 1, "inaccurate": 1},
    )
    assert aggregate(["disputed", "unsupported"])[0] == "disputed"
    assert aggregate([None, None]) == (None, None, {})
    r, c, _ = aggregate(["accurate"] * 3 + ["unsupported"] * 2 + [None] * 5)
    assert (r, c) == ("accurate", pytest.approx(0.6))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("OVERALL: accurate", "no_claims"),
        ("CLAIM 2: x\n" + ACC, "claim_numbering"),
        ("CLAIM 1: x\n" + ACC.replace("OVERALL: accurate", "OVERALL: true"), "no_overall"),
        ("CLAIM 1: x\n" + ACC.replace("JUDGMENT 1: accurate", "JUDGMENT 1: fine"), "bad_judgment"),
        ("CLAIM 1: x\nCLAIM 2: y\n" + ACC + "\nJUDGMENT 2: accurate", "no_reasoning"),
        ("CLAIM 1: x\nREASONING 1: E1\nJUDGMENT 1: accurate\nOVERALL: accurate", "no_evidence"),
        ("CLAIM 1: x\n" + ACC + '\nEVIDENCE 2: [p2] "Quorvel lies"', "unused_evidence"),
        ("CLAIM 1: x\n" + ACC, None),
        ("CLAIM 1: x\n" + ACC.replace("Quorvel was", "Quorvel   was"), None),  # white space folded
    ],
)
def test_verifier_rules(text: str, reason: str | None) -> None:
    pages = {
        str(p["id"]): Page(str(p["id"]), "", str(p["title"]), "", int(str(p["updated"])), str(p["text"]))
        for p in CORPUS
    }
    check = verify_sample(text, pages)
    assert check.ok == (reason is None) and check.reason == reason


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    s, c = _files(tmp_path)
    cfg = tmp_path / "fc.yaml"
    cfg.write_text(
        "model: scripted:fc-hand\nout: run\nsamples: 7\n"
        f"dataset: {{name: factcheck_files, path: {s}, corpus: {c}}}\n"
    )
    code, out, err = run_main(["rate", str(cfg), "--json"], capsys, monkeypatch)
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["sentences"], summary["samples"], summary["verified_samples"]) == (3, 21, 9)
    assert summary["run_dir"] == str(tmp_path / "run")
    # another config into the same folder: refused, one line
    code, out, err = run_main(["rate", str(cfg), "--samples", "5"], capsys, monkeypatch)
    assert code == 2 and "another rater config" in one_line_error(err)
    for bad, msg in [
        ("samples: 0\n", "samples"),
        ("sample: 3\n", "unknown key"),
        ("dataset: {entities: 3}\n", "needs a name"),
        ("dataset: {name: factcheck, bogus: 1}\n", "no option"),
        ("[1, 2]\n", "mapping"),
    ]:
        cfg.write_text(bad)
        code, out, err = run_main(["rate", str(cfg), "--out", str(tmp_path / "other")], capsys, monkeypatch)
        assert code == 2 and msg in one_line_error(err), err
    code, out, err = run_main(["rate", str(tmp_path / "missing.yaml")], capsys, monkeypatch)
    assert code == 2 and "does not exist" in one_line_error(err)


def test_failed_model_calls_exit_nonzero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
        if "Aldra" in messages[-1].content:
            raise RuntimeError("backend down")
        return _responder(messages, config, seed)

    register_scripted("fc-boom", boom, replace=True)
    s, c = _files(tmp_path)
    cfg = tmp_path / "fc.yaml"
    cfg.write_text(
        "model: scripted:fc-boom\nout: run\nsamples: 2\n"
        f"dataset: {{name: factcheck_files, path: {s}, corpus: {c}}}\n"
    )
    code, _out, err = run_main(["rate", str(cfg)], capsys, monkeypatch)
    assert code == 1 and "1 sentences failed" in err and "backend down" in err
    assert [r.item_id for r in read_ai_ratings(tmp_path / "run")] == ["s1", "s3"]


@pytest.mark.model
@pytest.mark.slow
def test_embedded_model_end_to_end(tmp_path: Path) -> None:
    cfg = RaterConfig.parse(
        {
            "model": "local",
            "out": str(tmp_path / "run"),
            "samples": 2,
            "limit": 2,
            "max_tokens": 96,
            "max_search_rounds": 1,
            "dataset": {"name": "factcheck", "entities": 12, "seed": 0},
        }
    )
    res = asyncio.run(rate(cfg))
    assert not res.failed and len(res.ratings) == 2
    for r in res.ratings:
        assert r.n_samples == 2 and 0 <= r.n_verified <= 2
        assert (r.rating is None) == (r.n_verified == 0)
        assert sum(r.trace["verifier"]["rejected"].values()) == 2 - r.n_verified
    ai_items(read_ai_ratings(tmp_path / "run"))  # the analysis reads it
    again = asyncio.run(rate(cfg.model_copy(update={"out": str(tmp_path / "run2")})))  # all from the cache
    assert [r.trace for r in again.ratings] == [r.trace for r in res.ratings]


def test_scripted_stand_in_plays_the_protocol(tmp_path: Path) -> None:
    # scripted:factcheck (docs/complementarity.md's quick flow): it must pass the verifier except
    # where it drops OVERALL on purpose, judge most generated sentences right, and vary its confidence
    cfg = RaterConfig.parse(
        {
            "model": "scripted:factcheck",
            "out": str(tmp_path / "run"),
            "samples": 10,
            "limit": 60,
            "results_per_query": 5,
            "dataset": {"name": "factcheck", "entities": 40, "seed": 4},
        }
    )
    res = asyncio.run(rate(cfg))
    assert len(res.ratings) == 60
    for r in res.ratings:
        assert set(r.trace["verifier"]["rejected"]) <= {"no_overall"}
        assert r.n_verified == 10 - r.trace["verifier"]["rejected"].get("no_overall", 0)
    assert sum(r.rating == r.label for r in res.ratings) >= 45
    assert len({r.confidence for r in res.ratings}) > 3


def test_unknown_model_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s, c = _files(tmp_path)
    cfg = tmp_path / "fc.yaml"
    cfg.write_text(
        "model: scripted:nope\nout: run\nsamples: 2\n"
        f"dataset: {{name: factcheck_files, path: {s}, corpus: {c}}}\n"
    )
    code, _out, err = run_main(["rate", str(cfg)], capsys, monkeypatch)
    assert code == 2 and "unknown scripted responder 'nope'" in one_line_error(err)
    assert not (tmp_path / "run").exists()
    # the corrected config then runs in that folder
    code, _out, err = run_main(["rate", str(cfg), "--model", "scripted:fc-hand"], capsys, monkeypatch)
    assert code == 0, err


def test_config_file_paths_are_read_from_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # factcheck_files' path and corpus, like out, are relative to the config file (they were
    # relative to the working directory), and the fingerprint follows the files' content
    folder = tmp_path / "study"
    folder.mkdir()
    _files(folder)
    cfg_file = folder / "rater.yaml"
    cfg_file.write_text(
        json.dumps(
            {
                "model": "scripted:fc-hand",
                "samples": 7,
                "out": "../runs/fc",
                "dataset": {"name": "factcheck_files", "path": "sentences.jsonl", "corpus": "corpus.jsonl"},
            }
        )
    )
    monkeypatch.chdir(tmp_path)
    cfg = RaterConfig.from_yaml("study/rater.yaml")
    assert cfg.dataset["path"] == str(folder / "sentences.jsonl") and cfg.out == str(tmp_path / "runs" / "fc")
    assert len(asyncio.run(rate(cfg)).ratings) == 3
    monkeypatch.chdir(folder)
    again = RaterConfig.from_yaml("rater.yaml")
    assert again.fingerprint() == cfg.fingerprint()
    assert asyncio.run(rate(again)).resumed == 3
