"""Bad data files give one clear DataError: file name, line/column, problem and fix.

Each case is a tiny file written into ``tmp_path``; the message format is
``"<basename>[, line L][, column C]: <problem>. <Fix>."``. The command line shows
the same message on one stderr line with exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernel_lab.cli import main
from kernel_lab.core.errors import DataError
from kernel_lab.data.read import load_table
from tests.data.filebytes import mat_bytes, npy_bytes, npz_bytes


def case(id: str, name: str, content: bytes | None, fragments: list[str], *,
         line: int | None = None, column: int | None = None,
         **kwargs: Any) -> Any:
    """One bad file: its name, bytes (None: not written), expected position and words."""
    return pytest.param(name, content, kwargs, line, column, fragments, id=id)


CASES = [
    case("empty", "empty.csv", b"",
         ["the file is empty", "Choose a file with data in it"]),
    case("whitespace-only", "blank.csv", b"  \n\t\r\n   \n",
         ["the file is empty", "Choose a file with data in it"]),
    case("comments-only", "comments.csv", b"# nothing here\n\n# still nothing\n",
         ["no data lines (only blank or comment lines)", "Choose a file with data in it"]),
    case("header-only", "header.csv", b"a,b,c\n",
         ["has a header row but no data rows", "Add data rows below the header"]),
    case("ragged-row", "ragged.csv", b"a,b,c\n1,2,3\n4,5,6\n7,8\n9,10,11\n",
         ["this row has 2 fields but the header has 3",
          "Every row needs the same number of fields",
          "check for a missing or extra delimiter ','"], line=4),
    case("ragged-row-after-comments", "ragged2.csv", b"# c\n\n1;2;3\n# c\n4;5;6;7\n",
         ["this row has 4 fields but the first row has 3",
          "check for a missing or extra delimiter ';'"], line=5),
    case("ragged-row-whitespace", "ragged.txt", b"1 2 3\n4 5 6\n7 8\n",
         ["this row has 2 fields but the first row has 3",
          "check for a missing or extra delimiter 'space'"], line=3),
    case("non-numeric-cell", "text.csv", b"a,b,c\n1,2,3\n4,five,6\n",
         ["'five' in column 'b' is not a number",
          "Leave the column out (the data option drop_columns=b)"],
         line=3, column=2),
    case("non-numeric-target", "label.tsv", b"u\tv\tclass\n1\t2\t1\n3\t4\tyes\n5\t6\t0\n",
         ["'yes' in the target column 'class' is not a number",
          "Fix this cell if it is a typo, or choose another target (the data option "
          "target=NAME)"], line=3, column=3),
    case("single-class-text-target", "label1.csv", b"u,v,class\n1,2,yes\n3,4,yes\n",
         ["the target column 'class' holds text with one value ('yes'): nothing to learn",
          "Choose another target column (the data option target=NAME)"]),
    case("text-only-features-dropped", "names.csv", b"name,y\nann,1\nbob,2\ncy,3\n",
         ["no feature column is left", "Load with the data option text_features=onehot"],
         text_features="drop"),
    case("text-only-features-unencodable", "names2.csv", b"name,y\nann,1\nbob,2\ncy,3\n",
         ["no feature column is left", "text with one value per row or more than 50"]),
    # a missing feature cell is filled by its training mean (test_missing_values.py);
    # what cannot be filled is refused: a missing target, an infinite value
    case("nan-target", "nan.csv", b"a,b,c\n1,2,3\n4,5,6\n7,8,nan\n",
         ["the target 'c' is missing or non-finite in 1 of 3 rows (here); a missing "
          "feature is filled by its training mean, but these cannot be.",
          "Clean the file, or choose to drop rows with missing values "
          "(the data option drop_nan=true)"],
         line=4, nan_policy="fill"),
    case("inf-features", "gaps.csv", b"a,b,c\n1,2,3\n4,inf,6\n-inf,8,9\n",
         ["infinite values in 'a', 'b' (the first here)", "(the data option drop_nan=true)",
          "or leave out the columns that have them (the data option drop_columns=a,b)"],
         line=3, nan_policy="fill"),
    case("inf-target", "inf.csv", b"a,b,c\n1,2,3\n4,5,-inf\n",
         ["the target 'c' is missing or non-finite in 1 of 2 rows (here)",
          "(the data option drop_nan=true)"],
         line=3, nan_policy="fill"),
    case("inf-in-npy", "nan.npy", npy_bytes(np.array([[1.0, 2.0], [3.0, np.inf], [5.0, 6.0]])),
         ["row 2: the target 'y' is missing or non-finite in 1 of 3 rows (here)",
          "(the data option drop_nan=true)"], nan_policy="fill"),
    case("single-column", "one.csv", b"y\n1\n2\n3\n",
         ["the data have only one column",
          "A data set needs at least one feature column and one target column"]),
    case("duplicate-target-name", "dup.csv", b"x,y,y\n1,2,3\n4,5,6\n",
         ["the target column 'y' appears more than once (columns 2 and 3)",
          "Rename the duplicate columns so the target is unambiguous"], target="y"),
    case("unknown-target-name", "cols.csv", b"alpha,beta,gamma\n1,2,3\n",
         ["there is no column named 'price'", "Choose one of: alpha, beta, gamma",
          "or give a 0-based column index"], target="price"),
    case("unknown-target-no-header", "plain.csv", b"1,2,3\n4,5,6\n",
         ["there is no column named 'price' (the file has no header row)",
          "Choose one of: x1, x2, y"], target="price"),
    case("target-index-out-of-range", "idx.csv", b"a,b,c\n1,2,3\n",
         ["target column index 3 is out of range: the data have 3 columns",
          "Use an index from 0 to 2"], target=3),
    case("target-negative-index-out-of-range", "idx2.csv", b"a,b,c\n1,2,3\n",
         ["target column index -4 is out of range: the data have 3 columns",
          "Use an index from 0 to 2"], target="-4"),
    case("binary-nul-bytes", "garbage.csv", b"a,b\n1,2\n\x00\x01\x02\x03\xff\xfe\x00",
         ["this is binary data (it contains NUL bytes), not a text table",
          "Choose the right file, or rename it to its real extension"]),
    # Latin-1 text is read (with a note: test_readers.py); bytes that are not Windows-1252
    # either are refused
    case("invalid-utf8", "notext.csv", b"a,b,c\n1,2,3\nx\x81\x8d,5,6\n",
         ["byte 0x81 is not valid UTF-8 text",
          "This does not look like a text table; if it is, save it with UTF-8 encoding"],
         line=3),
    case("npy-that-is-text", "text.npy", b"1,2,3\n4,5,6\n",
         ["this is text, not a NumPy .npy file",
          "Choose the right file, or rename it to its real extension"]),
    case("csv-that-is-npz", "zipped.csv", npz_bytes(X=np.ones((3, 2)), y=np.ones(3)),
         ["this is a zip archive (for example a NumPy .npz file or a spreadsheet), "
          "not a text table", "rename it to its real extension"]),
    case("npz-that-is-npy", "array.npz", npy_bytes(np.ones((3, 2))),
         ["this is a NumPy .npy array, not a NumPy .npz archive",
          "rename it to its real extension"]),
    case("mat-that-is-text", "text.mat", b"X = [1 2; 3 4]\ny = [1; 2]\n",
         ["this is text, not a MATLAB .mat file",
          "Choose the right file, or rename it to its real extension"]),
    case("npz-x-3d", "cube.npz", npz_bytes(X=np.ones((4, 2, 2)), y=np.ones(4)),
         ["the array 'X' has shape (4, 2, 2); it must be 2-D (samples × features)",
          "Reshape it before saving"]),
    case("npz-y-length-mismatch", "short.npz", npz_bytes(X=np.ones((4, 2)), y=np.ones(3)),
         ["'X' has 4 rows but 'y' has 3 values", "Both must have one entry per sample"]),
    case("npz-no-x-y-keys", "keys.npz",
         npz_bytes(gamma=np.ones(3), alpha=np.ones((3, 2)), beta=np.ones(2)),
         ["the NPZ file has no arrays named X and y (it has: alpha, beta, gamma)",
          "Store the features as X and the target as y, or a single 2-D array"]),
    case("npy-1d", "vector.npy", npy_bytes(np.arange(5.0)),
         ["the array has shape (5,); a 2-D array (rows = samples, last column = target) "
          "is needed", "Save a 2-D array, or X and y separately in an .npz"]),
    case("npy-object-array", "objects.npy",
         npy_bytes(np.array([{"a": 1}, None], dtype=object), allow_pickle=True),
         ["the array holds Python objects, which are not loaded for safety",
          "Save a numeric array"]),
    case("npy-string-array", "strings.npy", npy_bytes(np.array([["a", "b"], ["c", "d"]])),
         ["the array holds <U1 values, not numbers", "Store the data as a numeric array"]),
    case("mat-y-2d", "shape.mat", mat_bytes(X=np.ones((4, 3)), y=np.ones((2, 2))),
         ["the array 'y' has shape (2, 2); it must be 1-D (one target value per sample)",
          "Save a single target vector"]),
    case("mat-length-mismatch", "rows.mat", mat_bytes(X=np.ones((4, 3)), y=np.ones((5, 1))),
         ["'X' has 4 rows but 'y' has 5 values", "Both must have one entry per sample"]),
    case("svmlight-bad-pair", "pairs.svm", b"1 1:0.5 2:0.25\n# note\n-1 1:0.2 2=0.7\n",
         ["'2=0.7' is not an index:value pair", "Write features as index:value, e.g. 3:0.25"],
         line=3, column=3),
    case("svmlight-bad-label", "labels.libsvm", b"1 1:2\nyes 1:3\n",
         ["'yes' is not a numeric label",
          "Each line must start with the target value, then index:value pairs"],
         line=2, column=1),
    case("svmlight-decreasing-index", "order.svm", b"1 1:2 3:4\n2 3:1 2:5\n",
         ["feature index 2 is negative or not increasing",
          "Indices must be non-negative and in increasing order"], line=2, column=3),
    case("arff-without-relation", "norel.arff",
         b"@attribute a numeric\n@attribute b numeric\n@data\n1,2\n",
         ["this is not an ARFF file: there is no @relation line",
          "An ARFF file starts with @relation, @attribute lines and @data"]),
    case("unknown-extension", "data.xls", b"\xd0\xcf\x11\xe0old excel",
         ["unknown file type '.xls'",
          "Use .csv, .tsv, .tab, .txt, .dat, .data, .npy, .npz, .svm, .svmlight, .libsvm, "
          ".arff, .mat, .xlsx, .parquet, or a text table compressed as .bz2, .gz or .zip"]),
    case("damaged-xlsx", "data.xlsx", b"PK\x03\x04not really a workbook",
         ["the .xlsx workbook is damaged (not a readable zip archive)",
          "Save it again from the spreadsheet program"]),
    case("csv-named-xlsx", "data.xlsx", b"a,b\n1,2\n",
         ["this is text, not an Excel .xlsx workbook"]),
    case("no-extension", "README", b"1,2\n3,4\n",
         ["unknown file type '(no extension)'", "Use .csv"]),
    case("missing-file", "missing.csv", None,
         ["the file does not exist", "Check the path"]),
]


#: How the command line names the data options the messages above point to.
CLI_FLAGS = {"the data option drop_nan=true": "--drop-nan",
             "the data option target=NAME": "--target NAME",
             "the data option text_features=onehot": "--text-features onehot",
             "the data option drop_columns=b": "--drop-columns b",
             "the data option drop_columns=a,b": "--drop-columns a,b"}


def _write(tmp_path: Path, name: str, content: bytes | None) -> Path:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    return path


def _prefix(name: str, line: int | None, column: int | None) -> str:
    where = [name]
    if line is not None:
        where.append(f"line {line}")
    if column is not None:
        where.append(f"column {column}")
    return ", ".join(where) + ": "


@pytest.mark.parametrize(("name", "content", "kwargs", "line", "column", "fragments"), CASES)
def test_bad_file_raises_clear_data_error(tmp_path, name, content, kwargs, line, column,
                                          fragments):
    path = _write(tmp_path, name, content)
    with pytest.raises(DataError) as info:
        load_table(path, **kwargs)
    err = info.value
    message = str(err)
    assert message.startswith(_prefix(name, line, column)), message
    assert (err.line, err.column) == (line, column)
    assert err.path == str(path)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    # "<problem>. <Fix>." on one line
    assert message.endswith(".")
    assert "\n" not in message
    assert err.fix and message.endswith(err.fix[:1].upper() + err.fix[1:].rstrip(".") + ".")
    assert "Traceback" not in message


@pytest.mark.parametrize(("name", "content", "kwargs", "line", "column", "fragments"), CASES)
def test_cli_reports_bad_file_on_one_line(tmp_path, capsys, name, content, kwargs, line,
                                          column, fragments):
    path = _write(tmp_path, name, content)
    with pytest.raises(DataError) as info:
        load_table(path, **kwargs)
    expected = str(info.value)

    out = tmp_path / "out"
    argv = ["run", "krr-path", "--data", str(path), "--out", str(out), "-q", "--no-plot"]
    if "target" in kwargs:
        argv.append(f"--target={kwargs['target']}")
    if "text_features" in kwargs:
        argv.append(f"--text-features={kwargs['text_features']}")
    code = main(argv)
    captured = capsys.readouterr()
    # the command line names its own flag where the message points to a data option
    for option, flag in CLI_FLAGS.items():
        expected = expected.replace(option, flag)
        fragments = [f.replace(option, flag) for f in fragments]

    assert code == 2
    assert captured.out == ""
    assert "Traceback" not in captured.err
    assert captured.err.endswith("\n")
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0] == f"kernel-lab: error: {expected}"
    assert _prefix(name, line, column) in lines[0]
    for fragment in fragments:
        assert fragment in lines[0]
    assert not out.exists()


# ------------------------------------------------------------------------------------
# Messages that name every column, each with its own count
# ------------------------------------------------------------------------------------
def test_unknown_target_lists_every_column(tmp_path):
    """A wide table (18 columns, like AER's CASchools) is listed to its last column."""
    names = [f"col{j:02d}" for j in range(16)] + ["read", "math"]
    path = tmp_path / "wide.csv"
    path.write_text(",".join(names) + "\n" + ",".join(str(j) for j in range(18)) + "\n"
                    + ",".join(str(j + 1) for j in range(18)) + "\n")
    with pytest.raises(DataError) as info:
        load_table(path, target="nope")
    message = str(info.value)
    assert "Choose one of: " + ", ".join(names) + ", or give a 0-based column index" in message
    assert "…" not in message


def test_missing_values_are_counted_column_by_column(tmp_path):
    """Each column's own count (not the rows affected over all columns), the target's
    included; the rows in all and the line of the first."""
    rng = np.random.default_rng(3)
    n = 40
    cells = rng.normal(size=(n, 4)).round(3).astype(str)
    holes = {0: [5, 9], 2: [5], 3: [1, 5, 9, 20]}  # a: 2, c: 1, target t: 4
    for j, rows in holes.items():
        cells[rows, j] = "NA"
    path = tmp_path / "holes.csv"
    path.write_text("a,b,c,t\n" + "\n".join(",".join(r) for r in cells) + "\n")
    with pytest.raises(DataError) as info:
        load_table(path, target="t")
    err, message = info.value, str(info.value)
    bad_rows = sorted({r for rows in holes.values() for r in rows})
    assert err.line == bad_rows[0] + 2  # header, 1-based
    assert (f"missing or non-finite values in {len(bad_rows)} of {n} rows (the first here); "
            "rows per column: 'a' 2, 'c' 1, target 't' 4.") in message
    assert "'b'" not in message
    assert message.endswith("Clean the file, or choose to drop rows with missing values "
                            "(the data option drop_nan=true).")


def test_the_missing_value_hint_names_the_control_of_each_place():
    """One message, its control named where it is shown."""
    from kernel_lab.core.errors import data_option, name_controls

    text = f"clean it, or drop them ({data_option('drop_nan', 'true')}); or " \
           f"{data_option('subsample', 'N')}."
    assert name_controls(text, {"drop_nan": "--drop-nan",
                                "subsample": "--subsample {value}"}) == \
        "clean it, or drop them (--drop-nan); or --subsample N."
    assert name_controls(text, {"subsample": "--subsample 2242"}) == \
        "clean it, or drop them (the data option drop_nan=true); or --subsample 2242."
    assert name_controls(text, {}) == text
