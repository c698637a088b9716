"""Data kept in partitions answer ``X_train``/``y_train``/``X_test``/``y_test`` as a data set
in memory does: the prepared rows in global order, gathered once after a memory check, and
refused by memory — naming the data, the size and the seeded sample — when they do not
fit. So the experiments that need every row at once run on a small partitioned set, with
the numbers of the same rows in memory."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core.errors import MemoryBudgetError
from kernel_lab.core.rows import (
    LocalParts,
    PartitionedData,
    RowPlan,
    align_parts,
    array_parts,
    blocks,
)
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.core.rows.prepare import standardize_plan
from kernel_lab.engine.runner import run_experiment

N, P = 300, 3
#: Rows per canonical block here: 300 rows make 5 blocks, so three files are three parts.
BLOCK = 64


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(blocks, "ROW_BLOCK", BLOCK)


def _rows(seed: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, P)) * [1.0, 3.0, 0.5] + [0.0, 2.0, -1.0]
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=N)


def _partitioned(pieces: int | list[int]) -> PartitionedData:
    X, y = _rows()
    # parts of whole blocks, as a folder is opened: the same bits however the files are cut
    parts = LocalParts(align_parts(array_parts(X, y, pieces), N, BLOCK))
    plan = standardize_plan(parts, RowPlan.split(7, N, 0.3))
    return PartitionedData(parts, plan, ["a", "b", "c"], "y", name="rows.parquet")


def test_the_rows_are_the_prepared_rows_in_global_order():
    X, y = _rows()
    data = _partitioned([50, 170, 80])
    train = np.flatnonzero(data.plan.is_train(np.arange(N)))
    test = np.flatnonzero(data.plan.is_test(np.arange(N)))
    assert train.size == data.n_train == 210 and test.size == data.n_test == 90
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)   # independent: numpy
    np.testing.assert_allclose(data.X_train, (X[train] - mean) / std, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(data.X_test, (X[test] - mean) / std, rtol=1e-12, atol=1e-12)
    assert np.array_equal(data.y_train, y[train]) and np.array_equal(data.y_test, y[test])
    assert data.X_train is data.X_train  # gathered once
    one = _partitioned(1)
    assert np.array_equal(one.X_train, data.X_train) and np.array_equal(one.X_test, data.X_test)


def test_rows_that_do_not_fit_are_refused_by_name(monkeypatch):
    data = _partitioned(3)
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", str(10_000 / 2**20))  # 10,000 bytes
    with pytest.raises(MemoryBudgetError) as err:
        data.X_train  # noqa: B018 (the property gathers)
    text = str(err.value)
    # 2 copies × 210 rows × (3 + 1) values × 8 bytes while they are joined
    assert "all 210 training rows of rows.parquet" in text and "13.1 KiB" in text
    assert "subsample=N" in text
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", "100")
    assert data.X_train.shape == (210, 3)


@pytest.mark.parametrize("name,params", [
    ("krr-path", {"n_lams": 4}),
    ("spectrum", {}),
    ("ckrr-risk", {"kernels": ["linear"], "trials": 2, "n_lams": 4}),
    ("gfc", {"n_features": 6, "n_passes": 2, "points": 2, "bandwidths": 2}),
])
def test_an_exact_experiment_runs_on_partitions_as_on_the_same_rows_in_memory(name, params):
    data = _partitioned([50, 170, 80])
    memory = Dataset(data.X_train.copy(), data.y_train.copy(), data.X_test.copy(),
                     data.y_test.copy(), ["a", "b", "c"], "y", name="memory")
    # the same global rows: what keyed choices (ckrr's trials, GFC's rows) key on
    memory.plan = data.plan
    kept = run_experiment(name, params, data=data)
    same = run_experiment(name, params, data=memory)
    assert kept.table.keys() == same.table.keys()
    for key, values in kept.table.items():
        if not key.startswith("time"):
            np.testing.assert_array_equal(values, same.table[key], err_msg=key)
