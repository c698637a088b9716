"""The Playground's grid maps (kernel_lab.core.playground.gridmap) against the direct
formulas, and every 2-D fit's picture against its estimator's predictions on the grid."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core import playground as pg
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import CenteredKernelRidge, KernelRidge, NystromRidge, RFFRidge
from kernel_lab.engine.playground.fit import FitEngine, Request
from kernel_lab.engine.playground.params import resolve_fit_params
from kernel_lab.engine.playground.state import Points


@pytest.mark.parametrize("dim", [1, 2])
@pytest.mark.parametrize("kernel", pg.KERNELS)
def test_kernel_map_is_the_kernel_matrix_times_the_coefficients(dim, kernel):
    rng = np.random.default_rng(3)
    Z = rng.uniform(-3, 3, size=(70, dim))
    C = rng.normal(size=(70, 3))
    gm = pg.GridMap(dim, 37)
    K = make_kernel(kernel, {"sigma": 0.7})(gm.points, Z)
    apply = gm.kernel(kernel, 0.7, Z)
    np.testing.assert_allclose(apply(C[:, 0]), K @ C[:, 0], rtol=0, atol=1e-13)
    np.testing.assert_allclose(apply(C), K @ C, rtol=0, atol=1e-13)


@pytest.mark.parametrize("dim", [1, 2])
def test_cosine_map_is_the_features_times_the_coefficients(dim):
    rng = np.random.default_rng(4)
    W, b, c = rng.normal(size=(dim, 50)) * 3, rng.uniform(0, 2 * np.pi, 50), rng.normal(size=50)
    gm = pg.GridMap(dim, 41)
    direct = 0.2 * np.cos(gm.points @ W + b) @ c
    np.testing.assert_allclose(gm.cosines(W, b, 0.2)(c), direct, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kernel", pg.KERNELS)
def test_every_two_dimensional_picture_is_the_estimators_prediction(kernel):
    X, y, test = pg.generate("surface", 260, 0.2, seed=2)
    points = Points(X, y, test)
    params = resolve_fit_params({"kernel": kernel, "sigma": 0.7, "lam": 0.05, "s": 30,
                                 "D": 80, "sampler": "uniform", "seed": 5, "resolution": 45})
    Xtr, ytr = X[~test], y[~test]
    G = pg.grid(2, 45)
    refs = {"krr": KernelRidge(0.05, kernel=kernel, kernel_params={"sigma": 0.7}),
            "ckrr": CenteredKernelRidge(0.05, kernel=kernel, kernel_params={"sigma": 0.7}),
            "nystrom": NystromRidge(0.05, kernel=kernel, kernel_params={"sigma": 0.7},
                                    n_components=30, sampler="uniform", random_state=5),
            "rff": RFFRidge(0.05, kernel=kernel, sigma=0.7, n_components=80,
                            random_state=5)}
    for method, ref in refs.items():
        expected = ref.fit(Xtr, ytr).predict(G)
        for quick in (True, False):
            engine = FitEngine(quick=quick)
            fit = engine.compute(Request(1, 1, points, 2, "regression",
                                         dict(params, method=method), 0))
            np.testing.assert_allclose(fit.primary.grid, expected, rtol=0, atol=1e-8,
                                       err_msg=f"{method}, quick={quick}")
