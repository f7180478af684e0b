"""The README's main job (``examples/quickstart.yaml``) from an empty cache, with where its time goes.

    python benchmarks/bench_quickstart.py [--engines xllamacpp llama-cpp-python] [--limit N]
                                          [--concurrency C] [--json FILE]

Each engine runs the quickstart in a fresh child process with an empty model cache (``seerbench
run``, in-process, the engine chosen by ``SEERBENCH_LOCAL_ENGINE``). The child times every call the
engine serves: judge calls (option log probabilities: one token from the prompt) and agent calls
(generation), with their prompt and generated tokens. It prints the wall and CPU seconds and peak
RSS of the whole run, per call type the calls, tokens and seconds (median and total), the engine's
prompt-evaluation speed (judge calls: prompt tokens per second) and generation speed (agent calls,
after their prompt at the judge calls' rate), and seerbench's own share (wall minus the engine's
time). ``--concurrency 1`` (the default here) serialises the calls so each call's time is its own;
the example's ``concurrency: 2`` overlaps seerbench's own work with the engine's. No assertions.

Measured 2026-11-25 on this 2-core AMD EPYC (AVX2, no AVX-512; load average 0.4 before the run),
the example as written (concurrency 2, xllamacpp), `seerbench run` under /usr/bin/time:

    wall 443.7 s, CPU 727 s + 7.9 s system, peak RSS 1.02 GB; 249 calls, 121 cache hits,
    52,663 prompt tokens and 6,994 generated tokens (59,657 in all)

and this script, ``--limit 2 --engines xllamacpp llama-cpp-python`` (2026-11-26, same machine,
load average 1.2; ``benchmarks/results/main_job.txt``), xllamacpp / llama-cpp-python:

    wall                        93.3 / 92.5 s (CPU 153 / 144 s; peak RSS 558 / 832 MB)
    judge calls                 26 calls, 5,928 prompt tokens: 38.8 / 39.2 s, median 1,245 / 1,469 ms
    agent calls                 24 calls, 5,031 prompt + 1,424 / 1,408 generated tokens: 54.0 / 52.8 s
    prompt evaluation           153 / 151 tokens/s
    generation                  68 / 72 tokens/s (prompt taken out at the judge calls' rate)
    seerbench's own             0.5 / 0.5 s of the wall time

The floor is the engine's prompt evaluation, the same on both engines: a 135-token judge prompt
takes 0.84-1.0 s with 2 threads here (1.6 s with one), so the full run's 52,663 prompt tokens take
about 350 s whatever seerbench does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "quickstart.yaml"


def child(out: Path, limit: int | None, concurrency: int | None) -> dict[str, Any]:
    """Run the quickstart in this process, timing every engine call."""
    from seerbench.models._registry import local_engine

    engine = local_engine()
    if engine == "xllamacpp":
        from seerbench.models._xllamacpp import XLlamaCppBackend as Engine
    else:
        from seerbench.models._local import LocalBackend as Engine  # type: ignore[assignment]

    calls: list[dict[str, Any]] = []
    complete, option_logprobs = Engine.complete, Engine.option_logprobs

    async def timed_complete(self: Any, messages: Any, config: Any, seed: Any) -> Any:
        t = time.perf_counter()
        s = await complete(self, messages, config, seed)
        calls.append(
            {
                "kind": "agent",
                "s": time.perf_counter() - t,
                "prompt": s.usage.prompt_tokens,
                "generated": s.usage.completion_tokens,
            }
        )
        return s

    async def timed_logprobs(self: Any, messages: Any, options: Any) -> Any:
        t = time.perf_counter()
        r = await option_logprobs(self, messages, options)
        usage = r[1] if r is not None else None
        calls.append(
            {
                "kind": "judge",
                "s": time.perf_counter() - t,
                "prompt": usage.prompt_tokens if usage else 0,
                "generated": usage.completion_tokens if usage else 0,
            }
        )
        return r

    Engine.complete = timed_complete  # type: ignore[method-assign]
    Engine.option_logprobs = timed_logprobs  # type: ignore[method-assign]

    from typer.testing import CliRunner

    from seerbench.cli import app

    args = ["run", str(EXAMPLE), "--out", str(out)]
    if limit:
        args += ["--limit", str(limit)]
    if concurrency:
        args += ["--concurrency", str(concurrency)]
    t0, c0 = time.perf_counter(), time.process_time()
    r = CliRunner().invoke(app, args)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if r.exit_code != 0:
        raise SystemExit(f"the quickstart exited {r.exit_code}:\n{r.output[-2000:]}")
    usage = [json.loads(x) for x in (out / "usage.jsonl").read_text().splitlines()]
    hits = sum(int(u.get("cache_hits", 0)) for u in usage)
    return {
        "engine": engine,
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "cache_hits": hits,
        "calls": calls,
    }


def summarise(res: dict[str, Any]) -> dict[str, Any]:
    """Per call type: calls, tokens, seconds; the engine's rates; seerbench's own share."""
    out: dict[str, Any] = {k: res[k] for k in ("engine", "wall_s", "cpu_s", "peak_rss_mb", "cache_hits")}
    by: dict[str, list[dict[str, Any]]] = {}
    for c in res["calls"]:
        by.setdefault(c["kind"], []).append(c)
    engine_s = sum(c["s"] for c in res["calls"])
    for kind, cs in sorted(by.items()):
        out[kind] = {
            "calls": len(cs),
            "prompt_tokens": sum(c["prompt"] for c in cs),
            "generated_tokens": sum(c["generated"] for c in cs),
            "total_s": sum(c["s"] for c in cs),
            "median_ms": 1000 * statistics.median(c["s"] for c in cs),
        }
    judge, agent = out.get("judge"), out.get("agent")
    if judge and judge["total_s"]:
        out["prompt_tokens_per_s"] = judge["prompt_tokens"] / judge["total_s"]
        if agent and agent["generated_tokens"]:
            gen_s = agent["total_s"] - agent["prompt_tokens"] / out["prompt_tokens_per_s"]
            out["generated_tokens_per_s"] = agent["generated_tokens"] / gen_s if gen_s > 0 else None
    out["engine_s"] = engine_s
    out["seerbench_s"] = res["wall_s"] - engine_s
    return out


def show(s: dict[str, Any]) -> None:
    rss = s["peak_rss_mb"]
    print(f"\n{s['engine']}: wall {s['wall_s']:.1f} s, CPU {s['cpu_s']:.1f} s, peak RSS {rss:.0f} MB")
    print(f"  cache hits {s['cache_hits']}")
    for kind in ("judge", "agent"):
        k = s.get(kind)
        if k:
            print(
                f"  {kind:<6} {k['calls']:>4} calls  {k['prompt_tokens']:>6} prompt + "
                f"{k['generated_tokens']:>5} generated tokens  {k['total_s']:7.1f} s  "
                f"median {k['median_ms']:.0f} ms"
            )
    if "prompt_tokens_per_s" in s:
        print(f"  prompt evaluation {s['prompt_tokens_per_s']:.0f} tokens/s (judge calls)")
    if s.get("generated_tokens_per_s"):
        gen = s["generated_tokens_per_s"]
        print(f"  generation {gen:.1f} tokens/s (agent calls, their prompt taken out)")
    print(f"  in the engine {s['engine_s']:.1f} s; seerbench's own {s['seerbench_s']:.1f} s of the wall time")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engines", nargs="+", default=["xllamacpp"], choices=["xllamacpp", "llama-cpp-python"])
    ap.add_argument("--limit", type=int, default=None, help="questions (default: the example's 10)")
    ap.add_argument("--concurrency", type=int, default=1, help="0: the example's own (2)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        res = child(a.child / "run", a.limit, a.concurrency or None)
        (a.child / "result.json").write_text(json.dumps(res))
        return
    results = []
    for engine in a.engines:
        with tempfile.TemporaryDirectory() as tmp:
            cache = str(Path(tmp) / "cache")
            env = {**os.environ, "SEERBENCH_LOCAL_ENGINE": engine, "SEERBENCH_CACHE_DIR": cache}
            cmd = [sys.executable, __file__, "--child", tmp, "--concurrency", str(a.concurrency)]
            if a.limit:
                cmd += ["--limit", str(a.limit)]
            subprocess.run(cmd, env=env, check=True)
            s = summarise(json.loads((Path(tmp) / "result.json").read_text()))
        show(s)
        results.append(s)
    if a.json:
        summary = {"limit": a.limit, "concurrency": a.concurrency, "runs": results}
        a.json.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
