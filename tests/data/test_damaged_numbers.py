"""Damaged numbers in a file are refused, not read: a Parquet page whose bytes changed
after it was written fails its checksum (where the file stores checksums), and on any
table a feature or target value beyond ±1e150 (it overflows every kernel) is refused
naming the file, the column, the first row (line) and the count — while missing cells are
still filled at the split."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zarr
from numpy.testing import assert_array_equal

from kernel_lab.cli import main
from kernel_lab.core.errors import DataError
from kernel_lab.data.partitioned import open_partitioned
from kernel_lab.data.read import load_table
from kernel_lab.data.source import DataSource
from kernel_lab.data.table import MAX_MAGNITUDE, huge_cells
from tests.data.filebytes import mat_bytes, npy_bytes, npz_bytes

RNG = np.random.default_rng(42)
HUGE = 5.8e307  # what random bytes were read as in a damaged file


def numbers(n: int, p: int = 3, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, p)), columns=[f"x{j + 1}" for j in range(p)])
    df["y"] = rng.normal(size=n)
    return df


def write(path, df: pd.DataFrame, *, checksums: bool, row_group_size: int | None = None,
          statistics: bool = True):
    """Plain-encoded, uncompressed pages: damage inside one changes its numbers and
    nothing else (what a reader without checksums cannot notice)."""
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path,
                   write_page_checksum=checksums, use_dictionary=False, compression="none",
                   row_group_size=row_group_size, write_statistics=statistics)
    return path


def write_folder(folder, df: pd.DataFrame, **options):
    """``df`` as three files ``part.0 … part.2`` of 1,000 rows each (:func:`write`)."""
    folder.mkdir()
    for k in range(3):
        write(folder / f"part.{k}.parquet", df.iloc[1000 * k:1000 * (k + 1)], **options)
    return folder


def damage_page(path, group: int, column: int) -> None:
    """Write 64 random bytes over the middle of the first data page of one column chunk
    (its offset and size from the file's metadata): the page header stays readable."""
    meta = pq.ParquetFile(path).metadata.row_group(group).column(column)
    start = meta.data_page_offset + meta.total_compressed_size // 2
    raw = bytearray(path.read_bytes())
    raw[start:start + 64] = RNG.integers(0, 256, 64, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(raw))


def overwrite_value(path, old: float, new: float) -> None:
    """Replace the 8 bytes of one stored float (plain encoding: as in memory)."""
    raw = path.read_bytes()
    key = np.float64(old).tobytes()
    assert raw.count(key) == 1
    path.write_bytes(raw.replace(key, np.float64(new).tobytes()))


# -- page checksums ----------------------------------------------------------------------
def test_a_damaged_page_changes_numbers_silently_without_verification(tmp_path):
    """The reference the checks below stand against: pyarrow without page verification
    reads the damaged page as other numbers, and says nothing."""
    df = numbers(4000)
    path = write(tmp_path / "d.parquet", df, checksums=True, row_group_size=1000)
    damage_page(path, group=2, column=1)
    with pq.ParquetFile(path, page_checksum_verification=False) as f:
        got = f.read().column("x2").to_numpy()
    changed = np.flatnonzero(got != df["x2"].to_numpy())
    assert changed.size > 0 and changed.min() >= 2000 and changed.max() < 3000


def test_a_single_parquet_file_with_a_damaged_page_is_refused_by_name(tmp_path):
    path = write(tmp_path / "flights.parquet", numbers(4000), checksums=True,
                 row_group_size=1000)
    damage_page(path, group=2, column=1)
    with pytest.raises(DataError) as err:
        DataSource.from_spec(str(path), {"target": "y"}).load()
    said = str(err.value)
    assert said.startswith("flights.parquet: ")
    assert "column 'x2' in row group 3 of 4 (rows 2,001–3,000 of the file)" in said
    assert "fails its checksum" in said and "Copy the file again" in said


@pytest.mark.parametrize("partitions", ["keep", "load"])
def test_a_parquet_folder_with_a_damaged_page_is_refused_naming_the_file(tmp_path,
                                                                          partitions):
    df = numbers(3000)
    folder = write_folder(tmp_path / "d", df, checksums=True, row_group_size=500)
    damage_page(folder / "part.1.parquet", group=1, column=3)  # the target
    source = DataSource.from_spec(str(folder), {"partitions": partitions})
    with pytest.raises(DataError) as err:
        source.open(0)
    said = str(err.value)
    assert said.startswith("part.1.parquet: "), said
    assert "column 'y' in row group 2 of 2 (rows 501–1,000 of the file)" in said
    assert "fails its checksum" in said


def test_the_preview_of_a_damaged_file_shows_nothing_rather_than_wrong_numbers(tmp_path):
    from kernel_lab.data.read import peek_rows

    path = write(tmp_path / "d.parquet", numbers(400), checksums=True)
    assert peek_rows(path) is not None
    damage_page(path, group=0, column=0)
    assert peek_rows(path) is None  # the load says what is wrong


def test_the_cli_refuses_a_damaged_parquet_file_in_one_line(tmp_path, capsys):
    path = write(tmp_path / "d.parquet", numbers(2000), checksums=True,
                 row_group_size=500)
    damage_page(path, group=3, column=0)
    code = main(["run", "krr-path", "--data", str(path), "--target", "y",
                 "--out", str(tmp_path / "o"), "-q"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "d.parquet" in err and "fails its checksum" in err and "Traceback" not in err


# -- values outside the footer's statistics ----------------------------------------------
def test_a_damaged_integer_page_is_read_silently_by_pyarrow_but_refused_here(tmp_path):
    """No checksums: random bytes in an int64 column stay below 1e150 (at most 9.2e18),
    but outside the minimum and maximum the footer records for the row group."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"flight": rng.integers(1, 8000, 4000), "y": rng.normal(size=4000)})
    path = write(tmp_path / "f.parquet", df, checksums=False, row_group_size=1000)
    damage_page(path, group=1, column=0)
    got = pq.read_table(path).column("flight").to_numpy()  # the reference: no word
    changed = np.flatnonzero(got != df["flight"].to_numpy())
    assert changed.size > 0 and np.abs(got).max() < MAX_MAGNITUDE
    outside = changed[(got[changed] < 1) | (got[changed] >= 8000)]
    with pytest.raises(DataError) as err:
        load_table(path, target="y")
    said = str(err.value)
    assert said.startswith(f"f.parquet: row {outside[0] + 1:,}: column 'flight' holds "
                           f"{outside.size:,} values outside the range the file's footer "
                           "records for row group 2"), said
    assert "Copy the file again" in said


@pytest.mark.parametrize("partitions", ["keep", "load"])
def test_a_value_outside_the_footer_range_in_a_folder_names_the_file_and_row(
        tmp_path, partitions):
    df = numbers(3000)
    folder = write_folder(tmp_path / "d", df, checksums=False, row_group_size=400)
    overwrite_value(folder / "part.1.parquet", float(df.loc[1900, "y"]), 40.0)
    with pytest.raises(DataError) as err:
        DataSource.from_spec(str(folder), {"partitions": partitions}).open(0)
    assert str(err.value).startswith(
        "part.1.parquet: row 1,900 (row 901 of this file): column 'y' holds 1 value outside "
        "the range the file's footer records for row group 3"), str(err.value)


def test_intact_files_of_every_number_type_pass_the_footer_check(tmp_path):
    """No false alarm: integers of every width (their extremes too, rounded to float64
    as pandas rounds them), floats with NaN, −0.0 and nulls, in many row groups."""
    n = 3000
    rng = np.random.default_rng(9)
    big = np.iinfo(np.int64)
    columns = {
        "i8": pa.array(rng.integers(-128, 128, n), pa.int8()),
        "u16": pa.array(rng.integers(0, 2**16, n), pa.uint16()),
        "i64": pa.array(np.r_[big.min, big.max, big.max - 1, rng.integers(-2**62, 2**62,
                                                                           n - 3)]),
        "u64": pa.array(np.r_[np.uint64(2**64 - 1), rng.integers(0, 2**63, n - 1,
                                                                  dtype=np.uint64)]),
        "f32": pa.array(rng.normal(size=n).astype(np.float32)),
        "f64": pa.array(np.r_[np.nan, -0.0, rng.normal(size=n - 2)],
                        mask=np.r_[False, False, True, np.zeros(n - 3, bool)]),
        "y": pa.array(rng.normal(size=n)),
    }
    path = tmp_path / "types.parquet"
    pq.write_table(pa.table(columns), path, row_group_size=250)
    table = load_table(path, nan_policy="fill")
    want = pd.read_parquet(path).drop(columns="y").to_numpy(dtype=np.float64)
    assert_array_equal(table.X, want)


# -- values beyond ±1e150 ----------------------------------------------------------------
def test_huge_cells_match_a_cell_by_cell_reference_across_row_blocks():
    n, p = 150_000, 4  # more than two row blocks of 65,536
    A = RNG.normal(size=(n, p))
    A[RNG.random((n, p)) < 0.01] = np.nan  # missing cells: not counted
    A[[5, 70_000], 1] = np.inf  # infinite: the missing-value policy's
    planted = [(3, 0, 2e150), (65_536, 0, -1e300), (140_000, 2, HUGE), (1, 3, -1.5e150)]
    for r, c, v in planted:
        A[r, c] = v
    A[7, 3] = MAX_MAGNITUDE  # at the limit: kept
    counts, first = huge_cells(A)
    big = np.abs(np.nan_to_num(A, nan=0.0, posinf=0.0, neginf=0.0)) > MAX_MAGNITUDE
    assert_array_equal(counts, big.sum(axis=0))
    assert_array_equal(first, [int(np.flatnonzero(big[:, j])[0]) if big[:, j].any() else -1
                               for j in range(p)])
    assert huge_cells(np.where(big, 0.0, A)) is None
    assert huge_cells(A[:, 3]) is not None and huge_cells(A[:, 1]) is None  # 1-D


def test_a_huge_value_in_a_csv_is_refused_with_line_column_and_count(tmp_path):
    path = tmp_path / "t.csv"
    rows = ["a,b,y"] + [f"{i},{i % 7},{i % 3}" for i in range(40)]
    rows[12] = f"11,{HUGE!r},1"  # line 13
    rows[30] = "29,-3e200,2"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(DataError) as err:
        load_table(path)
    said = str(err.value)
    assert said.startswith("t.csv, line 13: column 'b' holds 2 values beyond ±1e150"), said
    assert "5.8e+307" in said and "drop_columns=b" in said


def test_a_huge_target_is_refused_too(tmp_path):
    path = tmp_path / "t.csv"
    rows = ["a,b,y"] + [f"{i},{i % 7},{i % 3}" for i in range(40)]
    rows[20] = "19,5,1e160"  # line 21
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(DataError, match=r"^t\.csv, line 21: the target column 'y' holds 1 "
                                        r"value beyond ±1e150 .*here: 1e\+160"):
        load_table(path)


def test_missing_cells_are_still_filled_beside_the_check(tmp_path):
    df = numbers(200)
    df.loc[[3, 50], "x1"] = np.nan
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    ds = DataSource.from_spec(str(path), {"standardize": "false"}).load()
    assert np.isfinite(ds.X_train).all() and np.isfinite(ds.X_test).all()
    assert any("filled 2 missing values" in w for w in ds.warnings)


def test_a_row_number_counts_the_file_rows_when_rows_with_missing_values_are_dropped(
        tmp_path):
    X = RNG.normal(size=(50, 3))
    X[2, 0] = np.nan  # dropped by drop_nan: the row named is still the file's
    X[9, 2] = -HUGE
    path = tmp_path / "a.npy"
    np.save(path, np.column_stack([X, RNG.normal(size=50)]))
    with pytest.raises(DataError, match=r"^a\.npy: row 10: column 'x3' holds 1 value .*"
                                        r"here: -5\.8e\+307"):
        DataSource.from_spec(str(path), {"drop_nan": "true"}).load()


def test_a_value_overwritten_in_a_parquet_file_without_checksums_is_caught(tmp_path):
    """No checksum to verify (the writer's default), no statistics in the footer: the
    wild number itself is caught."""
    df = numbers(3000)
    path = write(tmp_path / "p.parquet", df, checksums=False, row_group_size=1000,
                 statistics=False)
    overwrite_value(path, float(df.loc[1234, "x3"]), HUGE)
    with pytest.raises(DataError, match=r"^p\.parquet: row 1,235: column 'x3' holds 1 value "
                                        r"beyond ±1e150"):
        DataSource.from_spec(str(path)).load()


@pytest.mark.parametrize("partitions", ["keep", "load"])
def test_a_huge_value_in_a_parquet_folder_names_the_file_and_row(tmp_path, partitions):
    df = numbers(3000)
    folder = write_folder(tmp_path / "d", df, checksums=False, statistics=False)
    overwrite_value(folder / "part.2.parquet", float(df.loc[2100, "x1"]), -HUGE)
    with pytest.raises(DataError) as err:
        DataSource.from_spec(str(folder), {"partitions": partitions}).open(0)
    assert str(err.value).startswith(
        "part.2.parquet: row 2,100 (row 101 of this file): column 'x1' holds 1 value beyond "
        "±1e150")


def test_a_huge_value_in_a_zarr_store_names_the_chunk_and_row(tmp_path):
    X, y = RNG.normal(size=(30, 2)), RNG.normal(size=30)
    X[17, 1] = 1e200
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    group.create_array("X", data=X, chunks=(10, 2))
    group.create_array("y", data=y, chunks=(10,))
    group.attrs["feature_names"] = ["u", "v"]
    table = open_partitioned(tmp_path / "s.zarr")
    with pytest.raises(DataError, match=r"^s\.zarr: row 17 \(row 8 of chunk 1\): column 'v'"):
        table.to_table()


def test_values_at_the_limit_load(tmp_path):
    M = RNG.normal(size=(30, 3))
    M[4, 0], M[5, 1] = MAX_MAGNITUDE, -MAX_MAGNITUDE
    path = tmp_path / "edge.npy"
    np.save(path, M)
    table = load_table(path)
    assert table.X[4, 0] == MAX_MAGNITUDE and table.X[5, 1] == -MAX_MAGNITUDE


def _xlsx(rows: list[list[float]]) -> bytes:
    import io

    from openpyxl import Workbook

    book = Workbook()
    book.active.append(["a", "b", "y"])
    for row in rows:
        book.active.append(row)
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def _every_format() -> dict[str, tuple[bytes, str]]:
    """Each format's file of 12 rows with ``-2e200`` in feature b of its 8th row (0-based
    7), and where the message must place it."""
    M = np.round(np.random.default_rng(3).normal(size=(12, 3)), 3)
    M[7, 1] = -2e200
    rows = [[repr(float(v)) for v in r] for r in M]
    csv = "a,b,y\n" + "".join(",".join(r) + "\n" for r in rows)
    arff = ("@relation t\n@attribute a numeric\n@attribute b numeric\n@attribute y numeric\n"
            "@data\n" + "".join(",".join(r) + "\n" for r in rows))
    svm = "".join(f"{r[2]} 1:{r[0]} 2:{r[1]}\n" for r in rows)
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"a": M[:, 0], "b": M[:, 1], "y": M[:, 2]}), buf)
    return {
        "t.csv": (csv.encode(), "t.csv, line 9: column 'b'"),
        "t.tsv": (csv.replace(",", "\t").encode(), "t.tsv, line 9: column 'b'"),
        "t.csv.gz": (gzip.compress(csv.encode(), mtime=0),
                     "t.csv.gz, line 9: column 'b'"),
        "t.arff": (arff.encode(), "t.arff: row 8: column 'b'"),
        "t.svm": (svm.encode(), "t.svm, line 8: column 'x2'"),
        "t.xlsx": (_xlsx(M.tolist()), "t.xlsx, line 9: column 'b'"),
        "t.npy": (npy_bytes(M), "t.npy: row 8: column 'x2'"),
        "t.npz": (npz_bytes(X=M[:, :2], y=M[:, 2]), "t.npz: row 8: column 'x2'"),
        "t.mat": (mat_bytes(X=M[:, :2], y=M[:, 2]), "t.mat: row 8: column 'x2'"),
        "t.parquet": (buf.getvalue().to_pybytes(), "t.parquet: row 8: column 'b'"),
    }


@pytest.mark.parametrize("name", sorted(_every_format()))
def test_every_format_refuses_a_huge_value_naming_where(tmp_path, name):
    raw, where = _every_format()[name]
    path = tmp_path / name
    path.write_bytes(raw)
    with pytest.raises(DataError) as err:
        load_table(path)
    said = str(err.value)
    assert said.startswith(where + " holds 1 value beyond ±1e150"), said
    assert "here: -2e+200" in said


def test_a_part_whose_pages_cannot_be_decoded_says_it_may_be_damaged(tmp_path):
    """A damaged file without checksums whose page no longer decodes (here: the header
    of a page written over) is named, and the message covers damage too."""
    df = numbers(3000)
    folder = tmp_path / "d"
    folder.mkdir()
    for k in range(2):
        pq.write_table(pa.Table.from_pandas(df.iloc[1500 * k:1500 * (k + 1)],
                                            preserve_index=False),
                       folder / f"part.{k}.parquet", compression="snappy")
    path = folder / "part.1.parquet"
    start = pq.ParquetFile(path).metadata.row_group(0).column(0).data_page_offset
    raw = bytearray(path.read_bytes())
    raw[start:start + 16] = b"\xff" * 16
    path.write_bytes(bytes(raw))
    with pytest.raises(DataError) as err:
        DataSource.from_spec(str(folder), {"partitions": "keep"}).open(0)
    said = str(err.value)
    assert said.startswith("part.1.parquet: the file cannot be read"), said
    assert "or is damaged" in said and "copy or export a damaged file again" in said
