"""Randomly pivoted Cholesky landmarks in memory (Y. Chen, E. Epperly, J. Tropp,
R. Webber, "Randomly pivoted Cholesky", 2022), one pivot at a time on the stored factor or,
above :data:`~kernel_lab.core.nystrom.common.RPC_STORED_MAX`, with pivots proposed in blocks
and accepted by rejection (E. Epperly, J. Tropp, R. Webber, "Embrace rejection", 2024). The
candidates' residual, the rejection step and the residual of a block of rows are shared
with the partitioned sampler."""

from __future__ import annotations

import math
import time

import numpy as np

from kernel_lab.core.kernels import Kernel
from kernel_lab.core.lapack import lower_inverse, times_lower_transposed
from kernel_lab.core.nystrom.common import (
    BLOCK_ENTRIES,
    RPC_EMPTY_ROUNDS,
    RPC_MAX_PROPOSALS,
    RPC_STORED_MAX,
    CountingKernel,
    Sample,
    Sampler,
    check_rows,
)


class RPCholeskySampler(Sampler):
    """Randomly pivoted Cholesky: pivot i with probability ∝ the residual diagonal, then
    update the residual by the new Cholesky column (one kernel column per landmark).

    While n·s ≤ :data:`RPC_STORED_MAX` the n × s factor is kept and pivots are drawn one at
    a time. Above, the accelerated form of Epperly, Tropp & Webber draws pivots with the
    same law in bounded memory: each round proposes b points i.i.d. ∝ the residual diagonal
    d at its start and goes through them in order, accepting each with probability (its
    residual now) / d — the candidates' residual matrix is updated by a Schur complement
    after each acceptance, and residuals only fall, so every accepted pivot is distributed
    ∝ the current residual, as one drawn alone. After a round d is recomputed over row
    blocks as ``k(x, x) − ‖K(x, S) L⁻ᵀ‖²`` (L the Cholesky factor of K_SS), so only d and
    s × s matrices are kept; each round costs n |S| kernel evaluations (a few rounds: a
    few n s in all, reported as evaluated). The two forms draw different pivots from one
    seed; the check that the residual is exhausted (the rest then drawn uniformly) is made
    per pivot in the first, per round in the second.

    Parameters
    ----------
    accelerated : bool or None
        Force one form; None chooses by n·s.
    """

    name = "rp-cholesky"
    title = "RP-Cholesky"

    def __init__(self, accelerated: bool | None = None) -> None:
        self.accelerated = accelerated

    def sample(self, X: np.ndarray, kernel: Kernel, s: int, rng: np.random.Generator) -> Sample:
        t0 = time.perf_counter()
        n = check_rows(X, s)
        counter = CountingKernel(kernel)
        first = counter.diag(X).astype(np.float64)
        accelerated = n * s > RPC_STORED_MAX if self.accelerated is None else self.accelerated
        marks: list[tuple[float, int]] = []
        chosen = (_rpc_rounds if accelerated else _rpc_stored)(X, counter, first, s, rng,
                                                               marks)
        order = np.asarray(chosen, dtype=np.int64)
        at = np.array([(t - t0, e) for t, e in marks], dtype=float).reshape(-1, 2)
        return Sample(np.sort(order), first / first.sum() * s, counter.evaluations,
                      order=order, marks=at)


def _mark(marks: list[tuple[float, int]] | None, counter: CountingKernel, k: int) -> None:
    """Note that k more pivots are final now (time and kernel entries so far)."""
    if marks is not None:
        marks.extend([(time.perf_counter(), counter.evaluations)] * k)


def _rpc_stored(X: np.ndarray, counter: CountingKernel, first: np.ndarray, s: int,
                rng: np.random.Generator, marks: list[tuple[float, int]] | None = None
                ) -> list[int]:
    """RP-Cholesky one pivot at a time on the stored n × s factor (Chen et al., Alg. 1)."""
    n = X.shape[0]
    d = first
    F = np.zeros((n, s))
    chosen: list[int] = []
    for i in range(s):
        total = d.sum()
        if total <= 1e-12 * first.sum():  # the rest is (numerically) explained
            rest = np.setdiff1d(np.arange(n), chosen)
            chosen += list(rng.choice(rest, size=s - i, replace=False))
            _mark(marks, counter, s - i)
            break
        piv = int(rng.choice(n, p=d / total))
        col = counter(X, X[piv: piv + 1])[:, 0]
        g = col - F[:, :i] @ F[piv, :i]
        F[:, i] = g / math.sqrt(max(g[piv], 1e-300))
        d = np.clip(d - F[:, i] ** 2, 0.0, None)
        d[piv] = 0.0
        chosen.append(piv)
        _mark(marks, counter, 1)
    return chosen


def _rpc_rounds(X: np.ndarray, counter: CountingKernel, first: np.ndarray, s: int,
                rng: np.random.Generator, marks: list[tuple[float, int]] | None = None
                ) -> list[int]:
    """Accelerated RP-Cholesky (proposals in blocks, accepted by rejection) keeping only
    the residual diagonal and the s × s Cholesky factor of K_SS."""
    n = X.shape[0]
    d = first.copy()
    L = np.zeros((s, s))  # Cholesky factor of K_SS, pivots in the order accepted
    chosen: list[int] = []
    rate, empty = 1.0, 0
    while len(chosen) < s:
        k, need = len(chosen), s - len(chosen)
        total = float(d.sum())
        if total <= 1e-12 * float(first.sum()):  # the rest is (numerically) explained
            rest = np.setdiff1d(np.arange(n), chosen)
            chosen += [int(i) for i in rng.choice(rest, size=need, replace=False)]
            _mark(marks, counter, need)
            break
        b = min(RPC_MAX_PROPOSALS, max(need, math.ceil(1.25 * need / rate)))
        T = rng.choice(n, size=b, p=d / total)
        u = rng.random(b)
        H, FT = candidate_residual(counter, X[T], X[chosen], L[:k, :k])
        acc, cols, tried = accept_pivots(H, T, u, d[T], need)
        a = len(acc)
        rate = max(a / tried, 1.0 / 16.0)
        if not a:
            empty += 1
            if empty == RPC_EMPTY_ROUNDS:
                d[:] = 0.0
            continue
        empty = 0
        L[k:k + a, :k] = FT[acc]
        L[k:k + a, k:k + a] = cols[acc, :a]
        chosen += [int(T[j]) for j in acc]
        _mark(marks, counter, a)
        if len(chosen) < s:
            d = _rpc_residual(X, counter, first, chosen, L[:k + a, :k + a])
    return chosen


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


def _rpc_residual(X: np.ndarray, counter: CountingKernel, first: np.ndarray,
                  chosen: list[int], L: np.ndarray) -> np.ndarray:
    """The residual diagonal ``k(x, x) − ‖K(x, S) L⁻ᵀ‖²`` over row blocks of at most
    :data:`BLOCK_ENTRIES` kernel entries, clipped at 0 and 0 on the pivots."""
    n = X.shape[0]
    XS = X[chosen]
    Linv = lower_inverse(L)
    d = np.empty(n)
    rows = max(1, BLOCK_ENTRIES // len(chosen))
    for start in range(0, n, rows):
        d[start:start + rows] = residual_rows(counter, X[start:start + rows],
                                              first[start:start + rows], XS, Linv)
    d[chosen] = 0.0
    return d

