"""How a table was typed when it was read: its :attr:`~kernel_lab.data.table.Table.encoding`,
a plain JSON-able dict, carried to the data set so that a fitted model can type new rows
of the same file exactly as the lab did
(:class:`~kernel_lab.core.models.preprocess.TableColumns`).

The dict (``"format"``: :data:`ENCODING_FORMAT`) holds:

- ``columns``: the file's own column names, in order (a dropped row-index column too);
- ``index``: the name of the row-index column dropped (None: none was);
- ``features``: the columns used as features, in the order of the prepared rows' columns,
  each ``{"column": name, "kind": "number"}`` or ``{"column": name, "kind": "onehot",
  "levels": [...], "missing": bool}`` (one 0/1 column per level, in that order, then one
  for its empty cells when ``missing``);
- ``dropped``: text columns not used, each ``{"column": name, "why": text}``;
- ``left_out``: the columns the column choice left out (``features=``/``drop_columns=``),
  and ``choice``: that choice as options;
- ``missing_cells``: the text cells read as missing values (:data:`MISSING`);
- ``target``: ``{"column": name, "kind": "number"}``, ``{"column": name, "kind":
  "two classes", "classes": [the −1 class, the +1 class], "positive": the +1 class}``
  or ``{"column": name, "kind": "classes", "classes": [names of codes 0 … K−1]}``.

The rules by which text cells are read live here too, so that the readers and whatever
reads new rows for a saved model share them: the cells that are missing values
(:data:`MISSING`), what counts as a number (:func:`is_number`), a header row
(:func:`is_header`, :func:`header_rows`), a text target's classes (:func:`encode_target`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError, data_option

#: The version of the encoding dict's layout.
ENCODING_FORMAT = 1
#: A spreadsheet's error values (lower-case), as exported to CSV: missing cells, not text
#: and not comments, wherever they stand.
SPREADSHEET_ERRORS = frozenset({"#n/a", "#na", "#value!", "#div/0!", "#num!", "#ref!",
                                "#name?", "#null!", "#spill!", "#calc!"})
#: Cells read as missing values (compared lower-case, stripped); an encoding records them
#: (``missing_cells``), so that new rows are read by the same rule.
MISSING = {"", "na", "nan", "n/a", "null", "none", "?", "-nan", "inf", "+inf", "-inf",
           "infinity", "-infinity", *SPREADSHEET_ERRORS}


def number_feature(name: str) -> dict[str, Any]:
    """A feature column read as numbers."""
    return {"column": str(name), "kind": "number"}


def onehot_feature(name: str, levels: Sequence[str], missing: bool) -> dict[str, Any]:
    """A text feature one-hot encoded with ``levels`` (and a ``(missing)`` column)."""
    return {"column": str(name), "kind": "onehot", "levels": [str(v) for v in levels],
            "missing": bool(missing)}


def target_encoding(name: str, classes: Sequence[str] | None = None) -> dict[str, Any]:
    """The target: numbers (``classes`` None), two text classes (``classes``: the −1 then
    the +1 class) or more (the names of codes 0 … K−1)."""
    if classes is None:
        return {"column": str(name), "kind": "number"}
    if len(classes) == 2:
        return {"column": str(name), "kind": "two classes",
                "classes": [str(c) for c in classes], "positive": str(classes[1])}
    return {"column": str(name), "kind": "classes", "classes": [str(c) for c in classes]}


def table_encoding(columns: Sequence[str], features: Sequence[dict[str, Any]],
                   target: dict[str, Any], *, index: str | None = None,
                   dropped: Sequence[dict[str, str]] = (), left_out: Sequence[str] = (),
                   choice: dict[str, str] | None = None) -> dict[str, Any]:
    """The encoding dict (see the module docstring)."""
    return {"format": ENCODING_FORMAT, "columns": [str(c) for c in columns],
            "index": None if index is None else str(index),
            "features": [dict(f) for f in features], "dropped": [dict(d) for d in dropped],
            "left_out": [str(c) for c in left_out],
            "choice": dict(choice or {"features": "", "drop_columns": ""}),
            "target": dict(target), "missing_cells": sorted(MISSING)}


def numeric_encoding(feature_names: Sequence[str], target_name: str,
                     columns: Sequence[str] | None = None,
                     classes: Sequence[str] | None = None,
                     choice: dict[str, str] | None = None) -> dict[str, Any]:
    """The encoding of a table read as numbers whole (arrays, svmlight, a numeric CSV):
    every feature a column of numbers; ``columns`` the file's (default: the features and
    the target), those neither feature nor target left out."""
    columns = list(columns) if columns is not None else [*feature_names, target_name]
    used = {*feature_names, target_name}
    return table_encoding(columns, [number_feature(n) for n in feature_names],
                          target_encoding(target_name, classes),
                          left_out=[c for c in columns if c not in used], choice=choice)


def with_index(encoding: dict[str, Any], index: str | None) -> dict[str, Any]:
    """``encoding`` with a dropped row-index first column ``index`` before its columns
    (None: unchanged)."""
    if index is None:
        return encoding
    return {**encoding, "columns": [str(index), *encoding["columns"]], "index": str(index)}


def table_encoding_of(table: Any) -> dict[str, Any]:
    """How a table's columns were typed: its ``encoding``, or, for a table built whole
    from numbers (a bundled example, arrays), every feature a number."""
    if getattr(table, "encoding", None) is not None:
        return table.encoding
    return numeric_encoding(table.feature_names, table.target_name, table.columns,
                            table.classes)


def text_levels(col: np.ndarray) -> list[str]:
    """The sorted text values of a column of strings (None: missing)."""
    return sorted({v for v in col if v is not None})


def shown(values: list[str], k: int = 6) -> str:
    """The first ``k`` values, comma-separated (``…`` for more)."""
    return ", ".join(values[:k]) + (", …" if len(values) > k else "")


def encode_target(path: Path, name: str, col: np.ndarray
                   ) -> tuple[np.ndarray, list[str] | None, str]:
    """A text target as numbers: two classes −1 and +1 (the second in sorted order is
    +1), more as codes 0 … K−1 with their names; and the note that says so."""
    levels = text_levels(col)
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
            f"({shown(levels)})")


def is_number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return cell.strip().lower() in MISSING


def is_header(first: list[str], below: list[list[str]]) -> bool:
    """Whether the first row names the columns: every cell of it is text, or one of its
    text cells stands above a column of numbers. A file without a header whose first
    row holds a class name (``5.1,3.5,setosa``) has text below that cell too."""
    text = [not is_number(c) for c in first]
    if not any(text):
        return False
    if all(text) or not below:
        return True
    for j, is_text in enumerate(text):
        cells = [row[j].strip() for row in below if j < len(row)]
        if is_text and cells and sum(is_number(c) for c in cells) > len(cells) / 2:
            return True
    return False


def header_rows(path: Path, rows: list[list[str]], line_nos: list[int], delim: str
                ) -> tuple[list[str], bool, list[list[str]], list[int]]:
    """The column names (from a header row, :func:`is_header`; else ``x1 …`` and ``y``),
    whether there was a header, and the data rows of the same width with their lines."""
    first = [c.strip() for c in rows[0]]
    header = is_header(first, rows[1:21])
    if header:
        names = [c or f"column {i + 1}" for i, c in enumerate(first)]
        body, body_lines = rows[1:], line_nos[1:]
        if not body:
            raise DataError("the file has a header row but no data rows",
                            "add data rows below the header", path=path)
    else:
        names = [f"x{i + 1}" for i in range(len(first) - 1)] + ["y"]
        body, body_lines = rows, line_nos
    for row, line in zip(body, body_lines, strict=True):
        if len(row) != len(names):
            raise DataError(
                f"this row has {len(row)} field{'s' if len(row) != 1 else ''} but the "
                f"{'header' if header else 'first row'} has {len(names)}",
                "every row needs the same number of fields; check for a missing or extra "
                f"delimiter {delim!r}", path=path, line=line)
    return names, header, body, body_lines
