"""The row layer's canonical blocks: the Frontier of any cut of the blocks into runs (empty
runs included), merged in any order, gives bit for bit what tree_combine gives over all
blocks; parts cut at block boundaries make reductions over partitions independent of the
cut; a part of whole blocks reads only what it needs of the pieces after it."""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest

from kernel_lab.core.rows import (
    AlignedPart,
    Frontier,
    MergeFrontiers,
    align_parts,
    block_slices,
    join,
    tree_combine,
)
from kernel_lab.core.rows.blocks import sum_frontier
from kernel_lab.core.rows.mapreduce import (
    ArrayPart,
    LocalParts,
    RowPlan,
    Rows,
    array_parts,
    reduce_blocks,
)
from kernel_lab.core.rows.prepare import training_moments
from tests.sources import parse


def _reference_tree(values: list) -> object:
    """tree_combine written out independently: pairs per level, an odd one carried up."""
    level = list(values)
    while len(level) > 1:
        level = [level[i] + level[i + 1] if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]


def _cuts(rng: np.random.Generator, m: int) -> list[tuple[int, int]]:
    """A random cut of ``0 … m`` into runs, empty runs included."""
    inner = np.sort(rng.integers(0, m + 1, size=int(rng.integers(0, 10)))).tolist()
    bounds = [0, *inner, m]
    return list(itertools.pairwise(bounds))


def test_tree_combine_is_the_pairwise_tree() -> None:
    rng = np.random.default_rng(0)
    for m in range(1, 40):
        values = list(rng.standard_normal(m) * 10.0 ** rng.integers(-8, 8, size=m))
        assert tree_combine(values) == _reference_tree(values)
    with pytest.raises(ValueError, match="nothing"):
        tree_combine([])


@pytest.mark.parametrize("seed", range(6))
def test_frontiers_of_any_cut_merged_in_any_order_give_the_tree_bit_for_bit(seed) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(300):
        m = int(rng.integers(1, 70))
        # values of very different magnitudes: the order of additions shows in the bits
        values = [rng.standard_normal(4) * 10.0 ** rng.integers(-9, 9) for _ in range(m)]
        expected = _reference_tree(values)
        fronts = [Frontier.of([(k, values[k]) for k in range(a, b)]) for a, b in _cuts(rng, m)]
        while len(fronts) > 1:  # adjacent pairs merged in a random order
            i = int(rng.integers(0, len(fronts) - 1))
            fronts[i:i + 2] = [fronts[i].merge(fronts[i + 1])]
        got = fronts[0].finish(n_blocks=m)
        assert np.array_equal(got, expected), m
        # a plain join in order, and the picklable merge a cluster uses, agree
        assert np.array_equal(join([Frontier.of([(k, v)]) for k, v in enumerate(values)])
                              .finish(), expected)


def test_a_frontier_holds_only_maximal_aligned_subtrees() -> None:
    f = Frontier.of([(k, 1.0) for k in range(3, 13)])
    assert [(nd.lo, nd.size) for nd in f.nodes] == [(3, 1), (4, 4), (8, 4), (12, 1)]
    assert all(nd.lo % nd.size == 0 for nd in f.nodes)
    assert [nd.value for nd in f.nodes] == [1.0, 4.0, 4.0, 1.0]


def test_a_frontier_refuses_gaps_and_incomplete_data() -> None:
    with pytest.raises(ValueError, match="not adjacent"):
        Frontier.of([(0, 1.0)]).merge(Frontier.of([(2, 1.0)]))
    with pytest.raises(ValueError, match="not all"):
        Frontier.of([(k, 1.0) for k in range(3)]).finish(n_blocks=4)
    with pytest.raises(ValueError, match="not all"):
        Frontier.of([(k, 1.0) for k in range(1, 4)]).finish()
    half = Frontier.of([(0, 1.0)], rows=(0, 5), block=10, n=30)
    with pytest.raises(ValueError, match="in part"):
        half.merge(Frontier.of([(1, 1.0), (2, 1.0)])).finish()


def test_blocks_cut_between_several_parts_still_sum_every_row() -> None:
    """Parts that are not cut at block boundaries: a block's pieces are added as they meet
    (right sums; only the last bits depend on the cut)."""
    rng = np.random.default_rng(3)
    block = 10
    for _ in range(300):
        n = int(rng.integers(1, 120))
        x = rng.standard_normal(n)
        fronts = [sum_frontier(np.arange(a, b), x[a:b], rows=(a, b), block=block, n=n)
                  for a, b in _cuts(rng, n)]
        total = MergeFrontiers()(join(fronts[:1]), join(fronts[1:])).finish(
            n_blocks=-(-n // block))
        assert total == pytest.approx(x.sum(), rel=1e-12, abs=1e-12)


def test_block_slices_keep_blocks_apart_and_cut_them_from_their_first_row() -> None:
    index = np.array([1, 2, 3, 7, 10, 11, 12, 13, 14, 29])
    got = [index[s].tolist() for s in block_slices(index, 10, 2)]
    assert got == [[1, 2], [3, 7], [10, 11], [12, 13], [14], [29]]
    assert [index[s].tolist() for s in block_slices(index, 10)] == [
        [1, 2, 3, 7], [10, 11, 12, 13, 14], [29]]
    assert list(block_slices(np.zeros(0, dtype=int), 10)) == []


class CountingPart(ArrayPart):
    """An ArrayPart that records the ranges read from it."""

    log: list  # set per instance

    def read(self):
        self.log.append((self.index, 0, self.rows))
        return super().read()

    def read_range(self, lo, hi):
        self.log.append((self.index, lo, hi))
        return super().read_range(lo, hi)


def _pieces(X, y, sizes, log):
    out, start = [], 0
    for k, size in enumerate(sizes):
        part = CountingPart(k, start, X[start:start + size], y[start:start + size])
        object.__setattr__(part, "log", log)
        out.append(part)
        start += size
    return out


def test_aligned_parts_hold_whole_blocks_and_read_only_what_they_need() -> None:
    rng = np.random.default_rng(1)
    sizes = [1, 30, 3, 9, 1, 40, 16]
    n = sum(sizes)
    X, y = rng.standard_normal((n, 2)), rng.standard_normal(n)
    log: list = []
    parts = align_parts(_pieces(X, y, sizes, log), n, 16)
    spans = [(p.start, p.start + p.rows) for p in parts]
    # pieces [0,1) [1,31) [31,34) [34,43) [43,44) [44,84) [84,100); blocks start at 0, 16,
    # 32, 48, 64, 80, 96: a part per piece in which one starts, to the next such start
    assert spans == [(0, 16), (16, 32), (32, 48), (48, 96), (96, 100)]
    assert all(a % 16 == 0 for a, _ in spans)
    for part in parts:
        X_p, y_p = part.read()
        np.testing.assert_array_equal(X_p, X[part.start:part.start + part.rows])
        np.testing.assert_array_equal(y_p, y[part.start:part.start + part.rows])
    # the first part reads the 1-row piece whole and the head of the next one only
    assert log[:2] == [(0, 0, 1), (1, 0, 15)]
    assert isinstance(parts[0], AlignedPart) and "following" in parts[0].describe()


def _sums(rows: Rows, W: np.ndarray) -> np.ndarray:
    Z = np.cos(rows.X @ W)
    return np.concatenate([(Z.T @ Z).ravel(), Z.T @ rows.y])


@pytest.mark.parametrize("block", [16, 64, 1000])
def test_reductions_over_aligned_parts_do_not_depend_on_the_cut(block) -> None:
    rng = np.random.default_rng(7)
    n = 997
    X = rng.standard_normal((n, 4)) * [1e-3, 1.0, 1e3, 7.0]
    y = rng.standard_normal(n) * 1e4
    W = rng.standard_normal((4, 9))
    plan = RowPlan.split(5, n, 0.25)
    plan = RowPlan(plan.seed, n, plan.n_test, plan.cut, block=block)
    one = LocalParts(array_parts(X, y, 1))
    sizes = [1, 300, 2, 17, 0, 100, 64, 1, 250, 262]
    assert sum(sizes) == n
    cut = LocalParts(align_parts(array_parts(X, y, sizes), n, block))
    a = reduce_blocks(one, _sums, plan, W)
    b = reduce_blocks(cut, _sums, plan, W)
    assert np.array_equal(a, b)
    # the tree over the blocks, computed directly
    train = ~plan.is_test(np.arange(n))
    leaves = []
    for k in range(-(-n // block)):
        keep = np.flatnonzero(train[k * block:(k + 1) * block]) + k * block
        leaves.append(_sums(Rows(X[keep], y[keep], keep), W))
    assert np.array_equal(a, tree_combine(leaves))
    for got in (training_moments(one, plan), training_moments(cut, plan)):
        np.testing.assert_array_equal(got[0], training_moments(one, plan)[0])
        np.testing.assert_array_equal(got[1], training_moments(one, plan)[1])
    np.testing.assert_allclose(training_moments(one, plan)[0], X[train].mean(axis=0),
                               rtol=1e-12, atol=1e-15)
    # parts not cut at blocks: the same sums, up to the last bits
    np.testing.assert_allclose(reduce_blocks(LocalParts(array_parts(X, y, sizes)), _sums,
                                             plan, W), a, rtol=1e-10, atol=1e-6)


def test_a_merge_is_associative_on_adjacent_frontiers() -> None:
    rng = np.random.default_rng(11)
    values = [rng.standard_normal() * 10.0 ** rng.integers(-9, 9) for _ in range(23)]
    a = Frontier.of([(k, values[k]) for k in range(0, 5)])
    b = Frontier.of([(k, values[k]) for k in range(5, 13)])
    c = Frontier.of([(k, values[k]) for k in range(13, 23)])
    left = a.merge(b).merge(c)
    right = a.merge(b.merge(c))
    assert left == right
    assert left.finish() == tree_combine(values, operator.add)


def test_the_row_layer_imports_only_the_core_basics() -> None:
    """core/rows sits under every algorithm: numpy and core.{errors, memory, progress,
    executor, synthetic} only (besides itself)."""
    import ast
    from pathlib import Path

    import kernel_lab.core.rows as rows

    allowed = {"numpy", "__future__", "collections", "dataclasses", "itertools", "operator",
               "typing", "math", "functools", "hashlib", "os"}
    core_ok = {"errors", "memory", "progress", "executor", "rows", "synthetic"}
    for path in Path(rows.__file__).parent.glob("*.py"):
        for node in ast.walk(parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                top = name.split(".")
                if top[0] == "kernel_lab":
                    assert top[1] == "core" and top[2] in core_ok, (path.name, name)
                else:
                    assert top[0] in allowed, (path.name, name)
