"""A Cholesky factor and triangular solves that let other threads run meanwhile, and a
triangular matrix product in numpy's own BLAS.

SciPy's ``cho_factor`` and ``solve_triangular`` hold Python's global interpreter lock for
the whole LAPACK call: while the Playground's worker factorised ``K + λI`` (n = 1000,
about 11 ms on one core), the window's thread could not run a line of Python, and its
repaint waited (measured: a thread sleeping 1 ms woke up to 10 ms late; numpy's
``cholesky`` lets go of the lock but took 40 ms for the same matrix). These call the same
LAPACK routines (``dpotrf``, ``dtrtrs``: SciPy's own, through the C entry points of
:mod:`scipy.linalg.cython_lapack`) by :mod:`ctypes`, which releases the lock during a
foreign call. The results are those of the SciPy functions to rounding (the same routine
on the transposed layout); where the entry points cannot be reached, the SciPy functions
are used.

:func:`times_lower_transposed` is BLAS ``trmm`` (a product with a triangular matrix, half
the work of a general one; ``dtrmm``, or ``strmm`` for float32), which numpy does not
offer: it is called in numpy's own OpenBLAS (found through threadpoolctl, which the project
uses to limit BLAS threads), so it runs on the threads numpy's products use. SciPy's
``dtrmm`` would run in the second OpenBLAS that SciPy's wheel bundles, whose threads keep
spinning after a call and halved the speed of numpy's next product (see
:func:`kernel_lab.core.nystrom.scores.ridge_factor`). Where numpy's library or its symbol
cannot be found, or a small self-check fails, a general product gives the same result.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as sla

from kernel_lab.core.executor import blas_controller, one_blas_thread

_P = ctypes.POINTER(ctypes.c_int)
_SIGNATURES: dict[str, Any] = {
    # void dpotrf(char *uplo, int *n, double *a, int *lda, int *info)
    "dpotrf": ctypes.CFUNCTYPE(None, ctypes.c_char_p, _P, ctypes.c_void_p, _P, _P),
    # void dtrtrs(char *uplo, char *trans, char *diag, int *n, int *nrhs, double *a,
    #             int *lda, double *b, int *ldb, int *info)
    "dtrtrs": ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _P,
                               _P, ctypes.c_void_p, _P, ctypes.c_void_p, _P, _P),
}


def _entry_points() -> dict[str, Any]:
    """The LAPACK routines as ctypes functions (which release the GIL), or {}."""
    try:
        from scipy.linalg import cython_lapack

        # private prototypes of the capsule functions (ctypes.pythonapi's own are shared
        # with the rest of the process)
        get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
            ("PyCapsule_GetName", ctypes.pythonapi))
        get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", ctypes.pythonapi))
        out = {}
        for name, kind in _SIGNATURES.items():
            capsule = cython_lapack.__pyx_capi__[name]
            out[name] = kind(get_pointer(capsule, get_name(capsule)))
        return out
    except Exception:  # another SciPy layout: its own functions (they hold the GIL)
        return {}


_LAPACK = _entry_points()


def _int(v: int) -> Any:
    return ctypes.byref(ctypes.c_int(v))


def cholesky_lower(A: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """The lower Cholesky factor L of a symmetric positive definite ``A`` (A = LLᵀ), as
    ``scipy.linalg.cho_factor(A, lower=True)[0]``: L in the lower triangle, A's entries
    above it. Raises ``numpy.linalg.LinAlgError`` when A is not positive definite."""
    n = A.shape[0] if A.ndim else 0
    if A.shape != (n, n):
        raise ValueError(f"a square matrix is needed, not {A.shape}")
    if "dpotrf" not in _LAPACK:
        return sla.cho_factor(A, lower=True, overwrite_a=overwrite, check_finite=False)[0]
    # a C-ordered symmetric matrix is its own transpose: LAPACK's upper factor U of the
    # column-major view (A = UᵀU) is, read row by row, the lower factor L = Uᵀ
    M = A if overwrite and A.dtype == np.float64 and A.flags.c_contiguous and \
        A.flags.writeable else np.array(A, dtype=np.float64, order="C")
    if n == 0:
        return M
    info = ctypes.c_int(0)
    _LAPACK["dpotrf"](b"U", _int(n), M.ctypes.data, _int(n), ctypes.byref(info))
    if info.value > 0:
        raise np.linalg.LinAlgError(
            f"{info.value}-th leading minor not positive definite")
    if info.value < 0:
        raise ValueError(f"illegal value in argument {-info.value} of dpotrf")
    return M


def solve_lower(L: np.ndarray, B: np.ndarray, trans: bool = False) -> np.ndarray:
    """``L⁻¹B`` (``trans``: ``L⁻ᵀB``) for the lower triangle of ``L`` (its upper
    triangle is not read), as ``scipy.linalg.solve_triangular(L, B, lower=True)``. B of
    shape (n,) or (n, k)."""
    n = L.shape[0] if L.ndim else 0
    X = np.array(B, dtype=np.float64, order="F", ndmin=1)
    if L.shape != (n, n) or X.ndim > 2 or X.shape[0] != n:
        raise ValueError(f"a square L and n rows of B are needed, not {L.shape} and "
                         f"{X.shape}")
    if "dtrtrs" not in _LAPACK or not (L.dtype == np.float64 and L.flags.c_contiguous):
        return sla.solve_triangular(L, X, lower=True, trans="T" if trans else "N",
                                    check_finite=False)
    if n == 0 or X.size == 0:
        return X
    k = 1 if X.ndim == 1 else X.shape[1]
    info = ctypes.c_int(0)
    # the C-ordered lower L is the column-major upper U = Lᵀ: L x = b is Uᵀx = b
    _LAPACK["dtrtrs"](b"U", b"N" if trans else b"T", b"N", _int(n), _int(k), L.ctypes.data,
                      _int(n), X.ctypes.data, _int(n), ctypes.byref(info))
    if info.value > 0:
        raise np.linalg.LinAlgError(f"singular matrix: the {info.value}-th diagonal entry "
                                    "is zero")
    if info.value < 0:
        raise ValueError(f"illegal value in argument {-info.value} of dtrtrs")
    return X


#: Columns per block of :func:`cholesky_in_blocks`, and rows per piece of a block's
#: product with the earlier columns: with n = 3,746 the largest piece is about 0.4 GFLOP,
#: some 10 ms on one core of a machine whose ``eigh`` of 1000 × 1000 takes 140 ms — about
#: the longest a caller waits for its ``between``.
CHOLESKY_BLOCK = 192
CHOLESKY_ROWS = 1024


def cholesky_in_blocks(A: np.ndarray, shift: float, out: np.ndarray,
                       between: Callable[[], None] | None = None,
                       block: int = CHOLESKY_BLOCK) -> np.ndarray:
    """The lower Cholesky factor of ``A + shift·I`` (A symmetric, its lower triangle read),
    written into ``out`` (n × n, C-ordered float64; zeros above the diagonal within each
    diagonal block, the rest of the upper triangle left as it was), one block of columns
    at a time, left-looking: block j is A's columns minus one product with the factor's
    earlier columns, then a Cholesky factor of its diagonal block
    (:func:`cholesky_lower`) and a triangular solve for the rows below. ``between()`` is
    called before each block and each piece of its product: it may raise to stop (the
    caller drops ``out``). The same
    operations as one ``dpotrf`` (n³/3; on one thread, n = 3,746: 504 ms against 512),
    in pieces a caller can give way between; raises ``numpy.linalg.LinAlgError`` when
    the matrix is not numerically positive definite."""
    n = A.shape[0]
    if A.shape != (n, n) or out.shape != (n, n) or out.dtype != np.float64 \
            or not out.flags.c_contiguous:
        raise ValueError(f"a square A and a C-ordered float64 out of its shape are needed, "
                         f"not {A.shape} and {out.shape}")
    for lo in range(0, n, block):
        if between is not None:
            between()
        hi = min(lo + block, n)
        col = out[lo:, lo:hi]
        col[...] = A[lo:, lo:hi]
        for r0 in range(lo, n, CHOLESKY_ROWS) if lo else ():
            if r0 > lo and between is not None:
                between()
            r1 = min(r0 + CHOLESKY_ROWS, n)
            out[r0:r1, lo:hi] -= out[r0:r1, :lo] @ out[lo:hi, :lo].T
        m = hi - lo
        diag = np.array(col[:m])  # contiguous, for LAPACK
        diag.flat[:: m + 1] += shift
        L11 = np.tril(cholesky_lower(diag, overwrite=True))
        col[:m] = L11
        if hi < n:  # the rows below: L21 = A21 L11⁻ᵀ
            col[m:] = solve_lower(L11, col[m:].T).T
    return out


#: :func:`lower_inverse` solves triangles of at most this many rows directly.
TRIANGLE_BASE = 64


def lower_inverse(L: np.ndarray) -> np.ndarray:
    """``L⁻¹`` of a small lower-triangular factor, to apply to many rows in one product
    (exactly lower triangular): by halves, ``[[A, 0], [B, C]]⁻¹ = [[A⁻¹, 0], [−C⁻¹ B A⁻¹,
    C⁻¹]]`` (LAPACK's ``trtri`` by blocks) in numpy's BLAS on one thread, down to
    :data:`TRIANGLE_BASE` rows solved directly. About m³/3 operations where a general
    solve against the identity took 8/3 m³ (410 rows: 2.5 against 15 ms); numpy's rather
    than SciPy's, see :func:`kernel_lab.core.nystrom.scores.ridge_factor`."""
    with one_blas_thread():
        return _lower_inverse_halves(L)


def _lower_inverse_halves(L: np.ndarray) -> np.ndarray:
    m = L.shape[0]
    if m <= TRIANGLE_BASE:
        # the solve's pivoting leaves rounding above the diagonal: zero, as L⁻¹ is there
        return np.tril(np.linalg.solve(L, np.eye(m)))
    h = m // 2
    A = _lower_inverse_halves(L[:h, :h])
    C = _lower_inverse_halves(L[h:, h:])
    inv = np.zeros((m, m))
    inv[:h, :h] = A
    inv[h:, h:] = C
    inv[h:, :h] = -(C @ (L[h:, :h] @ A))
    return inv


_CBLAS_ROW_MAJOR, _CBLAS_RIGHT, _CBLAS_LOWER, _CBLAS_TRANS, _CBLAS_NON_UNIT = \
    101, 142, 122, 112, 131


#: The C type of alpha and the names of numpy's OpenBLAS ``trmm`` per element type.
_TRMM_KINDS: dict[Any, tuple[Any, tuple[str, ...]]] = {
    np.dtype(np.float64): (ctypes.c_double, ("scipy_cblas_dtrmm64_", "cblas_dtrmm64_")),
    np.dtype(np.float32): (ctypes.c_float, ("scipy_cblas_strmm64_", "cblas_strmm64_")),
}


def _numpy_trmm(dtype: Any = np.float64) -> Any:
    """numpy's ``cblas_dtrmm`` (or ``cblas_strmm`` for float32; 64-bit integers, as numpy's
    wheels build OpenBLAS) as a ctypes function, or None."""
    try:
        alpha, names = _TRMM_KINDS[np.dtype(dtype)]
        here = os.path.dirname(os.path.abspath(np.__file__))
        for lib in blas_controller().lib_controllers:
            path = os.path.abspath(getattr(lib, "filepath", "") or "")
            if not (path.startswith(here) or os.path.basename(os.path.dirname(path))
                    .startswith("numpy")):
                continue  # another package's BLAS (SciPy's)
            dll = ctypes.CDLL(path)
            for name in names:
                fn = getattr(dll, name, None)
                if fn is None:
                    continue
                i64 = ctypes.c_int64
                fn.argtypes = [ctypes.c_int] * 5 + [i64, i64, alpha, ctypes.c_void_p, i64,
                                                    ctypes.c_void_p, i64]
                fn.restype = None
                if _trmm_checks(fn, np.dtype(dtype)):
                    return fn
        return None
    except Exception:  # no threadpoolctl view of numpy's BLAS: the general product
        return None


def _trmm_checks(fn: Any, dtype: Any = np.float64) -> bool:
    """Whether ``fn`` computes B Lᵀ on a small case as numpy's product does."""
    rng = np.random.default_rng(0)
    L = (np.tril(rng.random((5, 5))) + np.eye(5)).astype(dtype)
    B = rng.random((3, 5)).astype(dtype)
    want = B @ L.T
    _call_trmm(fn, B, L)
    return bool(np.allclose(B, want, rtol=1e-13 if dtype == np.float64 else 1e-5, atol=0.0))


def _call_trmm(fn: Any, B: np.ndarray, L: np.ndarray) -> None:
    n, m = B.shape
    size = B.itemsize
    fn(_CBLAS_ROW_MAJOR, _CBLAS_RIGHT, _CBLAS_LOWER, _CBLAS_TRANS, _CBLAS_NON_UNIT, n, m, 1.0,
       L.ctypes.data, L.strides[0] // size, B.ctypes.data, B.strides[0] // size)


def _rows_in_place(A: np.ndarray, dtype: Any = np.float64) -> bool:
    """Whether BLAS can read A as row-major with its own row stride as the leading
    dimension (numpy calls a one-row view contiguous whatever its stride)."""
    return (A.dtype == dtype and A.flags.c_contiguous
            and A.strides[0] == A.itemsize * max(1, A.shape[1]))


_TRMM: dict[Any, Any] = {}


def times_lower_transposed(B: np.ndarray, L: np.ndarray, overwrite: bool = False
                           ) -> np.ndarray:
    """``B Lᵀ`` for the lower triangle of ``L`` (m × m; its upper triangle is not read) and
    B of shape (n, m): BLAS ``trmm`` in numpy's OpenBLAS, about half the work of
    ``B @ L.T``. In float32 (``strmm``) when B and L both are float32, else in float64.
    With ``overwrite`` and a C-ordered B of that type, the result is written over B. The
    general product where numpy's ``trmm`` cannot be reached."""
    m = L.shape[0] if L.ndim == 2 else -1
    if L.shape != (m, m) or B.ndim != 2 or B.shape[1] != m:
        raise ValueError(f"B of shape (n, m) and a square L (m × m) are needed, not "
                         f"{B.shape} and {L.shape}")
    dtype = np.dtype(np.float32 if B.dtype == L.dtype == np.float32 else np.float64)
    if dtype not in _TRMM:
        _TRMM[dtype] = _numpy_trmm(dtype)
    fn = _TRMM[dtype]
    if fn is None:
        return B.astype(dtype, copy=False) @ np.tril(L).astype(dtype, copy=False).T
    out = B if (overwrite and _rows_in_place(B, dtype) and B.flags.writeable) else \
        np.array(B, dtype=dtype, order="C")
    Lc = L if _rows_in_place(L, dtype) else np.array(L, dtype=dtype, order="C")
    if out.size:
        _call_trmm(fn, out, Lc)
    return out
