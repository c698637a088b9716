"""Computations over partitioned data (see :mod:`kernel_lab.core.parts.base`)."""

from kernel_lab.core.parts.base import (
    ArrayPart,
    LocalParts,
    Part,
    PartitionedData,
    PartMap,
    RowPlan,
    Rows,
    array_parts,
    keyed_subset,
    keyed_subset_of,
    part_rows,
    reduce_blocks,
    split_masks,
    standardize_plan,
    take_rows,
    test_count,
    training_moments,
    tree_combine,
)

__all__ = ["ArrayPart", "LocalParts", "Part", "PartMap", "PartitionedData", "RowPlan", "Rows",
           "array_parts", "keyed_subset", "keyed_subset_of", "part_rows", "reduce_blocks",
           "split_masks", "standardize_plan", "take_rows", "test_count", "training_moments",
           "tree_combine"]
