"""The Playground at large n: a σ change (or new data) is first answered by a Nyström
preview, labelled as one, then by the exact fit (equal to the library's estimators); the
latest request wins, so an older σ's exact fit never replaces a newer σ's preview; small n
keeps its exact first answer."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from kernel_lab.core import playground as pg
from kernel_lab.core.models import CenteredKernelRidge, KernelRidge, NystromFeatures
from kernel_lab.engine.playground.fit import PREVIEW_ABOVE, PREVIEW_S
from kernel_lab.engine.worker import Worker
from kernel_lab.model.playground import FitEngine, PlaygroundModel, fit_worker

#: Moons with this many points have more than PREVIEW_ABOVE training points (3 in 4).
N_LARGE = 1600


def _held_model(n: int) -> tuple[FitEngine, PlaygroundModel]:
    """A model whose requests the test computes by hand on a quick engine."""
    engine = FitEngine(quick=True)
    m = PlaygroundModel(engine=engine, worker=Worker(lambda job: None, inline=True))
    m.set_dataset("moons", n=n, noise=0.25)
    return engine, m


def _estimator_predictions(cls, m: PlaygroundModel, fit, lam: float, sigma: float):
    pts = m.points
    est = cls(lam, kernel="gaussian", kernel_params={"sigma": sigma}).fit(
        pts.X[~pts.test], pts.y[~pts.test])
    return (est.predict(fit.grid), est.predict(pts.X[~pts.test]),
            est.predict(pts.X[pts.test]))


@pytest.mark.parametrize(("method", "cls"), [("krr", KernelRidge),
                                             ("ckrr", CenteredKernelRidge)])
def test_a_large_n_sigma_change_is_previewed_then_replaced_by_the_exact_fit(method, cls):
    engine, m = _held_model(N_LARGE)
    assert int((~m.points.test).sum()) > PREVIEW_ABOVE
    m.set_params(method=method, sigma=0.7, lam=0.1)
    req = m.request()
    preview = engine.compute(req).primary
    assert preview.extra["preview"] == f"Nyström, s = {PREVIEW_S}"
    assert preview.extra["followup"] and preview.curve is None
    # the preview is the Nyström ridge on its landmarks (an independent construction:
    # the library's features and a dense solve), and its errors are its own
    pts = m.points
    X, y = pts.X[~pts.test], pts.y[~pts.test]
    marks = engine._cache[("preview", req.version, "gaussian", int(m.params["seed"]))].landmarks
    assert len(marks) == PREVIEW_S and len(np.unique(marks)) == PREVIEW_S
    nf = NystromFeatures("gaussian", kernel_params={"sigma": 0.7}, landmarks=X[marks]).fit(X)
    F, F_grid = nf.transform(X), nf.transform(engine._problem(req).G)
    if method == "ckrr":
        mu, ym = F.mean(axis=0), y.mean()
        w = np.linalg.solve((F - mu).T @ (F - mu) + 0.1 * np.eye(F.shape[1]),
                            (F - mu).T @ (y - ym))
        b = ym - mu @ w
    else:
        w, b = np.linalg.solve(F.T @ F + 0.1 * np.eye(F.shape[1]), F.T @ y), 0.0
    # (the preview forms FᵀF as Nᵀ(CᵀC)N, not from F: with N = W^(-1/2) of an
    # ill-conditioned W the two agree to about 1e-5 on predictions of size 1)
    np.testing.assert_allclose(preview.grid, F_grid @ w + b, atol=1e-4)
    np.testing.assert_allclose(preview.train, F @ w + b, atol=1e-4)
    assert preview.train_error == pg.error(preview.train, y, "classification")
    assert preview.test_error == pg.error(preview.test, pts.y[pts.test], "classification")
    # then the exact fit (no preview label), equal to the estimator's predictions
    exact = engine.compute(req, followup=1).primary
    assert "preview" not in exact.extra
    grid, train, test = _estimator_predictions(cls, m, engine.compute(req, followup=1), 0.1,
                                               0.7)
    np.testing.assert_allclose(exact.grid, grid, atol=1e-10)
    np.testing.assert_allclose(exact.train, train, atol=1e-10)
    np.testing.assert_allclose(exact.test, test, atol=1e-10)
    assert not np.allclose(preview.grid, exact.grid, atol=1e-10)  # it was not the exact one
    # and then the eigendecomposition (λ slider and curve), the same fit
    full = engine.compute(req, followup=2).primary
    assert full.curve is not None and not full.extra.get("followup")
    np.testing.assert_allclose(full.grid, grid, atol=1e-10)


def test_small_n_answers_exactly_at_once():
    engine, m = _held_model(1334)  # 1000 training points: the exact fit is within a frame
    assert int((~m.points.test).sum()) <= PREVIEW_ABOVE
    m.set_params(method="krr", sigma=0.7, lam=0.1)
    req = m.request()
    first = engine.compute(req)
    assert "preview" not in first.primary.extra and first.primary.extra["followup"]
    grid, train, test = _estimator_predictions(KernelRidge, m, first, 0.1, 0.7)
    np.testing.assert_allclose(first.primary.grid, grid, atol=1e-10)
    np.testing.assert_allclose(first.primary.test, test, atol=1e-10)
    np.testing.assert_allclose(first.primary.train, train, atol=1e-10)
    assert "preview" not in engine.compute(req, followup=1).primary.extra


def test_a_newer_sigmas_preview_is_never_overwritten_by_an_older_sigmas_exact_fit():
    """The exact fit of σ₁ is held in the worker thread until σ₂ has been requested (and
    its preview delivered): the late σ₁ answer is dropped, and σ₂'s exact fit follows."""
    sigma_2_asked = threading.Event()

    class Held(FitEngine):
        def compute(self, req, **kw):
            if kw.get("followup") and req.params["sigma"] == 0.7:
                sigma_2_asked.wait(10)  # the σ₁ exact fit is computing while σ₂ comes
            return super().compute(req, **kw)

    engine = Held(quick=True)
    worker = fit_worker(engine)
    m = PlaygroundModel(worker=Worker(lambda job: None, inline=True), engine=engine)
    m.set_dataset("moons", n=N_LARGE, noise=0.25)
    m.set_params(method="krr", lam=0.1)
    m.worker = worker
    shown: list[tuple[int, bool]] = []  # (request, preview?) of every fit delivered
    m.fit_ready.connect(lambda fit: shown.append((fit.serial, "preview" in fit.primary.extra)))
    try:
        m.set_params(sigma=0.7)
        first = m.serial
        for _ in range(1000):  # σ₁'s preview
            if shown:
                break
            threading.Event().wait(0.01)
        assert shown == [(first, True)]
        threading.Event().wait(0.3)  # the worker is in σ₁'s exact fit (held)
        m.set_params(sigma=0.8)
        second = m.serial
        sigma_2_asked.set()
        assert worker.wait_idle(60)
    finally:
        worker.close()
        worker.join(30)
    assert shown[1] == (second, True)  # σ₂'s preview
    assert all(serial == second for serial, _ in shown[1:])  # nothing of σ₁ after it
    assert shown[2] == (second, False)  # σ₂'s exact fit replaced its preview
    assert m.latest.serial == second and "preview" not in m.latest.primary.extra
    grid, _, _ = _estimator_predictions(KernelRidge, m, m.latest, 0.1, 0.8)
    np.testing.assert_allclose(m.latest.primary.grid, grid, atol=1e-10)
