"""Random Fourier features and doubly stochastic gradients (Dai et al.)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from kernel_lab.core.dsg.stream import block_rows
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.losses import CLASSIFICATION_LOSSES, REGRESSION_LOSSES, make_loss
from kernel_lab.core.models import CenteredKernelRidge, KernelRidge
from kernel_lab.core.models.dsg import DSGClassifier, DSGRegressor
from kernel_lab.core.models.rff import RandomFourierFeatures, RFFRidge
from kernel_lab.core.rows import keys as rowkeys


# -- losses ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", REGRESSION_LOSSES + CLASSIFICATION_LOSSES)
def test_loss_derivative_matches_finite_differences(name):
    loss = make_loss(name, epsilon=0.2, quantile=0.3)
    rng = np.random.default_rng(0)
    y = rng.choice([-1.0, 1.0], 400) if loss.task == "classification" else rng.normal(size=400)
    u = rng.normal(scale=2.0, size=400)
    h = 1e-6
    # stay away from the kinks (|u − y| = ε, y u = 1, u = y)
    kink = np.minimum.reduce([np.abs(np.abs(u - y) - 0.2), np.abs(y * u - 1), np.abs(u - y)])
    ok = kink > 1e-3
    numeric = (loss.value(u + h, y) - loss.value(u - h, y)) / (2 * h)
    np.testing.assert_allclose(loss.deriv(u, y)[ok], numeric[ok], atol=1e-6)


def test_unknown_loss():
    with pytest.raises(ParameterError, match="unknown loss"):
        make_loss("cubic")


# -- random Fourier features --------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["gaussian", "laplace", "cauchy"])
@pytest.mark.parametrize("orthogonal", [False, True])
def test_rff_gram_is_unbiased(kernel, orthogonal):
    if orthogonal and kernel != "gaussian":
        with pytest.raises(ParameterError, match="rotation-invariant"):
            RandomFourierFeatures(kernel, sigma=1.5, orthogonal=True).fit(np.zeros((3, 4)))
        return
    X = np.random.default_rng(1).normal(size=(60, 4))
    exact = make_kernel(kernel, {"sigma": 1.5})(X)
    errs = []
    for seed in range(5):
        Z = RandomFourierFeatures(kernel, sigma=1.5, n_components=10_000, orthogonal=orthogonal,
                                  random_state=seed).fit_transform(X)
        errs.append(Z @ Z.T - exact)
    # one draw of 10⁴ features: mean entry error ≤ 0.01 (measured 0.006–0.009)
    assert max(np.abs(e).mean() for e in errs) <= 0.01
    # unbiased: averaging draws shrinks the error like 1/√draws (no systematic part)
    assert np.abs(np.mean(errs, axis=0)).mean() <= 0.6 * np.abs(errs[0]).mean()


def test_rff_ridge_approaches_centered_krr():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 / 3 + 0.1 * rng.normal(size=300)
    Xt = rng.normal(size=(200, 3))
    exact = CenteredKernelRidge(1.0, kernel="gaussian", kernel_params={"sigma": 1.5})
    ref = exact.fit(X, y).predict(Xt)
    approx = RFFRidge(1.0, sigma=1.5, n_components=4000, random_state=0).fit(X, y).predict(Xt)
    assert np.sqrt(np.mean((approx - ref) ** 2)) < 0.05 * np.std(ref)


def test_rff_ridge_without_intercept_is_plain_ridge_and_approaches_krr():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    y = 2.0 + np.sin(X[:, 0]) + 0.1 * rng.normal(size=200)
    Xt = rng.normal(size=(100, 3))
    model = RFFRidge(2.0, sigma=1.5, n_components=300, centered=False, random_state=0)
    model.fit(X, y)
    Z = model.features_.transform(X)  # the literal solve of min ‖Zw − y‖² + λ‖w‖²
    w = np.linalg.solve(Z.T @ Z + 2.0 * np.eye(300), Z.T @ y)
    np.testing.assert_allclose(model.coef_, w, rtol=1e-9, atol=1e-12)
    assert model.intercept_ == 0.0
    big = RFFRidge(1.0, sigma=1.5, n_components=4000, centered=False, random_state=0)
    ref = KernelRidge(1.0, kernel="gaussian", kernel_params={"sigma": 1.5}).fit(X, y)
    diff = big.fit(X, y).predict(Xt) - ref.predict(Xt)
    assert np.sqrt(np.mean(diff ** 2)) < 0.05 * np.std(ref.predict(Xt))


# -- the literal oracle of Algorithm 1 -----------------------------------------------------
def literal_epochs(n, seed):
    """The rows of DSG's keyed epochs, literally: epoch e lists rows 0 … n−1 by their keys
    for (seed, DSG_EPOCH + e), ties by index (fewer rows than a block: one block, so the
    blocks' order plays no part)."""
    for e in itertools.count():
        yield from sorted(range(n), key=lambda j: (int(rowkeys.keys(
            seed, rowkeys.DSG_EPOCH + e, np.array([j]))[0]), j))


def literal_streams(X, *, kernel, theta, t0, n_iter, batch, r, seed):
    """Algorithm 1's random choices, literally and in order: for each iteration i its
    mini-batch (the next ``batch`` rows of the keyed epochs), step size and r random
    features (the estimator's random streams)."""
    n, p = X.shape
    assert n < block_rows(p)
    rows = literal_epochs(n, seed)
    for i in range(1, n_iter + 1):
        idx = [next(rows) for _ in range(batch)]
        frng = np.random.default_rng([seed, i])
        W = kernel.sample_frequencies(p, r, frng)
        b = frng.uniform(0.0, 2 * math.pi, r)
        yield idx, theta / (i + t0), W, b


def literal_phi(W, b, k, x):
    return math.sqrt(2) * math.cos(float(W[:, k] @ x) + b[k])


def literal_predict(feats, alphas, x):
    """Algorithm 2: f(x) = Σ_i Σ_k α_ik φ_ik(x), one term at a time (α_ik: a number, or
    one per class)."""
    f = 0.0
    for (W, b), a in zip(feats, alphas, strict=True):
        for k in range(len(b)):
            f = f + a[k] * literal_phi(W, b, k, x)
    return f


def literal_dsg(X, y, *, kernel, loss, nu, theta, t0, n_iter, batch, r, seed):
    """Algorithm 1 of Dai et al. written literally: one point and one feature at a time,
    every old coefficient decayed explicitly. Same random streams as the estimator."""
    alphas, feats = [], []
    for idx, gamma, W, b in literal_streams(X, kernel=kernel, theta=theta, t0=t0,
                                            n_iter=n_iter, batch=batch, r=r, seed=seed):
        grads = [float(loss.deriv(np.array(literal_predict(feats, alphas, X[j])),
                                  np.array(y[j]))) for j in idx]
        alpha = np.zeros(r)
        for g, j in zip(grads, idx, strict=True):
            for k in range(r):
                alpha[k] += -gamma * g * literal_phi(W, b, k, X[j]) / (len(idx) * r)
        for old in alphas:
            old *= 1 - gamma * nu
        alphas.append(alpha)
        feats.append((W, b))
    return np.array(alphas)


@pytest.mark.parametrize("cls,loss,y_kind", [
    (DSGRegressor, "squared", "real"), (DSGRegressor, "epsilon_insensitive", "real"),
    (DSGRegressor, "quantile", "real"), (DSGClassifier, "hinge", "pm1"),
    (DSGClassifier, "squared_hinge", "pm1"), (DSGClassifier, "logistic", "pm1")])
def test_vectorised_dsg_reproduces_the_literal_oracle(cls, loss, y_kind):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
    if y_kind == "pm1":
        y = np.where(y > 0, 1.0, -1.0)
    model = cls(loss, sigma=1.2, nu=0.01, theta=50.0, t0=60.0, n_iter=25, batch_size=4,
                n_features_per_iter=3, epsilon=0.05, quantile=0.3, random_state=7).fit(X, y)
    target = y - model.offset_ if cls is DSGRegressor else y
    oracle = literal_dsg(X, target, kernel=model.kernel_, loss=make_loss(loss, epsilon=0.05,
                                                                          quantile=0.3),
                         nu=0.01, theta=50.0, t0=60.0, n_iter=25, batch=4, r=3,
                         seed=model.seed_)
    np.testing.assert_allclose(model.coef_ * model.scale_, oracle, rtol=0, atol=1e-10)


def test_cosines_of_training_and_prediction_are_np_cos_within_the_fast_cosines_error():
    # DSG evaluates cos(X W + b) with the vectorised cosine (within 4·10⁻¹⁶ of np.cos):
    # its sums equal np.cos of its own terms to that error times Σ|a_j| (plus the
    # products' rounding), on arguments of the size DSG produces
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(300, 20)), rng.normal(size=300)
    model = DSGRegressor(n_iter=120, batch_size=32, n_features_per_iter=16,
                         random_state=2).fit(X, y)
    W, b, coef = model.terms(0, model.n_iter_)
    Z = X @ W + b
    assert np.abs(Z).max() > 4.0                       # beyond the C library's fast path
    reference = np.cos(Z) @ coef
    bound = 1e-15 * np.abs(coef).sum(axis=0)
    assert (np.abs(model.partial_sum(X, 0, model.n_iter_) - reference) <= bound).all()
    # the training step: its update is the batch's features against the loss gradients
    probe = DSGRegressor(n_iter=1, batch_size=32, n_features_per_iter=16, random_state=2)
    probe.prepare(X)
    step = probe.step(X[:32], probe.labels(y[:32]))
    W1, b1, coef1 = probe.terms(0, 1)
    expected = (-step.gamma * math.sqrt(2.0) / (32 * 16)) * (np.cos(X[:32] @ W1 + b1).T
                                                             @ step.grad)
    np.testing.assert_allclose(coef1[:, 0] * probe.scale_, expected, rtol=0,
                               atol=1e-15 * np.abs(expected).max() + 1e-300)


def test_prediction_regenerates_or_caches_features_identically():
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(200, 4)), rng.normal(size=200)
    a = DSGRegressor(n_iter=150, random_state=1).fit(X, y)
    b = DSGRegressor(n_iter=150, random_state=1, cache_features=True).fit(X, y)
    assert a._W_buf.size == 0 and b._W_buf.shape[1] >= 150 * 8   # O(t) model vs cache
    np.testing.assert_allclose(a.predict(X), b.predict(X), atol=1e-12)


def test_partial_fit_streams_batches():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(320, 2))
    y = np.sin(2 * X[:, 0])
    model = DSGRegressor(nu=1e-3, batch_size=32, random_state=0)
    for start in range(0, 320, 64):
        model.partial_fit(X[start:start + 64], y[start:start + 64])
    assert model.n_iter_ == 10 and model.n_samples_seen_ == 320
    mse_before = np.mean((model.predict(X) - y) ** 2)
    for _ in range(5):
        model.partial_fit(X, y)
    assert np.mean((model.predict(X) - y) ** 2) < mse_before


@pytest.mark.parametrize(("cls", "loss", "classes"), [
    (DSGRegressor, "quantile", 0), (DSGClassifier, "hinge", 2),
    (DSGClassifier, "multinomial", 3)])
def test_the_public_training_protocol_is_partial_fit_with_the_callers_batches(cls, loss,
                                                                               classes):
    """prepare, labels, step and finish drive the iterations partial_fit makes on
    consecutive batches: the same coefficients, bit for bit, and the same predictions;
    a model released after finish regenerates its features to go on."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 3))
    y = np.sin(2 * X[:, 0]) if not classes else (
        np.digitize(X[:, 0], [-0.4, 0.4][: classes - 1]) * 5.0 + 1.0)
    kw = {"nu": 1e-3, "batch_size": 16, "sigma": 1.2, "random_state": 4}
    ref = cls(loss, **kw)
    if classes:
        ref.partial_fit(X, y, classes=np.unique(y))
    else:
        ref.partial_fit(X, y)
    model = cls(loss, **kw)
    model.prepare(X, **({"classes": np.unique(y)} if classes else {"offset": ref.offset_}))
    steps = []
    for start in range(0, 160, 16):  # the first 10 batches, then release and go on
        steps.append(model.step(X[start:start + 16], model.labels(y[start:start + 16])))
    model.finish()
    assert model._n_cached == 0  # cache_features=False: released
    for start in range(160, 200, 16):
        steps.append(model.step(X[start:start + 16], model.labels(y[start:start + 16])))
    model.finish()
    assert model.n_iter_ == ref.n_iter_ == 13 and len(steps) == 13
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    assert model.scale_ == ref.scale_
    assert steps[0].gamma == pytest.approx(1e3 / (1 + 1e3))  # θ = t0 = 1/ν: γ₁ = θ/(1 + t0)
    assert steps[-1].grad.shape[0] == 200 - 192
    np.testing.assert_array_equal(model.predict(X), ref.predict(X))


def test_the_training_protocol_needs_a_prepared_model_and_the_classes():
    with pytest.raises(ParameterError, match="prepare"):
        DSGRegressor().step(np.zeros((2, 1)), np.zeros(2))
    with pytest.raises(ValueError, match="every class label"):
        DSGClassifier().prepare(np.zeros((2, 1)), classes=[1.0])
    with pytest.raises(ParameterError, match="no classes"):
        DSGRegressor().prepare(np.zeros((2, 1)), classes=[0.0, 1.0])


def test_warm_start_continues_the_same_run():
    rng = np.random.default_rng(8)
    X, y = rng.normal(size=(150, 3)), rng.normal(size=150)
    whole = DSGRegressor(n_iter=90, random_state=2).fit(X, y)
    parts = DSGRegressor(n_iter=40, warm_start=True, random_state=2).fit(X, y)
    parts.set_params(n_iter=50).fit(X, y)
    assert parts.n_iter_ == 90
    np.testing.assert_allclose(parts.coef_ * parts.scale_, whole.coef_ * whole.scale_,
                               atol=1e-12)


def test_divergence_is_reported():
    rng = np.random.default_rng(9)
    X, y = rng.normal(size=(300, 5)), rng.normal(size=300)
    with pytest.raises(ParameterError, match=r"training diverged.*decrease theta"):
        DSGRegressor(nu=1e-4, theta=4000.0, t0=1000.0, n_iter=2000, batch_size=1,
                     n_features_per_iter=1, random_state=0).fit(X, y)


def test_callback_reports_and_can_stop():
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(100, 2)), rng.normal(size=100)
    seen = []

    def callback(info):
        seen.append((info["iteration"], info["samples_seen"], info["train_loss"]))
        return info["iteration"] < 30

    model = DSGRegressor(n_iter=200, batch_size=10, callback=callback, callback_every=10,
                         random_state=0).fit(X, y)
    assert [s[0] for s in seen] == [10, 20, 30] and model.n_iter_ == 30
    assert seen[0][1] == 100 and all(np.isfinite(s[2]) for s in seen)


def test_training_runs_on_one_blas_thread_with_the_bits_of_two(monkeypatch):
    """DSG's iterations take one BLAS thread (small products: a second thread cost several
    times more on a busy machine) and give the bits of the same fit on two threads (each
    value of a product is summed by one thread either way); the caller's limit comes back
    after the fit."""
    import contextlib

    from threadpoolctl import threadpool_limits

    from kernel_lab.core.executor import blas_controller
    from kernel_lab.core.models import dsg

    def threads() -> list[int]:
        return [lib["num_threads"] for lib in blas_controller().info()
                if lib["user_api"] == "blas"]

    rng = np.random.default_rng(8)
    X = rng.normal(size=(400, 20))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=400)
    seen: list[list[int]] = []
    model = DSGRegressor(sigma=4.0, n_iter=150, batch_size=32, n_features_per_iter=16,
                         callback=lambda info: seen.append(threads()), callback_every=50,
                         random_state=2)
    with threadpool_limits(limits=2, user_api="blas"):
        model.fit(X, y)
        assert threads() == [2] * len(threads())  # restored after the fit
    assert seen and all(t == [1] * len(t) for t in seen)
    monkeypatch.setattr(dsg, "one_blas_thread", contextlib.nullcontext)
    twin = DSGRegressor(sigma=4.0, n_iter=150, batch_size=32, n_features_per_iter=16,
                        callback=lambda info: seen.append(threads()), callback_every=50,
                        random_state=2)
    with threadpool_limits(limits=2, user_api="blas"):  # the same fit on two threads
        twin.fit(X, y)
    assert seen[-1] == [2] * len(seen[-1])
    np.testing.assert_array_equal(model.coef_, twin.coef_)
    np.testing.assert_array_equal(model.predict(X), twin.predict(X))


def test_callback_gets_the_test_loss_of_an_eval_set():
    rng = np.random.default_rng(7)
    X, y = rng.normal(size=(100, 2)), rng.normal(size=100)
    Xv, yv = rng.normal(size=(50, 2)), rng.normal(size=50)
    seen = []
    model = DSGRegressor(n_iter=20, batch_size=10, callback=seen.append, callback_every=10,
                         random_state=0)
    model.fit(X, y, eval_set=(Xv, yv))
    assert [info["iteration"] for info in seen] == [10, 20]
    # the reported test loss is the model's loss on the eval set at that moment
    assert seen[-1]["test_loss"] == pytest.approx(0.5 * np.mean((model.predict(Xv) - yv) ** 2))


def test_squared_loss_dsg_is_close_to_exact_krr():
    """Matched regularisation: DSG's ν corresponds to kernel ridge with λ = n ν."""
    rng = np.random.default_rng(0)
    n, d = 2000, 3
    X = rng.normal(size=(n, d))
    f = lambda A: np.sin(A[:, 0]) + 0.5 * np.cos(A[:, 1] * A[:, 2])  # noqa: E731
    y = f(X) + 0.1 * rng.normal(size=n)
    Xt = rng.normal(size=(1000, d))
    yt = f(Xt) + 0.1 * rng.normal(size=1000)
    nu, sigma = 3e-3, 1.0
    # DSG's own limit: plain KRR on y − ȳ (DSG subtracts ȳ and has no intercept)
    krr = KernelRidge(n * nu, kernel="gaussian", kernel_params={"sigma": sigma})
    mse_krr = np.mean((krr.fit(X, y - y.mean()).predict(Xt) + y.mean() - yt) ** 2)
    theta = 2.0 / nu  # θ of order 1/ν for the O(1/t) rate; t0 = θ (spec/dsg.md)
    dsg = DSGRegressor(sigma=sigma, nu=nu, theta=theta, t0=theta, n_iter=1000, batch_size=16,
                       n_features_per_iter=16, random_state=0).fit(X, y)
    mse_dsg = np.mean((dsg.predict(Xt) - yt) ** 2)
    assert mse_dsg <= 1.10 * mse_krr, (mse_dsg, mse_krr)


def test_classifier_separates_a_separable_set():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1200, 2))
    y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 < 1.2, "in", "out")  # a circle: not linear
    model = DSGClassifier("hinge", nu=1e-3, n_iter=400, batch_size=32,
                          n_features_per_iter=16, random_state=0).fit(X[:800], y[:800])
    assert set(model.classes_) == {"in", "out"}
    assert np.mean(model.predict(X[800:]) == y[800:]) >= 0.95


def test_bad_parameters():
    X, y = np.zeros((10, 2)), np.zeros(10)
    with pytest.raises(ParameterError, match="decays the model to zero"):
        DSGRegressor(nu=0.5, theta=10.0, t0=0.0).fit(X, y)
    with pytest.raises(ParameterError, match="loss must be one of"):
        DSGRegressor("hinge").fit(X, y)
    with pytest.raises(ParameterError, match="positive"):
        DSGRegressor(nu=0.0).fit(X, y)


@parametrize_with_checks([RandomFourierFeatures(sigma=1.0, random_state=0),
                          RFFRidge(random_state=0), DSGRegressor(n_iter=100),
                          DSGClassifier(n_iter=100)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- more than two classes: the multinomial (softmax) loss ------------------------------------
def test_multinomial_loss_gradient_is_softmax_minus_one_hot():
    loss = make_loss("multinomial")
    rng = np.random.default_rng(1)
    u = rng.normal(scale=3.0, size=(50, 4))
    y = rng.integers(0, 4, 50).astype(float)
    h = 1e-6
    numeric = np.empty_like(u)
    for k in range(4):
        e = np.zeros(4)
        e[k] = h
        numeric[:, k] = (loss.value(u + e, y) - loss.value(u - e, y)) / (2 * h)
    np.testing.assert_allclose(loss.deriv(u, y), numeric, atol=1e-6)
    p = np.exp(u) / np.exp(u).sum(axis=1, keepdims=True)  # the textbook form
    np.testing.assert_allclose(loss.value(u, y), -np.log(p[np.arange(50), y.astype(int)]))


def literal_softmax_dsg(X, codes, K, *, kernel, nu, theta, t0, n_iter, batch, r, seed):
    """Algorithm 1 with K scores, written literally (softmax by hand, one point, one
    feature and one class at a time)."""
    alphas, feats = [], []
    for idx, gamma, W, b in literal_streams(X, kernel=kernel, theta=theta, t0=t0,
                                            n_iter=n_iter, batch=batch, r=r, seed=seed):
        alpha = np.zeros((r, K))
        for j in idx:
            f = list(literal_predict(feats, alphas, X[j]) + np.zeros(K))
            top = max(f)
            z = sum(math.exp(v - top) for v in f)
            for c in range(K):
                g = math.exp(f[c] - top) / z - (1.0 if c == int(codes[j]) else 0.0)
                for k in range(r):
                    alpha[k, c] += -gamma * g * literal_phi(W, b, k, X[j]) / (len(idx) * r)
        for old in alphas:
            old *= 1 - gamma * nu
        alphas.append(alpha)
        feats.append((W, b))
    return np.array(alphas)


def test_multinomial_dsg_reproduces_the_literal_oracle():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(45, 3))
    labels = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.4, 0.4])]
    model = DSGClassifier(sigma=1.1, nu=0.01, theta=40.0, t0=50.0, n_iter=15, batch_size=4,
                          n_features_per_iter=2, random_state=5).fit(X, labels)
    assert model.multinomial_ and model.coef_.shape == (15, 2, 3)
    codes = np.searchsorted(model.classes_, labels)
    oracle = literal_softmax_dsg(X, codes, 3, kernel=model.kernel_, nu=0.01, theta=40.0,
                                 t0=50.0, n_iter=15, batch=4, r=2, seed=model.seed_)
    np.testing.assert_allclose(model.coef_ * model.scale_, oracle, rtol=0, atol=1e-10)
    assert set(model.predict(X)) <= set(labels)
    np.testing.assert_allclose(model.predict_proba(X).sum(axis=1), 1.0)


def test_multiclass_dsg_learns_iris_and_refuses_binary_losses():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    model = DSGClassifier(nu=1e-3, n_iter=300, random_state=0).fit(X, y)
    assert np.mean(model.predict(X) != y) < 0.06
    with pytest.raises(ValueError, match="hinge loss separates two classes"):
        DSGClassifier("hinge", n_iter=2).fit(X, y)


def test_multinomial_loss_refuses_labels_that_are_not_class_codes():
    """Found with breast cancer (labels ±1): a label −1 was read as the index of the last
    class. The softmax loss takes class codes 0 … K−1 only, and says so."""
    loss = make_loss("multinomial")
    u = np.zeros((3, 2))
    for bad in ([-1.0, 1.0, 1.0], [0.0, 2.0, 1.0], [0.0, 0.5, 1.0]):
        with pytest.raises(ParameterError, match="class codes 0 … 1"):
            loss.value(u, np.array(bad))
        with pytest.raises(ParameterError, match="class codes 0 … 1"):
            loss.deriv(u, np.array(bad))
    np.testing.assert_allclose(loss.value(u, np.array([0.0, 1.0, 1.0])), np.log(2.0))


def test_two_class_softmax_dsg_maps_pm1_labels_to_codes():
    """DSGClassifier("multinomial") on ±1 labels: two scores, −1 ↦ code 0 and +1 ↦ code 1,
    against the literal softmax oracle."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    model = DSGClassifier("multinomial", sigma=1.1, nu=0.01, theta=40.0, t0=50.0, n_iter=10,
                          batch_size=4, n_features_per_iter=2, random_state=5).fit(X, y)
    assert model.multinomial_ and model.coef_.shape == (10, 2, 2)
    oracle = literal_softmax_dsg(X, (y > 0).astype(int), 2, kernel=model.kernel_, nu=0.01,
                                 theta=40.0, t0=50.0, n_iter=10, batch=4, r=2,
                                 seed=model.seed_)
    np.testing.assert_allclose(model.coef_ * model.scale_, oracle, rtol=0, atol=1e-10)
    assert set(model.predict(X)) <= {-1.0, 1.0}


def test_terms_are_the_partial_sums_cosines_and_coefficients():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 3))
    y = np.sin(X[:, 0])
    model = DSGRegressor(sigma=1.2, n_iter=30, batch_size=4, n_features_per_iter=3,
                         random_state=2).fit(X, y)
    W, b, coef = model.terms(7, 19)
    assert W.shape == (3, 36) and b.shape == (36,) and coef.shape[0] == 36
    np.testing.assert_allclose(np.cos(X @ W + b) @ coef, model.partial_sum(X, 7, 19),
                               rtol=0, atol=1e-12)
