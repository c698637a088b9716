"""Tables as they come: Windows-1252 text, a delimiter at the end of every line, CSV
compressed as .gz/.bz2/.zip (a decompression bomb stopped by a cap), workbooks written by
openpyxl and pandas, svmlight files written by scikit-learn — each read to the same table
as its plain UTF-8 CSV, with a note saying what was done, or refused naming the file."""

from __future__ import annotations

import bz2
import gzip
import io
import zipfile

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from kernel_lab.cli import main
from kernel_lab.core.errors import DataError
from kernel_lab.data import raw as raw_module
from kernel_lab.data.read import load_table

CITIES = "größe,ort,preis\n1.5,München,3\n2.5,Zürich,4\n3.5,München,5\n4.5,Köln,6\n"


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def same_table(a, b) -> None:
    assert_array_equal(a.X, b.X)
    assert_array_equal(a.y, b.y)
    assert a.feature_names == b.feature_names and a.target_name == b.target_name
    assert a.classes == b.classes


# -- encodings ------------------------------------------------------------------------------
def test_a_latin1_table_is_read_with_a_note(tmp_path):
    utf8 = load_table(write(tmp_path, "u.csv", CITIES))
    latin = load_table(write(tmp_path, "l.csv", CITIES.encode("latin-1")))
    same_table(latin, utf8)
    assert "ort=München" in latin.feature_names
    assert latin.notes[0] == ("read as Windows-1252 (Latin-1) text: it is not UTF-8 (byte "
                              "0xf6 on line 1); save it as UTF-8 to be sure of its accents")
    assert latin.notes[1:] == utf8.notes


def test_windows_1252_signs_and_a_numeric_body_take_the_fast_path(tmp_path):
    text = "preis €,menge,y\n1,2,3\n4,5,6\n"
    table = load_table(write(tmp_path, "w.csv", text.encode("cp1252")))
    assert table.feature_names == ["preis €", "menge"]
    assert_array_equal(table.X, [[1, 2], [4, 5]])
    assert table.notes[0].startswith(
        "read as Windows-1252 (Latin-1) text: it is not UTF-8 (byte 0x80 on line 1)")


def test_bytes_no_text_encoding_explains_are_still_refused(tmp_path):
    with pytest.raises(DataError, match=r"x.csv, line 2: byte 0x81 is not valid UTF-8 text"):
        load_table(write(tmp_path, "x.csv", b"a,b\n\x81\x82,2\n3,4\n"))
    with pytest.raises(DataError, match=r"c.csv, line 2: byte 0xe9 is not valid UTF-8"):
        load_table(write(tmp_path, "c.csv", b"a,b\n\xe9\x01,2\n3,4\n"))  # control bytes


# -- a delimiter at the end of the lines ----------------------------------------------------
@pytest.mark.parametrize("header", ["a,b,y,", "a,b,y"])
def test_an_empty_trailing_column_is_dropped_with_a_note(tmp_path, header):
    plain = load_table(write(tmp_path, "p.csv", "a,b,y\n1,2,3\n4,,6\n7,8,9\n"),
                       nan_policy="drop")
    trailing = load_table(write(tmp_path, "t.csv", f"{header}\n1,2,3,\n4,,6,\n7,8,9,\n"),
                          nan_policy="drop")
    same_table(trailing, plain)
    assert_array_equal(trailing.lines, plain.lines)
    assert trailing.notes == ["dropped an empty column at the end of the rows (a ',' at the "
                              "end of the lines)", *plain.notes]


def test_a_trailing_delimiter_on_a_numeric_table_and_a_real_empty_column(tmp_path):
    table = load_table(write(tmp_path, "n.csv", "a;b;y;\n1;2;3;\n4;5;6;\n"))
    assert_array_equal(table.X, [[1, 2], [4, 5]])
    assert table.feature_names == ["a", "b"]
    assert table.notes[0].startswith("dropped an empty column at the end of the rows (a ';'")
    # a named column left empty is a column with missing values, not a trailing delimiter
    with pytest.raises(DataError, match="missing or non-finite values in 2 of 2 rows"):
        load_table(write(tmp_path, "e.csv", "a,b,y,z\n1,2,3,\n4,5,6,\n"), target="z")
    # a short row is still named
    with pytest.raises(DataError, match=r"r.csv, line 3: this row has 2 fields but the "
                                        "header has 3"):
        load_table(write(tmp_path, "r.csv", "a,b,y,\n1,2,3,\n4,5\n"))


# -- compressed text tables -----------------------------------------------------------------
def zipped(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_gzip_bzip2_and_zip_tables_read_as_the_plain_file(tmp_path):
    text = CITIES.encode()
    plain = load_table(write(tmp_path, "c.csv", text))
    for name, data in (("c.csv.gz", gzip.compress(text)), ("c.tsv.bz2", bz2.compress(
            text.replace(b",", b"\t"))), ("c.zip", zipped({"inside/c.csv": text}))):
        table = load_table(write(tmp_path, name, data))
        same_table(table, plain)
        assert_array_equal(table.lines, plain.lines)
        extra = ["read 'inside/c.csv' from the zip archive"] if name.endswith("zip") else []
        assert table.notes == [*extra, *plain.notes], name


def test_a_numeric_gzipped_table_takes_the_fast_path(tmp_path):
    M = np.round(np.random.default_rng(0).normal(size=(50, 3)), 6)
    buf = io.StringIO()
    np.savetxt(buf, M, delimiter=",", header="a,b,y", comments="", fmt="%.17g")
    table = load_table(write(tmp_path, "m.csv.gz", gzip.compress(buf.getvalue().encode())))
    assert_array_equal(table.X, M[:, :2])
    assert_array_equal(table.y, M[:, 2])
    assert_array_equal(table.lines, np.arange(2, 52))


# the archives' bytes hold the time they were made: the test ids are their names only, or
# two pytest-xdist processes collecting a second apart see different tests
ARCHIVES = [
    ("two.zip", zipped({"a.csv": b"a,y\n1,2\n", "b.csv": b"a,y\n1,2\n"}),
     "the zip archive holds 2 tables (a.csv, b.csv), and which one to read is not clear"),
    ("none.zip", zipped({"notes.md": b"hello"}),
     "the zip archive holds no text table (it has: notes.md)"),
    ("cut.csv.gz", gzip.compress(CITIES.encode(), mtime=0)[:30],
     "the gzip file cannot be decompressed: it is damaged or not gzip"),
    ("plain.csv.bz2", CITIES.encode(), "the bzip2 file cannot be decompressed"),
    ("broken.zip", b"PK\x03\x04broken", "the zip file cannot be decompressed"),
]


@pytest.mark.parametrize(("name", "data", "words"), ARCHIVES, ids=[a[0] for a in ARCHIVES])
def test_archives_that_hold_no_single_table_are_refused_by_name(tmp_path, capsys, name,
                                                                data, words):
    path = write(tmp_path, name, data)
    with pytest.raises(DataError, match=words.replace("(", r"\(").replace(")", r"\)")):
        load_table(path)
    code = main(["run", "krr-path", "--data", str(path), "--out", str(tmp_path / "o"), "-q",
                 "--no-plot"])
    err = capsys.readouterr().err
    assert code == 2 and name in err and words in err and "Traceback" not in err


def test_a_decompression_bomb_stops_at_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(raw_module, "MAX_EXPANDED", 2**20)
    bomb = gzip.compress(b"a,y\n" + b"1,2\n" * 2**19)  # 2 MB of text in 4 KB
    assert len(bomb) < 2**14
    with pytest.raises(DataError, match=r"bomb.csv.gz: the gzip file expands to more than "
                                        r"1 MB\. Decompress it yourself"):
        load_table(write(tmp_path, "bomb.csv.gz", bomb))
    with pytest.raises(DataError, match="the zip file expands to more than 1 MB"):
        load_table(write(tmp_path, "bomb.zip", zipped({"t.csv": b"a,y\n" + b"1,2\n" * 2**19})))
    rows = pd.DataFrame({"a": np.arange(2**17), "y": np.arange(2**17)})
    rows.to_excel(tmp_path / "bomb.xlsx", index=False)  # ≈ 6 MB of XML
    with pytest.raises(DataError, match=r"bomb\.xlsx: the workbook expands to more than 2 MB"):
        load_table(tmp_path / "bomb.xlsx")


# -- workbooks from openpyxl and pandas -----------------------------------------------------
def test_workbooks_written_by_openpyxl_and_pandas_read_as_the_csv(tmp_path):
    from openpyxl import Workbook

    frame = pd.read_csv(io.StringIO(CITIES))
    plain = load_table(write(tmp_path, "c.csv", CITIES))
    frame.to_excel(tmp_path / "pandas.xlsx", index=False, sheet_name="Preise")
    book = Workbook()
    book.active.title = "leer"
    sheet = book.create_sheet("daten")
    sheet.append(list(frame.columns))
    for row in frame.itertuples(index=False):
        sheet.append(list(row))
    sheet["E9"] = "=SUM(C2:C5)"  # a formula far away: read as text of its own column
    book.save(tmp_path / "openpyxl.xlsx")
    by_pandas = load_table(tmp_path / "pandas.xlsx")
    same_table(by_pandas, plain)
    assert_array_equal(by_pandas.lines, plain.lines)
    by_openpyxl = load_table(tmp_path / "openpyxl.xlsx", sheet="daten", target="preis")
    assert_array_equal(by_openpyxl.y, plain.y)
    assert by_openpyxl.feature_names[:4] == plain.feature_names
    assert "read worksheet 'daten' of 2" in by_openpyxl.notes
    with pytest.raises(DataError, match="the worksheet 'leer' is empty"):
        load_table(tmp_path / "openpyxl.xlsx")


def test_xlsx_is_read_by_openpyxl_in_read_only_mode(tmp_path, monkeypatch):
    import openpyxl

    frame = pd.read_csv(io.StringIO(CITIES))
    frame.to_excel(tmp_path / "b.xlsx", index=False)
    seen = []
    real = openpyxl.load_workbook
    monkeypatch.setattr(openpyxl, "load_workbook",
                        lambda *a, **k: seen.append(k) or real(*a, **k))
    load_table(tmp_path / "b.xlsx")
    assert seen and seen[0]["read_only"] is True


# -- svmlight from scikit-learn -------------------------------------------------------------
@pytest.mark.parametrize("zero_based", [True, False])
def test_svmlight_written_by_scikit_learn_round_trips(tmp_path, zero_based):
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 6)) * (rng.random((30, 6)) < 0.4)
    X[:, 0] += 1.0  # the first column is never empty: the file's indices start at 0 or 1
    y = rng.normal(size=30)
    path = tmp_path / "d.svm"
    dump_svmlight_file(X, y, str(path), zero_based=zero_based, comment="written by scikit-learn")
    table = load_table(path)
    # scikit-learn writes 16 significant digits: equal to the last bit but one
    assert_allclose(table.X, X, rtol=1e-15, atol=0)
    assert_allclose(table.y, y, rtol=1e-15)
    assert_array_equal(table.X == 0, X == 0)
    first = 0 if zero_based else 1
    assert table.feature_names == [f"x{j + first}" for j in range(6)]
    assert_array_equal(table.lines, np.arange(30) + 1 + path.read_text().count("#"))


def test_svmlight_is_parsed_by_scikit_learn(tmp_path, monkeypatch):
    import sklearn.datasets

    def refuse(*args, **kwargs):
        raise RuntimeError("scikit-learn's reader was asked")

    monkeypatch.setattr(sklearn.datasets, "load_svmlight_file", refuse)
    with pytest.raises(DataError, match="scikit-learn's reader was asked"):
        load_table(write(tmp_path, "d.svm", "1 1:2\n"))


def test_svmlight_duplicate_index_is_located(tmp_path):
    with pytest.raises(DataError, match=r"dup.svm, line 2, column 3: feature index 1 is "
                                        "negative or not increasing"):
        load_table(write(tmp_path, "dup.svm", "1 1:2\n2 1:3 1:4\n"))


# -- found trying odd files -----------------------------------------------------------------
def test_delimiters_only_and_classic_mac_line_ends(tmp_path):
    for text in (",,,\n,,,\n", ",\n", "#\n,\n"):
        with pytest.raises(DataError, match=r"e.csv: the file has no data lines \(only blank "
                                            r"or comment lines\)"):
            load_table(write(tmp_path, "e.csv", text))
    mac = load_table(write(tmp_path, "mac.csv", "a,b,y\r1,2,3\r4,5,6\r"))
    assert_array_equal(mac.X, [[1, 2], [4, 5]])
    assert_array_equal(mac.lines, [2, 3])
    mixed = load_table(write(tmp_path, "m.csv", "a,k,y\r1,u,3\r4,v,6\r7,u,9\r"))
    assert mixed.feature_names == ["a", "k=u", "k=v"]
    assert_array_equal(mixed.lines, [2, 3, 4])


# -- found by review: cells openpyxl types, '#' cells, the hint for unknown types -------------
def _serial(value, epoch):
    """Days since the workbook's epoch as Excel stores them (the 1900 system counts from
    1899-12-30, its phantom 29 February 1900 included for every date after it)."""
    import datetime as dt

    if isinstance(value, dt.time):
        return (value.hour * 3600 + value.minute * 60 + value.second) / 86400
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    return (value - epoch).total_seconds() / 86400


@pytest.mark.parametrize("mac", [False, True])
def test_xlsx_dates_times_and_booleans_are_read_as_the_numbers_excel_stores(tmp_path, mac):
    import datetime as dt

    from openpyxl import Workbook
    from openpyxl.utils.datetime import CALENDAR_MAC_1904

    days = [dt.date(2024, 1, 1) + dt.timedelta(days=37 * i) for i in range(12)]
    stamps = [dt.datetime(2023, 3, 5, 6) + dt.timedelta(hours=29 * i) for i in range(12)]
    times = [dt.time(i, 15 * (i % 4)) for i in range(12)]
    flags = [i % 3 == 0 for i in range(12)]
    book = Workbook()
    if mac:
        book.epoch = CALENDAR_MAC_1904
    sheet = book.active
    sheet.append(["day", "stamp", "clock", "flag", "y"])
    for i in range(12):
        sheet.append([days[i], stamps[i], times[i], flags[i], 0.5 * i])
    book.save(tmp_path / "d.xlsx")
    epoch = dt.datetime(1904, 1, 1) if mac else dt.datetime(1899, 12, 30)
    table = load_table(tmp_path / "d.xlsx")
    assert table.feature_names == ["day", "stamp", "clock", "flag"]
    assert_allclose(table.X[:, 0], [_serial(d, epoch) for d in days], rtol=0, atol=0)
    assert_allclose(table.X[:, 1], [_serial(s, epoch) for s in stamps], rtol=1e-15)
    assert_allclose(table.X[:, 2], [_serial(t, epoch) for t in times], rtol=1e-15)
    assert_array_equal(table.X[:, 3], np.array(flags, dtype=float))
    assert_array_equal(table.y, 0.5 * np.arange(12))
    assert any("day" in n and "Excel" in n for n in table.notes), table.notes


SPREADSHEET_ERRORS = ["#N/A", "#NA", "#VALUE!", "#DIV/0!", "#NUM!", "#REF!", "#NAME?",
                      "#NULL!"]


@pytest.mark.parametrize("error", SPREADSHEET_ERRORS)
def test_spreadsheet_error_values_are_missing_cells_wherever_they_stand(tmp_path, error):
    text = f"a,b,y\n{error},2,3\n4,5,6\n7,{error},9\n10,11,12\n"
    path = write(tmp_path, "e.csv", text)
    with pytest.raises(DataError, match=r"missing or non-finite values in 2 of 4 rows"):
        load_table(path)
    table = load_table(path, nan_policy="drop")
    assert_array_equal(table.dropped, [0, 2])  # marked, their rows kept in place
    keep = table.kept()
    assert_array_equal(table.X[keep], [[4, 5], [10, 11]])
    assert_array_equal(table.y[keep], [6, 12])
    assert_array_equal(table.lines[keep], [3, 5])
    assert table.notes == ["dropped 2 of 4 rows with missing or non-finite values"]
    # first in a row without a header, and in a whitespace-delimited table
    bare = load_table(write(tmp_path, "e.txt", f"{error} 2 3\n4 5 6\n7 8 9\n"),
                      nan_policy="drop")
    assert_array_equal(bare.dropped, [0])
    assert_array_equal(bare.X[bare.kept()], [[4, 5], [7, 8]])
    assert_array_equal(bare.lines[bare.kept()], [2, 3])


def test_comment_lines_are_skipped_with_a_note_saying_how_many(tmp_path):
    text = "# made by hand\na,b,y\n1,2,3\n# a note\n  # indented\n4,5,6\n"
    table = load_table(write(tmp_path, "c.csv", text))
    assert_array_equal(table.X, [[1, 2], [4, 5]])
    assert_array_equal(table.lines, [3, 6])
    assert table.notes == ["skipped 3 comment lines (starting with '#'): lines 1, 4, 5"]
    quoted = load_table(write(tmp_path, "q.csv", text.replace("1,2,3", '"1",2,3')))
    assert_array_equal(quoted.X, table.X)  # (quotes: read by the text-cell path)
    assert quoted.notes == table.notes
    one = load_table(write(tmp_path, "o.csv", "a,y\n# gone\n1,2\n3,4\n"))
    assert one.notes == ["skipped a comment line (starting with '#'): line 2"]


def test_the_unknown_type_hint_names_every_readable_extension(tmp_path):
    from kernel_lab.data.read import FILE_PATTERNS

    with pytest.raises(DataError) as info:
        load_table(write(tmp_path, "d.weird", "1,2\n"))
    message = str(info.value)
    for pattern in FILE_PATTERNS:
        for part in pattern.lstrip("*").split(".")[1:]:
            assert f".{part}" in message, (pattern, message)


# -- the preview shown at once while a table loads ----------------------------------------
def test_the_preview_reads_compressed_and_windows_1252_tables_as_the_load_does(tmp_path):
    """The data panel's instant preview (peek_rows) showed nothing for a compressed table
    and 'M\ufffdller' for a Windows-1252 one until the load finished; now it shows the
    cells the load reads, and of a bomb it expands no more than its 64 KB head."""
    from kernel_lab.data.read import peek_rows

    text = "name\tcity\ty\nMüller\tZürich\t1\nÅse\tOslo\t2\n"
    expected = (["name", "city", "y"], [["Müller", "Zürich", "1"], ["Åse", "Oslo", "2"]])
    files = {
        "a.tsv.gz": gzip.compress(text.encode("utf-8")),
        "b.csv": text.replace("\t", ",").encode("cp1252"),
        "c.zip": zipped({"t.csv": text.replace("\t", ",").encode("utf-8")}),
        "d.csv.bz2": bz2.compress(text.replace("\t", ";").encode("utf-8")),
    }
    for name, data in files.items():
        path = write(tmp_path, name, data)
        assert peek_rows(path) == expected, name
        table = load_table(path, target="y")
        assert table.y.tolist() == [1.0, 2.0], name
    bomb = write(tmp_path, "bomb.csv.gz", gzip.compress(b"a,y\n" + b"1,2\n" * 2**24))
    names, rows = peek_rows(bomb, rows=3)
    assert names == ["a", "y"] and rows == [["1", "2"]] * 3
