"""Whole runs on data kept in partitions: the same rows give the same numbers in memory (one
piece, this process), as a folder of Parquet files read here, and on a Dask cluster."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("distributed")

import itertools

import pandas as pd

from kernel_lab.core.errors import DataError, MemoryBudgetError, ParameterError
from kernel_lab.core.rows import (
    LocalParts,
    PartitionedData,
    RowPlan,
    array_parts,
    standardize_plan,
)
from kernel_lab.engine.runner import run_experiment

N, P = 1500, 4
NYSTROM = {"samplers": ["uniform", "recursive-rls", "rp-cholesky", "rff"], "sizes": "10,30",
           "trials": 2, "eval_points": 300, "lam": 0.1, "sigma": 1.5, "seed": 3}
CURVE = {"loss": "squared", "n_iter": 60, "batch_size": 16, "features_per_iter": 4,
         "points": 5, "sigma": 1.5, "seed": 3}


def _rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, size=(N, P))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=N)
    return X, y


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The rows as 5 Parquet files of unequal sizes."""
    X, y = _rows()
    path = tmp_path_factory.mktemp("parquet") / "rows"
    path.mkdir()
    cuts = [0, 170, 500, 800, 1234, N]
    for k, (a, b) in enumerate(itertools.pairwise(cuts)):
        frame = pd.DataFrame(X[a:b], columns=[f"x{j + 1}" for j in range(P)])
        frame["y"] = y[a:b]
        frame.to_parquet(path / f"part-{k:02d}.parquet")
    return str(path)


def _in_memory(seed: int) -> PartitionedData:
    X, y = _rows()
    parts = LocalParts(array_parts(X, y, 1))
    plan = standardize_plan(parts, RowPlan.split(seed, N, 0.25))
    return PartitionedData(parts, plan, [f"x{j + 1}" for j in range(P)], "y", name="memory")


def _same_tables(a: dict[str, np.ndarray], b: dict[str, np.ndarray], keys: list[str]) -> None:
    for key in keys:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-8, atol=1e-12, err_msg=key)


def _keys(table: dict[str, np.ndarray], *prefixes: str) -> list[str]:
    out = [k for k in table if k.startswith(prefixes) and "time" not in k]
    assert out, f"no columns {prefixes} in {sorted(table)}"
    return out


@pytest.fixture(scope="module")
def cluster():
    from kernel_lab.engine.executors import DaskExecutor

    ex = DaskExecutor(workers=2)
    yield ex
    ex.close()


def test_nystrom_in_memory_parquet_and_cluster_agree(folder: str, cluster) -> None:
    memory = run_experiment("nystrom", NYSTROM, data=_in_memory(3))
    local = run_experiment("nystrom", NYSTROM, data=f"{folder}:partitions=keep")
    assert local.data["notes"] and "partitions" in " ".join(local.data["notes"])
    keys = _keys(memory.table, "spectral", "trace", "rmse", "s[", "evals")
    _same_tables(memory.table, local.table, keys)
    remote = run_experiment("nystrom", NYSTROM, data=f"{folder}:partitions=keep",
                            backend="dask",
                            scheduler=cluster.client.scheduler.address)
    _same_tables(memory.table, remote.table, keys)
    # and the spectral error falls as landmarks are added (the runs measure something)
    for sampler in ("uniform", "recursive-rls", "rp-cholesky"):
        col = memory.table[f"spectral_median[{sampler}]"]
        assert col[1] < col[0], sampler


def test_learning_curve_in_memory_parquet_and_cluster_agree(folder: str, cluster) -> None:
    memory = run_experiment("learning-curve", CURVE, data=_in_memory(3))
    local = run_experiment("learning-curve", CURVE, data=f"{folder}:partitions=keep")
    remote = run_experiment("learning-curve", CURVE, data=f"{folder}:partitions=keep",
                            backend="dask",
                            scheduler=cluster.client.scheduler.address)
    keys = [k for k in memory.table if "error" in k or "rff" in k or "nystrom" in k]
    assert keys
    _same_tables(memory.table, local.table, keys)
    _same_tables(memory.table, remote.table, keys)


def test_an_exact_experiment_on_partitions_offers_a_seeded_sample(
        folder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the 1,125 training rows fit: the exact experiment reads them and runs
    kept = run_experiment("krr-path", {"n_lams": 4}, data=f"{folder}:partitions=keep")
    assert kept.data["n_train"] == 1125 and np.isfinite(kept.table["test_mse_krr"]).all()
    # they do not fit a budget below 2 × 1,125 × 5 × 8 bytes: refused by memory, the
    # seeded sample offered
    with monkeypatch.context() as mp:
        mp.setenv("KERNEL_LAB_MEMORY_MB", str(50_000 / 2**20))
        with pytest.raises(MemoryBudgetError, match=r"all 1,125 training rows.*subsample=N"):
            run_experiment("krr-path", {}, data=f"{folder}:partitions=keep")
    # the seeded sample: the same rows wherever the data live
    a = run_experiment("krr-path", {"seed": 2}, data=f"{folder}:subsample=300")
    b = run_experiment("krr-path", {"seed": 2}, data=f"{folder}:subsample=300,partitions=keep")
    assert a.data["n_train"] + a.data["n_test"] == 300
    for key in a.table:
        np.testing.assert_allclose(a.table[key], b.table[key], rtol=1e-10, err_msg=key)


def test_a_small_folder_loads_as_an_ordinary_table(folder: str) -> None:
    r = run_experiment("krr-path", {"seed": 1}, data=folder)
    assert r.data["n_train"] + r.data["n_test"] == N


def test_a_text_column_in_one_file_is_named(tmp_path) -> None:
    X, y = _rows()
    for k in range(2):
        frame = pd.DataFrame(X[k * 10:(k + 1) * 10], columns=[f"x{j + 1}" for j in range(P)])
        frame["y"] = y[k * 10:(k + 1) * 10]
        if k == 1:
            frame["x2"] = "text"
        frame.to_parquet(tmp_path / f"f{k}.parquet")
    with pytest.raises(DataError, match=r"f1\.parquet"):
        run_experiment("nystrom", NYSTROM, data=f"{tmp_path}:partitions=keep")


def test_a_zarr_store_gives_the_numbers_of_the_same_rows_in_memory(tmp_path) -> None:
    zarr = pytest.importorskip("zarr")
    X, y = _rows()
    group = zarr.open_group(str(tmp_path / "rows.zarr"), mode="w")
    group.create_array("X", data=X, chunks=(400, P))  # 4 chunks: 400, 400, 400, 300 rows
    group.create_array("y", data=y, chunks=(400,))
    memory = run_experiment("nystrom", NYSTROM, data=_in_memory(3))
    store = run_experiment("nystrom", NYSTROM,
                           data=f"{tmp_path / 'rows.zarr'}:partitions=keep")
    # the 1,500 rows are one canonical row block: one part, read from the 4 chunks
    assert store.summaries["partitions"] == 1
    assert "4 chunks" in " ".join(store.data["notes"])
    _same_tables(memory.table, store.table,
                 _keys(memory.table, "spectral", "trace", "rmse", "s[", "evals"))


def test_a_file_rewritten_between_runs_is_read_again(tmp_path) -> None:
    """A run keeps the partitions it reads for its later passes; a file rewritten since (same
    rows, other values) is read afresh by the next run, never served from what was kept."""
    X, y = _rows()
    for k in range(2):
        frame = pd.DataFrame(X[k * 700:(k + 1) * 700], columns=[f"x{j + 1}" for j in range(P)])
        frame["y"] = y[k * 700:(k + 1) * 700]
        frame.to_parquet(tmp_path / f"f{k}.parquet")
    params = {"samplers": ["uniform"], "sizes": "10", "trials": 1, "eval_points": 100}
    first = run_experiment("nystrom", params, data=f"{tmp_path}:partitions=keep,standardize=0")
    frame = pd.read_parquet(tmp_path / "f0.parquet") * 3.0
    frame.to_parquet(tmp_path / "f0.parquet")
    second = run_experiment("nystrom", params, data=f"{tmp_path}:partitions=keep,standardize=0")
    assert second.table["trace_median[uniform]"][0] != first.table["trace_median[uniform]"][0]


def test_folder_options_are_refused_where_they_do_not_apply(folder: str, tmp_path) -> None:
    X, y = _rows()
    path = tmp_path / "t.csv"
    pd.DataFrame({"a": X[:50, 0], "b": X[:50, 1], "y": y[:50]}).to_csv(path, index=False)
    with pytest.raises(ParameterError, match="partitions= applies to a folder"):
        run_experiment("krr-path", {}, data=f"{path}:partitions=keep")
    # features= applies to every format now: a table's own columns
    assert run_experiment("krr-path", {"n_lams": 3}, data=f"{path}:features=a").data["p"] == 1
    # drop_nan applies to a folder kept in partitions too: with no row to drop, the same
    # split and the same numbers
    small = {**NYSTROM, "samplers": ["uniform"], "sizes": "10", "trials": 1}
    kept = run_experiment("nystrom", small, data=f"{folder}:partitions=keep")
    dropped = run_experiment("nystrom", small, data=f"{folder}:partitions=keep,drop_nan=1")
    assert dropped.table.keys() == kept.table.keys()
    for name in kept.table:
        if not name.startswith("time"):
            np.testing.assert_array_equal(dropped.table[name], kept.table[name], err_msg=name)


def test_a_session_keeps_a_folders_options(folder: str, tmp_path) -> None:
    from kernel_lab.data.source import DataSource
    from kernel_lab.engine.session import Session, load_session, save_session
    from kernel_lab.engine.spec import RunSpec

    source = DataSource.from_spec(f'{folder}:partitions=keep,features="x1,x2"')
    spec = RunSpec("nystrom", {"seed": 4}, source)
    path = save_session(Session(spec=spec), tmp_path / "s.json")
    again = load_session(path).spec.data_source()
    assert again.options["partitions"] == "keep" and again.options["features"] == "x1,x2"
