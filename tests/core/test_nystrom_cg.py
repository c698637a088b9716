"""Nyström ridge by preconditioned conjugate gradients against the direct solve on the
explicitly formed features (``feature_ridge``), and the ``solver`` switch of NystromRidge."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import GaussianKernel, LaplaceKernel, make_kernel
from kernel_lab.core.models import nystrom
from kernel_lab.core.models.feature_ridge import feature_ridge
from kernel_lab.core.models.nystrom import NystromRidge, nystrom_factor
from kernel_lab.core.progress import Cancelled, Progress
from kernel_lab.core.ridge import cg as nystrom_cg
from kernel_lab.core.ridge.cg import nystrom_predict, nystrom_ridge_cg, nystrom_ridge_cg_parts
from kernel_lab.core.rows import blocks
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.blocks import ROW_BLOCK
from kernel_lab.core.rows.mapreduce import LocalParts, RowPlan, array_parts, keyed_subset_of
from kernel_lab.core.validation import check_seed

EPS = np.finfo(np.float64).eps / 2          # unit roundoff u


def friedman(n, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p))
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
         + 5 * X[:, 4] + rng.normal(size=n))
    return X, y


@pytest.fixture(scope="module")
def data():
    X, y = friedman(3000)
    Xt, _ = friedman(500, seed=1)
    return X, y, Xt


def setup(kernel, X, s, seed=0):
    S = X[np.random.default_rng(seed).choice(X.shape[0], size=s, replace=False)]
    return S, nystrom_factor(kernel(S))


def reference(kernel, X, y, S, N, lam, intercept, Xt):
    """The direct solve on the explicit features, and its predictions at Xt."""
    coef, c = feature_ridge(kernel(X, S) @ N, y, lam, intercept=intercept)
    return coef, c, kernel(Xt, S) @ N @ coef + c


def rel(a, b):
    return np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b)


def reordered(C, N, w, c):
    """Bound on how far ``C (N w) + c`` (nystrom_predict, in row blocks) and
    ``(C N) w + c`` can differ: the same products summed in other orders; a float64 sum of
    m terms is off by at most m u Σ|terms|, here m ≤ 2s + r + 2."""
    m = 2 * N.shape[0] + N.shape[1] + 2
    return m * EPS * (np.abs(C) @ (np.abs(N) @ np.abs(w)) + abs(c))


class Guarantee:
    """What preconditioned CG stopped at a relative residual ``tol`` guarantees, worked out on
    the explicitly formed system, so that the tests' tolerances follow from the algorithm and
    not from one BLAS's rounding.

    With ``A = F_cᵀF_c + λI``, ``b = F_cᵀ(y − ȳ)``, the preconditioner ``P = L Lᵀ`` the solver
    builds (same rows, same seed) and ``M = L⁻¹ A L⁻ᵀ``, CG stops once
    ``‖r‖_P⁻¹ ≤ tol ‖b‖_P⁻¹`` (r = b − A w) on its recursively updated residual. For the error
    ``e = w − w*``::

        ‖e‖²_A = rᵀA⁻¹r = (L⁻¹r)ᵀ M⁻¹ (L⁻¹r) ≤ ‖r‖²_P⁻¹ / λ_min(M)
        ‖b‖²_P⁻¹ = ‖M Lᵀw*‖² ≤ λ_max(M) ‖w*‖²_A

    so ``‖e‖_A ≤ √κ(M) · ρ · ‖w*‖_A`` for a true relative residual ρ. :meth:`check` asserts
    ρ ≤ 2 tol (the recursive residual is ≤ tol; rounding moves the true one by a few parts in
    10⁵ of tol here), hence ``‖e‖_A ≤ 2 √κ(M) tol ‖w*‖_A`` — the energy norm, in which
    ``‖e‖²_A = ‖F_c e‖² + λ‖e‖²`` is the change in the fitted values. In the Euclidean norm
    ``‖e‖ ≤ ‖e‖_A / √λ_min(A)``; the intercept ``c = ȳ − μᵀw`` moves by ``|μᵀe| ≤ ‖μ‖ ‖e‖``
    (plus the rounding of the streamed means, ≤ n u (|ȳ| + |μ|ᵀ|w|)).
    """

    def __init__(self, kernel, X, y, S, N, lam, intercept=True, tol=nystrom_cg.DEFAULT_TOL,
                 seed=0):
        F = kernel(X, S) @ N
        self.mu = F.mean(axis=0) if intercept else np.zeros(F.shape[1])
        self.y_mean = float(y.mean()) if intercept else 0.0
        Fc = F - self.mu
        self.A = Fc.T @ Fc + lam * np.eye(F.shape[1])
        self.b = Fc.T @ (y - self.y_mean)
        self.w = np.linalg.solve(self.A, self.b)             # the direct solve, w*
        self.c = self.y_mean - float(self.mu @ self.w)
        # the solver's default preconditioner: the landmarks and the 4 s training rows
        # with the smallest keys of the stream LANDMARKS + CG_ROWS under the seed
        rows = nystrom_cg.PRECONDITIONER_ROWS_PER_LANDMARK * S.shape[0]
        index = keyed_subset_of(np.arange(X.shape[0]), seed,
                                rowkeys.LANDMARKS + nystrom_cg.CG_ROWS, rows)
        L = nystrom_cg.preconditioner_factor(kernel, np.concatenate([S, X[index]]), S, N,
                                             self.mu, lam, X.shape[0] / (S.shape[0] + rows))
        self.Linv = np.linalg.inv(L)
        m = np.linalg.eigvalsh(self.Linv @ self.A @ self.Linv.T)
        self.lam_min_A = float(np.linalg.eigvalsh(self.A)[0])
        self.tol, self.n = tol, X.shape[0]
        self.energy = 2.0 * math.sqrt(m[-1] / m[0]) * tol * self.norm_A(self.w)
        # the direct solve's own error, ≲ r u κ(A) relative, must be negligible beside it
        assert F.shape[1] * EPS * np.linalg.cond(self.A) * self.norm_A(self.w) < 1e-2 * self.energy

    def norm_A(self, v):
        return math.sqrt(float(v @ self.A @ v))

    @property
    def euclidean(self):
        """Bound on ‖w − w*‖."""
        return self.energy / math.sqrt(self.lam_min_A)

    def intercept(self, w):
        """Bound on |c − c*|."""
        means = self.n * EPS * (abs(self.y_mean) + float(np.abs(self.mu) @ np.abs(w)))
        return float(np.linalg.norm(self.mu)) * self.euclidean + means

    def predictions(self, Ft, w):
        """Bound on ‖F_t w + c − (F_t w* + c*)‖ ≤ ‖F_t‖₂ ‖e‖ + √n_t |c − c*|."""
        return (np.linalg.norm(Ft, 2) * self.euclidean
                + math.sqrt(Ft.shape[0]) * self.intercept(w))

    def check(self, w, c):
        """Assert the true residual and the error bounds for one CG answer (w, c)."""
        rho = (np.linalg.norm(self.Linv @ (self.b - self.A @ w))
               / np.linalg.norm(self.Linv @ self.b))
        assert rho <= 2 * self.tol
        assert self.norm_A(w - self.w) <= self.energy
        assert abs(c - self.c) <= self.intercept(w)


KERNELS = {"gaussian": GaussianKernel(0.8), "laplace": LaplaceKernel(2.0)}


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("lam", [1e-4, 1e-2, 1.0, 100.0])
def test_cg_equals_the_direct_solve(data, name, intercept, lam):
    X, y, Xt = data
    kernel = KERNELS[name]
    S, N = setup(kernel, X, 80)
    coef_ref, _, _ = reference(kernel, X, y, S, N, lam, intercept, Xt)
    coef, c, info = nystrom_ridge_cg(kernel, X, y, S, N, lam, intercept=intercept)
    assert info.converged and info.residual <= info.tol
    assert info.preconditioner_rows == 80 + 4 * 80 < X.shape[0]  # a real CG run
    assert 1 < info.iterations < 100
    assert len(info.history) == info.iterations and info.passes == info.iterations + 1
    guarantee = Guarantee(kernel, X, y, S, N, lam, intercept)
    guarantee.check(coef, c)
    # the Cholesky solve of feature_ridge is the direct solve w* up to its rounding
    # (backward stable: ≲ r u κ(A) relative, ≤ 1e-11 here)
    assert rel(coef_ref, guarantee.w) <= N.shape[1] * EPS * np.linalg.cond(guarantee.A)
    Ft = kernel(Xt, S) @ N
    pred = nystrom_predict(kernel, Xt, S, N, coef, c)
    assert (np.linalg.norm(pred - (Ft @ guarantee.w + guarantee.c))
            <= guarantee.predictions(Ft, coef))
    if not intercept:
        assert c == 0.0


def test_singular_w_from_duplicate_landmarks(data):
    X, y, Xt = data
    kernel = GaussianKernel(0.8)
    S = np.repeat(X[:30], 3, axis=0)               # 90 landmarks, 30 distinct: W has rank 30
    N = nystrom_factor(kernel(S))
    assert N.shape == (90, 30)
    coef_ref, _, pred_ref = reference(kernel, X, y, S, N, 0.01, True, Xt)
    coef, c, info = nystrom_ridge_cg(kernel, X, y, S, N, 0.01)
    assert info.converged
    assert rel(coef, coef_ref) <= 1e-6
    assert rel(nystrom_predict(kernel, Xt, S, N, coef, c), pred_ref) <= 1e-6


def test_low_rank_inner_product_kernel(data):
    """A quadratic kernel on 5 inputs has rank 21: most of W's eigenvalues are dropped."""
    X, y, Xt = data
    kernel = make_kernel("polynomial", {})
    S, N = setup(kernel, X, 60)
    assert N.shape[1] <= 21
    coef_ref, _, pred_ref = reference(kernel, X, y, S, N, 0.1, True, Xt)
    coef, c, _ = nystrom_ridge_cg(kernel, X, y, S, N, 0.1)
    assert rel(coef, coef_ref) <= 1e-6
    assert rel(nystrom_predict(kernel, Xt, S, N, coef, c), pred_ref) <= 1e-6


def test_tiny_blocks_give_the_same_answer(data):
    X, y, Xt = data
    kernel = GaussianKernel(0.8)
    S, N = setup(kernel, X, 50)
    coef, c, info = nystrom_ridge_cg(kernel, X, y, S, N, 0.01)
    coef7, c7, info7 = nystrom_ridge_cg(kernel, X, y, S, N, 0.01, block_rows=7)
    # the default kernel block: 64 MiB of k(X_block, S), at most one canonical row block
    assert info7.block_rows == 7 and info.block_rows == min(64 * 2**20 // (8 * 50), ROW_BLOCK)
    # Blocks only reorder the float64 sums, so the two runs solve the same system and each
    # stops within CG's guarantee (a 1e-8 agreement was one BLAS's luck: 1.4e-8 measured
    # with OpenBLAS's SkylakeX kernels, where one run stops an iteration earlier).
    guarantee = Guarantee(kernel, X, y, S, N, 0.01)
    guarantee.check(coef, c)
    guarantee.check(coef7, c7)
    assert guarantee.norm_A(coef7 - coef) <= 2 * guarantee.energy
    assert abs(c7 - c) <= guarantee.intercept(coef) + guarantee.intercept(coef7)
    # the residual falls ~2.2× per iteration; rounding can move the crossing of tol by one
    assert abs(info7.iterations - info.iterations) <= 1
    C = kernel(Xt, S)
    got = nystrom_predict(kernel, Xt, S, N, coef, c, block_rows=3)
    assert np.all(np.abs(got - (C @ N @ coef + c)) <= reordered(C, N, coef, c))


def test_progress_once_per_iteration_and_cancel(data):
    X, y, _ = data
    kernel = GaussianKernel(0.8)
    S, N = setup(kernel, X, 50)
    calls = []
    _, _, info = nystrom_ridge_cg(kernel, X, y, S, N, 0.01,
                                  progress=lambda f, m: calls.append((f, m)))
    assert len(calls) == info.iterations > 1
    fractions = [f for f, _ in calls]
    assert all(0 <= f <= 1 for f in fractions) and np.all(np.diff(fractions) >= 0)
    assert fractions[-1] == 1.0
    assert [m.split(":")[0] for _, m in calls] == [f"CG iteration {i + 1}"
                                                    for i in range(info.iterations)]
    seen = []

    def cancel_at_three():
        seen.append(1)
        return len(seen) >= 3

    with pytest.raises(Cancelled):
        nystrom_ridge_cg(kernel, X, y, S, N, 0.01, progress=Progress(is_cancelled=cancel_at_three))
    assert len(seen) == 3


def test_not_converging_is_reported(data):
    X, y, _ = data
    kernel = GaussianKernel(0.8)
    S, N = setup(kernel, X, 50)
    with pytest.warns(ConvergenceWarning, match="stopped after 2 iterations"):
        _, _, info = nystrom_ridge_cg(kernel, X, y, S, N, 1e-4, max_iter=2, tol=1e-14)
    assert not info.converged and info.iterations == 2 and info.residual > 1e-14


def test_preconditioner(data):
    X, y, _ = data
    kernel = GaussianKernel(0.8)
    S, N = setup(kernel, X, 80)
    _, _, full = nystrom_ridge_cg(kernel, X, y, S, N, 1e-3)
    _, _, landmarks_only = nystrom_ridge_cg(kernel, X, y, S, N, 1e-3, preconditioner_rows=0)
    assert landmarks_only.preconditioner_rows == 80
    assert full.iterations < landmarks_only.iterations
    # estimated from every row, the preconditioner is the system matrix: one step
    coef_ref, _, _ = reference(kernel, X, y, S, N, 1e-3, True, X[:2])
    coef, _, exact = nystrom_ridge_cg(kernel, X, y, S, N, 1e-3, preconditioner_rows=3000)
    assert exact.preconditioner_rows == 3000 and exact.iterations <= 2
    assert rel(coef, coef_ref) <= 1e-8


def test_constant_target_and_bad_arguments(data):
    X, _, _ = data
    kernel = GaussianKernel(0.8)
    S, N = setup(kernel, X, 20)
    coef, c, info = nystrom_ridge_cg(kernel, X, np.full(X.shape[0], 2.5), S, N, 0.1)
    assert info.iterations == 0 and info.converged and np.all(coef == 0) and c == 2.5
    y = np.zeros(X.shape[0])
    for kwargs, match in (({"lam": 0.0}, "λ"), ({"lam": np.nan}, "λ"),
                          ({"tol": 1.0}, "tolerance"), ({"max_iter": 0}, "max_iter"),
                          ({"block_rows": 0}, "block_rows"),
                          ({"preconditioner_rows": -1}, "preconditioner_rows")):
        args = {"lam": 0.1, **kwargs}
        lam = args.pop("lam")
        with pytest.raises(ParameterError, match=match):
            nystrom_ridge_cg(kernel, X, y, S, N, lam, **args)


@pytest.mark.parametrize("centered", [True, False])
def test_nystrom_ridge_cg_and_direct_agree(data, centered):
    X, y, Xt = data
    params = {"lam": 0.01, "kernel": "gaussian", "n_components": 60, "sampler": "uniform",
              "centered": centered, "random_state": 3}
    direct = NystromRidge(solver="direct", **params).fit(X, y)
    calls = []
    cg = NystromRidge(solver="cg", **params).fit(X, y, progress=lambda f, m: calls.append(f))
    np.testing.assert_array_equal(cg.features_.landmark_indices_,
                                  direct.features_.landmark_indices_)
    assert (direct.solver_, direct.n_iter_, direct.cg_info_) == ("direct", None, None)
    assert cg.solver_ == "cg" and cg.converged_ and cg.n_iter_ == cg.cg_info_.iterations > 1
    assert len(calls) == cg.n_iter_
    f = cg.features_
    S, N = f.landmarks_, f.normalization_
    guarantee = Guarantee(f.kernel_, X, y, S, N, 0.01, centered, seed=check_seed(3))
    guarantee.check(cg.coef_, cg.intercept_)
    # the direct solver is w* up to its rounding (≲ r u κ(A) relative)
    assert (np.linalg.norm(direct.coef_ - guarantee.w)
            <= N.shape[1] * EPS * np.linalg.cond(guarantee.A) * np.linalg.norm(guarantee.w))
    assert np.linalg.norm(direct.coef_ - cg.coef_) <= 2 * guarantee.euclidean
    Ft = direct.features_.transform(Xt)
    assert np.linalg.norm(cg.predict(Xt) - direct.predict(Xt)) <= 2 * guarantee.predictions(
        Ft, cg.coef_)
    assert np.all(np.abs(direct.predict(Xt) - (Ft @ direct.coef_ + direct.intercept_))
                  <= reordered(f.kernel_(Xt, S), N, direct.coef_, direct.intercept_))


def test_auto_solver_follows_the_size(data, monkeypatch):
    X, y, _ = data
    est = NystromRidge(0.1, n_components=30, sampler="uniform", random_state=0).fit(X, y)
    assert est.solver == "auto" and est.solver_ == "direct"  # 8 n s = 720 kB
    monkeypatch.setattr(nystrom, "CG_AUTO_BYTES", 8 * 3000 * 30 - 1)
    est = NystromRidge(0.1, n_components=30, sampler="uniform", random_state=0).fit(X, y)
    assert est.solver_ == "cg" and est.converged_
    monkeypatch.setattr(nystrom, "CG_AUTO_BYTES", 8 * 3000 * 30)
    assert clone(est).fit(X, y).solver_ == "direct"


def test_bad_solver_and_cg_parameters(data):
    X, y, _ = data
    with pytest.raises(ParameterError, match=r"solver must be one of: auto, cg, direct; "
                                             r"got 'cholesky'"):
        NystromRidge(solver="cholesky").fit(X, y)
    with pytest.raises(ParameterError, match="cg_max_iter must be a positive integer"):
        NystromRidge(cg_max_iter=0).fit(X, y)
    with pytest.raises(ParameterError, match="cg_tol must be positive"):
        NystromRidge(cg_tol=-1.0).fit(X, y)
    with pytest.raises(ParameterError, match="cg_tol must lie strictly between 0 and 1"):
        NystromRidge(cg_tol=1.0, solver="direct").fit(X, y)


def test_nystrom_ridge_warns_when_cg_does_not_converge(data):
    X, y, _ = data
    est = NystromRidge(1e-4, n_components=60, sampler="uniform", solver="cg", cg_tol=1e-14,
                       cg_max_iter=2, random_state=0)
    with pytest.warns(ConvergenceWarning, match="not accurate"):
        est.fit(X, y)
    assert not est.converged_ and est.n_iter_ == 2


def test_clone_keeps_the_solver_parameters():
    est = NystromRidge(0.5, solver="cg", cg_tol=1e-6, cg_max_iter=17, n_components=12)
    params = clone(est).get_params()
    assert (params["solver"], params["cg_tol"], params["cg_max_iter"]) == ("cg", 1e-6, 17)
    assert params["lam"] == 0.5 and params["n_components"] == 12
    assert clone(est.set_params(solver="direct")).solver == "direct"


@parametrize_with_checks([NystromRidge(solver="cg", n_components=20, random_state=0)])
def test_sklearn_compatible_with_cg(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        check(estimator)


def test_estimator_cg_is_the_partitioned_cg_bit_for_bit(monkeypatch):
    """NystromRidge(solver="cg") on an array runs the partitioned CG on the array as one part:
    the same rows cut into five unequal parts at the canonical blocks give the same bits."""
    monkeypatch.setattr(blocks, "ROW_BLOCK", 64)
    X, y = friedman(700, seed=4)
    est = NystromRidge(0.01, n_components=30, sampler="uniform", solver="cg",
                       random_state=5).fit(X, y)
    info = est.cg_info_
    assert info.converged and info.iterations > 1
    assert info.preconditioner_rows == 30 + 4 * 30 < 700 and info.block_rows == 64
    five = LocalParts(array_parts(X, y, [128, 256, 64, 192, 60]))   # cut at multiples of 64
    plan = RowPlan(seed=0, n=700, n_test=0, cut=None)                # every row trains
    assert plan.block == 64
    f = est.features_
    coef, c, info5 = nystrom_ridge_cg_parts(five, plan, f.kernel_, f.landmarks_,
                                            f.normalization_, 0.01, seed=check_seed(5))
    assert np.array_equal(coef, est.coef_) and c == est.intercept_
    assert info5.history == info.history
