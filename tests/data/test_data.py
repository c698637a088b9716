"""Generators, the data specification and the split."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core.errors import DataError, ParameterError
from kernel_lab.data.examples import EXAMPLES
from kernel_lab.data.generators import GENERATORS, generate
from kernel_lab.data.source import load_data


def test_gaussian_toeplitz_covariance_and_target():
    ds = generate("gaussian", {"n": 20000, "n_test": 10, "p": 6, "cov": "toeplitz", "rho": 0.4,
                               "noise": 0.5}, seed=1)
    j = np.arange(6)
    sigma = 0.4 ** np.abs(j[:, None] - j[None, :])
    np.testing.assert_allclose(ds.source.law.cov, sigma, atol=1e-12)
    np.testing.assert_allclose(np.cov(ds.X_train.T), sigma, atol=0.04)
    np.testing.assert_allclose(ds.f_train, np.sin(ds.X_train.sum(1) / np.sqrt(6)), atol=1e-12)
    assert np.var(ds.y_train - ds.f_train) == pytest.approx(0.5, rel=0.05)


def test_bernoulli_is_pm1_through_sqrt_sigma():
    ds = generate("bernoulli", {"n": 500, "p": 4, "cov": "toeplitz", "rho": 0.3}, seed=0)
    law = ds.source.law
    U, s = law.cov_eigvecs, law.cov_eigvals
    Z = ds.X_train @ U @ np.diag(1 / np.sqrt(s)) @ U.T  # undo Σ^{1/2}
    np.testing.assert_allclose(np.abs(Z), 1.0, atol=1e-10)


@pytest.mark.parametrize("spec", [
    {"cov": "toeplitz", "rho": 0.4, "f": "sin"},
    {"cov": "spectrum", "spectrum": "1;3", "f": "quadratic"},
    {"cov": "identity", "f": "linear"},
])
@pytest.mark.parametrize("kind", ["gaussian", "bernoulli"])
def test_white_sample_is_the_sample_before_sigma_sqrt(kind, spec):
    """sample_white draws what sample draws (the generator advanced alike up to the noise),
    without mapping the inputs by Σ^{1/2}; inner products with other inputs agree."""
    source = generate(kind, {"n": 10, "p": 6, **spec}, seed=0).source
    X, f, _ = source.sample(50, np.random.default_rng(7))
    Z, f_white = source.sample_white(50, np.random.default_rng(7))
    np.testing.assert_allclose(source.law.sqrt_apply(Z), X, rtol=0, atol=1e-13)
    np.testing.assert_allclose(f_white, f, rtol=0, atol=1e-13)
    other = source.sample(8, np.random.default_rng(8))[0]
    np.testing.assert_allclose(Z @ source.law.sqrt_apply(other).T, X @ other.T, atol=1e-12)


def test_no_white_sample_without_a_linear_law_and_a_projection_target():
    assert generate("friedman", {"n": 10}, seed=0).source.sample_white(5, np.random.default_rng()) \
        is None
    formula = generate("gaussian", {"n": 10, "p": 3, "f": "x1*x2"}, seed=0).source
    assert formula.sample_white(5, np.random.default_rng()) is None


def test_spectrum_covariance():
    ds = generate("gaussian", {"n": 10, "p": 8, "cov": "spectrum", "spectrum": "1;3"}, seed=0)
    np.testing.assert_array_equal(ds.source.law.cov_eigvals, [1, 1, 1, 1, 3, 3, 3, 3])


def test_friedman_and_breiman_definitions():
    fr = generate("friedman", {"n": 300, "noise": 0.0}, seed=0)
    X = fr.X_train
    ref = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] \
        + 5 * X[:, 4]
    np.testing.assert_allclose(fr.y_train, ref)
    assert X.min() >= 0 and X.max() <= 1 and X.shape[1] == 10
    br = generate("breiman", {"n": 300, "noise": 0.0}, seed=0)
    X = br.X_train
    assert set(np.unique(X[:, 0])) == {-1.0, 1.0}
    assert set(np.unique(X[:, 1:])) <= {-1.0, 0.0, 1.0}
    ref = np.where(X[:, 0] == 1, 3 + 3 * X[:, 1] + 2 * X[:, 2] + X[:, 3],
                   -3 + 3 * X[:, 4] + 2 * X[:, 5] + X[:, 6])
    np.testing.assert_allclose(br.y_train, ref)


def test_clusters_are_imbalanced():
    ds = generate("clusters", {"n": 4000, "k": 3, "imbalance": 4.0, "spread": 0.01,
                               "separation": 50.0}, seed=3)
    law = ds.source.law
    labels = np.argmin(((ds.X_train[:, None, :] - law.centers[None]) ** 2).sum(-1), axis=1)
    freq = np.bincount(labels, minlength=3) / 4000
    np.testing.assert_allclose(freq, np.array([16, 4, 1]) / 21, atol=0.03)


def test_user_formula_target():
    ds = load_data('gaussian:n=50,p=3,noise=0,f="sin(x1) + x2^2"', seed=0)
    np.testing.assert_allclose(ds.y_train, np.sin(ds.X_train[:, 0]) + ds.X_train[:, 1] ** 2)


def test_same_seed_same_data_and_different_seed_differs():
    a = load_data("gaussian:n=30,p=5", seed=7)
    b = load_data("gaussian:n=30,p=5", seed=7)
    c = load_data("gaussian:n=30,p=5", seed=8)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.allclose(a.X_train, c.X_train)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_bundled_examples_load_and_standardise(name):
    ds = load_data(name, seed=0)
    assert ds.n_train + ds.n_test > 400
    np.testing.assert_allclose(ds.X_train.mean(0), 0, atol=1e-10)
    std = ds.X_train.std(0)
    constant = np.ptp(ds.X_train, axis=0) == 0  # digits: border pixels that are always 0
    np.testing.assert_allclose(std[~constant], 1, atol=1e-10)
    assert (std[constant] == 0).all() and constant.sum() < ds.p / 4
    if name == "breast-cancer":
        assert ds.task == "classification" and set(np.unique(ds.y_train)) == {-1.0, 1.0}
    if name == "digits":
        assert ds.task == "multiclass" and ds.p == 64 and ds.n_train + ds.n_test == 1797
        assert set(np.unique(ds.y_train)) == set(range(10))


def test_split_is_keyed_seeded_and_partitions():
    from kernel_lab.core.rows import keys as rowkeys
    from kernel_lab.data.split import dataset_from_table
    from kernel_lab.data.table import Table

    X = np.arange(40.0).reshape(20, 2)
    y = np.arange(20.0)

    def split(seed):
        return dataset_from_table(Table(X.copy(), y.copy(), ["a", "b"], "y"), name="t",
                                  test_fraction=0.25, seed=seed, standardize=False)

    a, b = split(0), split(0)
    assert a.X_test.shape == (5, 2)
    np.testing.assert_array_equal(a.y_train, b.y_train)
    assert sorted(np.concatenate([a.y_train, a.y_test])) == list(range(20))
    # the law: the test rows are the 5 rows with the smallest split keys, in row order
    keys = rowkeys.keys(0, rowkeys.SPLIT, np.arange(20))
    np.testing.assert_array_equal(a.i_test, np.sort(np.argsort(keys)[:5]))
    np.testing.assert_array_equal(a.y_test, a.i_test.astype(float))
    assert not np.array_equal(split(1).i_test, a.i_test)


@pytest.mark.parametrize(
    "spec,exc,match",
    [
        ("gaussian:n=abc", ParameterError, "n must be a whole number"),
        ("gaussian:nn=3", ParameterError, "did you mean 'n'"),
        ("gaussian:cov=wrong", ParameterError, "identity, toeplitz, spectrum"),
        ("gaussian:p=3,f=x9", ParameterError, "x9 does not exist"),
        ("gaussian:p=3,f=log(x1)", ParameterError, "non-finite"),
        ("nonsense", DataError, "neither a file nor a known data source"),
        ("", DataError, "no data given"),
        ("diabetes:test_fraction=2", ParameterError, "test_fraction must be ≤ 0.95"),
    ],
)
def test_bad_specs(spec, exc, match):
    with pytest.raises(exc, match=match):
        load_data(spec)


def test_every_generator_has_documented_parameters():
    for gen in GENERATORS.values():
        assert gen.description
        for spec in gen.params:
            assert spec.help or spec.label, (gen.name, spec.name)


def test_data_sources_round_trip_and_name_themselves_briefly(tmp_path):
    from kernel_lab.data.source import DataSource

    odd = str(tmp_path / "dir:with,colon.csv")  # not there: never read as options
    assert DataSource.from_spec(odd).name == odd
    assert DataSource.from_dict(DataSource("file", odd).to_dict()).name == odd
    assert DataSource.from_spec("data.csv:target=price").options == {"target": "price"}
    assert DataSource.from_spec("C:\\data\\x.csv").name == "C:\\data\\x.csv"
    plain = DataSource.from_spec("diabetes", {"test_fraction": 0.25, "standardize": True})
    assert plain.load().name == "diabetes"  # default options left out of the name
    assert DataSource.from_spec("diabetes:test_fraction=0.3").load().name == \
        "diabetes:test_fraction=0.3"
    gen = DataSource.from_spec("gaussian:n=50,p=3")
    assert DataSource.from_dict(gen.to_dict()) == gen and gen.load().name == "gaussian:n=50,p=3"
