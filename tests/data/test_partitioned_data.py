"""Partitioned data: a folder of Parquet files and a Zarr store open as parts (only
metadata read when opening), each part reads exactly its rows, rows are the same by
global index however the data are cut into files, and bad folders are refused naming the
file; a single .parquet file loads as an ordinary table, as the same data as CSV do."""

from __future__ import annotations

import pickle
import re
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import zarr
from numpy.testing import assert_array_equal

from kernel_lab.core.errors import DataError
from kernel_lab.core.rows import RowPlan, part_rows
from kernel_lab.data.partitioned import (
    ParquetPart,
    ZarrPart,
    is_partitioned,
    open_partitioned,
)
from kernel_lab.data.read import load_table


def frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Columns of the types a Parquet file holds: integers, floats, booleans; target y."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "count": rng.integers(0, 50, n).astype(np.int64),
        "size": rng.normal(size=n),
        "flag": rng.random(n) < 0.5,
        "y": rng.normal(size=n),
    })


def write_folder(folder, df: pd.DataFrame, sizes, name="part.{k}.parquet"):
    folder.mkdir(parents=True, exist_ok=True)
    start = 0
    for k, rows in enumerate(sizes):
        df.iloc[start:start + rows].to_parquet(folder / name.format(k=k), index=False)
        start += rows
    assert start == len(df)
    return folder


def as_float(df: pd.DataFrame) -> np.ndarray:
    return df.to_numpy(dtype=np.float64)


def gathered(table) -> tuple[np.ndarray, np.ndarray]:
    got = [part.read() for part in table.parts]
    return np.concatenate([x for x, _ in got]), np.concatenate([y for _, y in got])


# -- a folder of Parquet files ----------------------------------------------------------
def test_a_folder_opens_as_one_part_per_file_in_file_order(tmp_path):
    df = frame(23)
    folder = write_folder(tmp_path / "d", df, [7, 11, 5])
    table = open_partitioned(folder)
    assert [p.start for p in table.parts] == [0, 7, 18]
    assert [p.rows for p in table.parts] == [7, 11, 5]
    assert [p.index for p in table.parts] == [0, 1, 2]
    assert table.n == 23 and table.p == 3
    assert table.feature_names == ["count", "size", "flag"]
    assert table.target_name == "y"
    assert any("last column" in note and "'y'" in note for note in table.notes)
    assert table.nbytes == 23 * 4 * 8
    for part, (a, b) in zip(table.parts, [(0, 7), (7, 18), (18, 23)], strict=True):
        X, y = part.read()
        assert X.dtype == np.float64 and y.dtype == np.float64
        assert_array_equal(X, as_float(df.iloc[a:b, :3]))
        assert_array_equal(y, df["y"].to_numpy()[a:b])
        assert part.path.endswith(f"part.{part.index}.parquet")
        assert f"part.{part.index}.parquet" in part.describe()


def test_files_are_taken_in_natural_order_of_their_names(tmp_path):
    df = frame(12)
    folder = write_folder(tmp_path / "d", df, [1] * 12)  # part.0 … part.11
    table = open_partitioned(folder)
    names = [p.path.rsplit("/", 1)[-1] for p in table.parts]
    assert names == [f"part.{k}.parquet" for k in range(12)]  # part.2 before part.10
    assert_array_equal(gathered(table)[1], df["y"].to_numpy())


def test_the_same_rows_cut_into_other_files_are_the_same_rows_by_global_index(tmp_path):
    df = frame(40, seed=3)
    a = open_partitioned(write_folder(tmp_path / "a", df, [40]))
    b = open_partitioned(write_folder(tmp_path / "b", df, [3, 17, 1, 9, 10]))
    assert len(a.parts) == 1 and len(b.parts) == 5
    Xa, ya = gathered(a)
    for part in b.parts:
        X, y = part.read()
        assert_array_equal(X, Xa[part.start:part.start + part.rows])
        assert_array_equal(y, ya[part.start:part.start + part.rows])
    # the keyed split picks the same rows, with the same values, from either cut
    plan = RowPlan.split(seed=5, n=40, test_fraction=0.25)
    for which in ("train", "test"):
        rows_a = [part_rows(p, plan, which) for p in a.parts]
        rows_b = [part_rows(p, plan, which) for p in b.parts]
        assert_array_equal(np.concatenate([r.index for r in rows_a]),
                           np.concatenate([r.index for r in rows_b]))
        assert_array_equal(np.concatenate([r.X for r in rows_a]),
                           np.concatenate([r.X for r in rows_b]))


def test_opening_reads_no_data_and_parts_read_only_their_columns(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    df = frame(10)
    folder = write_folder(tmp_path / "d", df, [4, 6])
    calls = []
    original = pq.ParquetFile.read

    def spy(self, *args, **kwargs):
        calls.append(kwargs.get("columns", args[0] if args else None))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", spy)
    table = open_partitioned(folder, target="size", features=["flag", "count"])
    assert calls == []  # metadata and schemas only
    assert table.feature_names == ["flag", "count"] and table.target_name == "size"
    X, y = table.parts[1].read()
    # only its columns: one at a time, straight into the rows (Arrow holds one column)
    assert calls and {name for call in calls for name in call} == {"flag", "count", "size"}
    assert_array_equal(X, as_float(df[["flag", "count"]].iloc[4:]))
    assert_array_equal(y, df["size"].to_numpy()[4:])


def test_a_target_chosen_by_index_follows_the_table_readers(tmp_path):
    df = frame(6)
    folder = write_folder(tmp_path / "d", df, [6])
    table = open_partitioned(folder, target=0)
    assert table.target_name == "count"
    assert table.feature_names == ["size", "flag", "y"]


def test_parts_travel_by_pickle_and_read_the_same(tmp_path):
    df = frame(9)
    table = open_partitioned(write_folder(tmp_path / "d", df, [5, 4]))
    part = table.parts[1]
    assert isinstance(part, ParquetPart)
    copy = pickle.loads(pickle.dumps(part))
    assert copy == part
    for got, want in zip(copy.read(), part.read(), strict=True):
        assert_array_equal(got, want)


def test_missing_values_become_nan_and_are_filled_by_a_plan_that_fills_them(tmp_path):
    df = frame(10)
    df["count"] = df["count"].astype("Int64")
    df.loc[6, "count"] = pd.NA
    df.loc[2, "size"] = np.nan
    table = open_partitioned(write_folder(tmp_path / "d", df, [5, 5]))
    X, _ = table.parts[1].read()
    assert np.isnan(X[1, 0]) and np.isfinite(np.delete(X, 0, axis=1)).all()
    plan = RowPlan(seed=0, n=10, n_test=0, cut=None)
    with pytest.raises(DataError, match=r"part\.1\.parquet.*row 6\b"):
        part_rows(table.parts[1], plan)  # a plan without fill values: named, not guessed
    fill = np.array([100.0, 200.0, 300.0])
    rows = part_rows(table.parts[1], replace(plan, fill=fill))
    assert rows.X[1, 0] == 100.0 and np.isfinite(rows.X).all()


def test_the_task_is_classification_for_a_two_valued_target(tmp_path):
    df = frame(30)
    df["y"] = np.where(df["size"] > 0, 1.0, -1.0)
    assert open_partitioned(write_folder(tmp_path / "c", df, [10, 10, 10])).task == \
        "classification"
    assert open_partitioned(write_folder(tmp_path / "r", frame(30), [15, 15])).task == \
        "regression"
    same = df.assign(y=1.0)  # one value: not a classification
    assert open_partitioned(write_folder(tmp_path / "s", same, [30])).task == "regression"


def test_a_regression_target_is_told_by_the_column_statistics_without_reading(
        tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    table = open_partitioned(write_folder(tmp_path / "r", frame(30), [10, 10, 10]))
    calls = []
    original = pq.ParquetFile.read

    def spy(self, *args, **kwargs):
        calls.append(kwargs.get("columns"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", spy)
    assert table.task == "regression"
    assert calls == []  # three files' minima and maxima: more than two values
    df = frame(30)
    df["y"] = np.where(df["size"] > 0, 1.0, -1.0)
    two = open_partitioned(write_folder(tmp_path / "c", df, [10, 10, 10]))
    assert two.task == "classification"
    assert calls  # the statistics cannot tell two values from more: the column is read


def test_a_small_folder_reads_into_an_ordinary_table(tmp_path):
    df = frame(15)
    table = open_partitioned(write_folder(tmp_path / "d", df, [5, 5, 5]))
    assert table.fits_memory()
    plain = table.to_table()
    assert_array_equal(plain.X, as_float(df.iloc[:, :3]))
    assert_array_equal(plain.y, df["y"].to_numpy())
    assert plain.feature_names == table.feature_names and plain.target_name == "y"
    assert not table.fits_memory(budget=100)


def test_to_table_refuses_missing_values_naming_the_file(tmp_path):
    df = frame(10)
    df.loc[8, "y"] = np.nan
    table = open_partitioned(write_folder(tmp_path / "d", df, [5, 5]))
    with pytest.raises(DataError, match=r"^part\.1\.parquet: row 8 \(row 4 of this file\)"):
        table.to_table()
    dropped = table.to_table(nan_policy="drop")
    assert dropped.X[dropped.kept()].shape == (9, 3) and any("dropped 1" in n
                                                                  for n in dropped.notes)
    assert dropped.dropped.tolist() == [8]


# -- bad folders, each named ---------------------------------------------------------------
def test_a_file_with_another_column_type_is_named_with_the_column_and_types(tmp_path):
    df = frame(12)
    folder = write_folder(tmp_path / "d", df, [4, 4, 4])
    odd = df.iloc[4:8].assign(size=np.arange(4, dtype=np.int64))
    odd.to_parquet(folder / "part.1.parquet", index=False)
    with pytest.raises(DataError) as err:
        open_partitioned(folder)
    text = str(err.value)
    assert text.startswith("part.1.parquet: ")
    assert "'size'" in text and "int64" in text and "double" in text
    assert "part.0.parquet" in text  # the file it differs from
    assert err.value.path.endswith("part.1.parquet")


def test_a_file_missing_a_column_is_named(tmp_path):
    df = frame(12)
    folder = write_folder(tmp_path / "d", df, [4, 4, 4])
    df.iloc[8:].drop(columns="flag").to_parquet(folder / "part.2.parquet", index=False)
    with pytest.raises(DataError, match=r"^part\.2\.parquet: .*missing.*'flag'"):
        open_partitioned(folder)


def test_a_file_with_an_extra_column_is_named(tmp_path):
    df = frame(8)
    folder = write_folder(tmp_path / "d", df, [4, 4])
    df.iloc[4:].assign(extra=1.0).to_parquet(folder / "part.1.parquet", index=False)
    with pytest.raises(DataError, match=r"^part\.1\.parquet: .*'extra'"):
        open_partitioned(folder)


def test_a_text_column_is_refused_naming_it_and_the_way_to_leave_it_out(tmp_path):
    df = frame(8).assign(city=list("abcdabcd"))
    df = df[["count", "city", "size", "flag", "y"]]
    folder = write_folder(tmp_path / "d", df, [4, 4])
    with pytest.raises(DataError) as err:
        open_partitioned(folder)
    text = str(err.value)
    assert text.startswith("part.0.parquet: ") and "'city'" in text
    assert "features=" in text and "text" in text
    table = open_partitioned(folder, features=["count", "size", "flag"])  # the way out
    assert_array_equal(gathered(table)[0], as_float(df[["count", "size", "flag"]]))


def test_a_missing_target_lists_the_columns(tmp_path):
    folder = write_folder(tmp_path / "d", frame(8), [4, 4])
    with pytest.raises(DataError) as err:
        open_partitioned(folder, target="price")
    text = str(err.value)
    assert "'price'" in text and all(c in text for c in ("count", "size", "flag", "y"))
    assert "part.0.parquet" in text


def test_a_target_of_dates_is_refused_naming_its_type(tmp_path):
    df = frame(6).assign(y=pd.date_range("2024-01-01", periods=6))
    with pytest.raises(DataError, match=r"^part\.0\.parquet: the target column 'y' holds "
                                        r"timestamp.*neither numbers nor text"):
        open_partitioned(write_folder(tmp_path / "d", df, [3, 3]))


def test_an_unknown_feature_is_named(tmp_path):
    folder = write_folder(tmp_path / "d", frame(8), [4, 4])
    with pytest.raises(DataError, match=r"'weight'.*count, size, flag, y"):
        open_partitioned(folder, features=["size", "weight"])


def test_an_empty_folder_and_a_folder_without_parquet_files_are_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match=r"^empty: the folder is empty"):
        open_partitioned(empty)
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.csv").write_text("x,y\n1,2\n")
    with pytest.raises(DataError, match=r"^other: .*no \.parquet files.*a\.csv"):
        open_partitioned(other)


def test_a_damaged_file_in_a_folder_is_named(tmp_path):
    folder = write_folder(tmp_path / "d", frame(8), [4, 4])
    (folder / "part.2.parquet").write_bytes(b"PAR1 this is not a parquet file")
    with pytest.raises(DataError, match=r"^part\.2\.parquet: .*Parquet"):
        open_partitioned(folder)


def test_is_partitioned_tells_folders_and_stores_from_files(tmp_path):
    folder = write_folder(tmp_path / "d", frame(8), [4, 4])
    assert is_partitioned(folder)
    assert is_partitioned(write_zarr(tmp_path / "s.zarr", 10, 3, 4)[0])
    assert not is_partitioned(folder / "part.0.parquet")
    assert not is_partitioned(tmp_path / "nothing-here")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not is_partitioned(empty)


# -- a Zarr store ---------------------------------------------------------------------------
def write_zarr(path, n, p, chunk, names=None, target_name=None):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(n, p)), rng.normal(size=n)
    group = zarr.open_group(str(path), mode="w")
    group.create_array("X", data=X, chunks=(chunk, p))
    group.create_array("y", data=y, chunks=(chunk,))
    if names is not None:
        group.attrs["feature_names"] = names
    if target_name is not None:
        group.attrs["target_name"] = target_name
    return path, X, y


def test_a_zarr_store_opens_with_one_part_per_row_chunk(tmp_path):
    path, X, y = write_zarr(tmp_path / "s.zarr", 10, 3, 4, ["a", "b", "c"], "price")
    table = open_partitioned(path)
    assert [p.start for p in table.parts] == [0, 4, 8]
    assert [p.rows for p in table.parts] == [4, 4, 2]
    assert table.feature_names == ["a", "b", "c"] and table.target_name == "price"
    assert table.n == 10 and table.p == 3
    for part in table.parts:
        assert isinstance(part, ZarrPart)
        got_X, got_y = pickle.loads(pickle.dumps(part)).read()
        assert_array_equal(got_X, X[part.start:part.start + part.rows])
        assert_array_equal(got_y, y[part.start:part.start + part.rows])
        assert "s.zarr" in part.describe()
    assert_array_equal(table.to_table().X, X)


def test_a_zarr_store_without_names_gets_the_table_readers_names(tmp_path):
    path, X, _ = write_zarr(tmp_path / "s.zarr", 6, 2, 3)
    table = open_partitioned(path, features=["x2"])
    assert table.feature_names == ["x2"] and table.target_name == "y"
    assert_array_equal(gathered(table)[0], X[:, [1]])


def test_a_zarr_store_without_y_is_refused_naming_it(tmp_path):
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    group.create_array("X", data=np.ones((4, 2)), chunks=(2, 2))
    with pytest.raises(DataError, match=r"^s\.zarr: .*'y'.*X"):
        open_partitioned(tmp_path / "s.zarr")


def test_a_zarr_store_with_a_short_y_is_refused(tmp_path):
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    group.create_array("X", data=np.ones((4, 2)), chunks=(2, 2))
    group.create_array("y", data=np.ones(3), chunks=(2,))
    with pytest.raises(DataError, match=r"^s\.zarr: .*4 rows.*3 values"):
        open_partitioned(tmp_path / "s.zarr")


# -- a single .parquet file: an ordinary table ---------------------------------------------
def mixed_frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 30
    return pd.DataFrame({
        "rownames": np.arange(1, n + 1),  # R's row names: dropped as by the CSV reader
        "bill": rng.normal(40, 5, n).round(2),
        "island": rng.choice(["Biscoe", "Dream", "Torgersen"], n),
        "mass": rng.integers(3000, 6000, n),
        "species": rng.choice(["Adelie", "Gentoo"], n),
    })


def test_a_parquet_file_loads_as_the_same_table_as_its_csv(tmp_path):
    df = mixed_frame()
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet", index=False)
    for target in (None, "mass", 1):
        csv = load_table(tmp_path / "t.csv", target=target)
        pq = load_table(tmp_path / "t.parquet", target=target)
        assert_array_equal(pq.X, csv.X)
        assert_array_equal(pq.y, csv.y)
        assert pq.feature_names == csv.feature_names
        assert pq.target_name == csv.target_name and pq.classes == csv.classes
        assert pq.notes == csv.notes
    assert "island=Dream" in load_table(tmp_path / "t.parquet").feature_names
    dropped = load_table(tmp_path / "t.parquet", text_features="drop")
    assert dropped.feature_names == load_table(tmp_path / "t.csv",
                                               text_features="drop").feature_names


def test_missing_values_in_a_parquet_file_follow_the_nan_policy_of_csv(tmp_path):
    df = mixed_frame()
    df.loc[4, "bill"] = np.nan
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet", index=False)
    with pytest.raises(DataError, match=r"^t\.parquet: row 5: missing"):
        load_table(tmp_path / "t.parquet")
    with pytest.raises(DataError, match="missing"):
        load_table(tmp_path / "t.csv")
    pq = load_table(tmp_path / "t.parquet", nan_policy="drop")
    csv = load_table(tmp_path / "t.csv", nan_policy="drop")
    assert_array_equal(pq.X, csv.X)
    assert pq.notes == csv.notes


def test_the_window_preview_of_a_parquet_file_shows_the_cells_of_its_csv(tmp_path):
    from kernel_lab.data.read import peek_rows

    df = mixed_frame()
    df.loc[1, "bill"] = np.nan
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet", index=False)
    csv = peek_rows(tmp_path / "t.csv", 5)
    assert csv is not None and len(csv[1]) == 5
    assert peek_rows(tmp_path / "t.parquet", 5) == csv
    df.set_index("island").to_parquet(tmp_path / "i.parquet")  # an index: not a column
    assert peek_rows(tmp_path / "i.parquet", 2)[0] == ["rownames", "bill", "mass", "species"]


PEAK_SCRIPT = """
import resource, sys
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
from kernel_lab.data.read import load_table
load_table(sys.argv[2])  # the libraries loaded and warmed up on a small file
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
table = load_table(sys.argv[1])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print((after - before) / (table.X.nbytes + table.y.nbytes))
"""


def test_a_numeric_parquet_file_loads_with_one_copy_of_its_numbers(tmp_path):
    """The table is the only matrix built: the file is read column by column into it
    (pandas' frame, its column copies and their stack were 4 times the table, for a
    file of several row groups, as written by Dask or Spark)."""
    import subprocess

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    n, p = 1_000_000, 12
    columns = {f"c{j}": rng.normal(size=n) for j in range(p)}
    pq.write_table(pa.table(columns), tmp_path / "m.parquet", row_group_size=100_000)
    pq.write_table(pa.table({k: v[:10] for k, v in columns.items()}), tmp_path / "s.parquet")
    del columns
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(tmp_path / "m.parquet"),
                          str(tmp_path / "s.parquet")], capture_output=True, text=True,
                         check=True)
    growth = float(out.stdout.split()[-1])  # peak memory growth per byte of the table
    assert growth < 1.6, growth


def test_booleans_in_a_parquet_file_are_zero_and_one(tmp_path):
    frame(5).to_parquet(tmp_path / "b.parquet", index=False)
    table = load_table(tmp_path / "b.parquet")
    assert_array_equal(table.X[:, 2], frame(5)["flag"].to_numpy(dtype=float))


def test_a_damaged_parquet_file_is_named(tmp_path):
    (tmp_path / "bad.parquet").write_bytes(b"PAR1" + bytes(range(200)) + b"PAR1")
    with pytest.raises(DataError, match=r"^bad\.parquet: .*Parquet"):
        load_table(tmp_path / "bad.parquet")
    (tmp_path / "text.parquet").write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match=r"^text\.parquet: this is text, not"):
        load_table(tmp_path / "text.parquet")


def test_without_pyarrow_parquet_says_what_to_install(tmp_path, monkeypatch):
    frame(5).to_parquet(tmp_path / "b.parquet", index=False)
    folder = write_folder(tmp_path / "d", frame(8), [4, 4])
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    wanted = r"reading Parquet needs pyarrow: pip install 'kernel-lab\[dask\]'"
    with pytest.raises(DataError, match=wanted):
        load_table(tmp_path / "b.parquet")
    with pytest.raises(DataError, match=wanted):
        open_partitioned(folder)


def test_the_extras_that_bring_dask_bring_pyarrow_and_zarr_too():
    """The dask backend reads partitioned data, and these tests import both: the `dask`
    and `test` extras install them (the standalone app bundles pyarrow, not Dask or zarr:
    a message instead)."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    extras = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    for extra in ("dask", "test"):
        names = {re.split(r"[<>=\[ ]", d, maxsplit=1)[0].lower() for d in extras[extra]}
        assert {"pyarrow", "zarr", "dask"} <= names, (extra, names)


def test_parts_are_read_by_a_dask_worker_process_as_here(tmp_path):
    distributed = pytest.importorskip("distributed")
    df = frame(20)
    folder = write_folder(tmp_path / "d", df, [6, 7, 7])
    store = write_zarr(tmp_path / "s.zarr", 20, 3, 8)[0]
    plan = RowPlan.split(seed=2, n=20, test_fraction=0.25)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        for source in (folder, store):
            parts = open_partitioned(source).parts
            remote = client.gather(client.map(part_rows, parts, plan=plan, pure=False))
            for part, got in zip(parts, remote, strict=True):
                here = part_rows(part, plan)
                assert_array_equal(got.index, here.index)
                assert_array_equal(got.X, here.X)
                assert_array_equal(got.y, here.y)


def test_large_integers_and_decimals_are_read_as_pandas_converts_them(tmp_path):
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    big = [2**60 + 1, -(2**55) - 3, 7]
    amounts = [decimal.Decimal("1.25"), decimal.Decimal("-3.5"), decimal.Decimal("0.1")]
    data = pa.table({"big": pa.array(big, pa.int64()),
                     "amount": pa.array(amounts, pa.decimal128(10, 2)),
                     "y": pa.array([1.0, 2.0, 3.0])})
    (tmp_path / "d").mkdir()
    pq.write_table(data, tmp_path / "d" / "a.parquet")
    pq.write_table(data, tmp_path / "one.parquet")
    want = pd.DataFrame({"big": big, "amount": amounts}).astype(np.float64).to_numpy()
    assert_array_equal(open_partitioned(tmp_path / "d").parts[0].read()[0], want)
    assert_array_equal(load_table(tmp_path / "one.parquet").X, want)


def test_a_file_changed_after_opening_is_named_when_read(tmp_path):
    df = frame(10)
    folder = write_folder(tmp_path / "d", df, [5, 5])
    table = open_partitioned(folder)
    df.iloc[:3].to_parquet(folder / "part.1.parquet", index=False)
    with pytest.raises(DataError, match=r"^part\.1\.parquet: the file has 3 rows, not the 5"):
        table.parts[1].read()


def test_a_zarr_store_of_format_2_opens_too(tmp_path):
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(9, 2)), rng.normal(size=9)
    group = zarr.open_group(str(tmp_path / "v2.zarr"), mode="w", zarr_format=2)
    group.create_array("X", data=X, chunks=(5, 2))
    group.create_array("y", data=y, chunks=(5,))
    group.attrs["feature_names"] = ["u", "v"]
    assert is_partitioned(tmp_path / "v2.zarr")
    table = open_partitioned(tmp_path / "v2.zarr")
    assert [p.rows for p in table.parts] == [5, 4] and table.feature_names == ["u", "v"]
    assert_array_equal(gathered(table)[0], X)
