"""Exact KRR and CKRR in the Playground: every λ from one eigendecomposition
(:class:`ExactCache`), and the quick direct answer to a new σ or new data."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable

import numpy as np

from kernel_lab.core.kernels import make_kernel, squared_distances
from kernel_lab.core.lapack import cholesky_in_blocks, cholesky_lower, solve_lower
from kernel_lab.core.models.krr import center_gram
from kernel_lab.core.playground.fits import Problem, error
from kernel_lab.core.playground.gridmap import GridKernel, GridMap

#: A lower triangle of the train–train kernel is evaluated in this many blocks of rows,
#: each up to its last column: 1 + 1/LOWER_BLOCKS of half the matrix (n = 1000 and 16:
#: 4.6–5.1 ms instead of 6.1–6.6 for the whole matrix, alternated in one process).
LOWER_BLOCKS = 16

Array = np.ndarray


class ExactCache:
    """Exact KRR (``centered=False``) or CKRR (``True``) for every λ from one
    eigendecomposition; see the module docstring. The test points' kernel block and the
    grid's map (:class:`~kernel_lab.core.playground.gridmap.GridMap`) are kept, so a λ
    costs ``α(λ) = U (w / (e + λ))`` and one product per point set; training predictions
    need no product at all: ``f(X) = y − λ α(λ)`` (from ``(K_c + λI) α = P y`` and
    ``1ᵀα = 0`` for CKRR; ``(K + λI) α = y`` for KRR)."""

    def __init__(self, X: Array, y: Array, X_test: Array, G: GridMap, kernel: str,
                 sigma: float, centered: bool) -> None:
        k = make_kernel(kernel, {"sigma": sigma})
        self.X, self.X_test, self.kernel, self.sigma = X, X_test, kernel, sigma
        K = k(X)
        self.col_means = center_gram(K) if centered else K.mean(axis=0)
        self.e, self.U = np.linalg.eigh(K)
        del K
        self.centered = centered
        self.y = y
        self.shift = float(y.mean()) if centered else 0.0
        self.w = self.U.T @ (y - self.shift)
        self.K_test = k(X_test, X) if len(X_test) else np.zeros((0, len(y)))
        self.K_grid = G.kernel(kernel, sigma, X)  # c ↦ K(G, X) c

    def system(self, lam: float) -> EigenSystem | None:
        """``K + λI`` as a solved system (:class:`EigenSystem`) — for exact KRR: CKRR's
        eigendecomposition is that of the centred matrix."""
        return None if self.centered else EigenSystem(self, lam)

    def alphas(self, lam: float | Array) -> tuple[Array, Array]:
        lams = np.atleast_1d(np.asarray(lam, dtype=np.float64))
        A = self.U @ (self.w[:, None] / (self.e[:, None] + lams[None, :]))
        if self.centered:
            # CKRR's α sums to zero; at a tiny λ the rounding left along the constant
            # eigenvector (eigenvalue ≈ 0 of K_c) would be divided by ≈ λ — project it out
            A -= A.mean(axis=0, keepdims=True)
        return lams, A

    def _apply(self, K: Array | Callable[[Array], Array], A: Array) -> Array:
        out = K(A) if callable(K) else K @ A
        if self.centered:
            out += self.shift - self.col_means @ A
        return out

    def predict(self, lam: float) -> tuple[Array, Array, Array]:
        """Grid, train and test predictions at λ."""
        lams, A = self.alphas(lam)
        train = self.y[:, None] - lams[None, :] * A
        return (self._apply(self.K_grid, A)[:, 0], train[:, 0],
                self._apply(self.K_test, A)[:, 0])

    def dof(self, lam: float) -> float:
        """Effective degrees of freedom tr K(K + λI)⁻¹ (of K_c for CKRR)."""
        e = np.clip(self.e, 0.0, None)
        return float(np.sum(e / (e + lam)))

    def curve(self, lams: Array, y_test: Array, task: str) -> dict[str, Array]:
        """Train and test error at every λ of ``lams`` (kept: the grid does not move)."""
        key = (tuple(np.asarray(lams, dtype=float)), task)
        if getattr(self, "_curve", (None,))[0] != key:
            self._curve = (key, self._curve_of(lams, y_test, task))
        return self._curve[1]

    def _curve_of(self, lams: Array, y_test: Array, task: str) -> dict[str, Array]:
        lams, A = self.alphas(lams)
        train = self.y[:, None] - lams[None, :] * A
        test = self._apply(self.K_test, A)
        return {"lam": lams,
                "train": np.array([error(train[:, j], self.y, task)
                                   for j in range(len(lams))]),
                "test": np.array([error(test[:, j], y_test, task) for j in range(len(lams))])}


class PairKernel:
    """``K(X, Y)`` of a Playground kernel for any σ, from its σ-free part kept once per
    data set: a σ move then costs one pass over the matrix instead of the distances
    again (with n = 1000 a third of a quick fit). The part is the squared Euclidean
    distances (Gaussian), the ℓ1 distances (Laplace) or each coordinate's squared
    differences (Cauchy, a product over the coordinates)."""

    def __init__(self, name: str, X: Array, Y: Array) -> None:
        self.name = name
        if name == "gaussian":
            self._parts = [squared_distances(X, Y)]
        elif name == "laplace":
            D = np.abs(X[:, 0, None] - Y[None, :, 0])
            for j in range(1, X.shape[1]):
                D += np.abs(X[:, j, None] - Y[None, :, j])
            self._parts = [D]
        elif name == "cauchy":
            self._parts = [np.square(X[:, j, None] - Y[None, :, j]) for j in range(X.shape[1])]
        else:
            raise ValueError(f"no σ-free part for the {name} kernel")

    def __call__(self, sigma: float, lower: bool = False, out: Array | None = None) -> Array:
        """``K(X, Y)`` at ``sigma``; with ``lower`` (X = Y) only the entries on and below
        the diagonal, which a lower Cholesky factorisation reads — about half the
        exponentials of a σ move's quick answer — and zeros above it. ``out``: an array
        of the shape to write into (a recycled one costs no fresh pages: a fresh
        3,746² matrix took 43 ms to fault in, up to 265 ms with transparent huge pages
        being compacted, against 18 ms for the whole kernel into a used one)."""
        shape = self._parts[0].shape
        if out is None or out.shape != shape or out.dtype != np.float64:
            out = np.empty(shape)
        if not lower:
            self._fill(sigma, out, slice(None), slice(None))
            return out
        if shape[0] != shape[1]:
            raise ValueError(f"the lower triangle of a square pair only, not {shape}")
        step = max(1, -(-shape[0] // LOWER_BLOCKS))
        above = np.triu(np.ones((step, step), dtype=bool), 1)  # in a diagonal block
        for lo in range(0, shape[0], step):
            hi = min(lo + step, shape[0])
            self._fill(sigma, out[lo:hi, :hi], slice(lo, hi), slice(0, hi))
            out[lo:hi, lo:hi][above[:hi - lo, :hi - lo]] = 0.0
            out[lo:hi, hi:] = 0.0
        return out

    def _fill(self, sigma: float, out: Array, rows: slice, cols: slice) -> None:
        """The kernel's entries ``rows × cols`` at ``sigma`` into ``out``."""
        if self.name == "gaussian":
            np.multiply(self._parts[0][rows, cols], -0.5 / sigma**2, out=out)
            np.exp(out, out=out)
        elif self.name == "laplace":
            np.multiply(self._parts[0][rows, cols], -1.0 / sigma, out=out)
            np.exp(out, out=out)
        else:
            out[...] = 1.0
            tmp = np.empty_like(out)
            for part in self._parts:
                np.multiply(part[rows, cols], 1.0 / sigma**2, out=tmp)
                tmp += 1.0
                out /= tmp


class Solved:
    """A solved system ``K + λI`` of one data set, kernel, σ and λ, with the test points'
    kernel block: the quick exact answer to a new σ or new data, before any
    eigendecomposition. Subclasses give ``solve_block(R) = (K + λI)⁻¹ R`` and the test
    block's products (:meth:`test_values`).

    Exact KRR is ``α = A⁻¹y`` (A = K + λI). CKRR is KRR with an unpenalised intercept,
    ``α = A⁻¹(y − b1)`` with ``b = 1ᵀA⁻¹y / 1ᵀA⁻¹1`` (so ``1ᵀα = 0``): the solution of
    the centred system ``(PKP + λI) α = P y`` of
    :class:`~kernel_lab.core.models.CenteredKernelRidge`, intercept included — so both
    come from a solve with the uncentred matrix, and a painted point (rows appended to
    the training points) borders it (:meth:`bordered`): one solve with this system and
    O(n k) more, instead of a new O(n³) factorisation.

    The grid's map of the training points (:meth:`grid_kernel`) is kept with the system,
    so a bordered one evaluates the kernel on the grid for its new points only."""

    X: Array
    X_test: Array
    K_test: Array
    kernel: str
    sigma: float
    lam: float
    #: The kept grid map (:meth:`grid_kernel`), by the grid's (dim, resolution).
    _grids: dict[tuple[int, int], GridKernel]

    def solve_block(self, R: Array) -> Array:
        raise NotImplementedError

    def extends(self, X: Array, X_test: Array) -> bool:
        """Whether ``X`` is this system's training points with rows appended (same test
        points): then :meth:`bordered` applies."""
        n = len(self.X)
        return (len(X) > n and X.shape[1:] == self.X.shape[1:] and np.array_equal(X[:n], self.X)
                and np.array_equal(X_test, self.X_test))

    def bordered(self, X: Array) -> Solved:
        """The system for ``X`` (:meth:`extends`), by block elimination (:class:`Bordered`)."""
        return Bordered(self, X)

    @staticmethod
    def rhs(y: Array, centered: bool) -> Array:
        """The right-hand side :meth:`solve` solves for targets ``y``: y (KRR), or y and
        a column of ones (CKRR)."""
        return np.column_stack([y, np.ones_like(y)]) if centered else y

    def solve_kept(self, R: Array) -> Array:
        """``solve_block(R)``, kept: the right-hand sides solved last (the targets, and
        the ones column for CKRR) cost a comparison, O(n), the next time — a painted
        point's bordered system solves its base's part of the targets so."""
        kept = self.__dict__.setdefault("_kept", _Solutions())
        out = kept.get(R)
        if out is None:
            out = self.solve_block(R)
            kept.put(R, out)
        return out

    def solve(self, y: Array, centered: bool) -> tuple[Array, float]:
        """α and the intercept of exact KRR (``centered=False``) or CKRR at this λ."""
        B = self.solve_kept(self.rhs(y, centered))
        if not centered:
            return B, 0.0
        b = float(B[:, 0].sum() / B[:, 1].sum())
        return B[:, 0] - b * B[:, 1], b

    def test_values(self, alpha: Array) -> Array:
        """``K(X_test, X) α``."""
        return self.K_test @ alpha

    def test_block(self) -> Array:
        """The test block ``K(X_test, X)`` as one matrix."""
        return self.K_test

    def grid_kernel(self, grid: GridMap) -> GridKernel:
        """``c ↦ K(G, X) c`` on ``grid`` for the training points X, kept (the last grid's
        only)."""
        key = (grid.dim, grid.resolution)
        kept = getattr(self, "_grids", {})
        if key not in kept:
            self._grids = {key: self._new_grid_kernel(grid)}
        return self._grids[key]

    def _new_grid_kernel(self, grid: GridMap) -> GridKernel:
        return grid.kernel(self.kernel, self.sigma, self.X)

    def predict(self, problem: Problem, centered: bool) -> tuple[Array, Array, Array]:
        """The grid, train and test predictions."""
        alpha, b = self.solve(problem.y, centered)
        grid = self.grid_kernel(problem.grid)(alpha) + b
        # on the training points, as in ExactCache: f(X) = Kα + b = y − λα, no product
        return grid, problem.y - self.lam * alpha, self.test_values(alpha) + b


class Factor(Solved):
    """The Cholesky factor of ``K + λI`` (:class:`Solved`), made in one call
    (:meth:`at_once`) or in blocks of columns (:meth:`in_blocks`).

    ``pairs`` of :meth:`at_once` (train–train, test–train) evaluate the kernel from kept
    distances (:class:`PairKernel`). Both raise ``numpy.linalg.LinAlgError`` when ``K + λI`` is not
    numerically positive definite (the caller then uses the estimator).

    (A single-precision factor refined in double precision was tried: with n = 1000 the
    factorisation took 5 ms instead of 11, but the three refinement steps that double
    precision needs — each a product with A and two triangular solves — took the rest.)

    A painted point borders it (:class:`Bordered`) rather than extending the factor: a
    new factor copied the n × n one at every point (with n = 3746, 112 MB: most of a
    painted point's 40 ms)."""

    def __init__(self, X: Array, X_test: Array, kernel: str, sigma: float, lam: float,
                 L: Array, K_test: Array) -> None:
        """A factor already made (:meth:`at_once`, :meth:`in_blocks`): ``L`` of
        ``K + λI`` (its lower triangle read) and the test block ``K_test``."""
        self.X, self.X_test, self.K_test = X, X_test, K_test
        self.kernel, self.sigma, self.lam = kernel, sigma, lam
        self.L = L

    @classmethod
    def at_once(cls, X: Array, X_test: Array, kernel: str, sigma: float, lam: float,
                pairs: tuple[PairKernel, PairKernel] | None = None) -> Factor:
        """The factor of ``K + λI`` in one call, the kernel evaluated here (from ``pairs``
        when given)."""
        k = make_kernel(kernel, {"sigma": sigma})
        A = pairs[0](sigma, lower=True) if pairs is not None else k(X)
        A.flat[:: A.shape[0] + 1] += lam
        L = cholesky_lower(A, overwrite=True)  # lets the window's thread run
        K_test = (pairs[1](sigma) if pairs is not None else k(X_test, X)) \
            if len(X_test) else np.zeros((0, len(X)))
        return cls(X, X_test, kernel, sigma, lam, L, K_test)

    @classmethod
    def in_blocks(cls, K: Array, K_test: Array, X: Array, X_test: Array, kernel: str,
                  sigma: float, lam: float, out: Array,
                  between: Callable[[], None] | None = None) -> Factor:
        """The factor of ``K + λI`` from a kernel matrix already made (``K``, its lower
        triangle read, and the test block ``K_test``, shared, not copied), written into
        ``out`` one block of columns at a time
        (:func:`~kernel_lab.core.lapack.cholesky_in_blocks`: ``between()`` may raise to
        stop) — for work done while the hand rests, which a gesture must be able to
        interrupt."""
        return cls(X, X_test, kernel, sigma, lam, cholesky_in_blocks(K, lam, out, between),
                   K_test)

    def solve_block(self, R: Array) -> Array:
        return _by_column(lambda r: solve_lower(self.L, solve_lower(self.L, r), trans=True),
                          R)


class EigenSystem(Solved):
    """``K + λI`` from the eigendecomposition ``K = U diag(e) Uᵀ`` of an exact KRR cache
    (:meth:`ExactCache.system`): ``(K + λI)⁻¹R = U (UᵀR / (e + λ))`` at any λ, so a
    painted point after a λ or σ move borders it in O(n²) without a factorisation. The
    cache's grid map serves as the system's."""

    def __init__(self, cache: ExactCache, lam: float) -> None:
        self.X, self.X_test, self.K_test = cache.X, cache.X_test, cache.K_test
        self.kernel, self.sigma, self.lam = cache.kernel, cache.sigma, lam
        self._U, self._inv = cache.U, 1.0 / (cache.e + lam)
        self._y, self._w = cache.y, cache.w  # w = Uᵀy: the targets' solve is one product
        if isinstance(cache.K_grid, GridKernel):
            self._grids = {cache.K_grid.key: cache.K_grid}

    def solve_block(self, R: Array) -> Array:
        return _by_column(self._solve, R)

    def _solve(self, R: Array) -> Array:
        if R.ndim == 1 and R.shape == self._y.shape and np.array_equal(R, self._y):
            return self._U @ (self._w * self._inv)
        W = self._U.T @ R
        W *= self._inv if W.ndim == 1 else self._inv[:, None]
        return self._U @ W


class CenteredEigenSystem(Solved):
    """``K + λI`` from CKRR's eigendecomposition, of the centred matrix
    ``K_c = PKP = U diag(e) Uᵀ`` (an :class:`ExactCache` with ``centered=True``): with m
    the column means of K and μ their mean, ``K = K_c + V C Vᵀ``, ``V = [1, m]``,
    ``C = [[−μ, 1], [1, 0]]``, so (Woodbury, ``M = K_c + λI``)
    ``(K + λI)⁻¹R = W − Q H⁻¹ VᵀW`` with ``W = M⁻¹R``, ``Q = M⁻¹V`` and
    ``H = C⁻¹ + VᵀQ``, ``C⁻¹ = [[0, 1], [1, μ]]``. A point painted right after a CKRR λ
    move borders it — exact at once, where without it the first answer was a preview
    and the exact one waited for a new O(n³) factorisation. Q costs four products with
    U (made at the first solve), a solve two (the targets' one: ``Uᵀy`` is kept)."""

    def __init__(self, cache: ExactCache, lam: float) -> None:
        self.X, self.X_test, self.K_test = cache.X, cache.X_test, cache.K_test
        self.kernel, self.sigma, self.lam = cache.kernel, cache.sigma, lam
        self._cache, self._d = cache, cache.e + lam
        if isinstance(cache.K_grid, GridKernel):
            self._grids = {cache.K_grid.key: cache.K_grid}

    @functools.cached_property
    def _woodbury(self) -> tuple[Array, Array, Array, Array]:
        """V, Q, H and Uᵀy."""
        c = self._cache
        V = np.column_stack([np.ones(len(c.col_means)), c.col_means])
        T = np.column_stack([c.U.T @ V[:, 0], c.U.T @ V[:, 1]])  # Uᵀ1, Uᵀm
        Q = np.column_stack([c.U @ (T[:, 0] / self._d), c.U @ (T[:, 1] / self._d)])
        H = np.array([[0.0, 1.0], [1.0, float(c.col_means.mean())]]) + V.T @ Q
        return V, Q, H, c.w + c.shift * T[:, 0]  # Uᵀy = Uᵀ(y − shift) + shift Uᵀ1

    def _inner(self, r: Array) -> Array:
        """``M⁻¹r``."""
        c = self._cache
        if r.shape == c.y.shape and np.array_equal(r, c.y):
            t = self._woodbury[3]
        else:
            t = c.U.T @ r
        return c.U @ (t / (self._d if t.ndim == 1 else self._d[:, None]))

    def solve_block(self, R: Array) -> Array:
        V, Q, H, _ = self._woodbury
        W = _by_column(self._inner, R)
        return W - Q @ np.linalg.solve(H, V.T @ W)


#: Up to this many right-hand sides are solved one at a time with an n × n factor or
#: eigenvector matrix: OpenBLAS's products and triangular solves with two or three
#: columns took longer than as many single ones (n = 3746, one thread: a triangular
#: solve 1.7 ms with one column, 5.4 ms with two; U @ B 3.0 ms and 9.5 ms).
BY_COLUMN = 3


def _by_column(solve: Callable[[Array], Array], R: Array) -> Array:
    """``solve(R)``, column by column for up to :data:`BY_COLUMN` columns."""
    if R.ndim == 2 and R.shape[1] <= BY_COLUMN:
        return np.column_stack([solve(R[:, j]) for j in range(R.shape[1])]) \
            if R.shape[1] else solve(R)
    return solve(R)


class _Solutions:
    """A system's solutions of the right-hand sides it solved last
    (:meth:`Solved.solve_kept`); a single right-hand side is also found as a column of
    a kept block (KRR's targets y in CKRR's ``[y, 1]``: a factor serves both)."""

    KEEP = 2

    def __init__(self) -> None:
        self._pairs: list[tuple[Array, Array]] = []

    def get(self, R: Array) -> Array | None:
        for S, U in self._pairs:
            if S.shape == R.shape and np.array_equal(S, R):
                return U
            if R.ndim == 1 and S.ndim == 2 and S.shape[0] == len(R):
                j = next((j for j in range(S.shape[1]) if np.array_equal(S[:, j], R)), None)
                if j is not None:
                    return U[:, j]
        return None

    def put(self, R: Array, U: Array) -> None:
        self._pairs = [(np.array(R, copy=True), U), *self._pairs][: self.KEEP]


class Bordered(Solved):
    """A solved system (``base``, n₀ points) with rows appended, by block elimination:
    with ``B = K(X₀, N)``, ``Z = A₀⁻¹B`` and the Schur complement
    ``S = K(N, N) + λI − BᵀZ`` (its Cholesky factor kept), ``A⁻¹[r₀; r₁]`` is
    ``x₁ = S⁻¹(r₁ − Bᵀu)``, ``x₀ = u − Z x₁`` with ``u = A₀⁻¹r₀`` — one solve with the
    base and O(n₀ k) more; the base keeps ``u`` of the targets (:meth:`solve_kept`: it
    solved them for its own fit, or for the stroke's first point), so a new point costs
    the base one solve, of the point's own column ``B``.
    Bordering it again appends to B, Z and S's factor (O(n₀ k) per new row), so a
    painted stroke never nests. The test block and the grid map are the base's and the
    new points' columns, never copied into one. Raises ``numpy.linalg.LinAlgError``
    when S is not numerically positive definite."""

    def __init__(self, base: Solved, X: Array) -> None:
        # the base bordered by no rows (B, Z, S's factor and the new test columns empty),
        # then by X's new rows
        self.base, self.X, self.X_test = base, base.X, base.X_test
        self.kernel, self.sigma, self.lam = base.kernel, base.sigma, base.lam
        self._k = make_kernel(self.kernel, {"sigma": self.sigma})
        n0 = len(base.X)
        self._B, self._Z, self._L = np.zeros((n0, 0)), np.zeros((n0, 0)), np.zeros((0, 0))
        self._T = np.zeros((len(base.X_test), 0))
        self._grids = dict(getattr(base, "_grids", {}))
        self._grow(X)

    def bordered(self, X: Array) -> Bordered:
        out = copy.copy(self)  # shares the arrays (never written in place)
        out.__dict__.pop("_kept", None)  # solutions of this system's, not the new one's
        out._grow(X)
        return out

    def _grow(self, X: Array) -> None:
        """Append X's rows after this system's (on a new object: nothing is written into
        the arrays it shares)."""
        n, n0 = len(self.X), len(self.base.X)
        new = X[n:]
        B2 = self._k(self.base.X, new)
        Z2 = self.base.solve_block(B2)
        S12 = self._k(self.X[n0:], new) - self._B.T @ Z2
        S22 = self._k(new)
        S22.flat[:: S22.shape[0] + 1] += self.lam
        S22 -= B2.T @ Z2
        L21 = solve_lower(self._L, S12).T
        k_old = self._L.shape[0]
        L = np.zeros((k_old + len(new), k_old + len(new)))
        L[:k_old, :k_old] = self._L
        L[k_old:, :k_old] = L21
        L[k_old:, k_old:] = np.linalg.cholesky(S22 - L21 @ L21.T)
        self._B, self._Z, self._L = np.hstack([self._B, B2]), np.hstack([self._Z, Z2]), L
        self._T = np.hstack([self._T, self._k(self.X_test, new)]) if len(self.X_test) \
            else np.zeros((0, k_old + len(new)))
        self._grids = {key: g.appended(new) for key, g in self._grids.items()}
        self.X = X

    def solve_block(self, R: Array) -> Array:
        n0 = len(self.base.X)
        u = self.base.solve_kept(R[:n0])
        r1 = R[n0:] - self._B.T @ u
        x1 = solve_lower(self._L, solve_lower(self._L, r1), trans=True)
        return np.concatenate([u - self._Z @ x1, x1])

    def test_values(self, alpha: Array) -> Array:
        n0 = len(self.base.X)
        return self.base.test_values(alpha[:n0]) + self._T @ alpha[n0:]

    def test_block(self) -> Array:
        return np.hstack([self.base.test_block(), self._T])

    def _new_grid_kernel(self, grid: GridMap) -> GridKernel:
        return self.base.grid_kernel(grid).appended(self.X[len(self.base.X):])


def exact_direct(problem: Problem, kernel: str, sigma: float, lam: float, centered: bool
                 ) -> tuple[Array, Array, Array]:
    """One exact fit at λ by the library's estimator (its Cholesky factorisation, or a
    general solve): the grid's values through its map (the grid, train and test
    predictions)."""
    from kernel_lab.core.models import CenteredKernelRidge, KernelRidge

    est = (CenteredKernelRidge if centered else KernelRidge)(
        lam, kernel=kernel, kernel_params={"sigma": sigma}).fit(problem.X, problem.y)
    test = est.predict(problem.X_test) if len(problem.X_test) else np.zeros(0)
    grid = problem.grid.kernel(kernel, sigma, problem.X)(est.dual_coef_) + est.intercept_
    return grid, problem.y - lam * est.dual_coef_, test
