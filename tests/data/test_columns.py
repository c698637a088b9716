"""Choosing and dropping columns (``features=``, ``drop_columns=``) for every format: the
same columns whatever the file, chosen before any column is checked (a dropped column's
text never stops a load), unknown names refused with the closest first; a column of codes
with a stray text cell read as categories, a one-value text column dropped as constant;
progress that never overstates the rows read."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

from kernel_lab.cli import main
from kernel_lab.core.errors import DataError
from kernel_lab.data.columns import ColumnChoice
from kernel_lab.data.read import load_table
from kernel_lab.data.source import DataSource
from kernel_lab.engine.session import Session, load_session, save_session
from kernel_lab.engine.spec import RunSpec
from tests.data.test_tables import write

#: A table as R writes it: row names, a text column, a column of numbers with one text
#: cell among many values (a typo), the target last.
CSV = ('"","a","note","b","bad","y"\n'
       '"1",1.5,"x",10,0.5,3\n'
       '"2",2.5,"y",20,1.5,5\n'
       '"3",3.5,"x",30,oops,7\n'
       '"4",4.5,"y",40,3.25,9\n'
       '"5",5.5,"x",55,4.75,12\n'
       '"6",6.5,"y",61,5.5,13\n'
       '"7",7.5,"x",72,6.25,15\n'
       '"8",8.5,"y",80,7.5,17\n'
       '"9",9.5,"x",93,8.75,19\n'
       '"10",10.5,"y",99,9.5,21\n'
       '"11",11.5,"x",12,10.25,2\n'
       '"12",12.5,"y",25,11.5,4\n'
       '"13",13.5,"x",31,12.75,6\n'
       '"14",14.5,"y",44,13.5,8\n')


def expected_columns(names):
    """The reference: the same columns read by pandas from the CSV, by name."""
    frame = pd.read_csv(pd.io.common.StringIO(CSV))
    return frame[names].to_numpy(dtype=float)


def test_a_column_of_numbers_with_a_typo_is_refused_naming_the_option_that_drops_it(tmp_path):
    path = write(tmp_path, "t.csv", CSV)
    with pytest.raises(DataError) as info:
        load_table(path)
    message = str(info.value)
    assert "'oops' in column 'bad' is not a number" in message
    assert "the data option drop_columns=bad" in message
    code = main(["run", "krr-path", "--data", str(path), "--out", str(tmp_path / "o"), "-q"])
    assert code == 2


def test_drop_columns_leaves_them_out_before_any_check(tmp_path):
    path = write(tmp_path, "t.csv", CSV)
    table = load_table(path, columns=ColumnChoice(drop=("bad", "note")))
    assert table.feature_names == ["a", "b"]
    assert_array_equal(table.X, expected_columns(["a", "b"]))
    assert_array_equal(table.y, expected_columns(["y"]).ravel())
    assert "dropped as asked: 2 columns ('note', 'bad')" in table.notes
    # the row index is still dropped, and the file's columns are all listed (for the window)
    assert table.columns == ["a", "note", "b", "bad", "y"]


def test_features_keep_only_those_in_their_order_by_name_or_index(tmp_path):
    path = write(tmp_path, "t.csv", CSV)
    table = load_table(path, columns=ColumnChoice(features=("b", "a")))
    assert table.feature_names == ["b", "a"]
    assert_array_equal(table.X, expected_columns(["b", "a"]))
    # 0-based indices after the dropped row index, as the target counts them
    by_index = load_table(path, columns=ColumnChoice(features=("2", "0")))
    assert by_index.feature_names == ["b", "a"]
    assert_array_equal(by_index.X, table.X)
    assert "not among the features chosen: 2 columns ('note', 'bad')" in table.notes


def test_a_numeric_table_takes_the_same_choice_on_its_fast_path(tmp_path):
    text = "p,q,r,s,y\n" + "".join(f"{i},{i * 2},{i % 3},{i * i},{i + 1}\n" for i in range(9))
    path = write(tmp_path, "n.csv", text)
    table = load_table(path, columns=ColumnChoice(features=("s", "p"), drop=("p",)))
    assert table.feature_names == ["s"]
    assert_array_equal(table.X[:, 0], np.arange(9) ** 2)
    dropped = load_table(path, columns=ColumnChoice(drop=("q", "-2")))
    assert dropped.feature_names == ["p", "r"]


@pytest.mark.parametrize(("choice", "fragments"), [
    (ColumnChoice(drop=("b_",)), ["there is no column named 'b_' (drop_columns)",
                                  "Choose among: b, a, note, bad, y"]),
    (ColumnChoice(features=("Note",)), ["there is no column named 'Note' (features)",
                                        "Choose among: note,"]),
    (ColumnChoice(drop=("y",)), ["the target column 'y' cannot be dropped"]),
    (ColumnChoice(features=("a", "y")), ["the target column 'y' is also named as a feature"]),
    (ColumnChoice(features=("a", "0")), ["the feature column 'a' is named twice"]),
    (ColumnChoice(features=("a",), drop=("a",)), ["no feature column is left"]),
    (ColumnChoice(drop=("9",)), ["column index 9 (drop_columns) is out of range"]),
])
def test_a_bad_choice_is_refused_listing_the_columns_closest_first(tmp_path, choice, fragments):
    path = write(tmp_path, "t.csv", CSV)
    with pytest.raises(DataError) as info:
        load_table(path, columns=choice)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_xlsx_takes_features_and_drop_columns(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.append(["a", "kind", "b", "y"])
    rows = [(1.0, "left", 4.0, 2.0), (2.0, "right", 3.0, 4.5), (3.0, "left", 1.0, 6.0),
            (4.0, "oops", 0.5, 8.0), (5.0, "right", 2.5, 9.5)]
    for row in rows:
        sheet.append(list(row))
    path = tmp_path / "t.xlsx"
    book.save(path)
    table = load_table(path, columns=ColumnChoice(features=("b", "a")))
    assert table.feature_names == ["b", "a"]
    assert_array_equal(table.X, [[r[2], r[0]] for r in rows])
    assert_array_equal(table.y, [r[3] for r in rows])
    dropped = load_table(path, columns=ColumnChoice(drop=("kind",)))
    assert dropped.feature_names == ["a", "b"]
    ds = DataSource.from_spec(str(path), {"features": "b,a", "test_fraction": 0.0,
                                          "standardize": False}).load()
    assert ds.feature_names == ["b", "a"]
    assert_array_equal(np.sort(ds.X_train[:, 0]), np.sort([r[2] for r in rows]))


def test_arrays_and_svmlight_take_the_choice_by_their_column_names(tmp_path):
    M = np.arange(24, dtype=float).reshape(6, 4) ** 1.5
    np.save(tmp_path / "m.npy", M)
    table = load_table(tmp_path / "m.npy", columns=ColumnChoice(drop=("x2",)))
    assert table.feature_names == ["x1", "x3"]
    assert_array_equal(table.X, M[:, [0, 2]])
    assert_array_equal(table.y, M[:, 3])
    picked = load_table(tmp_path / "m.npy", columns=ColumnChoice(features=("2", "x1")))
    assert_array_equal(picked.X, M[:, [2, 0]])
    np.savez(tmp_path / "xy.npz", X=M[:, :3], y=M[:, 3])
    assert_array_equal(load_table(tmp_path / "xy.npz",
                                  columns=ColumnChoice(features=("x3",))).X, M[:, [2]])
    svm = write(tmp_path, "s.svm", "1 1:0.5 2:1.5 3:2\n-1 1:1 3:4\n1 2:3 3:1\n")
    got = load_table(svm, columns=ColumnChoice(drop=("x2",)))
    assert got.feature_names == ["x1", "x3"]
    assert_array_equal(got.X, [[0.5, 2], [1, 4], [0, 1]])
    with pytest.raises(DataError, match="there is no column named 'x9'"):
        load_table(svm, columns=ColumnChoice(drop=("x9",)))


def test_arff_drops_a_nominal_column(tmp_path):
    text = ("@relation r\n@attribute a numeric\n@attribute colour {red,blue}\n"
            "@attribute y numeric\n@data\n1,red,2\n2,blue,3\n3,red,5\n")
    table = load_table(write(tmp_path, "t.arff", text), columns=ColumnChoice(drop=("colour",)))
    assert table.feature_names == ["a"]
    assert_array_equal(table.X[:, 0], [1, 2, 3])


def test_a_parquet_file_never_reads_a_dropped_text_column(tmp_path):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "mixed": ["1", "2", "x", "4.5"],
                          "b": [5, 6, 7, 9], "y": [0.5, 1.0, 1.5, 3.0]})
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, index=False)
    with pytest.raises(DataError, match="drop_columns=mixed"):
        load_table(path)
    table = load_table(path, columns=ColumnChoice(drop=("mixed",)))
    assert table.feature_names == ["a", "b"]
    assert_array_equal(table.X, frame[["a", "b"]].to_numpy(dtype=float))


def test_a_parquet_folder_and_a_zarr_store_take_drop_columns(tmp_path):
    import zarr

    from kernel_lab.data.partitioned import open_partitioned

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"u": rng.normal(size=30), "label": ["k"] * 30,
                          "v": rng.normal(size=30), "y": rng.normal(size=30)})
    folder = tmp_path / "parts"
    folder.mkdir()
    frame.iloc[:12].to_parquet(folder / "part.0.parquet", index=False)
    frame.iloc[12:].to_parquet(folder / "part.1.parquet", index=False)
    with pytest.raises(DataError, match="drop_columns=label"):
        open_partitioned(folder)
    opened = open_partitioned(folder, drop="label")
    assert opened.feature_names == ["u", "v"]
    X = np.concatenate([part.read()[0] for part in opened.parts])
    assert_array_equal(X, frame[["u", "v"]].to_numpy())
    ds = DataSource.from_spec(str(folder), {"drop_columns": "label,u",
                                            "test_fraction": 0.0}).load()
    assert ds.feature_names == ["v"]

    store = tmp_path / "s.zarr"
    group = zarr.open_group(str(store), mode="w")
    M = rng.normal(size=(20, 3))
    group.create_array("X", shape=M.shape, dtype="f8", chunks=(8, 3))[:] = M
    group.create_array("y", shape=(20,), dtype="f8", chunks=(8,))[:] = M[:, 0] - M[:, 2]
    group.attrs["feature_names"] = ["p", "q", "r"]
    opened = open_partitioned(store, drop=["q"])
    assert opened.feature_names == ["p", "r"]
    assert_array_equal(np.concatenate([part.read()[0] for part in opened.parts]), M[:, [0, 2]])


def test_the_options_travel_in_the_data_source_its_spec_and_a_session(tmp_path):
    path = write(tmp_path, "t.csv", CSV)
    source = DataSource.from_spec(f"{path}:drop_columns=\"bad,note\"", {"features": None})
    assert source.options["drop_columns"] == "bad,note"
    assert ColumnChoice.from_options(source.options) == ColumnChoice(drop=("bad", "note"))
    assert DataSource.from_spec(source.to_spec()) == source
    assert DataSource.from_dict(source.to_dict()) == source
    assert source.load().feature_names == ["a", "b"]
    file = tmp_path / "s.json"
    save_session(Session(RunSpec("krr-path", {}, source)), file)
    assert json.loads(file.read_text())["data"]["options"]["drop_columns"] == "bad,note"
    assert load_session(file).spec.data == source


def test_the_cli_drops_and_chooses_columns_of_a_csv(tmp_path):
    path = write(tmp_path, "t.csv", CSV)
    out = tmp_path / "o"
    code = main(["run", "krr-path", "--data", str(path), "--drop-columns", "bad,note",
                 "--out", str(out), "-q", "--no-plot", "--set", "n_lams=3"])
    assert code == 0
    data = json.loads((out / "result.json").read_text())["data"]
    assert data["p"] == 2
    code = main(["run", "krr-path", "--data", str(path), "--features", "b", "--target", "y",
                 "--out", str(out), "-q", "--no-plot", "--set", "n_lams=3"])
    assert code == 0
    assert json.loads((out / "result.json").read_text())["data"]["p"] == 1


def test_a_column_of_codes_with_a_text_cell_is_read_as_categories_and_said(tmp_path):
    rows = "".join(f"{i},{[4, 6, 8][i % 3] if i != 5 else 'rotary'},{i * 1.5}\n"
                   for i in range(24))
    table = load_table(write(tmp_path, "c.csv", "size,cyl,y\n" + rows))
    assert table.feature_names == ["size", "cyl=4", "cyl=6", "cyl=8", "cyl=rotary"]
    note = next(n for n in table.notes if "'cyl'" in n)
    assert "its values are numbers but for 'rotary'" in note
    assert "drop_columns=cyl" in note
    assert_array_equal(table.X[:, 4], np.arange(24) == 5)


def test_a_one_value_text_column_is_dropped_as_constant(tmp_path):
    text = "x,region,y\n1,East,2\n2,East,3\n3,East,5\n4,East,4\n"
    table = load_table(write(tmp_path, "r.csv", text))
    assert table.feature_names == ["x"]
    assert "dropped text column 'region': the same value 'East' in every row" in table.notes[0]
    two = load_table(write(tmp_path, "r2.csv", text.replace("4,East", "4,West")))
    assert "one-hot encoded text column 'region' into 2 columns (East, West)" in two.notes


def test_progress_counts_data_rows_and_never_overstates(tmp_path):
    messages = []
    load_table(write(tmp_path, "t.csv", CSV), columns=ColumnChoice(drop=("bad",)),
               progress=lambda f, m: messages.append(m))
    counts = [m for m in messages if m.startswith(("parsed", "read "))]
    assert counts == ["parsed 15 lines", "read 14 data rows (below the header row)"]


@pytest.mark.parametrize(("target", "said"), [
    ("1", "target: column 'note' (target=1 counts the columns from 0, not counting the "
          "dropped row-index first column; or name it: the data option target=note)"),
    ("y", "target: column 'y'"),
    (None, "target: column 'y', the last of 5 (choose another with the data option "
           "target=NAME)"),
])
def test_the_target_is_named_first(tmp_path, target, said):
    path = write(tmp_path, "t.csv", CSV)
    ds = DataSource.from_spec(str(path), {"target": target, "drop_columns": "bad",
                                          "test_fraction": 0.3}).load()
    assert ds.notes[0] == said


def test_the_missing_value_message_offers_to_drop_those_columns_with_those_dropped(tmp_path):
    text = "a,gap,b,y\n1,,2,3\n2,5,1,4\n3,6,0,5\n"
    path = write(tmp_path, "g.csv", text)
    with pytest.raises(DataError) as info:
        load_table(path, columns=ColumnChoice(drop=("b",)))
    assert "leave out the column that has them (the data option drop_columns=b,gap)" in \
        str(info.value)
    assert load_table(path, columns=ColumnChoice(drop=("b", "gap"))).feature_names == ["a"]
