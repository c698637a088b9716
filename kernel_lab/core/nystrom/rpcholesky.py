"""The numerics of randomly pivoted Cholesky (Y. Chen, E. Epperly, J. Tropp, R. Webber,
"Randomly pivoted Cholesky", 2022; with pivots proposed in blocks and accepted by rejection:
E. Epperly, J. Tropp, R. Webber, "Embrace rejection", 2024): the candidates' residual, the
rejection step and the residual of a block of rows. The sampler (per-row keys) is
:func:`kernel_lab.core.parts.landmarks.rp_cholesky_landmarks`."""

from __future__ import annotations

import math

import numpy as np

from kernel_lab.core.lapack import lower_inverse, times_lower_transposed
from kernel_lab.core.nystrom.common import CountingKernel


def candidate_residual(counter: CountingKernel, XT: np.ndarray, XS: np.ndarray,
                       L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The residual kernel matrix ``H = K_TT − F_T F_Tᵀ`` on proposed pivots T after the
    pivots S (``L`` the Cholesky factor of K_SS), and ``F_T = K_TS L⁻ᵀ``."""
    H = counter(XT)
    FT = np.zeros((XT.shape[0], 0))
    if XS.shape[0]:
        FT = times_lower_transposed(counter(XT, XS), lower_inverse(L), overwrite=True)
        H -= FT @ FT.T
    return H, FT


def accept_pivots(H: np.ndarray, T: np.ndarray, u: np.ndarray, d_T: np.ndarray, need: int
                  ) -> tuple[list[int], np.ndarray, int]:
    """The rejection step of accelerated RP-Cholesky on one block of proposals: going
    through the candidates ``T`` in order, accept candidate j when its current residual
    ``H_jj`` exceeds ``u_j · d_T[j]`` (``d_T`` the residual diagonal the proposals were drawn
    by), then update the candidates' residual ``H`` (b × b, changed in place) by a Schur
    complement. Returns the accepted positions, the new Cholesky columns on the candidates
    (b × need, column a for the a-th acceptance) and the candidates tried."""
    b = T.size
    cols = np.zeros((b, need))
    acc: list[int] = []
    taken: set[int] = set()
    tried = 0
    for j in range(b):
        if len(acc) == need:
            break
        tried += 1
        h = H[j, j]
        if int(T[j]) in taken or not h > u[j] * d_T[j]:
            continue
        col = H[j:, j] / math.sqrt(h)
        H[j:, j:] -= np.outer(col, col)
        cols[j:, len(acc)] = col
        acc.append(j)
        taken.add(int(T[j]))
    return acc, cols, tried


def residual_rows(counter: CountingKernel, X: np.ndarray, first: np.ndarray, XS: np.ndarray,
                  Linv: np.ndarray) -> np.ndarray:
    """``k(x, x) − ‖k(x, S) L⁻ᵀ‖²`` for the rows of X (``first`` their k(x, x); ``Linv``
    the lower-triangular L⁻¹), clipped at 0: RP-Cholesky's residual diagonal on one block
    of rows."""
    F = times_lower_transposed(counter(X, XS), Linv, overwrite=True)
    return np.clip(first - np.einsum("ij,ij->i", F, F), 0.0, None)
