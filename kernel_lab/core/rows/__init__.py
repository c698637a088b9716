"""The row layer: per-row keys, canonical row blocks and the one reduction tree over them,
and parts cut at block boundaries.

- :mod:`~kernel_lab.core.rows.keys`: every random choice about a row from
  ``(seed, stream, global row index)``;
- :mod:`~kernel_lab.core.rows.blocks`: canonical blocks of global rows and the
  :class:`~kernel_lab.core.rows.blocks.Frontier` that combines per-block values in one fixed
  tree, whatever the parts holding the blocks;
- :mod:`~kernel_lab.core.rows.parts`: parts of whole blocks over the files or chunks the
  rows are stored in.
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
from kernel_lab.core.rows.parts import AlignedPart, align_parts

__all__ = ["ROW_BLOCK", "AlignedPart", "Frontier", "MergeFrontiers", "align_parts",
           "aligned_ranges", "block_count", "block_slices", "join", "row_block",
           "tree_combine"]
