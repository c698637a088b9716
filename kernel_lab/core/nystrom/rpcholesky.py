"""The numerics of randomly pivoted Cholesky (Y. Chen, E. Epperly, J. Tropp, R. Webber,
"Randomly pivoted Cholesky", 2022; with pivots proposed in blocks and accepted by rejection:
E. Epperly, J. Tropp, R. Webber, "Embrace rejection", 2024): the candidates' residual, the
rejection step, the residual of a block of rows, and the one-at-a-time form on rows held
together. The sampler (per-row keys) is
:func:`kernel_lab.core.nystrom.landmarks.rp_cholesky_landmarks`."""

from __future__ import annotations

import math
import time

import numpy as np

from kernel_lab.core.kernels import Kernel
from kernel_lab.core.lapack import lower_inverse, times_lower_transposed
from kernel_lab.core.nystrom.common import RPC_EMPTY_ROUNDS, CountingKernel
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import keys


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


def stored_pivots(X: np.ndarray, index: np.ndarray, kernel: Kernel, s: int, seed: int,
                  fill_stream: int, t0: float, progress: Progress | None = None
                  ) -> tuple[np.ndarray, np.ndarray, int]:
    """RP-Cholesky one pivot at a time keeping the n × s factor of the rows X (global
    indices ``index``; Chen et al., Algorithm 1): the residual diagonal d is updated by
    each new Cholesky column (one kernel column per pivot), and pivot r is the row where
    the running sum of d (in row order) first exceeds ``U_r · Σd``, U_r the uniform of
    stream ``RPC_ROUND`` at position r (the round number in the place of a row) — a draw
    ∝ d; when d is exhausted the rest are the
    rows of smallest key in ``fill_stream``. Returns the pivots' positions in X in the
    order drawn, the seconds since ``t0`` and kernel entries when each was final (s × 2),
    and the kernel entries evaluated."""
    n = index.size
    counter = CountingKernel(kernel)
    first = counter.diag(X).astype(np.float64)
    first_total = float(first.sum())
    d = first.copy()
    F = np.zeros((n, s))
    chosen: list[int] = []
    marks: list[tuple[float, int]] = []
    rnd = empty = 0
    rounds = keys.uniforms(seed, keys.RPC_ROUND, np.arange(s + RPC_EMPTY_ROUNDS))
    while len(chosen) < s:
        k = len(chosen)
        if progress is not None and k % 64 == 0:
            progress(k / s, f"RP-Cholesky: {k} of {s} pivots")
        if not float(d.sum()) > 1e-12 * first_total or empty == RPC_EMPTY_ROUNDS:
            rest = np.flatnonzero(~np.isin(np.arange(n), chosen))
            pick = rest[keys.smallest(keys.keys(seed, fill_stream, index[rest]), index[rest],
                                      s - k)]
            chosen += [int(j) for j in pick]
            marks += [(time.perf_counter() - t0, counter.evaluations)] * pick.size
            break
        positive = np.flatnonzero(d > 0.0)
        running = np.cumsum(d[positive])
        if rnd == rounds.size:  # (a rejection takes a round without a pivot)
            rounds = keys.uniforms(seed, keys.RPC_ROUND, np.arange(2 * rnd))
        u = float(rounds[rnd])
        rnd += 1
        j = int(positive[min(int(np.searchsorted(running, u * running[-1], side="right")),
                             positive.size - 1)])
        g = counter(X, X[j:j + 1])[:, 0] - F[:, :k] @ F[j, :k]
        if not g[j] > 0.0:  # only rounding left in its residual: propose again
            d[j] = 0.0
            empty += 1
            continue
        empty = 0
        F[:, k] = g / math.sqrt(g[j])
        d = np.clip(d - F[:, k] ** 2, 0.0, None)
        d[j] = 0.0
        chosen.append(j)
        marks.append((time.perf_counter() - t0, counter.evaluations))
    return (np.asarray(chosen, dtype=np.int64), np.array(marks, dtype=float).reshape(-1, 2),
            counter.evaluations)
