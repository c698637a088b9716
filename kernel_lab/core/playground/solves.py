"""Exact KRR and CKRR at large n without an n × n factorisation: preconditioned conjugate
gradients on ``(K + λI) x = b`` for many λ at once, and every other λ from the solutions
(:class:`ExactSolves`).

Above a few thousand training points an eigendecomposition of K (every λ at once, what
:class:`~kernel_lab.core.playground.exact.ExactCache` keeps) takes seconds, and even one
Cholesky factorisation takes most of a second on one core. A Krylov solve costs a few
products with K instead, O(n²) each, when it is preconditioned well:

* **Preconditioner** (:class:`NystromPreconditioner`, as FALKON): a low-rank ``K̃ = F Fᵀ``,
  F the pivoted partial Cholesky factor of the kept K (:func:`low_rank_factor`: a
  Nyström approximation on its pivots; on 200–400 uniform landmarks CG needed 100–200+
  iterations at λ ≤ 10⁻⁵, with the pivoted factor 2–9), so ``P = K̃ + λI`` — applied by
  Woodbury's identity, ``P⁻¹ = (I − G (Σ + λ)⁻¹ Gᵀ)/λ`` with ``FᵀF = Q Σ Qᵀ``,
  ``G = F Q``: O(n r) a column, for every λ from one r × r eigendecomposition. Since
  ``0 ⪯ K − K̃``, P⁻¹A's eigenvalues lie in
  ``[1, 1 + ‖K − K̃‖/λ]``: where the kernel's spectrum falls off (a smooth kernel, a
  bandwidth that is not tiny) a few iterations reach rounding level even at λ = 10⁻⁶.
* **Many λ at once** (:func:`shifted_cg`): one column per (right-hand side, λ), each column
  its own CG and its own λ in P; one product of K with all the active columns a step.
* **Stopping rule — exact to rounding.** A column stops when its normwise backward error
  ``η = ‖b − (K + λI)x‖ / (‖K + λI‖ ‖x‖ + ‖b‖)`` is at most :data:`TOL` (10⁻¹⁵, about 9 ε),
  with the residual recomputed from x, not the recurrence (a drifted recurrence restarts CG
  from x). Then x solves exactly a system within 10⁻¹⁵ (relative) of ``K + λI`` — the
  guarantee of a direct solver (a Cholesky factorisation's backward error is bounded by a
  small multiple of n ε, n ε ≈ 4·10⁻¹³ at n = 3,750), so the answer's forward error is at
  most about κ(K + λI)·10⁻¹⁵, as a direct solve's. On moons with 3,746 training points every
  λ of the error curve (10⁻⁶ … 10⁴, σ = 0.3 … 1) reached it, one iteration more than 10⁻¹⁴
  took, the worst at 9.4·10⁻¹⁶.
  ‖K + λI‖ is estimated from below by the preconditioner's largest eigenvalue plus λ (K̃ ⪯ K),
  so η is over-, never under-estimated.
* **Warm starts.** A start x₀ (the previous σ's solution) only changes where CG begins, not
  the stopping rule: a warm-started solve equals a cold one to the tolerance.
* **Every other λ** (:class:`LambdaBasis`): α(λ) = (K + λI)⁻¹b is a rational function of λ;
  the solutions at 8 λ a decade across the error curve's range span a space in which the
  Galerkin solution at any λ between them is exact to rounding — checked by its backward
  error, the residual coming from a kept K V without a product with K, and accepted at
  :data:`BASIS_TOL`; a λ it cannot certify gets CG steps from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kernel_lab.core.playground.exact import Factor, Solved
from kernel_lab.core.playground.fits import Superseded, error
from kernel_lab.core.playground.gridmap import GridKernel

Array = np.ndarray

#: The normwise backward error at which a solve is exact (see the module docstring).
TOL = 1e-15
#: The backward error at which a λ move's first answer from the :class:`LambdaBasis` is
#: drawn (then refined by CG to :data:`TOL`): the basis certifies its answer without a
#: product with K, from a kept K V whose own rounding puts a floor of about 1e-14 under
#: what it can certify (moons, 3,746 points, σ = 0.3 … 1: of 200 random λ in 10⁻⁶ … 10⁴,
#: 74–100 % within 1e-14 and all within 3.4·10⁻¹⁴ with 8 solutions a decade). Still a
#: direct solver's guarantee (n ε ≈ 4·10⁻¹³ at that n): forward errors up to about
#: κ(K + λI)·10⁻¹³ — 2·10⁻⁷ relative at λ = 4·10⁻⁴, where the refinement brings it to a
#: Cholesky solve's.
BASIS_TOL = 1e-13
#: Solutions a decade kept for the :class:`LambdaBasis` (with 4, the curve's, the worst λ
#: between them reached only 1.5·10⁻¹⁰).
BASIS_PER_DECADE = 8
#: Columns of one product with K between two questions whether a newer request came (a
#: product with 32 columns of a 3,746² matrix takes about 20 ms on one core).
CHUNK = 32
#: Iterations of one :func:`shifted_cg` call before it gives up (the caller then factorises).
MAX_ITER = 80


class NystromPreconditioner:
    """``P_λ = F Fᵀ + λI`` for every λ (see the module docstring), F (n × r) a factor of a
    low-rank ``K̃ = F Fᵀ ⪯ K`` (:func:`low_rank_factor`)."""

    def __init__(self, F: Array) -> None:
        S, Q = np.linalg.eigh(F.T @ F)
        self.S = np.clip(S, 0.0, None)
        self.G = F @ Q  # P_λ⁻¹ = (I − G (Σ + λ)⁻¹ Gᵀ) / λ
        #: A lower bound on ‖K‖₂ (the largest eigenvalue of K̃ ⪯ K).
        self.top = float(self.S[-1]) if len(self.S) else 0.0

    def apply(self, R: Array, lams: Array) -> Array:
        """``P_λ⁻¹ R``, column j with ``lams[j]``."""
        T = self.G.T @ R
        T /= self.S[:, None] + lams[None, :]
        out = R - self.G @ T
        out /= lams[None, :]
        return out


def low_rank_factor(K: Array, trace_tol: float, max_rank: int, block: int = 64,
                    start: Array | None = None,
                    cancelled: Callable[[], bool] | None = None) -> Array:
    """A factor ``L`` (n × r) with ``K̃ = L Lᵀ ⪯ K`` and ``tr(K − K̃) ≤ trace_tol`` unless the
    rank would pass ``max_rank``: greedy blocked pivoted Cholesky on the kept K — each step
    takes the ``block`` points of largest residual diagonal and adds the Nyström
    approximation of the residual kernel on them (its pivot block's eigenvalues below
    rounding dropped), so ``K − L Lᵀ`` stays positive semi-definite and
    ``‖K − K̃‖₂ ≤ tr(K − K̃)``. O(n r²) in matrix products. ``start``: a factor made so
    for a larger ``trace_tol``, continued."""
    n = len(K)
    d = np.diag(K).copy()
    have = 0 if start is None else start.shape[1]
    L = np.empty((n, max(max_rank, have)))
    if have:
        L[:, :have] = start
        d -= np.einsum("ij,ij->i", start, start)
        np.clip(d, 0.0, None, out=d)
    rank = have
    floor = 1e-13 * max(float(d.max()), np.finfo(float).tiny) if n else 0.0
    while rank < max_rank and float(d.sum()) > trace_tol:
        if cancelled is not None and cancelled():
            raise Superseded
        take = min(block, max_rank - rank, int(np.count_nonzero(d > floor)))
        if take <= 0:
            break
        piv = np.argpartition(-d, take - 1)[:take]
        R = K[:, piv]  # the residual kernel's columns at the pivots (a copy)
        if rank:
            R -= L[:, :rank] @ L[piv, :rank].T
        e, V = np.linalg.eigh((R[piv] + R[piv].T) / 2)
        keep = e > floor
        if not np.any(keep):
            break
        new = R @ (V[:, keep] / np.sqrt(e[keep]))
        L[:, rank:rank + new.shape[1]] = new
        rank += new.shape[1]
        d -= np.einsum("ij,ij->i", new, new)
        d[piv] = 0.0
        np.clip(d, 0.0, None, out=d)
    return L[:, :rank]


@dataclass
class SolveInfo:
    """How a :func:`shifted_cg` call ended: per column the iterations and the backward error
    of the answer (recomputed from it), and whether every column met :data:`TOL`."""

    iterations: Array
    backward_error: Array
    tol: float

    @property
    def converged(self) -> bool:
        return bool(np.all(self.backward_error <= self.tol))


#: The matrix of a system: an array, or a function computing its product with a block.
Operator = Array | Callable[[Array], Array]


def product(K: Operator, V: Array, cancelled: Callable[[], bool] | None = None) -> Array:
    """``K V`` for an :data:`Operator`; with ``cancelled``, in pieces of :data:`CHUNK`
    columns, asking it between them (True raises
    :class:`~kernel_lab.core.playground.fits.Superseded`)."""
    if cancelled is None or V.shape[1] <= CHUNK:
        return K @ V if isinstance(K, np.ndarray) else K(V)
    out = np.empty((V.shape[0], V.shape[1]))
    for lo in range(0, V.shape[1], CHUNK):
        if lo and cancelled():
            raise Superseded
        out[:, lo:lo + CHUNK] = product(K, V[:, lo:lo + CHUNK])
    return out


def backward_error(K: Operator | None, KX: Array | None, X: Array, B: Array, lams: Array,
                   norm_K: float) -> tuple[Array, Array]:
    """The residuals ``B − (K + λI)X`` (``KX`` = K X when kept) and each column's normwise
    backward error with ``‖K‖ ≈ norm_K``."""
    R = B - (product(K, X) if KX is None else KX) - X * lams[None, :]
    scale = (norm_K + lams) * np.linalg.norm(X, axis=0) + np.linalg.norm(B, axis=0)
    return R, np.linalg.norm(R, axis=0) / np.where(scale > 0, scale, 1.0)


def shifted_cg(K: Operator, B: Array, lams: Array, prec: NystromPreconditioner,
               X0: Array | None = None, *, tol: float = TOL, max_iter: int = MAX_ITER,
               cancelled: Callable[[], bool] | None = None) -> tuple[Array, SolveInfo]:
    """Solve ``(K + lams[j] I) x_j = B[:, j]`` for every column j by preconditioned CG
    (``prec``), from ``X0`` (zeros when None). Each column stops at a backward error ≤
    ``tol`` (see the module docstring) or after ``max_iter`` iterations. ``cancelled()`` is
    asked every iteration: True raises :class:`~kernel_lab.core.playground.fits.Superseded`.
    Returns the solutions and a :class:`SolveInfo`."""
    B = np.asarray(B, dtype=np.float64)
    B = B.reshape(len(B), -1)
    lams = np.broadcast_to(np.asarray(lams, dtype=np.float64), (B.shape[1],)).copy()
    X = np.zeros_like(B) if X0 is None else np.array(X0, dtype=np.float64).reshape(B.shape)
    R, eta = backward_error(K, None if X0 is not None else np.zeros_like(B), X, B, lams,
                            prec.top)
    its = np.zeros(B.shape[1], dtype=int)
    norm_B = np.linalg.norm(B, axis=0)
    P, rz = np.zeros_like(B), np.zeros(B.shape[1])

    def restart(cols: Array) -> None:  # CG afresh from the residuals of these columns
        Z = prec.apply(R[:, cols], lams[cols])
        P[:, cols] = Z
        rz[cols] = np.einsum("ij,ij->j", R[:, cols], Z)

    active = np.flatnonzero(eta > tol)
    restart(active)
    while active.size:
        if cancelled is not None and cancelled():
            raise Superseded
        lam, Pa = lams[active], P[:, active]
        AP = product(K, Pa, cancelled)  # giving way to a newer request between pieces
        AP += Pa * lam[None, :]
        step = rz[active] / np.einsum("ij,ij->j", Pa, AP)
        X[:, active] += Pa * step
        Ra = R[:, active] - AP * step
        R[:, active] = Ra
        its[active] += 1
        Z = prec.apply(Ra, lam)
        rz_new = np.einsum("ij,ij->j", Ra, Z)
        P[:, active] = Z + Pa * (rz_new / rz[active])
        rz[active] = rz_new
        small = np.linalg.norm(Ra, axis=0) <= tol * (
            (prec.top + lam) * np.linalg.norm(X[:, active], axis=0) + norm_B[active])
        ending = small | (its[active] >= max_iter)
        if np.any(ending):
            # the recurrence says done (or the budget is spent): the true residual decides;
            # a column whose recurrence had drifted restarts from its true residual
            check = active[ending]
            R[:, check], eta[check] = backward_error(K, None, X[:, check], B[:, check],
                                                     lams[check], prec.top)
            done = (eta[check] <= tol) | (its[check] >= max_iter)
            restart(check[~done])
            active = np.setdiff1d(active, check[done], assume_unique=True)
    return X, SolveInfo(its, eta, tol)


class LambdaBasis:
    """Every λ from solutions at a few (see the module docstring): ``X`` (n × m) the
    solutions of ``(K + λ_j I) x = b`` for right-hand sides among ``B``'s columns; an
    orthonormal basis V of their span, ``KV`` = K V and the eigendecomposition of VᵀKV."""

    def __init__(self, K: Operator, X: Array, B: Array,
                 cancelled: Callable[[], bool] | None = None) -> None:
        scaled = X / np.maximum(np.linalg.norm(X, axis=0), np.finfo(float).tiny)
        U, sv, _ = np.linalg.svd(scaled, full_matrices=False)
        self.V = U[:, sv > sv[0] * 1e-13]
        self.KV = product(K, self.V, cancelled)
        H = self.V.T @ self.KV
        self.theta, self.Phi = np.linalg.eigh((H + H.T) / 2)
        self.B = B
        self.VtB = self.V.T @ B

    def solve(self, lam: float, norm_K: float) -> tuple[Array, Array]:
        """The Galerkin solutions at λ for every column of ``B``, and their backward errors."""
        coef = self.Phi @ ((self.Phi.T @ self.VtB) / (self.theta + lam)[:, None])
        X = self.V @ coef
        lams = np.full(self.B.shape[1], float(lam))
        return X, backward_error(None, self.KV @ coef, X, self.B, lams, norm_K)[1]


def rhs(y: Array, centered: bool) -> Array:
    """The right-hand side of exact KRR (``y``) or CKRR (``y − ȳ``, for the centred matrix
    ``K_c = P K P``, P = I − 11ᵀ/n: see :class:`ExactSolves`)."""
    return (y - y.mean())[:, None] if centered else y[:, None]


#: The trace of ``K − K̃`` the preconditioner of a solve at λ leaves: ``‖K − K̃‖ ≤ ρλ``
#: bounds P⁻¹A's condition number by 1 + ρ (a few iterations to rounding level).
TRACE_FRACTION = 0.1


class ExactSolves:
    """Exact KRR (``centered=False``) or CKRR at large n by preconditioned CG — the role of
    :class:`~kernel_lab.core.playground.exact.ExactCache` without an eigendecomposition:
    :meth:`solve` at one λ (the σ move's exact fit), :meth:`complete` (every λ of the error
    curve, then any λ from :class:`LambdaBasis`), :meth:`predict`, :meth:`curve`,
    :meth:`system` (a painted point borders it).

    ``K`` (n × n) and ``K_test`` are the kernel's blocks at σ, ``K_grid`` the grid's map
    ``c ↦ K(G, X) c``. The preconditioner's factor (:func:`low_rank_factor`) is grown as a
    smaller λ needs it (``max_rank`` at most). Every answer meets :data:`TOL`; where CG
    cannot within :data:`MAX_ITER` iterations, :class:`NotSolved` is raised and the caller
    uses a factorisation.

    CKRR solves the centred system of
    :class:`~kernel_lab.core.models.CenteredKernelRidge`, ``(K_c + λI) α = y − ȳ`` with
    ``K_c = P K P`` (a product with K and two means), its preconditioner the factor's rows
    centred (``P K̃ P ⪯ P K P``): one column a λ as for KRR, where the uncentred form with an
    unpenalised intercept needs two (y and the ones). Then ``1ᵀα = 0``, the intercept is
    ``b = ȳ − k̄ᵀα`` (k̄ the kernel's column means, kept) and ``f(X) = y − λα`` still."""

    def __init__(self, K: Array, K_test: Array, K_grid: Callable[[Array], Array], X: Array,
                 y: Array, X_test: Array, kernel: str, sigma: float, centered: bool,
                 max_rank: int) -> None:
        self.K, self.K_test, self.K_grid = K, K_test, K_grid
        self.X, self.y, self.X_test = X, y, X_test
        self.kernel, self.sigma, self.centered = kernel, sigma, centered
        self.max_rank = max_rank
        self.B = rhs(y, centered)
        self.col_means = K.mean(axis=0) if centered else None
        self._factor = np.zeros((len(y), 0))
        self._factor_trace = math.inf
        self._prec: NystromPreconditioner | None = None
        #: Solutions kept: λ → the solutions of :func:`rhs`'s columns.
        self.solved: dict[float, Array] = {}
        self.basis: LambdaBasis | None = None
        self.curve_lams: Array | None = None
        self._curve: tuple[tuple[object, ...], dict[str, Array]] | None = None
        self._plain: ExactSolves | None = None
        #: Answers from the λ basis within :data:`BASIS_TOL`, not yet refined to :data:`TOL`.
        self.nearly: dict[float, Array] = {}

    @property
    def operator(self) -> Operator:
        """The system's matrix: K, or for CKRR the product with ``K_c`` (made on each
        access: a bound method kept on the object would make a reference cycle, which the
        window, running with the cyclic garbage collector off, would never free — with it
        the n × n kernel matrix)."""
        return self._centred if self.centered else self.K

    def _centred(self, V: Array) -> Array:
        """``K_c V = P K P V``."""
        W = self.K @ (V - V.mean(axis=0))
        W -= W.mean(axis=0)
        return W

    def preconditioner(self, lam: float, cancelled: Callable[[], bool] | None = None
                       ) -> NystromPreconditioner:
        """A preconditioner good for λ and above (its factor grown for a smaller λ)."""
        want = TRACE_FRACTION * lam
        if self._prec is None or (want < self._factor_trace
                                  and self._factor.shape[1] < self.max_rank):
            self._factor = low_rank_factor(self.K, want, self.max_rank, start=self._factor,
                                           cancelled=cancelled)
            self._factor_trace = want
            F = self._factor - self._factor.mean(axis=0) if self.centered else self._factor
            self._prec = NystromPreconditioner(F)
        return self._prec

    def solve(self, lam: float, start: Array | None = None,
              cancelled: Callable[[], bool] | None = None, accept: float = TOL) -> Array:
        """The solutions at λ, from ``start`` (e.g. the previous σ's), else from the λ
        basis, else from the nearest λ solved. Kept in :attr:`solved` when they meet
        :data:`TOL`. With ``accept`` (at most :data:`BASIS_TOL`) the λ basis's answer is
        taken when its backward error is within it — kept in :attr:`nearly` until
        :meth:`solve` refines it by CG — so that a λ move costs no product with K."""
        lam = float(lam)
        if lam in self.solved:
            return self.solved[lam]
        prec = self.preconditioner(lam, cancelled)
        if start is None and self.basis is not None:
            start, eta = self.basis.solve(lam, prec.top)
            if np.all(eta <= TOL):
                self.solved[lam] = start
                return start
            if np.all(eta <= accept):
                self.nearly[lam] = start
                return start
        elif start is None and self.solved:  # from the nearest λ solved (in log λ)
            near = min(self.solved, key=lambda m: abs(math.log(m / lam)))
            start = self.solved[near]
        X, info = shifted_cg(self.operator, self.B, lam, prec, start, cancelled=cancelled)
        if not info.converged:
            raise NotSolved(lam, info)
        self.solved[lam] = X
        self.nearly.pop(lam, None)
        return X

    def _solve_all(self, lams: Array, cancelled: Callable[[], bool] | None) -> None:
        """Every λ of ``lams`` not solved yet, at once (one column each)."""
        prec = self.preconditioner(float(np.min(lams)), cancelled)
        todo = [float(lam) for lam in lams if float(lam) not in self.solved]
        if todo:
            k = self.B.shape[1]
            X, info = shifted_cg(self.operator, np.tile(self.B, len(todo)), np.repeat(todo, k),
                                 prec, cancelled=cancelled)
            if not info.converged:
                raise NotSolved(min(todo), info)
            for j, lam in enumerate(todo):
                self.solved[lam] = X[:, j * k:(j + 1) * k]
                self.nearly.pop(lam, None)

    def solve_curve(self, lams: Array, cancelled: Callable[[], bool] | None = None) -> None:
        """Every λ of the error curve ``lams``, at once."""
        self._solve_all(np.asarray(lams, dtype=np.float64), cancelled)
        self.curve_lams = np.asarray(lams, dtype=np.float64)

    def complete(self, lams: Array, cancelled: Callable[[], bool] | None = None) -> None:
        """:meth:`solve_curve`, and :data:`BASIS_PER_DECADE` λ a decade across the
        curve's range, all at once, and keep the :class:`LambdaBasis` of the solutions
        that answers any other λ (the Playground makes it while the hand rests after the
        curve is drawn)."""
        lams = np.asarray(lams, dtype=np.float64)
        if self.basis is not None and all(float(lam) in self.solved for lam in lams):
            return
        lo, hi = np.log10(lams.min()), np.log10(lams.max())
        snaps = np.unique(np.concatenate([lams, np.logspace(
            lo, hi, round((hi - lo) * BASIS_PER_DECADE) + 1)]))
        self._solve_all(snaps, cancelled)
        self.curve_lams = lams
        self.basis = LambdaBasis(
            self.operator, np.hstack([self.solved[float(lam)] for lam in snaps] + [self.B]),
            self.B, cancelled)

    def alpha(self, X: Array) -> tuple[Array, float]:
        """α and the intercept from a solution of :attr:`B`."""
        a = X[:, 0]
        if not self.centered:
            return a, 0.0
        return a, float(self.y.mean() - self.col_means @ a)

    def alphas(self, lam: float) -> tuple[Array, float]:
        """α and the intercept at λ (a first answer from :attr:`nearly` if that is all)."""
        lam = float(lam)
        X = self.solved.get(lam)
        return self.alpha(self.nearly[lam] if X is None and lam in self.nearly
                          else self.solve(lam))

    def predict(self, lam: float) -> tuple[Array, Array, Array]:
        """Grid, train and test predictions at λ (training: ``f(X) = y − λα``)."""
        a, b = self.alphas(lam)
        return self.K_grid(a) + b, self.y - lam * a, self.K_test @ a + b

    def curve(self, lams: Array, y_test: Array, task: str) -> dict[str, Array]:
        """Train and test error at every λ of ``lams`` (:meth:`complete` first)."""
        lams = np.asarray(lams, dtype=np.float64)
        key = (tuple(lams), task)
        if self._curve is not None and self._curve[0] == key:
            return self._curve[1]
        self.solve_curve(lams)
        self._curve = (key, self._curve_of(lams, y_test, task))
        return self._curve[1]

    def _curve_of(self, lams: Array, y_test: Array, task: str) -> dict[str, Array]:
        pairs = [self.alpha(self.solved[float(lam)]) for lam in lams]
        A = np.column_stack([a for a, _ in pairs])
        b = np.array([b for _, b in pairs])
        train = self.y[:, None] - lams[None, :] * A
        test = self.K_test @ A + b[None, :]
        return {"lam": lams,
                "train": np.array([error(train[:, j], self.y, task) for j in range(len(lams))]),
                "test": np.array([error(test[:, j], y_test, task) for j in range(len(lams))])}

    def system(self, lam: float) -> CGSystem:
        """``K + λI`` (uncentred, also for CKRR) as a solved system: a painted point borders
        it."""
        return CGSystem(self.plain(), float(lam))

    def factor(self, lam: float, out: Array, cancelled: Callable[[], bool] | None = None
               ) -> Factor:
        """The Cholesky factor of (uncentred) ``K + λI`` on these kernel blocks, written
        into ``out`` in blocks of columns (a newer request stops it between pieces:
        ``cancelled()`` True raises :class:`~kernel_lab.core.playground.fits.Superseded`),
        with this grid map: a painted point borders it by two triangular solves, where
        bordering :meth:`system` takes a CG solve (several products with K). The factor
        holds these solves, whose kernel blocks it shares."""
        def between() -> None:
            if cancelled is not None and cancelled():
                raise Superseded

        factor = Factor.in_blocks(self.K, self.K_test, self.X, self.X_test, self.kernel,
                                  self.sigma, lam, out, between)
        factor.solves = self  # the shared blocks stay these solves' while the factor lives
        if isinstance(self.K_grid, GridKernel):
            factor._grids = {self.K_grid.key: self.K_grid}
        return factor

    def plain(self) -> ExactSolves:
        """The solves of the uncentred ``K + λI`` on the same kernel blocks and factor
        (this one for KRR)."""
        if not self.centered:
            return self
        if self._plain is None:
            plain = ExactSolves(self.K, self.K_test, self.K_grid, self.X, self.y, self.X_test,
                                self.kernel, self.sigma, False, self.max_rank)
            plain._factor, plain._factor_trace = self._factor, self._factor_trace
            self._plain = plain
        return self._plain


class CGSystem(Solved):
    """``K + λI`` of (uncentred) :class:`ExactSolves` as a
    :class:`~kernel_lab.core.playground.exact.Solved`: a block of right-hand sides is solved
    by the same preconditioned CG; the targets' solution is the one the solves keep (a
    painted point's bordering reads it, :meth:`~Solved.solve_kept` keeps the rest). Raises
    ``numpy.linalg.LinAlgError`` when CG does not reach :data:`TOL`, as a factorisation of a
    matrix that is not numerically positive definite does."""

    def __init__(self, solves: ExactSolves, lam: float) -> None:
        self.solves, self.lam = solves, lam
        self.X, self.X_test, self.K_test = solves.X, solves.X_test, solves.K_test
        self.kernel, self.sigma = solves.kernel, solves.sigma

    def _targets(self, r: Array) -> Array | None:
        """The kept solution when ``r`` is the targets y, else None."""
        S = self.solves
        if not np.array_equal(r, S.B[:, 0]):
            return None
        try:
            return S.solve(self.lam)[:, 0]
        except NotSolved as exc:
            raise np.linalg.LinAlgError(str(exc)) from exc

    def solve_block(self, R: Array) -> Array:
        S = self.solves
        R2 = R.reshape(len(R), -1)
        out = np.empty(R2.shape)
        todo = []
        for j in range(R2.shape[1]):
            x = self._targets(R2[:, j])
            if x is None:
                todo.append(j)
            else:
                out[:, j] = x
        if todo:
            X, info = shifted_cg(S.K, R2[:, todo], self.lam, S.preconditioner(self.lam))
            if not info.converged:
                raise np.linalg.LinAlgError(str(NotSolved(self.lam, info)))
            out[:, todo] = X
        return out.reshape(R.shape)


class NotSolved(ArithmeticError):
    """CG did not reach :data:`TOL` within its iterations (the caller factorises)."""

    def __init__(self, lam: float, info: SolveInfo) -> None:
        super().__init__(f"CG at λ = {lam:g} stopped at a backward error of "
                         f"{float(info.backward_error.max()):.1e} after "
                         f"{int(info.iterations.max())} iterations (tolerance {info.tol:g})")
        self.info = info
