"""Reading a range of a partition's rows (what a part of whole row blocks reads of the
files after its own): the rows of a whole read, from a Parquet file's first pages, a Zarr
chunk or an array."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from kernel_lab.core.rows import align_parts  # noqa: E402
from kernel_lab.data.partitioned import open_partitioned  # noqa: E402


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({"a": rng.standard_normal(n), "b": rng.integers(0, 9, n),
                         "y": rng.standard_normal(n)})


def test_a_parquet_range_equals_the_rows_of_a_whole_read(tmp_path) -> None:
    rng = np.random.default_rng(2)
    frame = _frame(rng, 1000)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False),
                   tmp_path / "f.parquet", row_group_size=128)
    part = open_partitioned(tmp_path).parts[0]
    X, y = part.read()
    for lo, hi in [(0, 1), (0, 150), (0, 999), (10, 20), (900, 1000), (0, 1000)]:
        Xr, yr = part.read_range(lo, hi)
        np.testing.assert_array_equal(Xr, X[lo:hi])
        np.testing.assert_array_equal(yr, y[lo:hi])


def test_parts_of_whole_blocks_read_the_rows_of_the_files_in_order(tmp_path) -> None:
    rng = np.random.default_rng(3)
    sizes = [1, 300, 17, 1, 250, 64]
    frames = [_frame(rng, k) for k in sizes]
    for k, frame in enumerate(frames):
        frame.to_parquet(tmp_path / f"p{k}.parquet", index=False)
    source = open_partitioned(tmp_path)
    whole = pd.concat(frames, ignore_index=True)
    parts = align_parts(source.parts, source.n, 128)
    # files [0,1) [1,301) [301,318) [318,319) [319,569) [569,633); blocks start at 0, 128,
    # 256, 384, 512: the last part runs from 384 through the head of the last file
    assert [(p.start, p.rows) for p in parts] == [(0, 128), (128, 256), (384, 249)]
    for part in parts:
        X, y = part.read()
        rows = whole.iloc[part.start:part.start + part.rows]
        np.testing.assert_array_equal(X, rows[["a", "b"]].to_numpy(float))
        np.testing.assert_array_equal(y, rows["y"].to_numpy(float))


def test_a_zarr_range_equals_the_rows_of_a_whole_read(tmp_path) -> None:
    zarr = pytest.importorskip("zarr")
    rng = np.random.default_rng(4)
    X0, y0 = rng.standard_normal((90, 3)), rng.standard_normal(90)
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    group.create_array("X", data=X0, chunks=(40, 3))
    group.create_array("y", data=y0, chunks=(40,))
    source = open_partitioned(tmp_path / "s.zarr")
    second = source.parts[1]
    X, y = second.read_range(5, 30)
    np.testing.assert_array_equal(X, X0[45:70])
    np.testing.assert_array_equal(y, y0[45:70])
    parts = align_parts(source.parts, source.n, 32)
    got = np.concatenate([p.read()[0] for p in parts])
    np.testing.assert_array_equal(got, X0)
