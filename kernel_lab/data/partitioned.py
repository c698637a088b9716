"""Partitioned data: a folder of Parquet files or a Zarr store, opened as parts
(:class:`~kernel_lab.core.rows.mapreduce.Part`) that are read where they are used.

- A folder of ``*.parquet`` files: one part per file, the files in the natural order of
  their names (``part.2`` before ``part.10``; names starting with ``.`` or ``_`` are not
  data). Opening reads each file's footer only (row count and schema), never its data:
  a part's global rows start at the sum of the row counts before it. Every file must have
  the first file's columns with the same types; a feature or target column must hold
  numbers (integers, floats, decimals, booleans; all read as float64, nulls as NaN) — a
  text feature is not read from partitioned data (leave it out with ``drop_columns=``, or
  name the feature columns with ``features=``). A text target (strings, or pandas'
  categories) is the one column opening reads: its levels over every file, sorted and
  coded as the CSV reader codes them (:func:`~kernel_lab.data.table.encode_target`: two
  levels −1 and +1, more 0 … K−1 with :attr:`PartitionedTable.classes`); cells the CSV
  reader takes for missing (empty, ``NA``, …) are NaN. The target is chosen as for an ordinary table
  (:func:`~kernel_lab.data.table.pick_target`): a name or 0-based index, by default the
  last column. Index columns pandas stored (its metadata) are not data; a first column
  named as a row index (R's ``rownames``, pandas' ``Unnamed: 0``) is dropped, as the text
  tables do.
- A Zarr store: a group with arrays ``X`` (n × p) and ``y`` (n,), one part per row chunk
  (per shard, for a sharded array) of ``X``; the group's attributes ``feature_names`` and
  ``target_name`` name the columns (default ``x1 … xp`` and ``y``).

Each problem is a :class:`~kernel_lab.core.errors.DataError` naming the file (or store)
and saying what to do. A part's read verifies the checksums of its Parquet pages (where
the file has them: :func:`~kernel_lab.data.parquet.open_parquet`), refuses a number
outside the range the footer records for its row group
(:func:`~kernel_lab.data.parquet.check_footer_range`) and values beyond ±1e150, naming
the file, column and row
(:func:`~kernel_lab.data.table.refuse_huge_values`). Missing values are not checked when
opening (that would read the data): the first pass of a run over the partitions
(:func:`~kernel_lab.data.lazy.partitioned_data`) fills them with the training means, or
drops their rows, as a loaded table does.

A small partitioned data set (:meth:`PartitionedTable.fits_memory`) reads into an ordinary
:class:`~kernel_lab.data.table.Table` with :meth:`PartitionedTable.to_table`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError, data_option, missing_package
from kernel_lab.core.memory import check_allocation, format_bytes, memory_budget_bytes
from kernel_lab.data import encoding as enc
from kernel_lab.data.columns import ColumnChoice, split_names
from kernel_lab.data.parquet import (
    check_footer_range,
    checksum_error,
    float_column,
    is_checksum_failure,
    is_numeric_type,
    need_pyarrow,
    open_parquet,
    pandas_index,
    read_checked,
)
from kernel_lab.data.table import (
    INDEX_NAMES,
    MISSING,
    NAN_POLICIES,
    Table,
    apply_nan_policy,
    encode_target,
    is_number,
    pick_target,
    refuse_huge_values,
)

__all__ = ["ParquetPart", "PartitionedTable", "ZarrPart", "is_partitioned",
           "open_partitioned"]

SUFFIX = ".parquet"
#: Files that mark a directory as a Zarr store (format 3; format 2 group or array).
ZARR_MARKERS = ("zarr.json", ".zgroup", ".zarray")
_DIGITS = re.compile(r"(\d+)")


def _natural(path: Path) -> list[Any]:
    """Sort key: runs of digits compared as numbers (``part.2`` before ``part.10``)."""
    return [int(t) if k % 2 else t for k, t in enumerate(_DIGITS.split(path.name))]


def _parquet_files(folder: Path) -> list[Path]:
    return sorted((p for p in folder.iterdir() if p.suffix.lower() == SUFFIX
                   and not p.name.startswith((".", "_")) and p.is_file()), key=_natural)


def _is_zarr(path: Path) -> bool:
    return any((path / marker).is_file() for marker in ZARR_MARKERS)


def is_partitioned(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder holding ``.parquet`` files or a Zarr store (what
    :func:`open_partitioned` opens; any other folder it refuses, saying why)."""
    path = Path(path)
    try:
        return path.is_dir() and (_is_zarr(path) or bool(_parquet_files(path)))
    except OSError:
        return False


# ---------------------------------------------------------------------------------------
# Parts


def release_arrow() -> None:
    """Give the free memory of Arrow's pool back to the system. Its allocator (mimalloc or
    jemalloc) keeps what a read freed — the decoded pages, the table — for later reads:
    50 MiB after reading a 21 MiB file, held by a Dask worker between its tasks as memory
    Dask cannot account for. Releasing costs under a millisecond."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _read_head(path: str, f: Any, columns: list[str], rows: int) -> Any:
    """The first ``rows`` rows of the columns of a file opened by
    :func:`~kernel_lab.data.parquet.open_parquet`, decoding only the pages that hold them;
    a page failing its checksum refused as :func:`~kernel_lab.data.parquet.read_checked`
    refuses it."""
    import pyarrow as pa

    batches = []
    try:
        for batch in f.iter_batches(batch_size=max(min(rows, 65_536), 1), columns=columns):
            batches.append(batch)
            if sum(b.num_rows for b in batches) >= rows:
                break
    except Exception as exc:
        if not is_checksum_failure(exc):
            raise
        raise checksum_error(path, f, columns) from None
    if not batches:
        return f.schema_arrow.empty_table().select(columns)
    return pa.Table.from_batches(batches).slice(0, rows)


@dataclass(frozen=True)
class ParquetPart:
    """One Parquet file of a folder: rows ``start … start + rows − 1`` of the data set.
    Small and picklable (it travels to the worker that reads it); :meth:`read` reads only
    its feature and target columns."""

    index: int
    start: int
    rows: int
    path: str
    features: tuple[str, ...]
    target: str
    #: A text target: each level (stripped text) and its code, as the CSV reader codes
    #: it (:func:`~kernel_lab.data.table.encode_target`); empty for a target of numbers.
    codes: tuple[tuple[str, float], ...] = ()

    def _reading(self, read: Callable[[Any], Any]) -> Any:
        """``read(f)`` of the file opened by :func:`~kernel_lab.data.parquet.open_parquet`
        (pages' checksums verified, if written), then Arrow's free memory given back
        (:func:`release_arrow`)."""
        need_pyarrow(self.path)
        try:
            with open_parquet(self.path) as f:
                return read(f)
        except DataError:
            raise
        except Exception as exc:  # gone, changed or damaged since it was opened
            detail = " ".join(str(exc).split())[:160]
            raise DataError(f"the file cannot be read ({type(exc).__name__}: {detail}): it "
                            "was changed while in use, or is damaged",
                            "open the folder again if its files were changed; copy or "
                            "export a damaged file again",
                            path=self.path) from None
        finally:
            release_arrow()

    def _column(self, f: Any, name: str, head: int | None = None) -> tuple[Any, Any]:
        """One column (the first ``head`` rows only, when given) and its Arrow type."""
        table = (read_checked(self.path, f, [name]) if head is None
                 else _read_head(self.path, f, [name], head))
        if table.num_rows != (self.rows if head is None else head):
            raise DataError(f"the file has {table.num_rows:,} rows, not the {self.rows:,} it "
                            "had when the folder was opened",
                            "open the folder again after changing its files", path=self.path)
        return table.column(0), table.schema.field(0).type

    def _numbers(self, f: Any, name: str, head: int | None = None) -> np.ndarray:
        """A column as float64, checked against the footer's ranges."""
        values, kind = self._column(f, name, head)
        values = float_column(values)
        check_footer_range(self.path, f.metadata, name, kind, values, start=self.start)
        return values

    def _target(self, f: Any, head: int | None = None) -> np.ndarray:
        if self.codes:
            return _coded_target(self._column(f, self.target, head)[0], self.codes, self.path)
        return np.array(self._numbers(f, self.target, head), dtype=np.float64)

    def _rows(self, f: Any, head: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """X and y (of the first ``head`` rows), read one column at a time straight into X:
        Arrow holds one column's pages at once, not a table of the file beside X."""
        X = np.empty((self.rows if head is None else head, len(self.features)))
        for j, name in enumerate(self.features):
            X[:, j] = self._numbers(f, name, head)
        y = self._target(f, head)
        refuse_huge_values(self.path, X, y, self.features, self.target, start=self.start)
        return X, y

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        """X (rows × p) and y (rows,) as float64, missing values NaN; values beyond
        ±:data:`~kernel_lab.data.table.MAX_MAGNITUDE` refused, naming the file and row."""
        return self._reading(self._rows)

    def read_range(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``lo … hi − 1`` of the file (positions within it), checked as :meth:`read`
        checks the file. A head (``hi`` short of the end) decodes only the pages holding
        the first ``hi`` rows (``ParquetFile.iter_batches``): what a part cut at row-block
        boundaries reads of the file after its own."""
        X, y = self.read() if hi >= self.rows else self._reading(lambda f: self._rows(f, hi))
        return X[lo:hi], y[lo:hi]

    def read_target(self) -> np.ndarray:
        """The target column alone."""
        return self._reading(self._target)

    def target_bounds(self) -> set[float]:
        """The target's minimum and maximum of each row group, where the file's footer
        holds them (its column statistics; no data read)."""
        import pyarrow.parquet as pq

        found: set[float] = set()
        with pq.ParquetFile(self.path) as f:
            meta = f.metadata
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                for c in range(group.num_columns):
                    column = group.column(c)
                    stats = column.statistics
                    if (column.path_in_schema != self.target or stats is None
                            or not stats.has_min_max):
                        continue
                    try:
                        found.update(float(v) for v in (stats.min, stats.max))
                    except (TypeError, ValueError):
                        continue
        return {v for v in found if np.isfinite(v)}

    def describe(self) -> str:
        return (f"{Path(self.path).name} (rows {self.start:,}–"
                f"{self.start + self.rows - 1:,})")


def is_text_type(kind: Any) -> bool:
    """Whether an arrow type holds text (strings, or a dictionary of strings: pandas'
    categories)."""
    import pyarrow.types as pt

    if pt.is_dictionary(kind):
        kind = kind.value_type
    return bool(pt.is_string(kind) or pt.is_large_string(kind))


def _stripped(column: Any) -> Any:
    """A text column as stripped strings (a dictionary decoded), nulls kept."""
    import pyarrow.compute as pc
    import pyarrow.types as pt

    if pt.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return pc.utf8_trim_whitespace(column)


def _missing_cells(text: Any) -> np.ndarray:
    """Where stripped text cells are missing values as the CSV reader reads them (empty,
    ``NA``, ``?``, …: :data:`~kernel_lab.data.table.MISSING`) or null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lower = pc.utf8_lower(text)
    hit = pc.is_in(lower, value_set=pa.array(sorted(MISSING), type=lower.type))
    hit = np.asarray(pc.fill_null(hit, True).to_numpy(zero_copy_only=False), dtype=bool)
    return hit | np.asarray(pc.is_null(text).to_numpy(zero_copy_only=False), dtype=bool)


def _coded_target(column: Any, codes: Sequence[tuple[str, float]], path: str) -> np.ndarray:
    """A text target column as its codes (missing cells NaN); a value that is not one of
    the levels read when the folder was opened is refused (the file changed since)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = _stripped(column)
    missing = _missing_cells(text)
    levels = pa.array([level for level, _ in codes], type=text.type)
    at = pc.index_in(text, value_set=levels).to_numpy(zero_copy_only=False)
    at = np.asarray(at, dtype=np.float64)  # nulls: NaN
    unknown = np.isnan(at) & ~missing
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise DataError(f"row {row + 1:,} of the file: the target value "
                        f"{text[row].as_py()!r} is not one of the classes read when the "
                        "folder was opened", "open the folder again after changing its "
                        "files", path=path)
    values = np.array([code for _, code in codes], dtype=np.float64)
    y = np.full(at.size, np.nan)
    ok = ~np.isnan(at)
    y[ok] = values[at[ok].astype(np.intp)]
    return y


def _text_target(files: Sequence[Path], target: str) -> tuple[tuple[tuple[str, float], ...],
                                                               list[str] | None, str]:
    """The levels of a text target over every file (one pass over its column alone):
    sorted, coded as the CSV reader codes them (two: −1 and +1; more: 0 … K−1), the
    class names (more than two) and the note that says so."""
    import pyarrow.compute as pc

    levels: set[str] = set()
    for path in files:
        with open_parquet(path) as f:
            text = pc.unique(_stripped(read_checked(path, f, [target]).column(0)))
        missing = _missing_cells(text)
        levels.update(v for v, gone in zip(text.to_pylist(), missing, strict=True)
                      if not gone)
    found = sorted(levels)
    if found and all(is_number(v) for v in found):
        raise DataError(f"the target column {target!r} holds numbers stored as text",
                        "write the target as numbers in the files", path=files[0])
    codes, classes, note = encode_target(files[0], target, np.array(found, dtype=object))
    return tuple(zip(found, codes.tolist(), strict=True)), classes, note


def _need_zarr(path: str | os.PathLike[str]) -> Any:
    try:
        import zarr
    except ImportError:
        raise DataError(missing_package(
            "reading a Zarr store", "zarr",
            "it reads Parquet files and folders of Parquet files (one file per part); save "
            "X and y as those, or use Kernel Lab installed in Python (with its dask extra)"),
            path=path) from None
    return zarr


@dataclass(frozen=True)
class ZarrPart:
    """A row chunk of a Zarr store's ``X`` (and the same rows of its target array)."""

    index: int
    start: int
    rows: int
    path: str
    #: The columns of X used as features (None: all).
    columns: tuple[int, ...] | None = None
    target: str = "y"
    #: The feature columns' names, for messages (empty: ``x1 … xp``).
    names: tuple[str, ...] = ()

    def _group(self) -> Any:
        zarr = _need_zarr(self.path)
        try:
            return zarr.open_group(self.path, mode="r")
        except Exception as exc:
            raise DataError(f"the Zarr store cannot be read ({type(exc).__name__}: {exc})",
                            "check that the store was not changed while in use",
                            path=self.path) from None

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        return self.read_range(0, self.rows)

    def read_range(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``lo … hi − 1`` of the chunk (positions within it)."""
        group = self._group()
        a, b = self.start + lo, self.start + min(hi, self.rows)
        X = np.asarray(group["X"][a:b], dtype=np.float64)
        if self.columns is not None:
            X = X[:, list(self.columns)]
        y = np.asarray(group[self.target][a:b], dtype=np.float64).reshape(-1)
        names = self.names or [f"x{j + 1}" for j in range(X.shape[1])]
        within = (f"chunk {self.index}" if lo == 0 else
                  f"the rows of chunk {self.index} from its row {lo + 1:,}")
        refuse_huge_values(self.path, X, y, names, self.target, start=a, within=within)
        return X, y

    def read_target(self) -> np.ndarray:
        group = self._group()
        return np.asarray(group[self.target][self.start:self.start + self.rows],
                          dtype=np.float64).reshape(-1)

    def describe(self) -> str:
        return (f"{Path(self.path).name}, chunk {self.index} (rows {self.start:,}–"
                f"{self.start + self.rows - 1:,})")


# ---------------------------------------------------------------------------------------
# The table


@dataclass
class PartitionedTable:
    """A data set in parts: what :func:`open_partitioned` returns.

    Attributes
    ----------
    parts : list of ParquetPart or ZarrPart
        In order; ``parts[k].start`` is the global index of its first row.
    feature_names : list of str
    target_name : str
    source : str
        The folder or store.
    notes : list of str
        What opening did that the user should know (the target chosen, columns left out).
    kind : {"parquet", "zarr"}
    """

    parts: list[Any]
    feature_names: list[str]
    target_name: str
    source: str
    notes: list[str] = field(default_factory=list)
    kind: str = "parquet"
    #: The class names of a text target with more than two levels (codes 0 … K−1).
    classes: list[str] | None = None
    #: How the stored columns are typed (:mod:`kernel_lab.data.encoding`: every feature
    #: a column of numbers).
    encoding: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return Path(self.source).name

    @property
    def n(self) -> int:
        return sum(part.rows for part in self.parts)

    @property
    def p(self) -> int:
        return len(self.feature_names)

    @property
    def nbytes(self) -> int:
        """Bytes of the whole data set as float64 (features and target)."""
        return self.n * (self.p + 1) * 8

    @cached_property
    def task(self) -> str:
        """``"classification"`` when the target takes exactly two values (as for a
        :class:`~kernel_lab.core.rows.dataset.Dataset`), else ``"regression"``.

        First the Parquet files' column statistics (the target's minimum and maximum in
        each row group, from the footers): more than two distinct bounds prove more than
        two values, with no data read — the usual answer for a regression target stored in
        several files or row groups. Bounds cannot prove two values (a third may lie
        between them), so otherwise the target column is read, part by part, stopping at
        the first part that shows a third value: a two-valued target costs the whole
        target column (8 bytes a row, one part in memory at a time). Computed once, when
        first asked. A text target is ``"multiclass"`` with more than two levels
        (:attr:`classes`), else ``"classification"``."""
        if self.parts and getattr(self.parts[0], "codes", ()):
            return "multiclass" if self.classes is not None else "classification"
        if self.kind == "parquet":
            bounds: set[float] = set()
            for part in self.parts:
                bounds |= part.target_bounds()
                if len(bounds) > 2:
                    return "regression"
        seen: np.ndarray = np.zeros(0)
        for part in self.parts:
            y = part.read_target()
            seen = np.union1d(seen, np.unique(y[np.isfinite(y)]))
            if seen.size > 2:
                return "regression"
        return "classification" if seen.size == 2 else "regression"

    def fits_memory(self, budget: int | None = None) -> bool:
        """Whether the whole data set as float64 fits the memory budget
        (:func:`~kernel_lab.core.memory.memory_budget_bytes`, or ``budget`` bytes)."""
        return self.nbytes <= (memory_budget_bytes() if budget is None else budget)

    def to_table(self, nan_policy: str = "error", budget: int | None = None) -> Table:
        """Every part read into one ordinary :class:`~kernel_lab.data.table.Table`
        (refused by a :class:`~kernel_lab.core.errors.MemoryBudgetError` when it does not
        fit the budget). Missing values: ``"error"`` names the file and row of the first,
        ``"drop"`` drops their rows with a note."""
        if nan_policy not in NAN_POLICIES:
            raise DataError(f"unknown missing-value policy {nan_policy!r}",
                            f"use one of: {', '.join(NAN_POLICIES)}")
        check_allocation(self.nbytes, f"reading all {self.n:,} rows of {self.name} into "
                         f"memory ({format_bytes(self.nbytes)})",
                         "Keep the data partitioned (the dask backend) or use a sample",
                         budget)
        X = np.empty((self.n, self.p))
        y = np.empty(self.n)
        for part in self.parts:
            Xk, yk = part.read()
            if nan_policy == "error":
                _refuse_missing(part, Xk, yk)
            X[part.start:part.start + part.rows] = Xk
            y[part.start:part.start + part.rows] = yk
        table = Table(X, y, list(self.feature_names), self.target_name, list(self.notes),
                      columns=[*self.feature_names, self.target_name],
                      classes=None if self.classes is None else list(self.classes),
                      encoding=self.encoding)
        return apply_nan_policy(table, nan_policy, Path(self.source))


def _refuse_missing(part: Any, X: np.ndarray, y: np.ndarray) -> None:
    bad = ~(np.isfinite(X).all(axis=1) & np.isfinite(y))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        file = isinstance(part, ParquetPart)
        where = "" if file else f"chunk {part.index}: "
        raise DataError(f"{where}row {part.start + first:,} (row {first + 1:,} of this "
                        f"{'file' if file else 'chunk'}) has a missing or non-finite value; "
                        f"{int(bad.sum()):,} such rows here",
                        "clean the data, or choose to drop rows with missing values "
                        f"({data_option('drop_nan', 'true')})",
                        path=part.path)


# ---------------------------------------------------------------------------------------
# Opening


def open_partitioned(path: str | os.PathLike[str], target: str | int | None = None,
                     features: Sequence[str] | str | None = None,
                     drop: Sequence[str] | str | None = None) -> PartitionedTable:
    """Open a folder of Parquet files or a Zarr store (see the module docstring).

    Parameters
    ----------
    path : path-like
        The folder or store.
    target : str or int, optional
        Target column: a name or a 0-based index (negative from the end); default the
        last column (a Zarr store: its array ``y``, or another 1-D array named here).
    features : sequence of str, or str, optional
        The feature columns, in this order (a string: names separated by commas); default
        every column but the target.
    drop : sequence of str, or str, optional
        Columns to leave out (names or 0-based indices; a string: separated by commas).

    Raises
    ------
    DataError
        Not such a folder or store, or a file in it that does not fit (named).
    """
    path = Path(path)
    choice = ColumnChoice(split_names(features), split_names(drop))
    if features is not None and not choice.features:
        raise DataError("no feature columns named", "name at least one feature column",
                        path=path)
    if not path.exists():
        raise DataError("the folder does not exist", "check the path", path=path)
    if not path.is_dir():
        raise DataError("this is a file, not a folder of Parquet files or a Zarr store",
                        "open a single file as an ordinary table", path=path)
    if _is_zarr(path):
        return _open_zarr(path, target, choice)
    return _open_parquet(path, target, choice)


def _listed(names: Sequence[str], k: int = 8) -> str:
    return ", ".join(names[:k]) + (f", … ({len(names) - k} more)" if len(names) > k else "")


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _plural(names: Sequence[str], word: str = "column") -> str:
    return word if len(names) == 1 else word + "s"


def _footer(path: Path) -> tuple[int, Any]:
    """Row count and arrow schema of a Parquet file, from its footer."""
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(path) as f:
            return int(f.metadata.num_rows), f.schema_arrow
    except Exception as exc:  # not Parquet, or damaged
        detail = " ".join(str(exc).split())[:160]
        raise DataError(f"this is not a readable Parquet file ({type(exc).__name__}: "
                        f"{detail})", "write it again, or move it out of the folder",
                        path=path) from None


def _column_types(path: Path, schema: Any) -> dict[str, Any]:
    """Each column's arrow type, by name (a name used twice refused)."""
    twice = sorted({n for n in schema.names if schema.names.count(n) > 1})
    if twice:
        raise DataError(f"the column {_plural(twice, 'name')} {_quoted(twice)} "
                        f"{'appears' if len(twice) == 1 else 'appear'} more than once",
                        "give every column its own name", path=path)
    return {name: schema.field(name).type for name in schema.names}


def _check_same_schema(path: Path, types: dict[str, Any], first: Path,
                       first_types: dict[str, Any]) -> None:
    missing = [c for c in first_types if c not in types]
    if missing:
        raise DataError(f"missing {_plural(missing)} {_quoted(missing)}, which {first.name} "
                        f"has", "write every file of the folder with the same columns, or "
                        "move this file out of it", path=path)
    extra = [c for c in types if c not in first_types]
    if extra:
        raise DataError(f"{_plural(extra)} {_quoted(extra)} {'is' if len(extra) == 1 else 'are'}"
                        f" not in {first.name} (the first file)",
                        "write every file of the folder with the same columns, or move this "
                        "file out of it", path=path)
    differ = [c for c in first_types if types[c] != first_types[c]]
    if differ:
        said = "; ".join(f"{c!r} is {types[c]} here but {first_types[c]} in {first.name}"
                         for c in differ[:5])
        raise DataError(f"the column types differ from the first file's: {said}",
                        "write every file with the same column types (e.g. cast the columns "
                        "to float64 before writing), or move this file out of the folder",
                        path=path)


def _open_parquet(folder: Path, target: str | int | None, choice: ColumnChoice
                  ) -> PartitionedTable:
    entries = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    if not entries:
        raise DataError("the folder is empty",
                        "choose a folder of .parquet files or a Zarr store (arrays X and y)",
                        path=folder)
    files = _parquet_files(folder)
    if not files:
        raise DataError(f"the folder holds no .parquet files (it has: {_listed(entries)})",
                        "choose a folder of .parquet files or a Zarr store (arrays X and y); "
                        "open a single data file as an ordinary table", path=folder)
    need_pyarrow(folder)
    first = files[0]
    rows, schema = _footer(first)
    counts = [rows]
    first_types = _column_types(first, schema)
    for path in files[1:]:
        rows, other = _footer(path)
        _check_same_schema(path, _column_types(path, other), first, first_types)
        counts.append(rows)
    notes = [f"{len(files)} Parquet {_plural(files, 'file')}, {sum(counts):,} rows, read "
             "part by part"]
    columns = list(first_types)
    stored = list(columns)
    index = None
    index_cols = pandas_index(schema)
    if index_cols:
        columns = [c for c in columns if c not in index_cols]
        notes.append(f"left out the index {_plural(index_cols)} pandas stored "
                     f"({_quoted(index_cols)})")
    named = isinstance(target, str) and target.strip() == (columns[0] if columns else "")
    if (not choice.features and len(columns) > 2 and not named
            and columns[0].strip().lower() in INDEX_NAMES):
        notes.append(f"dropped the first column {columns[0]!r}: a row index (name the feature "
                     "columns to use it; a target given by number counts the columns "
                     "after it)")
        index = columns[0]
        columns = columns[1:]
    if len(columns) < 2 and not choice.features:
        raise DataError(f"the files have {len(columns)} data {_plural(columns)} "
                        f"({_quoted(columns)})",
                        "a data set needs at least one feature column and one target column",
                        path=first)
    j = pick_target(columns, target, first, True)
    target_name = columns[j]
    if target is None or (isinstance(target, str) and not target.strip()):
        notes.insert(0, f"target: the last column {target_name!r} (choose another with "
                        f"{data_option('target', 'NAME')})")
    picked = choice.pick(columns, j, first)
    feature_names = [columns[i] for i in picked]
    left_out = choice.left_out(columns, j, picked)
    if left_out:
        notes.append(left_out)
    kind = first_types[target_name]
    codes: tuple[tuple[str, float], ...] = ()
    classes = None
    if is_text_type(kind):  # classes: their levels read once, coded as a CSV's are
        codes, classes, note = _text_target(files, target_name)
        notes.append(note)
    elif not is_numeric_type(kind):
        raise DataError(f"the target column {target_name!r} holds {kind} values, neither "
                        "numbers nor text", "write the target as numbers or text in the "
                        "files, or open a single file as an ordinary table", path=first)
    text = [c for c in feature_names if not is_numeric_type(first_types[c])]
    if text:
        said = ", ".join(f"{c!r} ({first_types[c]})" for c in text[:5])
        numeric = [c for c in feature_names if c not in text]
        one = len(text) == 1
        raise DataError(f"the feature {_plural(text)} {said} {'holds' if one else 'hold'} text "
                        "or other values that are not numbers: text columns are not read "
                        "from partitioned data",
                        f"leave {'it' if one else 'them'} out "
                        f"({data_option('drop_columns', ','.join(text))}; or name the "
                        f"features: {data_option('features', ','.join(numeric) or 'NAMES')})"
                        f", or encode {'it' if one else 'them'} as numbers in the files",
                        path=first)
    parts: list[ParquetPart] = []
    start = 0
    empty = []
    for path, rows in zip(files, counts, strict=True):
        if rows == 0:
            empty.append(path.name)
            continue
        parts.append(ParquetPart(len(parts), start, rows, str(path), tuple(feature_names),
                                 target_name, codes))
        start += rows
    if not parts:
        raise DataError(f"the {len(files)} Parquet {_plural(files, 'file')} hold no rows",
                        "choose a folder with data in it", path=folder)
    if empty:
        notes.append(f"skipped {len(empty)} {_plural(empty, 'file')} without rows "
                     f"({_listed(empty, 5)})")
    named_codes = [level for level, _ in sorted(codes, key=lambda c: c[1])]
    typed = enc.table_encoding(stored, [enc.number_feature(c) for c in feature_names],
                               enc.target_encoding(target_name, named_codes or None),
                               index=index, left_out=[c for c in columns if c != target_name
                                                      and c not in feature_names],
                               choice=choice.to_options())
    return PartitionedTable(parts, feature_names, target_name, str(folder), notes, "parquet",
                            classes, typed)


def _open_zarr(path: Path, target: str | int | None, choice: ColumnChoice
               ) -> PartitionedTable:
    zarr = _need_zarr(path)
    try:
        group = zarr.open_group(str(path), mode="r")
        arrays = sorted(group.array_keys())
    except Exception as exc:
        detail = " ".join(str(exc).split())[:160]
        raise DataError(f"this is not a readable Zarr group ({type(exc).__name__}: {detail})",
                        "store the data as a Zarr group with arrays X (rows × features) and "
                        "y (the target)", path=path) from None
    target_array = "y"
    if isinstance(target, str) and target.strip():
        wanted = target.strip()
        if wanted != str(group.attrs.get("target_name", "y")):
            target_array = wanted
    elif target is not None:
        raise DataError(f"a Zarr store's target is an array, not column {target!r}",
                        "name the target array (default: y)", path=path)
    for name in ("X", target_array):
        if name not in arrays:
            raise DataError(f"the Zarr store has no array {name!r} (it has: "
                            f"{', '.join(arrays) or 'none'})",
                            "store the features as X (rows × features) and the target as y",
                            path=path)
    X, y = group["X"], group[target_array]
    for label, A in (("X", X), (target_array, y)):
        if np.dtype(A.dtype).kind not in "biuf":
            raise DataError(f"the array {label!r} holds {A.dtype} values, not numbers",
                            "store numeric arrays", path=path)
    if len(X.shape) != 2 or 0 in X.shape:
        raise DataError(f"the array 'X' has shape {tuple(X.shape)}; a non-empty 2-D array "
                        "(rows × features) is needed", "store X as a 2-D array", path=path)
    if len(y.shape) != 1 and not (len(y.shape) == 2 and y.shape[1] == 1):
        raise DataError(f"the array {target_array!r} has shape {tuple(y.shape)}; it must be "
                        "1-D (one target value per row)", "store a single target vector",
                        path=path)
    n, p = (int(s) for s in X.shape)
    if int(y.shape[0]) != n:
        raise DataError(f"'X' has {n:,} rows but {target_array!r} has {int(y.shape[0]):,} "
                        "values", "both must have one entry per row", path=path)
    names = group.attrs.get("feature_names")
    if names is None:
        names = [f"x{k + 1}" for k in range(p)]
    if isinstance(names, str) or not isinstance(names, list | tuple):
        raise DataError(f"the attribute feature_names is {names!r}, not a list of names",
                        "store one name per column of X, as a list", path=path)
    names = [str(v) for v in names]
    if len(names) != p:
        raise DataError(f"the attribute feature_names has {len(names)} names but 'X' has {p} "
                        "columns", "store one name per column of X", path=path)
    target_name = (str(group.attrs.get("target_name", "y")) if target_array == "y"
                   else target_array)
    columns = None
    notes = []
    stored = [*names, target_name]
    if choice:  # the target is an array apart: chosen among X's columns and itself
        everything = [*names, target_name]
        picked = choice.pick(everything, p, path)
        left_out = choice.left_out(everything, p, picked)
        notes = [left_out] if left_out else []
        columns = tuple(picked)
        names = [names[i] for i in picked]
    step = int((getattr(X, "shards", None) or X.chunks)[0])
    parts = [ZarrPart(k, a, min(step, n - a), str(path), columns, target_array, tuple(names))
             for k, a in enumerate(range(0, n, step))]
    notes = [f"Zarr store: {n:,} rows in {len(parts)} {_plural(parts, 'chunk')} of "
             f"{step:,} rows, read chunk by chunk", *notes]
    return PartitionedTable(parts, names, target_name, str(path), notes, "zarr",
                            encoding=enc.numeric_encoding(names, target_name, stored,
                                                          choice=choice.to_options()))
