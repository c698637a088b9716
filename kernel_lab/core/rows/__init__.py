"""The row layer: a data set is a list of parts with their global row indices, and every
computation over rows is one map/reduce over those parts, reduced in one fixed tree.

- :mod:`~kernel_lab.core.rows.keys`: every random choice about a row from
  ``(seed, stream, global row index)``;
- :mod:`~kernel_lab.core.rows.blocks`: canonical blocks of global rows and the
  :class:`~kernel_lab.core.rows.blocks.Frontier` that combines per-block values in one fixed
  tree, whatever the parts holding the blocks;
- :mod:`~kernel_lab.core.rows.mapreduce`: the :class:`Part` protocol (an array, a
  :class:`MemoryPart` of prepared rows, a piece of a file), the :class:`RowPlan` (keyed
  split, fill, scaling), the :class:`PartMap` interface of the backends with
  :class:`LocalParts` (this process), and what is written once over them: per-block
  reductions (:func:`reduce_blocks`), gathers (:func:`take_rows`), keyed subsets;
- :mod:`~kernel_lab.core.rows.parts`: parts of whole blocks over the files or chunks the
  rows are stored in (:func:`align_parts`);
- :mod:`~kernel_lab.core.rows.prepare`: what one pass learns about the columns (moments,
  missing cells, non-finite rows) and the plan that fills and standardises;
- :mod:`~kernel_lab.core.rows.dataset`: :class:`Dataset`, a data set in memory as one part;
- :mod:`~kernel_lab.core.rows.partitioned`: :class:`PartitionedData`, a data set kept in
  parts that are read where they are used.

The algorithms (:mod:`kernel_lab.core.nystrom`, :mod:`kernel_lab.core.ridge`,
:mod:`kernel_lab.core.dsg`) take any data set's ``parts`` and ``plan``; the engine's other
backends (:mod:`kernel_lab.engine.pool_parts`, :mod:`kernel_lab.engine.dask_parts`) are
:class:`PartMap` implementations too.
"""

from kernel_lab.core.rows.blocks import (
    ROW_BLOCK,
    Frontier,
    MergeFrontiers,
    aligned_ranges,
    block_count,
    block_slices,
    join,
    row_block,
    tree_combine,
)
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.core.rows.mapreduce import (
    ArrayPart,
    LocalParts,
    MemoryPart,
    Part,
    PartMap,
    RowPlan,
    Rows,
    array_parts,
    keyed_subset,
    keyed_subset_of,
    part_rows,
    reduce_blocks,
    split_masks,
    take_rows,
    test_count,
)
from kernel_lab.core.rows.partitioned import PartitionedData
from kernel_lab.core.rows.parts import AlignedPart, align_parts
from kernel_lab.core.rows.prepare import (
    ColumnStats,
    column_stats,
    nonfinite_rows,
    prepared_plan,
    standardize_plan,
    training_moments,
)

__all__ = [
    "ROW_BLOCK",
    "AlignedPart",
    "ArrayPart",
    "ColumnStats",
    "Dataset",
    "Frontier",
    "LocalParts",
    "MemoryPart",
    "MergeFrontiers",
    "Part",
    "PartMap",
    "PartitionedData",
    "RowPlan",
    "Rows",
    "align_parts",
    "aligned_ranges",
    "array_parts",
    "block_count",
    "block_slices",
    "column_stats",
    "join",
    "keyed_subset",
    "keyed_subset_of",
    "nonfinite_rows",
    "part_rows",
    "prepared_plan",
    "reduce_blocks",
    "row_block",
    "split_masks",
    "standardize_plan",
    "take_rows",
    "test_count",
    "training_moments",
    "tree_combine",
]
