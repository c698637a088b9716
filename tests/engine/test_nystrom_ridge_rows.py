"""``NystromRidge`` fits a data set of the row layer where its rows are: the same rows as an
array in memory and as a folder of Parquet files of unequal sizes kept in its partitions on a
LocalCluster give the same landmarks, bandwidth and coefficients (to 1e-8 relative) — the
landmarks and the bandwidth's rows are keyed per row, and the ridge is the features' centred
sums reduced over the parts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")

from kernel_lab.core.models.nystrom import NystromRidge, row_set
from kernel_lab.core.rows import LocalParts, blocks
from kernel_lab.data.source import DataSource

N, P = 2_500, 4
#: Rows per canonical block here: 10 blocks, most of them straddling a file boundary.
BLOCK = 256
#: Rows per file: unequal, with a 1-row file and files over the canonical row block.
SIZES = [1, 700, 13, 400, 250, 1, 900, 235]


def _rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, size=(N, P)) * np.arange(1, P + 1)
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=N)
    return X, y


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    assert sum(SIZES) == N
    X, y = _rows()
    root = tmp_path_factory.mktemp("nystrom_rows")
    start = 0
    for k, size in enumerate(SIZES):
        frame = pd.DataFrame(X[start:start + size], columns=[f"x{j + 1}" for j in range(P)])
        frame["y"] = y[start:start + size]
        frame.to_parquet(root / f"part-{k:02d}.parquet")
        start += size
    return str(root)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "ROW_BLOCK", BLOCK)


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    from kernel_lab.engine.executors import DaskExecutor

    ex = DaskExecutor(workers=2)
    yield ex.client
    ex.close()


def _open(folder: str, make_parts, options: str = "test_fraction=0,standardize=false"):
    return DataSource.from_spec(f"{folder}:partitions=keep,{options}").open(
        seed=3, make_parts=make_parts)


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / np.max(np.abs(a)))


def test_an_array_and_a_parquet_folder_on_a_local_cluster_give_the_same_coefficients(
        folder, client) -> None:
    from kernel_lab.engine.dask_parts import DaskParts

    X, y = _rows()
    data = _open(folder, lambda parts: DaskParts(parts, client))
    assert not data.in_memory and len(data.parts.parts) > 1
    assert row_set(X) is None and row_set(data) == (data.parts, data.plan)
    for centered in (True, False):
        params = {"sampler": "uniform", "lam": 0.5, "n_components": 60, "random_state": 11,
                  "centered": centered}
        here = NystromRidge(**params).fit(X, y)
        there = NystromRidge(**params).fit(data)
        assert here.solver_ == there.solver_ == "direct"
        np.testing.assert_array_equal(there.features_.landmark_indices_,
                                      here.features_.landmark_indices_)
        np.testing.assert_array_equal(there.features_.landmarks_, here.features_.landmarks_)
        assert there.features_.kernel_.params() == here.features_.kernel_.params()
        assert _relative(here.coef_, there.coef_) <= 1e-8
        assert abs(here.intercept_ - there.intercept_) <= 1e-8 * max(abs(here.intercept_), 1)
        assert (there.intercept_ == 0.0) == (not centered)
        assert _relative(here.predict(X[:300]), there.predict(X[:300])) <= 1e-8


def test_conjugate_gradients_on_a_folder_solve_the_same_problem(folder) -> None:
    X, y = _rows()
    data = _open(folder, LocalParts)
    params = {"sampler": "uniform", "lam": 0.5, "n_components": 40, "random_state": 2,
              "cg_tol": 1e-12, "cg_max_iter": 500}
    direct = NystromRidge(**params, solver="direct").fit(X, y)
    cg = NystromRidge(**params, solver="cg").fit(data)
    assert cg.solver_ == "cg" and cg.converged_ and cg.n_iter_ >= 1
    assert _relative(direct.coef_, cg.coef_) <= 1e-8


def test_a_split_and_standardised_folder_fits_its_prepared_training_rows(folder) -> None:
    """The training rows of a folder opened with a split and standardisation: the fit is
    that of the prepared training rows gathered into an array, with the landmarks keyed by
    their global row indices (sorted, all of them training rows)."""
    data = _open(folder, LocalParts, "test_fraction=0.2")
    model = NystromRidge(sampler="uniform", lam=1.0, n_components=30,
                         random_state=5).fit(data)
    index = model.features_.landmark_indices_
    assert np.all(np.diff(index) > 0) and data.plan.is_train(index).all()
    X, y = data.X_train, data.y_train
    rows = np.flatnonzero(data.plan.is_train(np.arange(data.plan.n)))
    np.testing.assert_array_equal(model.features_.landmarks_,
                                  X[np.searchsorted(rows, index)])
    F = model.features_.transform(X)
    from kernel_lab.core.models.feature_ridge import feature_ridge

    coef, intercept = feature_ridge(F, y, 1.0)
    assert _relative(coef, model.coef_) <= 1e-8
    assert abs(intercept - model.intercept_) <= 1e-8 * abs(intercept)
    assert model.predict(data.X_test).shape == (data.n_test,)


def test_dask_arrays_of_the_folder_fit_and_predict_on_worker_processes(folder, client
                                                                        ) -> None:
    """The same rows as Dask arrays read from the folder (``dask.dataframe``), on the
    cluster's worker processes (the active client): the tasks — the chunks' calls and the
    fitted estimator of ``predict`` — travel pickled, and give the numbers of the array."""
    dd = pytest.importorskip("dask.dataframe")
    import dask.array as da

    frame = dd.read_parquet(folder)
    Xd = frame[[f"x{j + 1}" for j in range(P)]].to_dask_array()
    yd = frame["y"].to_dask_array()
    X, y = _rows()
    params = {"sampler": "recursive-rls", "lam": 0.5, "n_components": 50, "random_state": 8}
    here = NystromRidge(**params).fit(X, y)
    there = NystromRidge(**params).fit(Xd, yd)
    np.testing.assert_array_equal(there.features_.landmark_indices_,
                                  here.features_.landmark_indices_)
    assert _relative(here.coef_, there.coef_) <= 1e-8
    got = there.predict(Xd)
    assert isinstance(got, da.Array)
    assert _relative(here.predict(X), got.compute()) <= 1e-8


def test_rff_ridge_and_dsg_fit_the_folder_kept_in_its_partitions_as_the_array(folder
                                                                              ) -> None:
    """The other estimators with a row-layer path take the folder opened by the data layer
    as X alone, as NystromRidge does: the same rows give the same model."""
    from kernel_lab.core.models import DSGRegressor, RFFRidge

    X, y = _rows()
    data = _open(folder, LocalParts)
    params = {"lam": 0.5, "n_components": 50, "random_state": 3}
    here, there = RFFRidge(**params).fit(X, y), RFFRidge(**params).fit(data)
    assert there.features_.kernel_.params() == here.features_.kernel_.params()
    assert _relative(here.coef_, there.coef_) <= 1e-8
    params = {"n_iter": 80, "batch_size": 16, "random_state": 3}
    here, there = DSGRegressor(**params).fit(X, y), DSGRegressor(**params).fit(data)
    assert _relative(here.coef_, there.coef_) <= 1e-8
    assert _relative(here.predict(X[:200]), there.predict(X[:200])) <= 1e-8


def test_a_zarr_store_opened_by_the_data_layer_fits_as_the_array(tmp_path) -> None:
    """A Zarr store kept in its chunks is a row set too: NystromRidge, RFFRidge and DSG fit
    it as the same rows in memory."""
    zarr = pytest.importorskip("zarr")
    from kernel_lab.core.models import DSGRegressor, RFFRidge

    X, y = _rows()
    group = zarr.open_group(str(tmp_path / "rows.zarr"), mode="w")
    group.create_array("X", data=X, chunks=(700, P))
    group.create_array("y", data=y, chunks=(700,))
    data = DataSource.from_spec(f"{tmp_path / 'rows.zarr'}:partitions=keep,test_fraction=0,"
                                "standardize=false").open(seed=3, make_parts=LocalParts)
    assert not data.in_memory
    for make in (lambda: NystromRidge(sampler="uniform", n_components=40, random_state=1),
                 lambda: RFFRidge(n_components=40, random_state=1),
                 lambda: DSGRegressor(n_iter=60, batch_size=16, random_state=1)):
        here, there = make().fit(X, y), make().fit(data)
        assert _relative(here.predict(X[:300]), there.predict(X[:300])) <= 1e-8
