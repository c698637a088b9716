"""The estimators on Dask data, in this process (no client: Dask's synchronous scheduler).

A Dask array cut into chunks of unequal sizes (a one-row chunk among them) is fitted on its
chunks: the same rows as a NumPy array give the same landmarks, features and coefficients
(1e-8 relative); ``predict``/``transform``/``decision_function``/``predict_proba`` of a
Dask input stay lazy and are computed chunk by chunk. The n × n ridges and GFC gather a
Dask input that fits the memory budget and refuse one that does not, by name, before any
chunk is computed.
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from kernel_lab.core.errors import DataError, MemoryBudgetError  # noqa: E402
from kernel_lab.core.models import (  # noqa: E402
    CenteredKernelRidge,
    DSGClassifier,
    DSGRegressor,
    GreedyFeatureRegressor,
    KernelRidge,
    NystromFeatures,
    NystromRidge,
    RandomFourierFeatures,
    RFFRidge,
)
from kernel_lab.core.models.inputs import row_set, rows_input  # noqa: E402

N, P = 1_500, 3
#: Unequal row chunks, a one-row chunk among them.
SIZES = (400, 1, 299, 550, 250)


def _rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(N, P))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=N)
    return X, y


def _dask(X: np.ndarray, y: np.ndarray) -> tuple[object, object]:
    # y cut otherwise than X: the rows are re-cut at X's chunks
    return da.from_array(X, chunks=(SIZES, P)), da.from_array(y, chunks=500)


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / np.max(np.abs(a)))


class Counter:
    """Counts the chunks of X computed (and their largest size) through a map_blocks."""

    def __init__(self) -> None:
        self.calls = 0
        self.largest = 0

    def __call__(self, block: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.largest = max(self.largest, block.shape[0])
        return block

    def wrap(self, X):
        return X.map_blocks(self, dtype=X.dtype, meta=np.empty((0, 0), dtype=X.dtype))


def test_a_dask_array_is_one_part_per_chunk_with_its_global_rows() -> None:
    X, y = _rows()
    Xd, yd = _dask(X, y)
    rows, none = rows_input(Xd, yd)
    assert none is None
    parts, plan = row_set(rows)
    assert [p.start for p in parts.parts] == list(np.cumsum((0, *SIZES[:-1])))
    assert [p.rows for p in parts.parts] == list(SIZES)
    assert (plan.n, plan.n_test, plan.n_train) == (N, 0, N)
    assert plan.mean is None and plan.scale is None and plan.fill is None
    assert rows_input(X, y) == (X, y)


@pytest.mark.parametrize("sampler", ["uniform", "recursive-rls"])
@pytest.mark.parametrize("centered", [True, False])
def test_nystrom_ridge_on_a_dask_array_gives_the_coefficients_of_the_array(sampler, centered
                                                                          ) -> None:
    X, y = _rows()
    Xd, yd = _dask(X, y)
    params = {"sampler": sampler, "lam": 0.3, "n_components": 40, "random_state": 9,
              "centered": centered}
    here = NystromRidge(**params).fit(X, y)
    count = Counter()
    there = NystromRidge(**params).fit(count.wrap(Xd), yd)
    assert count.largest == max(SIZES)  # chunk by chunk
    np.testing.assert_array_equal(there.features_.landmark_indices_,
                                  here.features_.landmark_indices_)
    assert there.features_.kernel_.params() == here.features_.kernel_.params()
    assert _relative(here.coef_, there.coef_) <= 1e-8
    assert abs(here.intercept_ - there.intercept_) <= 1e-8 * max(abs(here.intercept_), 1)
    assert there.n_features_in_ == P


def test_predict_of_a_dask_array_is_a_lazy_dask_array_computed_chunk_by_chunk() -> None:
    X, y = _rows()
    Xd, _yd = _dask(X, y)
    model = NystromRidge(sampler="uniform", n_components=30, random_state=1).fit(X, y)
    count = Counter()
    got = model.predict(count.wrap(Xd))
    assert isinstance(got, da.Array) and count.calls == 0
    assert got.chunks == (SIZES,)
    values = got.compute()
    assert count.calls == len(SIZES) and count.largest == max(SIZES)
    np.testing.assert_allclose(values, model.predict(X), rtol=1e-12, atol=1e-12)


def test_transformers_give_dask_features_of_the_same_values() -> None:
    X, y = _rows()
    Xd, _ = _dask(X, y)
    for make in (lambda: NystromFeatures(n_components=25, sampler="uniform", random_state=3),
                 lambda: RandomFourierFeatures(n_components=35, random_state=3)):
        here, there = make().fit(X), make().fit(Xd)
        F = there.transform(Xd)
        assert isinstance(F, da.Array) and F.chunks[0] == SIZES
        assert F.shape == (N, here.transform(X[:2]).shape[1])
        np.testing.assert_allclose(F.compute(), here.transform(X), rtol=1e-9, atol=1e-9)
        assert isinstance(there.fit_transform(Xd), da.Array)


def test_rff_ridge_on_a_dask_array_gives_the_coefficients_of_the_array() -> None:
    X, y = _rows()
    Xd, yd = _dask(X, y)
    for centered in (True, False):
        params = {"lam": 0.2, "n_components": 60, "random_state": 5, "centered": centered}
        here, there = RFFRidge(**params).fit(X, y), RFFRidge(**params).fit(Xd, yd)
        assert there.features_.kernel_.params() == here.features_.kernel_.params()
        np.testing.assert_array_equal(there.features_.weights_, here.features_.weights_)
        assert _relative(here.coef_, there.coef_) <= 1e-8
        assert abs(here.intercept_ - there.intercept_) <= 1e-8 * max(abs(here.intercept_), 1)
        np.testing.assert_allclose(there.predict(Xd).compute(), here.predict(X), rtol=1e-8,
                                   atol=1e-8)


@pytest.mark.parametrize("loss", ["squared", "quantile"])
def test_dsg_regressor_on_a_dask_array_takes_the_batches_of_the_array(loss) -> None:
    X, y = _rows()
    Xd, yd = _dask(X, y)
    params = {"loss": loss, "n_iter": 120, "batch_size": 16, "random_state": 2}
    here, there = DSGRegressor(**params).fit(X, y), DSGRegressor(**params).fit(Xd, yd)
    assert there.offset_ == pytest.approx(here.offset_, rel=1e-12)
    assert there.kernel_.params() == here.kernel_.params()
    assert _relative(here.coef_, there.coef_) <= 1e-8
    np.testing.assert_allclose(there.predict(Xd).compute(), here.predict(X), rtol=1e-8,
                               atol=1e-10)


def test_dsg_classifier_on_a_dask_array_and_its_probabilities() -> None:
    X, y = _rows()
    labels = (y > np.median(y)).astype(int)
    Xd, yd = _dask(X, labels)
    params = {"n_iter": 100, "batch_size": 16, "random_state": 6}
    here = DSGClassifier(**params).fit(X, labels)
    there = DSGClassifier(**params).fit(Xd, yd)
    np.testing.assert_array_equal(there.classes_, here.classes_)
    assert _relative(here.coef_, there.coef_) <= 1e-8
    proba = there.predict_proba(Xd)
    assert isinstance(proba, da.Array) and proba.shape == (N, 2)
    np.testing.assert_allclose(proba.compute(), here.predict_proba(X), rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal(there.predict(Xd).compute(), here.predict(X))
    np.testing.assert_allclose(there.decision_function(Xd).compute(),
                               here.decision_function(X), rtol=1e-8, atol=1e-12)


def test_a_dask_dataframe_fits_as_its_array_and_refuses_text_columns_by_name() -> None:
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    X, y = _rows()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    ddf = dd.from_pandas(frame, npartitions=4)
    ys = dd.from_pandas(pd.Series(y, name="y"), npartitions=4)
    params = {"sampler": "uniform", "lam": 0.3, "n_components": 30, "random_state": 2}
    here = NystromRidge(**params).fit(X, y)
    there = NystromRidge(**params).fit(ddf, ys)
    assert _relative(here.coef_, there.coef_) <= 1e-8
    got = there.predict(ddf)
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(got.compute(), here.predict(X), rtol=1e-9, atol=1e-12)
    frame["colour"] = "red"
    with pytest.raises(DataError, match="colour"):
        NystromRidge(**params).fit(dd.from_pandas(frame, npartitions=2), ys)


def test_the_exact_ridges_and_gfc_gather_a_dask_array_that_fits() -> None:
    X, y = _rows()
    X, y = X[:300], y[:300]
    Xd, yd = da.from_array(X, chunks=(120, P)), da.from_array(y, chunks=120)
    for make in (lambda: KernelRidge(0.1), lambda: CenteredKernelRidge(0.1),
                 lambda: GreedyFeatureRegressor(6, n_passes=2, random_state=0)):
        here, there = make().fit(X, y), make().fit(Xd, yd)
        got = there.predict(Xd)
        assert isinstance(got, da.Array)
        np.testing.assert_allclose(got.compute(), here.predict(X), rtol=1e-10, atol=1e-12)


def test_the_exact_ridge_refuses_by_name_a_dask_array_too_large_before_computing_it(
        monkeypatch) -> None:
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", "0.05")  # 52 kB: below the 96 kB of X, y
    X, y = _rows()
    Xd, yd = _dask(X, y)
    count = Counter()
    for make in (lambda: CenteredKernelRidge(0.1),
                 lambda: GreedyFeatureRegressor(6, n_passes=2, random_state=0)):
        name = type(make()).__name__
        with pytest.raises(MemoryBudgetError, match=rf"{name} on 1,500 rows × 3 columns"):
            make().fit(count.wrap(Xd), yd)
    assert count.calls == 0


def test_mismatched_inputs_are_refused_clearly() -> None:
    X, y = _rows()
    Xd, yd = _dask(X, y)
    with pytest.raises(DataError, match="X has 1,500 rows and y 1,499"):
        NystromRidge().fit(Xd, yd[:-1])
    with pytest.raises(DataError, match="y is a Dask collection and X is not"):
        NystromRidge().fit(X, yd)
