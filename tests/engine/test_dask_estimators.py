"""The estimators on Dask arrays read from a Parquet folder, on a LocalCluster (the active
``distributed.Client``): fitted on the partitions where they are, the same predictions as
the NumPy fit of the same rows (1e-8), and ``predict`` of a Dask array a Dask array
computed on the workers, chunk by chunk.

The cluster runs in this process (``processes=False``: quick to start); the pickling of
the tasks to worker processes is covered by ``test_nystrom_ridge_rows.py``'s cluster."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")
distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")

from kernel_lab.core.models import DSGRegressor, NystromRidge  # noqa: E402

N, P = 200_000, 5
#: Rows per Parquet file: unequal, a one-row file among them.
SIZES = [60_001, 1, 39_998, 70_000, 30_000]
COLUMNS = [f"x{j + 1}" for j in range(P)]


def _rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, size=(N, P)) * np.arange(1, P + 1)
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=N)
    return X, y


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    assert sum(SIZES) == N
    X, y = _rows()
    root = tmp_path_factory.mktemp("dask_estimators")
    start = 0
    for k, size in enumerate(SIZES):
        frame = pd.DataFrame(X[start:start + size], columns=COLUMNS)
        frame["y"] = y[start:start + size]
        frame.to_parquet(root / f"part-{k:02d}.parquet")
        start += size
    return str(root)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _read(folder: str):
    """X and y as Dask arrays of unknown chunk sizes (Dask may join small files into one
    partition, and cut X and y alike or not): the estimators find the sizes."""
    frame = dd.read_parquet(folder)
    return frame[COLUMNS].to_dask_array(), frame["y"].to_dask_array()


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / np.max(np.abs(a)))


def test_nystrom_ridge_on_200k_rows_of_a_parquet_folder_predicts_as_the_numpy_fit(
        folder, client) -> None:
    X, y = _read(folder)
    there = NystromRidge(random_state=4).fit(X, y)
    assert there.solver_ == "direct"
    frame = pd.read_parquet(folder)
    Xn, yn = frame[COLUMNS].to_numpy(), frame["y"].to_numpy()
    np.testing.assert_array_equal(Xn, _rows()[0])
    here = NystromRidge(random_state=4).fit(Xn, yn)
    np.testing.assert_array_equal(there.features_.landmark_indices_,
                                  here.features_.landmark_indices_)
    got = there.predict(X)
    assert isinstance(got, da.Array) and len(got.chunks[0]) > 1
    assert got.chunks == (X.chunks[0],) and sum(X.chunks[0]) == N
    assert _relative(here.predict(Xn), got.compute()) <= 1e-8


def test_dsg_on_the_folder_trains_on_the_batches_of_the_array(folder, client) -> None:
    X, y = _read(folder)
    params = {"n_iter": 200, "batch_size": 32, "random_state": 3}
    there = DSGRegressor(**params).fit(X, y)
    here = DSGRegressor(**params).fit(*_rows())
    assert _relative(here.coef_, there.coef_) <= 1e-8
    assert there.offset_ == pytest.approx(here.offset_, rel=1e-12)
