"""The Playground's exact KRR / CKRR at large n without an eigendecomposition: the exact fit
by preconditioned CG (warm-started from the last σ), the λ curve from the same solves, a λ
move answered at once from them, a painted point bordering them, and the factorisation when
CG cannot — each equal to the library's estimators or the eigendecomposition."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core import playground as pg
from kernel_lab.core.models import CenteredKernelRidge, KernelRidge
from kernel_lab.core.playground import solves
from kernel_lab.engine.playground import fit as fitmod
from kernel_lab.engine.worker import Worker
from kernel_lab.model.playground import FitEngine, PlaygroundModel

N_LARGE = 1600  # 1200 training points, above PREVIEW_ABOVE
ESTIMATORS = {"krr": KernelRidge, "ckrr": CenteredKernelRidge}


def _model() -> tuple[FitEngine, PlaygroundModel]:
    engine = FitEngine(quick=True)
    m = PlaygroundModel(engine=engine, worker=Worker(lambda job: None, inline=True))
    m.set_dataset("moons", n=N_LARGE, noise=0.25)
    assert int((~m.points.test).sum()) > fitmod.PREVIEW_ABOVE
    return engine, m


def _stages(engine: FitEngine, req, prepare: bool = True) -> list[pg.FitResult]:
    """Every pass of a request, as the worker makes them while the hand rests, and (with
    ``prepare``) what it then prepares for the next gesture."""
    out = [engine.compute(req).primary]
    while out[-1].extra.get("followup"):
        out.append(engine.compute(req, followup=len(out)).primary)
    if prepare and engine.wants_preparing(req):
        engine.prepare(req)
    return out


def _check_exact(r: pg.FitResult, m: PlaygroundModel, method: str, lam: float,
                 sigma: float, grid_points: np.ndarray) -> None:
    pts = m.points
    X, X_test = pts.X[~pts.test], pts.X[pts.test]
    est = ESTIMATORS[method](lam, kernel="gaussian", kernel_params={"sigma": sigma}).fit(
        X, pts.y[~pts.test])
    np.testing.assert_allclose(r.train, est.predict(X), atol=1e-10)
    np.testing.assert_allclose(r.test, est.predict(X_test), atol=1e-10)
    np.testing.assert_allclose(r.grid, est.predict(grid_points), atol=1e-10)


@pytest.mark.parametrize("method", ["krr", "ckrr"])
def test_large_n_stages_then_any_lambda_at_once(method):
    engine, m = _model()
    m.set_params(method=method, sigma=0.7, lam=0.1)
    req = m.request()
    G = engine._problem(req).G
    preview, exact, full = _stages(engine, req)
    assert "preview" in preview.extra and "preview" not in exact.extra
    _check_exact(exact, m, method, 0.1, 0.7, G)
    assert exact.curve is None and full.curve is not None and full.dof is None
    _check_exact(full, m, method, 0.1, 0.7, G)
    # the curve: as the eigendecomposition's, to what two backward-stable solvers share
    pts = m.points
    ref = pg.ExactCache(pts.X[~pts.test], pts.y[~pts.test], pts.X[pts.test],
                        pg.GridMap(2, int(m.params["resolution"])), "gaussian", 0.7,
                        method == "ckrr").curve(full.curve["lam"], pts.y[pts.test],
                                                "classification")
    for part in ("train", "test"):  # error rates: equal
        np.testing.assert_array_equal(full.curve[part], ref[part])
    # a λ move is now answered at once, from the solutions kept, with its curve; where
    # that answer's backward error is above TOL (within BASIS_TOL) CG refines it next
    # (λ where solvers agree to 1e-10: at λ = 4e-4, κ ≈ 4e5, two dense solves of CKRR's two
    # forms already differ by 1e-7, and the estimator from both by 4e-7; at λ = 0.0123 the
    # estimator's CKRR is 7e-10 from a dense solve on the grid, the CG answer 2e-11)
    for lam in (0.0371, 2.5, 0.3, 0.1234):
        m.set_params(lam=lam)
        req = m.request()
        first = engine.compute(req).primary
        assert "preview" not in first.extra and first.curve is not None
        final = first if not first.extra.get("followup") else \
            engine.compute(req, followup=1).primary
        assert not final.extra.get("followup")
        _check_exact(final, m, method, lam, 0.7, G)
        # the first answer: within what its backward error allows (κ · BASIS_TOL)
        np.testing.assert_allclose(first.grid, final.grid, atol=1e-12 / lam)


def test_the_next_sigma_starts_from_the_last_sigmas_solution(monkeypatch):
    engine, m = _model()
    m.set_params(method="krr", sigma=0.70, lam=0.1)
    _stages(engine, m.request())
    starts: list[np.ndarray | None] = []
    real = solves.shifted_cg

    def recording(K, B, lams, prec, X0=None, **kw):
        starts.append(X0)
        return real(K, B, lams, prec, X0, **kw)

    monkeypatch.setattr(solves, "shifted_cg", recording)
    m.set_params(sigma=0.72)
    req = m.request()
    engine.compute(req)  # the preview
    warm = engine.compute(req, followup=1).primary
    assert starts and starts[0] is not None  # warm: σ = 0.70's solution at λ = 0.1
    # a cold engine gives the same fit, to the solver's tolerance
    cold_engine, _ = _model()
    cold_engine.compute(req)
    cold = cold_engine.compute(req, followup=1).primary
    np.testing.assert_allclose(warm.grid, cold.grid, atol=1e-10)
    np.testing.assert_allclose(warm.test, cold.test, atol=1e-10)
    _check_exact(warm, m, "krr", 0.1, 0.72, engine._problem(req).G)


@pytest.mark.parametrize("method", ["krr", "ckrr"])
def test_where_cg_cannot_the_factorisation_answers(monkeypatch, method):
    monkeypatch.setattr(solves, "MAX_ITER", 1)  # no CG converges in one iteration
    monkeypatch.setattr(fitmod, "CG_MAX_RANK", 2)
    engine, m = _model()
    m.set_params(method=method, sigma=0.7, lam=0.1)
    req = m.request()
    stages = _stages(engine, req)
    assert "preview" in stages[0].extra
    for r in stages[1:]:
        _check_exact(r, m, method, 0.1, 0.7, engine._problem(req).G)
    assert stages[-1].curve is not None and stages[-1].dof is not None  # the eigh's


def _stroke(engine: FitEngine, m: PlaygroundModel, method: str) -> pg.Solved:
    """Three points painted one at a time, each answered exactly at once; the system the
    last one's answer bordered."""
    for k in range(3):
        m.add_points(np.array([[0.1 * k - 0.3, 2.5]]), 1.0 if k % 2 else -1.0)
        req = m.request()
        r = engine.compute(req).primary
        assert "preview" not in r.extra
        _check_exact(r, m, method, 0.1, 0.7, engine._problem(req).G)
    bordered = next(c for k, c in engine._cache.items() if k[0] == "factor")
    assert isinstance(bordered, pg.Bordered)
    return bordered.base


@pytest.mark.parametrize("method", ["krr", "ckrr"])
def test_a_point_painted_before_the_hand_rests_borders_the_cg_solves(method):
    engine, m = _model()
    m.set_params(method=method, sigma=0.7, lam=0.1)
    _stages(engine, m.request(), prepare=False)  # the hand has not rested yet
    assert isinstance(_stroke(engine, m, method), pg.CGSystem)


@pytest.mark.parametrize("method", ["krr", "ckrr"])
def test_a_point_painted_after_the_hand_rests_borders_the_factor_made_in_blocks(method):
    """While the hand rests the factor of K + λI is made (in blocks a gesture interrupts)
    with its solve of the targets: a painted point then costs two triangular solves."""
    engine, m = _model()
    m.set_params(method=method, sigma=0.7, lam=0.1)
    req = m.request()
    _stages(engine, req)
    factor = engine._cache[engine._factor_key(req.version, "gaussian", 0.7, 0.1)]
    assert isinstance(factor, pg.Factor) and not engine.wants_preparing(req)
    solves_ = next(c for k, c in engine._cache.items() if k[0] == "solves")
    assert solves_.basis is not None  # the λ basis first
    A = solves_.K + 0.1 * np.eye(len(solves_.y))
    np.testing.assert_allclose(np.tril(factor.L) @ np.tril(factor.L).T, A, rtol=0,
                               atol=1e-12 * np.abs(A).max())
    assert _stroke(engine, m, method) is factor


def test_the_factor_at_rest_gives_way_to_a_newer_request_and_keeps_its_memory():
    engine, m = _model()
    m.set_params(method="krr", sigma=0.7, lam=0.1)
    req = m.request()
    _stages(engine, req, prepare=False)
    blocks = []
    real = pg.Factor.in_blocks.__func__

    def in_blocks(cls, *args, **kw):  # count the blocks begun
        between = args[-1]
        return real(cls, *args[:-1], lambda: (blocks.append(1), between()))
    monkey = pytest.MonkeyPatch()
    monkey.setattr(pg.Factor, "in_blocks", classmethod(in_blocks))
    try:
        def cancelled() -> bool:  # a newer request once the factor's third block begins
            return len(blocks) >= 3
        with pytest.raises(pg.Superseded):
            engine.prepare(req, cancelled)
    finally:
        monkey.undo()
    assert len(blocks) == 3
    assert not any(k[0] == "factor" for k in engine._cache)
    n = int((~m.points.test).sum())
    kept = engine._unmade  # its matrix kept for later: the next factor's
    assert kept is not None and kept.shape == (n, n)
    assert engine.wants_preparing(req)
    engine.prepare(req)  # the hand rests again: made
    factor = next(c for k, c in engine._cache.items() if k[0] == "factor")
    assert np.shares_memory(factor.L, kept) and engine._unmade is None
    assert not engine.wants_preparing(req)


def _square_buffers(engine: FitEngine, n: int) -> set[int]:
    """Where the arrays of n × n elements or more that the engine holds begin: its kept
    values' (kernel matrices, factors, distances), its spares and a factor's not made."""
    def arrays(value) -> list[np.ndarray]:
        if isinstance(value, np.ndarray):
            return [value]
        if isinstance(value, (tuple, list)):
            return [a for v in value for a in arrays(v)]
        return []
    held = [a for c in engine._cache.values()
            for v in (c if isinstance(c, tuple) else (c,))
            for a in arrays(list(getattr(v, "__dict__", {}).values()))]
    held += [*engine._spare, *([] if engine._unmade is None else [engine._unmade])]
    return {a.__array_interface__["data"][0] for a in held if a.size >= n * n}


def test_a_rest_at_another_lambda_makes_its_factor_in_the_last_factors_memory(monkeypatch):
    """The factor kept for the last λ is of no use once λ has moved: the next rest drops it
    before making the new one, which is written over its memory — never two n × n factors
    at once, and the n × n arrays held are the same ones. A newer request stopping the
    next factor leaves no factor, its memory kept for the one after."""
    import weakref

    engine, m = _model()
    m.set_params(method="krr", sigma=0.7, lam=0.1)
    _stages(engine, m.request())
    n = int((~m.points.test).sum())
    first = engine._cache[engine._factor_key(m.request().version, "gaussian", 0.7, 0.1)]
    first_gone, memory = weakref.ref(first), first.L
    del first
    held = _square_buffers(engine, n)
    begun: list = []
    stop_at: list = []  # a newer request once this many blocks have begun
    blocks: list = []
    real = pg.Factor.in_blocks.__func__

    def in_blocks(cls, *args, **kw):
        begun.append((first_gone() is None, args[7]))  # (the old one gone, out)

        def between() -> None:
            blocks.append(1)
            if stop_at and len(blocks) >= stop_at[0]:
                raise pg.Superseded
        return real(cls, *args[:-1], between)
    monkeypatch.setattr(pg.Factor, "in_blocks", classmethod(in_blocks))

    def factor_at(lam: float) -> pg.Factor:
        factor = engine._cache[engine._factor_key(m.request().version, "gaussian", 0.7, lam)]
        solves_ = next(c for k, c in engine._cache.items() if k[0] == "solves")
        A = solves_.K + lam * np.eye(n)
        np.testing.assert_allclose(np.tril(factor.L) @ np.tril(factor.L).T, A, rtol=0,
                                   atol=1e-12 * np.abs(A).max())
        return factor

    m.set_params(lam=0.2)
    for r in _stages(engine, m.request()):
        _check_exact(r, m, "krr", 0.2, 0.7, engine._problem(m.request()).G)
    assert len(begun) == 1 and begun[0][0] and np.shares_memory(begun[0][1], memory)
    assert np.shares_memory(factor_at(0.2).L, memory)
    assert _square_buffers(engine, n) == held
    assert not any(k[0] == "factor" and k[4] != 0.2 for k in engine._cache)

    begun.clear()
    stop_at.append(len(blocks) + 3)
    m.set_params(lam=0.3)
    req = m.request()
    _stages(engine, req, prepare=False)
    with pytest.raises(pg.Superseded):
        engine.prepare(req)
    assert len(begun) == 1 and np.shares_memory(begun[0][1], memory)
    assert not any(k[0] == "factor" for k in engine._cache)  # λ = 0.2's dropped, 0.3's not made
    assert np.shares_memory(engine._unmade, memory) and _square_buffers(engine, n) == held
    assert engine.wants_preparing(req)
    stop_at.clear()
    engine.prepare(req)  # the hand rests again: made, in the same memory
    assert np.shares_memory(factor_at(0.3).L, memory) and engine._unmade is None
    assert _square_buffers(engine, n) == held and not engine.wants_preparing(req)


def test_where_k_plus_lambda_is_not_factorable_a_painted_point_borders_the_cg_solves(
        monkeypatch):
    engine, m = _model()
    m.set_params(method="krr", sigma=0.7, lam=0.1)

    def fails(*args, **kw):
        raise np.linalg.LinAlgError("not positive definite")
    monkeypatch.setattr(pg.ExactSolves, "factor", fails)
    req = m.request()
    _stages(engine, req)
    assert not engine.wants_preparing(req)  # remembered: not tried at every rest
    assert isinstance(_stroke(engine, m, "krr"), pg.CGSystem)


def test_kernel_matrices_of_dropped_solves_are_written_over():
    engine, m = _model()
    m.set_params(method="krr", lam=0.1)
    def where(a: np.ndarray) -> int:
        return a.__array_interface__["data"][0]

    for step, sigma in enumerate((0.70, 0.72, 0.74, 0.76, 0.78)):
        spares = {where(a) for a in engine._spare}  # made while the hand rested
        m.set_params(sigma=sigma)
        for r in _stages(engine, m.request())[1:]:
            _check_exact(r, m, "krr", 0.1, sigma, engine._problem(m.request()).G)
        kept = [c for k, c in engine._cache.items() if k[0] == "solves"]
        assert len(kept) <= fitmod.KEEP_SOLVES
        if step:  # the new σ's kernel matrix was written over a spare, no fresh pages
            assert where(kept[-1].K) in spares
        del kept  # (this test's own references would keep the dropped ones alive)
    assert len(engine._spare) <= fitmod.SPARES


def test_a_lambda_move_drawn_from_the_basis_is_refined_to_the_tolerance():
    engine, m = _model()
    m.set_params(method="krr", sigma=0.5, lam=0.1)
    _stages(engine, m.request())
    refined = 0
    for lam in np.logspace(-3, 1, 60):  # some λ the basis certifies only within BASIS_TOL
        m.set_params(lam=float(lam))
        req = m.request()
        first = engine.compute(req).primary
        if not first.extra.get("followup"):
            continue
        refined += 1
        solves_ = next(c for k, c in engine._cache.items() if k[0] == "solves")
        assert float(lam) in solves_.nearly and float(lam) not in solves_.solved
        final = engine.compute(req, followup=1).primary
        assert float(lam) in solves_.solved and not final.extra.get("followup")
        _check_exact(final, m, "krr", float(lam), 0.5, engine._problem(req).G)
        np.testing.assert_allclose(first.grid, final.grid, atol=1e-9)
    assert refined  # the path was taken


def test_a_recycled_matrix_is_the_smallest_spare_that_fits():
    engine = FitEngine(quick=True)
    big, small, test = np.ones((30, 30)), np.ones((20, 20)), np.ones((5, 20))
    engine._recycle(big, small, test)  # (kept only from 2**20 elements on)
    assert engine._spare == []
    big, small = np.ones((1100, 1100)), np.ones((1030, 1030))
    engine._recycle(big, small)
    out = engine._recycled((1025, 1025))  # both fit: the smaller, as a view of it
    assert out.shape == (1025, 1025) and np.shares_memory(out, small)
    assert len(engine._spare) == 1 and engine._spare[0] is big
    assert engine._recycled((1200, 1200)) is None  # none fits


@pytest.mark.parametrize("centered", [False, True])
def test_dropped_solves_are_freed_without_the_cyclic_collector(centered):
    """The window runs with the cyclic garbage collector off: CG solves (and a factor made
    from them) must hold no reference cycle, or every σ would leave its n × n kernel
    matrix behind."""
    import gc
    import weakref

    X, y = np.random.default_rng(0).normal(size=(50, 2)), np.ones(50)
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))
    s = solves.ExactSolves(K, np.zeros((0, 50)), lambda c: c[:0], X, y, X[:0], "gaussian",
                           1.0, centered, max_rank=20)
    s.solve(0.1)
    s.complete(np.logspace(-2, 1, 5))
    s.system(0.1).solve_block(K[:, :1])
    f = s.factor(0.1, np.empty((50, 50)))  # holds the solves: both go with it
    f.solve_kept(K[:, :1])
    gone, factor_gone = weakref.ref(s), weakref.ref(f)
    was = gc.isenabled()
    gc.disable()
    try:
        del s, f
        assert gone() is None and factor_gone() is None
    finally:
        if was:
            gc.enable()
