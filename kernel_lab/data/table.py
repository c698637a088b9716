"""A table read from a file, and the pipeline every text table goes through: the header
row, the type of each column (numbers, or text read as categories), a row-index column
dropped, the target split off, text encoded (a text target as classes, text features
one-hot), missing values checked — each step said in the table's notes, each problem a
:class:`~kernel_lab.core.errors.DataError` naming the file, line and column.

The readers of the formats (:mod:`kernel_lab.data.text`, :mod:`~kernel_lab.data.excel`,
:mod:`~kernel_lab.data.arff`, …) end here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError, data_option
from kernel_lab.data.columns import ColumnChoice
from kernel_lab.data.encoding import (  # noqa: F401
    MISSING,
    SPREADSHEET_ERRORS,
    encode_target,
    header_rows,
    is_header,
    is_number,
    number_feature,
    numeric_encoding,
    onehot_feature,
    table_encoding,
    target_encoding,
    with_index,
)
from kernel_lab.data.encoding import shown as _shown
from kernel_lab.data.encoding import text_levels as _levels

#: What a load does with missing values: ``fill`` (the default: a feature's missing cells
#: are filled by its training mean at the split, with a warning; a missing target or an
#: infinite value is refused), ``drop`` (their rows), ``error`` (refuse every one).
NAN_POLICIES = ("fill", "drop", "error")


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
    #: Which column is the target and how it was chosen (:func:`target_note`), for the
    #: first line of a run.
    target_note: str = ""
    #: Rows left out for a missing or non-finite value (``drop_nan``), sorted: they stay in
    #: ``X`` and ``y`` (row numbers never shift) and are in neither the training nor the
    #: test rows of the split.
    dropped: np.ndarray | None = None
    #: How the file's columns were typed (:mod:`kernel_lab.data.encoding`): what a fitted
    #: model needs to type new rows the same way. None: read as numbers whole (see
    #: :func:`table_encoding_of`).
    encoding: dict[str, Any] | None = None
    #: Whether the reader saw every value of the matrix the table was cut from (the
    #: target, a row index and the columns left out included) finite and within
    #: ±:data:`MAX_MAGNITUDE`: then :func:`~kernel_lab.data.read.load_table`'s checks for
    #: huge, missing and infinite values have nothing to find and are not made. False:
    #: not known (they look).
    in_range: bool = False

    def kept(self) -> np.ndarray:
        """Whether each row is kept (not in :attr:`dropped`)."""
        keep = np.ones(len(self.y), dtype=bool)
        if self.dropped is not None:
            keep[self.dropped] = False
        return keep


#: Text feature columns with more distinct values than this are dropped, not encoded.
MAX_LEVELS = 50
#: A column of numbers with a few text cells (under one in eight) is read as categories
#: when it takes at most this many values in all (codes: ``4, 6, 8, rotary``); with more,
#: a text cell is taken for a typo and refused.
CODED_LEVELS = 12
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
    columns : the feature columns chosen or left out (every format).
    progress : the load's progress callback (see :meth:`report`).
    """

    text_features: str = "onehot"
    keep_index: bool = False
    sheet: str = ""
    columns: ColumnChoice = field(default_factory=ColumnChoice)
    #: ``progress(fraction, message)`` of this load, told as the reading goes on (it may
    #: raise :class:`~kernel_lab.core.progress.Cancelled`); passed along with the options,
    #: not kept anywhere else.
    progress: Callable[[float, str], None] | None = field(default=None, compare=False,
                                                          repr=False)

    def report(self, fraction: float, message: str) -> None:
        """Tell the progress callback, if there is one."""
        if self.progress is not None:
            self.progress(fraction, message)


def pick_target(names: list[str], target: str | int | None, path: Path,
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


def target_note(name: str, target: str | int | None, count: int, after: str | None) -> str:
    """The note naming the target column a table uses and how it was chosen (``count``:
    the columns it was chosen among; ``after``: the name of a row-index column dropped
    before them, which a number does not count)."""
    if target is None or (isinstance(target, str) and not target.strip()):
        return (f"target: column {name!r}, the last of {count} (choose another with "
                f"{data_option('target', 'NAME')})")
    if isinstance(target, str) and target.strip() == name:
        return f"target: column {name!r}"
    skipped = ("" if after is None else f", not counting the dropped row index {after!r}"
               if after else ", not counting the dropped row-index first column")
    return (f"target: column {name!r} (target={str(target).strip()} counts the columns from "
            f"0{skipped}; or name it: {data_option('target', name)})")


def split_target(path: Path, M: np.ndarray, names: list[str], target: str | int | None,
                  header: bool) -> Table:
    if M.shape[1] < 2:
        raise DataError(
            "the data have only one column",
            "a data set needs at least one feature column and one target column", path=path)
    j = pick_target(names, target, path, header)
    keep = [i for i in range(M.shape[1]) if i != j]
    # the features left of or right of the target: a view, not a copy (a memory-mapped
    # array stays on its pages)
    X = M[:, 1:] if j == 0 else M[:, :-1] if j == M.shape[1] - 1 else M[:, keep]
    return Table(X, np.array(M[:, j]), [names[i] for i in keep], names[j],
                 columns=list(names), target_note=target_note(names[j], target, len(names),
                                                              None),
                 encoding=numeric_encoding([names[i] for i in keep], names[j], names))


def apply_nan_policy(table: Table, policy: str, path: Path, dropped: Sequence[str] = ()
                     ) -> Table:
    """Drop the rows with missing or non-finite values (``policy="drop"``: marked in
    :attr:`Table.dropped`, left in place so that no row number shifts), keep the
    missing (NaN) feature cells for the split to fill with the training means
    (``policy="fill"``; a missing target or an infinite value is still refused), or
    refuse them naming the columns and the options that help (``dropped``: the columns
    the user already leaves out, kept in the option offered)."""
    bad = ~np.isfinite(table.y)
    step = 1 << 16  # in row blocks: no n × p temporary
    fill = policy == "fill"
    for start in range(0, len(bad), step):
        block = table.X[start:start + step]
        bad[start:start + step] |= (np.isinf(block) if fill else ~np.isfinite(block)
                                    ).any(axis=1)
    if not bad.any():
        return table
    if fill:
        _refuse_unfillable(table, bad, path, dropped)
    if policy == "drop":
        kept = int((~bad).sum())
        if kept == 0:
            raise DataError("every row has a missing or non-finite value", "clean the file",
                            path=path)
        table.notes.append(f"dropped {int(bad.sum())} of {bad.size} rows with missing or "
                           "non-finite values")
        # marked, not removed: the rows keep their numbers, and so their split keys
        table.dropped = np.flatnonzero(bad)
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
        f"({data_option('drop_nan', 'true')})" + _drop_those_columns(table, dropped),
        path=path, line=line_no,
    )


def _refuse_unfillable(table: Table, bad: np.ndarray, path: Path,
                       dropped: Sequence[str]) -> None:
    """The refusal of rows whose target is missing or which hold an infinite value:
    neither can be filled by a training mean."""
    row = int(np.flatnonzero(bad)[0])
    line_no = int(table.lines[row]) if table.lines is not None else None
    y_bad = int((~np.isfinite(table.y)).sum())
    inf = [name for name, k in zip(table.feature_names, _infinite_counts(table), strict=True)
           if k]
    raise unfillable_refusal("" if line_no is None else None, row, y_bad, bad.size,
                             table.target_name, inf, int(bad.sum()) > 1, path, line_no,
                             "" if y_bad else _drop_those_columns(table, dropped, inf))


def unfillable_refusal(where: str | None, row: int, y_bad: int, rows: int, target: str,
                       infinite: Sequence[str], several: bool, path: str | Path | None,
                       line: int | None = None, offer: str = "") -> DataError:
    """The error for rows whose target is missing or which hold an infinite value (a
    missing feature is filled by its training mean, but these cannot be): ``row`` the
    0-based row of the first, named as ``where`` says (None: by its file ``line``; empty:
    ``row N:``; else that text), ``y_bad`` rows with a bad target of ``rows``,
    ``infinite`` the columns with an infinite value, ``offer`` the columns to leave out."""
    said = []
    if y_bad:
        said.append(f"the target {target!r} is missing or non-finite in {y_bad} of "
                    f"{rows} rows")
    if infinite:
        said.append("infinite values in " + ", ".join(repr(c) for c in
                                                      infinite[:MAX_NAMED_COLUMNS])
                    + (" …" if len(infinite) > MAX_NAMED_COLUMNS else ""))
    head = "" if where is None else where or f"row {row + 1}: "
    return DataError(
        f"{head}{'; '.join(said)} ({'the first here' if several else 'here'}); "
        "a missing feature is filled by its training mean, but these cannot be",
        "clean the file, or choose to drop rows with missing values "
        f"({data_option('drop_nan', 'true')})" + offer,
        path=path, line=line)


def drop_columns_offer(names: Sequence[str], dropped: Sequence[str] = ()) -> str:
    """``, or leave out the columns that have them (drop_columns=a,b)`` for at most
    :data:`MAX_DROPPED_COLUMNS` columns, else empty."""
    if not names or len(names) > MAX_DROPPED_COLUMNS:
        return ""
    return (f", or leave out the column{'s' if len(names) > 1 else ''} that "
            f"{'have' if len(names) > 1 else 'has'} them "
            f"({data_option('drop_columns', ','.join([*dropped, *names]))})")


def _infinite_counts(table: Table) -> np.ndarray:
    counts = np.zeros(table.X.shape[1], dtype=np.int64)
    step = 1 << 16
    for start in range(0, table.X.shape[0], step):
        counts += np.isinf(table.X[start:start + step]).sum(axis=0)
    return counts


#: The missing-value message offers to drop the columns when there are at most this many.
MAX_DROPPED_COLUMNS = 5


def _drop_those_columns(table: Table, dropped: Sequence[str],
                        names: Sequence[str] | None = None) -> str:
    """``, or leave out the columns that have them (drop_columns=a,b)`` when a few
    feature columns hold every missing value (not the target), else empty. ``names``:
    the columns (default: each with a missing or non-finite value)."""
    if not np.isfinite(table.y).all():
        return ""
    if names is None:
        names = [table.feature_names[j] for j in np.flatnonzero(_missing_counts(table))]
    return drop_columns_offer(names, dropped)


def _missing_counts(table: Table) -> np.ndarray:
    """Missing or non-finite values per feature column."""
    counts = np.zeros(table.X.shape[1], dtype=np.int64)
    step = 1 << 16  # in row blocks: no n × p temporary
    for start in range(0, table.X.shape[0], step):
        counts += (~np.isfinite(table.X[start:start + step])).sum(axis=0)
    return counts


#: At most this many columns are named in the missing-value message.
MAX_NAMED_COLUMNS = 20


def _missing_by_column(table: Table) -> str:
    """``'a' 2, 'c' 1, target 't' 4``: each column with missing or non-finite values and
    its own count of them, in file order (at most :data:`MAX_NAMED_COLUMNS`)."""
    counts = _missing_counts(table)
    parts = [f"{table.feature_names[j]!r} {int(counts[j])}" for j in np.flatnonzero(counts)]
    y_bad = int((~np.isfinite(table.y)).sum())
    if y_bad:
        parts.append(f"target {table.target_name!r} {y_bad}")
    more = len(parts) - MAX_NAMED_COLUMNS
    return ", ".join(parts[:MAX_NAMED_COLUMNS]) + (f", … ({more} more columns)"
                                                   if more > 0 else "")



# ------------------------------------------------------------------------------------
# Numbers too large for any kernel
# ------------------------------------------------------------------------------------
#: Values beyond this magnitude are refused: kernels square differences of features and
#: the standardisation and the errors square deviations, and beyond about 1.3e154 one
#: square leaves float64's range (about 1.8e308) — the kernel, mean or error turns into
#: inf or NaN; 1e150 leaves a margin for sums of many squares. Below overflow, one such
#: value still swamps its column's scale. Real measurements never come near it; a damaged
#: file's bytes read as numbers often do (a random 8-byte pattern is beyond it about one
#: time in four).
MAX_MAGNITUDE = 1e150
_MAGNITUDE_SAID = "1e150"  # as a message writes it


def huge_cells(A: np.ndarray, limit: float = MAX_MAGNITUDE
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """Where a 1-D or 2-D array holds finite values beyond ``±limit``: per column, their
    count and the 0-based row of the first (−1 where none); None when there are none.
    NaN and infinite cells are not counted (the missing-value policy handles them, and
    a NaN feature is filled at the split).

    In row blocks of half a megabyte, each scanned by NaN-ignoring maximum and minimum
    reductions (no temporary array; the second pass finds the block in the processor's
    cache: half the time of blocks ten times larger); only a block that reaches the limit
    is looked at cell by cell."""
    M = A.reshape(-1, 1) if A.ndim == 1 else A
    counts = np.zeros(M.shape[1], dtype=np.int64)
    first = np.full(M.shape[1], -1, dtype=np.int64)
    step = max(1, (1 << 16) // max(M.shape[1], 1))  # rows of 2¹⁶ cells: no n × p temporary
    for start in range(0, M.shape[0], step):
        block = M[start:start + step]
        if block.size == 0 or (np.fmax.reduce(block, axis=None) <= limit
                               and np.fmin.reduce(block, axis=None) >= -limit):
            continue  # (an all-NaN block compares False: looked at, nothing found)
        big = np.isfinite(block)
        big &= np.abs(block) > limit
        hit = big.any(axis=0)
        if not hit.any():
            continue
        new = hit & (first < 0)
        first[new] = start + big[:, new].argmax(axis=0)
        counts += big.sum(axis=0)
    return (counts, first) if counts.any() else None


def refuse_huge_values(path: str | Path, X: np.ndarray, y: np.ndarray,
                       feature_names: Sequence[str], target_name: str, *,
                       lines: np.ndarray | None = None, start: int | None = None,
                       within: str = "this file", dropped: Sequence[str] = ()) -> None:
    """Refuse feature or target values beyond ±:data:`MAX_MAGNITUDE` with a
    :class:`~kernel_lab.core.errors.DataError` naming the file, the column with the
    earliest one, its row (``lines``: the file line of each row, for a text table;
    ``start``: the global index of the first row of a partition, said beside the row's
    1-based place ``within`` it), its count and the other columns' counts.

    The target is checked too: it is squared in every error and risk (a value this large
    overflows them as a feature overflows the kernel), and it is a damaged cell just as
    in a feature — refused here, the user learns of it before a run's numbers turn into
    inf and NaN, not after."""
    said: list[tuple[int, str, int, float, str]] = []  # row, label, count, value, column
    for A, names in ((X, list(feature_names)), (y.reshape(-1, 1), [""])):
        found = huge_cells(A)
        if found is None:
            continue
        for j in np.flatnonzero(found[0]):
            row = int(found[1][j])
            label = f"column {names[j]!r}" if names[j] else f"the target column {target_name!r}"
            said.append((row, label, int(found[0][j]), float(A[row, j]), names[j]))
    if not said:
        return
    said.sort(key=lambda s: s[0])  # stable: in one row, features first, in file order
    row, label, count, value, column = said[0]
    line = None if lines is None else int(lines[row])
    where = ("" if line is not None else f"row {row + 1:,}: " if start is None else
             f"row {start + row:,} (row {row + 1:,} of {within}): ")
    others = ", ".join(f"{s[1]} ({s[2]:,})" for s in said[1:MAX_NAMED_COLUMNS])
    more = len(said) - MAX_NAMED_COLUMNS
    also = (f"; also {others}" + (f", … ({more} more columns)" if more > 0 else "")
            if others else "")
    leave = (f", or leave the column out "
             f"({data_option('drop_columns', ','.join([*dropped, column]))})" if column
             else f", or choose another target ({data_option('target', 'NAME')})")
    raise DataError(
        f"{where}{label} holds {count:,} value{'' if count == 1 else 's'} beyond "
        f"±{_MAGNITUDE_SAID} in magnitude ({'the first ' if count > 1 else ''}here: "
        f"{value:.3g}){also}: numbers this large break "
        "every kernel (their squares reach the end of the floating-point range, about "
        "1.8e308); they are the mark of a damaged file (bytes written over), not of "
        "measurements",
        "copy or export the file again from its source if it was damaged, or correct those "
        f"cells{leave}", path=path, line=line)


# ------------------------------------------------------------------------------------
# CSV / TSV / whitespace text
# ------------------------------------------------------------------------------------
def finish_matrix(path: Path, names: list[str], M: np.ndarray, first_name: str,
                   header: bool, target: str | int | None, options: ReadOptions,
                   lines: np.ndarray | None) -> Table:
    """:func:`finish_table` for an all-numeric matrix, without splitting it into columns
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
    t = pick_target(kept, target, path, header)
    j = cols[t]
    picked = options.columns.pick(kept, t, path)
    left_out = options.columns.left_out(kept, t, picked)
    if left_out:
        notes.append(left_out)
    feats = cols[picked]
    contiguous = feats.size and np.array_equal(feats, np.arange(feats[0], feats[-1] + 1))
    X = M[:, feats[0]:feats[-1] + 1] if contiguous else M[:, feats]  # a view: no copy
    encoding = numeric_encoding([names[c] for c in feats], names[j], kept,
                                choice=options.columns.to_options())
    return Table(X, M[:, j].copy(), [names[c] for c in feats], names[j], notes, lines=lines,
                 columns=kept, target_note=target_note(kept[t], target, len(kept),
                                                       None if note is None else first_name),
                 encoding=with_index(encoding, None if note is None else names[0]))


def table_from_rows(path: Path, rows: list[list[str]], line_nos: list[int],
                     target: str | int | None, options: ReadOptions, delim: str) -> Table:
    """A table from rows of text cells (a header row when the first row names the
    columns, :func:`is_header`): number columns as they are, text columns as categories
    (see :class:`ReadOptions`), a row-index first column dropped."""
    first = [c.strip() for c in rows[0]]
    names, header, body, body_lines = header_rows(path, rows, line_nos, delim)
    options.report(0.6, f"read {len(body):,} data rows"
                        + (" (below the header row)" if header else ""))
    try:
        M = np.array(body, dtype=np.float64)
        columns: list[np.ndarray | None] = list(M.T)
    except ValueError:
        columns = _typed_columns(path, body, body_lines, names, first[0], header, target,
                                 options)
    return finish_table(path, names, columns, first[0], header, target, options,
                        np.asarray(body_lines))


def used_columns(path: Path, names: list[str], first: np.ndarray | None, first_name: str,
                 header: bool, target: str | int | None, options: ReadOptions
                 ) -> tuple[set[int], int | None]:
    """The positions in ``names`` of the columns a table needs — the target, the feature
    columns chosen (:class:`~kernel_lab.data.columns.ColumnChoice`) and a row-index first
    column (``first``: the first column typed, None when it is not numbers) — and the
    target's (None when there are too few columns: the pipeline then says so). A reader
    types (or reads) only these, so a column left out is never checked."""
    start = 1 if _index_note(names, _first_or_text(first), first_name, header, target,
                             options) else 0
    kept = names[start:]
    if len(kept) < 2:
        return set(range(len(names))), None
    t = pick_target(kept, target, path, header)
    picked = options.columns.pick(kept, t, path)
    return {*range(start), start + t, *(start + i for i in picked)}, start + t


def _first_or_text(first: np.ndarray | None) -> np.ndarray:
    """The first column, or an empty text column when it could not be typed (then it is
    no numeric id)."""
    return np.empty(0, dtype=object) if first is None else first


def finish_table(path: Path, names: list[str], columns: list[np.ndarray | None],
                 first_name: str, header: bool, target: str | int | None,
                 options: ReadOptions, lines: np.ndarray | None) -> Table:
    """Drop a row-index first column, split off the target and encode text (the text
    readers and :mod:`~kernel_lab.data.parquet` end here; ``lines`` None: the format has
    no lines, rows are named by number; a column None was not read: the column choice
    leaves it out, see :func:`used_columns`)."""
    note = _index_note(names, _first_or_text(columns[0]), first_name, header, target,
                       options)
    names0 = names[0]  # the row index as the readers name it ("column 1": no header cell)
    if note is not None:
        names, columns = names[1:], columns[1:]
    table = encode_columns(path, names, columns, target, options, header,
                           after=None if note is None else first_name)
    table.notes[:0] = [] if note is None else [note]
    table.lines = lines
    table.columns = list(names)
    if table.encoding is not None:
        table.encoding = with_index(table.encoding, None if note is None else names0)
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


def _typed_columns(path: Path, body: list[list[str]], lines: list[int], names: list[str],
                   first_name: str, header: bool, target: str | int | None,
                   options: ReadOptions) -> list[np.ndarray | None]:
    """The columns the table uses (:func:`used_columns`) typed by :func:`typed_column`;
    None for those left out."""
    first = None
    if names:
        try:
            first = typed_column(path, [row[0] for row in body], lines, names[0], 1)
        except DataError:
            first = None  # typed again below, and refused, if it is used
    used, j = used_columns(path, names, first, first_name, header, target, options)
    columns: list[np.ndarray | None] = []
    for c, name in enumerate(names):
        if c not in used:
            columns.append(None)
            continue
        options.report(0.6 + 0.3 * c / len(names), f"column {c + 1} of {len(names)}: {name}")
        columns.append(first if c == 0 and first is not None and c != j else
                       typed_column(path, [row[c] for row in body], lines, name, c + 1,
                                    target=c == j))
    return columns


def typed_column(path: Path, cells: list[str], lines: Sequence[int] | None, name: str,
                 column: int, *, target: bool = False) -> np.ndarray:
    """A column of text cells as float64 (numbers; missing values NaN) or, when most of
    its filled cells are not numbers, as an object array of stripped strings (None:
    missing). So is a column of numbers with a few text cells (under one in eight) that
    takes at most :data:`CODED_LEVELS` values in all (codes such as ``4, 6, 8, rotary``).
    Any other column of numbers with text cells is an error at the first of them (a
    typo), naming its line (``lines``: the 1-based file line of each cell) or, without
    lines, its 1-based row, the column (``column``: its number) and the option that
    leaves the column out."""
    try:
        return np.array(cells, dtype=np.float64)
    except ValueError:
        pass
    values = np.empty(len(cells))
    text_at: list[int] = []
    for r, cell in enumerate(cells):
        try:
            values[r] = float(cell)
        except ValueError:
            if cell.strip().lower() in MISSING:
                values[r] = np.nan
            else:
                values[r] = np.nan
                text_at.append(r)
    filled = int(np.isfinite(values).sum()) + len(text_at)
    if not text_at:  # numbers and missing values
        return values

    def where(r: int) -> tuple[str, int | None]:
        return ("", lines[r]) if lines is not None else (f"row {r + 1}: ", None)

    coded = False
    if 8 * len(text_at) < filled:  # a few text cells: codes such as 4, 6, 8, rotary?
        levels = {cells[r].strip() for r in text_at}
        levels.update(np.unique(values[np.isfinite(values)])[:CODED_LEVELS + 1].tolist())
        coded = len(levels) <= CODED_LEVELS
    if 2 * len(text_at) > filled or coded:  # categories …
        odd = [r for r in text_at if _looks_numeric(cells[r])]
        if 2 * len(odd) > len(text_at):  # … unless they are numbers written oddly
            r = odd[0]
            row, line = where(r)
            raise DataError(
                f"{row}{cells[r].strip()!r} in column {name!r} looks like a number written "
                "with a decimal comma, a thousands separator or a percent sign",
                "save the table with '.' as the decimal point and no separators or "
                "% signs (in a spreadsheet: plain number format)",
                path=path, line=line, column=column)
        col = np.empty(len(cells), dtype=object)
        for r, cell in enumerate(cells):
            v = cell.strip()
            col[r] = None if v.lower() in MISSING else v
        return col
    r = text_at[0]
    row, line = where(r)
    raise DataError(
        f"{row}{cells[r].strip()!r} in {'the target ' if target else ''}column {name!r} "
        "is not a number",
        (f"fix this cell if it is a typo, or choose another target "
         f"({data_option('target', 'NAME')})" if target else
         f"leave the column out ({data_option('drop_columns', name)}), or fix this cell if "
         "it is a typo") + " (a column of mostly text, or of a few values such as codes, is "
        "read as categories)", path=path, line=line, column=column)


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


def encode_columns(path: Path, names: list[str], columns: list[np.ndarray | None],
                   target: str | int | None, options: ReadOptions, header: bool, *,
                   after: str | None = None) -> Table:
    """Split off the target and turn text columns into numbers: a text target into
    classes (two: ±1; more: codes 0 … K−1 with their names), text features into one 0/1
    column per value (or dropped), each said in the table's notes, the first of which
    names the target (``after``: a row-index column dropped before ``names``). Only the
    feature columns :attr:`ReadOptions.columns` chooses are used (the others may be
    None: not read)."""
    if len(names) < 2:
        raise DataError(
            "the data have only one column",
            "a data set needs at least one feature column and one target column", path=path)
    j = pick_target(names, target, path, header)
    picked = options.columns.pick(names, j, path)
    notes: list[str] = []
    left_out = options.columns.left_out(names, j, picked)
    if left_out:
        notes.append(left_out)
    y, classes = columns[j], None
    assert y is not None  # the target is always read
    typed_target = target_encoding(names[j])
    if y.dtype == object:
        typed_target = target_encoding(names[j], _levels(y))
        y, classes, note = encode_target(path, names[j], y)
        notes.append(note)
    feats, feat_names = [], []
    typed: list[dict[str, Any]] = []
    dropped: list[dict[str, str]] = []
    for i in picked:
        name, col = names[i], columns[i]
        assert col is not None  # a chosen column is always read
        if col.dtype != object:
            feats.append(col)
            feat_names.append(name)
            typed.append(number_feature(name))
            continue
        levels = _levels(col)
        missing = np.array([v is None for v in col])
        coded = _coded_note(name, levels)
        if options.text_features == "drop":
            notes.append(f"dropped text column {name!r} (text_features=drop)")
            dropped.append({"column": name, "why": "text_features=drop"})
        elif len(levels) > MAX_LEVELS or (len(levels) == len(col) and len(col) > 2):
            why = "one per row" if len(levels) == len(col) else f"more than {MAX_LEVELS}"
            notes.append(f"dropped text column {name!r}: {len(levels)} distinct values "
                         f"({why}), too many to encode")
            dropped.append({"column": name, "why": f"{len(levels)} distinct values ({why})"})
        elif len(levels) <= 1 and not missing.any():
            notes.append(f"dropped text column {name!r}: the same value "
                         f"{levels[0] if levels else ''!r} in every row (a constant says "
                         "nothing)")
            dropped.append({"column": name, "why": "the same value in every row"})
        else:
            typed.append(onehot_feature(name, levels, bool(missing.any())))
            for level in levels:
                feats.append(np.array([v == level for v in col], dtype=np.float64))
                feat_names.append(f"{name}={level}")
            extra = ""
            if missing.any():  # an empty category cell is a category of its own
                feats.append(missing.astype(np.float64))
                feat_names.append(f"{name}=(missing)")
                extra = f" and one for its {int(missing.sum())} empty cells"
            notes.append(f"one-hot encoded {'column' if coded else 'text column'} {name!r} "
                         f"into {_count(len(levels), 'column')} ({_shown(levels)}){extra}"
                         + (f"; {coded}" if coded else ""))
    if not feats:
        raise DataError("no feature column is left: every column besides the target is "
                        "text that was dropped",
                        f"load with {data_option('text_features', 'onehot')}, or add numeric "
                        "columns"
                        if options.text_features == "drop" else
                        f"add numeric columns (text with one value per row or more than "
                        f"{MAX_LEVELS} values is not encoded)", path=path)
    X = np.column_stack(feats)
    encoding = table_encoding(names, typed, typed_target, dropped=dropped,
                              left_out=[names[i] for i in range(len(names))
                                        if i != j and i not in set(picked)],
                              choice=options.columns.to_options())
    return Table(X, np.asarray(y, dtype=np.float64), feat_names, names[j], notes,
                 classes=classes, target_note=target_note(names[j], target, len(names), after),
                 encoding=encoding)


def _count(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def _coded_note(name: str, levels: list[str]) -> str | None:
    """For a column of mostly numbers with a few text values (``4, 6, 8, rotary``), read
    as categories: a note naming the text values and how to leave the column out; else
    None."""
    text = [v for v in levels if not is_number(v)]
    if not text or 2 * len(text) >= len(levels):
        return None
    return (f"its values are numbers but for {_shown([repr(v) for v in text], 3)}, so it "
            f"is read as categories (fix the cell, or leave the column out: "
            f"{data_option('drop_columns', name)})")
