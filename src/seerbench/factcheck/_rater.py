"""The AI fact-verification rater of seed 000 (section 2.2 and A.2.2).

One *sample* is one episode with the model: (1) it decomposes the sentence into claims and writes
search queries, ``SEARCH(words)``, which run over the corpus (:class:`CorpusIndex`, the ``SEARCH``
tool); (2) with the results in front of it (more searches allowed up to ``max_search_rounds``) it
writes, in a fixed line format, numbered evidence quoted from the pages, a reasoning and a judgment
per claim and an overall rating in seed 000's labels (accurate, inaccurate, unsupported, disputed).

The **format verifier** (:func:`verify_sample`) accepts a sample only when every rule of the seed's
verifier holds: claims numbered 1..k each with a reasoning and a valid judgment; an overall rating;
at least one piece of evidence; each quote verbatim (:func:`seerbench.quotes.verify_quote`) in a
page this sample's searches returned; each reasoning cites evidence and each piece of evidence is
cited; the overall rating is accurate exactly when every claim is. A rejected sample is counted
under its first failed rule and never guessed at.

Of ``samples`` samples per sentence (50 by default, as in the seed), the **rating** is the most
common overall rating of the verified samples (ties go to the first of inaccurate, disputed,
unsupported, accurate) and the **confidence** is the share of verified samples that give it. With
no verified sample the rating and confidence are null. The trace of a **representative sample**
(the first verified sample, by index, that gives the rating: the seed used a reward model's best
of N, which seerbench does not have) is kept in parts that map one-to-one onto the seed's display
conditions: ``search_results``, ``evidence``, ``reasoning``, ``judgments``, ``confidence`` and
``two_sided`` (the first verified sample rating the sentence accurate, and the first rating it not
accurate).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from seerbench._lock import command_line, lock_folder
from seerbench._resume import claim_folder, config_path, content_id
from seerbench.config import explain_validation, read_yaml_mapping
from seerbench.errors import ConfigError, DataError
from seerbench.factcheck._generate import LABELS, FactItem, Page
from seerbench.factcheck._load import load_factcheck
from seerbench.factcheck._search import CorpusIndex, SearchResult, format_results
from seerbench.models import (
    USAGE_LOG,
    ChatMessage,
    GenerateConfig,
    Model,
    UsageLog,
    default_tracker,
    get_model,
)
from seerbench.plugins import load_plugins
from seerbench.quotes import verify_quote
from seerbench.records import AIRating, read_ai_ratings
from seerbench.store import append_line, keep_in_order, keyed_lines

#: Order in which a tie between overall ratings is broken (the seed's humans: a tie is Inaccurate).
TIE_ORDER: tuple[str, ...] = ("inaccurate", "disputed", "unsupported", "accurate")
#: Rejection reasons of the format verifier, in the order the rules are checked.
REJECTIONS: tuple[str, ...] = (
    "no_claims",
    "claim_numbering",
    "no_overall",
    "bad_judgment",
    "no_reasoning",
    "no_evidence",
    "evidence_not_retrieved",
    "quote_not_verbatim",
    "uncited_reasoning",
    "unused_evidence",
    "overall_inconsistent",
)

SYSTEM = (
    "You are a careful fact-checker. You verify a sentence using only a search tool over a document "
    "collection. Pages may be outdated (an older page superseded by a newer one) or disagree."
)
STEP1 = (
    "Sentence: {sentence}\n\n"
    "Step 1. List the factual claims of the sentence, one per line, as `CLAIM 1: ...`, `CLAIM 2: ...`.\n"
    "Step 2. Write search queries to check them, one per line, as `SEARCH(words)`."
)
FORMAT = (
    "CLAIM 1: <a factual claim of the sentence>\n"
    'EVIDENCE 1: [<page id>] "<words copied exactly from that page>"\n'
    "REASONING 1: <why claim 1 is or is not supported, citing evidence as E1, E2>\n"
    "JUDGMENT 1: accurate | inaccurate | unsupported | disputed\n"
    "OVERALL: accurate | inaccurate | unsupported | disputed"
)
STEP2 = (
    "{results}\n\n"
    "Search again with more SEARCH(words) lines if you need to. Otherwise write your fact-check in "
    "exactly this format (one CLAIM, REASONING and JUDGMENT line per claim, as many EVIDENCE lines as "
    "you need):\n" + FORMAT + "\n"
    "A claim is accurate if a current page supports it, inaccurate if the pages contradict it, "
    "disputed if current pages disagree, unsupported if no page says. The sentence is accurate "
    "only if every claim is."
)

_SEARCH = re.compile(r"SEARCH\(([^()\n]*)\)")
_CLAIM = re.compile(r"(?im)^\W*CLAIM\s*(\d+)\s*:\s*(.+?)\s*$")
_EVIDENCE = re.compile(r"(?im)^\W*EVIDENCE\s*(\d+)\s*:\s*\[([^\]\n]+)\]\s*[\"\u201c](.+)[\"\u201d]\s*$")
_REASONING = re.compile(r"(?im)^\W*REASONING\s*(\d+)\s*:\s*(.+?)\s*$")
_JUDGMENT = re.compile(r"(?im)^\W*JUDGMENT\s*(\d+)\s*:\s*([A-Za-z]+)")
_OVERALL = re.compile(r"(?im)^\W*OVERALL(?:\s+RATING)?\s*:\s*([A-Za-z]+)")
_CITE = re.compile(r"\bE(\d+)\b")


class RaterConfig(BaseModel):
    """``seerbench rate CONFIG``: what to rate, with which model, how many samples."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="factcheck", min_length=1)
    plugins: list[str] = Field(
        default_factory=list,
        description="Modules or .py files (relative to the config) that register backends or datasets.",
    )
    model: str = Field(default="local", min_length=1, description="Model spec (see `seerbench models`).")
    out: str = Field(
        default="runs/factcheck", min_length=1, description="Run folder (relative to the config)."
    )
    dataset: dict[str, Any] = Field(
        default_factory=lambda: {"name": "factcheck"}, description="name + options."
    )
    samples: int = Field(default=50, ge=1, description="Samples per sentence (seed 000: 50).")
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=400, ge=16)
    max_search_rounds: int = Field(default=2, ge=1, description="Rounds of searches per sample.")
    max_queries: int = Field(default=4, ge=1, description="Queries run per round (the first ones).")
    results_per_query: int = Field(default=3, ge=1, le=20)
    seed: int = 0
    limit: int | None = Field(default=None, ge=1, description="Rate only the first N sentences.")
    concurrency: int = Field(default=4, ge=1, description="Sentences in flight at once.")

    @classmethod
    def from_yaml(cls, path: str | Path) -> RaterConfig:
        p = Path(path)
        data = read_yaml_mapping(p, "rater config")
        load_plugins(data.get("plugins"), p.parent)  # first: they register what the config names
        cfg = cls.parse(data, str(p))
        out = Path(cfg.out)
        # paths in the config are read from its folder: out, and the files of factcheck_files
        dataset = {
            k: config_path(p.parent, v) if k in ("path", "corpus") and isinstance(v, str) else v
            for k, v in cfg.dataset.items()
        }
        return cfg.model_copy(update={"out": config_path(p.parent, str(out)), "dataset": dataset})

    @classmethod
    def parse(
        cls, data: dict[str, Any], where: str = "(dict)", *, flags: Mapping[str, str] | None = None
    ) -> RaterConfig:
        """``data`` validated (one line); ``flags``: the command-line flag that set each of these
        keys, named in place of the config file where its value is refused."""
        try:
            cfg = cls.model_validate(data)
        except ValidationError as e:
            raise ConfigError(
                explain_validation(
                    e, f"rater config {where}", model=cls, docs="docs/complementarity.md", flags=flags
                )
            ) from None
        if not isinstance(cfg.dataset.get("name"), str):
            raise ConfigError(f"rater config {where}: dataset: needs a name (factcheck or factcheck_files)")
        return cfg

    def fingerprint(self) -> str:
        """What decides the ratings (not where they go, how many run at once, or how many; input
        files by their content, not their path)."""
        keep = self.model_dump(exclude={"out", "concurrency", "limit", "name", "plugins"})
        keep["dataset"] = {
            k: content_id(v) if k in ("path", "corpus") and isinstance(v, str) else v
            for k, v in keep["dataset"].items()
        }
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


# ---- the format verifier ------------------------------------------------------------------------


@dataclass
class Evidence:
    n: int
    page_id: str
    quote: str
    title: str = ""
    url: str = ""


@dataclass
class SampleCheck:
    """A sample as the verifier read it: ``ok`` or the first failed rule (``reason``, ``detail``)."""

    ok: bool
    reason: str | None = None
    detail: str = ""
    claims: dict[int, str] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    reasoning: dict[int, str] = field(default_factory=dict)
    judgments: dict[int, str] = field(default_factory=dict)
    overall: str | None = None


def _reject(reason: str, detail: str, **parsed: Any) -> SampleCheck:
    return SampleCheck(False, reason, detail, **parsed)


def verify_sample(final: str, retrieved: dict[str, Page], first: str = "") -> SampleCheck:
    """Check one sample's final answer (and its first reply, ``first``, for the claims when the
    final answer does not repeat them) against the rules in the module docstring. ``retrieved``:
    the pages this sample's searches returned, by id."""
    claim_matches = _CLAIM.findall(final) or _CLAIM.findall(first)
    if not claim_matches:
        return _reject("no_claims", "no CLAIM lines")
    claims = {int(n): t for n, t in claim_matches}
    if sorted(claims) != list(range(1, len(claim_matches) + 1)):
        return _reject("claim_numbering", f"claims numbered {[int(n) for n, _ in claim_matches]}, not 1..k")
    parsed: dict[str, Any] = {"claims": claims}
    m = _OVERALL.search(final)
    overall = m.group(1).lower() if m else None
    if overall not in LABELS:
        return _reject("no_overall", "no OVERALL line with a valid label", **parsed)
    parsed["overall"] = overall
    judgments = {int(n): j.lower() for n, j in _JUDGMENT.findall(final)}
    reasoning = {int(n): t for n, t in _REASONING.findall(final)}
    parsed.update(judgments=judgments, reasoning=reasoning)
    for i in claims:
        if judgments.get(i) not in LABELS:
            return _reject("bad_judgment", f"claim {i} has no JUDGMENT with a valid label", **parsed)
        if not reasoning.get(i):
            return _reject("no_reasoning", f"claim {i} has no REASONING", **parsed)
    evidence = [Evidence(int(n), pid.strip(), q) for n, pid, q in _EVIDENCE.findall(final)]
    parsed["evidence"] = evidence
    if not evidence:
        return _reject("no_evidence", "no EVIDENCE line", **parsed)
    for ev in evidence:
        page = retrieved.get(ev.page_id)
        if page is None:
            return _reject(
                "evidence_not_retrieved",
                f"evidence {ev.n} cites page {ev.page_id!r}, not among this sample's search results",
                **parsed,
            )
        if not verify_quote(ev.quote, page.text):
            return _reject(
                "quote_not_verbatim",
                f"evidence {ev.n} is not a verbatim quote of page {ev.page_id}",
                **parsed,
            )
        ev.title, ev.url = page.title, page.url
    numbers = {ev.n for ev in evidence}
    cited: set[int] = set()
    for i in claims:
        refs = {int(x) for x in _CITE.findall(reasoning[i])} & numbers
        if not refs:
            return _reject(
                "uncited_reasoning", f"the reasoning of claim {i} cites no evidence (E1, E2...)", **parsed
            )
        cited |= refs
    unused = sorted(numbers - cited)
    if unused:
        return _reject("unused_evidence", f"evidence {unused[0]} is never cited", **parsed)
    if (overall == "accurate") != all(judgments[i] == "accurate" for i in claims):
        return _reject(
            "overall_inconsistent",
            f"overall {overall} but claim judgments {[judgments[i] for i in claims]}",
            **parsed,
        )
    return SampleCheck(True, **parsed)


def aggregate(overalls: Sequence[str | None]) -> tuple[str | None, float | None, dict[str, int]]:
    """Majority rating of the verified samples' overall ratings (None for a rejected sample), its
    confidence (share of verified samples agreeing) and the vote counts. Ties: :data:`TIE_ORDER`."""
    votes = Counter(o for o in overalls if o is not None)
    n = sum(votes.values())
    if n == 0:
        return None, None, {}
    top = max(votes.values())
    rating = next(lab for lab in TIE_ORDER if votes.get(lab, 0) == top)
    return rating, top / n, {lab: votes[lab] for lab in LABELS if votes.get(lab)}


def confidence_level(c: float) -> str:
    """The seed's range shown with the confidence: low below 0.7, medium below 0.9, else high."""
    return "low" if c < 0.7 else "medium" if c < 0.9 else "high"


# ---- one sample ---------------------------------------------------------------------------------


@dataclass
class SampleOutcome:
    index: int
    queries: list[dict[str, Any]]
    final: str
    check: SampleCheck

    def summary(self) -> dict[str, Any]:
        return {
            "sample": self.index,
            "verified": self.check.ok,
            "reason": self.check.reason,
            "detail": self.check.detail,
            "overall": self.check.overall,
            "queries": [q["query"] for q in self.queries],
        }


def _hit(r: SearchResult) -> dict[str, Any]:
    p = r.page
    return {"page_id": p.id, "title": p.title, "url": p.url, "updated": p.updated, "snippet": p.text}


async def run_sample(
    model: Model, sentence: str, index: CorpusIndex, cfg: RaterConfig, i: int
) -> SampleOutcome:
    """One episode (see the module docstring); sample ``i`` has its own seed, so it is cached apart."""
    gen = GenerateConfig(
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
        seed=(cfg.seed * 1_000_003 + i * 7_919) % (2**31 - 1),
    )
    msgs = [
        ChatMessage(role="system", content=SYSTEM),
        ChatMessage(role="user", content=STEP1.format(sentence=sentence)),
    ]
    first = text = (await model.generate(msgs, gen)).text
    queries: list[dict[str, Any]] = []
    retrieved: dict[str, Page] = {}
    for _ in range(cfg.max_search_rounds):
        asked = [q.strip() for q in _SEARCH.findall(text) if q.strip()][: cfg.max_queries]
        if not asked or (queries and _OVERALL.search(text)):
            break
        blocks = []
        for q in asked:
            hits = index.search(q, cfg.results_per_query)
            queries.append({"query": q, "results": [_hit(h) for h in hits]})
            retrieved.update((h.page.id, h.page) for h in hits)
            blocks.append(format_results(q, hits))
        msgs += [
            ChatMessage(role="assistant", content=text),
            ChatMessage(role="user", content=STEP2.format(results="\n\n".join(blocks))),
        ]
        text = (await model.generate(msgs, gen)).text
    return SampleOutcome(i, queries, text, verify_sample(text, retrieved, first))


def _parts(o: SampleOutcome) -> dict[str, Any]:
    """A verified sample's trace parts (all but confidence)."""
    c = o.check
    return {
        "sample": o.index,
        "search_results": o.queries,
        "evidence": [asdict(e) for e in c.evidence],
        "reasoning": [{"n": i, "claim": c.claims[i], "reasoning": c.reasoning[i]} for i in sorted(c.claims)],
        "judgments": {
            "claims": [{"n": i, "claim": c.claims[i], "judgment": c.judgments[i]} for i in sorted(c.claims)],
            "overall": c.overall,
        },
    }


def build_trace(
    outcomes: Sequence[SampleOutcome], rating: str | None, confidence: float | None
) -> dict[str, Any]:
    """The representative sample's parts, the confidence, the two-sided pair and the verifier's
    rejection counts (``verifier``)."""
    verified = [o for o in outcomes if o.check.ok]
    rejected = Counter(str(o.check.reason) for o in outcomes if not o.check.ok)
    trace: dict[str, Any] = {
        "verifier": {
            "samples": len(outcomes),
            "verified": len(verified),
            "rejected": {r: rejected[r] for r in REJECTIONS if rejected.get(r)},
        }
    }
    if rating is None or confidence is None:
        return trace
    rep = next(o for o in verified if o.check.overall == rating)
    trace.update(_parts(rep))
    trace["confidence"] = {
        "value": round(confidence, 4),
        "level": confidence_level(confidence),
        "verified": len(verified),
        "samples": len(outcomes),
    }
    pro = next((o for o in verified if o.check.overall == "accurate"), None)
    con = next((o for o in verified if o.check.overall != "accurate"), None)
    trace["two_sided"] = {"for": _parts(pro) if pro else None, "against": _parts(con) if con else None}
    return trace


async def rate_item(
    model: Model, item: FactItem, index: CorpusIndex, cfg: RaterConfig
) -> tuple[AIRating, list[SampleOutcome]]:
    """All samples of one sentence, verified and aggregated."""
    outcomes = list(
        await asyncio.gather(*(run_sample(model, item.sentence, index, cfg, i) for i in range(cfg.samples)))
    )
    rating, conf, votes = aggregate([o.check.overall if o.check.ok else None for o in outcomes])
    return AIRating(
        item_id=item.id,
        label=item.label,
        rating=rating,
        confidence=conf,
        sentence=item.sentence,
        n_samples=len(outcomes),
        n_verified=sum(o.check.ok for o in outcomes),
        votes=votes,
        trace=build_trace(outcomes, rating, conf),
    ), outcomes


# ---- a run folder -------------------------------------------------------------------------------


@dataclass
class RateResult:
    out: Path
    ratings: list[AIRating]
    failed: list[tuple[str, str]]
    resumed: int = 0


async def rate(
    cfg: RaterConfig,
    *,
    model: Model | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> RateResult:
    """Rate the config's sentences into ``cfg.out``: ``rater.json`` (the config and its
    fingerprint), ``ratings.jsonl`` (one :class:`AIRating` per sentence, what
    :func:`seerbench.complementarity.read_ai_ratings` reads) and ``samples.jsonl`` (every sample:
    verified or why not, its overall rating and queries). Resumes: sentences already in
    ``ratings.jsonl`` are kept; a folder of another config is refused. A sentence whose model
    calls fail is reported in ``failed`` and left out (run again to retry it). The folder is
    locked for the whole run: a second process on it is refused."""
    with lock_folder(Path(cfg.out), command_line()), ExitStack() as usage:
        return await _rate(cfg, model=model, progress=progress, usage=usage)


async def _rate(
    cfg: RaterConfig,
    *,
    model: Model | None,
    progress: Callable[[int, int, int], None] | None,
    usage: ExitStack,
) -> RateResult:
    fc = load_factcheck(str(cfg.dataset["name"]), **{k: v for k, v in cfg.dataset.items() if k != "name"})
    items = fc.items[: cfg.limit] if cfg.limit else fc.items
    if not items:
        raise DataError(f"dataset {cfg.dataset['name']!r} gave no sentences")
    m = model or get_model(cfg.model)  # an unknown model is an error before anything is written
    out = Path(cfg.out)
    claim_folder(
        out,
        "rater.json",
        "ratings.jsonl",
        "item_id",
        cfg.fingerprint(),
        "ratings",
        "model, dataset, samples or generation settings",
        {"config": cfg.model_dump(), "dataset": fc.name, "pages": len(fc.pages)},
    )
    # the folder is claimed: every model event is appended to its usage log as it happens
    usage.enter_context(UsageLog(out / USAGE_LOG).attached(default_tracker()))
    ratings_path, samples_path = out / "ratings.jsonl", out / "samples.jsonl"
    order = [it.id for it in fc.items]  # the whole dataset: ratings past this run's limit are kept
    # a sentence is done when both its parts are written (a kill between the two appends leaves
    # one: that sentence is rated again, and its lone part dropped here)
    both = keyed_lines(ratings_path, "item_id").keys() & keyed_lines(samples_path, "item_id").keys()
    done = keep_in_order(ratings_path, "item_id", [k for k in order if k in both])
    keep_in_order(samples_path, "item_id", [k for k in order if k in done])  # one samples line per rating
    todo = [it for it in items if it.id not in done]
    index = CorpusIndex(fc.pages)
    sem = asyncio.Semaphore(cfg.concurrency)
    failed: list[tuple[str, str]] = []
    n_done = len(items) - len(todo)
    if progress:
        progress(n_done, len(items), 0)

    async def one(it: FactItem) -> None:
        nonlocal n_done
        async with sem:
            try:
                r, outcomes = await rate_item(m, it, index, cfg)
            except Exception as e:  # a model failure (after retries): this sentence failed, not the run
                failed.append((it.id, f"{type(e).__name__}: {e}"))
            else:
                append_line(ratings_path, json.dumps(asdict(r)))
                append_line(
                    samples_path, json.dumps({"item_id": it.id, "samples": [o.summary() for o in outcomes]})
                )
            n_done += 1
            if progress:
                progress(n_done, len(items), len(failed))

    try:
        await asyncio.gather(*(one(it) for it in todo))
    finally:
        index.close()
    both = keyed_lines(ratings_path, "item_id").keys() & keyed_lines(samples_path, "item_id").keys()
    keep_in_order(ratings_path, "item_id", [k for k in order if k in both])  # the dataset's order
    keep_in_order(samples_path, "item_id", [k for k in order if k in both])
    return RateResult(out, read_ai_ratings(ratings_path), failed, resumed=len(items) - len(todo))
