"""From a table to a data set, by the code data kept in partitions use.

- :func:`subsample_table`: a seeded sample of a table too large for the exact methods,
  chosen per row by its key (:func:`sampled_rows`, the rule of a Parquet folder's
  ``subsample=N``; for a class target each class keeps its share);
- :func:`dataset_from_table`: the keyed split (:meth:`RowPlan.split`, rows dropped by
  ``drop_nan`` in neither set, global indices never shifting), missing feature cells filled
  with the training means and the standardisation by the training rows' column statistics
  — computed by :func:`~kernel_lab.core.rows.prepare.column_stats` over the canonical blocks
  of the table seen as one part, the very code a folder's partitions go through, so the
  same rows give the same bits wherever they live. A clean table (float64, every value
  present and finite: what a numeric CSV gives) is gathered once: each canonical block's
  training rows are copied into the C-ordered training array and its column statistics
  computed from them while they are in cache, its test rows into theirs; then both are
  scaled in place. Otherwise the statistics are a pass
  of their own and the rows are gathered (``np.take``, sorted indices) and filled and
  scaled in place. The split's keys are computed once (:func:`keyed_split`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError, data_option
from kernel_lab.core.memory import written_once
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.blocks import block_count
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.core.rows.mapreduce import (
    ArrayPart,
    LocalParts,
    Part,
    PartMap,
    RowPlan,
    Rows,
    keyed_subset,
    keyed_subset_of,
    take_rows,
    test_count,
)
from kernel_lab.core.rows.prepare import (
    ColumnStats,
    clean_block_stats,
    column_stats,
    combined_stats,
    prepared_plan,
)
from kernel_lab.data.columns import join_names
from kernel_lab.data.encoding import table_encoding_of
from kernel_lab.data.leakage import file_column, leakage_warning
from kernel_lab.data.table import Table, unfillable_refusal


def sampled_rows(parts: PartMap, plan: RowPlan, rows: int, stratified: bool) -> np.ndarray:
    """Global indices (sorted) of a seeded sample of ``rows`` of the plan's kept rows: those
    with the smallest keys of the subsample stream — with ``stratified`` (a class target),
    the smallest keys within each class, each class keeping its share
    (:func:`class_shares`). The one rule of ``subsample=N``, for a table in memory and for
    data kept in partitions."""
    if stratified:
        return _stratified(parts, plan, rows)
    return keyed_subset(parts, plan, rowkeys.SUBSAMPLE, rows)


def sampling_plan(seed: int, n: int, p: int, dropped: np.ndarray | None) -> RowPlan:
    """The plan a sample is chosen and gathered with: every kept row a "training" row, and
    NaN as the fill value, so that missing cells stay missing (the split fills them)."""
    return RowPlan(int(seed), int(n), 0, None, fill=np.full(p, np.nan), dropped=dropped)


def sample_note(rows: int, total: int, seed: int) -> str:
    return (f"used a random {rows:,} of {total:,} rows (subsample={rows}, seed {seed}, "
            "chosen per row)")


def subsample_table(table: Table, n: int, seed: int) -> Table:
    """At most ``n`` rows of the table, a seeded sample in file order (a note says so),
    chosen per row as data kept in partitions choose theirs (:func:`sampled_rows`); the
    table itself when it is not larger. A class target is sampled class by class (each
    class keeps its share, and at least one row), so no class disappears. Rows dropped
    for their missing values (``drop_nan``) are never chosen; the sample is renumbered."""
    dropped = table.dropped
    total = len(table.y) - (0 if dropped is None else dropped.size)
    if n <= 0:
        return table
    if total <= n:
        return replace(table, notes=[*table.notes, f"subsample={n}: all {total:,} rows "
                                                   "used (no more in the table)"])
    plan = sampling_plan(seed, len(table.y), table.X.shape[1], dropped)
    kept = table.y if dropped is None else table.y[plan.kept(np.arange(len(table.y)))]
    stratified = table.classes is not None or np.unique(kept).size == 2
    keep = sampled_rows(LocalParts([ArrayPart(0, 0, table.X, table.y)]), plan, n,
                        stratified)
    return replace(table, X=np.take(table.X, keep, axis=0), y=table.y[keep],
                   lines=None if table.lines is None else table.lines[keep], dropped=None,
                   notes=[*table.notes, sample_note(n, total, seed)])


def _target(part: Part, plan: RowPlan) -> tuple[np.ndarray, np.ndarray]:
    """A part's kept rows: their global indices and target values (the target column
    alone is read, unless the part is held in memory whole)."""
    index = np.arange(part.start, part.start + part.rows)
    y = part.read_target() if hasattr(part, "read_target") else part.read()[1]
    kept = plan.kept(index) & np.isfinite(y)
    return index[kept], y[kept]


def _class_counts(part: Part, plan: RowPlan) -> dict[float, int]:
    _, y = _target(part, plan)
    values, counts = np.unique(y, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist(), strict=True))


def _class_smallest(part: Part, plan: RowPlan, values: np.ndarray, shares: np.ndarray
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
    index, y = _target(part, plan)
    out = []
    for value, k in zip(values, shares, strict=True):
        rows = index[y == value]
        key = rowkeys.keys(plan.seed, rowkeys.SUBSAMPLE, rows)
        pick = rowkeys.smallest(key, rows, int(k))
        out.append((key[pick], rows[pick]))
    return out


def _stratified(parts: PartMap, plan: RowPlan, rows: int) -> np.ndarray:
    """Global indices (sorted) of a stratified keyed sample of ``rows`` rows: each class
    keeps its share (:func:`class_shares`), its rows those with the smallest subsample
    keys within the class. Two passes over the target column."""
    counts: dict[float, int] = {}
    for got in parts.map(_class_counts, plan, message="counting the classes"):
        for value, k in got.items():
            counts[value] = counts.get(value, 0) + k
    values = np.array(sorted(counts))
    shares = class_shares(np.array([counts[v] for v in values]), rows)
    per_part = parts.map(_class_smallest, plan, values, shares, message="sampling by class")
    chosen = []
    for c, k in enumerate(shares):
        key = np.concatenate([got[c][0] for got in per_part])
        index = np.concatenate([got[c][1] for got in per_part])
        chosen.append(index[rowkeys.smallest(key, index, int(k))])
    return np.sort(np.concatenate(chosen))


def class_shares(counts: np.ndarray, n: int) -> np.ndarray:
    """Rows of each class in a stratified sample of ``n`` rows: each class keeps its share
    of the ``counts`` (at least one row), the remainder going to the largest fractions;
    refused when ``n`` cannot hold every class."""
    counts = np.asarray(counts)
    total = int(counts.sum())
    if counts.size > n:
        raise DataError(f"subsample={n} rows cannot hold the {counts.size} classes of "
                        "the target", f"use at least {counts.size} rows")
    share = np.maximum(1, np.floor(counts * n / total)).astype(int)
    for k in np.argsort(-(counts * n / total - share))[: max(0, n - share.sum())]:
        share[k] += 1  # the remainder to the largest fractions
    while share.sum() > n:  # minimum-one shares pushed over: trim the largest
        share[np.argmax(share)] -= 1
    return share


def refuse_empty_columns(empty: Sequence[str], dropped: Sequence[str] = ()) -> None:
    """Refuse feature columns (``empty``: their names) that have missing cells and no
    value in any training row: nothing to fill them with."""
    if not empty:
        return
    raise DataError(
        f"the columns {', '.join(map(repr, empty))} have no value in any training row"
        if len(empty) > 1 else f"the column {empty[0]!r} has no value in any training row",
        f"leave {'them' if len(empty) > 1 else 'it'} out "
        f"({data_option('drop_columns', join_names([*dropped, *empty]))})")


def missing_warning(counts: np.ndarray, feature_names: Sequence[str],
                    columns: Sequence[str] | None = None, dropped: Sequence[str] = ()
                    ) -> str | None:
    """The warning that missing cells were filled with the training means: which columns,
    how many cells (``counts``, per column), and the options that leave those rows or
    columns out instead; None when nothing was missing."""
    cols = np.flatnonzero(counts)
    if cols.size == 0:
        return None
    names: list[str] = []
    for j in cols:
        name = file_column(feature_names[j], columns)
        if name not in names:
            names.append(name)
    said = ", ".join(f"{feature_names[j]!r} {int(counts[j])}" for j in cols)
    total = int(np.sum(counts))
    return (f"filled {total} missing value{'s' if total > 1 else ''} with each column's "
            f"mean over the training rows ({said}): to leave out the rows that have them "
            f"instead, {data_option('drop_nan', 'true')}; to leave out the "
            f"column{'s' if len(names) > 1 else ''}, "
            f"{data_option('drop_columns', join_names([*dropped, *names]))}")


def constant_note(feature_names: Sequence[str], constant: np.ndarray) -> str | None:
    """The note naming the columns (0-based numbers ``constant``) kept with scale 1."""
    if constant.size == 0:
        return None
    named = ", ".join(repr(feature_names[j]) for j in constant[:8])
    return (f"kept the constant column{'s' if constant.size > 1 else ''} {named}"
            f"{' …' if constant.size > 8 else ''} with scale 1: the same value in every "
            "training row, nothing to scale by")


#: Training rows the leakage check ranks (a seeded sample, chosen per row by its key).
LEAKAGE_ROWS = 20_000


def sampled_leakage(data: Any, dropped: Sequence[str] = (),
                    columns: Sequence[str] | None = None) -> list[str]:
    """The leakage warning of a data set (in memory or kept in partitions), from a seeded
    sample of at most :data:`LEAKAGE_ROWS` training rows (chosen per row by its key: the
    same rows wherever they live and on any backend)."""
    k = min(LEAKAGE_ROWS, data.n_train)
    if isinstance(data, Dataset):  # the rows held: the same rule on their indices, and
        # the sample taken from the training array (no pass over the parts)
        index = keyed_subset_of(data.i_train, data.plan.seed, rowkeys.LEAKAGE, k)
        at = np.searchsorted(data.i_train, index)
        got = Rows(data.X_train[at], data.y_train[at], index)
    else:
        index = keyed_subset(data.parts, data.plan, rowkeys.LEAKAGE, k)
        got = take_rows(data.parts, data.plan, index)
    said = (f"the {k:,} training rows" if k == data.n_train else
            f"a random {k:,} of the {data.n_train:,} training rows (chosen per row from the "
            "seed)")
    warning = leakage_warning(got.X, got.y, data.feature_names, data.target_name,
                              columns=columns, rows_said=said, dropped=dropped)
    return [] if warning is None else [warning]


#: Rows gathered, filled and scaled at a time (no temporary the size of the data; a
#: block of 20 columns is 1.3 MB, so each is prepared while it is in cache).
PREPARE_ROWS = 1 << 13


def _gather(X: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    """The rows ``rows`` of ``X`` into the C-ordered ``out``, as float64. A column-major X
    (what pandas' reader hands over, a view of its own block) is gathered column by
    column: ``np.take`` along the rows of such a matrix first copies it whole into
    row-major order (1M × 20: 0.28 s of CPU against 0.05 s, most of it page faults of
    that temporary); a float64 one into a column-major block at once (one ``take`` of
    every column, then one transposing copy of a block in cache: a fifth faster than a
    ``take`` per column written into a column of ``out``)."""
    if X.flags.c_contiguous:
        out[...] = np.take(X, rows, axis=0)
    elif not X.flags.f_contiguous:
        # neither order (the feature columns of a mapped .npy that holds the target too):
        # ``np.take`` would first copy the whole matrix, for every block (1M × 20: 19 s to
        # open); indexing reads only the rows asked for
        out[...] = X[rows]
    elif X.dtype == np.float64:
        # indices in range (sorted rows of the table): "clip" takes without a buffer
        out[...] = np.take(X.T, rows, axis=1, out=np.empty((X.shape[1], rows.size)),
                           mode="clip").T
    else:
        for j, column in enumerate(X.T):
            out[:, j] = column.take(rows)


#: Rows scaled as one row of the scaling's inner loop (see :func:`_prepare_block`).
SCALE_TILE = 256


def _prepare_block(block: np.ndarray, plan: RowPlan) -> None:
    """Fill and scale rows already gathered (float64, C order) in place, by the plan.

    The scaling sees :data:`SCALE_TILE` rows at a time as one row (a view), with the mean
    and scale repeated as many times: numpy's inner loop then runs over 256 × p values
    instead of p, which halves the time of the two passes (1M × 20, 2-core test machine:
    37 → 18 ms); the same subtraction and division of each value, so the same bits."""
    if plan.fill is not None:
        holes = np.isnan(block)
        if holes.any():
            np.copyto(block, np.broadcast_to(plan.fill, block.shape), where=holes)
    if plan.mean is None or plan.scale is None:
        return
    head = block.shape[0] - block.shape[0] % SCALE_TILE
    if head and block.flags.c_contiguous:
        tiled = block[:head].reshape(-1, SCALE_TILE * block.shape[1], copy=False)
        tiled -= np.tile(plan.mean, SCALE_TILE)
        tiled /= np.tile(plan.scale, SCALE_TILE)
        block = block[head:]
    block -= plan.mean
    block /= plan.scale


def prepared_rows(X: np.ndarray, y: np.ndarray, index: np.ndarray, plan: RowPlan
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``index`` (sorted global indices) of the raw ``X, y``, as float64, filled
    and scaled by the plan, in a C-ordered array — gathered and prepared in place, block
    by block: the bits of :meth:`RowPlan.prepared` on the same rows (the same operations,
    element by element)."""
    with written_once():
        A = np.empty((index.size, X.shape[1]))
    for start in range(0, A.shape[0], PREPARE_ROWS):
        block = A[start:start + PREPARE_ROWS]
        _gather(X, index[start:start + PREPARE_ROWS], block)
        _prepare_block(block, plan)
    return A, np.take(y, index).astype(np.float64, copy=False)


@dataclass
class _Gathered:
    """The raw training and test rows of a clean table, gathered once (C order), with the
    training rows' column statistics computed from them."""

    X_train: np.ndarray
    X_test: np.ndarray
    stats: ColumnStats


def _gathered_clean(X: np.ndarray, y: np.ndarray, plan: RowPlan, i_train: np.ndarray,
                    i_test: np.ndarray, finite: bool = False) -> _Gathered | None:
    """The usual table — float64, no row dropped, every value present and finite — in one
    pass: each canonical block's training rows are gathered into the training array (C
    order) and its column statistics computed from them while they are in cache (the
    bits of :func:`~kernel_lab.core.rows.prepare.column_stats`, which would gather them
    once more), its test rows into theirs. None as soon as a value is missing or not
    finite (or the table is not float64 or has dropped rows): the general path then
    counts, fills or refuses. ``finite``: every value is known to be finite (the reader
    saw it, :attr:`Table.in_range`), and is not looked at again.

    Every row is a training or a test row (none dropped), so the rows are read in order,
    :data:`PREPARE_ROWS` at a time: copied whole into a C-ordered buffer (one transposing
    copy of rows the reader holds column by column) and dealt from it to the training and
    the test array (``np.compress`` of whole rows) — 41 instead of 56 ms for 1M × 20 on
    the 2-core test machine, against gathering each set by its indices (a ``take`` per
    set, then a transposing copy, :func:`_gather`)."""
    n = plan.n
    if X.dtype != np.float64 or plan.n_dropped or i_train.size + i_test.size != n \
            or not (finite or np.isfinite(y).all()):
        return None
    B, p, count = int(plan.block), X.shape[1], block_count(n, plan.block)
    with written_once():  # filled once below, then read block by block
        X_train, X_test = np.empty((i_train.size, p)), np.empty((i_test.size, p))
    is_test = np.zeros(n, dtype=bool)
    is_test[i_test] = True
    buffer = np.empty((min(PREPARE_ROWS, n), p))
    blocks = []
    a = b = 0  # training and test rows dealt so far
    for k in range(count):
        a0, b0 = a, b
        for start in range(k * B, min((k + 1) * B, n), PREPARE_ROWS):
            stop = min(start + PREPARE_ROWS, (k + 1) * B, n)
            rows = buffer[:stop - start]
            rows[...] = X[start:stop]
            test = is_test[start:stop]
            t = int(np.count_nonzero(test))
            np.compress(test, rows, axis=0, out=X_test[b:b + t])
            np.compress(~test, rows, axis=0, out=X_train[a:a + rows.shape[0] - t])
            a, b = a + rows.shape[0] - t, b + t
        held = X_test[b0:b]
        if not finite and held.size and not (np.isfinite(held.min())
                                             and np.isfinite(held.max())):
            return None
        with np.errstate(invalid="ignore", over="ignore"):  # told by the mean below
            stats = clean_block_stats(X_train[a0:a], min(B, n - k * B))
        if not (finite or np.isfinite(stats.mean).all()):  # a NaN or an infinity here
            return None
        blocks.append(stats)
    return _Gathered(X_train, X_test, combined_stats(blocks, plan))


def _prepare_in_place(arrays: Sequence[np.ndarray], plan: RowPlan) -> None:
    """Fill and scale rows already gathered, in place, block by block (the same
    operations element by element as :func:`prepared_rows`)."""
    for A in arrays:
        for start in range(0, A.shape[0], PREPARE_ROWS):
            _prepare_block(A[start:start + PREPARE_ROWS], plan)


def keyed_split(seed: int, n: int, test_fraction: float, name: str | None = None,
                dropped: np.ndarray | None = None
                ) -> tuple[RowPlan, np.ndarray, np.ndarray]:
    """:meth:`RowPlan.split` of a table's ``n`` rows with the sorted global indices of its
    training and test rows. Without dropped rows the split keys are computed once, for
    the cut and for the rows below it (``RowPlan.split`` alone goes over the keys twice
    to find the cut without holding them; the same cut)."""
    if dropped is not None and len(dropped):
        plan = RowPlan.split(seed, n, test_fraction, source=name, dropped=dropped)
        index = np.arange(n)
        test = plan.is_test(index)
        return plan, np.flatnonzero(~test & plan.kept(index)), np.flatnonzero(test)
    n_test = test_count(n, test_fraction, name)
    if n_test == 0:
        return RowPlan(int(seed), int(n), 0, None), np.arange(n), np.zeros(0, dtype=np.intp)
    key = rowkeys.keys(seed, rowkeys.SPLIT, np.arange(n))
    cut = rowkeys.kth_key(key, n_test)
    test = key <= cut
    return (RowPlan(int(seed), int(n), n_test, int(cut)), np.flatnonzero(~test),
            np.flatnonzero(test))


def dataset_from_table(table: Table, *, name: str, test_fraction: float, seed: int,
                       standardize: bool, dropped: Sequence[str] = ()) -> Dataset:
    """Split (and optionally standardise) a loaded table as data kept in partitions are
    (see the module docstring), and warn about features that leak the target
    (:func:`sampled_leakage`; ``dropped``: the columns already left out, kept in the
    option it offers)."""
    plan, i_train, i_test = keyed_split(seed, len(table.y), test_fraction, name,
                                        table.dropped)
    clean = _gathered_clean(table.X, table.y, plan, i_train, i_test, table.in_range)
    if clean is None:
        stats = column_stats(LocalParts([ArrayPart(0, 0, table.X, table.y)]), plan)
    else:
        stats = clean.stats
    if stats.first_bad is not None:  # the readers refuse these first; a table made by hand
        assert stats.infinite is not None
        raise unfillable_refusal(
            "", stats.first_bad[0], stats.bad_target, stats.rows, table.target_name,
            [c for c, k in zip(table.feature_names, stats.infinite, strict=True) if k],
            stats.several, name)
    refuse_empty_columns([table.feature_names[j] for j in
                          np.flatnonzero((stats.missing > 0) & (stats.count == 0))], dropped)
    plan, constant = prepared_plan(plan, stats, standardize)
    if clean is None:
        X_train, y_train = prepared_rows(table.X, table.y, i_train, plan)
        X_test, y_test = prepared_rows(table.X, table.y, i_test, plan)
    else:  # scaled in place, block by block (the same operations element by element)
        X_train, X_test = clean.X_train, clean.X_test
        _prepare_in_place((X_train, X_test), plan)
        y_train = np.take(table.y, i_train).astype(np.float64, copy=False)
        y_test = np.take(table.y, i_test).astype(np.float64, copy=False)
    notes = [*([table.target_note] if table.target_note else []), *table.notes]
    if standardize:
        notes.append("features standardised with the training mean and std")
    said = constant_note(table.feature_names, constant)
    if said:
        notes.append(said)
    ds = Dataset(X_train, y_train, X_test, y_test, list(table.feature_names),
                 table.target_name, name=name, notes=notes,
                 classes=None if table.classes is None else list(table.classes),
                 columns=None if table.columns is None else list(table.columns),
                 plan=plan, i_train=i_train, i_test=i_test,
                 encoding=table_encoding_of(table))
    if table.classes is None or len(table.classes) <= 2:  # class codes have no order
        # to rank (ds.task, without a pass over the target)
        ds.warnings = sampled_leakage(ds, dropped, ds.columns)
    filled = missing_warning(stats.missing, ds.feature_names, ds.columns, dropped)
    if filled:
        ds.warnings.insert(0, filled)
    return ds
