"""Excel ``.xlsx`` workbooks, read by openpyxl (read-only mode): one worksheet as a text
table — the same header detection, checks and messages as CSV, rows numbered by their
spreadsheet row. Old ``.xls`` files are not read."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from kernel_lab.core.errors import DataError, data_option
from kernel_lab.data import raw as raw_bytes
from kernel_lab.data.raw import expect_magic
from kernel_lab.data.table import ReadOptions, Table, header_rows, table_from_rows


def read_xlsx(path: Path, raw: bytes, target: str | int | None,
              options: ReadOptions | None = None) -> Table:
    """The first worksheet (or ``options.sheet``: a name or 1-based number)."""
    options = options or ReadOptions()
    _check_book(path, raw)
    book = _open(path)
    try:
        return _read_sheet(path, book, target, options)
    finally:
        book.close()


def _check_book(path: Path, raw: bytes) -> None:
    """Refuse what is no .xlsx workbook, or one that would expand too far."""
    expect_magic(path, raw, b"PK\x03\x04", "an Excel .xlsx workbook")
    try:
        with zipfile.ZipFile(path) as book:
            parts = book.infolist()
    except (zipfile.BadZipFile, OSError):
        raise DataError("the .xlsx workbook is damaged (not a readable zip archive)",
                        "save it again from the spreadsheet program", path=path) from None
    if "xl/workbook.xml" not in {p.filename for p in parts}:
        raise DataError("this zip archive is not an .xlsx workbook (no xl/workbook.xml); "
                        "old .xls files are not supported",
                        "save it as .xlsx or CSV from the spreadsheet program", path=path)
    cap = 2 * raw_bytes.MAX_EXPANDED  # a decompression bomb: refused by its declared sizes
    if sum(p.file_size for p in parts) > cap:
        raise DataError(f"the workbook expands to more than {cap / 2**20:,.0f} MB",
                        "save the sheet as CSV, or split the workbook", path=path)


def _open(path: Path) -> Any:
    import warnings

    from openpyxl import load_workbook

    try:
        with warnings.catch_warnings():  # "unknown extension", "no default style": noise
            warnings.simplefilter("ignore")
            return load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # a damaged part inside openpyxl's parser: say so, by name
        detail = " ".join(str(exc).split())[:120]
        raise DataError(f"the .xlsx workbook is damaged ({type(exc).__name__}: {detail})",
                        "save it again from the spreadsheet program", path=path) from None


def _sheet_rows(path: Path, book: Any, options: ReadOptions
                ) -> tuple[list[list[str]], list[int], str, set[int], list[str]]:
    """The chosen worksheet's rows as text cells (columns empty from top to bottom left
    out) and their spreadsheet row numbers, the sheet's name, the columns holding dates,
    and the workbook's sheet names."""
    names = list(book.sheetnames)
    if not names:
        raise DataError("the workbook has no worksheets", "add a sheet with data", path=path)
    pick = options.sheet.strip()
    if not pick:
        chosen = names[0]
    elif pick in names:
        chosen = pick
    elif pick.isdigit() and 1 <= int(pick) <= len(names):
        chosen = names[int(pick) - 1]
    else:
        raise DataError(f"there is no worksheet {pick!r}",
                        f"choose one of: {', '.join(names)} (or its number)", path=path)
    sheet = book[chosen]
    rows: list[list[str]] = []
    line_nos: list[int] = []
    epoch = getattr(book, "epoch", None)
    dated: set[int] = set()  # columns (0-based) holding a date, time or duration
    try:
        for r, cells in enumerate(sheet.iter_rows(), start=1):
            row = [_text(c, epoch, dated, j) for j, c in enumerate(cells)]
            while row and not row[-1].strip():  # a styled empty cell is no column
                row.pop()
            if row:
                rows.append(row)
                line_nos.append(getattr(next((c for c in cells if hasattr(c, "row")),
                                             None), "row", r))
            if len(rows) % 65536 == 0 and rows:
                options.report(0.1, f"read {len(rows):,} spreadsheet rows of {chosen!r}")
    except DataError:
        raise
    except Exception as exc:
        detail = " ".join(str(exc).split())[:120]
        raise DataError(f"the worksheet {chosen!r} cannot be read ({type(exc).__name__}: "
                        f"{detail})", "save it again from the spreadsheet program",
                        path=path) from None
    if not rows:
        raise DataError(f"the worksheet {chosen!r} is empty",
                        f"choose the sheet with the data ({data_option('sheet', 'NAME')})",
                        path=path)
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    used = [j for j in range(width) if any(r[j].strip() for r in rows)]
    rows = [[r[j] for j in used] for r in rows]  # columns empty from top to bottom: none
    return rows, line_nos, chosen, dated, names


def read_xlsx_cells(path: Path, raw: bytes, sheet: str = ""
                    ) -> tuple[list[str], list[list[str]], list[int]]:
    """The column names, the data rows as text cells and their spreadsheet rows of a
    worksheet, read as :func:`read_xlsx` reads it but not typed (what a saved model
    reads; ``raw``: the file's first bytes at least)."""
    _check_book(path, raw)
    book = _open(path)
    try:
        rows, line_nos, _, _, _ = _sheet_rows(path, book, ReadOptions(sheet=str(sheet or "")))
    finally:
        book.close()
    names, _, body, lines = header_rows(path, rows, line_nos, "cell")
    return names, body, lines


def _read_sheet(path: Path, book: Any, target: str | int | None,
                options: ReadOptions) -> Table:
    rows, line_nos, chosen, dated, names = _sheet_rows(path, book, options)
    table = table_from_rows(path, rows, line_nos, target, options, "cell")
    epoch = getattr(book, "epoch", None)
    if dated:
        from openpyxl.utils import get_column_letter

        letters = [get_column_letter(j + 1) for j in sorted(dated)]
        start = "1904-01-01" if _is_1904(epoch) else "1899-12-30"
        table.notes.append(f"read the dates and times of column{'s' if len(letters) > 1 else ''}"
                           f" {', '.join(letters)} as Excel day numbers (days since {start}, "
                           "a time of day as a fraction of a day)")
    if len(names) > 1:
        table.notes.append(f"read worksheet {chosen!r} of {len(names)}")
    return table


def peek_xlsx(path: Path, rows: int) -> tuple[list[str], list[list[str]]]:
    """Column names and the first ``rows`` rows of the first worksheet as text (the cells
    as :func:`read_xlsx` reads them), for a preview and the Data panel's column list while
    the whole sheet loads or when it failed to."""
    from kernel_lab.data.table import is_header

    book = _open(path)
    try:
        sheet = book[book.sheetnames[0]]
        got: list[list[str]] = []
        for cells in sheet.iter_rows(max_row=rows + 1):
            row = [_text(c) for c in cells]
            while row and not row[-1].strip():
                row.pop()
            if row:
                got.append(row)
    finally:
        book.close()
    if not got:
        return [], []
    width = max(len(r) for r in got)
    got = [r + [""] * (width - len(r)) for r in got]
    if is_header(got[0], got[1:]):
        return [c or f"column {j + 1}" for j, c in enumerate(got[0])], got[1:][:rows]
    return [f"column {j + 1}" for j in range(width)], got[:rows]


def _is_1904(epoch: object) -> bool:
    from openpyxl.utils.datetime import CALENDAR_MAC_1904

    return epoch == CALENDAR_MAC_1904


def _text(cell: object, epoch: object = None, dated: set[int] | None = None,
          column: int = 0) -> str:
    """A cell as the text a CSV would hold: numbers as Python writes them (17 digits at
    most), errors (#DIV/0!, #N/A) and empty cells as missing. A date, time or duration is
    the number Excel stores (days since the workbook's epoch: 45292.0 is 2024-01-01 in the
    1900 system; its column is added to ``dated``), a boolean 1 or 0."""
    import datetime as dt

    value = getattr(cell, "value", None)
    if value is None or getattr(cell, "data_type", "") == "e":
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, dt.date | dt.time | dt.timedelta):
        from openpyxl.utils.datetime import WINDOWS_EPOCH, to_excel

        if dated is not None:
            dated.add(column)
        value = float(to_excel(value, epoch if isinstance(epoch, dt.datetime)
                               else WINDOWS_EPOCH))
    return repr(value) if isinstance(value, float) else str(value)
