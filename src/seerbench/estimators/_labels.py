"""Label sets: the per-item labels behind :class:`LabelCounts`, and the ``labels.csv`` format.

``labels.csv`` has one row per label, options numbered 1..K, and the columns

* ``prediction``: the system's chosen option;
* ``ordinary_label``: the true option, if the expert said "yes";
* ``complementary_label``: an option the expert ruled out, if the expert said "no";
* ``k``: the number of options (optional when K is given for the whole file).

Exactly one of ``ordinary_label`` / ``complementary_label`` is filled per row. Other columns (ids,
metadata) are kept in :attr:`LabelSet.extra` and otherwise ignored. Rows are named in errors by their
row number in the file counting the header as row 1 (as a spreadsheet shows them).

Reading and writing files lives here, at the edge; the estimators themselves only see counts.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from seerbench.errors import ConfigError, DataError
from seerbench.estimators._core import LabelCounts

__all__ = ["LABEL_COLUMNS", "LabelSet", "read_labels_csv", "write_labels_csv"]

LABEL_COLUMNS = ("prediction", "ordinary_label", "complementary_label", "k")

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, eq=False)
class LabelSet:
    """Per-row labels: ``label[i]`` is an ordinary label, or a complementary one where
    ``is_complementary[i]``; ``prediction[i]`` and both labels are in 1..``k[i]``.

    ``rows`` names each row in error messages (file row numbers for a CSV, item indices for simulated
    data); ``extra`` holds other columns as strings, keyed by column name.
    Build with :meth:`from_arrays` (validates) or :func:`read_labels_csv`.
    """

    prediction: IntArray
    label: IntArray
    is_complementary: BoolArray
    k: IntArray
    rows: IntArray
    extra: Mapping[str, Sequence[str]] = field(default_factory=dict)
    source: str = "labels"

    @classmethod
    def from_arrays(
        cls,
        prediction: Any,
        label: Any,
        is_complementary: Any,
        k: Any,
        *,
        rows: Any = None,
        extra: Mapping[str, Sequence[str]] | None = None,
        source: str = "labels",
    ) -> LabelSet:
        """Validate and wrap arrays. ``k`` may be a scalar (whole set) or one value per row.

        Raises :class:`DataError` naming the first offending row for labels or predictions outside
        1..K, K < 2, or mismatched lengths.
        """
        pred = _int_array("prediction", prediction, source)
        lab = _int_array("label", label, source)
        comp = np.asarray(is_complementary, dtype=bool)
        n = pred.shape[0]
        k_arr = _int_array("k", k, source)
        if k_arr.ndim == 0:
            k_arr = np.full(n, int(k_arr), dtype=np.int64)
        row_arr = np.arange(n, dtype=np.int64) if rows is None else _int_array("rows", rows, source)
        for name, arr in (("label", lab), ("is_complementary", comp), ("k", k_arr), ("rows", row_arr)):
            if arr.ndim != 1 or arr.shape[0] != n:
                raise DataError(f"{source}: {name} has shape {arr.shape}, expected ({n},) like prediction")
        extra = dict(extra or {})
        for name, col in extra.items():
            if len(col) != n:
                raise DataError(f"{source}: extra column {name!r} has {len(col)} values, expected {n}")
        ls = cls(pred, lab, comp, k_arr, row_arr, extra, source)
        ls._validate()
        return ls

    def __len__(self) -> int:
        return int(self.prediction.shape[0])

    def _first_bad(self, mask: BoolArray, message: str) -> None:
        if mask.any():
            i = int(np.argmax(mask))
            raise DataError(
                f"{self.source}, row {int(self.rows[i])}: "
                + message.format(
                    k=int(self.k[i]),
                    prediction=int(self.prediction[i]),
                    label=int(self.label[i]),
                    kind="complementary_label" if self.is_complementary[i] else "ordinary_label",
                )
            )

    def _validate(self) -> None:
        self._first_bad(self.k < 2, "k={k}: K must be at least 2")
        self._first_bad(
            (self.prediction < 1) | (self.prediction > self.k), "prediction {prediction} is outside 1..{k}"
        )
        self._first_bad((self.label < 1) | (self.label > self.k), "{kind} {label} is outside 1..{k}")

    @property
    def n_ordinary(self) -> int:
        """Number of ordinary labels."""
        return int((~self.is_complementary).sum())

    @property
    def n_complementary(self) -> int:
        """Number of complementary labels."""
        return int(self.is_complementary.sum())

    def counts(self, k: int | None = None) -> LabelCounts:
        """Sufficient statistics for the estimators.

        All rows must share one K (the estimators assume a fixed K, as Algorithm 1 does): a file
        mixing K raises :class:`DataError` naming two rows that differ; split it by ``k`` and estimate
        each part. ``k``, if given, must agree with the rows.
        """
        if len(self) == 0:
            raise DataError(f"{self.source}: no labels")
        k0 = int(self.k[0])
        differ = self.k != k0
        if differ.any():
            i = int(np.argmax(differ))
            raise DataError(
                f"{self.source}: rows {int(self.rows[0])} and {int(self.rows[i])} have different k "
                f"({k0} and {int(self.k[i])}); the estimators assume one K per label set: split the "
                "file by k"
            )
        if k is not None and int(k) != k0:
            raise ConfigError(f"{self.source}: k={k} was asked for but the labels have k={k0}")
        hit = self.prediction == self.label
        comp = self.is_complementary
        n_c = int(comp.sum())
        return LabelCounts(
            k=k0,
            n_o=len(self) - n_c,
            s_o=int((hit & ~comp).sum()),
            n_c=n_c,
            # W = 1 when the prediction avoids the complementary label.
            s_c=n_c - int((hit & comp).sum()),
        )


def _int_array(name: str, values: Any, source: str) -> IntArray:
    arr = np.asarray(values)
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise DataError(f"{source}: {name} must be integers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            i = int(np.argmax(bad.ravel()))
            raise DataError(f"{source}: {name}[{i}] = {arr.ravel()[i]!r} is not a whole number")
    return arr.astype(np.int64)


def _parse_int(cell: str, column: str, where: str) -> int:
    try:
        return int(cell)
    except ValueError:
        pass
    # Accept "3.0" (spreadsheets and pandas write integers that way) but nothing fractional.
    try:
        x = float(cell)
    except ValueError:
        raise DataError(f"{where}: {column} {cell!r} is not a number") from None
    if not math.isfinite(x) or x != round(x):
        raise DataError(f"{where}: {column} {cell!r} is not a whole number")
    return int(x)


def read_labels_csv(path: str | Path, *, k: int | None = None) -> LabelSet:
    """Read a ``labels.csv`` (format in the module docstring) into a validated :class:`LabelSet`.

    ``k`` gives K for the whole file; it is required when there is no ``k`` column, and must agree
    with the column when there is one. Errors (:class:`DataError`) name the file and the row: missing
    columns, non-numeric or fractional cells, K < 2, a prediction or label outside 1..K, both or
    neither label filled, a complementary label equal to the ordinary label of the same row, an empty
    file.
    """
    path = Path(path)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 2):
        raise ConfigError(f"--k must be an integer >= 2, got {k!r}")
    try:
        fh = path.open(newline="", encoding="utf-8-sig")
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror or e}") from None
    src = str(path)
    preds: list[int] = []
    labels: list[int] = []
    comps: list[bool] = []
    ks: list[int] = []
    rows: list[int] = []
    with fh:
        # csv.reader with column indices rather than DictReader: a dict per row doubles the cost on
        # million-row files.
        reader = csv.reader(fh)
        first = next(reader, None)
        header = [h.strip() for h in first] if first else []
        if not any(header):
            raise DataError(f"{src}: empty file (expected a header with {', '.join(LABEL_COLUMNS[:3])})")
        missing = [c for c in LABEL_COLUMNS[:3] if c not in header]
        if missing:
            raise DataError(f"{src}: missing column(s) {', '.join(missing)}; the header is {header}")
        i_p, i_o, i_c = (header.index(c) for c in LABEL_COLUMNS[:3])
        i_k = header.index("k") if "k" in header else None
        if i_k is None and k is None:
            raise DataError(f"{src}: no 'k' column; give the number of options for the whole file with --k")
        other = [(c, i) for i, c in enumerate(header) if c not in LABEL_COLUMNS]
        extra: dict[str, list[str]] = {c: [] for c, _ in other}
        n_cols = len(header)
        for cells in reader:
            row = reader.line_num
            where = f"{src}, row {row}"
            if len(cells) > n_cols:
                raise DataError(f"{where}: more cells than header columns")
            if len(cells) < n_cols:
                cells = cells + [""] * (n_cols - len(cells))
            p_cell, o_cell, c_cell = cells[i_p].strip(), cells[i_o].strip(), cells[i_c].strip()
            k_cell = cells[i_k].strip() if i_k is not None else ""
            if not (p_cell or o_cell or c_cell or k_cell or any(x.strip() for x in cells)):
                continue  # blank line
            if not p_cell:
                raise DataError(f"{where}: prediction is empty")
            pred = _parse_int(p_cell, "prediction", where)
            o = _parse_int(o_cell, "ordinary_label", where) if o_cell else None
            c = _parse_int(c_cell, "complementary_label", where) if c_cell else None
            if o is not None and c is not None:
                if o == c:
                    raise DataError(
                        f"{where}: complementary_label {c} equals the ordinary_label of the same row "
                        "(a complementary label names a wrong option)"
                    )
                raise DataError(f"{where}: both ordinary_label and complementary_label are filled; give one")
            if o is None and c is None:
                raise DataError(f"{where}: neither ordinary_label nor complementary_label is filled")
            if k_cell:
                row_k = _parse_int(k_cell, "k", where)
                if k is not None and row_k != k:
                    raise DataError(f"{where}: k column says {row_k} but --k is {k}")
            elif k is not None:
                row_k = k
            else:
                raise DataError(f"{where}: k is empty and no --k was given")
            if row_k < 2:
                raise DataError(f"{where}: k={row_k}: K must be at least 2")
            if not 1 <= pred <= row_k:
                raise DataError(f"{where}: prediction {pred} is outside 1..{row_k}")
            lab = o if o is not None else c
            assert lab is not None
            if not 1 <= lab <= row_k:
                kind = "ordinary_label" if o is not None else "complementary_label"
                raise DataError(f"{where}: {kind} {lab} is outside 1..{row_k}")
            preds.append(pred)
            labels.append(lab)
            comps.append(c is not None)
            ks.append(row_k)
            rows.append(row)
            for col, i in other:
                extra[col].append(cells[i].strip())
    if not preds:
        raise DataError(f"{src}: no label rows after the header")
    return LabelSet.from_arrays(
        np.array(preds, dtype=np.int64),
        np.array(labels, dtype=np.int64),
        np.array(comps, dtype=bool),
        np.array(ks, dtype=np.int64),
        rows=np.array(rows, dtype=np.int64),
        extra=extra,
        source=src,
    )


def write_labels_csv(path: str | Path, labels: LabelSet, *, leading: Sequence[str] = ("id",)) -> None:
    """Write ``labels`` as a ``labels.csv`` that :func:`read_labels_csv` reads back.

    Extra columns named in ``leading`` come first (if present), then the label columns, then the
    remaining extra columns.
    """
    path = Path(path)
    first = [c for c in leading if c in labels.extra]
    rest = [c for c in labels.extra if c not in first]
    comp = labels.is_complementary
    lab = labels.label.astype(str)
    ordinary = np.where(comp, "", lab)
    complementary = np.where(comp, lab, "")
    try:
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow([*first, *LABEL_COLUMNS, *rest])
            cols = [
                *(labels.extra[c] for c in first),
                # plain lists: csv.writer iterates numpy string arrays several times slower
                labels.prediction.astype(str).tolist(),
                ordinary.tolist(),
                complementary.tolist(),
                labels.k.astype(str).tolist(),
                *(labels.extra[c] for c in rest),
            ]
            w.writerows(zip(*cols, strict=True))
    except OSError as e:
        raise DataError(f"cannot write {path}: {e.strerror or e}") from None
