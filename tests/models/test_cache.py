"""The disk cache: hits make zero backend calls, keys separate what differs, several processes
may write at once, and SEERBENCH_CACHE_DIR moves it."""

from __future__ import annotations

import multiprocessing as mp
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from seerbench.models import (
    Cache,
    ChatMessage,
    GenerateConfig,
    Model,
    PriceTable,
    Sample,
    ScriptedBackend,
    UsageTracker,
    cache_key,
    default_cache,
)


def _seeded(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    """A 'sampler' whose output depends only on the seed it is given."""
    return f"draw {random.Random(seed).randint(0, 10**9)}"


def _model(backend: ScriptedBackend, cache: Cache | bool) -> Model:
    return Model("scripted:test", backend, cache=cache, usage=UsageTracker(PriceTable()))


async def test_miss_then_hit_makes_zero_backend_calls(tmp_path: Path) -> None:
    backend = ScriptedBackend("echo")
    m = _model(backend, Cache(tmp_path / "c.sqlite"))
    first = await m.generate("hello there", max_tokens=5)
    assert backend.calls == 1 and not first.cached
    second = await m.generate("hello there", max_tokens=5)
    assert backend.calls == 1  # no new backend call
    assert second.cached and second.text == first.text == "hello there"
    assert second.usage == first.usage  # token counts survive the round trip
    u = m.usage.by_model["scripted:test"]
    assert (u.calls, u.cache_hits) == (1, 1)


async def test_a_new_model_object_reads_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    b1, b2 = ScriptedBackend("echo"), ScriptedBackend("echo")
    await _model(b1, Cache(path)).generate("persist me")
    out = await _model(b2, Cache(path)).generate("persist me")
    assert out.cached and out.text == "persist me"
    assert (b1.calls, b2.calls) == (1, 0)


async def test_what_differs_misses(tmp_path: Path) -> None:
    backend = ScriptedBackend("echo")
    m = _model(backend, Cache(tmp_path / "c.sqlite"))
    await m.generate("q", temperature=0.0)
    assert backend.calls == 1
    await m.generate("q", temperature=0.7)  # other temperature
    assert backend.calls == 2
    await m.generate("q", temperature=0.0, max_tokens=9)  # other max_tokens
    assert backend.calls == 3
    await m.generate("q", temperature=0.0, seed=1)  # other seed
    assert backend.calls == 4
    await m.generate("q2", temperature=0.0)  # other prompt
    assert backend.calls == 5
    await m.generate([{"role": "system", "content": "s"}, {"role": "user", "content": "q"}])  # other messages
    assert backend.calls == 6
    out = await m.generate("q", temperature=0.0, n=2)  # sample 0 is a hit, sample 1 a miss
    assert backend.calls == 7
    assert [s.cached for s in out.samples] == [True, False]
    out = await m.generate("q", temperature=0.0, n=3)  # 0 and 1 hit: n is not part of the key
    assert backend.calls == 8
    assert [s.cached for s in out.samples] == [True, True, False]


def test_key_is_stable_and_sensitive() -> None:
    msgs = [ChatMessage(role="user", content="x")]
    cfg = GenerateConfig()
    k = cache_key("openai", "m", msgs, cfg, 0)
    assert k == cache_key("openai", "m", [ChatMessage(role="user", content="x")], GenerateConfig(), 0)
    assert len(k) == 64 and int(k, 16) >= 0  # sha256 hex
    others = {
        cache_key("local", "m", msgs, cfg, 0),
        cache_key("openai", "m2", msgs, cfg, 0),
        cache_key("openai", "m", [ChatMessage(role="system", content="x")], cfg, 0),
        cache_key("openai", "m", msgs, cfg, 1),
        cache_key("openai", "m", msgs, GenerateConfig(temperature=1.0), 0),
        cache_key("openai", "m", msgs, GenerateConfig(stop=["\n"]), 0),
        cache_key("openai", "m", msgs, GenerateConfig(logprobs=True), 0),
        cache_key("openai", "m", msgs, cfg, 0, purpose="option_logprobs:A\x1fB"),
    }
    assert k not in others and len(others) == 8
    assert cache_key("openai", "m", msgs, GenerateConfig(n=5), 0) == k  # n is left out


async def test_n_samples_have_distinct_keys_and_reproducible_seeds(tmp_path: Path) -> None:
    backend = ScriptedBackend(_seeded)
    cache = Cache(tmp_path / "a.sqlite")
    out = await _model(backend, cache).generate("draw", n=3, temperature=1.0, seed=11)
    texts = [s.text for s in out.samples]
    assert len(set(texts)) == 3  # distinct seeds per sample index
    assert cache.info()["entries"] == 3
    # the same request with a fresh, empty cache reproduces every sample
    again = await _model(ScriptedBackend(_seeded), Cache(tmp_path / "b.sqlite")).generate(
        "draw", n=3, temperature=1.0, seed=11
    )
    assert [s.text for s in again.samples] == texts
    # and the seeds are the documented derivation
    cfg = GenerateConfig(seed=11)
    assert texts == [_seeded([], cfg, cfg.sample_seed(i)) for i in range(3)]
    other = await _model(ScriptedBackend(_seeded), Cache(tmp_path / "c.sqlite")).generate(
        "draw", n=3, temperature=1.0, seed=12
    )
    assert not set(s.text for s in other.samples) & set(texts)


async def test_cache_off_always_calls(tmp_path: Path) -> None:
    backend = ScriptedBackend("echo")
    m = _model(backend, False)
    await m.generate("x")
    await m.generate("x")
    assert backend.calls == 2
    assert m.cache is None


def test_put_get_info_clear(tmp_path: Path) -> None:
    c = Cache(tmp_path)  # a directory: the file goes inside it
    assert c.path == tmp_path / "cache.sqlite"
    assert c.get("nope") is None
    c.put("k1", "model-a", Sample(text="one"))
    c.put("k2", "model-a", Sample(text="two"))
    c.put("k3", "model-b", Sample(text="three", cached=True))
    got = c.get("k3")
    assert got is not None and got.text == "three" and got.cached is False  # 'cached' is not stored
    info = c.info()
    assert info["entries"] == 3 and info["by_model"] == {"model-a": 2, "model-b": 1} and info["bytes"] > 0
    assert c.clear("model-b") == 1
    assert c.info()["by_model"] == {"model-a": 2}
    assert c.clear() == 2
    assert c.info()["entries"] == 0 and c.get("k1") is None
    c.close()


def test_cache_dir_env_moves_the_default_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEERBENCH_CACHE_DIR", str(tmp_path / "moved"))
    c = default_cache()
    assert c.path == tmp_path / "moved" / "cache.sqlite" and c.path.exists()
    monkeypatch.setenv("SEERBENCH_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert default_cache().path == tmp_path / "elsewhere" / "cache.sqlite"


def test_default_location_is_the_user_cache_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    from seerbench.config import cache_dir

    monkeypatch.delenv("SEERBENCH_CACHE_DIR")
    assert cache_dir() == Path(platformdirs.user_cache_dir("seerbench"))
    assert cache_dir("/x/y") == Path("/x/y")


# -- several processes writing at once ----------------------------------------------------------

WRITERS, PUTS = 4, 200


def _writer(path: str, worker: int, start: object) -> None:
    c = Cache(path)
    start.wait()  # type: ignore[attr-defined]
    for i in range(PUTS):
        c.put(f"w{worker}-{i}", f"writer-{worker}", Sample(text=f"{worker}:{i}"))
        if i % 50 == 0:  # readers interleaved with writers
            assert c.get(f"w{worker}-{i}") is not None
    c.close()


def test_concurrent_writers_in_several_processes_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    Cache(path).close()  # create the file (and WAL mode) first
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(path, w, start)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    c = Cache(path)
    assert c.info()["entries"] == WRITERS * PUTS
    assert c.info()["by_model"] == {f"writer-{w}": PUTS for w in range(WRITERS)}
    for w in range(WRITERS):
        for i in range(PUTS):
            s = c.get(f"w{w}-{i}")
            assert s is not None and s.text == f"{w}:{i}"
    c.close()


def test_a_locked_database_is_waited_for_not_fatal() -> None:
    # SQLite answers "database is locked" at once (no busy wait) in some cases: opening a new cache
    # file from several processes, a stale read snapshot; a Ray run died of it in a worker
    import sqlite3

    from seerbench.models._cache import _when_unlocked

    calls = []

    def flaky() -> None:
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")

    _when_unlocked(flaky)
    assert len(calls) == 3

    def broken() -> None:
        raise sqlite3.OperationalError("no such table: samples")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        _when_unlocked(broken)

    def always_locked() -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _when_unlocked(always_locked, within=0.05)
