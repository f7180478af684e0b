"""Work split over forked worker processes, one per core, with the results in the order asked.

``seerbench stats`` and the report read a large run's cells in workers, and the report draws its
figures in them. A forked worker starts with this process's modules, plugins and settings, and
with the data it was forked with (a job is its index: nothing is pickled on the way out, only the
result on the way back). Where there is no ``fork`` (Windows) or one worker would do, the jobs
run here, one after another, with the same results.
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from seerbench.config import available_cpus
from seerbench.errors import SeerbenchError

__all__ = ["can_fork", "forked_map"]

T = TypeVar("T")

#: What the forked workers run: set before the pool forks, read by the workers (``_run``).
_jobs: tuple[Callable[[Any], Any], Sequence[Any], Callable[[Any], str]] | None = None


def can_fork() -> bool:
    """Whether worker processes can be forked here (not on Windows)."""
    return "fork" in multiprocessing.get_all_start_methods()


def _run(k: int) -> Any:
    """Job ``k`` in a worker: its result, or its error as a value the parent raises (a user error
    as itself; anything else as a RuntimeError carrying the worker's traceback, since not every
    exception survives pickling)."""
    assert _jobs is not None
    fn, items, describe = _jobs
    try:
        return fn(items[k])
    except SeerbenchError as e:
        return e
    except Exception:  # a bug: the parent reports it as an internal error, with this traceback
        return RuntimeError(f"{describe(items[k])} in a worker process:\n{traceback.format_exc()}")


def forked_map(
    fn: Callable[[Any], T],
    items: Sequence[Any],
    *,
    workers: int | None = None,
    first: Sequence[int] | None = None,
    describe: Callable[[Any], str] = repr,
) -> Iterator[T]:
    """``fn(item)`` of each item, yielded in the items' order: in up to ``workers`` forked
    processes (None: one per core), or here when one would do. ``first``: the order in which the
    workers take the jobs (positions in ``items``; the largest first, so that no worker is left
    with a large job at the end while the others wait); the results still come in ``items``'
    order. ``fn`` and the items reach the workers by the fork, never pickled; the results are. An
    error in a worker is raised here: a user error as itself, a bug as an internal error naming the
    job (``describe(item)``) with the worker's traceback."""
    global _jobs
    n = min(available_cpus() if workers is None else workers, len(items))
    if n <= 1 or not can_fork():
        yield from (fn(x) for x in items)
        return
    if _jobs is not None:
        raise RuntimeError("forked_map: one pool at a time (a worker forks none of its own)")
    _jobs = (fn, items, describe)
    try:
        with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("fork")) as pool:
            order = list(first) if first is not None else list(range(len(items)))
            futures = {k: pool.submit(_run, k) for k in order}
            for k in range(len(items)):
                r = futures[k].result()
                if isinstance(r, BaseException):
                    raise r
                yield r
    finally:
        _jobs = None
