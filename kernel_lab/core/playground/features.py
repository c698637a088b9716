"""Feature columns kept for the s and D sliders: a move adds columns, it does not rebuild.

Ridge on features F with an unpenalised intercept needs, for the r × r system, only the
centred Gram products ``FcᵀFc`` and ``Fcᵀ(y − ȳ)`` (Fc: F with its column means removed),
and for the picture the columns themselves. :class:`ColumnGram` keeps centred columns on
the training and test points with those products, grown a column at a time: a new column
costs its own values and one product with the columns kept (``n k`` multiply-adds), and
ridge on any subset of the kept columns, mapped by any ``N`` (``F = C N``), is formed from
the kept products alone — no pass over the n × r features.

- **Nyström** (:class:`LandmarkColumns`): the columns are the kernel's ``k(X, x_j)`` at
  training points x_j, one per landmark ever used at this σ; the features of landmarks
  Z are ``F = K(X, Z) N`` with ``N`` the library's normalisation of ``W = K(Z, Z)``
  (:func:`~kernel_lab.core.models.nystrom.nystrom_normalization`), so
  ``FcᵀFc = Nᵀ (Kc(X, Z)ᵀ Kc(X, Z)) N`` — O(s³) per move after the new columns.
- **Which landmarks** (:class:`LandmarkDraws`): the samplers whose draws nest — uniform
  (the s smallest keys) and RP-Cholesky while it takes one pivot at a time (n·s at most
  :data:`~kernel_lab.core.nystrom.common.RPC_STORED_MAX`) — give the landmarks of s as
  the first s of a larger draw's ``order``, the same rows their own draw of s gives; the
  others (recursive RLS, exact RLS, RP-Cholesky beyond that size) draw anew for every s,
  and their landmarks shared with earlier draws still find their columns kept.
- **Random Fourier features** (:class:`FrequencyColumns`): the frequencies of every D
  are the first D of one draw of :data:`~kernel_lab.core.playground.datasets.MAX_POINTS`
  (the most the D slider takes) by the library's
  :class:`~kernel_lab.core.models.RandomFourierFeatures` — a draw of D itself, as the
  ``nystrom`` experiment's nested trials take it — and the columns kept are the unscaled
  cosines ``cos(X w_j + b_j)``; D features are ``√(2/D)`` times the first D.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from scipy.linalg import lapack

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.fastcos import cos_features
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import RandomFourierFeatures
from kernel_lab.core.models.nystrom import nystrom_normalization
from kernel_lab.core.nystrom.common import RPC_STORED_MAX
from kernel_lab.core.nystrom.landmarks import GATHER_ROWS
from kernel_lab.core.nystrom.samplers import SAMPLERS, make_sampler
from kernel_lab.core.playground.datasets import MAX_POINTS
from kernel_lab.core.playground.fits import FeatureRidge, Problem
from kernel_lab.core.validation import check_seed

Array = np.ndarray

#: Frequencies of the one random-feature draw whose prefixes are every D's features.
FREQUENCIES = MAX_POINTS


class KeptColumns:
    """Columns of a feature map kept on the training points (centred: their means over
    the training points removed) and the test points (less the same means), grown by
    columns; ridge on any subset of them mapped by any N (:meth:`ridge`). Subclasses keep
    the training columns' Gram products their own way (:class:`ColumnGram`,
    :class:`ColumnQR`).

    Parameters
    ----------
    y : ndarray, shape (n,)
        The training targets.
    n_test : int
        The number of test points.
    limit : int
        The most columns this will hold (the room kept grows by doubling up to it).
    """

    def __init__(self, y: Array, n_test: int, limit: int) -> None:
        self.y_mean = float(np.mean(y))
        self._yc = np.asarray(y, dtype=np.float64) - self.y_mean
        self.n, self.limit, self.count = len(y), limit, 0
        self._test = np.empty((n_test, 0), order="F")
        self._mean = np.empty(0)

    def _reserve(self, count: int) -> None:
        """Room for ``count`` columns — twice that, or double the room, up to
        :attr:`limit` (memory is touched only where written), so that a slider's next
        moves seldom copy the kept columns — in every array :meth:`_kept` names (columns
        last; square ones in both axes)."""
        room = self._mean.shape[0]
        if count <= room:
            return
        room = max(count, min(self.limit, max(2 * room, 2 * count, 16)))
        k = self.count
        for name, square in self._kept():
            old = getattr(self, name)
            shape = (room, room) if square else (*old.shape[:-1], room)
            new = np.empty(shape, order="F")
            at = (slice(0, k),) * 2 if square else (Ellipsis, slice(0, k))
            new[at] = old[at]
            setattr(self, name, new)

    def _kept(self) -> list[tuple[str, bool]]:
        """The arrays whose columns are the kept columns, and whether they are square."""
        return [("_test", False), ("_mean", False)]

    def extend(self, train: Array, test: Array) -> None:
        """Add columns: their values on the training points (n, c) and the test points
        (m, c)."""
        c = train.shape[1]
        if c == 0:
            return
        k = self.count
        if k + c > self.limit:
            raise ValueError(f"{k + c} columns: at most {self.limit} are kept")
        self._reserve(k + c)
        mean = train.mean(axis=0)
        np.subtract(test, mean, out=self._test[:, k:k + c])
        self._mean[k:k + c] = mean
        centred = self._columns()[:, k:k + c]
        np.subtract(train, mean, out=centred)
        self._add(centred, k)
        self.count = k + c

    def _columns(self) -> Array:
        """The n × room array the centred training columns are written to, in place."""
        raise NotImplementedError

    def _add(self, centred: Array, k: int) -> None:
        """Keep the Gram products of the new centred training columns ``centred`` (written
        in :meth:`_columns` after the ``k`` kept)."""
        raise NotImplementedError

    def _system(self, columns: Array | slice, N: Array | float
                ) -> tuple[Array, Array, Callable[[Array], Array]]:
        """``FcᵀFc``, ``Fcᵀ(y − ȳ)`` and ``w ↦ Fc w`` for ``F = C N`` (C: ``columns``)."""
        raise NotImplementedError

    def ridge(self, columns: Array | slice, N: Array | float,
              grid: Callable[[Array], Array]) -> FeatureRidge:
        """:class:`FeatureRidge` on the features ``F = C N`` of the kept columns
        ``columns`` (indices or a slice; C: those columns, uncentred), N an r-column matrix
        or a scale; ``grid(β)`` the uncentred columns' values on the grid times β."""
        if not isinstance(columns, slice):
            columns = np.asarray(columns)
        gram, cross, train = self._system(columns, N)
        mean = self._mean[columns]
        # a copy of the chosen test columns: every later λ costs a product with these only
        test = self._test[:, columns].copy(order="F")

        def values(w: Array) -> tuple[Array, Array, Array]:
            beta = N * w if np.isscalar(N) else N @ w
            return grid(beta) - float(mean @ beta), train(w), test @ beta

        return FeatureRidge(gram, cross, self.y_mean, values)


class ColumnGram(KeptColumns):
    """Kept columns with their centred Gram products ``FcᵀFc`` and ``Fcᵀ(y − ȳ)`` formed
    directly: a new column costs one product with the columns kept (``n k``), and the
    system of F = a scale times a subset is a part of them — as accurate as forming the
    Gram matrix of the features, for features that need no ill-conditioned N (random
    features)."""

    def __init__(self, y: Array, n_test: int, limit: int) -> None:
        super().__init__(y, n_test, limit)
        self._train = np.empty((self.n, 0), order="F")
        self._gram = np.empty((0, 0), order="F")
        self._cross = np.empty(0)

    def _kept(self) -> list[tuple[str, bool]]:
        return [*super()._kept(), ("_train", False), ("_cross", False), ("_gram", True)]

    def _columns(self) -> Array:
        return self._train

    def _add(self, centred: Array, k: int) -> None:
        c = centred.shape[1]
        self._cross[k:k + c] = centred.T @ self._yc
        self._gram[k:k + c, k:k + c] = centred.T @ centred  # symmetric: BLAS syrk
        if k:
            block = self._train[:, :k].T @ centred
            self._gram[:k, k:k + c] = block
            self._gram[k:k + c, :k] = block.T

    def _system(self, columns: Array | slice, N: Array | float
                ) -> tuple[Array, Array, Callable[[Array], Array]]:
        gram = self._gram[columns, columns] if isinstance(columns, slice) else \
            self._gram[np.ix_(columns, columns)]
        cross = self._cross[columns]
        train = self._train[:, columns]
        if not isinstance(columns, slice):
            train = train.copy(order="F")
        if np.isscalar(N):
            scale = float(N)  # type: ignore[arg-type]
            return (scale * scale) * gram, scale * cross, lambda w: train @ (scale * w)
        M = np.asarray(N)
        return M.T @ gram @ M, M.T @ cross, lambda w: train @ (M @ w)


class ColumnQR(KeptColumns):
    """Kept columns as their Householder QR ``Cc = Q R`` (LAPACK's compact form: R and the
    reflectors of Q in one n × k array), grown by columns as a blocked factorisation is:
    a new column is multiplied by Qᵀ (``4 n k``) and its part below the kept rows
    factorised. The system of ``F = Cc_S N`` is ``(R_S N)ᵀ(R_S N)`` with ``Fcᵀ(y − ȳ) =
    (R_S N)ᵀ Qᵀ(y − ȳ)``: the Gram matrix of a k × r matrix with F's singular values, as
    accurate as forming F — also for the ill-conditioned N of Nyström features, where
    ``Nᵀ(CcᵀCc)N`` loses what N amplifies (10⁻⁶ off the library's fit with κ(W) =
    10¹³)."""

    def __init__(self, y: Array, n_test: int, limit: int) -> None:
        super().__init__(y, n_test, min(limit, len(y)))
        self._qr = np.empty((self.n, 0), order="F")
        self._tau = np.empty(0)
        self._qy = self._yc.reshape(-1, 1).copy(order="F")  # Qᵀ(y − ȳ), as far as made

    def _kept(self) -> list[tuple[str, bool]]:
        return [*super()._kept(), ("_qr", False), ("_tau", False)]

    def _reflect(self, B: Array, k: int, trans: str, start: int = 0) -> Array:
        """``Qᵀ B`` (``trans="T"``) or ``Q B`` by the kept reflectors ``start … k − 1``
        on rows ``start`` and below."""
        if k == start:
            return B
        out, _, info = lapack.dormqr("L", trans, self._qr[start:, start:k],
                                     self._tau[start:k], B, max(1, B.shape[1]) * 64,
                                     overwrite_c=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"dormqr failed (info {info})")
        return out

    def _columns(self) -> Array:
        return self._qr

    def _add(self, centred: Array, k: int) -> None:
        c = centred.shape[1]
        V = self._reflect(centred, k, "T")
        qr, tau, _, info = lapack.dgeqrf(V[k:], overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"dgeqrf failed (info {info})")
        # in place where LAPACK could work in the kept array, else copied there
        if not np.may_share_memory(V, centred):
            centred[...] = V
        if not np.may_share_memory(qr, centred):
            centred[k:] = qr
        self._tau[k:k + c] = tau
        self._qy[k:] = self._reflect(self._qy[k:], k + c, "T", start=k)

    def _system(self, columns: Array | slice, N: Array | float
                ) -> tuple[Array, Array, Callable[[Array], Array]]:
        k = self.count
        R = np.triu(self._qr[:k, :k])[:, columns]
        B = R * float(N) if np.isscalar(N) else R @ np.asarray(N)  # type: ignore[arg-type]

        def train(w: Array) -> Array:
            t = np.zeros((self.n, 1), order="F")
            t[:k, 0] = B @ w
            return self._reflect(t, k, "N")[:, 0]

        return B.T @ B, B.T @ self._qy[:k, 0], train


class LandmarkColumns:
    """The kernel columns ``k(·, x_j)`` of training points x_j on the training and test
    points at one kernel and σ (:class:`ColumnGram`), one per landmark ever asked for; a
    landmark set's Nyström ridge (:meth:`ridge`) computes only the columns not kept."""

    def __init__(self, problem: Problem, kernel: str, sigma: float) -> None:
        self.problem, self.name, self.sigma = problem, kernel, sigma
        self.kernel = make_kernel(kernel, {"sigma": sigma})
        self.columns = ColumnQR(problem.y, len(problem.X_test), len(problem.y))
        #: the column of each training point kept (-1: none)
        self.slot = np.full(len(problem.y), -1, dtype=np.int64)

    def ridge(self, landmarks: Array) -> FeatureRidge:
        """Nyström ridge (:class:`FeatureRidge`) on the training points ``landmarks``
        (indices, in the order the library's features take them: ascending)."""
        landmarks = np.asarray(landmarks, dtype=np.int64)
        new = landmarks[self.slot[landmarks] < 0]
        if new.size:
            p = self.problem
            Z = p.X[new]
            self.slot[new] = self.columns.count + np.arange(new.size)
            self.columns.extend(self.kernel(p.X, Z), self.kernel(p.X_test, Z) if
                                len(p.X_test) else np.zeros((0, new.size)))
        Z = self.problem.X[landmarks]
        N = nystrom_normalization(self.kernel(Z))[0]
        return self.columns.ridge(self.slot[landmarks], N,
                                  self.problem.grid.kernel(self.name, self.sigma, Z))


def nested_limit(sampler: str, n: int) -> int:
    """The largest s up to which ``sampler``'s draws of s landmarks among n nest (the
    first s of a draw's ``order`` are the draw of s); 0: they do not."""
    if sampler == "uniform":
        return n
    if sampler == "rp-cholesky" and n <= GATHER_ROWS:  # one pivot at a time, stored
        return min(n, RPC_STORED_MAX // max(n, 1))
    return 0


class LandmarkDraws:
    """The landmarks of one sampler and seed for every s, on one data set, kernel and σ:
    where the sampler's draws nest (:func:`nested_limit`), the first s of one larger
    draw's order (drawn again, twice as large, when an s beyond it comes); otherwise a
    draw of s."""

    def __init__(self, X: Array, kernel: str, sigma: float, sampler: str, seed: int) -> None:
        if sampler not in SAMPLERS:
            raise ParameterError(f"unknown sampler {sampler!r}; choose one of: "
                                 f"{', '.join(SAMPLERS)}")
        self.X = X
        self.seed = check_seed(seed)  # the key seed NystromFeatures(random_state=seed) uses
        self.kernel = make_kernel(kernel, {"sigma": sigma})
        self.sampler = make_sampler(sampler)
        self.limit = nested_limit(sampler, len(X))
        self._order: Array | None = None

    def __call__(self, s: int) -> Array:
        """The indices of the s landmarks, ascending (as the library's features hold
        them)."""
        n = len(self.X)
        if not 1 <= s <= n:
            raise ParameterError(f"s = {s} landmarks: choose 1 to n = {n} (the training "
                                 f"points)")
        if s > self.limit:
            return np.sort(self.sampler.sample(self.X, self.kernel, s, self.seed).indices)
        if self._order is None or len(self._order) < s:
            size = min(self.limit, max(2 * s, 64))
            self._order = np.asarray(self.sampler.sample(self.X, self.kernel, size,
                                                         self.seed).order)
        return np.sort(self._order[:s])


@functools.lru_cache(maxsize=8)
def unit_frequencies(kernel: str, dim: int, orthogonal: bool, seed: int
                     ) -> tuple[Array, Array]:
    """Frequencies (dim, :data:`FREQUENCIES`) and phases of the library's random-feature
    draw for ``kernel`` at σ = 1 (at σ the frequencies are these over σ: the kernels'
    spectral laws are scale families), read-only."""
    rff = RandomFourierFeatures(kernel, sigma=1.0, n_components=FREQUENCIES,
                                orthogonal=orthogonal, random_state=seed).fit(
        np.zeros((1, dim)))
    W, b = rff.weights_, rff.offsets_
    W.flags.writeable = b.flags.writeable = False
    return W, b


def rff_frequencies(kernel: str, sigma: float, dim: int, orthogonal: bool, seed: int,
                    D: int) -> tuple[Array, Array]:
    """The frequencies (dim, D) and phases (D,) of the Playground's D random features at σ:
    the first D of :func:`unit_frequencies`, the frequencies over σ (what
    :class:`FrequencyColumns` takes)."""
    W, b = unit_frequencies(kernel, dim, orthogonal, seed)
    return W[:, :D] / sigma, b[:D].copy()


class FrequencyColumns:
    """Random Fourier features for every D at one kernel, σ, seed and ``orthogonal``: the
    first D of :func:`unit_frequencies` over σ, their cosines kept as columns
    (:class:`ColumnGram`) and computed for the new ones only."""

    def __init__(self, problem: Problem, kernel: str, sigma: float, orthogonal: bool,
                 seed: int) -> None:
        self.problem = problem
        W, b = unit_frequencies(kernel, problem.X.shape[1], orthogonal, seed)
        self.W, self.b = W / sigma, b
        self.columns = ColumnGram(problem.y, len(problem.X_test), FREQUENCIES)

    def ridge(self, D: int) -> FeatureRidge:
        """Ridge on the first D features ``√(2/D) cos(Xᵀw_j + b_j)``."""
        if not 1 <= D <= FREQUENCIES:
            raise ParameterError(f"D = {D} random features: choose 1 to {FREQUENCIES}")
        k, p = self.columns.count, self.problem
        if D > k:
            W, b = self.W[:, k:D], self.b[k:D]
            self.columns.extend(cos_features(p.X, W, b, 1.0),
                                cos_features(p.X_test, W, b, 1.0))
        scale = math.sqrt(2.0 / D)
        return self.columns.ridge(slice(0, D), scale,
                                  p.grid.cosines(self.W[:, :D], self.b[:D]))
