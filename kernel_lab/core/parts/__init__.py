"""Computations over a data set's parts, in memory or kept in partitions (see
:mod:`kernel_lab.core.parts.base`)."""

from kernel_lab.core.parts.base import (
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
    tree_combine,
)
from kernel_lab.core.parts.data import PartitionedData
from kernel_lab.core.parts.prepare import (
    ColumnStats,
    column_stats,
    nonfinite_rows,
    prepared_plan,
    standardize_plan,
    training_moments,
)

__all__ = ["ArrayPart", "ColumnStats", "LocalParts", "MemoryPart", "Part", "PartMap",
           "PartitionedData",
           "RowPlan", "Rows", "array_parts", "column_stats", "keyed_subset", "keyed_subset_of",
           "nonfinite_rows", "part_rows", "prepared_plan", "reduce_blocks", "split_masks",
           "standardize_plan", "take_rows", "test_count", "training_moments", "tree_combine"]
