"""``W^{-1/2}`` of the landmarks' kernel matrix on its numerically non-null eigenspace: the
Nyström normalisation in W's eigenbasis, shared by the estimators
(:mod:`kernel_lab.core.models.nystrom`) and the sums over a data set's parts
(:mod:`kernel_lab.core.ridge.fit`), which both import it from here."""

from __future__ import annotations

import numpy as np

from kernel_lab.core.executor import one_blas_thread

#: Eigenvalues of W below this fraction of the largest are treated as zero.
RCOND = 1e-12


def nystrom_factor(W: np.ndarray, rcond: float = RCOND) -> np.ndarray:
    """``W^{-1/2}`` restricted to the numerically non-null eigenspace of the symmetric W:
    returns ``V diag(e^{-1/2})`` of shape (s, r), r ≤ s, so that ``F = C · result``.
    The eigendecomposition runs on one BLAS thread (see
    :func:`~kernel_lab.core.executor.one_blas_thread`)."""
    with one_blas_thread():
        e, V = np.linalg.eigh(W)
    return eigen_factor(e, V, rcond)


def eigen_factor(e: np.ndarray, V: np.ndarray, rcond: float = RCOND) -> np.ndarray:
    """``V diag(e^{-1/2})`` over the eigenvalues ``e`` above ``rcond`` times the largest."""
    keep = e > rcond * max(float(e.max(initial=0.0)), 1e-300)
    return V[:, keep] / np.sqrt(e[keep])
