"""Reading a data file: :func:`load_table` picks the reader by the file's extension (or a
forced format) — text tables (:mod:`~kernel_lab.data.text`, also compressed as ``.gz``,
``.bz2`` or ``.zip``), Excel (:mod:`~kernel_lab.data.excel`), NumPy
(:mod:`~kernel_lab.data.npy`), svmlight (:mod:`~kernel_lab.data.svmlight`), ARFF
(:mod:`~kernel_lab.data.arff`), MATLAB (:mod:`~kernel_lab.data.matlab`), Parquet
(:mod:`~kernel_lab.data.parquet`, one file; a folder of them is partitioned data,
:mod:`~kernel_lab.data.partitioned`) — and returns a
:class:`~kernel_lab.data.table.Table` or raises a
:class:`~kernel_lab.core.errors.DataError` naming the file, the line and column where
that applies, the problem and the fix. Missing or non-finite values are an error unless
``nan_policy="drop"``, which marks the affected rows dropped (``Table.dropped``: they stay
in place, so no row number shifts) and records how many. A value beyond
±:data:`~kernel_lab.data.table.MAX_MAGNITUDE` is refused in every format
(:func:`~kernel_lab.data.table.refuse_huge_values`): it is a damaged cell, not data.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from kernel_lab.core.errors import DataError
from kernel_lab.core.progress import Cancelled
from kernel_lab.data import arff, excel, matlab, npy, parquet, svmlight, text
from kernel_lab.data.columns import ColumnChoice
from kernel_lab.data.encoding import numeric_encoding
from kernel_lab.data.raw import COMPRESSED, expand, read_head
from kernel_lab.data.table import (
    NAN_POLICIES,
    TEXT_FEATURES,
    ReadOptions,
    Table,
    apply_nan_policy,
    refuse_huge_values,
)

#: File formats by extension.
FORMATS: dict[str, str] = {
    ".csv": "csv", ".tsv": "csv", ".tab": "csv", ".txt": "csv", ".dat": "csv",
    ".data": "csv",
    ".npy": "npy", ".npz": "npz",
    ".svm": "svmlight", ".svmlight": "svmlight", ".libsvm": "svmlight",
    ".arff": "arff", ".mat": "mat", ".xlsx": "xlsx", ".parquet": "parquet",
}
#: Extensions of text tables (what a .gz, .bz2 or .zip file may hold).
TEXT_SUFFIXES = frozenset(k for k, v in FORMATS.items() if v == "csv")
#: Glob patterns of every file :func:`load_table` reads (for an open dialog).
FILE_PATTERNS = tuple([f"*{s}" for s in FORMATS]
                      + [f"*{s}{c}" for s in sorted(TEXT_SUFFIXES) for c in (".gz", ".bz2")]
                      + ["*.zip"])


#: Workbooks up to this size are peeked at (:func:`peek_rows`; openpyxl reads the shared
#: strings of the whole workbook first).
PEEK_XLSX = 8 * 2**20


def known_types() -> str:
    """The extensions :func:`load_table` reads, for a message (from :data:`FORMATS` and
    the compressions in :data:`FILE_PATTERNS`: one list to keep up to date)."""
    packed = sorted({"." + p.rsplit(".", 1)[1] for p in FILE_PATTERNS
                     if p.count(".") > 1 or p == "*.zip"})
    return (f"{', '.join(FORMATS)}, or a text table compressed as "
            f"{', '.join(packed[:-1])} or {packed[-1]} (e.g. data.csv{packed[0]})")


def load_table(
    path: str | os.PathLike[str],
    *,
    target: str | int | None = None,
    nan_policy: str = "error",
    fmt: str | None = None,
    text_features: str = "onehot",
    keep_index: bool = False,
    sheet: str = "",
    columns: ColumnChoice | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> Table:
    """Read a data file into a :class:`~kernel_lab.data.table.Table`.

    Parameters
    ----------
    path : path-like
    target : str or int, optional
        Target column: a header name, or a 0-based index (negative counts from the
        end). Default: the last column (for NPZ/MAT, the variable ``y``).
    nan_policy : {"error", "drop", "fill"}
        What to do with missing or non-finite values: refuse them, mark their rows
        dropped (left out of the split), or
        keep the missing feature cells as NaN for the split to fill
        (:func:`~kernel_lab.data.split.dataset_from_table`; a missing target or an
        infinite value is still refused).
    fmt : str, optional
        Force a format (``csv``, ``xlsx``, ``npy``, ``npz``, ``svmlight``, ``arff``,
        ``mat``, ``parquet``) instead of guessing from the extension.
    text_features, keep_index, sheet
        Text columns, a row-index first column and the worksheet of an .xlsx file (text
        tables and Parquet only; see :class:`~kernel_lab.data.table.ReadOptions`).
    columns : ColumnChoice, optional
        The feature columns to keep or drop (every format; by the file's column names,
        ``x1 …`` and ``y`` for arrays and svmlight, or 0-based indices).
    progress : callable, optional
        ``progress(fraction, message)``, told as the reading goes on; it may raise
        :class:`~kernel_lab.core.progress.Cancelled` to stop the reading. It travels with
        the read options to the readers (no global or per-thread state).
    """
    path = Path(path)
    options = ReadOptions(text_features, bool(keep_index), str(sheet or ""),
                          columns or ColumnChoice(), progress)
    if options.text_features not in TEXT_FEATURES:
        raise DataError(f"unknown text-feature handling {options.text_features!r}",
                        f"use one of: {', '.join(TEXT_FEATURES)}")
    if nan_policy not in NAN_POLICIES:
        raise DataError(f"unknown missing-value policy {nan_policy!r}",
                        f"use one of: {', '.join(NAN_POLICIES)}")
    if not path.exists():
        raise DataError("the file does not exist", "check the path", path=path)
    if path.is_dir():
        raise DataError("this is a folder, not a data file", "choose a file", path=path)
    if fmt is not None and fmt not in set(FORMATS.values()):
        raise DataError(f"unknown file format {fmt!r}",
                        f"use one of: {', '.join(sorted(set(FORMATS.values())))}")
    packed = _packed(path, fmt)
    kind = "csv" if packed else fmt or FORMATS.get(path.suffix.lower())
    if kind is None:
        raise DataError(
            f"unknown file type {path.suffix or '(no extension)'!r}",
            f"use {known_types()}",
            path=path,
        )
    options.report(0.0, f"reading {path.name} ({path.stat().st_size / 2**20:,.0f} MB)")
    note = None
    try:
        # a .npy file is memory-mapped, not read: its head is enough for the checks; of a
        # large text table the head, too, while the C parser reads the file itself; pyarrow
        # reads a Parquet file itself
        size = path.stat().st_size
        if packed:
            raw, note = expand(path, TEXT_SUFFIXES)
            size = len(raw)
        elif kind in ("npy", "npz", "parquet"):
            raw = read_head(path)
        elif kind == "csv" and size > text.BIG_TEXT:
            raw = read_head(path, text.HEAD_BYTES)
        else:
            raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"the file cannot be read ({exc.strerror})",
                        "check its permissions", path=path) from None
    if not raw or (raw.isspace() and len(raw) >= size):
        raise DataError("the file is empty", "choose a file with data in it", path=path)
    try:
        if kind == "csv":
            table = text.read_text_table(path, raw, target, options, complete=packed or None)
        elif kind == "xlsx":
            table = excel.read_xlsx(path, raw, target, options)
        elif kind == "arff":
            table = arff.read_arff(path, raw, target, options)
        elif kind == "parquet":
            table = parquet.read_parquet(path, raw, target, options)
        else:
            reader = {"npy": npy.read_npy, "npz": npy.read_npz,
                      "svmlight": svmlight.read_svmlight, "mat": matlab.read_mat}[kind]
            table = select_columns(path, reader(path, raw, target), options.columns)
    except (DataError, Cancelled):
        raise
    except MemoryError:
        raise DataError(f"reading it as {kind} needs more memory than this machine has; "
                        "the file may be damaged (its header claims a huge array)",
                        "check the file, or use a smaller one", path=path) from None
    except Exception as exc:  # a damaged file inside a library's parser: say so, by name
        detail = " ".join(str(exc).split())[:160]
        raise DataError(f"it cannot be read as {kind}: the file looks damaged or is not "
                        f"what its extension says ({type(exc).__name__}: {detail})",
                        f"save it again as {kind}, or choose the format explicitly",
                        path=path) from None
    if note:
        table.notes.insert(0, note)
    options.report(0.95, "checking for missing values and numbers out of range")
    if table.in_range:  # the reader saw every value finite and in range: nothing to find
        return table
    refuse_huge_values(path, table.X, table.y, table.feature_names, table.target_name,
                       lines=table.lines, dropped=options.columns.drop)
    return apply_nan_policy(table, nan_policy, path, options.columns.drop)


def select_columns(path: Path, table: Table, choice: ColumnChoice) -> Table:
    """The table with only the feature columns ``choice`` keeps, for the formats read as
    numbers whole (arrays, svmlight), whose columns are named ``x1 …`` and ``y`` (or by
    the arrays of an .npz/.mat file); a number counts every column, the target's
    included, as the target option does."""
    if not choice:
        return table
    names = list(table.columns or [*table.feature_names, table.target_name])
    if table.target_name not in names:
        names.append(table.target_name)
    target = names.index(table.target_name)
    position = {name: j for j, name in enumerate(table.feature_names)}
    picked = choice.pick(names, target, path)
    if any(names[i] not in position for i in picked):  # pragma: no cover - names agree
        raise DataError("the columns of the file could not be matched", path=path)
    left_out = choice.left_out(names, target, picked)
    index = [position[names[i]] for i in picked]
    table.X = table.X[:, index]
    table.feature_names = [table.feature_names[j] for j in index]
    table.columns = names
    table.encoding = numeric_encoding(table.feature_names, table.target_name, names,
                                      table.classes, choice.to_options())
    if left_out:
        table.notes.append(left_out)
    return table


def _packed(path: Path, fmt: str | None = None) -> bool:
    """Whether ``path`` is a text table inside a ``.gz``, ``.bz2`` or ``.zip`` file."""
    suffix = path.suffix.lower()
    return suffix in COMPRESSED and fmt in (None, "csv") and (
        suffix == ".zip" or fmt == "csv" or Path(path.stem).suffix.lower() in TEXT_SUFFIXES)


def peek_rows(path: str | os.PathLike[str], rows: int = 8
              ) -> tuple[list[str], list[list[str]]] | None:
    """Column names and the first ``rows`` rows of a text table, ``.npy`` array, Parquet
    file or ``.xlsx`` sheet as written, from its first bytes (a preview to show at once while the
    whole file loads); None for other formats or anything unreadable — the load itself
    then says what is wrong."""
    path = Path(path)
    try:
        kind = FORMATS.get(path.suffix.lower())
        if kind == "parquet":
            return parquet.peek_parquet(path, rows)
        if kind == "xlsx":  # a large workbook's shared strings take a while: no peek
            return excel.peek_xlsx(path, rows) if path.stat().st_size <= PEEK_XLSX else None
        if kind == "npy":
            A = np.load(path, mmap_mode="r", allow_pickle=False)
            if A.ndim not in (1, 2) or A.dtype.kind not in "biuf":
                return None  # the load says what is wrong with it
            block = np.atleast_2d(np.asarray(A[:rows]))
            if A.ndim == 1:
                block = block.T
            return ([f"column {j + 1}" for j in range(block.shape[1])],
                    [[f"{v:.6g}" for v in row] for row in block])
        if kind != "csv" and not _packed(path):
            return None
        return text.peek_text(path, rows, TEXT_SUFFIXES)
    except Exception:  # a preview only: whatever is wrong, the load will say it
        return None
