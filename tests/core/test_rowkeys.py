"""Keyed per-row random choices (kernel_lab.core.rows.keys) against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core.rows import keys as rowkeys


@pytest.mark.parametrize(("n", "k", "chunk"), [(1, 1, 8), (10, 1, 3), (10, 10, 3),
                                               (1000, 250, 64), (5000, 4999, 1 << 20),
                                               (70_000, 17, 4096), (70_000, 69_000, 4096)])
def test_threshold_is_the_kth_smallest_key(n, k, chunk):
    all_keys = rowkeys.keys(7, rowkeys.SPLIT, np.arange(n))
    cut = rowkeys.threshold(7, rowkeys.SPLIT, n, k, chunk=chunk)
    assert cut == np.sort(all_keys)[k - 1]
    assert int(np.count_nonzero(all_keys <= cut)) == k
    selected = rowkeys.is_selected(7, rowkeys.SPLIT, np.arange(n), cut)
    assert int(selected.sum()) == k


def test_threshold_refuses_impossible_counts():
    with pytest.raises(ValueError):
        rowkeys.threshold(0, rowkeys.SPLIT, 5, 0)
    with pytest.raises(ValueError):
        rowkeys.threshold(0, rowkeys.SPLIT, 5, 6)


def test_keys_depend_on_the_row_index_alone():
    rows = np.arange(10_000)
    whole = rowkeys.keys(3, rowkeys.TEST_SUBSET, rows)
    pieces = np.concatenate([rowkeys.keys(3, rowkeys.TEST_SUBSET, r)
                             for r in np.array_split(rows, 7)])
    np.testing.assert_array_equal(whole, pieces)
    assert np.unique(whole).size == whole.size
    assert not np.array_equal(whole, rowkeys.keys(3, rowkeys.EVAL_SUBSET, rows))
    assert not np.array_equal(whole, rowkeys.keys(4, rowkeys.TEST_SUBSET, rows))


def test_uniforms_are_uniform():
    u = rowkeys.uniforms(11, rowkeys.LANDMARKS, np.arange(200_000))
    assert u.min() >= 0.0 and u.max() < 1.0
    counts = np.histogram(u, bins=20, range=(0, 1))[0]
    expected = u.size / 20
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    assert chi2 < 43.8  # the 0.999 quantile of χ² with 19 degrees of freedom


def test_smallest_breaks_ties_by_row():
    values = np.array([3.0, 1.0, 2.0, 1.0, 5.0])
    rows = np.array([10, 40, 20, 30, 0])
    pos = rowkeys.smallest(values, rows, 3)
    np.testing.assert_array_equal(pos, [3, 1, 2])  # 1.0 (row 30), 1.0 (row 40), 2.0
    np.testing.assert_array_equal(rowkeys.smallest(values, rows, 9), [3, 1, 2, 0, 4])
    assert rowkeys.smallest(values, rows, 0).size == 0


def test_weighted_keys_follow_the_weights():
    w = np.array([1.0, 3.0, 0.0])
    firsts = np.zeros(3)
    for seed in range(4000):
        firsts[np.argmin(rowkeys.weighted_keys(seed, rowkeys.LANDMARKS, np.arange(3), w))] += 1
    assert firsts[2] == 0
    assert abs(firsts[1] / firsts.sum() - 0.75) < 0.03


@pytest.mark.parametrize("seed", [0, 2**63 + 5, -3])
def test_keys_of_many_rows_mixed_in_place_are_the_keys_of_each_row(seed):
    """Keys of 4,096 rows or more are mixed in place (one temporary); the keys are those
    of the same rows a few at a time (the expression), whatever the rows' integer type."""
    rows = np.arange(50_000, dtype=np.int64) * 7 + 3
    for stream in (rowkeys.SPLIT, rowkeys.LEAKAGE, rowkeys.GFC_FOLDS):
        many = rowkeys.keys(seed, stream, rows)
        few = np.concatenate([rowkeys.keys(seed, stream, rows[i:i + 1000])
                              for i in range(0, rows.size, 1000)])
        assert many.dtype == np.uint64 and np.array_equal(many, few)
        unsigned = rows.astype(np.uint64)
        assert np.array_equal(rowkeys.keys(seed, stream, unsigned), many)
        assert np.array_equal(unsigned, rows)  # the rows given are not written over
    assert rowkeys.keys(seed, rowkeys.SPLIT, 12) == rowkeys.keys(seed, rowkeys.SPLIT,
                                                                  rows[:1] * 0 + 12)[0]


def test_the_finaliser_allocating_and_in_place_give_splitmix64s_values():
    """``_mix`` (a new array) and ``_mix_in_place`` (over its argument) are SplitMix64's
    finaliser, bit for bit, on random uint64 values — checked against the finaliser in
    Python integers — and ``_mix`` leaves its argument as it was."""
    mask = (1 << 64) - 1

    def finaliser(z: int) -> int:
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    x = np.random.default_rng(11).integers(0, 2**64, size=5000, dtype=np.uint64,
                                           endpoint=False)
    x[:3] = [0, 1, 2**64 - 1]
    given = x.copy()
    mixed = rowkeys._mix(x)
    assert np.array_equal(x, given) and mixed.dtype == np.uint64
    in_place = rowkeys._mix_in_place(x)
    assert in_place is x and np.array_equal(in_place, mixed)
    assert [int(v) for v in mixed[:500]] == [finaliser(int(v)) for v in given[:500]]
    with np.errstate(over="ignore"):  # (numpy warns of a scalar's wrapping, as keys() knows)
        scalar = rowkeys._mix(given[3])  # a scalar gives a scalar
    assert isinstance(scalar, np.uint64) and scalar == mixed[3]
