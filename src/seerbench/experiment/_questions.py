"""The questions of a run, held on disk: a 10^5-question grid keeps their ids in memory, not
10^5 question objects (an arithmetic question takes ~3.5 kB as objects, ~0.7 kB as JSON)."""

from __future__ import annotations

import json
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol, overload

from seerbench.errors import DataError
from seerbench.types import Question


class _Lazy(Sequence[Question]):
    """A sequence of questions made on demand: ``_get(i)`` for ``0 <= i < len(self)``."""

    def _get(self, i: int) -> Question:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> Question: ...
    @overload
    def __getitem__(self, i: slice) -> list[Question]: ...
    def __getitem__(self, i: int | slice) -> Question | list[Question]:
        n = len(self)
        if isinstance(i, slice):
            return [self._get(j) for j in range(*i.indices(n))]
        if not -n <= i < n:
            raise IndexError(f"question {i} of {n}")
        return self._get(i % n)

    def __iter__(self) -> Iterator[Question]:
        for i in range(len(self)):
            yield self._get(i)


class QuestionStore(_Lazy):
    """Questions in dataset order, each kept as its JSON in an anonymous temporary file and read
    back on demand (``store[i]``, iteration, slices as lists). ``ids`` and ``position`` (id ->
    position) stay in memory. Built by :meth:`build`; read-only after that."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="seerbench-questions-")  # noqa: SIM115 - open as long as the store
        self._offsets: array[int] = array("q", [0])
        self.ids: list[str] = []
        self.position: dict[str, int] = {}
        # id -> position among the dataset's usable questions, also past ``limit``: a results file
        # that holds questions of an earlier, longer run stays in dataset order (see _finalise)
        self.dataset_order: dict[str, int] = {}
        self.n_skipped = 0  # questions without exactly one true option, left out
        self.no_source: list[str] = []  # ids of questions without source_text (the first 3)
        self.n_no_source = 0
        #: questions repeating an earlier one's text, options and passage under another id, merged
        #: into the first (a repeat would count one question twice and narrow every interval)
        self.merged: list[tuple[str, str]] = []
        self.merged_note: str | None = None

    @classmethod
    def build(
        cls, questions: Iterable[Question], *, binary_seed: int, limit: int | None = None
    ) -> QuestionStore:
        """The questions a run uses, taken one at a time: those with exactly one true option
        (the rest counted in ``n_skipped``), each through the seeded binary view, the first
        ``limit``. A question repeating an earlier one's content under another id is merged into it
        (``merged``; :class:`seerbench.datasets.DuplicateQuestions`, as ``study create`` does).
        Raises :class:`DataError` for an empty dataset, one without usable questions, duplicate
        ids (anywhere in the dataset, also past ``limit``), or repeats with different answers."""
        from seerbench.datasets import DuplicateQuestions, binary_view

        store = cls()
        seen = store.dataset_order
        dups: set[str] = set()
        same = DuplicateQuestions()
        n_any = n_usable = 0
        for q in questions:
            n_any += 1
            if len(q.true_cases) != 1:
                store.n_skipped += 1
                continue
            n_usable += 1
            if q.id not in seen and same.first(q) is not None:
                continue  # the same question under another id: merged into the first
            # The seeded binary view depends only on (seed, id): one question at a time is the same.
            (view,) = binary_view([q], seed=binary_seed)
            if view.id in seen:
                dups.add(view.id)
                continue
            seen[view.id] = len(seen)
            if limit is None or len(store) < limit:
                store._add(view)
        if not n_any:
            raise DataError("the dataset is empty")
        if not n_usable:
            raise DataError(
                "the dataset has no binary-compatible questions: the protocols need questions with exactly "
                "one true option (a binary view keeps it and one distractor)"
            )
        if dups:
            raise DataError(f"duplicate question ids in the dataset: {sorted(dups)[:5]}")
        store.merged, store.merged_note = same.merged, same.summary()
        return store

    def _add(self, q: Question) -> None:
        data = q.model_dump_json().encode()
        self._file.seek(self._offsets[-1])
        self._file.write(data)
        self._offsets.append(self._offsets[-1] + len(data))
        self.position[q.id] = len(self.ids)
        self.ids.append(q.id)
        if not q.source_text:
            self.n_no_source += 1
            if len(self.no_source) < 3:
                self.no_source.append(q.id)

    def raw(self, i: int) -> bytes:
        """Question ``i`` as the JSON bytes it is stored as."""
        start, end = self._offsets[i], self._offsets[i + 1]
        self._file.seek(start)
        return self._file.read(end - start)

    def as_json(self, i: int) -> Any:
        """Question ``i`` as ``q.model_dump(mode="json")`` gives it (what results lines hold)."""
        return json.loads(self.raw(i))

    def get(self, qid: str) -> Question | None:
        i = self.position.get(qid)
        return None if i is None else self[i]

    def __len__(self) -> int:
        return len(self.ids)

    def _get(self, i: int) -> Question:
        return Question.model_validate_json(self.raw(i))

    def subset(self, positions: Sequence[int]) -> QuestionView:
        return QuestionView(self, positions)


class QuestionView(_Lazy):
    """Some of a store's questions (by position), read on demand: a cell's questions still to run."""

    def __init__(self, store: QuestionStore, positions: Sequence[int]) -> None:
        self.store = store
        self.positions = positions

    def __len__(self) -> int:
        return len(self.positions)

    def _get(self, i: int) -> Question:
        return self.store._get(self.positions[i])


class RunQuestions(Protocol):
    """What an executor and the cell writer read of a run's questions: a :class:`QuestionStore`
    (dataset order), or a sequential run's first questions in its seeded order
    (:class:`seerbench.experiment._stopping.SequentialQuestions`)."""

    ids: list[str]
    position: dict[str, int]  # id -> place among these questions
    dataset_order: dict[str, int]  # id -> rank in the results file's order (also past these)

    def __len__(self) -> int: ...

    def subset(self, positions: Sequence[int]) -> QuestionView: ...
