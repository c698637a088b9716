"""Tables as people have them: text targets become classes, text features one-hot
columns (or dropped, with a note), row-index columns are dropped, .xlsx workbooks load like
CSV, and a seeded subsample makes a large table usable by the exact methods."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from kernel_lab.cli import main
from kernel_lab.core.errors import DataError, ParameterError
from kernel_lab.data.read import load_table
from kernel_lab.data.source import DataSource, load_data
from kernel_lab.data.table import MAX_LEVELS

IRIS_LIKE = ("sepal,petal,species\n"
             "5.1,1.4,setosa\n7.0,4.7,versicolor\n6.3,6.0,virginica\n"
             "4.9,1.5,setosa\n6.4,4.5,versicolor\n5.8,5.1,virginica\n")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# -- text targets -------------------------------------------------------------------------
def test_a_two_class_text_target_becomes_pm1_and_says_which_is_plus_one(tmp_path):
    path = write(tmp_path, "spam.csv", "len,caps,label\n10,1,spam\n3,0,ham\n8,1,spam\n2,0,ham\n")
    table = load_table(path)
    assert_array_equal(table.y, [1, -1, 1, -1])
    assert table.classes is None
    assert table.notes == ["text target 'label': 'spam' is +1, 'ham' is −1"]
    ds = load_data(f"{path}:test_fraction=0.25")
    assert ds.task == "classification" and set(ds.y_train) | set(ds.y_test) == {-1.0, 1.0}


def test_three_text_classes_are_multiclass_and_other_experiments_name_the_one_that_can(
        tmp_path):
    path = write(tmp_path, "iris.csv", IRIS_LIKE)
    table = load_table(path)
    assert_array_equal(table.y, [0, 1, 2, 0, 1, 2])
    assert table.classes == ["setosa", "versicolor", "virginica"]
    assert table.notes == ["text target 'species': 3 classes coded 0 … 2 "
                           "(setosa, versicolor, virginica)"]
    ds = load_data(f"{path}:test_fraction=0.34")
    assert ds.task == "multiclass"
    from kernel_lab.experiments import get_experiment
    from kernel_lab.experiments.registry import check_task

    check_task(get_experiment("learning-curve"), ds)  # DSG's multinomial loss: fine
    with pytest.raises(ParameterError, match=r"'krr-path' cannot run .* \(3 classes\); "
                                             r"learning-curve can"):
        check_task(get_experiment("krr-path"), ds)


def test_a_mostly_numeric_column_with_a_stray_word_is_still_an_error(tmp_path):
    path = write(tmp_path, "typo.csv", "a,b,y\n1,2,3\n4,five,6\n7,8,9\n")
    with pytest.raises(DataError, match=r"typo.csv, line 3, column 2: 'five' in column 'b' "
                                        r"is not a number.*fix this cell if it is a typo"):
        load_table(path)


# -- text features ------------------------------------------------------------------------
DIAMONDS = ("carat,cut,color,price\n"
            "0.23,Ideal,E,326\n0.21,Premium,E,326\n0.23,Good,E,327\n"
            "0.29,Premium,I,334\n0.31,Good,J,335\n0.24,Very Good,J,336\n")


def test_categorical_features_are_one_hot_encoded_in_place(tmp_path):
    table = load_table(write(tmp_path, "diamonds.csv", DIAMONDS))
    assert table.feature_names == ["carat", "cut=Good", "cut=Ideal", "cut=Premium",
                                   "cut=Very Good", "color=E", "color=I", "color=J"]
    assert_array_equal(table.X[0], [0.23, 0, 1, 0, 0, 1, 0, 0])
    assert_array_equal(table.X[5], [0.24, 0, 0, 0, 1, 0, 0, 1])
    assert_array_equal(table.X[:, 1:5].sum(axis=1), 1)  # one level per row
    assert_array_equal(table.y, [326, 326, 327, 334, 335, 336])
    assert table.notes == [
        "one-hot encoded text column 'cut' into 4 columns (Good, Ideal, Premium, Very Good)",
        "one-hot encoded text column 'color' into 3 columns (E, I, J)"]


def test_text_features_can_be_dropped_instead(tmp_path):
    path = write(tmp_path, "diamonds.csv", DIAMONDS)
    table = load_table(path, text_features="drop")
    assert table.feature_names == ["carat"]
    assert table.notes == ["dropped text column 'cut' (text_features=drop)",
                           "dropped text column 'color' (text_features=drop)"]
    ds = load_data(f"{path}:text_features=drop,test_fraction=0.34")
    assert ds.p == 1 and ds.notes[0] == table.target_note and ds.notes[1:3] == table.notes


def test_text_with_too_many_values_is_dropped_with_a_note(tmp_path):
    n = MAX_LEVELS + 10
    rows = "".join(f"{i},name{i % (MAX_LEVELS + 1)},{'ab'[i % 2]},{i * 0.5}\n" for i in range(n))
    table = load_table(write(tmp_path, "wide.csv", "x,who,grp,y\n" + rows))
    assert table.feature_names == ["x", "grp=a", "grp=b"]
    assert table.notes[0] == (f"dropped text column 'who': {MAX_LEVELS + 1} distinct values "
                              f"(more than {MAX_LEVELS}), too many to encode")
    unique = load_table(write(tmp_path, "u.csv", "x,name,y\n1,ann,1\n2,bob,2\n3,cy,3\n"))
    assert unique.feature_names == ["x"]
    assert unique.notes == ["dropped text column 'name': 3 distinct values (one per row), "
                            "too many to encode"]


# -- index columns --------------------------------------------------------------------------
@pytest.mark.parametrize(("header", "index", "why"), [
    ('"",a,y', ["1", "2", "3", "4"], "R's write.csv: an empty header"),
    ("rownames,a,y", ["Mazda", "Fiat", "Volvo", "Saab"], "R data sets: row names"),
    ("Unnamed: 0,a,y", ["0", "1", "2", "3"], "pandas' to_csv"),
    ("index,a,y", ["0", "1", "2", "3"], "pandas' reset_index"),
    ("id,a,y", ["3", "1", "4", "2"], "an id holding 1 … n"),
    ("ID,a,y", ["0", "2", "1", "3"], "an id holding 0 … n−1"),
])
def test_an_index_first_column_is_dropped_with_a_note(tmp_path, header, index, why):
    body = "".join(f"{i},{a},{a * 2}\n" for i, a in zip(index, (1.5, 2.5, 3.5, 4.5),
                                                       strict=True))
    path = write(tmp_path, "t.csv", header + "\n" + body)
    table = load_table(path)
    assert table.feature_names == ["a"], why
    assert_array_equal(table.X[:, 0], [1.5, 2.5, 3.5, 4.5])
    assert table.notes[0].startswith("dropped the first column") and "row index" in \
        table.notes[0] and "keep_index=true" in table.notes[0]
    kept = load_table(path, keep_index=True)
    if index[0] == "Mazda":  # kept, but text with a value per row: not encodable
        assert kept.feature_names == ["a"] and kept.notes[0].startswith(
            "dropped text column 'rownames': 4 distinct values (one per row)")
    else:
        assert kept.feature_names[1] == "a" and len(kept.feature_names) == 2


def test_an_id_that_is_not_a_row_number_and_a_counter_named_x_are_kept(tmp_path):
    ids = load_table(write(tmp_path, "ids.csv", "id,a,y\n10,1,2\n20,2,3\n30,3,4\n"))
    assert ids.feature_names == ["id", "a"] and ids.notes == []
    curve = load_table(write(tmp_path, "curve.csv", "x,z,y\n1,0,2\n2,1,3\n3,0,4\n"))
    assert curve.feature_names == ["x", "z"]


# -- xlsx ----------------------------------------------------------------------------------
def xlsx_bytes(sheets: dict[str, list[list[object]]]) -> bytes:
    """A minimal .xlsx workbook written by hand: shared strings, inline strings, numbers,
    empty cells left out (as spreadsheet programs do), and the package parts every
    workbook has (the content types and the root relationship)."""
    shared: list[str] = []

    def col(i: int) -> str:
        out = ""
        i += 1
        while i:
            i, r = divmod(i - 1, 26)
            out = chr(65 + r) + out
        return out

    parts = {}
    for k, rows in enumerate(sheets.values(), start=1):
        xml_rows = []
        for r, row in enumerate(rows, start=1):
            cells = []
            for c, v in enumerate(row):
                ref = f"{col(c)}{r}"
                if v is None:
                    continue
                if isinstance(v, str) and c % 2 == 0:
                    if v not in shared:
                        shared.append(v)
                    cells.append(f'<c r="{ref}" t="s"><v>{shared.index(v)}</v></c>')
                elif isinstance(v, str):
                    cells.append(f'<c r="{ref}" t="inlineStr"><is><t>{v}</t></is></c>')
                else:
                    cells.append(f'<c r="{ref}"><v>{v!r}</v></c>')
            xml_rows.append(f'<row r="{r}">{"".join(cells)}</row>')
        parts[f"xl/worksheets/sheet{k}.xml"] = (
            '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
            f'<sheetData>{"".join(xml_rows)}</sheetData></worksheet>')
    ns = ('xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r='
          '"http://schemas.openxmlformats.org/officeDocument/2006/relationships"')
    parts["xl/workbook.xml"] = (f"<workbook {ns}><sheets>" + "".join(
        f'<sheet name="{n}" sheetId="{k}" r:id="rId{k}"/>'
        for k, n in enumerate(sheets, start=1)) + "</sheets></workbook>")
    parts["xl/_rels/workbook.xml.rels"] = (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        + "".join(f'<Relationship Id="rId{k}" Target="worksheets/sheet{k}.xml" Type="x"/>'
                  for k in range(1, len(sheets) + 1)) + "</Relationships>")
    parts["xl/sharedStrings.xml"] = (
        '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        + "".join(f"<si><t>{s}</t></si>" for s in shared) + "</sst>")
    # the package's manifest and root relationship, which every spreadsheet program writes
    kinds = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    parts["[Content_Types].xml"] = (
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{kinds}.sheet.main+xml"/>'
        + "".join(f'<Override PartName="/xl/worksheets/sheet{k}.xml" '
                  f'ContentType="{kinds}.worksheet+xml"/>' for k in range(1, len(sheets) + 1))
        + f'<Override PartName="/xl/sharedStrings.xml" '
          f'ContentType="{kinds}.sharedStrings+xml"/></Types>')
    parts["_rels/.rels"] = (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in parts.items():
            z.writestr(name, text)
    return buf.getvalue()


def test_an_xlsx_workbook_loads_like_the_same_csv(tmp_path):
    rows = [["carat", "cut", "depth", "price"], [0.23, "Ideal", 61.5, 326],
            [0.21, "Premium", None, 326], [0.23, "Good", 56.9, 327], [0.29, "Premium", 62.4, 334]]
    book = write(tmp_path, "d.xlsx", xlsx_bytes({"notes": [["just", "text"]], "data": rows}))
    csv = write(tmp_path, "d.csv", "\n".join(",".join("" if v is None else str(v) for v in r)
                                             for r in rows) + "\n")
    for sheet in ("data", "2"):
        a = load_table(book, sheet=sheet, nan_policy="drop")
        b = load_table(csv, nan_policy="drop")
        assert_array_equal(a.X, b.X)  # the dropped row stays, marked (NaN in both)
        assert_array_equal(a.y, b.y)
        assert_array_equal(a.dropped, [1]) and assert_array_equal(b.dropped, [1])
        assert a.feature_names == b.feature_names
        assert_array_equal(a.lines[a.kept()], [2, 4, 5])  # spreadsheet row numbers
        assert a.notes == [*b.notes[:-1], "read worksheet 'data' of 2", b.notes[-1]]
    with pytest.raises(DataError, match=r"d.xlsx: there is no worksheet 'Sheet9'.*"
                                        r"Choose one of: notes, data"):
        load_table(book, sheet="Sheet9")
    with pytest.raises(DataError, match=r"d.xlsx, line 3: missing or non-finite values in "
                                        r"1 of 4 rows \(here\); rows per column: 'depth' 1\."):
        load_table(book, sheet="data")
    ds = load_data(f"{book}:sheet=data,drop_nan=true,test_fraction=0.34")
    assert ds.n_train + ds.n_test == 3


# -- subsample -----------------------------------------------------------------------------
def test_subsample_is_seeded_noted_and_reproducible(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    path = write(tmp_path, "big.csv", "a,b,c,y\n" + "".join(
        ",".join(repr(float(v)) for v in (*r, r.sum())) + "\n" for r in X))
    src = DataSource.from_spec(f"{path}:subsample=120")
    one, two = src.load(seed=3), src.load(seed=3)
    assert one.n_train + one.n_test == 120
    assert_array_equal(one.X_train, two.X_train)
    assert_array_equal(one.y_test, two.y_test)
    assert "used a random 120 of 500 rows (subsample=120, seed 3, chosen per row)" in one.notes
    other = src.load(seed=4)
    assert not np.array_equal(np.sort(other.y_train), np.sort(one.y_train))
    again = DataSource.from_dict(src.to_dict()).load(seed=3)  # a session round trip
    assert_array_equal(again.X_train, one.X_train)
    whole = DataSource.from_spec(f"{path}:subsample=0").load(seed=3)
    assert whole.n_train + whole.n_test == 500


def test_the_cli_logs_what_was_encoded_and_dropped(tmp_path, capsys):
    rows = DIAMONDS.strip().split("\n")
    path = write(tmp_path, "diamonds.csv", "\n".join(
        [f'"",{rows[0]}'] + [f"{i},{r}" for i, r in enumerate(rows[1:], start=1)]) + "\n")
    out = tmp_path / "out"
    code = main(["run", "krr-path", "--data", str(path), "--test-fraction", "0.34",
                 "--out", str(out), "--no-plot", "--set", "n_lams=4"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "data: dropped the first column '(no name)': a row index" in err
    assert "data: one-hot encoded text column 'cut' into 4 columns" in err
    import json

    result = json.loads((out / "result.json").read_text())
    assert result["data"]["notes"][:4] == [
        "target: column 'price', the last of 4 (choose another with the data option "
        "target=NAME)",
        "dropped the first column '(no name)': a row index (load with keep_index=true to "
        "use it as a feature; a target given by number counts the columns after it)",
        "one-hot encoded text column 'cut' into 4 columns (Good, Ideal, Premium, Very Good)",
        "one-hot encoded text column 'color' into 3 columns (E, I, J)"]


def test_default_sizes_are_fitted_to_a_small_table_but_explicit_ones_are_refused(tmp_path):
    from kernel_lab.engine import RunSpec, run

    rng = np.random.default_rng(2)
    X = rng.normal(size=(47, 3))
    path = write(tmp_path, "small.csv", "a,b,c,y\n" + "".join(
        ",".join(repr(float(v)) for v in (*r, np.sin(r[0]))) + "\n" for r in X))
    src = DataSource.from_spec(str(path))
    result = run(RunSpec("nystrom", {"samplers": ["uniform"]}, src))
    assert result.params["sizes"] == "10,20,35"
    assert "landmark counts 10,20,40,80,160 clamped to the n = 35 training points: " \
           "10,20,35" in result.data["notes"]
    s = result.table["s"]
    assert list(s[np.isfinite(s)]) == [10, 20, 35]  # (padded columns)
    with pytest.raises(ParameterError, match="s = 100 landmarks is more than the n = 35"):
        run(RunSpec("nystrom", {"samplers": ["uniform"], "sizes": "10,100"}, src))


# -- the fast reader -----------------------------------------------------------------------
FAST_CASES = {
    "header.csv": "a,b,y\n1,2,3\n4.5,-6e3,7\n8,9,10\n",
    "no-header.csv": "1,2,3\n4,5,6\n7,8,9\n",
    "tabs.tsv": "a\tb\ty\n1\t2\t3\n4\t5\t6\n",
    "semicolons.txt": "a;b;y\n1;2;3\n4;5;6\n7;8;9\n",
    "spaces.txt": "1 2 3\n4  5 6\n7 8   9\n",
    "comments.csv": "# made by hand\n\na,b,y\n1,2,3\n# a note\n\n4,5,6\n7,8,9\n",
    "crlf.csv": "a,b,y\r\n1,2,3\r\n4,5,6\r\n",
    "index.csv": "Unnamed: 0,a,b,y\n0,1,2,3\n1,4,5,6\n2,7,8,9\n",
    "quoted-header.csv": '"","a","y"\n"1",2,3\n"2",4,5\n"3",6,7\n',
    "target-first.csv": "y,a,b\n1,2,3\n4,5,6\n7,8,9\n",
    "bom.csv": "\ufeffa,b,y\n1,2,3\n4,5,6\n",
    "unicode-header.csv": "größe,λ,y\n1,2,3\n4,5,6\n",
    "exponents.csv": "a,b,y\n1e-300,2E+5,-0\n.5,-.25,+3\n",
    "leading-spaces.txt": "  1 2 3\n\t4 5 6\n 7 8 9 \n",
    "spaced-cells.csv": "a, b, y\n1, 2, 3\n4 ,5 , 6\n",
    "long-digits.csv": "a,b,y\n0.1000000000000000055511151231257827,3,1e-320\n2,3,4\n",
}


@pytest.fixture
def parser():
    """The fast reader's C parser: pandas' (numpy's loadtxt fallback is gone: pandas reads
    every text table now, so it is always installed)."""
    return "pandas"


@pytest.mark.parametrize("name", sorted(FAST_CASES))
def test_the_fast_reader_gives_the_strict_readers_table(tmp_path, name, parser):
    from kernel_lab.data import text as loaders

    path = write(tmp_path, name, FAST_CASES[name])
    raw = path.read_bytes()
    target = "y" if name == "target-first.csv" else None
    fast = loaders._read_csv(path, raw, target)
    strict = loaders._read_csv(path, raw, target, fast=False)
    assert_array_equal(fast.X, strict.X)
    assert_array_equal(fast.y, strict.y)
    assert fast.feature_names == strict.feature_names and fast.notes == strict.notes
    assert fast.target_name == strict.target_name
    assert_array_equal(fast.lines, strict.lines)


@pytest.mark.parametrize("name", sorted(FAST_CASES))
def test_a_large_file_is_parsed_from_its_head_into_the_strict_readers_table(
        tmp_path, monkeypatch, name):
    """Above BIG_TEXT only the file's head is read in Python (pandas parses the file): the
    table is the strict reader's, or the head path declines and the text is read."""
    from kernel_lab.data import text as loaders

    monkeypatch.setattr(loaders, "BIG_TEXT", 0)
    path = write(tmp_path, name, FAST_CASES[name])
    raw = path.read_bytes()
    target = "y" if name == "target-first.csv" else None
    declined = name in ("spaces.txt", "leading-spaces.txt", "comments.csv")
    cut = max(len(raw) // 2, raw.find(b"\n", raw.find(b"y")) + 1)  # the header at least
    head = loaders._read_large_numeric(path, raw[:cut], target, loaders.ReadOptions())
    assert (head is None) == declined
    table = load_table(path, target=target)  # reads the head only, then as needed
    strict = loaders._read_csv(path, raw, target, fast=False)
    assert_array_equal(table.X, strict.X)
    assert_array_equal(table.y, strict.y)
    assert table.feature_names == strict.feature_names and table.notes == strict.notes
    assert_array_equal(table.lines, strict.lines)


def test_the_head_path_leaves_blank_lines_comments_and_text_to_the_full_read(
        tmp_path, monkeypatch):
    from kernel_lab.data import text as loaders

    monkeypatch.setattr(loaders, "BIG_TEXT", 0)
    for text in ("a,b,y\n1,2,3\n\n4,5,6\n", "a,b,y\n1,2,3\n4,5,6\n\n",
                 "a,b,y\n1,2,3\n# x\n4,5,6\n", "a,b,y\n1,2,3\n4,5,oops\n",
                 "a,b,y\n1,2,3\n4,,6\n"):
        path = write(tmp_path, "t.csv", text)
        assert loaders._read_large_numeric(path, path.read_bytes(), None,
                                           loaders.ReadOptions()) is None, text
    path = write(tmp_path, "t.csv", "a,b,y\n1,2,3\n\n4,5,6\n")
    assert_array_equal(load_table(path).lines, [2, 4])
    with pytest.raises(DataError, match="line 3"):
        load_table(write(tmp_path, "u.csv", "a,b,y\n1,2,3\n4,5,oops\n7,8,9\n"))


@pytest.mark.parametrize("cell", ["2.5", "1e200", "-1e200", "inf", "nan", ""])
@pytest.mark.parametrize("drop", ["", "b"])
def test_a_large_file_seen_in_range_skips_the_checks_with_the_same_table_or_refusal(
        tmp_path, monkeypatch, cell, drop):
    """The head path's least and largest value stand for the load's checks of huge,
    missing and infinite values: a file in range loads as it does with the checks made
    (they find nothing); a huge value anywhere (even in a column left out, which the
    checks do not look at) leaves the checks to say what they say on the small file's
    path, and a missing or infinite one leaves the file to the full read."""
    from kernel_lab.data import text as loaders
    from kernel_lab.data.columns import ColumnChoice

    rows = [[f"{i * 0.5:g}", f"{(i % 3) - 1.0:g}", f"{i * i:g}"] for i in range(40)]
    rows[17][1] = cell
    path = write(tmp_path, "t.csv", "a,b,y\n" + "".join(",".join(r) + "\n" for r in rows))
    columns = ColumnChoice.from_options({"drop_columns": drop})

    def outcome():
        try:
            return load_table(path, nan_policy="fill", columns=columns)
        except DataError as exc:
            return str(exc)

    def same(a, b):
        if isinstance(a, str) or isinstance(b, str):
            assert a == b
            return
        assert_array_equal(a.X, b.X)
        assert_array_equal(a.y, b.y)
        assert (a.feature_names, a.notes, a.target_note) == (b.feature_names, b.notes,
                                                             b.target_note)
        assert_array_equal(a.lines, b.lines)

    small = outcome()  # below BIG_TEXT: the whole text read, every check made
    assert isinstance(small, str) == (cell in ("1e200", "-1e200", "inf") and not drop)
    if isinstance(small, str):
        assert ("1e150" in small) == (cell != "inf") and "line 19" in small
    monkeypatch.setattr(loaders, "BIG_TEXT", 0)
    monkeypatch.setattr(loaders, "HEAD_BYTES", 64)
    large = outcome()
    same(large, small)
    if not isinstance(large, str):
        assert large.in_range == (cell == "2.5")
    monkeypatch.setattr(loaders, "MAX_MAGNITUDE", -1.0)  # never in range: every check made
    checked = outcome()
    same(checked, large)
    if not isinstance(checked, str):
        assert not checked.in_range


def test_the_fast_reader_parses_every_digit_as_the_strict_one(tmp_path, parser):
    """Round-trip numbers over 60 decades, written with 17 significant digits: both C
    parsers give the float Python's float() gives, to the last bit."""
    from kernel_lab.data import text as loaders

    rng = np.random.default_rng(3)
    A = rng.normal(size=(3000, 4)) * 10.0 ** rng.integers(-30, 30, size=(3000, 4))
    path = tmp_path / "digits.csv"
    np.savetxt(path, A, delimiter=",", fmt="%.17g", header="a,b,c,y", comments="")
    raw = path.read_bytes()
    fast = loaders._read_csv(path, raw, None)
    assert_array_equal(fast.X, A[:, :3])
    assert_array_equal(fast.y, A[:, 3])
    strict = loaders._read_csv(path, raw, None, fast=False)
    assert_array_equal(fast.X, strict.X)


def test_the_fast_reader_leaves_text_missing_values_and_ragged_rows_to_the_strict_one(
        tmp_path, monkeypatch, parser):
    from kernel_lab.data import text as loaders

    taken = []
    real = loaders._read_numeric_fast
    monkeypatch.setattr(loaders, "_read_numeric_fast",
                        lambda *a: taken.append(real(*a)) or taken[-1])
    for text in ("a,b,y\n1,,3\n4,5,6\n", "a,b,y\n1,NA,3\n4,5,6\n", "a,b,y\n1,2\n4,5,6\n",
                 "a,c,y\n1,x,3\n4,z,6\n", 'a,b,y\n1,"2",3\n4,5,6\n', "a,b,y\n1,nan,3\n4,5,6\n",
                 "a,b,y\n1,2,3,\n4,5,6,\n", "a,b,y\n1,2,3\n4,5,6,7\n", "a,b,y\n1,2,inf\n4,5,6\n",
                 "a,b,y\n1,2,1_000\n4,5,6\n", "a,b,y\n1,2,0x10\n4,5,6\n"):
        path = write(tmp_path, "t.csv", text)
        try:
            load_table(path)
        except DataError:
            pass
        assert taken[-1] is None, text
    load_table(write(tmp_path, "ok.csv", "a,b,y\n1,2,3\n4,5,6\n"))
    assert taken[-1] is not None


# -- found in review -------------------------------------------------------------------------
def test_a_headerless_file_with_a_class_column_keeps_its_first_row(tmp_path):
    path = write(tmp_path, "iris.data", "5.1,3.5,setosa\n4.9,3.0,setosa\n6.0,2.2,versicolor\n"
                                        "6.3,3.3,virginica\n")
    table = load_table(path)
    assert table.feature_names == ["x1", "x2"] and len(table.y) == 4
    assert_array_equal(table.X[0], [5.1, 3.5])
    assert table.classes == ["setosa", "versicolor",
                                                                     "virginica"]
    # a header above text still is one
    named = load_table(write(tmp_path, "h.csv", "a,b,kind\n1,2,x\n3,4,y\n5,6,x\n"))
    assert named.feature_names == ["a", "b"] and named.target_name == "kind"


@pytest.mark.parametrize(("text", "cell"), [
    ("a;b;y\n" + "".join(f"{i},5;{i},25;{i},0\n" for i in range(10)), "0,5"),
    ('a,b,y\n"1,200",1,2\n"3,400",2,3\n"5,600",3,4\n', "1,200"),
    ("a,b,y\n12%,1,2\n13%,2,3\n15%,3,4\n", "12%"),
])
def test_numbers_written_with_commas_or_percent_signs_are_an_error_not_categories(
        tmp_path, text, cell):
    with pytest.raises(DataError, match=rf"line 2, column 1: '{cell}' in column 'a' looks "
                                        r"like a number written with a decimal comma.*'\.' "
                                        "as the decimal point"):
        load_table(write(tmp_path, "odd.csv", text))
    # codes, dates and versions are text, not odd numbers
    ok = load_table(write(tmp_path, "codes.csv", "ip,ver,y\n192.168.0.1,1.2.3,1\n"
                                                  "10.0.0.1,1.2.4,2\n10.0.0.2,1.2.3,3\n"))
    assert "ver=1.2.3" in ok.feature_names


def test_an_empty_category_cell_is_a_level_of_its_own(tmp_path):
    table = load_table(write(tmp_path, "gap.csv", "x,c,y\n1,a,1\n2,,2\n3,b,3\n4,a,4\n"))
    assert table.feature_names == ["x", "c=a", "c=b", "c=(missing)"]
    assert_array_equal(table.X[1], [2, 0, 0, 1])
    assert table.notes == ["one-hot encoded text column 'c' into 2 columns (a, b) and one "
                           "for its 1 empty cells"]


def test_a_target_named_like_the_index_is_not_dropped(tmp_path):
    path = write(tmp_path, "ids.csv", "id,a,b\n1,2,3\n2,5,6\n3,8,9\n")
    table = load_table(path, target="id")
    assert table.target_name == "id" and table.feature_names == ["a", "b"]
    assert load_table(path).feature_names == ["a"]  # otherwise it is an index


def test_subsample_keeps_every_class(tmp_path):
    rows = "".join(f"{i},{'yes' if i < 3 else 'no'}\n" for i in range(80))
    path = write(tmp_path, "rare.csv", "x,label\n" + rows)
    for seed in range(6):
        ds = DataSource.from_spec(f"{path}:subsample=8,test_fraction=0").load(seed=seed)
        assert ds.task == "classification" and set(ds.y_train) == {-1.0, 1.0}
    three = write(tmp_path, "three.csv", "x,k\n" + "".join(
        f"{i},{'abc'[min(i // 30, 2)] if i < 61 else 'c'}\n" for i in range(90)))
    table = load_table(three)
    from kernel_lab.data.split import subsample_table

    small = subsample_table(table, 10, 0)
    assert set(small.y) == {0.0, 1.0, 2.0} and len(small.y) == 10
    assert subsample_table(table, 500, 0).notes[-1] == ("subsample=500: all 90 rows used "
                                                        "(no more in the table)")
    with pytest.raises(DataError, match="cannot hold the 3 classes"):
        subsample_table(table, 2, 0)


def test_xlsx_styled_empty_cells_phonetic_runs_and_cells_without_a_reference(tmp_path):
    book = xlsx_bytes({"s": [["a", "b", "y"], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0],
                             [7.0, 8.0, 9.0]]})
    import re as _re

    zin = zipfile.ZipFile(io.BytesIO(book))
    parts = {n: zin.read(n).decode() for n in zin.namelist()}
    sheet = parts["xl/worksheets/sheet1.xml"]
    # Excel writes styled empty cells past the data, and may leave out r attributes
    sheet = sheet.replace('</row>', '<c r="D1" s="1"/><c r="E1" s="2"/></row>', 1)
    sheet = _re.sub(r'<c r="B3">', '<c>', sheet)
    parts["xl/worksheets/sheet1.xml"] = sheet
    parts["xl/sharedStrings.xml"] = parts["xl/sharedStrings.xml"].replace(
        "<si><t>a</t></si>", '<si><t>a</t><rPh sb="0" eb="1"><t>エー</t></rPh></si>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, t in parts.items():
            z.writestr(n, t)
    table = load_table(write(tmp_path, "styled.xlsx", buf.getvalue()))
    assert table.feature_names == ["a", "b"] and table.target_name == "y"
    assert_array_equal(table.X, [[1, 2], [4, 5], [7, 8]])


def test_an_npy_array_is_memory_mapped_not_copied(tmp_path):
    rng = np.random.default_rng(3)
    M = rng.normal(size=(500, 6))
    path = tmp_path / "m.npy"
    np.save(path, M)
    table = load_table(path)
    assert_array_equal(table.X, M[:, :-1])
    assert_array_equal(table.y, M[:, -1])
    base = table.X
    while getattr(base, "base", None) is not None and not isinstance(base, np.memmap):
        base = base.base
    assert isinstance(base, np.memmap)  # a view of the file's pages …
    assert not table.X.flags.writeable  # … read-only
    first = load_table(path, target=0)  # a target on the left: the rest is still a view
    assert_array_equal(first.X, M[:, 1:])
    assert not first.X.flags.writeable
    middle = load_table(path, target=2)  # in the middle: one copy of the features
    assert_array_equal(middle.X, M[:, [0, 1, 3, 4, 5]])
    ints = tmp_path / "i.npy"
    np.save(ints, np.arange(12).reshape(4, 3))
    assert load_table(ints).X.dtype == np.float64
    ds = DataSource.from_spec(f"{path}:test_fraction=0.2").load(seed=1)
    assert ds.X_train.flags.writeable and ds.n_train == 400
    objects = tmp_path / "o.npy"
    np.save(objects, np.array([[1, "a"]], dtype=object), allow_pickle=True)
    with pytest.raises(DataError, match="holds Python objects"):
        load_table(objects)


def test_an_npz_archive_reads_only_the_arrays_it_uses(tmp_path):
    """X and y are read from the file; other arrays — even ones that could not be loaded
    safely (Python objects) — are not touched."""
    path = tmp_path / "d.npz"
    X, y = np.arange(12.0).reshape(4, 3), np.arange(4.0)
    np.savez(path, X=X, y=y, notes=np.array([{"made": "by hand"}], dtype=object))
    table = load_table(path)
    assert_array_equal(table.X, X)
    assert_array_equal(table.y, y)
    np.savez(tmp_path / "o.npz", X=np.array([[1, "a"]], dtype=object), y=np.array([1.0]))
    with pytest.raises(DataError, match="holds Python objects"):
        load_table(tmp_path / "o.npz")


# -- loading large files: progress, cancel, a preview at once ----------------------------
def test_reading_row_by_row_reports_progress_and_can_be_cancelled(tmp_path):
    from kernel_lab.core.progress import Cancelled, Progress

    rows = "".join(f"{i},{i % 7},{'ab'[i % 2]},{i * 0.5}\n" for i in range(150_000))
    path = write(tmp_path, "t.csv", "a,b,kind,y\n" + rows)
    seen = []
    table = load_table(path, progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 0.95
    assert any("rows" in m for _, m in seen) and any("column" in m for _, m in seen)
    assert table.X.shape == (150_000, 4)  # a, b and kind one-hot
    # a Cancelled raised by progress stops the reading (it is not a "damaged file")
    asked = []
    with pytest.raises(Cancelled):
        load_table(path, progress=Progress(None, lambda: asked.append(1) or len(asked) > 3))
    assert len(asked) == 4


def test_a_preview_of_the_first_rows_as_written(tmp_path):
    from kernel_lab.data.read import peek_rows

    names, rows = peek_rows(write(tmp_path, "h.csv", "# note\na;b;kind\n1,5;2;x\n3;4;y\n"))
    assert names == ["a", "b", "kind"] and rows == [["1,5", "2", "x"], ["3", "4", "y"]]
    names, rows = peek_rows(write(tmp_path, "n.txt", "1 2 3\n4 5 6\n"), rows=1)
    assert names == ["column 1", "column 2", "column 3"] and rows == [["1", "2", "3"]]
    np.save(tmp_path / "a.npy", np.arange(12.0).reshape(4, 3))
    names, rows = peek_rows(tmp_path / "a.npy", rows=2)
    assert names == ["column 1", "column 2", "column 3"] and rows[1] == ["3", "4", "5"]
    assert peek_rows(tmp_path / "missing.csv") is None
    assert peek_rows(write(tmp_path, "e.csv", "\n\n")) is None
    (tmp_path / "bad.npy").write_bytes(b"not an array")
    assert peek_rows(tmp_path / "bad.npy") is None
    assert peek_rows(write(tmp_path, "x.arff", "@relation r\n")) is None


def test_the_preview_never_fails_and_shows_whole_rows_only(tmp_path):
    """Found in review: a 3-D or 0-d .npy made the preview raise (and the load never
    started); a wide file's 64 KB head ended in a cut number."""
    from kernel_lab.data.read import peek_rows

    np.save(tmp_path / "cube.npy", np.zeros((4, 2, 3)))
    np.save(tmp_path / "scalar.npy", np.float64(3))
    assert peek_rows(tmp_path / "cube.npy") is None
    assert peek_rows(tmp_path / "scalar.npy") is None
    row = ",".join(["123.456"] * 1500)
    path = write(tmp_path, "wide.csv", ",".join(f"c{j}" for j in range(1500)) + "\n"
                 + (row + "\n") * 20)
    names, rows = peek_rows(path)
    assert len(names) == 1500 and rows and all(r == ["123.456"] * 1500 for r in rows)
