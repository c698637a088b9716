"""The same rows give the same numbers wherever they live: one ``.npy`` file and one CSV read
into memory, one Parquet file (read into memory or kept), sixteen of unequal sizes (a 1-row
file, one bigger than a row block) and a Zarr store, kept in their partitions, give
bit-identical ``nystrom`` and ``learning-curve`` tables — in this process, in a process pool
and on a LocalCluster. An array in memory is one part of the same implementation, split by
the same per-row keys. What makes it hold: parts cut at canonical row-block boundaries and
every sum over rows taken per block and combined in one tree over the block numbers
(kernel_lab.core.rows.blocks); the block size is 256 here, so the 3,000 rows make 12
blocks, most of them straddling a file boundary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")
zarr = pytest.importorskip("zarr")

from kernel_lab.core.rows import blocks  # noqa: E402
from kernel_lab.engine.runner import run_experiment  # noqa: E402

N, P = 3_000, 5
BLOCK = 256
#: Rows per file of the 16-file folder: unequal, with 1-row files and files over a block.
SIZES = [1, 900, 17, 300, 1, 250, 64, 333, 5, 400, 20, 128, 77, 200, 5, 299]
NYSTROM = {"samplers": ["uniform", "recursive-rls", "recursive-rls-lambda", "rp-cholesky",
                        "rff"], "rls_lams": "3,1", "sizes": "10,40",
           "trials": 2, "eval_points": 300, "lam": 0.1, "seed": 5}
CURVE = {"loss": "squared", "n_iter": 60, "batch_size": 16, "features_per_iter": 4,
         "points": 4, "seed": 5}
#: Summaries that say where the rows live or how long things took, not what was computed.
NOT_NUMBERS = ("partitions", "timings", "time")


def _rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(43)
    X = rng.uniform(-1, 1, size=(N, P)) * np.arange(1, P + 1)
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=N)
    return X, y


def _frame(X: np.ndarray, y: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(P)])
    frame["y"] = y
    return frame


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The same rows as one Parquet file, 16 Parquet files and a Zarr store."""
    assert sum(SIZES) == N
    X, y = _rows()
    root = tmp_path_factory.mktemp("same")
    one = root / "one"
    one.mkdir()
    _frame(X, y).to_parquet(one / "all.parquet")
    many = root / "many"
    many.mkdir()
    start = 0
    for k, size in enumerate(SIZES):
        _frame(X[start:start + size], y[start:start + size]).to_parquet(
            many / f"part-{k:02d}.parquet")
        start += size
    store = root / "rows.zarr"
    group = zarr.open_group(str(store), mode="w")
    group.create_array("X", data=X, chunks=(700, P))
    group.create_array("y", data=y, chunks=(700,))
    npy = root / "rows.npy"
    np.save(npy, np.column_stack([X, y]))
    csv = root / "rows.csv"
    _frame(X, y).to_csv(csv, index=False, float_format="%.17g")
    return {"one": str(one), "many": str(many), "zarr": str(store), "npy": str(npy),
            "csv": str(csv)}


#: How each source is opened: kept in its partitions, or read into memory (one part).
OPEN = {"one": "partitions=keep", "many": "partitions=keep", "zarr": "partitions=keep",
        "npy": "", "csv": "target=y", "one-loaded": "partitions=load"}


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "ROW_BLOCK", BLOCK)


def _run(name: str, params: dict, path: str, how: str = "partitions=keep", **backend
         ) -> object:
    return run_experiment(name, params, data=f"{path}:{how}" if how else path, **backend)


def _numbers(result) -> dict[str, np.ndarray]:
    """Every table column and numeric summary of a run, but times and part counts."""
    out = {f"table:{k}": np.asarray(v, dtype=float) for k, v in result.table.items()
           if not any(w in k for w in NOT_NUMBERS)}
    for k, v in result.summaries.items():
        if any(w in k for w in NOT_NUMBERS):
            continue
        if isinstance(v, int | float | np.number) and not isinstance(v, bool):
            out[f"summary:{k}"] = np.asarray(float(v))
    return out


def _assert_same(a, b, label: str) -> None:
    x, y = _numbers(a), _numbers(b)
    assert x.keys() == y.keys(), label
    differ = [k for k in x if not np.array_equal(x[k], y[k], equal_nan=True)]
    assert not differ, f"{label}: {differ[:8]} differ"


@pytest.mark.parametrize("name, params", [("nystrom", NYSTROM), ("learning-curve", CURVE)],
                         ids=["nystrom", "learning-curve"])
def test_npy_csv_one_file_sixteen_files_and_zarr_give_the_same_bits(sources, small_blocks,
                                                                     name, params) -> None:
    runs = {where: _run(name, params, sources[where.removesuffix("-loaded")], how)
            for where, how in OPEN.items()}
    numbers = _numbers(runs["npy"])
    assert any(k.startswith("table:") for k in numbers)
    errors = [k for k in numbers if k.startswith("table:") and ("error" in k or "rmse" in k)]
    assert errors and all(np.isfinite(numbers[k]).any() for k in errors if "krr" not in k)
    for where in OPEN:
        if where != "npy":
            _assert_same(runs["npy"], runs[where], f"{name}: .npy in memory vs {where}")
    # read as parts of whole 256-row blocks: one per file in which a block starts (9 of
    # the 16 files; each of the 5 Zarr chunks of 700 rows); in memory, one part
    assert runs["many"].summaries["partitions"] == 9
    assert runs["zarr"].summaries["partitions"] == 5
    assert runs["npy"].summaries["partitions"] == runs["csv"].summaries["partitions"] == 1


def test_a_file_on_either_side_of_the_keep_threshold_gives_the_same_numbers(
        sources, small_blocks, monkeypatch) -> None:
    """partitions=auto reads a source whole below a size and keeps it in partitions above:
    which side a file falls on changes where its rows live, never its numbers."""
    from kernel_lab.data import lazy

    params = {**NYSTROM, "samplers": ["uniform", "recursive-rls"], "trials": 1}
    path = sources["many"]
    monkeypatch.setattr(lazy, "WHOLE_BYTES", 1 << 40)
    whole = _run("nystrom", params, path, "partitions=auto")
    monkeypatch.setattr(lazy, "WHOLE_BYTES", 1)
    kept = _run("nystrom", params, path, "partitions=auto")
    assert whole.summaries["partitions"] == 1 and kept.summaries["partitions"] == 9
    _assert_same(whole, kept, "nystrom: the same folder read whole vs kept")


def test_a_process_pool_gives_the_bits_of_this_process(sources, small_blocks) -> None:
    params = {**NYSTROM, "samplers": ["uniform", "rp-cholesky"], "trials": 1}
    here = _run("nystrom", params, sources["npy"], "")
    there = _run("nystrom", params, sources["many"], backend="processes", workers=2)
    _assert_same(here, there, "nystrom: .npy here vs 16 files in a process pool")


def test_the_block_size_is_what_defines_the_numbers(sources, monkeypatch) -> None:
    """Another block size adds in another order: the last bits move (so the equality above
    is the blocks' doing, not a coincidence of small data), the values stay close."""
    params = {**NYSTROM, "samplers": ["uniform"], "trials": 1}
    monkeypatch.setattr(blocks, "ROW_BLOCK", BLOCK)
    a = _numbers(_run("nystrom", params, sources["many"]))
    monkeypatch.setattr(blocks, "ROW_BLOCK", 128)
    b = _numbers(_run("nystrom", params, sources["many"]))
    differ = [k for k in a if not np.array_equal(a[k], b[k], equal_nan=True)]
    assert differ
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-9, atol=1e-12, err_msg=k)


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("distributed")
    from kernel_lab.engine.executors import DaskExecutor

    ex = DaskExecutor(workers=2)
    yield ex
    ex.close()


def test_a_local_cluster_gives_the_bits_of_this_process(sources, small_blocks, cluster
                                                       ) -> None:
    params = {**NYSTROM, "samplers": ["uniform", "recursive-rls"], "trials": 1}
    here = _run("nystrom", params, sources["npy"], "")
    there = _run("nystrom", params, sources["many"], backend="dask",
                 scheduler=cluster.client.scheduler.address)
    _assert_same(here, there, "nystrom: 1 file here vs 16 files on a LocalCluster")
    here = _run("learning-curve", CURVE, sources["csv"], "target=y")
    there = _run("learning-curve", CURVE, sources["many"], backend="dask",
                 scheduler=cluster.client.scheduler.address)
    _assert_same(here, there, "learning-curve: Zarr here vs 16 files on a LocalCluster")


@pytest.mark.slow
def test_every_sampler_on_a_local_cluster_gives_the_bits_of_this_process(
        sources, small_blocks, cluster) -> None:
    params = {**NYSTROM, "samplers": ["uniform", "exact-rls", "recursive-rls",
                                      "recursive-rls-fast", "recursive-rls-lambda",
                                      "rp-cholesky", "rff", "rff-orthogonal"],
              "rls_lams": "3,1"}
    here = _run("nystrom", params, sources["zarr"])
    for where in ("one", "many", "zarr"):
        there = _run("nystrom", params, sources[where], backend="dask",
                     scheduler=cluster.client.scheduler.address)
        _assert_same(here, there, f"nystrom: Zarr here vs {where} on a LocalCluster")


@pytest.mark.slow
def test_an_external_scheduler_gives_the_bits_of_an_array_in_memory(sources, small_blocks
                                                                    ) -> None:
    """`dask scheduler` and two `dask worker` processes started apart from this one (as a
    user's own cluster is): the 16 files there give the numbers of the ``.npy`` here."""
    pytest.importorskip("distributed")
    from test_cluster import _external  # the scheduler and workers, killed at the end

    params = {**NYSTROM, "samplers": ["uniform", "recursive-rls", "rp-cholesky"],
              "trials": 1}
    here = {"nystrom": _run("nystrom", params, sources["npy"], ""),
            "learning-curve": _run("learning-curve", CURVE, sources["npy"], "")}
    with _external(2) as (c, _):
        address = c.client.scheduler.address
        there = {"nystrom": _run("nystrom", params, sources["many"], backend="dask",
                                 scheduler=address),
                 "learning-curve": _run("learning-curve", CURVE, sources["many"],
                                        backend="dask", scheduler=address)}
    for name in here:
        _assert_same(here[name], there[name], f"{name}: .npy here vs 16 files on an "
                                               "external scheduler")


@pytest.mark.slow
@pytest.mark.parametrize("block", [64, BLOCK])
def test_blocked_rp_cholesky_has_the_same_pivots_in_a_pool_and_on_a_local_cluster(
        monkeypatch, block, cluster) -> None:
    """RP-Cholesky with proposals in blocks (forced: these rows are too few for the size
    rule to choose it; i.i.d. proposals, several rounds): the same pivots, bit for bit and
    in the order accepted, on one part here, on the 16 unequal parts of SIZES, on parts
    cut at block boundaries, in a process pool and on a LocalCluster."""
    from kernel_lab.core.kernels import GaussianKernel
    from kernel_lab.core.nystrom.landmarks import rp_cholesky_landmarks
    from kernel_lab.core.rows.mapreduce import LocalParts, RowPlan, array_parts
    from kernel_lab.engine.dask_parts import DaskParts
    from kernel_lab.engine.pool_parts import PoolParts

    monkeypatch.setattr(blocks, "ROW_BLOCK", block)
    X, y = _rows()
    plan = RowPlan.split(5, N, 0.25)
    ends = np.unique(np.append(np.cumsum(SIZES)[:-1] // block * block, N))
    aligned = np.diff(np.concatenate([[0], ends[ends > 0]])).tolist()
    rounds: list[str] = []

    def pivots(parts, progress=None):
        got = rp_cholesky_landmarks(parts, plan, GaussianKernel(2.0), 120, 7, progress,
                                    one_at_a_time=False)
        return got.order, got.X

    order, XS = pivots(LocalParts(array_parts(X, y, 1)), lambda f, m: rounds.append(m))
    assert len(rounds) >= 2 and np.unique(order).size == 120
    for name, parts in [("16 unequal parts", LocalParts(array_parts(X, y, SIZES))),
                        (f"{len(aligned)} aligned parts", LocalParts(array_parts(X, y,
                                                                                 aligned))),
                        ("a process pool", PoolParts(array_parts(X, y, SIZES), 2)),
                        ("a LocalCluster", DaskParts(array_parts(X, y, SIZES),
                                                     cluster.client))]:
        got_order, got_X = pivots(parts)
        np.testing.assert_array_equal(got_order, order, err_msg=name)
        np.testing.assert_array_equal(got_X, XS, err_msg=name)
