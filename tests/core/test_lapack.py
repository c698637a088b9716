"""The GIL-free Cholesky factor and triangular solves (kernel_lab.core.lapack) against
SciPy's, and that another thread runs while they do."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import scipy.linalg as sla

from kernel_lab.core import lapack


def _spd(n: int, seed: int = 0) -> np.ndarray:
    A = np.random.default_rng(seed).normal(size=(n, n))
    return A @ A.T + n * np.eye(n)


@pytest.mark.parametrize("n", [0, 1, 7, 300])
def test_the_factor_is_scipys(n):
    A = _spd(n)
    L = lapack.cholesky_lower(A)
    ref = sla.cho_factor(A, lower=True, check_finite=False)[0]
    # the same routine on the transposed layout: equal up to rounding, entry by entry
    # relative to the factor's scale (a tiny entry may differ in its leading digits)
    scale = float(np.abs(ref).max(initial=1.0))
    np.testing.assert_allclose(np.tril(L), np.tril(ref), rtol=0, atol=1e-13 * scale)
    np.testing.assert_array_equal(A, _spd(n))  # not overwritten unless asked
    if n:
        np.testing.assert_allclose(np.tril(L) @ np.tril(L).T, A, rtol=0,
                                   atol=1e-13 * np.abs(A).max())


def test_overwrite_factors_in_place_and_a_non_positive_matrix_raises():
    A = _spd(50)
    L = lapack.cholesky_lower(A, overwrite=True)
    assert L is A
    B = _spd(20)
    B[5, 5] = -1.0
    with pytest.raises(np.linalg.LinAlgError):
        lapack.cholesky_lower(B)


@pytest.mark.parametrize("n,block", [(0, 4), (1, 4), (7, 3), (300, 64), (517, 192),
                                     (130, 500)])
def test_the_factor_in_blocks_is_the_whole_factor(n, block, monkeypatch):
    """Left-looking blocks of columns: the factor of A + shift·I as one dpotrf gives it (to
    rounding: the same operations in another order), ``between`` asked between pieces,
    A not written, the upper triangle outside the diagonal blocks left as it was."""
    A, shift = _spd(n, 3), 0.25
    ref = lapack.cholesky_lower(A + shift * np.eye(n))
    out = np.full((n, n), 7.0)
    calls = []
    monkeypatch.setattr(lapack, "CHOLESKY_ROWS", 100)
    L = lapack.cholesky_in_blocks(A, shift, out, lambda: calls.append(1), block=block)
    # before each block, and before each further piece of 100 rows of its product
    assert L is out and len(calls) == sum(-(-(n - lo) // 100) if lo else 1
                                          for lo in range(0, n, block))
    scale = float(np.abs(np.tril(ref)).max(initial=1.0))
    np.testing.assert_allclose(np.tril(L), np.tril(ref), rtol=0, atol=1e-13 * scale)
    np.testing.assert_array_equal(A, _spd(n, 3))
    outside = np.triu(np.ones((n, n), dtype=bool), 1)
    for lo in range(0, n, block):
        outside[lo:lo + block, lo:lo + block] = False
    assert np.all(L[outside] == 7.0)


def test_the_factor_in_blocks_stops_where_between_raises_and_refuses_an_indefinite_matrix():
    A = _spd(100)
    seen = []

    def between() -> None:
        seen.append(1)
        if len(seen) == 3:
            raise KeyboardInterrupt  # any exception: the caller's own
    with pytest.raises(KeyboardInterrupt):
        lapack.cholesky_in_blocks(A, 0.0, np.empty((100, 100)), between, block=16)
    assert len(seen) == 3
    B = _spd(40)
    B[30, 30] = -1e3  # the leading minors go indefinite in the second block
    with pytest.raises(np.linalg.LinAlgError):
        lapack.cholesky_in_blocks(B, 0.0, np.empty((40, 40)), block=16)
    with pytest.raises(ValueError):
        lapack.cholesky_in_blocks(A, 0.0, np.empty((100, 100), order="F"))


def test_a_right_hand_side_of_the_wrong_shape_is_refused():
    """LAPACK would read past the end of the buffer: a ValueError instead."""
    L = lapack.cholesky_lower(_spd(40))
    for B in (np.ones(3), np.ones((41, 2)), np.ones((40, 2, 2))):
        with pytest.raises(ValueError):
            lapack.solve_lower(L, B)
    with pytest.raises(ValueError):
        lapack.solve_lower(L[:, :30].copy(), np.ones(40))
    with pytest.raises(ValueError):
        lapack.cholesky_lower(np.ones((3, 4)))


@pytest.mark.parametrize("shape", [(200,), (200, 1), (200, 3)])
@pytest.mark.parametrize("trans", [False, True])
def test_the_solves_are_scipys(shape, trans):
    L = lapack.cholesky_lower(_spd(200, 1))
    B = np.random.default_rng(2).normal(size=shape)
    X = lapack.solve_lower(L, B, trans)
    ref = sla.solve_triangular(L, B, lower=True, trans="T" if trans else "N",
                               check_finite=False)
    assert X.shape == ref.shape
    np.testing.assert_allclose(X, ref, rtol=1e-13, atol=1e-15)
    T = np.tril(L)
    np.testing.assert_allclose((T.T if trans else T) @ X, B, atol=1e-12)


@pytest.mark.skipif(not lapack._LAPACK, reason="SciPy's LAPACK entry points not reachable")
def test_another_thread_runs_during_a_factorisation():
    """A thread counting while a factorisation runs in another counts on (the GIL is
    free): SciPy's own call would stop it for the whole factorisation."""
    A = _spd(1500)
    counts = []
    done = threading.Event()

    def factor() -> None:
        for _ in range(3):
            lapack.cholesky_lower(A)
        done.set()

    t = threading.Thread(target=factor)
    start = time.perf_counter()
    t.start()
    gaps = []
    last = time.perf_counter()
    while not done.is_set():
        time.sleep(0.0005)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
        counts.append(1)
    t.join()
    elapsed = time.perf_counter() - start
    # the factorisations took a while, and the counting thread woke up throughout
    assert len(counts) >= 5
    assert max(gaps) < 0.5 * elapsed


@pytest.mark.parametrize("layout", ["c", "fortran", "slice"])
def test_times_lower_transposed_is_the_product_with_the_lower_triangle(layout):
    """``B Lᵀ`` by numpy's BLAS trmm equals the general product with the lower triangle
    (L's upper triangle, here noise, is not read), for B in any memory layout."""
    rng = np.random.default_rng(3)
    L = rng.normal(size=(37, 37))
    big = rng.normal(size=(120, 50))
    B = {"c": big[:, :37].copy(), "fortran": np.asfortranarray(big[:, :37]),
         "slice": big[::2, 3:40]}[layout]
    before = B.copy()
    out = lapack.times_lower_transposed(B, L)
    np.testing.assert_allclose(out, B @ np.tril(L).T, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(B, before)  # not overwritten unless asked


def test_times_lower_transposed_writes_over_b_when_asked():
    rng = np.random.default_rng(4)
    L, B = np.tril(rng.normal(size=(20, 20))), rng.normal(size=(9, 20))
    want = B @ L.T
    out = lapack.times_lower_transposed(B, L, overwrite=True)
    np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-13)
    if lapack._TRMM[np.dtype(np.float64)] is not None:
        assert out is B


def test_times_lower_transposed_in_float32_is_the_single_precision_product():
    """Both operands float32: ``strmm``, within float32 rounding of the float64 product
    (the componentwise bound ``m u |B| |L|ᵀ``), written over B when asked; a float32 B
    with a float64 L is a float64 product."""
    rng = np.random.default_rng(6)
    L64 = np.tril(rng.normal(size=(33, 33)))
    B32, L32 = rng.random((50, 33)).astype(np.float32), L64.astype(np.float32)
    want = B32.astype(np.float64) @ L32.astype(np.float64).T
    bound = 33 * 2.0**-24 * (np.abs(B32.astype(np.float64)) @ np.abs(L32.astype(np.float64)).T)
    out = lapack.times_lower_transposed(B32.copy(), L32)
    assert out.dtype == np.float32
    assert np.all(np.abs(out - want) <= bound)
    assert np.abs(out - want).max() > 0.0  # really single precision
    work = B32.copy()
    out = lapack.times_lower_transposed(work, L32, overwrite=True)
    if lapack._TRMM[np.dtype(np.float32)] is not None:
        assert out is work
    mixed = lapack.times_lower_transposed(B32, L64)
    assert mixed.dtype == np.float64
    np.testing.assert_allclose(mixed, B32.astype(np.float64) @ L64.T, rtol=1e-13, atol=1e-13)


def test_times_lower_transposed_finds_numpy_trmm_and_checks_shapes():
    lapack.times_lower_transposed(np.zeros((0, 3)), np.eye(3))
    if np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"] == "scipy-openblas":
        # numpy's wheels ship OpenBLAS with cblas_dtrmm and cblas_strmm
        assert lapack._TRMM[np.dtype(np.float64)] is not None
        lapack.times_lower_transposed(np.zeros((0, 3), np.float32), np.eye(3, dtype=np.float32))
        assert lapack._TRMM[np.dtype(np.float32)] is not None
    with pytest.raises(ValueError, match="square L"):
        lapack.times_lower_transposed(np.zeros((4, 3)), np.eye(4))
    with pytest.raises(ValueError, match="square L"):
        lapack.times_lower_transposed(np.zeros((4, 3)), np.zeros((3, 2)))


def test_times_lower_transposed_copies_views_blas_cannot_read():
    """A one-row view with a reversed or zero row stride counts as contiguous in numpy;
    BLAS refuses its leading dimension and left B unchanged: such views are copied."""
    L = np.array([[1.0, 0.0], [3.0, 0.0]])[::-1][:1, :1]  # [[3.]], row stride −16
    np.testing.assert_array_equal(lapack.times_lower_transposed(np.ones((3, 1)), L),
                                  np.full((3, 1), 3.0))
    B = np.ones((2, 2))[::-1][:1]  # one row, negative stride
    np.testing.assert_array_equal(
        lapack.times_lower_transposed(B, np.array([[2.0, 0.0], [1.0, 1.0]]), overwrite=True),
        [[2.0, 2.0]])
