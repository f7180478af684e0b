"""Bundled generated dataset ``arithmetic``: multi-step word problems with a plausible wrong answer.

Every problem has an exact integer answer and a distractor produced by a *classic slip* on the same
problem (dropping a step, an off-by-one count, using the wrong operation, forgetting what was
already there). A careful agent can tell them apart; a weak judge who does not redo the steps
finds both plausible: a reasoning gap. Deterministic given ``seed``; any ``n``; ``k`` options.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from seerbench.datasets._common import Questions, make_question
from seerbench.errors import ConfigError
from seerbench.types import Question

_NAMES = ["Ava", "Ben", "Chloe", "Dev", "Elif", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kemal", "Lena"]


@dataclass(frozen=True)
class _Problem:
    template: str
    text: str
    answer: int
    slip: int
    slip_kind: str
    steps: list[str]


def _bakery(r: random.Random) -> _Problem:
    name = r.choice(_NAMES)
    trays, per = r.randint(3, 9), r.randint(6, 12)
    total = trays * per
    # never sell more than was baked (3 x 6 = 18 is the smallest batch)
    sold, more = r.randint(5, min(20, total - 1)), r.randint(4, 15)
    return _Problem(
        "bakery",
        f"{name} bakes {trays} trays of {per} muffins each. {name} sells {sold} muffins, "
        f"then bakes another {more} muffins. How many muffins does {name} have now?",
        total - sold + more,
        total - sold,
        "dropped the last step",
        [
            f"{trays} x {per} = {total}",
            f"{total} - {sold} = {total - sold}",
            f"{total - sold} + {more} = {total - sold + more}",
        ],
    )


def _fence(r: random.Random) -> _Problem:
    gap = r.randint(2, 6)
    gaps = r.randint(5, 30)
    length = gap * gaps
    return _Problem(
        "fence",
        f"A straight fence is {length} metres long. There is a post at each end and one every "
        f"{gap} metres in between. How many posts are there?",
        gaps + 1,
        gaps,
        "off by one (counted gaps, not posts)",
        [f"{length} / {gap} = {gaps} gaps", f"{gaps} + 1 = {gaps + 1} posts"],
    )


def _tank(r: random.Random) -> _Problem:
    rate = r.randint(2, 9)
    minutes = r.randint(5, 25)
    already = rate * r.randint(2, 10)
    capacity = already + rate * minutes
    return _Problem(
        "tank",
        f"A tank holds {capacity} litres and already contains {already} litres. A tap adds {rate} "
        "litres per minute. How many minutes until the tank is full?",
        minutes,
        capacity // rate,
        "forgot the water already in the tank",
        [f"{capacity} - {already} = {capacity - already}", f"{capacity - already} / {rate} = {minutes}"],
    )


def _discount(r: random.Random) -> _Problem:
    price = 20 * r.randint(2, 15)
    pct = 5 * r.randint(2, 8)
    coupon = r.randint(1, 9)
    off = price * pct // 100
    return _Problem(
        "discount",
        f"A jacket costs ${price}. It is reduced by {pct}%, and then a ${coupon} coupon is taken off "
        "the reduced price. How many dollars does the jacket cost now?",
        price - off - coupon,
        off - coupon if off - coupon > 0 else price - off + coupon,
        "used the discount as the price" if off - coupon > 0 else "added the coupon instead of subtracting",
        [
            f"{pct}% of {price} = {off}",
            f"{price} - {off} = {price - off}",
            f"{price - off} - {coupon} = {price - off - coupon}",
        ],
    )


def _ages(r: random.Random) -> _Problem:
    a, b = r.sample(_NAMES, 2)
    diff = r.randint(2, 12)
    years = r.randint(2, 9)
    future = years + r.randint(4, 30)
    return _Problem(
        "ages",
        f"{a} is {diff} years older than {b}. In {years} years {b} will be {future}. How old is {a} now?",
        future - years + diff,
        future + diff,
        "forgot to go back to the present",
        [
            f"{b} now: {future} - {years} = {future - years}",
            f"{a} now: {future - years} + {diff} = {future - years + diff}",
        ],
    )


def _pages(r: random.Random) -> _Problem:
    name = r.choice(_NAMES)
    first, days = r.randint(3, 40), r.randint(4, 12)
    per = r.randint(5, 30)
    last = first + days - 1
    return _Problem(
        "pages",
        f"{name} reads {per} pages every day from day {first} to day {last} of the month, both days "
        "included. How many pages does {name} read in total?".replace("{name}", name),
        per * days,
        per * (days - 1),
        "off by one (did not count both end days)",
        [f"days: {last} - {first} + 1 = {days}", f"{per} x {days} = {per * days}"],
    )


_TEMPLATES: list[Callable[[random.Random], _Problem]] = [_bakery, _fence, _tank, _discount, _ages, _pages]


def _more_wrong(p: _Problem, need: int, r: random.Random) -> list[int]:
    """Further distinct wrong answers for k > 2: near misses of the answer and of the slip."""
    out: list[int] = []
    cands = (
        [p.answer + d for d in (1, -1, 2, -2, 10, -10)] + [p.slip + d for d in (1, -1, 2)] + [p.answer * 2]
    )
    r.shuffle(cands)
    step = 3
    while len(out) < need:
        x = cands.pop() if cands else p.answer + (step := step + 1)
        if x >= 0 and x not in (p.answer, p.slip) and x not in out:
            out.append(x)
    return out


def generate_arithmetic(n: int = 100, *, seed: int = 0, k: int = 2) -> Questions:
    """``n`` arithmetic word problems with ``k`` numeric options each; one is right, one is a
    classic slip (``metadata['best_distractor']``), the rest are near misses. Positions shuffled.
    No problem text repeats within a set (a repeat would count one question twice)."""
    return Questions(iter_arithmetic(n, seed=seed, k=k))


def iter_arithmetic(n: int = 100, *, seed: int = 0, k: int = 2) -> Iterator[Question]:
    """The questions of :func:`generate_arithmetic`, made one at a time (a run over 10^5 of them
    never holds them all). The options are checked now, not at the first question."""
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    if not 2 <= k <= 10:
        raise ConfigError(f"k must be between 2 and 10, got {k}")
    return _distinct_questions(n, seed, k)


#: Draws for one question before the generator gives up (the templates hold about 4 x 10^5
#: distinct problems; the small ones, e.g. the 130 fence problems, run out first).
MAX_ATTEMPTS = 1000


def _distinct_questions(n: int, seed: int, k: int) -> Iterator[Question]:
    """Questions 0..n-1, none repeating an earlier one's text: question i is its first draw whose
    text is new, so it is the same whatever n is. Keeps an 8-byte digest per question."""
    seen: set[bytes] = set()
    for i in range(n):
        for attempt in range(MAX_ATTEMPTS):
            q = _arithmetic_question(i, seed, k, attempt)
            key = hashlib.blake2b(q.text.encode(), digest_size=8).digest()
            if key not in seen:
                seen.add(key)
                yield q
                break
        else:
            raise ConfigError(
                f"arithmetic: no new problem for question {i} after {MAX_ATTEMPTS} draws; "
                f"the generator makes at most about {len(seen)} distinct problems: ask for fewer"
            )


def _arithmetic_question(i: int, seed: int, k: int, attempt: int = 0) -> Question:
    # One generator per question (and draw): question i is the same whatever n is.
    r = random.Random(f"arithmetic:{seed}:{i}" if attempt == 0 else f"arithmetic:{seed}:{i}:{attempt}")
    p = r.choice(_TEMPLATES)(r)
    assert p.slip != p.answer and p.slip >= 0, p  # guaranteed by the templates' ranges
    values = [p.answer, p.slip, *_more_wrong(p, k - 2, r)]
    order = list(range(k))
    r.shuffle(order)
    return make_question(
        id=f"arithmetic-{seed}-{i}",
        text=p.text,
        options=[str(values[j]) for j in order],
        correct=order.index(0),
        best_distractor=order.index(1),
        metadata={
            "dataset": "arithmetic",
            "seed": seed,
            "template": p.template,
            "slip": p.slip_kind,
            "steps": p.steps,
        },
    )
