"""Computations over partitioned data (see :mod:`kernel_lab.core.parts.base`)."""

from kernel_lab.core.parts.base import (
    ArrayPart,
    ColumnStats,
    LocalParts,
    MemoryPart,
    Part,
    PartitionedData,
    PartMap,
    RowPlan,
    Rows,
    array_parts,
    column_stats,
    keyed_subset,
    keyed_subset_of,
    nonfinite_rows,
    part_rows,
    prepared_plan,
    reduce_blocks,
    split_masks,
    standardize_plan,
    take_rows,
    test_count,
    training_moments,
    tree_combine,
)

__all__ = ["ArrayPart", "ColumnStats", "LocalParts", "MemoryPart", "Part", "PartMap",
           "PartitionedData",
           "RowPlan", "Rows", "array_parts", "column_stats", "keyed_subset", "keyed_subset_of",
           "nonfinite_rows", "part_rows", "prepared_plan", "reduce_blocks", "split_masks",
           "standardize_plan", "take_rows", "test_count", "training_moments", "tree_combine"]
