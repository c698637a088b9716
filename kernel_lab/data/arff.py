"""Weka's ARFF files, read by SciPy: numeric attributes as numbers, nominal ones as text
(one-hot features, or classes as the target) through the table pipeline."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from kernel_lab.core.errors import DataError
from kernel_lab.data.raw import decode_text
from kernel_lab.data.table import ReadOptions, Table, encode_columns


def read_arff(path: Path, raw: bytes, target: str | int | None,
               options: ReadOptions | None = None) -> Table:
    names, columns, note = arff_columns(path, raw)
    table = encode_columns(path, names, columns, target, options or ReadOptions(), True)
    if note:
        table.notes.insert(0, note)
    return table


def arff_columns(path: Path, raw: bytes) -> tuple[list[str], list[np.ndarray], str | None]:
    """The attributes' names and columns of an ARFF file (numbers as float64, nominal
    values as text, None where missing), and a note when the text was not UTF-8."""
    text, note = decode_text(path, raw, "an ARFF file")
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
    return names, columns, note
