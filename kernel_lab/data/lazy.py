"""A Parquet folder or a Zarr store as the data of a run: loaded whole when it fits, else
kept in its partitions.

:func:`open_run_data` decides, from the source's ``partitions`` option:

- ``auto`` (default): the rows are read into one ordinary table — every experiment then
  works on them — when they take at most :data:`WHOLE_BYTES`; otherwise they stay in their
  partitions. The rule is the data's size alone, so a command gives the same numbers on
  every machine, under any load and on every backend;
- ``keep``: they stay in their partitions (a :class:`~kernel_lab.core.parts.PartitionedData`:
  the split is defined per row by the seed — among the rows kept, with ``drop_nan`` —
  missing cells are filled with the training means and the standardisation uses column
  statistics reduced over the partitions (one pass), constant columns keep scale 1, and
  the computations run where ``make_parts`` says — this process or a cluster);
- ``load``: they are read into one table (refused when they do not fit).

With ``subsample=N`` a seeded sample of N rows (chosen per row by its key, so the same
rows wherever the data live; for a class target, each class its share) is gathered into
an ordinary table: the way to run the
experiments that need an exact n × n matrix on data too large for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from kernel_lab.core import rowkeys
from kernel_lab.core.dataset import Dataset
from kernel_lab.core.errors import DataError, ParameterError, data_option
from kernel_lab.core.memory import format_bytes, memory_budget_bytes
from kernel_lab.core.parts import (
    ColumnStats,
    LocalParts,
    Part,
    PartitionedData,
    PartMap,
    RowPlan,
    column_stats,
    keyed_subset,
    nonfinite_rows,
    prepared_plan,
    take_rows,
)
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import align_parts, row_block
from kernel_lab.data.columns import split_names
from kernel_lab.data.leakage import leakage_warning
from kernel_lab.data.split import (
    class_shares,
    dataset_from_table,
    missing_warning,
    refuse_empty_columns,
)
from kernel_lab.data.table import Table, drop_columns_offer, unfillable_refusal

#: A partitioned source is read whole only if this many copies of it fit the budget (the
#: table, the split's copies and the standardised arrays).
COPIES = 4
#: ``partitions=auto`` reads a source whole up to this size (rows × (columns + 1) × 8).
WHOLE_BYTES = 256 * 2**20

PARTITION_CHOICES = ("auto", "keep", "load")

MakeParts = Callable[[Sequence[Any]], PartMap]


def is_partitioned_path(path: str) -> bool:
    """Whether ``path`` is a folder (of Parquet files, or a Zarr store): folders are read
    as partitioned data, and :func:`~kernel_lab.data.partitioned.open_partitioned` says
    what is wrong with one that is neither."""
    return os.path.isdir(path)


def open_run_data(path: str, options: Mapping[str, Any], *, seed: int, name: str,
                  make_parts: MakeParts | None = None,
                  progress: Progress | None = None) -> Dataset | PartitionedData:
    """The data of a run from a Parquet folder or Zarr store (see the module docstring).

    ``options`` are the source's resolved file options (target, test_fraction,
    standardize, subsample, partitions); ``make_parts(parts)`` gives the
    :class:`~kernel_lab.core.parts.PartMap` the computations run on (default: this
    process, one partition at a time)."""
    from kernel_lab.data.partitioned import open_partitioned

    # absolute before the partitions travel: a cluster's workers do not share this
    # process's working folder
    path = os.path.abspath(path)
    source = open_partitioned(path, target=options.get("target") or None,
                              features=options.get("features") or None,
                              drop=options.get("drop_columns") or None)
    how = options.get("partitions", "auto")
    if how not in PARTITION_CHOICES:
        raise ParameterError(f"partitions={how!r}: choose one of {', '.join(PARTITION_CHOICES)}")
    # parts of whole canonical row blocks: the numbers then do not depend on the files' cut
    mapper = (make_parts or LocalParts)(align_parts(source.parts, source.n, row_block()))
    subsample = int(options.get("subsample") or 0)
    fits = COPIES * source.nbytes <= memory_budget_bytes()
    if subsample > 0:
        table = sample_table(source, mapper, subsample, seed, progress,
                             drop_nan=bool(options.get("drop_nan")))
    elif how == "load" or (how == "auto" and source.nbytes <= WHOLE_BYTES):
        if not fits:
            raise DataError(
                f"{source.n:,} rows × {source.p + 1} columns ({format_bytes(source.nbytes)}) "
                f"do not fit the memory budget ({format_bytes(memory_budget_bytes())}) "
                f"{COPIES} times over", "keep the data in its partitions "
                f"({data_option('partitions', 'keep')}) or use a seeded sample "
                f"({data_option('subsample', 'N')})", path=path)
        table = source.to_table(nan_policy="drop" if options.get("drop_nan") else "fill")
    else:
        return partitioned_data(source, mapper, options, seed=seed, name=name,
                                progress=progress)
    return dataset_from_table(table, name=name, test_fraction=options["test_fraction"],
                              dropped=split_names(options.get("drop_columns") or None),
                              rng=np.random.default_rng(seed),
                              standardize=options["standardize"])


def partitioned_data(source: Any, parts: PartMap, options: Mapping[str, Any], *, seed: int,
                     name: str, progress: Progress | None = None) -> PartitionedData:
    """The source kept in its partitions: the keyed split (among the rows kept, with
    ``drop_nan``), and one pass for the training rows' column statistics, reduced over
    the partitions — the means that fill missing cells and, optionally, the scaling —
    as :func:`~kernel_lab.data.split.dataset_from_table` does in memory."""
    dropped_columns = split_names(options.get("drop_columns") or None)
    notes = [*source.notes, f"kept in {len(source.parts)} partitions ({source.n:,} rows, "
                            f"{format_bytes(source.nbytes)}): the split is chosen per row "
                            "from the seed"]
    first = None if progress is None else progress.sub(0.0, 0.5)
    dropped = None
    if options.get("drop_nan"):
        dropped = _dropped_rows(source, parts, first, notes)
        first = None if progress is None else progress.sub(0.5, 1.0)
    plan = RowPlan.split(seed, source.n, float(options["test_fraction"]), source=name,
                         dropped=dropped)
    stats = column_stats(parts, plan, first)
    _refuse_unfillable(source, stats, dropped_columns)
    refuse_empty_columns([source.feature_names[j] for j in
                          np.flatnonzero((stats.missing > 0) & (stats.count == 0))],
                         dropped_columns)
    standardize = bool(options.get("standardize", True))
    plan, constant = prepared_plan(plan, stats, standardize)
    if standardize:
        notes.append("standardised by the training rows' column statistics (reduced over "
                     "the partitions)")
    if constant.size:
        named = ", ".join(repr(source.feature_names[j]) for j in constant[:8])
        notes.append(f"kept the constant column{'s' if constant.size > 1 else ''} {named}"
                     f"{' …' if constant.size > 8 else ''} with scale 1: the same value "
                     "in every training row, nothing to scale by")
    data = PartitionedData(parts, plan, list(source.feature_names), source.target_name,
                           name=name, notes=notes, task=source.task,
                           classes=getattr(source, "classes", None))
    if data.task != "multiclass":  # class codes have no order to rank
        data.warnings = _sampled_leakage(data, dropped_columns)
    filled = missing_warning(stats.missing, source.feature_names,
                             [*source.feature_names, source.target_name], dropped_columns)
    if filled:
        data.warnings.insert(0, filled)
    return data


def _dropped_rows(source: Any, parts: PartMap, progress: Progress | None,
                  notes: list[str]) -> np.ndarray:
    """The rows ``drop_nan`` leaves out (a pass over the partitions), said in ``notes``;
    refused when no row is left."""
    dropped = nonfinite_rows(parts, progress)
    if dropped.size == source.n:
        raise DataError("every row has a missing or non-finite value", "clean the files",
                        path=source.source)
    if dropped.size:
        notes.append(f"dropped {dropped.size} of {source.n} rows with missing or "
                     "non-finite values")
    return dropped


def _refuse_unfillable(source: Any, stats: ColumnStats, dropped: Sequence[str]) -> None:
    """Refuse a missing target or an infinite value (neither can be filled by a training
    mean), naming the partition and row of the first, as a loaded table does."""
    if stats.first_bad is None:
        return
    row, start, where = stats.first_bad
    assert stats.infinite is not None
    infinite = [name for name, k in zip(source.feature_names, stats.infinite, strict=True)
                if k]
    raise unfillable_refusal(
        f"{where}: row {row:,} (row {row - start + 1:,} of this partition): ", row,
        stats.bad_target, stats.rows, source.target_name, infinite, stats.several, None,
        offer="" if stats.bad_target else drop_columns_offer(infinite, dropped))


#: Training rows of partitioned data the leakage check ranks (a seeded sample).
LEAKAGE_ROWS = 20_000


def _sampled_leakage(data: PartitionedData, dropped: Sequence[str]) -> list[str]:
    """The leakage warning of data kept in partitions, from a seeded sample of at most
    :data:`LEAKAGE_ROWS` training rows (chosen per row by its key: the same rows on any
    backend)."""
    k = min(LEAKAGE_ROWS, data.n_train)
    index = keyed_subset(data.parts, data.plan, rowkeys.LEAKAGE, k)
    got = take_rows(data.parts, data.plan, index)
    said = (f"the {k:,} training rows" if k == data.n_train else
            f"a random {k:,} of the {data.n_train:,} training rows (chosen per row from the "
            "seed)")
    warning = leakage_warning(got.X, got.y, data.feature_names, data.target_name,
                              rows_said=said, dropped=dropped)
    return [] if warning is None else [warning]


def sample_table(source: Any, parts: PartMap, rows: int, seed: int,
                 progress: Progress | None = None, *, drop_nan: bool = False) -> Table:
    """A seeded sample of ``rows`` rows gathered into an ordinary table (in file order):
    the rows with the smallest keys of the subsample stream — for a class target, the
    smallest keys within each class, each class keeping its share (as
    :func:`~kernel_lab.data.split.subsample_table` does in memory). With ``drop_nan`` the
    rows with a missing or non-finite value are left out first (one pass); missing feature
    cells stay missing (the split fills them)."""
    notes = list(source.notes)
    dropped = _dropped_rows(source, parts, progress, notes) if drop_nan else None
    total = source.n - (0 if dropped is None else dropped.size)
    if rows >= total:
        table = source.to_table(nan_policy="drop" if drop_nan else "fill")
        table.notes.append(f"subsample={rows}: all {total:,} rows used (no more in the "
                           "table)")
        return table
    # every row a "training" row; NaN as the fill value keeps missing cells missing
    everything = RowPlan(int(seed), source.n, 0, None, fill=np.full(source.p, np.nan),
                         dropped=dropped)
    if source.task in ("classification", "multiclass"):
        index = _stratified(parts, everything, rows)
    else:
        index = keyed_subset(parts, everything, rowkeys.SUBSAMPLE, rows)
    got = take_rows(parts, everything, index)
    if got.index.size != index.size:  # pragma: no cover - a part read fewer rows than listed
        raise DataError(f"read {got.index.size} of the {index.size} sampled rows",
                        "check that the files were not changed while reading",
                        path=getattr(source, "source", None))
    classes = getattr(source, "classes", None)
    return Table(got.X, got.y, list(source.feature_names), source.target_name,
                 notes=[*notes, f"used a random {rows:,} of {total:,} rows "
                                f"(subsample={rows}, seed {seed}, chosen per row)"],
                 classes=None if classes is None else list(classes),
                 columns=[*source.feature_names, source.target_name])


def _target(part: Part, plan: RowPlan) -> tuple[np.ndarray, np.ndarray]:
    """A part's kept rows: their global indices and target values (the target column
    alone is read, unless the part was kept in memory whole)."""
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
    keeps its share (:func:`~kernel_lab.data.split.class_shares`), its rows those with
    the smallest subsample keys within the class. Two passes over the target column."""
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
