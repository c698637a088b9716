"""Canonical row blocks and the one reduction tree over them.

A **canonical block** is the set of global rows ``[k·B, (k+1)·B)`` for a block size B
(:data:`ROW_BLOCK` by default; a data set's :class:`~kernel_lab.core.rows.mapreduce.RowPlan`
carries its own). Blocks are defined by the global row index alone, never by the files the
rows are kept in, and they are what makes numbers independent of where the rows live:

- a matrix product's row depends, in its last bits, on the shape of the block it is
  computed in, and a sum depends on the order of its additions. So every computation per
  row is done per canonical block (cut inside the block into sub-blocks that depend on the
  block's rows alone: :func:`block_slices`), and every sum over rows is a sum per block;
- the block sums are combined in one fixed tree over the block numbers: the tree of
  ``tree_combine`` over the blocks in order ((0+1), (2+3), … then again, an odd one carried
  up). A part of the data holding blocks ``[i, j)`` cannot build that tree alone, but it
  can build every complete subtree inside its range: its :class:`Frontier`, the maximal
  aligned dyadic ranges ``[a·2^L, (a+1)·2^L)`` covering ``[i, j)``, each with the value the
  tree has there. Adjacent frontiers merge (:meth:`Frontier.merge`, associative: any merge
  order gives the same nodes), and the frontier of all blocks gives the tree's root
  (:meth:`Frontier.finish`) — bit for bit the value of ``tree_combine`` over all blocks.

A part whose first or last block is cut (its rows start or end inside a block: parts not
aligned to the blocks) still gives the right sum: the two halves of such a block are
combined when the neighbouring frontiers meet, as an ordinary block — the sum is then
exact but its last bits depend on the cut. Aligned parts (:func:`aligned_ranges`) avoid it.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Global rows per canonical block (a data set's RowPlan carries the size it uses).
ROW_BLOCK = 16_384

Combine = Callable[[Any, Any], Any]


def row_block() -> int:
    """The block size new row plans take: :data:`ROW_BLOCK`, read when asked (a test may
    set the module's value)."""
    return int(ROW_BLOCK)


def block_count(n: int, block: int) -> int:
    """Canonical blocks of ``n`` rows (the last one may be short)."""
    return -(-int(n) // int(block))


def block_slices(index: np.ndarray, block: int, step: int | None = None) -> Iterator[slice]:
    """Slices of the sorted global row indices ``index`` that keep each canonical block's
    rows apart, each block's cut into runs of at most ``step`` rows from the block's first
    row (None: whole blocks). The runs depend on the rows of one block only, so a row is
    computed with the same neighbours wherever the rows were read."""
    index = np.asarray(index)
    if index.size == 0:
        return
    ids = index // block
    cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    bounds = [0, *cuts.tolist(), int(index.size)]
    for a, b in itertools.pairwise(bounds):
        if step is None or step >= b - a:
            yield slice(a, b)
            continue
        for s in range(a, b, max(int(step), 1)):
            yield slice(s, min(s + step, b))


@dataclass(frozen=True)
class Node:
    """A subtree of the canonical tree: blocks ``[lo, lo + size)`` and its value.
    ``seen``: for a single block of which only some rows were seen (a part cut inside it),
    the global rows ``[a, b)`` seen so far, and ``whole`` the block's rows; None for a
    complete subtree."""

    lo: int
    size: int
    value: Any
    seen: tuple[int, int] | None = None
    whole: tuple[int, int] | None = None

    @property
    def hi(self) -> int:
        return self.lo + self.size

    @property
    def partial(self) -> bool:
        return self.seen is not None


def _siblings(a: Node, b: Node) -> bool:
    return (not a.partial and not b.partial and a.size == b.size and a.hi == b.lo
            and a.lo % (2 * a.size) == 0)


@dataclass(frozen=True)
class Frontier:
    """The maximal complete subtrees of the canonical tree over a run of blocks (see the
    module docstring). Small (at most about 2·log₂ of the blocks), picklable when the
    values are."""

    nodes: tuple[Node, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.nodes

    @property
    def span(self) -> tuple[int, int] | None:
        """The blocks ``[first, end)`` covered, None when empty."""
        return (self.nodes[0].lo, self.nodes[-1].hi) if self.nodes else None

    @classmethod
    def of(cls, values: Iterable[tuple[int, Any]], combine: Combine = operator.add, *,
           rows: tuple[int, int] | None = None, block: int = 0, n: int = 0) -> Frontier:
        """The frontier of consecutive blocks given as ``(block number, value)`` in
        increasing order. ``rows``: the global rows ``[start, stop)`` the values were
        computed on, when they may start or end inside a block (parts not cut at block
        boundaries), with the ``block`` size and the data's ``n`` rows: such a first or
        last block waits, in part, for the rest of its rows from the neighbouring
        frontiers."""
        out, held = cls(), None
        for b, value in values:
            if held is not None:
                out = out._push(held, combine)
            held = cls._leaf(int(b), value, rows, block, n, first=held is None)
        if held is not None:
            last = cls._leaf(held.lo, held.value, rows, block, n, first=False)
            if held.seen is not None and last.seen is not None:  # one block, cut both sides
                last = Node(held.lo, 1, held.value, (held.seen[0], last.seen[1]), last.whole)
            elif held.seen is not None:
                last = held
            out = out._push(last, combine)
        return out

    @staticmethod
    def _leaf(k: int, value: Any, rows: tuple[int, int] | None, block: int, n: int, *,
              first: bool) -> Node:
        if rows is None:
            return Node(k, 1, value)
        whole = (k * block, min((k + 1) * block, n))
        seen = (max(whole[0], rows[0]), whole[1]) if first else (whole[0],
                                                                 min(whole[1], rows[1]))
        if seen == whole:
            return Node(k, 1, value)
        return Node(k, 1, value, seen, whole)

    def _push(self, node: Node, combine: Combine) -> Frontier:
        stack = list(self.nodes)
        top = stack[-1] if stack else None
        if top is not None and top.partial and node.partial and top.lo == node.lo:
            if top.seen[1] != node.seen[0]:  # type: ignore[index]
                raise ValueError(f"rows of block {node.lo} not adjacent: {top.seen} then "
                                 f"{node.seen}")
            stack.pop()
            seen = (top.seen[0], node.seen[1])  # type: ignore[index]
            node = (Node(node.lo, 1, combine(top.value, node.value)) if seen == node.whole
                    else Node(node.lo, 1, combine(top.value, node.value), seen, node.whole))
        elif top is not None and top.hi != node.lo:
            raise ValueError(f"blocks not adjacent: {top.lo}–{top.hi - 1} then {node.lo}")
        stack.append(node)
        while len(stack) > 1 and _siblings(stack[-2], stack[-1]):
            right = stack.pop()
            left = stack.pop()
            stack.append(Node(left.lo, 2 * left.size, combine(left.value, right.value)))
        return Frontier(tuple(stack))

    def merge(self, other: Frontier, combine: Combine = operator.add) -> Frontier:
        """The frontier of this run of blocks followed by ``other``'s (adjacent)."""
        out = self
        for node in other.nodes:
            out = out._push(node, combine)
        return out

    def finish(self, combine: Combine = operator.add, n_blocks: int | None = None) -> Any:
        """The root of the canonical tree: the frontier must cover blocks ``0 …`` (all
        ``n_blocks`` of them, when given) with no block cut. Equal, bit for bit, to
        ``tree_combine`` over the blocks' values in order."""
        if not self.nodes:
            raise ValueError("nothing to combine")
        lo, hi = self.span  # type: ignore[misc]
        if lo != 0 or (n_blocks is not None and hi != n_blocks):
            raise ValueError(f"the frontier covers blocks {lo}–{hi - 1}, not all "
                             f"{n_blocks if n_blocks is not None else hi} from 0")
        if any(node.partial for node in self.nodes):
            raise ValueError("a block was seen in part only: a part of it is missing")
        # tree_combine carries an odd node up to the end of each level, so the root is the
        # right fold of the complete subtrees (sizes decreasing: the binary digits of hi)
        value = self.nodes[-1].value
        for node in reversed(self.nodes[:-1]):
            value = combine(node.value, value)
        return value


def sum_frontier(index: np.ndarray, values: np.ndarray, *, rows: tuple[int, int],
                 block: int, n: int) -> Frontier:
    """The frontier of the per-block sums of ``values`` (one per row of the sorted global
    indices ``index``, which lie in the global rows ``rows = [start, stop)`` of ``n``):
    a leaf for every block those rows touch, 0.0 for one without values."""
    if rows[1] <= rows[0]:
        return Frontier()
    first, last = rows[0] // block, (rows[1] - 1) // block
    bounds = np.searchsorted(index, np.arange(first, last + 2, dtype=np.int64) * block)
    values = np.asarray(values, dtype=np.float64)
    return Frontier.of(((first + k, float(values[a:b].sum()))
                        for k, (a, b) in enumerate(itertools.pairwise(bounds.tolist()))),
                       rows=rows, block=block, n=n)


@dataclass(frozen=True)
class MergeFrontiers:
    """``combine`` for frontiers: ``(a, b) ↦ a.merge(b, combine)`` (picklable, for a
    cluster's pairwise tree)."""

    combine: Combine = operator.add

    @property
    def __name__(self) -> str:  # names a cluster's tasks
        return "merge_frontiers"

    def __call__(self, a: Frontier, b: Frontier) -> Frontier:
        return a.merge(b, self.combine)


def join(frontiers: Sequence[Frontier], combine: Combine = operator.add) -> Frontier:
    """Adjacent frontiers, in order, merged into one (empty ones skipped)."""
    out = Frontier()
    for f in frontiers:
        out = out.merge(f, combine)
    return out


def tree_combine(values: Sequence[Any], combine: Combine = operator.add) -> Any:
    """Combine values pairwise in the fixed tree: (0+1), (2+3), … then again (an odd one
    carried up to the end of the next level)."""
    level = list(values)
    if not level:
        raise ValueError("nothing to combine")
    while len(level) > 1:
        nxt = [combine(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def aligned_ranges(pieces: Sequence[tuple[int, int]], n: int, block: int
                   ) -> list[tuple[int, int, list[int]]]:
    """Parts cut at block boundaries from pieces ``(start, rows)`` of ``n`` rows in order:
    for each piece in which some block starts, the global rows ``[lo, hi)`` of the blocks
    starting there (``hi`` past the piece's end when its last block runs into the next
    pieces) and the positions of the pieces those rows lie in. A piece in which no block
    starts gives nothing: its rows belong to the part before it."""
    out = []
    for start, rows in pieces:
        if rows <= 0:
            continue
        lo = -(-start // block) * block
        hi = min(-(-(start + rows) // block) * block, n)
        if lo >= hi:
            continue
        holders = [k for k, (a, r) in enumerate(pieces) if r > 0 and a < hi and a + r > lo]
        out.append((lo, hi, holders))
    return out


__all__ = ["ROW_BLOCK", "Frontier", "MergeFrontiers", "Node", "aligned_ranges", "block_count",
           "block_slices", "join", "row_block", "sum_frontier",
           "tree_combine"]
