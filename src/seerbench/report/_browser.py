"""The transcript browser's data: one row per results line (a cell and a question), read in the
same pass over a cell's results as its statistics (:func:`seerbench.analysis.run.summarize_run`'s
``per_line``: in a worker process for a large run), and written out in one of two layouts:

- **one file** (:meth:`Browser.inline_json`): every row, with its transcripts, as JSON inside the
  page, when the rows' JSON is at most :data:`ONE_FILE_LIMIT` bytes;
- **a folder** (:meth:`Browser.write_chunks`): past that, the page (``index.html``) keeps per row only
  its cell, its question and two flags (wrong verdict, parse failure) for the filters; the rows
  themselves, with their transcripts, are in ``transcripts/c<cell>-<k>.js`` (a cell's rows in
  blocks of :data:`CHUNK_ROWS`) and the questions in ``transcripts/q<k>.js`` (blocks of
  :data:`CHUNK_QUESTIONS`), each a script that hands its JSON to the page. The page loads the
  blocks a page of rows needs with ``<script src>``, which works from ``file://`` (where browsers
  refuse ``fetch()`` of local files); a full-text search loads them all.

A cell's rows are read by a :class:`RowReader` (made by the :class:`Browser`'s
:attr:`Browser.rows`, in whichever process reads the cell): each row is turned into JSON text as it
is read and written to a temporary file, never kept as Python objects, so memory stays flat in the
number of lines; the cell's questions are kept once each (:func:`question_key`). The reader's
:class:`CellRows` go back to the :class:`Browser` (:meth:`Browser.add_cell`), which numbers the
questions of every cell and run of the report.
"""

from __future__ import annotations

import json
import tempfile
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seerbench.report._blocks import script_json
from seerbench.store import atomic_write_text

#: Past this many bytes of the browser's JSON (rows, transcripts and questions), the report is a
#: folder (``index.html`` and per-cell transcript files loaded on demand) instead of one file.
ONE_FILE_LIMIT = 10_000_000
#: Rows of one cell per transcript file in the folder layout.
CHUNK_ROWS = 500
#: Questions per question file in the folder layout.
CHUNK_QUESTIONS = 2000
#: The folder layout's transcript folder, beside ``index.html``.
CHUNK_DIR = "transcripts"

#: Row flags the filters read in the folder layout (the one-file page works them out from the row).
WRONG, FAILED = 1, 2


def _turns(transcript: list[dict[str, Any]]) -> list[Any]:
    return [
        [
            str(t.get("speaker") or t.get("role") or ""),
            t.get("answer_case"),
            str(t.get("content") or ""),
            [
                [str(q.get("text", "")), q.get("verified")]
                for q in t.get("quotes") or ()
                if isinstance(q, dict)
            ],
        ]
        for t in transcript
    ]


def browser_row(ln: dict[str, Any]) -> list[Any]:
    """One line of a results file as the transcript browser's row, less its first two entries:
    the page's row is ``[cell, question, excluded, parse_failures, judge_accuracy, asd(log),
    chosen_case, cases, symmetric]`` (cell and question are numbered by the :class:`Browser`), each case
    ``[short, method, probabilities, parse_status, error, mark, transcript, orders]`` (``mark``: the
    verdict against the truth, r(ight), w(rong), t(ie) or u(nscored); ``orders``: with both option
    orders, the probabilities of the order as asked and of the swapped one) and each turn
    ``[speaker, answer_case, text, [[quote, verified], ...]]``. A symmetric line (a debate,
    NaiveJudge) has one protocol run: its transcript is given once, on the first case, and the
    page shows its verdict once (``symmetric``)."""
    cases = []
    once = ln.get("symmetric")
    seen = False  # a case before this one
    for c in ln.get("answer_cases") or ():
        cp = c.get("case_probs") or {}
        get = cp.get
        tr = get("transcript")
        tr = _turns(tr) if tr and not (once and seen) else []
        seen = True
        meta = get("metadata")
        score = get("judge_score")
        acc = score.get("accuracy") if score else None
        cases.append(
            [
                c.get("short"),
                get("method"),
                get("probabilities"),
                get("parse_status"),
                get("error"),
                "u" if acc is None else "r" if acc >= 1.0 else "w" if acc <= 0.0 else "t",
                tr,
                [meta.get("original"), meta.get("swapped")] if meta and meta.get("both_orders") else None,
            ]
        )
    get = ln.get
    asd = get("asd")
    return [
        bool(get("excluded")),
        int(get("parse_failures") or 0),
        get("judge_accuracy"),
        asd.get("log") if asd else None,
        get("chosen_case"),
        cases,
        bool(once),
    ]


def row_flags(row: list[Any]) -> int:
    """:data:`WRONG` when a case's verdict is wrong or tied, :data:`FAILED` when the line has a
    parse failure or a case whose verdict did not parse (``row``: :func:`browser_row`'s): what the
    page's filters test."""
    flags = FAILED if row[1] > 0 else 0
    for c in row[5]:
        if c[5] == "w" or c[5] == "t":
            flags |= WRONG
        if c[3] != "ok":
            flags |= FAILED
    return flags


def question_key(ln: dict[str, Any]) -> tuple[Any, ...]:
    """The question of a results line as the browser keeps it, ``(id, text, (short, long, is_true),
    ...)``: its entry in the page is the same as a list, ``[id, text, [[short, long, is_true], ...]]``.
    Equal as a tuple exactly when equal as JSON (strings and flags)."""
    q = ln.get("question") or {}
    return (
        str(q["id"] if "id" in q else ln.get("question_id")),
        str(q.get("text") or ""),
        *(
            (str(a.get("short")), str(a.get("long")), float(a.get("value") or 0.0) > 0.5)
            for a in q.get("answer_cases") or ()
        ),
    )


def remove_chunks(folder: Path) -> None:
    """Remove the transcript files of a folder-layout report at ``folder`` (``CHUNK_DIR/*.js``)."""
    for old in (folder / CHUNK_DIR).glob("*.js"):
        old.unlink()


@dataclass
class CellRows:
    """One cell's browser rows as a :class:`RowReader` read them: ``path``, a file of the rows'
    JSON (each less its ``[cell,question,``: :func:`browser_row`) in UTF-8, a row a line, in the
    order read; ``questions``, the cell's questions (:func:`question_key`), once each in the
    order first seen; per row, its question (``local``, a position in ``questions``), flags
    (:func:`row_flags`) and where its line starts in the file (``offsets``, one more at the end);
    ``size``, the characters of the rows' JSON as written."""

    path: str
    questions: list[tuple[Any, ...]]
    local: array[int]
    flags: array[int]
    offsets: array[int]
    size: int


class RowReader:
    """Reads one cell's lines into browser rows (:func:`browser_row`), as JSON text in a new file
    of ``folder``, one line at a time (:meth:`add`); :meth:`result` closes it."""

    def __init__(self, folder: str) -> None:
        fd, self._path = tempfile.mkstemp(suffix=".jsonl", dir=folder)
        self._file = open(fd, "wb")  # noqa: SIM115
        self._index: dict[Any, int] = {}  # question entry (as a tuple) -> position in questions
        self._questions: list[tuple[Any, ...]] = []
        self._local, self._flags, self._offsets = array("i"), array("b"), array("q", [0])
        self._size = 0

    def add(self, ln: dict[str, Any]) -> None:
        """One results line (as read, not rescored)."""
        # one id may name different questions in two runs: keyed by content (JSON once, by the Browser)
        key = question_key(ln)
        q = self._index.get(key)
        if q is None:
            q = self._index[key] = len(self._questions)
            self._questions.append(key)
        row = browser_row(ln)
        text = script_json(row)
        data = text.encode() + b"\n"  # "[excluded,...]": the Browser puts cell and question after "["
        self._file.write(data)
        self._offsets.append(self._offsets[-1] + len(data))
        self._size += len(text) + 1
        self._local.append(q)
        self._flags.append(row_flags(row))

    def result(self) -> CellRows:
        self._file.close()
        return CellRows(self._path, self._questions, self._local, self._flags, self._offsets, self._size)


@dataclass(frozen=True)
class Rows:
    """Makes the :class:`RowReader` of a cell, in the process that reads it (a worker: its rows go
    to a file of the :class:`Browser`'s temporary folder, their :class:`CellRows` back by pickle)."""

    folder: str

    def __call__(self) -> RowReader:
        return RowReader(self.folder)


class Browser:
    """The browser rows of every run in a report: each cell's rows as JSON text in a file of a
    temporary folder (a row a line), with each row's question and flags in arrays, and every
    question once. Use as a context manager: the temporary folder goes when it ends."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="seerbench-report-")
        #: makes a cell's :class:`RowReader`, in this process or a worker
        self.rows = Rows(self._tmp.name)
        self.cells: list[dict[str, Any]] = []
        self.questions: list[str] = []  # the question entries as JSON text, by index
        self._question_index: dict[tuple[Any, ...], int] = {}  # question entry (as a tuple) -> index
        self._q: list[array[int]] = []
        self._flags: list[array[int]] = []
        self._paths: list[str] = []
        self._offsets: list[array[int]] = []
        self.size = 0  # bytes of the rows' and questions' JSON

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()

    def add_cell(self, info: dict[str, Any], rows: CellRows) -> int:
        """A cell (``run``, ``cell``, ``label``, ``protocol``, ``judge``, ``agent``) and its rows
        (from :attr:`rows`): its index. Its questions are numbered after those of the cells
        before it (equal entries, one question: the same in two cells or runs is kept once)."""
        i = len(self.cells)
        index = self._question_index
        glob = array("i")
        for key in rows.questions:
            q = index.get(key)
            if q is None:
                q = index[key] = len(self.questions)
                text = script_json([key[0], key[1], [list(a) for a in key[2:]]])
                self.questions.append(text)
                self.size += len(text) + 1
            glob.append(q)
        qs = array("i", [glob[k] for k in rows.local])
        self.cells.append(info)
        self._q.append(qs)
        self._flags.append(rows.flags)
        self._paths.append(rows.path)
        self._offsets.append(rows.offsets)
        # each row's "cell,question," after its "[": two commas and the two numbers more than read
        self.size += rows.size + len(qs) * (2 + len(str(i))) + sum(len(str(q)) for q in qs)
        return i

    def _cell_rows(self, cell: int, which: Iterable[int] | None = None) -> list[str]:
        """A cell's rows as the page's JSON: all, in the order read, or those at positions
        ``which`` (in that order), each read from its place in the file."""
        q, offsets, head = self._q[cell], self._offsets[cell], f"[{cell},"
        with open(self._paths[cell], "rb") as f:
            if which is None:
                # b"\n" only: JSON escapes it, but not U+2028, U+0085 and the like that splitlines() splits at
                rows = f.read().split(b"\n")[:-1]
                return [f"{head}{k},{r[1:].decode()}" for k, r in zip(q, rows, strict=True)]
            out = []
            for k in which:
                f.seek(offsets[k])
                out.append(f"{head}{q[k]},{f.read(offsets[k + 1] - offsets[k] - 1)[1:].decode()}")
            return out

    def _by_question(self, cell: int) -> list[int]:
        """A cell's rows (positions in file order) sorted by question, stably."""
        q = self._q[cell]
        return sorted(range(len(q)), key=q.__getitem__)

    def _page_order(self) -> tuple[Any, Any]:
        """``(order, cells)``: the rows in the page's order, question by question and each
        question's cells in order (rows of one cell and question in file order), as positions in
        every cell's rows one cell after another, each cell's in file order; and the cell of each
        of those rows. A cell's rows in the page's order are its rows sorted by question, stably
        (:meth:`_by_question`, the order of its transcript files)."""
        import numpy as np

        cells = np.concatenate([np.full(len(q), i, dtype=np.int64) for i, q in enumerate(self._q)])
        qs = np.concatenate([np.frombuffer(q, dtype=np.int32).astype(np.int64) for q in self._q])
        return np.lexsort((cells, qs)), cells

    def _head(self, multi: bool) -> str:
        return '{"multi":' + json.dumps(multi) + ',"cells":' + script_json(self.cells)

    def inline_json(self, multi: bool) -> str:
        """The one-file page's JSON (``multi``, ``cells``, ``questions``, ``rows``), safe inside a
        ``<script>`` element."""
        rows = [text for i in range(len(self.cells)) for text in self._cell_rows(i)]
        order, _ = self._page_order()
        return (
            self._head(multi)
            + ',"questions":['
            + ",".join(self.questions)
            + '],"rows":['
            + ",".join([rows[k] for k in order.tolist()])
            + "]}"
        )

    def write_chunks(self, folder: Path, multi: bool) -> str:
        """Write the folder layout's transcript files under ``folder/transcripts`` and return the
        index page's JSON: ``multi``, ``cells``, ``split`` (the transcript folder), ``chunk_rows``,
        ``chunk_questions``, ``n_questions`` and ``rows``, a flat list of ``cell, question, flags`` per
        row in the page's order (a cell's rows are in its transcript files in the same order)."""
        out = folder / CHUNK_DIR
        out.mkdir(parents=True, exist_ok=True)
        remove_chunks(folder)  # an earlier report's blocks
        for i in range(len(self.cells)):  # a block of rows in memory at a time
            order = self._by_question(i)
            for k in range(0, len(order), CHUNK_ROWS):
                name = f"c{i}-{k // CHUNK_ROWS}"
                rows = self._cell_rows(i, order[k : k + CHUNK_ROWS])
                _write_chunk(out / f"{name}.js", name, ",".join(rows))
        qs = self.questions
        for k in range(0, len(qs), CHUNK_QUESTIONS):
            name = f"q{k // CHUNK_QUESTIONS}"
            _write_chunk(out / f"{name}.js", name, ",".join(qs[k : k + CHUNK_QUESTIONS]))
        import numpy as np

        order, cells = self._page_order()
        questions = np.concatenate([np.frombuffer(q, dtype=np.int32) for q in self._q])
        flags = np.concatenate([np.frombuffer(f, dtype=np.int8) for f in self._flags])
        flat = np.stack([cells[order], questions[order], flags[order]], axis=1).ravel()
        return (
            self._head(multi)
            + f',"split":"{CHUNK_DIR}","chunk_rows":{CHUNK_ROWS},"chunk_questions":{CHUNK_QUESTIONS}'
            + f',"n_questions":{len(qs)},"rows":'
            + json_ints(flat)
            + "}"
        )


def json_ints(values: Any, block: int = 1 << 16) -> str:
    """A 1-d integer array as a JSON list (``json.dumps(values.tolist())`` without spaces), made
    ``block`` numbers at a time: 600,000 rows' 1.8 million numbers are never all Python ints at once."""
    return (
        "["
        + ",".join(
            json.dumps(values[k : k + block].tolist(), separators=(",", ":"))[1:-1]
            for k in range(0, len(values), block)
        )
        + "]"
    )


def _write_chunk(path: Path, name: str, items: str) -> None:
    """One transcript file: a script that hands its JSON list to the page (written atomically, as
    every file seerbench writes: a killed report leaves no half file for the index to load)."""
    atomic_write_text(path, f'seerbenchChunk("{name}",[{items}]);\n')
