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
  "two classes", "classes": [the −1 class, the +1 class]}`` or ``{"column": name,
  "kind": "classes", "classes": [names of codes 0 … K−1]}``.
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
    kind = "two classes" if len(classes) == 2 else "classes"
    return {"column": str(name), "kind": kind, "classes": [str(c) for c in classes]}


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
