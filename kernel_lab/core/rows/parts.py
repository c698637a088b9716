"""Parts cut at canonical block boundaries over the pieces the rows are stored in.

Files and chunks hold whatever rows their writer put in them: sixteen Parquet files of
unequal sizes, a Zarr store's chunks. :func:`align_parts` turns those *pieces* into parts
whose rows are whole canonical blocks (:mod:`kernel_lab.core.rows.blocks`): part j holds the
blocks whose first row lies in piece j, so it reads the tail of piece j and, when its last
block runs on, the head of the following piece(s) — through each piece's
``read_range(lo, hi)`` (a Parquet file decodes only its first pages for a head; a Zarr chunk
or an array slices). Every block is then computed whole, by one task, whatever the cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core.rows.blocks import aligned_ranges


def read_piece(piece: Any, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``[lo, hi)`` of a piece (positions within it): its ``read_range`` when it has
    one, else its whole read, sliced."""
    if lo == 0 and hi == piece.rows:
        return piece.read()
    reader = getattr(piece, "read_range", None)
    if reader is not None:
        return reader(lo, hi)
    X, y = piece.read()
    return X[lo:hi], y[lo:hi]


@dataclass(frozen=True)
class AlignedPart:
    """Global rows ``start … start + rows − 1`` (whole canonical blocks, the last one
    possibly short at the data's end), read from the pieces that hold them. Small and
    picklable, as the pieces are."""

    index: int
    start: int
    rows: int
    pieces: tuple[Any, ...]

    @property
    def path(self) -> str | None:
        """The first piece's file (for messages and the read cache)."""
        return getattr(self.pieces[0], "path", None)

    @property
    def paths(self) -> tuple[str, ...]:
        """The files of every piece read."""
        found = (getattr(p, "path", None) for p in self.pieces)
        return tuple(dict.fromkeys(p for p in found if isinstance(p, str)))

    @property
    def features(self) -> Any:
        """The feature columns of the pieces, where they name them (for size estimates)."""
        first = self.pieces[0]
        return getattr(first, "features", None) or getattr(first, "columns", None)

    @property
    def X(self) -> Any:  # the width of in-memory pieces, for size estimates
        return getattr(self.pieces[0], "X", None)

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        stop = self.start + self.rows
        got = []
        for piece in self.pieces:
            lo = max(self.start, piece.start) - piece.start
            hi = min(stop, piece.start + piece.rows) - piece.start
            if hi > lo:
                got.append(read_piece(piece, lo, hi))
        if len(got) == 1:
            return got[0]
        return np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got])

    def holder(self, row: int) -> Any:
        """The piece (a file, a chunk) that holds global row ``row``: what a message about
        that row names."""
        for piece in self.pieces:
            if piece.start <= row < piece.start + piece.rows:
                return piece
        raise IndexError(f"row {row:,} is not in {self.describe()}")

    def describe(self) -> str:
        first = self.pieces[0].describe()
        if len(self.pieces) == 1 and self.start == self.pieces[0].start \
                and self.rows == self.pieces[0].rows:
            return first
        return (f"rows {self.start:,}–{self.start + self.rows - 1:,} of {first}"
                + (f" and the {len(self.pieces) - 1} following" if len(self.pieces) > 1
                   else ""))


def align_parts(pieces: Sequence[Any], n: int, block: int) -> list[Any]:
    """Parts of whole canonical blocks over ``pieces`` (objects with ``start``, ``rows``,
    ``read()`` and ``describe()``, in row order, covering rows ``0 … n−1``): see the module
    docstring. A piece that already is such a part is kept as it is."""
    out: list[Any] = []
    for lo, hi, holders in aligned_ranges([(int(p.start), int(p.rows)) for p in pieces], n,
                                          block):
        held = tuple(pieces[k] for k in holders)
        if len(held) == 1 and held[0].start == lo and held[0].rows == hi - lo:
            out.append(held[0])
        else:
            out.append(AlignedPart(len(out), lo, hi - lo, held))
    return out


__all__ = ["AlignedPart", "align_parts", "read_piece"]
