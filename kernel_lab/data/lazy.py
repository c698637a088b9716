"""A Parquet folder or a Zarr store as the data of a run: loaded whole when it fits, else
kept in its partitions.

:func:`open_run_data` decides, from the source's ``partitions`` option:

- ``auto`` (default): the rows are read into one ordinary table — every experiment then
  works on them — when they take at most :data:`WHOLE_BYTES`; otherwise they stay in their
  partitions. The rule is the data's size alone, so a command gives the same numbers on
  every machine, under any load and on every backend;
- ``keep``: they stay in their partitions (a :class:`~kernel_lab.core.parts.PartitionedData`:
  the split is defined per row by the seed, the standardisation uses column statistics
  reduced over the partitions, and the computations run where ``make_parts`` says — this
  process or a cluster);
- ``load``: they are read into one table (refused when they do not fit).

With ``subsample=N`` a seeded sample of N rows (chosen per row by its key, so the same
rows wherever the data live) is gathered into an ordinary table: the way to run the
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
    LocalParts,
    PartitionedData,
    PartMap,
    RowPlan,
    keyed_subset,
    standardize_plan,
    take_rows,
)
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import align_parts, row_block
from kernel_lab.data.columns import split_names
from kernel_lab.data.leakage import leakage_warning
from kernel_lab.data.split import dataset_from_table
from kernel_lab.data.table import Table

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
        table = sample_table(source, mapper, subsample, seed, progress)
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
    """The source kept in its partitions: the keyed split and (optionally) the training
    rows' column statistics, reduced over the partitions."""
    if options.get("drop_nan"):
        raise ParameterError(
            f"dropping rows with missing values is not done on data kept in their "
            f"{len(source.parts)} partitions (the rows' global indices would shift): drop or "
            f"fill them in the files, or read the data whole "
            f"({data_option('partitions', 'load')}) if they fit")
    plan = RowPlan.split(seed, source.n, float(options["test_fraction"]), source=name)
    notes = [*source.notes, f"kept in {len(source.parts)} partitions ({source.n:,} rows, "
                            f"{format_bytes(source.nbytes)}): the split is chosen per row "
                            "from the seed"]
    if options.get("standardize", True):
        plan = standardize_plan(parts, plan, source.feature_names,
                                progress=None if progress is None else progress.sub(0.0, 1.0))
        notes.append("standardised by the training rows' column statistics (reduced over "
                     "the partitions)")
    data = PartitionedData(parts, plan, list(source.feature_names), source.target_name,
                           name=name, notes=notes, task=source.task)
    data.warnings = _sampled_leakage(data, split_names(options.get("drop_columns") or None))
    return data


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
                 progress: Progress | None = None) -> Table:
    """A seeded sample of ``rows`` rows gathered into an ordinary table (in file order):
    the rows with the smallest keys of the subsample stream."""
    if rows >= source.n:
        return source.to_table()
    everything = RowPlan(int(seed), source.n, 0, None)
    index = keyed_subset(parts, everything, rowkeys.SUBSAMPLE, rows)
    got = take_rows(parts, everything, index)
    if got.index.size != index.size:  # pragma: no cover - a part read fewer rows than listed
        raise DataError(f"read {got.index.size} of the {index.size} sampled rows",
                        "check that the files were not changed while reading",
                        path=getattr(source, "source", None))
    return Table(got.X, got.y, list(source.feature_names), source.target_name,
                 notes=[*source.notes, f"used a random {rows:,} of {source.n:,} rows "
                                       f"(subsample={rows}, seed {seed}, chosen per row)"])
