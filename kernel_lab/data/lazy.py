"""A Parquet folder or a Zarr store as the data of a run: loaded whole when it fits, else
kept in its partitions.

:func:`open_run_data` decides, from the source's ``partitions`` option:

- ``auto`` (default): the rows are read into one ordinary table — every experiment then
  works on them — when they take at most :data:`WHOLE_BYTES` (:data:`CLUSTER_WHOLE_BYTES`
  when the run computes on a Dask cluster whose workers see the files: they then read
  the partitions themselves rather than receive the table with every task); otherwise
  they stay in their partitions. The rule decides only where the rows are held: loaded,
  they are split and prepared by the same keys and column statistics
  (:func:`~kernel_lab.data.split.dataset_from_table`), so the same rows either way;
- ``keep``: they stay in their partitions (a :class:`~kernel_lab.core.rows.PartitionedData`:
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

from kernel_lab.core.errors import DataError, ParameterError, data_option
from kernel_lab.core.memory import format_bytes, memory_budget_bytes
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import (
    ColumnStats,
    LocalParts,
    PartitionedData,
    PartMap,
    RowPlan,
    align_parts,
    column_stats,
    nonfinite_rows,
    prepared_plan,
    row_block,
    take_rows,
)
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.data.columns import split_names
from kernel_lab.data.split import (
    constant_note,
    dataset_from_table,
    missing_warning,
    refuse_empty_columns,
    sample_note,
    sampled_leakage,
    sampled_rows,
    sampling_plan,
)
from kernel_lab.data.table import Table, drop_columns_offer, unfillable_refusal

#: A partitioned source is read whole only if this many copies of it fit the budget (the
#: table, the split's copies and the standardised arrays).
COPIES = 4
#: ``partitions=auto`` reads a source whole up to this size (rows × (columns + 1) × 8).
WHOLE_BYTES = 256 * 2**20
#: ... and, when the computations run on a cluster whose workers see the files, only up to
#: this size: a table loaded here travels to a worker with every task of the run (1M × 20
#: rows, 168 MB, sent with each of ``nystrom``'s tasks filled 1 GB workers until Dask
#: paused them), while kept partitions are read by the workers, each keeping its share.
CLUSTER_WHOLE_BYTES = 16 * 2**20

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
    :class:`~kernel_lab.core.rows.PartMap` the computations run on (default: this
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
    elif how == "load" or (how == "auto" and source.nbytes <= whole_bytes(mapper, path)):
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
                              seed=seed, standardize=options["standardize"])


def whole_bytes(parts: PartMap, path: str) -> int:
    """The largest source ``partitions=auto`` reads whole when computing on ``parts``:
    :data:`CLUSTER_WHOLE_BYTES` on a cluster whose workers see ``path`` (a PartMap with
    ``workers_see``), else :data:`WHOLE_BYTES`."""
    sees = getattr(parts, "workers_see", None)
    return CLUSTER_WHOLE_BYTES if sees is not None and sees(path) else WHOLE_BYTES


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
    said = constant_note(source.feature_names, constant)
    if said:
        notes.append(said)
    data = PartitionedData(parts, plan, list(source.feature_names), source.target_name,
                           name=name, notes=notes, task=source.task,
                           classes=getattr(source, "classes", None),
                           encoding=getattr(source, "encoding", None))
    if data.task != "multiclass":  # class codes have no order to rank
        data.warnings = sampled_leakage(data, dropped_columns)
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


def sample_table(source: Any, parts: PartMap, rows: int, seed: int,
                 progress: Progress | None = None, *, drop_nan: bool = False) -> Table:
    """A seeded sample of ``rows`` rows gathered into an ordinary table (in file order):
    the rows with the smallest keys of the subsample stream — for a class target, the
    smallest keys within each class, each class keeping its share (as
    :func:`~kernel_lab.data.split.subsample_table` does in memory: one rule,
    :func:`~kernel_lab.data.split.sampled_rows`). With ``drop_nan`` the
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
    everything = sampling_plan(seed, source.n, source.p, dropped)
    index = sampled_rows(parts, everything, rows,
                         source.task in ("classification", "multiclass"))
    got = take_rows(parts, everything, index)
    if got.index.size != index.size:  # pragma: no cover - a part read fewer rows than listed
        raise DataError(f"read {got.index.size} of the {index.size} sampled rows",
                        "check that the files were not changed while reading",
                        path=getattr(source, "source", None))
    classes = getattr(source, "classes", None)
    return Table(got.X, got.y, list(source.feature_names), source.target_name,
                 notes=[*notes, sample_note(rows, total, seed)],
                 classes=None if classes is None else list(classes),
                 columns=[*source.feature_names, source.target_name],
                 encoding=getattr(source, "encoding", None))
