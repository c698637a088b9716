"""Text tables: CSV, TSV, ``.tab``/``.data``/``.txt`` with any of ``,``, tab, ``;`` or
whitespace between the fields, read by pandas' C parser.

Numeric tables take a fast path (pandas parses the numbers, no Python per cell; above
:data:`BIG_TEXT` from the file itself, with only its head in Python). Anything else —
text, quotes, missing values, ragged rows — is parsed by pandas into cells of text, which
the project's own pipeline (:func:`~kernel_lab.data.table.table_from_rows`) types,
checks and encodes, naming the line and column of every problem. Both paths give the
same table.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np

from kernel_lab.core.errors import DataError
from kernel_lab.data.raw import COMPRESSED, decode_text, text_head
from kernel_lab.data.table import (
    MAX_MAGNITUDE,
    SPREADSHEET_ERRORS,
    ReadOptions,
    Table,
    finish_matrix,
    header_rows,
    is_header,
    is_number,
    table_from_rows,
)

__all__ = ["BIG_TEXT", "HEAD_BYTES", "ReadOptions", "peek_text", "read_text_table"]

#: Text tables larger than this are first tried by the C parser from their head alone,
#: without reading the file into memory as text (numeric tables with a delimiter).
BIG_TEXT = 16 * 2**20
#: The bytes read for that head.
HEAD_BYTES = 1 << 20
#: Rows parsed per block (a progress report, and a chance to cancel, after each).
BLOCK_ROWS = 1 << 16
_NON_SPACE = re.compile(r"\S")
_WIDTH = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
_DELIMS = re.compile(r"[,;\t]")
#: A spreadsheet error value standing as a cell (pandas' comment="#" would cut it off).
_ERROR_CELL = re.compile("|".join(re.escape(e) for e in sorted(SPREADSHEET_ERRORS)),
                         re.IGNORECASE)


def _is_comment(line: str) -> bool:
    """Whether a line is a comment: it starts with ``#`` (after white space), and its first
    field is not a spreadsheet error value (``#N/A``, ``#DIV/0!`` …: a missing cell of a
    data row)."""
    text = line.lstrip()
    if not text.startswith("#"):
        return False
    first = _DELIMS.split(text, maxsplit=1)[0].strip()
    if not _DELIMS.search(text):  # white space between the fields
        first = text.split()[0]
    return first.lower() not in SPREADSHEET_ERRORS


def _comment_note(lines: list[int]) -> str | None:
    """The note for comment lines skipped (their 1-based numbers), or None for none."""
    if not lines:
        return None
    where = ", ".join(map(str, lines[:5])) + (", …" if len(lines) > 5 else "")
    if len(lines) == 1:
        return f"skipped a comment line (starting with '#'): line {where}"
    return f"skipped {len(lines)} comment lines (starting with '#'): lines {where}"


def read_text_table(path: Path, raw: bytes, target: str | int | None,
                    options: ReadOptions | None = None, *, complete: bool | None = None
                    ) -> Table:
    """A text table from ``raw``: the whole file, its first :data:`HEAD_BYTES` (when
    larger than :data:`BIG_TEXT`: the rest is read as needed), or, with ``complete``,
    bytes that are the whole table though not the file's (a decompressed table)."""
    return _read_csv(path, raw, target, options, complete=complete)


def _read_csv(path: Path, raw: bytes, target: str | int | None,
              options: ReadOptions | None = None, *, fast: bool = True,
              complete: bool | None = None) -> Table:
    """A text table. Numeric tables take a fast path (pandas' C parser to floats, no
    per-cell Python); anything it does not take — quoted fields, text, missing values,
    ragged rows — is parsed to text cells and typed by the table pipeline, which names
    the line, column and fix of every problem. Both give identical tables."""
    options = options or ReadOptions()
    in_memory = complete is True  # not the file's bytes: pandas reads these
    if not in_memory and len(raw) < path.stat().st_size:  # the head of a large file
        if fast:
            table = _read_large_numeric(path, raw, target, options)
            if table is not None:
                return table
        raw = path.read_bytes()
    source: Path | bytes = raw if in_memory else path
    text, note, head, start, delim = _split_text(path, raw)
    encoding = "cp1252" if note else "utf-8-sig"
    table = None
    if fast:
        options.report(0.1, f"parsing {path.name} (numbers only: the C parser)")
        table = _read_numeric_fast(source, path, text, head[0], start, delim, target,
                                   options, encoding)
    if table is None:
        options.report(0.1, f"parsing {path.name} to text cells (text, quotes or missing "
                            "values)")
        numbered, dropped, comments = _text_rows(path, text, delim, head, options)
        if not numbered:  # delimiters and white space only
            raise DataError("the file has no data lines (only blank or comment lines)",
                            "choose a file with data in it", path=path)
        table = table_from_rows(path, [row for _, row in numbered],
                                [n for n, _ in numbered], target, options, delim or "space")
        if dropped:
            table.notes.insert(0, dropped)
        if comments:
            table.notes.insert(0, comments)
    if note:
        table.notes.insert(0, note)
    return table


def _split_text(path: Path, raw: bytes
                ) -> tuple[str, str | None, list[str], int, str | None]:
    """The text of a table (and a note when it was not UTF-8), its first data lines, the
    line number of the first, and its delimiter (None: white space)."""
    text, note = decode_text(path, raw, "a text table")
    text = text.lstrip("\ufeff")
    if "\n" not in text and "\r" in text:  # classic Mac OS line ends
        text = text.replace("\r", "\n")
    head, start = _head_lines(text)
    if not head:
        raise DataError("the file has no data lines (only blank or comment lines)",
                        "choose a file with data in it", path=path)
    return text, note, head, start, _detect_delimiter(path, head)


def read_text_cells(path: Path, raw: bytes) -> tuple[list[str], list[list[str]], list[int]]:
    """The column names, the data rows as text cells and their file lines, split as
    :func:`read_text_table` splits a table (delimiter, quotes, comment and blank lines,
    the header row) but not typed: what a saved model reads, typing each column as its
    training file's column was typed (``raw``: the whole text)."""
    text, _, head, _, delim = _split_text(path, raw)
    numbered, _, _ = _text_rows(path, text, delim, head, ReadOptions())
    if not numbered:  # delimiters and white space only
        raise DataError("the file has no data lines (only blank or comment lines)",
                        "choose a file with data in it", path=path)
    names, _, body, lines = header_rows(path, [row for _, row in numbered],
                                        [n for n, _ in numbered], delim or "space")
    return names, body, lines


def _text_rows(path: Path, text: str, delim: str | None, head: list[str],
               options: ReadOptions
               ) -> tuple[list[tuple[int, list[str]]], str | None, str | None]:
    """(1-based line number, fields) of the data rows, parsed by pandas, without blank and
    comment lines; a note when empty columns at the end of the rows (a delimiter at the
    end of each line) were dropped; a note naming the comment lines skipped.

    A quoted field may span lines; its row is numbered by the line it starts on. Every
    row keeps its own number of fields (pandas pads short rows), so that the pipeline
    can name a ragged row.
    """
    import pandas as pd

    width = max(len(_split(line, delim)) for line in head)
    total = text.count("\n") + 1
    for _ in range(32):  # rows longer than any before: parse again, that much wider
        try:
            blocks, done = [], 0
            reader = pd.read_csv(
                io.StringIO(text), sep=delim if delim else r"\s+", header=None,
                names=range(width), index_col=False, dtype=object, na_filter=False,
                skip_blank_lines=False, skipinitialspace=delim is not None, quotechar='"',
                engine="c", chunksize=BLOCK_ROWS)
            for block in reader:
                blocks.append(block)
                done += len(block)  # lines parsed so far (the header among them)
                options.report(0.1 + 0.5 * min(done / total, 1.0), f"parsed {done:,} lines")
            break
        except pd.errors.ParserError as exc:
            found = _WIDTH.search(str(exc))
            if found is None or int(found.group(3)) <= width:
                raise DataError(f"the text cannot be split into fields "
                                f"({_reason(exc)})", "check the quoting on this line",
                                path=path, line=_quote_line(text, delim, width, exc)
                                ) from None
            width = int(found.group(3))
    else:
        raise DataError("the rows have too many different numbers of fields",
                        "every row needs the same number of fields", path=path)
    cells = pd.concat(blocks, ignore_index=True).to_numpy(dtype=object)
    n = len(cells)
    filled = cells != ""
    # a row per line, but a quoted field holding line breaks spans more than one
    spans = np.ones(n, dtype=np.int64)
    if '"' in text:
        spans += np.array([sum(c.count("\n") for c in row) for row in cells], dtype=np.int64)
    starts = np.concatenate([[1], 1 + np.cumsum(spans)[:-1]])
    # blank: no cell but white space (the first filled cell decides, unless it is blank)
    first = cells[np.arange(n), np.argmax(filled, axis=1)] if n else cells[:, 0]
    blank = ~filled.any(axis=1)
    spaced = np.flatnonzero(~blank & np.frompyfunc(str.isspace, 1, 1)(first).astype(bool))
    blank[spaced] = [not any(c.strip() for c in cells[i]) for i in spaced]
    comment = np.zeros(n, dtype=bool)
    if "#" in text:
        comment = np.frompyfunc(
            lambda c: c.lstrip().startswith("#") and c.strip().lower() not in
            SPREADSHEET_ERRORS, 1, 1)(cells[:, 0]).astype(bool)
    keep = np.flatnonzero(~blank & ~comment)
    extent = np.where(filled.any(axis=1), width - np.argmax(filled[:, ::-1], axis=1), 0)
    used = int(extent[keep].max()) if keep.size else width
    dropped = None
    if used < width and delim is not None:  # columns empty in every row: a trailing delimiter
        k = width - used
        dropped = (f"dropped {'an empty column' if k == 1 else f'{k} empty columns'} at the "
                   f"end of the rows (a {delim!r} at the end of the lines)")
    body = cells[keep, :used].tolist()
    short = np.flatnonzero(extent[keep] < used)  # empty trailing fields, or a short row
    if short.size:
        lines = re.split(r"\r\n|\r|\n", text)
        for k in short:
            i = keep[k]
            segment = "\n".join(lines[starts[i] - 1: starts[i] - 1 + spans[i]])
            body[k] = body[k][: min(len(_split(segment, delim)), used)]
    rows = list(zip(starts[keep].tolist(), body, strict=True))
    return rows, dropped, _comment_note(starts[comment & ~blank].tolist())


def _split(line: str, delim: str | None) -> list[str]:
    """The fields of one line (or of one row's lines) as written."""
    if delim is None:
        return line.split()
    if '"' not in line:
        return line.split(delim)
    return next(csv.reader([line], delimiter=delim, skipinitialspace=True), [])


def _reason(exc: Exception) -> str:
    return " ".join(str(exc).replace("Error tokenizing data. C error: ", "").split())[:160]


def _quote_line(text: str, delim: str | None, width: int, exc: Exception) -> int | None:
    """The line of the row pandas names in ``exc`` ("… starting at row R"), or None."""
    import pandas as pd

    found = re.search(r"at row (\d+)", str(exc))
    if found is None:
        return None
    row = int(found.group(1))
    if row == 0:
        return 1
    try:
        before = pd.read_csv(io.StringIO(text), sep=delim if delim else r"\s+", header=None,
                             names=range(width), index_col=False, dtype=str,
                             keep_default_na=False, skip_blank_lines=False, nrows=row,
                             engine="c").to_numpy(dtype=object)
    except Exception:  # a message without its line is still a message
        return None
    return 1 + row + sum(c.count("\n") for r in before for c in r)


def peek_text(path: Path, rows: int, suffixes: frozenset[str]
              ) -> tuple[list[str], list[list[str]]] | None:
    """Column names and the first ``rows`` rows of a text table as written, from its
    first 64 KB (of the table inside a compressed file; Windows-1252 text decoded as the
    load decodes it); None when nothing can be shown."""
    text = text_head(path, suffixes)  # suffixes: of a table a zip archive may hold
    head, _ = _head_lines(text, rows + 2)
    if not head:
        return None
    inner = Path(path.stem) if path.suffix.lower() in COMPRESSED else path  # a.tsv.gz: tabs
    delim = _detect_delimiter(inner, head)
    cells = [[c.strip() for c in _split(line, delim)] for line in head]
    if is_header(cells[0], cells[1:]):
        names, body = cells[0], cells[1:]
    else:
        names, body = [f"column {j + 1}" for j in range(len(cells[0]))], cells
    return names, body[:rows]


def _parse_numeric(source: Path | bytes, delim: str | None, skip: int, comments: bool = True,
                   encoding: str = "utf-8-sig", blank_rows: bool = False
                   ) -> np.ndarray | None:
    """The numbers of a numeric text table below its first ``skip`` lines, parsed by
    pandas' C reader from the file itself (a StringIO of a large text costs 4 bytes a
    character and seconds) or from the bytes of a decompressed table. None when the
    parser refuses the text or finds a column that is not numbers; the text pipeline then
    says why. ``comments``: whether ``#`` lines occur below the header (pandas is slower
    when it has to look for them). ``blank_rows``: a blank line is a row (of no numbers,
    so the table is refused) rather than skipped. The matrix is usually column-major (a
    view of pandas' own block, no copy)."""
    import pandas as pd

    try:  # na_filter off: "NA" or an empty cell stays text, so that column is refused
        frame = pd.read_csv(io.BytesIO(source) if isinstance(source, bytes) else source,
                            sep=delim if delim else r"\s+", header=None, skiprows=skip,
                            comment="#" if comments else None, na_filter=False, engine="c",
                            encoding=encoding, skip_blank_lines=not blank_rows)
    except (ValueError, IndexError, pd.errors.ParserError, UnicodeDecodeError):
        return None
    if not all(dtype.kind in "fiu" for dtype in frame.dtypes):
        return None
    return frame.to_numpy(dtype=np.float64, copy=False)


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


def _read_large_numeric(path: Path, head_bytes: bytes, target: str | int | None,
                        options: ReadOptions) -> Table | None:
    """A large numeric table read by pandas from the file, with only its first bytes in
    Python: the header and delimiter from the head; every line below the header is a row
    (pandas is told to keep blank lines as rows and to look for no comments, so a blank or
    comment line makes a row that is not numbers and the table is declined), so the row
    numbers are consecutive without a second pass over the file to count its lines. None
    when anything needs a closer look — UTF-16, text that is not UTF-8,
    whitespace-delimited columns, text, comment or blank lines — and the whole text is
    then read as for any table."""
    if head_bytes.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in head_bytes:
        return None
    text = head_bytes.decode("utf-8", errors="replace").lstrip("\ufeff")
    text = text[: text.rfind("\n") + 1]  # whole lines only
    head, first_no = _head_lines(text)
    delim = _detect_delimiter(path, head) if head else None
    if delim is None:
        return None
    first = [c.strip() for c in next(csv.reader([head[0]], delimiter=delim))]
    header = not all(is_number(c) for c in first)
    M = _parse_numeric(path, delim, first_no if header else first_no - 1, comments=False,
                       encoding="utf-8-sig", blank_rows=True)
    if M is None or M.shape[0] == 0 or M.shape[1] != len(first):
        return None
    low, high = _value_range(M)
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    data_start = first_no + (1 if header else 0)
    names = ([c or f"column {i + 1}" for i, c in enumerate(first)] if header else
             [f"x{i + 1}" for i in range(len(first) - 1)] + ["y"])
    table = finish_matrix(path, names, M, first[0], header, target, options,
                          np.arange(data_start, data_start + M.shape[0]))
    # the least and largest value say that no cell is beyond ±MAX_MAGNITUDE either: the
    # load's own passes for huge, missing and infinite values (1M × 21: 34 ms of CPU on
    # the 2-core test machine) have nothing to find
    table.in_range = bool(-MAX_MAGNITUDE <= low and high <= MAX_MAGNITUDE)
    note = _comment_note([i for i, line in enumerate(text.split("\n")[: first_no - 1],
                                                     start=1) if _is_comment(line)])
    if note:  # comment lines above the header
        table.notes.insert(0, note)
    return table


#: Rows of the matrix whose least and largest value are taken together (see
#: :func:`_value_range`).
RANGE_ROWS = 1 << 14


def _value_range(M: np.ndarray) -> tuple[float, float]:
    """The least and the largest value (NaN when any is NaN; an infinity is one of them):
    whether every value is finite, and within a bound, without an n × p temporary of
    booleans. Taken block by block of :data:`RANGE_ROWS` rows (2.7 MB of 21 columns), so
    that the maximum reads the block the minimum has just brought into the cache: 13
    instead of 16 ms for 1M × 21 on the 2-core test machine."""
    starts = range(0, M.shape[0], RANGE_ROWS)
    low, high = np.empty(len(starts)), np.empty(len(starts))
    for k, start in enumerate(starts):
        block = M[start:start + RANGE_ROWS]
        low[k], high[k] = np.minimum.reduce(block, axis=None), np.maximum.reduce(block,
                                                                                  axis=None)
    return float(low.min()), float(high.max())  # a NaN block's NaN carried through


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
        if line.strip() and not _is_comment(line):
            head.append(line)
            first = first or line_no
        pos = end + 1
    return head, first


def _read_numeric_fast(source: Path | bytes, path: Path, text: str, first_line: str,
                       first_no: int, delim: str | None, target: str | int | None,
                       options: ReadOptions, encoding: str) -> Table | None:
    """All-numeric tables (after an optional header row) parsed by pandas' C reader to
    floats; None whenever the text cells must be typed one by one (quotes, text, missing
    or non-finite values, ragged rows)."""
    first = next(csv.reader([first_line], delimiter=delim)) if delim else first_line.split()
    first = [c.strip() for c in first]
    header = not all(is_number(c) for c in first)
    body_start = 0
    if header:  # the data start after the header line
        for _ in range(first_no):
            end = text.find("\n", body_start)
            body_start = len(text) if end < 0 else end + 1
    if text.find('"', body_start) >= 0 or text.find("'", body_start) >= 0 \
            or _NON_SPACE.search(text, body_start) is None \
            or _ERROR_CELL.search(text, body_start) is not None:
        return None
    M = _parse_numeric(source, delim, first_no if header else 0,
                       comments=text.find("#", body_start) >= 0, encoding=encoding)
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
                          if line.strip() and not _is_comment(line)])
        lines = lines[1:] if header else lines
    else:
        lines = np.arange(data_start, data_start + M.shape[0])
    table = finish_matrix(path, names, M, first[0], header, target, options, lines)
    if "#" in text:
        note = _comment_note([i for i, line in enumerate(text.split("\n"), start=1)
                             if _is_comment(line)])
        if note:
            table.notes.insert(0, note)
    return table
