"""A single Apache Parquet file, read by pandas (with pyarrow) into the same table a CSV of
the same data gives: number and boolean columns as numbers (booleans 0/1), text columns
through the table pipeline (:func:`~kernel_lab.data.table.typed_column`,
:func:`~kernel_lab.data.table.finish_table`: categories one-hot, a text target as classes,
a row-index first column dropped), missing values to the load's NaN policy, rows named by
number. pyarrow is optional (the ``dask`` extra; the standalone app leaves it out):
without it, a :class:`~kernel_lab.core.errors.DataError` says what to install.

A folder of Parquet files is partitioned data: :mod:`kernel_lab.data.partitioned`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError
from kernel_lab.data.raw import expect_magic
from kernel_lab.data.table import ReadOptions, Table, finish_table, typed_column

#: The first (and last) bytes of every Parquet file.
MAGIC = b"PAR1"
#: What to install for Parquet (and Zarr): the optional extra that brings pyarrow.
INSTALL = "pip install 'kernel-lab[dask]'"


def need_pyarrow(path: str | os.PathLike[str] | None = None) -> None:
    """Refuse to go on without pyarrow, saying what to install."""
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise DataError(f"reading Parquet needs pyarrow: {INSTALL}", path=path) from None


def read_parquet(path: Path, raw: bytes, target: str | int | None,
                 options: ReadOptions | None = None) -> Table:
    """The table of a Parquet file (``raw``: its first bytes, for the magic number)."""
    options = options or ReadOptions()
    expect_magic(path, raw, MAGIC, "an Apache Parquet file")
    need_pyarrow(path)
    import pandas as pd

    options.report(0.1, f"reading {path.name} (Parquet)")
    try:
        frame = pd.read_parquet(path, engine="pyarrow")
    except MemoryError:
        raise
    except Exception as exc:  # a damaged file inside pyarrow: say so, by name
        detail = " ".join(str(exc).split())[:160]
        raise DataError(f"the Parquet file is damaged or unreadable ({type(exc).__name__}: "
                        f"{detail})", "write it again, or choose another file",
                        path=path) from None
    names = [str(c) for c in frame.columns]
    if not names:
        raise DataError("the Parquet file has no columns", "choose a file with data in it",
                        path=path)
    if len(frame) == 0:
        raise DataError(f"the Parquet file has columns ({', '.join(names)}) but no rows",
                        "choose a file with data in it", path=path)
    columns = []
    for c, name in enumerate(names):
        options.report(0.3 + 0.6 * c / len(names), f"column {c + 1} of {len(names)}: {name}")
        columns.append(_column(path, frame.iloc[:, c], name, c + 1))
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
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as f:
        index = set(pandas_index(f.schema_arrow))
        names = [n for n in f.schema_arrow.names if n not in index]
        batch = next(f.iter_batches(batch_size=max(rows, 1), columns=names), None)
    if batch is None:
        return names, []
    columns = [batch.column(j).to_pylist()[:rows] for j in range(len(names))]
    return names, [["" if v is None or v != v else str(v) for v in row]
                   for row in zip(*columns, strict=True)]


def _column(path: Path, series: Any, name: str, number: int) -> np.ndarray:
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
    return typed_column(path, cells, None, name, number)
