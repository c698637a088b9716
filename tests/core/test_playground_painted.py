"""A painted point in the Playground: the grid map and the solved system grow by the new
points' columns (kept ones neither evaluated nor copied again), and every fit drawn is
the library estimator's fitted from scratch on the painted data — for a stroke of points
painted one after another, after a λ move and after a σ move."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core import playground as pg
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import CenteredKernelRidge, KernelRidge
from kernel_lab.core.playground import exact as exact_module
from kernel_lab.core.playground.gridmap import TAIL_COLUMNS
from kernel_lab.engine.playground.fit import PREVIEW_ABOVE, FitEngine, Request
from kernel_lab.engine.playground.params import resolve_fit_params
from kernel_lab.engine.playground.state import Points

RES = 40  # the grid of these tests (its values are compared point by point)


@pytest.mark.parametrize("dim", [1, 2])
@pytest.mark.parametrize("kernel", pg.KERNELS)
def test_an_appended_grid_map_is_the_map_of_all_the_points(dim, kernel):
    """Points appended one, a few and many at a time (past the tail's merge limit) give
    the map of all the points made at once, and the map appended to is unchanged."""
    rng = np.random.default_rng(8)
    Z = rng.uniform(-3, 3, size=(60 + 2 * TAIL_COLUMNS, dim))
    gm = pg.GridMap(dim, 23)
    first = gm.kernel(kernel, 0.6, Z[:50])
    grown, n = first, 50
    for k in (1, 1, 3, TAIL_COLUMNS, 2, TAIL_COLUMNS - 5, 1):
        grown, n = grown.appended(Z[n:n + k]), n + k
        assert grown.width == n
        C = rng.normal(size=(n, 2))
        whole = gm.kernel(kernel, 0.6, Z[:n])
        for c in (C[:, 0], C):
            np.testing.assert_allclose(grown(c), whole(c), rtol=1e-12, atol=1e-12)
    K = make_kernel(kernel, {"sigma": 0.6})(gm.points, Z[:50])
    c = rng.normal(size=50)
    np.testing.assert_allclose(first(c), K @ c, rtol=1e-12, atol=1e-12)
    assert grown.key == (dim, 23)


def _fitted(X: np.ndarray, y: np.ndarray, test: np.ndarray, method: str, kernel: str,
            sigma: float, lam: float) -> KernelRidge | CenteredKernelRidge:
    cls = CenteredKernelRidge if method == "ckrr" else KernelRidge
    return cls(lam, kernel=kernel, kernel_params={"sigma": sigma}).fit(X[~test], y[~test])


def _is_the_estimators(fit, points: Points, method: str, kernel: str, sigma: float,
                       lam: float, what: str) -> None:
    """The drawn fit (grid, train and test predictions) is the estimator's, fitted from
    scratch on ``points``, to 1e-10 — or, where K + λI is worse conditioned, to what two
    backward-stable solves share: a multiple of κ ε, κ ≤ (tr K + λ)/λ = (n + λ)/λ for
    these kernels (k(x, x) = 1). (CKRR with 300 points at λ = 0.01 differed from the
    estimator by 1.1e-10 with OpenBLAS's SkylakeX kernels, the estimator's own solve
    moving as much.)"""
    ref = _fitted(points.X, points.y, points.test, method, kernel, sigma, lam)
    r = fit.primary
    assert "preview" not in r.extra, what
    n = int((~points.test).sum())
    for got, at in ((r.grid, pg.grid(2, RES)), (r.train, points.X[~points.test]),
                    (r.test, points.X[points.test])):
        want = ref.predict(at)
        tol = max(1e-10, 20 * (n + lam) / lam * np.finfo(float).eps
                  * max(1.0, float(np.abs(want).max(initial=0.0))))
        np.testing.assert_allclose(got, want, rtol=0, atol=tol, err_msg=what)


class _Painter:
    """A Playground's engine and data: paint points, move λ or σ, and see the fit."""

    def __init__(self, n: int, method: str, kernel: str = "gaussian", sigma: float = 0.6,
                 lam: float = 0.01, quick: bool = True) -> None:
        X, y, test = pg.generate("moons", n, 0.2, seed=1)
        self.points = Points(X, y, test)
        self.params = resolve_fit_params({"method": method, "kernel": kernel,
                                          "sigma": sigma, "lam": lam, "resolution": RES})
        self.engine = FitEngine(quick=quick)
        self.version = self.serial = 0
        self.rng = np.random.default_rng(5)

    def request(self) -> Request:
        self.serial += 1
        return Request(self.serial, self.version, self.points, 2, "classification",
                       dict(self.params), 0)

    def fit(self, **moved: float):
        """The fit after a λ or σ move (or of the data as they are)."""
        self.params.update(moved)
        return self.engine.compute(self.request())

    def rest(self, stages: int = 2) -> None:
        """The hand rests: the follow-ups (the exact fit, the eigendecomposition) and
        what the next gesture needs (:meth:`FitEngine.prepare`)."""
        req = self.request()
        fit = self.engine.compute(req)
        for stage in range(1, stages + 1):
            if not fit.primary.extra.get("followup"):
                break
            fit = self.engine.compute(req, followup=stage)
        self.engine.prepare(req)

    def paint(self, k: int = 1):
        """k painted training points (one data version, as a spray's step)."""
        label = 1.0 if self.rng.random() < 0.5 else -1.0
        X = self.rng.uniform(-2.0, 2.0, size=(k, 2))
        p = self.points
        self.points = Points(np.vstack([p.X, X]), np.append(p.y, np.full(k, label)),
                             np.append(p.test, np.zeros(k, dtype=bool)))
        self.version += 1
        return self.engine.compute(self.request())


@pytest.fixture(autouse=True)
def no_estimator_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's fallback when a system is not numerically positive definite is the
    estimator itself: here every fit must come from the systems under test."""
    def refuse(*args: object) -> None:
        raise AssertionError("the engine fell back to the estimator")

    monkeypatch.setattr(pg, "exact_direct", refuse)


@pytest.fixture
def factorisations(monkeypatch: pytest.MonkeyPatch) -> list:
    """The Cholesky factorisations made (a bordered system makes none)."""
    made: list = []
    original = pg.Factor.at_once.__func__
    monkeypatch.setattr(pg.Factor, "at_once", classmethod(
        lambda cls, *a, **kw: made.append(a) or original(cls, *a, **kw)))
    return made


@pytest.mark.parametrize("method", ["krr", "ckrr"])
@pytest.mark.parametrize("kernel", pg.KERNELS)
def test_a_painted_stroke_draws_the_estimator_at_every_point(method, kernel, factorisations):
    """Points painted one after another (and a spray step of three) border the last
    system: no factorisation, and each fit is the estimator's on the data so far."""
    p = _Painter(300, method, kernel)
    p.fit()
    p.rest()
    factorisations.clear()
    for step, k in enumerate((1, 1, 3, 1, 1)):
        fit = p.paint(k)
        _is_the_estimators(fit, p.points, method, kernel, 0.6, 0.01, f"point {step}")
    assert factorisations == []


@pytest.fixture
def base_columns(monkeypatch: pytest.MonkeyPatch) -> list:
    """The columns of every solve with a factor or an eigendecomposition."""
    columns: list = []
    for cls in (pg.Factor, pg.EigenSystem, pg.CenteredEigenSystem):
        monkeypatch.setattr(cls, "solve_block", lambda self, R, solve=cls.solve_block:
                            columns.append(1 if R.ndim == 1 else R.shape[1])
                            or solve(self, R))
    return columns


@pytest.mark.parametrize("method", ["krr", "ckrr"])
def test_a_point_painted_after_a_lambda_move_draws_the_estimator(method, factorisations,
                                                                 base_columns):
    """KRR borders its eigendecomposition at the new λ; CKRR the factor prepared while
    the hand rested after the move. Then a second point continues the stroke. (λ moves
    up: at a smaller λ the estimator's centred solve and the uncentred one differ by more
    than 1e-10 from rounding alone — 1.1e-10 at λ = 0.002 here, a factor made afresh as
    much as a bordered one.)"""
    p = _Painter(300, method)
    p.fit()
    p.rest()
    p.fit(lam=0.03)
    p.rest()
    factorisations.clear()
    base_columns.clear()
    for step in range(2):
        fit = p.paint()
        _is_the_estimators(fit, p.points, method, "gaussian", 0.6, 0.03, f"point {step}")
    assert factorisations == []
    # each point solves its own column with the base; the targets' solve is the
    # prepared factor's (CKRR), or one product with the eigenvectors (KRR: Uᵀy is kept)
    assert base_columns == ([1, 1] if method == "ckrr" else [1, 1, 1])


@pytest.mark.parametrize("method", ["krr", "ckrr"])
def test_a_point_painted_after_a_sigma_move_draws_the_estimator(method, factorisations):
    """Painted right after a σ move (the new σ's quick factor, no eigendecomposition
    yet), and again once the hand has rested."""
    p = _Painter(300, method)
    p.fit()
    p.rest()
    p.fit(sigma=0.9)
    factorisations.clear()
    fit = p.paint()
    _is_the_estimators(fit, p.points, method, "gaussian", 0.9, 0.01, "right after")
    assert factorisations == []
    p.rest()
    fit = p.paint()
    _is_the_estimators(fit, p.points, method, "gaussian", 0.9, 0.01, "after a rest")


@pytest.mark.parametrize("method", ["krr", "ckrr"])
def test_a_point_painted_at_large_n_is_exact_and_bordered(method, factorisations):
    """Above the preview's size a painted point is answered by the exact fit at once
    (bordering the exact fit's factor), never by a preview: the estimator's, and a factor
    made afresh on the painted data's. (λ = 0.1: with 1160 points and λ = 0.01 CKRR's
    intercept from the uncentred solve and the estimator's centred one differ by
    2.5e-10 from rounding, a fresh factor's as much as a bordered one's.)"""
    p = _Painter(int((PREVIEW_ABOVE + 60) / 0.75) + 1, method, lam=0.1)
    assert (~p.points.test).sum() > PREVIEW_ABOVE
    p.fit()
    p.rest(stages=1)  # the exact fit (its factor); no eigendecomposition
    factorisations.clear()
    for step in range(3):
        fit = p.paint()
        _is_the_estimators(fit, p.points, method, "gaussian", 0.6, 0.1, f"point {step}")
    assert factorisations == []
    pts = p.points
    problem = pg.Problem(pts.X[~pts.test], pts.y[~pts.test], pts.X[pts.test],
                         pts.y[pts.test], pg.GridMap(2, RES), "classification")
    afresh = pg.Factor.at_once(problem.X, problem.X_test, "gaussian", 0.6, 0.1).predict(
        problem, method == "ckrr")
    for got, want in zip((fit.primary.grid, fit.primary.train, fit.primary.test), afresh,
                         strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("fitted", [False, True])
@pytest.mark.parametrize("base", ["factor", "eigen"])
def test_a_stroke_solves_with_the_base_once_per_new_point(base, fitted, monkeypatch):
    """The base keeps its solve of the targets: a new point costs the base one solve, of
    its own column — the first point also the targets' (two columns: y and ones), unless
    the base solved them for its own fit."""
    X, y, test = pg.generate("moons", 300, 0.2, seed=3)
    Xtr, ytr, Xte = X[~test], y[~test], X[test]
    n = len(Xtr) - 4
    first: pg.Solved = pg.Factor.at_once(Xtr[:n], Xte, "gaussian", 0.6, 0.01) \
        if base == "factor" else pg.ExactCache(Xtr[:n], ytr[:n], Xte, pg.GridMap(2, RES),
                                               "gaussian", 0.6, False).system(0.01)
    if fitted:
        first.solve(ytr[:n], True)
    columns: list[int] = []
    solve = type(first).solve_block
    monkeypatch.setattr(type(first), "solve_block",
                        lambda self, R: columns.append(1 if R.ndim == 1 else R.shape[1])
                        or solve(self, R))
    system = first
    for m in range(n + 1, n + 5):
        system = system.bordered(Xtr[:m])
        alpha, b = system.solve(ytr[:m], True)
        ref = CenteredKernelRidge(0.01, kernel="gaussian",
                                  kernel_params={"sigma": 0.6}).fit(Xtr[:m], ytr[:m])
        np.testing.assert_allclose(alpha, ref.dual_coef_, rtol=0, atol=1e-10)
        assert b == pytest.approx(ref.intercept_, abs=1e-10)
    # the first point's column, [the targets,] then one column per point
    assert columns == [1] + ([] if fitted else [2]) + [1, 1, 1]


def test_few_columns_are_solved_one_at_a_time_as_a_block_would_be():
    """A factor's and an eigendecomposition's solve of 1 to 5 right-hand sides (one at a
    time up to BY_COLUMN, as a block above) is K + λI's solve."""
    X, y, test = pg.generate("moons", 200, 0.2, seed=2)
    Xtr = X[~test]
    A = make_kernel("laplace", {"sigma": 0.7})(Xtr)
    A.flat[:: len(Xtr) + 1] += 0.05
    factor = pg.Factor.at_once(Xtr, X[test], "laplace", 0.7, 0.05)
    eigen = pg.ExactCache(Xtr, y[~test], X[test], pg.GridMap(2, RES), "laplace", 0.7,
                          False).system(0.05)
    R = np.random.default_rng(1).normal(size=(len(Xtr), exact_module.BY_COLUMN + 2))
    for system in (factor, eigen):
        for k in range(R.shape[1] + 1):
            got = system.solve_block(R[:, :k])
            assert got.shape == (len(Xtr), k)
            np.testing.assert_allclose(A @ got, R[:, :k], rtol=0, atol=1e-10)
        np.testing.assert_allclose(A @ system.solve_block(y[~test]), y[~test], atol=1e-10)


def test_krrs_targets_are_found_in_ckrrs_kept_solve(monkeypatch):
    """A factor that solved CKRR's ``[y, 1]`` gives KRR's ``A⁻¹y`` from it (the same
    matrix K + λI serves both), and a point painted under KRR then solves its own
    column only; the fit is the estimator's."""
    X, y, test = pg.generate("moons", 300, 0.2, seed=4)
    Xtr, ytr, Xte = X[~test], y[~test], X[test]
    n = len(Xtr) - 1
    factor = pg.Factor.at_once(Xtr[:n], Xte, "laplace", 0.7, 0.02)
    factor.solve(ytr[:n], True)
    columns: list[int] = []
    solve = pg.Factor.solve_block
    monkeypatch.setattr(pg.Factor, "solve_block",
                        lambda self, R: columns.append(1 if R.ndim == 1 else R.shape[1])
                        or solve(self, R))
    alpha, b = factor.bordered(Xtr).solve(ytr, False)
    assert columns == [1] and b == 0.0
    ref = KernelRidge(0.02, kernel="laplace", kernel_params={"sigma": 0.7}).fit(Xtr, ytr)
    np.testing.assert_allclose(alpha, ref.dual_coef_, rtol=0, atol=1e-10)


def test_older_datas_values_are_freed_once_the_hand_rests():
    """A painted point's first answer leaves the older data's values (the eigen-
    decomposition, the kept distances) to be freed by the follow-up; a stroke without
    rest keeps at most RETIRED versions' of them, and frees the data before it after
    RETIRED points."""
    import gc
    import weakref

    from kernel_lab.engine.playground.fit import RETIRED

    p = _Painter(200, "krr")
    p.fit()
    p.rest()
    olds = [weakref.ref(v[0] if isinstance(v, tuple) else v)
            for k, v in p.engine._cache.items() if k[0] in ("krr", "pairs")]
    assert len(olds) == 2
    p.paint()
    gc.collect()
    assert all(ref() is not None for ref in olds)  # not freed by the first answer
    p.rest(stages=1)
    gc.collect()
    assert all(ref() is None for ref in olds)
    olds = [weakref.ref(v) for v in p.engine._cache.values()]
    for step in range(RETIRED + 1):
        p.paint()
        assert len(p.engine._retired) <= RETIRED
        gc.collect()
        # the data before the stroke: kept for RETIRED points, then freed
        assert all((ref() is None) == (step == RETIRED) for ref in olds), step


@pytest.mark.parametrize("kernel", pg.KERNELS)
def test_ckrrs_eigendecomposition_solves_the_uncentred_system(kernel):
    """From the centred matrix's eigendecomposition (Woodbury with its rank-two
    difference from K), ``(K + λI)⁻¹R`` for one to five right-hand sides and for the
    targets."""
    X, y, test = pg.generate("moons", 240, 0.2, seed=7)
    Xtr, ytr = X[~test], y[~test]
    cache = pg.ExactCache(Xtr, ytr, X[test], pg.GridMap(2, RES), kernel, 0.7, True)
    A = make_kernel(kernel, {"sigma": 0.7})(Xtr)
    A.flat[:: len(Xtr) + 1] += 0.03
    system = pg.CenteredEigenSystem(cache, 0.03)
    R = np.random.default_rng(2).normal(size=(len(Xtr), 5))
    for rhs in (ytr, R[:, 0], R[:, :2], R, np.column_stack([ytr, np.ones_like(ytr)])):
        np.testing.assert_allclose(A @ system.solve_block(rhs), rhs, rtol=0, atol=1e-10)


@pytest.mark.parametrize("kernel", pg.KERNELS)
def test_a_point_painted_right_after_a_ckrr_lambda_move_is_exact_at_once(
        kernel, factorisations, base_columns):
    """No factor at the new λ yet (the hand did not rest): the point borders CKRR's
    eigendecomposition, no factorisation, and the fit is the estimator's — then again
    for the next point of the stroke."""
    p = _Painter(300, "ckrr", kernel)
    p.fit()
    p.rest()
    p.fit(lam=0.04)  # answered from the eigendecomposition; nothing prepared
    factorisations.clear()
    base_columns.clear()
    for step in range(2):
        fit = p.paint()
        _is_the_estimators(fit, p.points, "ckrr", kernel, 0.6, 0.04, f"point {step}")
    assert factorisations == []
    # the first point: its column, then the targets and ones; the second: its column
    assert base_columns == [1, 2, 1]


def test_at_large_n_ckrr_prepares_a_factor_in_blocks_that_a_painted_point_borders(
        factorisations, monkeypatch):
    """Above the preview's size the exact fits come from CG solves, with no
    eigendecomposition: the hand resting after a CKRR λ move makes the factor of K + λI in
    blocks a newer request interrupts (no O(n³) call in one piece holding the worker) and
    its solve of the targets; a painted point then borders it — two triangular solves, no
    CG — and is the estimator's."""
    columns: list = []
    monkeypatch.setattr(pg.CGSystem, "solve_block", lambda self, R, s=pg.CGSystem.solve_block:
                        columns.append(1 if R.ndim == 1 else R.shape[1]) or s(self, R))
    in_blocks: list = []
    real = pg.Factor.in_blocks.__func__
    monkeypatch.setattr(pg.Factor, "in_blocks", classmethod(
        lambda cls, *a, **kw: in_blocks.append(a[6]) or real(cls, *a, **kw)))  # (λ)
    p = _Painter(int((PREVIEW_ABOVE + 60) / 0.75) + 1, "ckrr", lam=0.1)
    p.fit()
    p.rest()  # the exact fit and the λ curve, by CG
    p.fit(lam=0.2)
    factorisations.clear()
    in_blocks.clear()
    p.rest()  # the factor at λ = 0.2, in blocks
    assert factorisations == [] and in_blocks == [0.2]
    fit = p.paint()
    _is_the_estimators(fit, p.points, "ckrr", "gaussian", 0.6, 0.2, "after the rest")
    assert factorisations == [] and columns == []
