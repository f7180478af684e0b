"""The transcript browser's data: one row per results line (a cell and a question), gathered in a
pass over the same snapshot of the results that the statistics read, while they are computed
(:func:`seerbench.analysis.run.summarize_run`'s ``while_reading``), and written out in one of two
layouts:

- **one file** (:meth:`Browser.inline_json`): every row, with its transcripts, as JSON inside the
  page, when the rows' JSON is at most :data:`ONE_FILE_LIMIT` bytes;
- **a folder** (:meth:`Browser.write_chunks`): past that, the page (``index.html``) keeps per row only
  its cell, its question and two flags (wrong verdict, parse failure) for the filters; the rows
  themselves, with their transcripts, are in ``transcripts/c<cell>-<k>.js`` (a cell's rows in
  blocks of :data:`CHUNK_ROWS`) and the questions in ``transcripts/q<k>.js`` (blocks of
  :data:`CHUNK_QUESTIONS`), each a script that hands its JSON to the page. The page loads the
  blocks a page of rows needs with ``<script src>``, which works from ``file://`` (where browsers
  refuse ``fetch()`` of local files); a full-text search loads them all.

Each row is turned into JSON text as it is read and kept in a temporary file per cell, never as
Python objects, so memory stays flat in the number of lines; the questions are kept once each, as
JSON text.
"""

from __future__ import annotations

import json
import tempfile
from array import array
from pathlib import Path
from typing import IO, Any

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


def browser_row(cell_index: int, q_index: int, ln: dict[str, Any]) -> list[Any]:
    """One line of a results file as the transcript browser's row:
    ``[cell, question, excluded, parse_failures, judge_accuracy, asd(log), chosen_case, cases]``,
    each case ``[short, method, probabilities, parse_status, error, mark, transcript, orders]`` (``mark``:
    the verdict against the truth, r(ight), w(rong), t(ie) or u(nscored); ``orders``: with both option
    orders, the probabilities of the order as asked and of the swapped one) and each turn ``[speaker,
    answer_case, text, [[quote, verified], ...]]``. A symmetric line (a debate, NaiveJudge) has one
    protocol run: its transcript is given once, on the first case."""
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
        cell_index,
        q_index,
        bool(get("excluded")),
        int(get("parse_failures") or 0),
        get("judge_accuracy"),
        asd.get("log") if asd else None,
        get("chosen_case"),
        cases,
    ]


def row_flags(row: list[Any]) -> int:
    """:data:`WRONG` when a case's verdict is wrong or tied, :data:`FAILED` when the line has a
    parse failure or a case whose verdict did not parse: what the page's filters test."""
    flags = FAILED if row[3] > 0 else 0
    for c in row[7]:
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


class Browser:
    """The browser rows of every run in a report, kept as JSON text in a temporary folder (one
    file per cell, a row a line) with each row's question and flags in arrays. Use as a context
    manager: the temporary folder goes when it ends."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="seerbench-report-")
        self.cells: list[dict[str, Any]] = []
        self.questions: list[str] = []  # the question entries as JSON text, by index
        self._question_index: dict[Any, int] = {}  # question entry (as a tuple) -> index
        self._q: list[array[int]] = []
        self._flags: list[array[int]] = []
        self._files: list[IO[str]] = []
        self.size = 0  # bytes of the rows' and questions' JSON

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        for f in self._files:
            f.close()
        self._tmp.cleanup()

    def add_cell(self, info: dict[str, Any]) -> int:
        """A new cell (``run``, ``cell``, ``label``, ``protocol``, ``judge``, ``agent``): its index."""
        self.cells.append(info)
        self._q.append(array("i"))
        self._flags.append(array("b"))
        i = len(self.cells) - 1
        path = Path(self._tmp.name) / f"{i}.jsonl"
        self._files.append(open(path, "w", encoding="utf-8", newline=""))  # noqa: SIM115
        return i

    def add(self, cell: int, ln: dict[str, Any]) -> None:
        """One results line of cell ``cell`` (as read, not rescored)."""
        # one id may name different questions in two runs: keyed by content, turned into JSON once
        key = question_key(ln)
        q = self._question_index.get(key)
        if q is None:
            q = self._question_index[key] = len(self.questions)
            text = script_json([key[0], key[1], [list(a) for a in key[2:]]])
            self.questions.append(text)
            self.size += len(text) + 1
        row = browser_row(cell, q, ln)
        text = script_json(row)
        self._files[cell].write(text + "\n")
        self._q[cell].append(q)
        self._flags[cell].append(row_flags(row))
        self.size += len(text) + 1

    def _finish(self) -> None:
        for f in self._files:
            f.flush()

    def _cell_rows(self, cell: int) -> list[str]:
        with open(Path(self._tmp.name) / f"{cell}.jsonl", encoding="utf-8", newline="") as f:
            # "\n" only: JSON escapes it, but not U+2028, U+0085 and the like that splitlines() splits at
            return f.read().split("\n")[:-1]

    def _by_question(self, cell: int, values: list[Any]) -> list[Any]:
        """A cell's ``values`` (one per row, in file order) sorted by question, stably."""
        q = self._q[cell]
        return [values[k] for k in sorted(range(len(values)), key=q.__getitem__)]

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
        self._finish()
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
        self._finish()
        out = folder / CHUNK_DIR
        out.mkdir(parents=True, exist_ok=True)
        remove_chunks(folder)  # an earlier report's blocks
        for i in range(len(self.cells)):
            r = self._by_question(i, self._cell_rows(i))
            for k in range(0, len(r), CHUNK_ROWS):
                name = f"c{i}-{k // CHUNK_ROWS}"
                _write_chunk(out / f"{name}.js", name, ",".join(r[k : k + CHUNK_ROWS]))
        qs = self.questions
        for k in range(0, len(qs), CHUNK_QUESTIONS):
            name = f"q{k // CHUNK_QUESTIONS}"
            _write_chunk(out / f"{name}.js", name, ",".join(qs[k : k + CHUNK_QUESTIONS]))
        import numpy as np

        order, cells = self._page_order()
        questions = np.concatenate([np.frombuffer(q, dtype=np.int32) for q in self._q])
        flags = np.concatenate([np.frombuffer(f, dtype=np.int8) for f in self._flags])
        flat = np.stack([cells[order], questions[order], flags[order]], axis=1).ravel().tolist()
        return (
            self._head(multi)
            + f',"split":"{CHUNK_DIR}","chunk_rows":{CHUNK_ROWS},"chunk_questions":{CHUNK_QUESTIONS}'
            + f',"n_questions":{len(qs)},"rows":'
            + json.dumps(flat, separators=(",", ":"))
            + "}"
        )


def _write_chunk(path: Path, name: str, items: str) -> None:
    """One transcript file: a script that hands its JSON list to the page (written atomically, as
    every file seerbench writes: a killed report leaves no half file for the index to load)."""
    atomic_write_text(path, f'seerbenchChunk("{name}",[{items}]);\n')
