"""Good data files in every supported format load to exactly the numbers written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_svmlight_file

from kernel_lab.core.errors import DataError
from kernel_lab.data.read import load_table
from kernel_lab.data.source import load_data
from tests.data.filebytes import mat_bytes, npy_bytes, npz_bytes

ABC = b"a,b,c\n1,2,3\n4,5,6\n7,8,9\n"


def write(tmp_path: Path, name: str, content: bytes | str) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path





# ------------------------------------------------------------------------------------
# Delimited text
# ------------------------------------------------------------------------------------
def test_csv_header_default_target_is_last_column(tmp_path):
    table = load_table(write(tmp_path, "d.csv", ABC))
    assert_array_equal(table.X, [[1, 2], [4, 5], [7, 8]])
    assert_array_equal(table.y, [3, 6, 9])
    assert table.X.dtype == np.float64 and table.y.dtype == np.float64
    assert table.feature_names == ["a", "b"]
    assert table.target_name == "c"
    assert_array_equal(table.lines, [2, 3, 4])
    assert table.notes == []


@pytest.mark.parametrize(
    ("target", "x", "y", "features", "name"),
    [
        ("a", [[2, 3], [5, 6], [8, 9]], [1, 4, 7], ["b", "c"], "a"),
        ("b", [[1, 3], [4, 6], [7, 9]], [2, 5, 8], ["a", "c"], "b"),
        (" b ", [[1, 3], [4, 6], [7, 9]], [2, 5, 8], ["a", "c"], "b"),
        (0, [[2, 3], [5, 6], [8, 9]], [1, 4, 7], ["b", "c"], "a"),
        (1, [[1, 3], [4, 6], [7, 9]], [2, 5, 8], ["a", "c"], "b"),
        ("1", [[1, 3], [4, 6], [7, 9]], [2, 5, 8], ["a", "c"], "b"),
        (-1, [[1, 2], [4, 5], [7, 8]], [3, 6, 9], ["a", "b"], "c"),
        ("-3", [[2, 3], [5, 6], [8, 9]], [1, 4, 7], ["b", "c"], "a"),
        ("", [[1, 2], [4, 5], [7, 8]], [3, 6, 9], ["a", "b"], "c"),
    ],
)
def test_csv_target_by_name_or_index(tmp_path, target, x, y, features, name):
    table = load_table(write(tmp_path, "d.csv", ABC), target=target)
    assert_array_equal(table.X, x)
    assert_array_equal(table.y, y)
    assert table.feature_names == features
    assert table.target_name == name


def test_csv_without_header(tmp_path):
    table = load_table(write(tmp_path, "d.csv", "1.5,-2,3e2\n4,5.25,-6e-1\n"))
    assert_array_equal(table.X, [[1.5, -2.0], [4.0, 5.25]])
    assert_array_equal(table.y, [300.0, -0.6])
    assert table.feature_names == ["x1", "x2"]
    assert table.target_name == "y"
    assert_array_equal(table.lines, [1, 2])


def test_csv_without_header_target_index(tmp_path):
    table = load_table(write(tmp_path, "d.csv", "1,2,3\n4,5,6\n"), target=0)
    assert_array_equal(table.X, [[2, 3], [5, 6]])
    assert_array_equal(table.y, [1, 4])
    # columns are named x1, x2, y by position, whichever one is the target
    assert table.feature_names == ["x2", "y"]
    assert table.target_name == "x1"


def test_tsv(tmp_path):
    path = write(tmp_path, "d.tsv", "u\tv\tw\n0.5\t1\t-1\n2\t3.75\t10\n")
    table = load_table(path, target="v")
    assert_array_equal(table.X, [[0.5, -1.0], [2.0, 10.0]])
    assert_array_equal(table.y, [1.0, 3.75])
    assert table.feature_names == ["u", "w"]


def test_semicolon_csv(tmp_path):
    path = write(tmp_path, "d.csv", "p;q;r\n1.25;2;3\n4;-5.5;6\n")
    table = load_table(path)
    assert_array_equal(table.X, [[1.25, 2.0], [4.0, -5.5]])
    assert_array_equal(table.y, [3.0, 6.0])
    assert table.feature_names == ["p", "q"]
    assert table.target_name == "r"


def test_whitespace_txt(tmp_path):
    path = write(tmp_path, "d.txt", "  1   2  3\n4 5    6  \n\n7 8 -9.5e1\n")
    table = load_table(path)
    assert_array_equal(table.X, [[1, 2], [4, 5], [7, 8]])
    assert_array_equal(table.y, [3, 6, -95])
    assert table.feature_names == ["x1", "x2"]
    assert_array_equal(table.lines, [1, 2, 4])


def test_tab_separated_txt(tmp_path):
    table = load_table(write(tmp_path, "d.txt", "1\t2\t3\n4\t5\t6\n"))
    assert_array_equal(table.X, [[1, 2], [4, 5]])
    assert_array_equal(table.y, [3, 6])


def test_whitespace_txt_with_header(tmp_path):
    table = load_table(write(tmp_path, "d.txt", "h1 h2 h3\n1 2 3\n4 5 6\n"), target="h1")
    assert_array_equal(table.X, [[2, 3], [5, 6]])
    assert_array_equal(table.y, [1, 4])
    assert table.feature_names == ["h2", "h3"]


def test_comment_and_blank_lines_are_skipped_and_lines_kept(tmp_path):
    text = "# exported by hand\na,b\n  # indented comment\n1,2\n\n3,4\n# trailer\n"
    table = load_table(write(tmp_path, "d.csv", text))
    assert_array_equal(table.X, [[1], [3]])
    assert_array_equal(table.y, [2, 4])
    assert table.feature_names == ["a"]
    assert table.target_name == "b"
    assert_array_equal(table.lines, [4, 6])


def test_crlf_bom_and_quoted_header(tmp_path):
    raw = b'\xef\xbb\xbf"first, name",b\r\n1,2\r\n3,4\r\n'
    table = load_table(write(tmp_path, "d.csv", raw))
    assert table.feature_names == ["first, name"]
    assert table.target_name == "b"
    assert_array_equal(table.X, [[1], [3]])
    assert_array_equal(table.y, [2, 4])


def test_csv_random_values_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    M = rng.standard_normal((40, 5)) * 10.0 ** rng.integers(-5, 5, size=(40, 5))
    path = tmp_path / "r.csv"
    np.savetxt(path, M, delimiter=",", header="f1,f2,f3,f4,t", comments="", fmt="%.17g")
    table = load_table(path)
    assert_array_equal(table.X, M[:, :4])
    assert_array_equal(table.y, M[:, 4])
    assert table.feature_names == ["f1", "f2", "f3", "f4"]


def test_forced_format_on_unknown_extension(tmp_path):
    path = write(tmp_path, "d.data", ABC)
    table = load_table(path, fmt="csv")
    assert_array_equal(table.y, [3, 6, 9])


# ------------------------------------------------------------------------------------
# NumPy
# ------------------------------------------------------------------------------------
def test_npy_2d(tmp_path):
    M = np.random.default_rng(0).standard_normal((6, 4))
    table = load_table(write(tmp_path, "d.npy", npy_bytes(M)))
    assert_array_equal(table.X, M[:, :3])
    assert_array_equal(table.y, M[:, 3])
    assert table.feature_names == ["x1", "x2", "x3"]
    assert table.target_name == "y"
    assert table.lines is None


def test_npy_2d_integer_with_target_index(tmp_path):
    M = np.arange(12, dtype=np.int32).reshape(4, 3)
    table = load_table(write(tmp_path, "d.npy", npy_bytes(M)), target=0)
    assert table.X.dtype == np.float64
    assert_array_equal(table.X, M[:, 1:])
    assert_array_equal(table.y, [0, 3, 6, 9])


def test_npz_x_y(tmp_path):
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((7, 3)), rng.standard_normal(7)
    table = load_table(write(tmp_path, "d.npz", npz_bytes(X=X, y=y)))
    assert_array_equal(table.X, X)
    assert_array_equal(table.y, y)
    assert table.feature_names == ["x1", "x2", "x3"]
    assert table.target_name == "y"


def test_npz_data_target(tmp_path):
    X = np.arange(10.0).reshape(5, 2)
    y = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
    table = load_table(write(tmp_path, "d.npz", npz_bytes(data=X, target=y)))
    assert_array_equal(table.X, X)
    assert_array_equal(table.y, y)
    assert table.target_name == "target"


def test_npz_column_vector_y_and_1d_x(tmp_path):
    x = np.array([0.5, 1.5, 2.5])
    y = np.array([[1.0], [2.0], [3.0]])
    table = load_table(write(tmp_path, "d.npz", npz_bytes(X=x, y=y)))
    assert_array_equal(table.X, [[0.5], [1.5], [2.5]])
    assert_array_equal(table.y, [1.0, 2.0, 3.0])


def test_npz_single_matrix(tmp_path):
    M = np.arange(12.0).reshape(4, 3)
    table = load_table(write(tmp_path, "d.npz", npz_bytes(table=M)))
    assert_array_equal(table.X, M[:, :2])
    assert_array_equal(table.y, M[:, 2])


# ------------------------------------------------------------------------------------
# MATLAB
# ------------------------------------------------------------------------------------
def test_mat_x_y(tmp_path):
    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((8, 3)), rng.standard_normal(8)
    # savemat writes the 1-D y as a 1×8 row; the loader must flatten it.
    raw = mat_bytes(X=X, y=y, note=np.array([[42.0]]))
    table = load_table(write(tmp_path, "d.mat", raw))
    assert_array_equal(table.X, X)
    assert_array_equal(table.y, y)
    assert table.feature_names == ["x1", "x2", "x3"]
    assert table.target_name == "y"


def test_mat_column_y(tmp_path):
    X = np.arange(6.0).reshape(3, 2)
    raw = mat_bytes(X=X, y=np.array([[10.0], [20.0], [30.0]]))
    table = load_table(write(tmp_path, "d.mat", raw))
    assert_array_equal(table.X, X)
    assert_array_equal(table.y, [10.0, 20.0, 30.0])


# ------------------------------------------------------------------------------------
# svmlight / libsvm
# ------------------------------------------------------------------------------------
SVM_ONE_BASED = (
    b"# label index:value ...\n"
    b"1.5 1:0.5 3:-2.25\n"
    b"-1 2:1e-3 4:7 # trailing comment\n"
    b"0 qid:3 1:1 4:2.5\n"
    b"2.25\n"
)
SVM_ZERO_BASED = b"1 0:1.5 2:3\n0 1:2\n-1 0:-4 3:0.125\n"


def test_svmlight_one_based(tmp_path):
    path = write(tmp_path, "d.svm", SVM_ONE_BASED)
    table = load_table(path)
    assert_array_equal(table.X, [[0.5, 0, -2.25, 0], [0, 1e-3, 0, 7], [1, 0, 0, 2.5],
                                 [0, 0, 0, 0]])
    assert_array_equal(table.y, [1.5, -1.0, 0.0, 2.25])
    assert table.feature_names == ["x1", "x2", "x3", "x4"]
    assert table.target_name == "y"
    assert_array_equal(table.lines, [2, 3, 4, 5])
    X_ref, y_ref = load_svmlight_file(str(path))
    assert_array_equal(table.X, X_ref.toarray())
    assert_array_equal(table.y, y_ref)


def test_svmlight_zero_based(tmp_path):
    path = write(tmp_path, "d.libsvm", SVM_ZERO_BASED)
    table = load_table(path)
    assert_array_equal(table.X, [[1.5, 0, 3, 0], [0, 2, 0, 0], [-4, 0, 0, 0.125]])
    assert_array_equal(table.y, [1, 0, -1])
    assert table.feature_names == ["x0", "x1", "x2", "x3"]
    X_ref, y_ref = load_svmlight_file(str(path), zero_based=True)
    assert_array_equal(table.X, X_ref.toarray())
    assert_array_equal(table.y, y_ref)
    X_auto, _ = load_svmlight_file(str(path))  # zero_based="auto" agrees
    assert_array_equal(table.X, X_auto.toarray())


def test_svmlight_random_matches_sklearn(tmp_path):
    rng = np.random.default_rng(5)
    lines = []
    for _ in range(30):
        idx = np.sort(rng.choice(np.arange(1, 21), size=rng.integers(1, 8), replace=False))
        pairs = " ".join(f"{j}:{v:.17g}" for j, v in zip(idx, rng.standard_normal(idx.size),
                                                         strict=True))
        lines.append(f"{rng.standard_normal():.17g} {pairs}")
    path = write(tmp_path, "r.svmlight", "\n".join(lines) + "\n")
    table = load_table(path)
    X_ref, y_ref = load_svmlight_file(str(path), zero_based=False)
    assert table.X.shape == X_ref.shape
    assert_array_equal(table.X, X_ref.toarray())
    assert_array_equal(table.y, y_ref)


# ------------------------------------------------------------------------------------
# ARFF
# ------------------------------------------------------------------------------------
ARFF = """\
% Small iris extract
@RELATION iris_small

@ATTRIBUTE sepal NUMERIC
@ATTRIBUTE petal REAL
@ATTRIBUTE class {setosa,versicolor,virginica}

@DATA
5.1,1.4,setosa
7.0,4.7,versicolor
6.3,6.0,virginica
4.9,1.5,setosa
"""


def test_arff_numeric_and_nominal_target(tmp_path):
    table = load_table(write(tmp_path, "iris.arff", ARFF))
    assert_array_equal(table.X, [[5.1, 1.4], [7.0, 4.7], [6.3, 6.0], [4.9, 1.5]])
    assert_array_equal(table.y, [0, 1, 2, 0])
    assert table.classes == ["setosa", "versicolor", "virginica"]
    assert table.feature_names == ["sepal", "petal"]
    assert table.target_name == "class"
    assert table.notes == ["text target 'class': 3 classes coded 0 … 2 "
                           "(setosa, versicolor, virginica)"]


def test_arff_target_by_name(tmp_path):
    table = load_table(write(tmp_path, "iris.arff", ARFF), target="sepal")
    assert_array_equal(table.y, [5.1, 7.0, 6.3, 4.9])
    assert_array_equal(table.X, [[1.4, 1, 0, 0], [4.7, 0, 1, 0], [6.0, 0, 0, 1],
                                 [1.5, 1, 0, 0]])  # the nominal attribute one-hot encoded
    assert table.feature_names == ["petal", "class=setosa", "class=versicolor",
                                   "class=virginica"]


# ------------------------------------------------------------------------------------
# Missing values
# ------------------------------------------------------------------------------------
NAN_CSV = "a,b,c\n1,2,3\n4,,6\n7,8,9\n10,NA,12\n13,14,inf\n15,16,17\n"


def test_drop_nan_drops_the_right_rows(tmp_path):
    table = load_table(write(tmp_path, "d.csv", NAN_CSV), nan_policy="drop")
    # marked, not removed: the rows keep their numbers (and so their split keys)
    assert_array_equal(table.dropped, [1, 3, 4])
    keep = table.kept()
    assert_array_equal(table.X[keep], [[1, 2], [7, 8], [15, 16]])
    assert_array_equal(table.y[keep], [3, 9, 17])
    assert_array_equal(table.lines[keep], [2, 4, 7])
    assert table.notes == ["dropped 3 of 6 rows with missing or non-finite values"]


def test_nan_is_an_error_by_default(tmp_path):
    with pytest.raises(DataError) as info:
        load_table(write(tmp_path, "d.csv", NAN_CSV))
    assert info.value.line == 3
    assert ("missing or non-finite values in 3 of 6 rows (the first here); rows per "
            "column: 'b' 2, target 'c' 1.") in str(info.value)


def test_drop_nan_svmlight(tmp_path):
    path = write(tmp_path, "d.svm", "1 1:2\nnan 1:3\n3 1:inf\n4 1:5\n")
    table = load_table(path, nan_policy="drop")
    assert_array_equal(table.dropped, [1, 2])
    keep = table.kept()
    assert_array_equal(table.X[keep], [[2], [5]])
    assert_array_equal(table.y[keep], [1, 4])
    assert_array_equal(table.lines[keep], [1, 4])
    assert table.notes == ["dropped 2 of 4 rows with missing or non-finite values"]


def test_drop_nan_npz(tmp_path):
    X = np.array([[1.0, 2.0], [np.nan, 0.0], [3.0, 4.0]])
    y = np.array([1.0, 2.0, -np.inf])
    table = load_table(write(tmp_path, "d.npz", npz_bytes(X=X, y=y)), nan_policy="drop")
    assert_array_equal(table.dropped, [1, 2])
    assert_array_equal(table.X[table.kept()], [[1, 2]])
    assert_array_equal(table.y[table.kept()], [1])
    assert table.notes == ["dropped 2 of 3 rows with missing or non-finite values"]


# ------------------------------------------------------------------------------------
# load_data: file specifications with options
# ------------------------------------------------------------------------------------
def _twenty_rows(tmp_path: Path) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(11)
    M = np.round(rng.uniform(-50, 50, size=(20, 3)), 3)
    M[:, 1] = np.arange(20) * 1.5 + 100  # distinct target values identify the rows
    path = tmp_path / "file.csv"
    np.savetxt(path, M, delimiter=",", header="a,b,c", comments="", fmt="%.3f")
    return path, M


def test_load_data_file_spec_with_options(tmp_path):
    path, M = _twenty_rows(tmp_path)
    spec = f"{path}:target=b,test_fraction=0.2,standardize=false"
    ds = load_data(spec, seed=7)
    assert (ds.n_train, ds.n_test, ds.p) == (16, 4, 2)
    assert ds.feature_names == ["a", "c"]
    assert ds.target_name == "b"
    assert ds.name == spec
    # every row survives the split intact: (a, c) still goes with its b
    by_target = {row[1]: (row[0], row[2]) for row in M}
    for X, y in ((ds.X_train, ds.y_train), (ds.X_test, ds.y_test)):
        for x_row, t in zip(X, y, strict=True):
            assert tuple(x_row) == by_target[t]
    assert sorted(np.concatenate([ds.y_train, ds.y_test])) == sorted(M[:, 1])
    assert not any("standardised" in note for note in ds.notes)


def test_load_data_same_seed_same_split(tmp_path):
    path, _ = _twenty_rows(tmp_path)
    spec = f"{path}:target=b,test_fraction=0.2,standardize=false"
    first, again = load_data(spec, seed=3), load_data(spec, seed=3)
    assert_array_equal(first.y_test, again.y_test)
    assert_array_equal(first.X_train, again.X_train)
    other = load_data(spec, seed=4)
    assert set(other.y_test) != set(first.y_test)


def test_load_data_default_options(tmp_path):
    path, M = _twenty_rows(tmp_path)
    ds = load_data(str(path), seed=0, overrides={"standardize": False})
    assert (ds.n_train, ds.n_test) == (15, 5)  # default test_fraction 0.25
    assert ds.target_name == "c"
    assert sorted(np.concatenate([ds.y_train, ds.y_test])) == sorted(M[:, 2])


def test_load_data_overrides_take_precedence(tmp_path):
    path, _ = _twenty_rows(tmp_path)
    ds = load_data(f"{path}:target=c,test_fraction=0.5", seed=0,
                   overrides={"target": "0", "test_fraction": 0.1, "standardize": False,
                              "drop_nan": None})
    assert ds.target_name == "a"
    assert ds.feature_names == ["b", "c"]
    assert (ds.n_train, ds.n_test) == (18, 2)


def test_load_data_standardize(tmp_path):
    path, _ = _twenty_rows(tmp_path)
    ds = load_data(f"{path}:target=b,test_fraction=0.2", seed=1)
    assert_allclose(ds.X_train.mean(axis=0), 0.0, atol=1e-12)
    assert_allclose(ds.X_train.std(axis=0), 1.0, rtol=1e-12)
    assert ds.notes[-1] == "features standardised with the training mean and std"
    # the test set is scaled with the training statistics, not its own
    raw = load_data(f"{path}:target=b,test_fraction=0.2,standardize=false", seed=1)
    mean, std = raw.X_train.mean(axis=0), raw.X_train.std(axis=0)
    assert_allclose(ds.X_test, (raw.X_test - mean) / std, rtol=1e-12)
    assert_array_equal(ds.y_train, raw.y_train)


def test_load_data_drop_nan_option_records_note(tmp_path):
    path = write(tmp_path, "gaps.csv", NAN_CSV)
    ds = load_data(f"{path}:drop_nan=true,test_fraction=0,standardize=false")
    assert (ds.n_train, ds.n_test) == (3, 0)
    assert_array_equal(ds.y_train[np.argsort(ds.y_train)], [3, 9, 17])
    assert ds.notes == ["target: column 'c', the last of 3 (choose another with the data "
                        "option target=NAME)",
                        "dropped 3 of 6 rows with missing or non-finite values"]


def test_load_data_format_option(tmp_path):
    path = write(tmp_path, "table.data", ABC)
    ds = load_data(f"{path}:format=csv,test_fraction=0,standardize=false")
    assert sorted(ds.y_train) == [3, 6, 9]
    assert ds.feature_names == ["a", "b"]


# -- regressions found in review ---------------------------------------------------
def test_quoted_field_spanning_lines_is_a_data_error_with_its_line(tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_bytes(b'a,b,c\n1,"2\n3",4\n5,6,7\n')
    with pytest.raises(DataError, match=r"quoted.csv, line 2, column 2: .* is not a number"):
        load_table(path)


def test_invalid_utf8_after_bom_reports_the_right_line_and_byte(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b,c\n1,2,3\n4,\xff,6\n")
    with pytest.raises(DataError, match=r"bom.csv, line 3: byte 0xff is not valid UTF-8"):
        load_table(path)


def test_whitespace_text_with_tabs_splits_on_all_whitespace(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"1 2\t3\n4 5\t6\n7 8\t9\n")
    table = load_table(path)
    np.testing.assert_array_equal(table.X, [[1, 2], [4, 5], [7, 8]])
    np.testing.assert_array_equal(table.y, [3, 6, 9])


def test_utf16_text_gets_a_re_save_hint(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes("a,b\n1,2\n".encode("utf-16"))
    with pytest.raises(DataError, match=r"UTF-16 text.*Save the file again with UTF-8"):
        load_table(path)


def test_npz_target_must_name_an_array(tmp_path):
    path = tmp_path / "xy.npz"
    np.savez(path, X=np.ones((3, 2)), y=np.arange(3.0), z=np.zeros(3))
    assert load_table(path, target="z").target_name == "z"
    with pytest.raises(DataError, match="no array named 'price'"):
        load_table(path, target="price")
