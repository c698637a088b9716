"""A Cholesky factor and triangular solves that let other threads run meanwhile.

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
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import scipy.linalg as sla

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
