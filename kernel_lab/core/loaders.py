"""File loaders: CSV/TSV, NPY/NPZ, svmlight/libsvm, ARFF and MATLAB ``.mat``.

Every loader returns a :class:`Table` (features, target, names) or raises a
:class:`~kernel_lab.core.errors.DataError` naming the file, the line and
column where that applies, the problem and the fix. Missing or non-finite
values are an error unless ``nan_policy="drop"``, which drops the affected
rows and records how many.
"""

from __future__ import annotations

import csv
import io
import os
import re
import zipfile
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError, data_option
from kernel_lab.core.progress import Cancelled

#: File formats by extension.
FORMATS: dict[str, str] = {
    ".csv": "csv", ".tsv": "csv", ".tab": "csv", ".txt": "csv", ".dat": "csv",
    ".data": "csv",
    ".npy": "npy", ".npz": "npz",
    ".svm": "svmlight", ".svmlight": "svmlight", ".libsvm": "svmlight",
    ".arff": "arff", ".mat": "mat", ".xlsx": "xlsx",
}
NAN_POLICIES = ("error", "drop")
_MISSING = {"", "na", "nan", "n/a", "null", "none", "?", "-nan", "inf", "+inf", "-inf",
            "infinity", "-infinity"}
_MAGIC = [
    (b"\x93NUMPY", "a NumPy .npy array"),
    (b"PK\x03\x04", "a zip archive (for example a NumPy .npz file or a spreadsheet)"),
    (b"MATLAB 5.0", "a MATLAB .mat file"),
    (b"\x89HDF", "an HDF5 file (for example a MATLAB v7.3 .mat file)"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x1f\x8b", "a gzip archive"),
]


@dataclass
class Table:
    """Features and target read from a file, before splitting.

    Attributes
    ----------
    X : ndarray, shape (n, p)
    y : ndarray, shape (n,)
    feature_names : list of str, length p
    target_name : str
    notes : list of str
        What the loader did that the user should know (rows dropped, …).
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    target_name: str
    notes: list[str] = field(default_factory=list)
    #: 1-based file line of each row, where the format has lines.
    lines: np.ndarray | None = None
    #: Class names when y holds class codes 0 … K−1.
    classes: list[str] | None = None
    #: The file's own column names, before encoding (what ``target=`` can name).
    columns: list[str] | None = None


#: Text feature columns with more distinct values than this are dropped, not encoded.
MAX_LEVELS = 50
TEXT_FEATURES = ("onehot", "drop")
#: Header names of a row-index column (as R's write.csv and pandas' to_csv write it).
INDEX_NAMES = {"", "rownames", "row.names", "unnamed: 0", "index"}
#: Header names of an identifier column, dropped when it holds 0 … n−1 or 1 … n.
ID_NAMES = {"id", "row", "row_id", "rowid", "no", "#"}


@dataclass(frozen=True)
class ReadOptions:
    """How a table with text is read (text tables only: CSV/TSV, xlsx, ARFF).

    text_features : ``"onehot"`` (each text column becomes one 0/1 column per value) or
        ``"drop"``; text columns with more than :data:`MAX_LEVELS` distinct values (or one
        per row) are dropped either way.
    keep_index : keep a first column that is a row index (dropped by default).
    sheet : the worksheet of an ``.xlsx`` file (name or 1-based number; default: first).
    """

    text_features: str = "onehot"
    keep_index: bool = False
    sheet: str = ""


#: The progress callback of the load running in this thread (``progress(fraction,
#: message)``, which raises :class:`~kernel_lab.core.progress.Cancelled` to stop it);
#: the readers report through :func:`_report` without passing it along.
_PROGRESS: ContextVar[Callable[[float, str], None] | None] = ContextVar("_PROGRESS",
                                                                         default=None)


def _report(fraction: float, message: str) -> None:
    report = _PROGRESS.get()
    if report is not None:
        report(fraction, message)


def sniff_kind(head: bytes) -> str | None:
    """A description of a binary format recognised from the first bytes, or None."""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    return None


def load_table(
    path: str | os.PathLike[str],
    *,
    target: str | int | None = None,
    nan_policy: str = "error",
    fmt: str | None = None,
    text_features: str = "onehot",
    keep_index: bool = False,
    sheet: str = "",
    progress: Callable[[float, str], None] | None = None,
) -> Table:
    """Read a data file into a :class:`Table`.

    Parameters
    ----------
    path : path-like
    target : str or int, optional
        Target column: a header name, or a 0-based index (negative counts from the
        end). Default: the last column (for NPZ/MAT, the variable ``y``).
    nan_policy : {"error", "drop"}
        What to do with missing or non-finite values.
    fmt : str, optional
        Force a format (``csv``, ``xlsx``, ``npy``, ``npz``, ``svmlight``, ``arff``,
        ``mat``) instead of guessing from the extension.
    text_features, keep_index, sheet
        Text columns, a row-index first column and the worksheet of an .xlsx file (text
        tables only; see :class:`ReadOptions`).
    progress : callable, optional
        ``progress(fraction, message)``, told as the reading goes on (row blocks of a
        text table read by the strict reader); it may raise
        :class:`~kernel_lab.core.progress.Cancelled` to stop the reading.
    """
    token = _PROGRESS.set(progress)
    try:
        return _load_table(Path(path), target, nan_policy, fmt, text_features, keep_index,
                           sheet)
    finally:
        _PROGRESS.reset(token)


def _load_table(path: Path, target: str | int | None, nan_policy: str, fmt: str | None,
                text_features: str, keep_index: bool, sheet: str) -> Table:
    path = Path(path)
    options = ReadOptions(text_features, bool(keep_index), str(sheet or ""))
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
    kind = fmt or FORMATS.get(path.suffix.lower())
    if kind is None:
        raise DataError(
            f"unknown file type {path.suffix or '(no extension)'!r}",
            "use .csv, .tsv, .txt, .xlsx, .npy, .npz, .svm/.libsvm, .arff or .mat",
            path=path,
        )
    _report(0.0, f"reading {path.name} ({path.stat().st_size / 2**20:,.0f} MB)")
    try:
        # a .npy file is memory-mapped, not read: its head is enough for the checks; of a
        # large text table the head, too, while the C parser reads the file itself
        size = path.stat().st_size
        if kind in ("npy", "npz"):
            raw = _read_head(path)
        elif kind == "csv" and size > BIG_TEXT:
            raw = _read_head(path, HEAD_BYTES)
        else:
            raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"the file cannot be read ({exc.strerror})",
                        "check its permissions", path=path) from None
    if not raw or (raw.isspace() and len(raw) >= size):
        raise DataError("the file is empty", "choose a file with data in it", path=path)
    reader = {"csv": _read_csv, "xlsx": _read_xlsx, "npy": _read_npy, "npz": _read_npz,
              "svmlight": _read_svmlight, "arff": _read_arff, "mat": _read_mat}[kind]
    try:
        if kind in ("csv", "xlsx", "arff"):
            table = reader(path, raw, target, options)
        else:
            table = reader(path, raw, target)
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
    _report(0.95, "checking for missing values")
    return _apply_nan_policy(table, nan_policy, path)


def peek_rows(path: str | os.PathLike[str], rows: int = 8
              ) -> tuple[list[str], list[list[str]]] | None:
    """Column names and the first ``rows`` rows of a text table or ``.npy`` array as
    written, from its first bytes (a preview to show at once while the whole file
    loads); None for other formats or anything unreadable — the load itself then says
    what is wrong."""
    path = Path(path)
    try:
        kind = FORMATS.get(path.suffix.lower())
        if kind == "npy":
            A = np.load(path, mmap_mode="r", allow_pickle=False)
            if A.ndim not in (1, 2) or A.dtype.kind not in "biuf":
                return None  # the load says what is wrong with it
            block = np.atleast_2d(np.asarray(A[:rows]))
            if A.ndim == 1:
                block = block.T
            return ([f"column {j + 1}" for j in range(block.shape[1])],
                    [[f"{v:.6g}" for v in row] for row in block])
        if kind != "csv":
            return None
        with open(path, "rb") as fh:
            head_bytes = fh.read(1 << 16)
        text = head_bytes.decode("utf-8", errors="replace").lstrip("\ufeff")
        if len(head_bytes) == 1 << 16:  # more follows: whole lines only
            text = text[: text.rfind("\n") + 1]
        head, _ = _head_lines(text, rows + 2)
        if not head:
            return None
        delim = _detect_delimiter(path, head)
        cells = ([next(csv.reader([line], delimiter=delim)) if line else [] for line in head]
                 if delim else [line.split() for line in head])
        cells = [[c.strip() for c in row] for row in cells]
        if _is_header(cells[0], cells[1:]):
            names, body = cells[0], cells[1:]
        else:
            names, body = [f"column {j + 1}" for j in range(len(cells[0]))], cells
        return names, body[:rows]
    except Exception:  # a preview only: whatever is wrong, the load will say it
        return None


# ------------------------------------------------------------------------------------
# Shared helpers
# ------------------------------------------------------------------------------------
def _decode_text(path: Path, raw: bytes, expected: str) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DataError(f"this is UTF-16 text, not {expected} in UTF-8",
                        "save the file again with UTF-8 encoding (e.g. 'CSV UTF-8' in a "
                        "spreadsheet program)", path=path)
    what = sniff_kind(raw[:16])
    if what is not None or b"\x00" in raw[:65536]:
        found = what or "binary data (it contains NUL bytes)"
        raise DataError(f"this is {found}, not {expected}",
                        "choose the right file, or rename it to its real extension", path=path)
    body = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = body[: exc.start]
        line = len(before.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"))
        raise DataError(
            f"byte {body[exc.start]:#04x} is not valid UTF-8 text",
            f"this does not look like {expected}; if it is, save it with UTF-8 encoding",
            path=path, line=line,
        ) from None


def _pick_target(names: list[str], target: str | int | None, path: Path,
                 header: bool) -> int:
    p = len(names)
    if target is None or (isinstance(target, str) and not target.strip()):
        return p - 1
    if isinstance(target, str):
        text = target.strip()
        hits = [i for i, n in enumerate(names) if n == text]
        if len(hits) > 1:
            cols = " and ".join(str(i + 1) for i in hits)
            raise DataError(f"the target column {text!r} appears more than once (columns {cols})",
                            "rename the duplicate columns so the target is unambiguous",
                            path=path)
        if hits:
            return hits[0]
        try:
            target = int(text)
        except ValueError:
            shown = ", ".join(names)  # every column: the one meant may be the last
            extra = "" if header else " (the file has no header row)"
            raise DataError(f"there is no column named {text!r}{extra}",
                            f"choose one of: {shown}, or give a 0-based column index",
                            path=path) from None
    idx = int(target)
    if not -p <= idx < p:
        raise DataError(f"target column index {idx} is out of range: the data have {p} columns",
                        f"use an index from 0 to {p - 1} (or -1 for the last)", path=path)
    return idx % p


def _split_target(path: Path, M: np.ndarray, names: list[str], target: str | int | None,
                  header: bool) -> Table:
    if M.shape[1] < 2:
        raise DataError(
            "the data have only one column",
            "a data set needs at least one feature column and one target column", path=path)
    j = _pick_target(names, target, path, header)
    keep = [i for i in range(M.shape[1]) if i != j]
    # the features left of or right of the target: a view, not a copy (a memory-mapped
    # array stays on its pages)
    X = M[:, 1:] if j == 0 else M[:, :-1] if j == M.shape[1] - 1 else M[:, keep]
    return Table(X, np.array(M[:, j]), [names[i] for i in keep], names[j])


def _apply_nan_policy(table: Table, policy: str, path: Path) -> Table:
    bad = ~np.isfinite(table.y)
    step = 1 << 16  # in row blocks: no n × p temporary
    for start in range(0, len(bad), step):
        bad[start:start + step] |= ~np.isfinite(table.X[start:start + step]).all(axis=1)
    if not bad.any():
        return table
    if policy == "drop":
        kept = int((~bad).sum())
        if kept == 0:
            raise DataError("every row has a missing or non-finite value", "clean the file",
                            path=path)
        table.notes.append(f"dropped {int(bad.sum())} of {bad.size} rows with missing or "
                           "non-finite values")
        table.X, table.y = table.X[~bad], table.y[~bad]
        if table.lines is not None:
            table.lines = table.lines[~bad]
        return table
    row = int(np.flatnonzero(bad)[0])
    line_no = int(table.lines[row]) if table.lines is not None else None
    where = f"row {row + 1}: " if line_no is None else ""
    k, n = int(bad.sum()), bad.size
    raise DataError(
        f"{where}missing or non-finite values in {k} of {n} rows "
        f"({'the first here' if k > 1 else 'here'}); rows per column: "
        f"{_missing_by_column(table)}",
        "clean the file, or choose to drop rows with missing values "
        f"({data_option('drop_nan', 'true')})",
        path=path, line=line_no,
    )


#: At most this many columns are named in the missing-value message.
MAX_NAMED_COLUMNS = 20


def _missing_by_column(table: Table) -> str:
    """``'a' 2, 'c' 1, target 't' 4``: each column with missing or non-finite values and
    its own count of them, in file order (at most :data:`MAX_NAMED_COLUMNS`)."""
    counts = np.zeros(table.X.shape[1], dtype=np.int64)
    step = 1 << 16  # in row blocks: no n × p temporary
    for start in range(0, table.X.shape[0], step):
        counts += (~np.isfinite(table.X[start:start + step])).sum(axis=0)
    parts = [f"{table.feature_names[j]!r} {int(counts[j])}" for j in np.flatnonzero(counts)]
    y_bad = int((~np.isfinite(table.y)).sum())
    if y_bad:
        parts.append(f"target {table.target_name!r} {y_bad}")
    more = len(parts) - MAX_NAMED_COLUMNS
    return ", ".join(parts[:MAX_NAMED_COLUMNS]) + (f", … ({more} more columns)"
                                                   if more > 0 else "")


# ------------------------------------------------------------------------------------
# CSV / TSV / whitespace text
# ------------------------------------------------------------------------------------
def _is_number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return cell.strip().lower() in _MISSING


def _detect_delimiter(path: Path, lines: list[str]) -> str | None:
    """The field delimiter: ``,``, tab or ``;`` when it splits the first line and at least
    80 % of the first 20 lines into the same number of fields, unless whitespace splits
    them just as regularly and the delimiter would leave spaces inside numbers; else the
    first of them found in the first line; else ``,`` for .csv files and whitespace
    (None) for the others."""
    suffix = path.suffix.lower()
    if suffix in (".tsv", ".tab"):
        return "\t"
    sample = lines[:20]
    ws_counts = {len(line.split()) for line in sample}
    ws_regular = len(ws_counts) == 1 and ws_counts != {1}
    for delim in (",", "\t", ";"):
        first = sample[0].count(delim)
        if first == 0 or sum(line.count(delim) == first for line in sample) < 0.8 * len(sample):
            continue
        inner_space = any(" " in cell.strip() for line in sample for cell in line.split(delim))
        if inner_space and ws_regular and delim != ",":
            return None
        return delim
    for delim in (",", "\t", ";"):  # irregular (ragged) rows: the first line decides
        if delim in sample[0] and not ws_regular:
            return delim
    return "," if suffix == ".csv" else None


def _text_rows(text: str, delim: str | None) -> list[tuple[int, list[str]]]:
    """(1-based line number, fields) of the data rows, skipping blank and comment lines.

    A quoted field may span lines; its row is numbered by the line it starts on.
    """
    if delim is None:
        return [(i + 1, line.split()) for i, line in enumerate(text.splitlines())
                if line.strip() and not line.lstrip().startswith("#")]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim, skipinitialspace=True)
    rows, start = [], 1
    total = text.count("\n") + 1
    try:
        for row in reader:
            if row and any(c.strip() for c in row) and not row[0].lstrip().startswith("#"):
                rows.append((start, row))
                if len(rows) % 65536 == 0:  # the fraction of lines read, 0.1 … 0.6
                    _report(0.1 + 0.5 * start / total, f"read {len(rows):,} rows")
            start = reader.line_num + 1
    except csv.Error as exc:
        raise DataError(f"the text cannot be split into fields ({exc})",
                        "check the quoting on this line", line=start) from None
    return rows


def _read_csv(path: Path, raw: bytes, target: str | int | None,
              options: ReadOptions | None = None, *, fast: bool = True) -> Table:
    """A text table. Numeric tables take a fast path (numpy's C parser, no per-cell Python);
    anything it does not take — quoted fields, text, missing values, ragged rows — is
    read by the strict reader, which names the line, column and fix of every problem.
    Both give identical tables."""
    options = options or ReadOptions()
    if len(raw) < path.stat().st_size:  # the head of a large file
        if fast:
            table = _read_large_numeric(path, raw, target, options)
            if table is not None:
                return table
        raw = path.read_bytes()
    text = _decode_text(path, raw, "a text table")
    head, start = _head_lines(text)
    if not head:
        raise DataError("the file has no data lines (only blank or comment lines)",
                        "choose a file with data in it", path=path)
    delim = _detect_delimiter(path, head)
    if fast:
        _report(0.1, f"parsing {path.name} (numbers only: the C parser)")
        table = _read_numeric_fast(path, text, head[0], start, delim, target, options)
        if table is not None:
            return table
    _report(0.1, f"parsing {path.name} row by row (text, quotes or missing values)")
    try:
        numbered = _text_rows(text, delim)
    except DataError as exc:
        raise DataError(exc.problem, exc.fix, path=path, line=exc.line) from None
    return _table_from_rows(path, [row for _, row in numbered], [n for n, _ in numbered],
                            target, options, delim or "space")


#: Text tables larger than this are first tried by the C parser from their head alone,
#: without reading the file into memory as text (numeric tables with a delimiter).
BIG_TEXT = 16 * 2**20
#: The bytes read for that head.
HEAD_BYTES = 1 << 20


def _read_large_numeric(path: Path, head_bytes: bytes, target: str | int | None,
                        options: ReadOptions) -> Table | None:
    """A large numeric table read by pandas from the file, with only its first bytes in
    Python: the header and delimiter from the head, the row numbers from a count of the
    file's line breaks (consecutive when every line below the header is a row). None when
    anything needs a closer look — no pandas, UTF-16, whitespace-delimited columns, text,
    comment or blank lines — and the whole text is then read as for any table."""
    if _pandas() is None or head_bytes.startswith((b"\xff\xfe", b"\xfe\xff")) \
            or b"\x00" in head_bytes:
        return None
    text = head_bytes.decode("utf-8", errors="replace").lstrip("\ufeff")
    text = text[: text.rfind("\n") + 1]  # whole lines only
    head, first_no = _head_lines(text)
    delim = _detect_delimiter(path, head) if head else None
    if delim is None:
        return None
    first = [c.strip() for c in next(csv.reader([head[0]], delimiter=delim))]
    header = not all(_is_number(c) for c in first)
    M = _parse_numeric(path, delim, first_no if header else first_no - 1, comments=False)
    if M is None or M.shape[0] == 0 or M.shape[1] != len(first) or not np.isfinite(M).all():
        return None
    data_start = first_no + (1 if header else 0)
    if _count_lines(path) - (data_start - 1) != M.shape[0]:
        return None  # blank or comment lines were skipped: the row numbers need the text
    names = ([c or f"column {i + 1}" for i, c in enumerate(first)] if header else
             [f"x{i + 1}" for i in range(len(first) - 1)] + ["y"])
    return _finish_matrix(path, names, M, first[0], header, target, options,
                          np.arange(data_start, data_start + M.shape[0]))


def _count_lines(path: Path) -> int:
    """Lines in the file: line breaks, plus one for a last line without a break."""
    count, last = 0, b"\n"
    buf = bytearray(1 << 24)
    with open(path, "rb") as fh:
        while k := fh.readinto(buf):
            count += buf.count(b"\n", 0, k)
            last = buf[k - 1: k]
    return count + (last != b"\n")


def _head_lines(text: str, count: int = 20) -> tuple[list[str], int]:
    """The first ``count`` data lines (not blank, not comments) and the 1-based line
    number of the first, without splitting the whole text."""
    head: list[str] = []
    first = 0
    pos = 0
    line_no = 0
    while pos < len(text) and len(head) < count:
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end].rstrip("\r")
        line_no += 1
        if line.strip() and not line.lstrip().startswith("#"):
            head.append(line)
            first = first or line_no
        pos = end + 1
    return head, first


def _read_numeric_fast(path: Path, text: str, first_line: str, first_no: int,
                       delim: str | None, target: str | int | None,
                       options: ReadOptions) -> Table | None:
    """All-numeric tables (after an optional header row) parsed by numpy's C reader;
    None whenever the strict reader must decide (quotes, text, missing or non-finite
    values, ragged rows)."""
    first = next(csv.reader([first_line], delimiter=delim)) if delim else first_line.split()
    first = [c.strip() for c in first]
    header = not all(_is_number(c) for c in first)
    body_start = 0
    if header:  # the data start after the header line
        for _ in range(first_no):
            end = text.find("\n", body_start)
            body_start = len(text) if end < 0 else end + 1
    if text.find('"', body_start) >= 0 or text.find("'", body_start) >= 0 \
            or _NON_SPACE.search(text, body_start) is None:
        return None
    M = _parse_numeric(path, delim, first_no if header else 0,
                       comments=text.find("#", body_start) >= 0)
    if M is None:
        return None
    if M.shape[0] == 0 or M.shape[1] != len(first) or not np.isfinite(M).all():
        return None
    names = ([c or f"column {i + 1}" for i, c in enumerate(first)] if header else
             [f"x{i + 1}" for i in range(len(first) - 1)] + ["y"])
    # file line numbers of the rows: consecutive unless blank or comment lines intervene
    # (then there are more lines below the header than rows)
    data_start = first_no + (1 if header else 0)
    below = text.count("\n", body_start) + (not text.endswith("\n"))
    if below != M.shape[0]:
        lines = np.array([i for i, line in enumerate(text.splitlines(), start=1)
                          if line.strip() and not line.lstrip().startswith("#")])
        lines = lines[1:] if header else lines
    else:
        lines = np.arange(data_start, data_start + M.shape[0])
    return _finish_matrix(path, names, M, first[0], header, target, options, lines)


def _pandas() -> Any:
    """The pandas module, or None where it is not installed (the standalone app)."""
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _parse_numeric(path: Path, delim: str | None, skip: int, comments: bool = True
                   ) -> np.ndarray | None:
    """The numbers of a numeric text file below its first ``skip`` lines, parsed in C from
    the file itself (a StringIO of a large text costs 4 bytes a character and seconds):
    by pandas' reader when pandas is installed (4× faster than numpy's), else by
    ``np.loadtxt``. None when the parser refuses the text or finds a column that is not
    numbers; the strict reader then says why. ``comments``: whether ``#`` lines occur
    below the header (pandas is slower when it has to look for them). With pandas the
    matrix is usually column-major (a view of pandas' own block, no copy)."""
    pd = _pandas()
    if pd is None:
        try:
            return np.loadtxt(path, delimiter=delim, comments="#", ndmin=2, dtype=np.float64,
                              skiprows=skip, encoding="utf-8-sig")
        except (ValueError, IndexError):
            return None
    try:  # na_filter off: "NA" or an empty cell stays text, so that column is refused
        frame = pd.read_csv(path, sep=delim if delim else r"\s+", header=None, skiprows=skip,
                            comment="#" if comments else None, na_filter=False, engine="c",
                            encoding="utf-8-sig", skip_blank_lines=True)
    except (ValueError, IndexError, pd.errors.ParserError, UnicodeDecodeError):
        return None
    if not all(dtype.kind in "fiu" for dtype in frame.dtypes):
        return None
    return frame.to_numpy(dtype=np.float64, copy=False)


_NON_SPACE = re.compile(r"\S")


def _finish_matrix(path: Path, names: list[str], M: np.ndarray, first_name: str,
                   header: bool, target: str | int | None, options: ReadOptions,
                   lines: np.ndarray) -> Table:
    """:func:`_finish_table` for an all-numeric matrix, without splitting it into columns
    (one copy of the features, whatever the size)."""
    cols = np.arange(M.shape[1])
    note = _index_note(names, M[:, 0], first_name, header, target, options)
    notes = [] if note is None else [note]
    if note is not None:
        cols = cols[1:]
    kept = [names[c] for c in cols]
    if len(kept) < 2:
        raise DataError(
            "the data have only one column",
            "a data set needs at least one feature column and one target column", path=path)
    j = cols[_pick_target(kept, target, path, header)]
    feats = cols[cols != j]
    contiguous = feats.size and feats[-1] - feats[0] + 1 == feats.size
    X = M[:, feats[0]:feats[-1] + 1] if contiguous else M[:, feats]  # a view: no copy
    return Table(X, M[:, j].copy(), [names[c] for c in feats], names[j], notes, lines=lines,
                 columns=kept)


def _is_header(first: list[str], below: list[list[str]]) -> bool:
    """Whether the first row names the columns: every cell of it is text, or one of its
    text cells stands above a column of numbers. A file without a header whose first
    row holds a class name (``5.1,3.5,setosa``) has text below that cell too."""
    text = [not _is_number(c) for c in first]
    if not any(text):
        return False
    if all(text) or not below:
        return True
    for j, is_text in enumerate(text):
        cells = [row[j].strip() for row in below if j < len(row)]
        if is_text and cells and sum(_is_number(c) for c in cells) > len(cells) / 2:
            return True
    return False


def _table_from_rows(path: Path, rows: list[list[str]], line_nos: list[int],
                     target: str | int | None, options: ReadOptions, delim: str) -> Table:
    """A table from rows of text cells (a header row when the first row names the
    columns, :func:`_is_header`): number columns as they are, text columns as categories
    (see :class:`ReadOptions`), a row-index first column dropped."""
    first = [c.strip() for c in rows[0]]
    header = _is_header(first, rows[1:21])
    if header:
        names = [c or f"column {i + 1}" for i, c in enumerate(first)]
        body, body_lines = rows[1:], line_nos[1:]
        if not body:
            raise DataError("the file has a header row but no data rows",
                            "add data rows below the header", path=path)
    else:
        names = [f"x{i + 1}" for i in range(len(first) - 1)] + ["y"]
        body, body_lines = rows, line_nos
    width = len(names)
    for row, line in zip(body, body_lines, strict=True):
        if len(row) != width:
            raise DataError(
                f"this row has {len(row)} field{'s' if len(row) != 1 else ''} but the "
                f"{'header' if header else 'first row'} has {width}",
                "every row needs the same number of fields; check for a missing or extra "
                f"delimiter {delim!r}", path=path, line=line)
    try:
        M = np.array(body, dtype=np.float64)
        columns: list[np.ndarray] = list(M.T)
    except ValueError:
        columns = _typed_columns(path, body, body_lines, names)
    return _finish_table(path, names, columns, first[0], header, target, options,
                         np.asarray(body_lines))


def _finish_table(path: Path, names: list[str], columns: list[np.ndarray], first_name: str,
                  header: bool, target: str | int | None, options: ReadOptions,
                  lines: np.ndarray) -> Table:
    """Drop a row-index first column, split off the target and encode text (both
    readers end here)."""
    note = _index_note(names, columns[0], first_name, header, target, options)
    if note is not None:
        names, columns = names[1:], columns[1:]
    table = _encode_columns(path, names, columns, target, options, header)
    table.notes[:0] = [] if note is None else [note]
    table.lines = lines
    table.columns = list(names)
    return table


def _index_note(names: list[str], first: np.ndarray, first_name: str, header: bool,
                target: str | int | None, options: ReadOptions) -> str | None:
    """The note when the first column is a row index to drop, else None (both readers).
    Never the column the user named as the target; a target given by number counts the
    columns after a dropped index, as the note says."""
    named = isinstance(target, str) and target.strip() == first_name.strip() != ""
    if not header or options.keep_index or len(names) <= 2 or named \
            or not _is_index_column(first_name.lower(), first):
        return None
    return (f"dropped the first column {first_name or '(no name)'!r}: a row index (load "
            "with keep_index=true to use it as a feature; a target given by number counts "
            "the columns after it)")


def _is_index_column(name: str, column: np.ndarray) -> bool:
    """A row index: named like one (R's empty header, ``rownames``, pandas' ``Unnamed:
    0``, ``index``), or named like an identifier and holding 0 … n−1 or 1 … n."""
    if name in INDEX_NAMES:
        return True
    if name in ID_NAMES and column.dtype.kind == "f":
        n = len(column)
        values = np.sort(column)
        return bool(np.array_equal(values, np.arange(n)) or
                    np.array_equal(values, np.arange(1, n + 1)))
    return False


def _typed_columns(path: Path, body: list[list[str]], lines: list[int],
                   names: list[str]) -> list[np.ndarray]:
    """Each column as float64 (numbers; missing values NaN) or, when most of its filled
    cells are not numbers, as an object array of stripped strings (None: missing). A
    column of numbers with a few text cells is an error at the first of them (a typo, not
    categories)."""
    columns: list[np.ndarray] = []
    for c, name in enumerate(names):
        _report(0.6 + 0.3 * c / len(names), f"column {c + 1} of {len(names)}: {name}")
        cells = [row[c] for row in body]
        try:
            columns.append(np.array(cells, dtype=np.float64))
            continue
        except ValueError:
            pass
        values = np.empty(len(cells))
        text_at: list[int] = []
        for r, cell in enumerate(cells):
            try:
                values[r] = float(cell)
            except ValueError:
                if cell.strip().lower() in _MISSING:
                    values[r] = np.nan
                else:
                    values[r] = np.nan
                    text_at.append(r)
        filled = int(np.isfinite(values).sum()) + len(text_at)
        if not text_at:  # numbers and missing values
            columns.append(values)
            continue
        if 2 * len(text_at) > filled:  # mostly text: categories …
            odd = [r for r in text_at if _looks_numeric(cells[r])]
            if 2 * len(odd) > len(text_at):  # … unless they are numbers written oddly
                r = odd[0]
                raise DataError(
                    f"{cells[r].strip()!r} in column {name!r} looks like a number written "
                    "with a decimal comma, a thousands separator or a percent sign",
                    "save the table with '.' as the decimal point and no separators or "
                    "% signs (in a spreadsheet: plain number format)",
                    path=path, line=lines[r], column=c + 1)
            col = np.empty(len(cells), dtype=object)
            for r, cell in enumerate(cells):
                v = cell.strip()
                col[r] = None if v.lower() in _MISSING else v
            columns.append(col)
            continue
        r = text_at[0]
        raise DataError(
            f"{cells[r].strip()!r} in column {name!r} is not a number",
            "Kernel Lab needs numeric columns; remove or encode text columns, or fix this "
            "cell if it is a typo (a column of mostly text is read as categories)",
            path=path, line=lines[r], column=c + 1)
    return columns


_ODD_NUMBERS = (
    re.compile(r"^[+-]?\d*,\d+([eE][+-]?\d+)?$"),                # 0,5  (decimal comma)
    re.compile(r"^[+-]?\d{1,3}([,.\u00a0' ]\d{3})+([.,]\d+)?$"),  # 1,200  1.200.000,5
    re.compile(r"^[+-]?(\d+([.,]\d*)?|[.,]\d+)\s*%$"),            # 12%  12,5 %
)


def _looks_numeric(cell: str) -> bool:
    """A number with a decimal comma (``0,5``), thousands separators (``1,200``,
    ``1.200.000``) or a percent sign (``12%``) — not codes, dates or versions."""
    v = cell.strip()
    return any(p.match(v) for p in _ODD_NUMBERS)


def _levels(col: np.ndarray) -> list[str]:
    return sorted({v for v in col if v is not None})


def _encode_columns(path: Path, names: list[str], columns: list[np.ndarray],
                    target: str | int | None, options: ReadOptions, header: bool) -> Table:
    """Split off the target and turn text columns into numbers: a text target into
    classes (two: ±1; more: codes 0 … K−1 with their names), text features into one 0/1
    column per value (or dropped), each said in the table's notes."""
    if len(names) < 2:
        raise DataError(
            "the data have only one column",
            "a data set needs at least one feature column and one target column", path=path)
    j = _pick_target(names, target, path, header)
    notes: list[str] = []
    y, classes = columns[j], None
    if y.dtype == object:
        y, classes, note = _encode_target(path, names[j], y)
        notes.append(note)
    feats, feat_names = [], []
    for i, (name, col) in enumerate(zip(names, columns, strict=True)):
        if i == j:
            continue
        if col.dtype != object:
            feats.append(col)
            feat_names.append(name)
            continue
        levels = _levels(col)
        if options.text_features == "drop":
            notes.append(f"dropped text column {name!r} (text_features=drop)")
        elif len(levels) > MAX_LEVELS or (len(levels) == len(col) and len(col) > 2):
            why = "one per row" if len(levels) == len(col) else f"more than {MAX_LEVELS}"
            notes.append(f"dropped text column {name!r}: {len(levels)} distinct values "
                         f"({why}), too many to encode")
        else:
            missing = np.array([v is None for v in col])
            for level in levels:
                feats.append(np.array([v == level for v in col], dtype=np.float64))
                feat_names.append(f"{name}={level}")
            extra = ""
            if missing.any():  # an empty category cell is a category of its own
                feats.append(missing.astype(np.float64))
                feat_names.append(f"{name}=(missing)")
                extra = f" and one for its {int(missing.sum())} empty cells"
            notes.append(f"one-hot encoded text column {name!r} into {len(levels)} columns "
                         f"({_shown(levels)}){extra}")
    if not feats:
        raise DataError("no feature column is left: every column besides the target is "
                        "text that was dropped",
                        f"load with {data_option('text_features', 'onehot')}, or add numeric "
                        "columns"
                        if options.text_features == "drop" else
                        f"add numeric columns (text with one value per row or more than "
                        f"{MAX_LEVELS} values is not encoded)", path=path)
    X = np.column_stack(feats)
    return Table(X, np.asarray(y, dtype=np.float64), feat_names, names[j], notes,
                 classes=classes)


def _encode_target(path: Path, name: str, col: np.ndarray
                   ) -> tuple[np.ndarray, list[str] | None, str]:
    levels = _levels(col)
    if len(levels) < 2:
        raise DataError(f"the target column {name!r} holds text with "
                        f"{'one value' if levels else 'no values'}"
                        f"{' (' + repr(levels[0]) + ')' if levels else ''}: nothing to learn",
                        f"choose another target column ({data_option('target', 'NAME')})",
                        path=path)
    code = {level: k for k, level in enumerate(levels)}
    codes = np.array([np.nan if v is None else code[v] for v in col], dtype=np.float64)
    if len(levels) == 2:
        return (2.0 * codes - 1.0, None,
                f"text target {name!r}: {levels[1]!r} is +1, {levels[0]!r} is −1")
    return (codes, levels,
            f"text target {name!r}: {len(levels)} classes coded 0 … {len(levels) - 1} "
            f"({_shown(levels)})")


def _shown(values: list[str], k: int = 6) -> str:
    return ", ".join(values[:k]) + (", …" if len(values) > k else "")


# ------------------------------------------------------------------------------------
# Excel .xlsx (Office Open XML: a zip of XML parts; read with the standard library)
# ------------------------------------------------------------------------------------
_XL = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"


def _read_xlsx(path: Path, raw: bytes, target: str | int | None,
               options: ReadOptions | None = None) -> Table:
    """The first worksheet (or ``options.sheet``) of an .xlsx workbook, read as a text
    table (the same header detection, checks and messages as CSV; rows are numbered by
    their spreadsheet row)."""
    import xml.etree.ElementTree as ET

    options = options or ReadOptions()
    if not raw.startswith(b"PK\x03\x04"):
        found = sniff_kind(raw[:16]) or ("text" if b"\x00" not in raw[:4096]
                                         else "unrecognised binary data")
        raise DataError(f"this is {found}, not an Excel .xlsx workbook",
                        "choose the right file, or rename it to its real extension", path=path)
    try:
        book = zipfile.ZipFile(io.BytesIO(raw))
        names = set(book.namelist())
    except zipfile.BadZipFile:
        raise DataError("the .xlsx workbook is damaged (not a readable zip archive)",
                        "save it again from the spreadsheet program", path=path) from None
    if "xl/workbook.xml" not in names:
        raise DataError("this zip archive is not an .xlsx workbook (no xl/workbook.xml); "
                        "old .xls files are not supported",
                        "save it as .xlsx or CSV from the spreadsheet program", path=path)
    wb = ET.fromstring(book.read("xl/workbook.xml"))
    sheets = [(el.get("name", ""), el.get(f"{_REL}id", ""))
              for el in wb.iter(f"{_XL}sheet")]
    if not sheets:
        raise DataError("the workbook has no worksheets", "add a sheet with data", path=path)
    pick = options.sheet.strip()
    if not pick:
        chosen = sheets[0]
    elif pick in [n for n, _ in sheets]:
        chosen = next(s for s in sheets if s[0] == pick)
    elif pick.isdigit() and 1 <= int(pick) <= len(sheets):
        chosen = sheets[int(pick) - 1]
    else:
        raise DataError(f"there is no worksheet {pick!r}",
                        f"choose one of: {', '.join(n for n, _ in sheets)} (or its number)",
                        path=path)
    rels = ET.fromstring(book.read("xl/_rels/workbook.xml.rels"))
    where = {el.get("Id"): el.get("Target", "") for el in rels}
    part = where.get(chosen[1], "")
    part = part.lstrip("/") if part.startswith("/") else "xl/" + part
    if part not in names:
        raise DataError(f"the worksheet {chosen[0]!r} is missing from the workbook",
                        "save it again from the spreadsheet program", path=path)
    shared: list[str] = []
    if "xl/sharedStrings.xml" in names:
        for si in ET.fromstring(book.read("xl/sharedStrings.xml")).iter(f"{_XL}si"):
            # the text runs (<t>, <r><t>), not the phonetic guides (<rPh><t>)
            runs = [t for t in si.findall(f"{_XL}t")] + \
                [t for r in si.findall(f"{_XL}r") for t in r.findall(f"{_XL}t")]
            shared.append("".join(t.text or "" for t in runs))
    rows: list[list[str]] = []
    line_nos: list[int] = []
    for row in ET.fromstring(book.read(part)).iter(f"{_XL}row"):
        cells: dict[int, str] = {}
        last = -1
        for c in row.iter(f"{_XL}c"):
            col = _column_index(c.get("r", "")) if c.get("r") else last + 1
            last = col
            kind = c.get("t", "n")
            v = c.find(f"{_XL}v")
            if kind == "s" and v is not None:
                text = shared[int(v.text or 0)]
            elif kind == "inlineStr":
                text = "".join(t.text or "" for t in c.iter(f"{_XL}t"))
            elif kind == "e":
                text = ""  # #DIV/0!, #N/A, …: missing
            else:
                text = "" if v is None else (v.text or "")
            if text.strip():  # a styled empty cell is no column
                cells[col] = text
        if cells:
            rows.append([cells.get(i, "") for i in range(max(cells) + 1)])
            line_nos.append(int(row.get("r", len(line_nos) + 1)))
    if not rows:
        raise DataError(f"the worksheet {chosen[0]!r} is empty",
                        f"choose the sheet with the data ({data_option('sheet', 'NAME')})",
                        path=path)
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]  # trailing empty cells are not stored
    used = [j for j in range(width) if any(r[j].strip() for r in rows)]
    rows = [[r[j] for j in used] for r in rows]  # columns empty from top to bottom: none
    table = _table_from_rows(path, rows, line_nos, target, options, "cell")
    if len(sheets) > 1:
        table.notes.append(f"read worksheet {chosen[0]!r} of {len(sheets)}")
    return table


def _column_index(ref: str) -> int:
    """0-based column of a cell reference such as ``"AB12"``."""
    k = 0
    for ch in ref:
        if not ch.isalpha():
            break
        k = 26 * k + (ord(ch.upper()) - 64)
    return k - 1


# ------------------------------------------------------------------------------------
# NumPy
# ------------------------------------------------------------------------------------
def _numeric(path: Path, A: Any, what: str) -> np.ndarray:
    A = np.asarray(A)
    if A.dtype.kind not in "biuf":
        raise DataError(f"{what} holds {A.dtype} values, not numbers",
                        "store the data as a numeric array", path=path)
    return A.astype(np.float64, copy=False)


def _matrix_table(path: Path, M: np.ndarray, target: str | int | None, what: str) -> Table:
    M = _numeric(path, M, what)
    if M.ndim != 2:
        raise DataError(f"{what} has shape {M.shape}; a 2-D array (rows = samples, last column = "
                        "target) is needed", "save a 2-D array, or X and y separately in an .npz",
                        path=path)
    names = [f"x{i + 1}" for i in range(M.shape[1] - 1)] + ["y"]
    return _split_target(path, M, names, target, header=False)


def _xy_table(path: Path, X: Any, y: Any, xname: str, yname: str) -> Table:
    X = _numeric(path, X, f"the array {xname!r}")
    y = _numeric(path, y, f"the array {yname!r}")
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise DataError(f"the array {xname!r} has shape {X.shape}; it must be 2-D "
                        "(samples × features)", "reshape it before saving", path=path)
    if y.ndim == 2 and 1 in y.shape:
        y = y.ravel()
    if y.ndim != 1:
        raise DataError(f"the array {yname!r} has shape {y.shape}; it must be 1-D "
                        "(one target value per sample)", "save a single target vector",
                        path=path)
    if y.shape[0] != X.shape[0]:
        raise DataError(f"{xname!r} has {X.shape[0]} rows but {yname!r} has {y.shape[0]} values",
                        "both must have one entry per sample", path=path)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise DataError(f"the array {xname!r} is empty (shape {X.shape})",
                        "save at least one sample and one feature", path=path)
    names = [f"x{i + 1}" for i in range(X.shape[1])]
    return Table(X, y, names, yname)


def _expect_magic(path: Path, raw: bytes, magic: bytes, expected: str) -> None:
    if raw.startswith(magic):
        return
    found = sniff_kind(raw[:16])
    if found is None:
        found = "text" if b"\x00" not in raw[:4096] else "unrecognised binary data"
    raise DataError(f"this is {found}, not {expected}",
                    "choose the right file, or rename it to its real extension", path=path)


def _read_head(path: Path, size: int = 4096) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(size)


def _read_npy(path: Path, raw: bytes, target: str | int | None) -> Table:
    """A 2-D array, memory-mapped: the features are a view of the file's pages (no copy of
    a float64 array; other dtypes are converted once)."""
    _expect_magic(path, raw, b"\x93NUMPY", "a NumPy .npy file")
    try:
        A = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object" in str(exc).lower():
            raise DataError("the array holds Python objects, which are not loaded for safety",
                            "save a numeric array", path=path) from None
        raise DataError(f"the .npy file is damaged ({exc})", "save it again", path=path) from None
    return _matrix_table(path, A, target, "the array")


def _pick_xy(path: Path, arrays: Mapping[str, Any], target: str | int | None,
             kind: str) -> Table:
    lower = {k.lower(): k for k in arrays}
    for xk, yk in (("x", "y"), ("data", "target"), ("features", "labels")):
        if xk in lower and yk in lower:
            if target is not None and str(target) != lower[yk]:
                if str(target) not in arrays:
                    raise DataError(
                        f"there is no array named {target!r} to use as the target "
                        f"(the file has: {', '.join(sorted(arrays))})",
                        f"name one of its arrays, or leave the target empty to use {lower[yk]!r}",
                        path=path)
                yk = str(target)
                return _xy_table(path, arrays[lower[xk]], arrays[yk], lower[xk], yk)
            return _xy_table(path, arrays[lower[xk]], arrays[lower[yk]], lower[xk], lower[yk])
    if len(arrays) == 1:
        (key, A), = arrays.items()
        return _matrix_table(path, A, target, f"the array {key!r}")
    names = ", ".join(sorted(arrays)) or "none"
    raise DataError(
        f"the {kind} file has no arrays named X and y (it has: {names})",
        "store the features as X and the target as y, or a single 2-D array", path=path)


def _read_npz(path: Path, raw: bytes, target: str | int | None) -> Table:
    _expect_magic(path, raw, b"PK\x03\x04", "a NumPy .npz archive")
    try:  # read from the file, and only the arrays used (not the whole archive in memory)
        with np.load(path, allow_pickle=False) as z:
            return _pick_xy(path, z, target, "NPZ")
    except DataError:
        raise
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise DataError("an array holds Python objects, which are not loaded for safety",
                            "save numeric arrays", path=path) from None
        raise DataError(f"the .npz archive is damaged ({exc})", "save it again",
                        path=path) from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DataError(f"the .npz archive is damaged ({exc})", "save it again",
                        path=path) from None


# ------------------------------------------------------------------------------------
# MATLAB
# ------------------------------------------------------------------------------------
def _read_mat(path: Path, raw: bytes, target: str | int | None) -> Table:
    if raw.startswith(b"\x89HDF") or b"MATLAB 7.3" in raw[:128]:
        raise DataError("this is a MATLAB v7.3 (HDF5) file, which is not supported",
                        "re-save it in MATLAB with save(..., '-v7')", path=path)
    if not raw.startswith(b"MATLAB 5.0") and not _looks_like_mat4(raw):
        _expect_magic(path, raw, b"MATLAB 5.0", "a MATLAB .mat file")
    from scipy.io import loadmat
    from scipy.io.matlab import MatReadError

    if raw.startswith(b"MATLAB 5.0"):
        _check_mat5(raw, path)  # scipy's C reader can crash on inconsistent structures
    try:
        data = loadmat(io.BytesIO(raw))
    except (MatReadError, ValueError, TypeError, OSError) as exc:
        raise DataError(f"the .mat file cannot be read ({exc})",
                        "re-save it with save(..., '-v7')", path=path) from None
    arrays = {k: v for k, v in data.items() if not k.startswith("__")}
    return _pick_xy(path, arrays, target, "MAT")


#: Bytes per item of the MAT-file data types (miINT8 … miUINT64, miUTF8 … miUTF32).
_MI_SIZE = {1: 1, 2: 1, 3: 2, 4: 2, 5: 4, 6: 4, 7: 4, 9: 8, 12: 8, 13: 8, 16: 1, 17: 2, 18: 4}
_MI_MATRIX, _MI_COMPRESSED = 14, 15


def _check_mat5(raw: bytes, path: Path) -> None:
    """Walk a level-5 MAT file's elements and refuse one whose sizes do not add up
    (before scipy's reader sees it: some such files crash it, taking the process down).

    Checks every element's extent, and in each array its flags, dimensions, name and
    data: sizes that match the dimensions, an imaginary part when flagged complex, the
    sub-arrays of cells and structs. Compressed elements are inflated and checked alike.
    """
    import zlib

    def bad(why: str) -> DataError:
        return DataError(f"the .mat file is damaged ({why})",
                         "re-save it with save(..., '-v7'), or export the data as CSV",
                         path=path)

    if len(raw) < 128:
        raise bad("shorter than its 128-byte header")
    order = {b"IM": "<", b"MI": ">"}.get(raw[126:128])
    if order is None:
        raise bad("no byte-order mark in the header")

    def tag(buf: bytes, pos: int, end: int) -> tuple[int, int, int, int]:
        """(type, nbytes, data start, next element) of the element at ``pos``."""
        if pos + 8 > end:
            raise bad(f"an element tag at byte {pos} runs past the end")
        typ, nbytes = np.frombuffer(buf, dtype=f"{order}u4", count=2, offset=pos)
        typ, nbytes = int(typ), int(nbytes)
        if typ >> 16:  # small data element: 2-byte size, data in the tag's second half
            nbytes, typ = typ >> 16, typ & 0xFFFF
            if nbytes > 4:
                raise bad(f"a small element at byte {pos} claims {nbytes} bytes")
            return typ, nbytes, pos + 4, pos + 8
        stop = pos + 8 + nbytes
        if stop > end:
            raise bad(f"an element at byte {pos} claims {nbytes} bytes; only "
                      f"{end - pos - 8} remain")
        padded = stop if typ == _MI_COMPRESSED else pos + 8 + (nbytes + 7) // 8 * 8
        return typ, nbytes, pos + 8, min(padded, end)

    def data(buf: bytes, pos: int, end: int, what: str) -> tuple[int, int, int]:
        typ, nbytes, start, nxt = tag(buf, pos, end)
        if typ not in _MI_SIZE or nbytes % _MI_SIZE[typ]:
            raise bad(f"the {what} at byte {pos} has type {typ} and {nbytes} bytes")
        return nbytes // _MI_SIZE[typ], start, nxt

    def matrix(buf: bytes, start: int, end: int, depth: int) -> None:
        if depth > 32:
            raise bad("arrays nested more than 32 deep")
        if start == end:
            return  # an empty array
        count, at, pos = data(buf, start, end, "array flags")
        if count * 4 != 8:
            raise bad(f"array flags at byte {start} are not 8 bytes")
        flags = int(np.frombuffer(buf, dtype=f"{order}u4", count=1, offset=at)[0])
        cls, complex_ = flags & 0xFF, bool(flags & 0x800)
        ndim, at, pos = data(buf, pos, end, "dimensions")
        dims = np.frombuffer(buf, dtype=f"{order}i4", count=ndim, offset=at) if ndim else []
        if ndim < 2 or any(d < 0 for d in dims):
            raise bad(f"an array at byte {start} has dimensions {list(map(int, dims))}")
        size = int(np.prod(np.asarray(dims, dtype=np.float64)))
        if size > len(raw) * 64 and cls not in (1, 2, 3):
            raise bad(f"an array at byte {start} claims {size} elements")
        _, _, pos = data(buf, pos, end, "array name")
        if cls in (4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15):  # char and numeric
            count, _, pos = data(buf, pos, end, "array data")
            if count != size:
                raise bad(f"an array at byte {start} holds {count} values for "
                          f"{size} = {'×'.join(str(int(d)) for d in dims)}")
            if complex_:
                count, _, pos = data(buf, pos, end, "imaginary part")
                if count != size:
                    raise bad(f"the imaginary part at byte {start} holds {count} values")
        elif cls == 5:  # sparse: row indices, column starts, values (and imaginary)
            for part in ("row indices", "column starts", "values",
                         *(("imaginary part",) if complex_ else ())):
                _, _, pos = data(buf, pos, end, f"sparse {part}")
        elif cls in (1, 2, 3):  # cell, struct, object: sub-arrays
            fields = 1
            if cls == 3:
                _, _, pos = data(buf, pos, end, "class name")
            if cls in (2, 3):
                count, at, pos = data(buf, pos, end, "field name length")
                length = int(np.frombuffer(buf, dtype=f"{order}i4", count=1, offset=at)[0]) \
                    if count else 0
                count, _, pos = data(buf, pos, end, "field names")
                fields = count // length if length > 0 else 0
            for _ in range(size * fields):
                typ, _, sub, pos = tag(buf, pos, end)
                if typ != _MI_MATRIX:
                    raise bad(f"a cell or field at byte {sub - 8} is not an array")
                matrix(buf, sub, pos if pos <= end else end, depth + 1)
        else:
            raise bad(f"an array at byte {start} has the unknown class {cls}")

    def elements(buf: bytes, pos: int, end: int, depth: int) -> None:
        while pos < end:
            if end - pos < 8 and not buf[pos:end].strip(b"\0"):
                return  # padding at the end
            typ, nbytes, start, nxt = tag(buf, pos, end)
            if typ == _MI_COMPRESSED:
                if depth:
                    raise bad("a compressed element inside a compressed element")
                try:
                    inner = zlib.decompressobj().decompress(buf[start:start + nbytes],
                                                            64 * len(raw) + 2**20)
                except zlib.error as exc:
                    raise bad(f"its compressed data do not inflate ({exc})") from None
                elements(inner, 0, len(inner), depth + 1)
            elif typ == _MI_MATRIX:
                matrix(buf, start, start + nbytes, 0)
            pos = nxt

    elements(raw, 128, len(raw), 0)


def _looks_like_mat4(raw: bytes) -> bool:
    # Level-4 MAT files start with a 20-byte header of small integers.
    if len(raw) < 20:
        return False
    head = np.frombuffer(raw[:20], dtype="<i4")
    return bool(head[0] in (0, 10, 1000, 1010) and 0 < head[1] < 2**24 and 0 < head[2] < 2**24)


# ------------------------------------------------------------------------------------
# svmlight / libsvm
# ------------------------------------------------------------------------------------
def _read_svmlight(path: Path, raw: bytes, target: str | int | None) -> Table:
    if target is not None:
        raise DataError("the target of an svmlight/libsvm file is the first value on each line; "
                        "a target column cannot be chosen", "leave the target option empty",
                        path=path)
    text = _decode_text(path, raw, "an svmlight/libsvm text file")
    labels: list[float] = []
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    line_nos: list[int] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0].strip()
        if not content:
            continue
        fields = content.split()
        try:
            labels.append(float(fields[0]))
        except ValueError:
            raise DataError(f"{fields[0]!r} is not a numeric label",
                            "each line must start with the target value, then index:value pairs",
                            path=path, line=line_no, column=1) from None
        r = len(labels) - 1
        line_nos.append(line_no)
        last = -1
        for k, item in enumerate(fields[1:], start=2):
            idx, colon, val = item.partition(":")
            if idx == "qid":
                continue
            try:
                if not colon:
                    raise ValueError
                j, v = int(idx), float(val)
            except ValueError:
                raise DataError(f"{item!r} is not an index:value pair",
                                "write features as index:value, e.g. 3:0.25", path=path,
                                line=line_no, column=k) from None
            if j < 0 or j <= last:
                raise DataError(f"feature index {j} is negative or not increasing",
                                "indices must be non-negative and in increasing order",
                                path=path, line=line_no, column=k)
            last = j
            rows.append(r)
            cols.append(j)
            vals.append(v)
    if not labels:
        raise DataError("the file has no data lines", "choose a file with data in it", path=path)
    col = np.asarray(cols, dtype=np.int64)
    zero_based = col.size > 0 and col.min() == 0
    if not zero_based:
        col -= 1
    p = int(col.max()) + 1 if col.size else 0
    if p == 0:
        raise DataError("no line has any feature", "add index:value pairs after each label",
                        path=path)
    X = np.zeros((len(labels), p))
    X[np.asarray(rows, dtype=np.int64), col] = vals
    names = [f"x{j + (0 if zero_based else 1)}" for j in range(p)]
    table = Table(X, np.asarray(labels), names, "y")
    table.lines = np.asarray(line_nos)
    return table


# ------------------------------------------------------------------------------------
# ARFF
# ------------------------------------------------------------------------------------
def _read_arff(path: Path, raw: bytes, target: str | int | None,
               options: ReadOptions | None = None) -> Table:
    text = _decode_text(path, raw, "an ARFF file")
    if "@relation" not in text.lower()[:100000]:
        raise DataError("this is not an ARFF file: there is no @relation line",
                        "an ARFF file starts with @relation, @attribute lines and @data",
                        path=path)
    from scipy.io import arff

    try:
        data, meta = arff.loadarff(io.StringIO(text))
    except (arff.ParseArffError, ValueError, NotImplementedError, IndexError) as exc:
        raise DataError(f"the ARFF file cannot be parsed ({exc})",
                        "check the @attribute declarations and the @data rows",
                        path=path) from None
    names = list(meta.names())
    if not names:
        raise DataError("the ARFF file declares no attributes", "add @attribute lines", path=path)
    if len(data) == 0:
        raise DataError("the ARFF file has no data rows", "add rows after @data", path=path)
    columns: list[np.ndarray] = []
    for name in names:
        kind, values = meta[name]
        col = data[name]
        if kind == "numeric":
            columns.append(np.asarray(col, dtype=np.float64))
        elif kind == "nominal":  # categories: one-hot features, or classes as the target
            decoded = [c.decode() if isinstance(c, bytes) else c for c in col]
            text = np.empty(len(decoded), dtype=object)
            text[:] = [c if c in values else None for c in decoded]
            columns.append(text)
        else:
            raise DataError(f"attribute {name!r} has type {kind}, which is not supported",
                            "use numeric or nominal attributes only", path=path)
    return _encode_columns(path, names, columns, target, options or ReadOptions(), True)
