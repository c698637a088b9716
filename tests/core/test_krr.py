"""Exact KRR and CKRR against scikit-learn, a brute-force eq. (10), and per-λ fits."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge as SkKernelRidge
from sklearn.utils.estimator_checks import parametrize_with_checks

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import CenteredKernelRidge, KernelRidge


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 8))
    y = np.sin(X @ np.ones(8) / np.sqrt(8)) + 2.0 + 0.3 * rng.standard_normal(120)
    Xt = rng.standard_normal((40, 8))
    return X, y, Xt


def brute_force_ckrr(K, Ks, y, lam):
    """Eq. (10) of Elkhalil et al., literally: f̂_c(s) = κ_c(s)ᵀ (K_c + λI)⁻¹ P y + ȳ."""
    n = K.shape[0]
    P = np.eye(n) - np.ones((n, n)) / n
    Kc = P @ K @ P
    one = np.ones(n)
    coef = np.linalg.solve(Kc + lam * np.eye(n), P @ y)
    preds = []
    for kappa in Ks:  # one test point at a time, as written in the paper
        kappa_c = P @ kappa - (P @ K @ one) / n
        preds.append(kappa_c @ coef + y.mean())
    return np.array(preds)


@pytest.mark.parametrize(
    "name,params,sk",
    [
        ("gaussian", {"sigma": 2.0}, {"kernel": "rbf", "gamma": 1 / 8}),
        ("laplace", {"sigma": 3.0}, {"kernel": "laplacian", "gamma": 1 / 3}),
        ("polynomial", {"alpha": 1.0, "beta": 1.0, "degree": 2},
         {"kernel": "poly", "gamma": 1 / 8, "coef0": 1.0, "degree": 2}),
        ("linear", {"alpha": 1.0, "beta": 0.0}, {"kernel": "linear"}),
    ],
)
@pytest.mark.parametrize("lam", [1e-3, 0.1, 10.0])
def test_krr_matches_sklearn(data, name, params, sk, lam):
    X, y, Xt = data
    ours = KernelRidge(lam, kernel=name, kernel_params=params).fit(X, y)
    sk = dict(sk)
    if name == "linear":  # linear kernel g(t) = t means xᵀx'/p
        ref = SkKernelRidge(alpha=lam * 8, kernel="linear").fit(X, y)
        np.testing.assert_allclose(ours.predict(Xt), ref.predict(Xt), rtol=0, atol=1e-8)
        return
    ref = SkKernelRidge(alpha=lam, **sk).fit(X, y)
    np.testing.assert_allclose(ours.predict(Xt), ref.predict(Xt), rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours.dual_coef_, ref.dual_coef_, rtol=0, atol=1e-8 * max(
        1.0, np.abs(ref.dual_coef_).max()))


@pytest.mark.parametrize("name", ["exponential", "polynomial", "gaussian", "sigmoid"])
@pytest.mark.parametrize("lam", [0.01, 1.0, 30.0])
def test_ckrr_matches_brute_force_eq10(data, name, lam):
    X, y, Xt = data
    kernel = make_kernel(name)
    model = CenteredKernelRidge(lam, kernel=kernel).fit(X, y)
    ref = brute_force_ckrr(kernel(X), kernel(Xt, X), y, lam)
    np.testing.assert_allclose(model.predict(Xt), ref, rtol=0, atol=1e-8)
    ref_train = brute_force_ckrr(kernel(X), kernel(X), y, lam)
    np.testing.assert_allclose(model.predict(X), ref_train, rtol=0, atol=1e-8)
    assert abs(model.dual_coef_.sum()) < 1e-8  # α ⟂ 1


def test_ckrr_is_krr_with_unpenalised_intercept(data):
    """Shifting y by a constant shifts CKRR predictions by that constant (not KRR's)."""
    X, y, Xt = data
    a = CenteredKernelRidge(0.5).fit(X, y).predict(Xt)
    b = CenteredKernelRidge(0.5).fit(X, y + 100.0).predict(Xt)
    np.testing.assert_allclose(b - a, 100.0, atol=1e-8)
    c = KernelRidge(0.5).fit(X, y + 100.0).predict(Xt)
    assert np.abs(c - KernelRidge(0.5).fit(X, y).predict(Xt) - 100.0).max() > 1.0


@pytest.mark.parametrize("cls", [KernelRidge, CenteredKernelRidge])
@pytest.mark.parametrize("name", ["gaussian", "exponential", "laplace"])
def test_path_matches_per_lambda_fits(data, cls, name):
    X, y, Xt = data
    lams = np.logspace(-2, 2, 9)
    path = cls(1.0, kernel=name).fit(X, y).path(lams, Xt)
    assert path.train.shape == (9, X.shape[0]) and path.test.shape == (9, Xt.shape[0])
    for i, lam in enumerate(lams):
        single = cls(lam, kernel=name).fit(X, y)
        np.testing.assert_allclose(path.test[i], single.predict(Xt), rtol=0, atol=1e-8)
        np.testing.assert_allclose(path.train[i], single.predict(X), rtol=0, atol=1e-8)


def test_path_without_test_points_and_reuses_eigendecomposition(data):
    X, y, _ = data
    model = CenteredKernelRidge(1.0).fit(X, y)
    first = model.path([0.1, 1.0])
    eig = model._eig
    second = model.path([10.0])
    assert first.test is None and model._eig is eig
    np.testing.assert_allclose(second.train[0], CenteredKernelRidge(10.0).fit(X, y).predict(X),
                               atol=1e-8)


@pytest.mark.parametrize("cls", [KernelRidge, CenteredKernelRidge])
def test_path_from_a_given_test_kernel_equals_the_one_from_test_points(data, cls):
    X, y, Xt = data
    lams = np.logspace(-2, 2, 5)
    model = cls(1.0, kernel="exponential").fit(X, y)
    from_points = model.path(lams, Xt)
    from_kernel = model.path(lams, K_test=model.kernel_(Xt, X))
    np.testing.assert_array_equal(from_kernel.test, from_points.test)
    np.testing.assert_array_equal(from_kernel.train, from_points.train)
    fitted = cls(1.0, kernel="exponential").fit_path(X, y, lams, K_test=model.kernel_(Xt, X))
    np.testing.assert_allclose(fitted.test, from_points.test, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="not both"):
        model.path(lams, Xt, K_test=model.kernel_(Xt, X))


@pytest.mark.parametrize("lam", [0.0, -1.0, np.inf, np.nan, "1"])
def test_bad_lambda_is_a_clear_error(data, lam):
    X, y, _ = data
    with pytest.raises(ParameterError, match="λ"):
        KernelRidge(lam).fit(X, y)


@pytest.mark.parametrize("lams", [[0.1, 0.0], [], [np.nan]])
def test_bad_lambda_grid(data, lams):
    X, y, _ = data
    with pytest.raises(ParameterError, match="λ"):
        KernelRidge(1.0).fit(X, y).path(lams)


def test_prediction_is_blockwise_and_exact(data, monkeypatch):
    X, y, Xt = data
    model = KernelRidge(0.1).fit(X, y)
    full = model.predict(Xt)
    monkeypatch.setattr("kernel_lab.core.models.krr.DEFAULT_BLOCK_BYTES", 8 * X.shape[0] * 3)
    np.testing.assert_allclose(model.predict(Xt), full, atol=1e-14)


def test_kernel_overflow_is_a_clear_error():
    """The message says what to do, and no RuntimeWarning of numpy's comes before it."""
    X = np.random.default_rng(0).normal(loc=100, size=(20, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ParameterError, match=r"exponential kernel overflows.*standardise"):
            CenteredKernelRidge(1.0, kernel="exponential").fit(X, np.ones(20))


# The exponential kernel overflows on the checks' unscaled data (loc=100, see the test
# above), so its instance uses α = 0.01, which keeps g(α xᵀx'/p) finite there.
@parametrize_with_checks([KernelRidge(), CenteredKernelRidge(),
                          CenteredKernelRidge(0.1, kernel="exponential",
                                              kernel_params={"alpha": 0.01})])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_pickle_drops_caches_and_path_still_works(data):
    import pickle

    X, y, Xt = data
    model = CenteredKernelRidge(0.3).fit(X, y)
    model.path([1.0])
    restored = pickle.loads(pickle.dumps(model))
    assert restored._eig is None and restored._gram is None
    np.testing.assert_allclose(restored.predict(Xt), model.predict(Xt), atol=1e-14)
    np.testing.assert_allclose(restored.path([0.3], Xt).test[0], model.predict(Xt), atol=1e-8)
