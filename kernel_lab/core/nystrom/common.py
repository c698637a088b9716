"""What every Nyström landmark sampler shares: the counted kernel, the :class:`Sample` a
sampler returns, the budget check, the :class:`Sampler` interface and the
block and size constants (:mod:`kernel_lab.core.nystrom`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel

#: Algorithm 2 (fixed λ) halves n until a level has at most this many points, all of which
#: are its landmarks (the paper's base case, without the constants of its proof).
FIXED_LAMBDA_BASE = 64

#: Kernel entries of one row block (8 MiB of float64) that the scalable samplers evaluate at
#: a time: the rows of n × |S| kernel matrices are streamed, never held whole.
BLOCK_ENTRIES = 2**20

#: RP-Cholesky pivots one at a time (Chen et al., Algorithm 1) while its n × s factor fits in
#: one block (n·s ≤ this; kept when the training rows are few enough to gather, see
#: :func:`~kernel_lab.core.nystrom.landmarks.rp_cholesky_landmarks`); above, it proposes
#: pivots in blocks and accepts them by rejection (after Epperly, Tropp & Webber), keeping
#: only the residual diagonal, recomputed over row blocks after each block.
RPC_STORED_MAX = BLOCK_ENTRIES

#: Budget mode of recursive RLS: a level below the top keeps at most
#: ``max(s_rec, ceil(LEVEL_CAP · q · s_rec))`` points (q = log s_rec, its oversampling), thinned
#: uniformly (inclusion probabilities scaled alike). Kernel Lab's own: in neither Musco &
#: Musco's paper nor their reference code. It acts when the λ of a small level size comes out
#: too small (s_rec = 3 takes λ from k = 1 eigenvalue); see
#: :class:`~kernel_lab.core.nystrom.samplers.RecursiveRLSSampler`.
LEVEL_CAP = 2.0

#: At most this many pivots are proposed in one block of accelerated RP-Cholesky.
RPC_MAX_PROPOSALS = 1024

#: After this many blocks in a row without an accepted pivot (only rounding left in the
#: residual), accelerated RP-Cholesky takes the residual as explained.
RPC_EMPTY_ROUNDS = 32


class CountingKernel:
    """Wraps a kernel and counts the entries it evaluates (matrix entries and diagonals)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.evaluations = 0

    def __call__(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        K = self.kernel(X, Y)
        self.evaluations += K.size
        return K

    def diag(self, X: np.ndarray) -> np.ndarray:
        d = self.kernel.diag(X)
        self.evaluations += d.size
        return d

    def block(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray | None = None, *,
              coarse: bool = False) -> np.ndarray:
        """One block of rows without a memory check (:meth:`Kernel.block`)."""
        K = self.kernel.block(X, Y, out, coarse=coarse)
        self.evaluations += K.size
        return K


@dataclass(frozen=True)
class Sample:
    """Landmarks chosen by a sampler.

    Attributes
    ----------
    indices : ndarray of int, shape (s,)
        Distinct row indices of X.
    scores : ndarray, shape (n,) or None
        Per-point sampling scores (approximate or exact ridge leverage scores, or
        selection probabilities), for display.
    kernel_evaluations : int
    lam : float or None
        The ridge λ the scores refer to (leverage-score samplers).
    order : ndarray of int or None
        For samplers whose draws nest (uniform, RP-Cholesky): the indices in the order
        drawn, each prefix of which is a draw of the sampler at that size.
    marks : ndarray, shape (s, 2), or None
        RP-Cholesky: for each k, the seconds from the start of :meth:`Sampler.sample` and
        the kernel entries evaluated when the first k + 1 pivots of ``order`` were final.
    """

    indices: np.ndarray
    scores: np.ndarray | None
    kernel_evaluations: int
    lam: float | None = None
    order: np.ndarray | None = None
    marks: np.ndarray | None = None


def check_rows(X: np.ndarray, s: int) -> int:
    """n, the rows of X, after :func:`check_budget` of s landmarks among them."""
    return check_budget(X.shape[0], s)


def check_budget(n: int, s: int, what: str = "points") -> int:
    """n, after checking that s is a whole number of landmarks from 1 to n (else a
    ParameterError naming ``what`` the n are)."""
    if isinstance(s, bool) or int(s) != s or s < 1:
        raise ParameterError(f"the number of landmarks s must be a positive integer, got {s!r}")
    if s > n:
        raise ParameterError(f"cannot choose s = {s} landmarks from n = {n} {what}; "
                             f"use s ≤ {n}")
    return n


class Sampler:
    """Base class; subclasses implement :meth:`sample` (see
    :mod:`kernel_lab.core.nystrom.samplers`)."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    scalable: ClassVar[bool] = True

    def sample(self, X: np.ndarray, kernel: Kernel, s: int | None,
               random_state: Any = None) -> Sample:
        raise NotImplementedError

