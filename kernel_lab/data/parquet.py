"""A single Apache Parquet file as an ordinary table: the same table a CSV of the same data
gives. Number and boolean columns are read by pyarrow as numbers (booleans 0/1, nulls
missing), any other column as pandas gives it, its values then typed as a CSV's cells
(:func:`~kernel_lab.data.table.typed_column`); every table ends in the CSV pipeline
(:func:`~kernel_lab.data.table.finish_table`: categories one-hot, a text target as
classes, a row-index first column dropped), missing values to the load's NaN policy, rows
named by number. Pages are verified against their checksums where the file has them
(:func:`open_parquet`), and columns of numbers against the range the footer records for
each row group (:func:`check_footer_range`). pyarrow is optional in a Python
installation (the ``dask`` extra; the standalone app bundles it): without it, a
:class:`~kernel_lab.core.errors.DataError` says what to install
(:func:`~kernel_lab.core.errors.missing_package`).

A folder of Parquet files is partitioned data: :mod:`kernel_lab.data.partitioned`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError, missing_package
from kernel_lab.core.progress import Cancelled
from kernel_lab.data.raw import expect_magic
from kernel_lab.data.table import (
    ID_NAMES,
    ReadOptions,
    Table,
    finish_matrix,
    finish_table,
    typed_column,
    used_columns,
)

#: The first (and last) bytes of every Parquet file.
MAGIC = b"PAR1"


def need_pyarrow(path: str | os.PathLike[str] | None = None) -> None:
    """Refuse to go on without pyarrow, saying what to install (in the standalone app,
    which bundles pyarrow, only a damaged copy lacks it)."""
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError as exc:
        raise DataError(missing_package(
            "reading Parquet", "pyarrow",
            "this copy is incomplete (its --self-test reads Parquet); unpack the app again, "
            "or save the table as CSV", bundled=exc), path=path) from None


def open_parquet(path: str | os.PathLike[str]) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` that verifies each page's checksum as it reads,
    where the file has them: files written with ``write_page_checksum=True`` (pyarrow;
    Spark and others have their own switch) store a CRC of every page, and a page whose
    bytes changed since (a damaged disk, copy or download) is then refused by
    :func:`read_checked` instead of read as wrong numbers. A file without checksums reads
    as before: nothing can tell its damaged numbers from real ones, but the magnitude
    check (:func:`~kernel_lab.data.table.refuse_huge_values`) still catches the wildest."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path, page_checksum_verification=True)


def is_checksum_failure(exc: BaseException) -> bool:
    """Whether pyarrow's exception says a page failed its checksum (its message:
    ``could not verify page integrity, CRC checksum verification failed``)."""
    text = str(exc).lower()
    return "checksum" in text or "page integrity" in text


def read_checked(path: str | os.PathLike[str], f: Any, columns: list[str]) -> Any:
    """``f.read(columns=columns)`` of a file opened by :func:`open_parquet`; a page that
    fails its checksum is a :class:`~kernel_lab.core.errors.DataError` naming the file,
    the column and the row group (:func:`checksum_error`)."""
    try:
        return f.read(columns=columns)
    except Exception as exc:
        if not is_checksum_failure(exc):
            raise
        raise checksum_error(path, f, columns) from None


def checksum_error(path: str | os.PathLike[str], f: Any, columns: list[str]) -> DataError:
    """The refusal of a file with a page that fails its checksum, naming the column and
    the row group (with its rows) found by reading each column of each row group again
    (only when a read failed: the cost of one more read of those columns at most)."""
    meta = f.metadata
    groups = meta.num_row_groups
    first = 0
    for g in range(groups):
        rows = meta.row_group(g).num_rows
        for name in columns:
            try:
                f.read_row_group(g, columns=[name])
            except Exception as exc:
                if not is_checksum_failure(exc):
                    raise
                return _checksum_refusal(
                    f"a page of column {name!r} in row group {g + 1} of {groups} (rows "
                    f"{first + 1:,}–{first + rows:,} of the file)", path)
        first += rows
    return _checksum_refusal("a page", path)


def _checksum_refusal(page: str, path: str | os.PathLike[str]) -> DataError:
    return DataError(f"{page} fails its checksum: {_CHANGED}", _AGAIN, path=path)


_CHANGED = "the file's bytes changed after it was written (a damaged disk, copy or download)"
_AGAIN = ("copy the file again, or export it again from its source (its numbers cannot be "
          "trusted)")


def _bounds(values: np.ndarray) -> tuple[float, float]:
    """The smallest and largest of ``values``, NaN ignored (±inf when all are NaN); in
    slices of half a megabyte, so the second reduction finds its slice in the cache."""
    lowest, highest = np.inf, -np.inf
    step = 1 << 16
    for a in range(0, values.size, step):
        part = values[a:a + step]
        lowest = min(lowest, float(np.fmin.reduce(part)))  # a NaN never compares less
        highest = max(highest, float(np.fmax.reduce(part)))
    return lowest, highest


def footer_columns(meta: Any) -> dict[str, int]:
    """Each flat column's position in a row group of the file's metadata, by name."""
    if meta.num_row_groups == 0:
        return {}
    group = meta.row_group(0)
    return {group.column(i).path_in_schema: i for i in range(group.num_columns)}


def check_footer_range(path: str | os.PathLike[str], meta: Any, name: str, kind: Any,
                       values: np.ndarray, *, start: int | None = None) -> None:
    """Refuse a column of integers or floats (``values``: the file's whole column as
    float64, as read) with a value outside the minimum … maximum the footer records for
    its row group, naming the file, the column, the first such row and the count.

    A writer computes these statistics from the numbers it wrote; a value outside them
    was changed afterwards — what a damaged page of a file without checksums is read as
    (random bytes almost never stay inside a column's range). Row groups without
    statistics are not checked (pyarrow itself drops those it knows an old writer got
    wrong); NaN and null cells are not compared. ``start``: the global index of the
    file's first row, for a file of a folder. Two reductions over each column
    (:func:`_bounds`): no copy."""
    import pyarrow.types as pt

    if not (pt.is_integer(kind) or pt.is_floating(kind)):
        return  # decimals and booleans: statistics in other units
    position = footer_columns(meta).get(name)
    if position is None:
        return
    first = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        rows = group.num_rows
        stats = group.column(position).statistics
        block = values[first:first + rows]
        if stats is not None and stats.has_min_max and rows and block.size:
            low, high = float(stats.min), float(stats.max)
            lowest, highest = _bounds(block)
            if (lowest < low or highest > high) and low == low and high == high:
                out = np.flatnonzero((block < low) | (block > high))
                r = first + int(out[0])
                where = (f"row {r + 1:,}" if start is None
                         else f"row {start + r:,} (row {r + 1:,} of this file)")
                raise DataError(
                    f"{where}: column {name!r} holds {out.size:,} "
                    f"value{'' if out.size == 1 else 's'} outside the range the file's "
                    f"footer records for row group {g + 1} ({low:.6g} to {high:.6g}; "
                    f"{'the first here' if out.size > 1 else 'here'}: {values[r]:.6g}): "
                    f"{_CHANGED}", _AGAIN, path=path)
        first += rows


def read_parquet(path: Path, raw: bytes, target: str | int | None,
                 options: ReadOptions | None = None) -> Table:
    """The table of a Parquet file (``raw``: its first bytes, for the magic number).

    Read column by column: a file of numbers goes straight into the table's matrix (one
    copy of the data, whatever the row groups; pandas' frame, its column copies and their
    stack took four times that); another column becomes a pandas Series, as
    ``pandas.read_parquet`` gives it, and its values go through the CSV pipeline as text.
    """
    options = options or ReadOptions()
    expect_magic(path, raw, MAGIC, "an Apache Parquet file")
    need_pyarrow(path)
    options.report(0.1, f"reading {path.name} (Parquet)")
    try:
        with open_parquet(path) as f:
            return _read_columns(path, f, target, options)
    except (DataError, MemoryError, Cancelled):
        raise
    except Exception as exc:  # a damaged file inside pyarrow: say so, by name
        detail = " ".join(str(exc).split())[:160]
        raise DataError(f"the Parquet file is damaged or unreadable ({type(exc).__name__}: "
                        f"{detail})", "write it again, or choose another file",
                        path=path) from None


def is_numeric_type(kind: Any) -> bool:
    """Whether an arrow type holds numbers (read as float64): integers, floats,
    decimals, booleans, or nothing but nulls."""
    import pyarrow.types as pt

    return bool(pt.is_integer(kind) or pt.is_floating(kind) or pt.is_boolean(kind)
                or pt.is_decimal(kind) or pt.is_null(kind))


def float_column(column: Any) -> np.ndarray:
    """An arrow column of numbers as float64, nulls NaN (integers beyond 2⁵³ rounded, as
    pandas converts them)."""
    import pyarrow as pa

    return column.cast(pa.float64(), safe=False).to_numpy()


def _read_columns(path: Path, f: Any, target: str | int | None, options: ReadOptions
                  ) -> Table:
    schema = f.schema_arrow
    index = set(pandas_index(schema))
    names = [n for n in schema.names if n not in index]  # pandas' index: not data
    if not names:
        raise DataError("the Parquet file has no columns", "choose a file with data in it",
                        path=path)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DataError(f"the column names {', '.join(map(repr, twice))} appear more than "
                        "once", "give every column its own name", path=path)
    n = int(f.metadata.num_rows)
    if n == 0:
        raise DataError(f"the Parquet file has columns ({', '.join(names)}) but no rows",
                        "choose a file with data in it", path=path)
    numeric = [is_numeric_type(schema.field(name).type) for name in names]
    first = None  # read first only when it may be an id column (0 … n−1 or 1 … n)
    if numeric[0] and names[0].strip().lower() in ID_NAMES:
        first = float_column(read_checked(path, f, [names[0]]).column(0))
    used, j = used_columns(path, names, first, names[0], True, target, options)
    matrix = (np.empty((n, len(names))) if all(numeric) and len(used) == len(names)
              else None)
    columns: list[np.ndarray | None] = []
    for c, name in enumerate(names):
        if c not in used:  # left out by the column choice: never read
            columns.append(None)
            continue
        options.report(0.15 + 0.75 * c / len(names), f"column {c + 1} of {len(names)}: {name}")
        column = read_checked(path, f, [name]).column(0)
        if numeric[c]:
            values = float_column(column)
            check_footer_range(path, f.metadata, name, schema.field(name).type, values)
            if matrix is not None:
                matrix[:, c] = values
            else:
                columns.append(values)
            del values
        else:
            columns.append(_column(path, column.to_pandas(), name, c + 1, target=c == j))
        del column
    if matrix is not None:
        return finish_matrix(path, names, matrix, names[0], True, target, options, None)
    return finish_table(path, names, columns, names[0], True, target, options, None)


def pandas_index(schema: Any) -> list[str]:
    """Columns of a pyarrow schema that pandas stored as a frame's index (its metadata
    says so): not data, as :func:`read_parquet` reads them."""
    try:
        meta = schema.pandas_metadata or {}
    except Exception:  # metadata not pandas' or not JSON: no index columns
        return []
    return [c for c in meta.get("index_columns", []) if isinstance(c, str)
            and c in schema.names]


def peek_parquet(path: Path, rows: int) -> tuple[list[str], list[list[str]]]:
    """Column names and the first ``rows`` rows as text (as a CSV of the same data
    writes them), from the file's first row group; pandas' index columns left out."""
    with open_parquet(path) as f:
        index = set(pandas_index(f.schema_arrow))
        names = [n for n in f.schema_arrow.names if n not in index]
        batch = next(f.iter_batches(batch_size=max(rows, 1), columns=names), None)
    if batch is None:
        return names, []
    columns = [batch.column(j).to_pylist()[:rows] for j in range(len(names))]
    return names, [["" if v is None or v != v else str(v) for v in row]
                   for row in zip(*columns, strict=True)]


def _column(path: Path, series: Any, name: str, number: int, *, target: bool = False
            ) -> np.ndarray:
    """A column as float64 (numbers and booleans; nulls NaN) or, for anything else, its
    values as text typed as a CSV's cells are (:func:`typed_column`)."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(series.dtype) or pd.api.types.is_numeric_dtype(series.dtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    cells = []
    for value in series.to_numpy(dtype=object):
        if isinstance(value, list | tuple | dict | np.ndarray):
            raise DataError(f"column {name!r} holds lists or records, not single values",
                            "write the file with one value per cell (flatten the column)",
                            path=path, column=number)
        if value is None or (not isinstance(value, str) and pd.isna(value)):
            cells.append("")
        elif isinstance(value, bytes):
            cells.append(value.decode("utf-8", errors="replace"))
        else:
            cells.append(str(value))
    return typed_column(path, cells, None, name, number, target=target)
