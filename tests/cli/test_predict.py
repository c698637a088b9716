"""``kernel-lab predict`` and ``kernel-lab describe-model``: predictions of a saved model on
new files, and one clear exit-2 message, with no output left, for each bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import skops.io as sio

from kernel_lab import __version__
from kernel_lab.cli import main
from kernel_lab.core.models import KernelRidge
from kernel_lab.data.pipeline import model_pipeline
from kernel_lab.data.source import DataSource
from kernel_lab.engine.atomic import leftover_temporaries
from kernel_lab.engine.model_file import SavedModel, read_metadata, save_model


def _frame(n: int = 60, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    size = rng.uniform(1, 5, size=n).round(3)
    colour = rng.choice(["red", "green", "blue"], size=n)
    price = (3 * size + (colour == "red") + rng.normal(scale=0.2, size=n)).round(3)
    return pd.DataFrame({"id": np.arange(1, n + 1), "size": size, "colour": colour,
                         "weight": rng.normal(10, 2, size=n).round(2), "price": price})


@pytest.fixture
def model(tmp_path):
    """A CSV without missing values (so the model fills none), and a model saved from it
    with the run's own test predictions."""
    csv = tmp_path / "shop.csv"
    _frame().to_csv(csv, index=False)
    source = DataSource.from_spec(str(csv), {"target": "price"})
    ds = source.load(3)
    assert ds.plan.fill is None and ds.encoding["index"] == "id"
    est = KernelRidge(0.05).fit(ds.X_train, ds.y_train)
    path = save_model(SavedModel({"krr": model_pipeline(ds, est)},
                                 {"data": source.to_dict(), "seed": 3, "experiment": "krr-path",
                                  "models": {"krr": {"params": {"lam": 0.05},
                                                     "test_error": 0.125,
                                                     "error_name": "test MSE"}}}),
                      tmp_path / "shop.skops")
    return path, csv, ds, est


def _refused(capsys, tmp_path, argv, *names) -> str:
    out = tmp_path / "pred.csv"
    assert main(["predict", *argv, "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert message.startswith("kernel-lab: error: ") and message.count("\n") == 1
    for name in names:
        assert name in message
    assert not out.exists() and leftover_temporaries(tmp_path) == []
    return message


def test_predict_writes_the_runs_predictions(model, tmp_path, capsys):
    path, csv, ds, est = model
    out = tmp_path / "pred.csv"
    assert main(["predict", str(path), "--data", str(csv), "--out", str(out)]) == 0
    got = pd.read_csv(out)
    assert list(got.columns) == ["row", "line", "prediction"]
    assert got["line"].tolist() == list(range(2, 62))  # below the header line
    np.testing.assert_allclose(got["prediction"].to_numpy()[ds.i_test], est.predict(ds.X_test),
                               rtol=0, atol=1e-12)
    assert "predicted 60 rows with model 'krr'" in capsys.readouterr().err
    # without the target column, and the columns in another order
    frame = pd.read_csv(csv).drop(columns="price")[["weight", "colour", "id", "size"]]
    new = tmp_path / "new.tsv"
    frame.to_csv(new, index=False, sep="\t")
    assert main(["predict", str(path), "--data", str(new), "--out", str(out), "-q"]) == 0
    np.testing.assert_array_equal(pd.read_csv(out)["prediction"], got["prediction"])


def test_a_renamed_column_is_refused_naming_both(model, tmp_path, capsys):
    path, csv, _, _ = model
    bad = tmp_path / "renamed.csv"
    pd.read_csv(csv).rename(columns={"weight": "mass"}).to_csv(bad, index=False)
    message = _refused(capsys, tmp_path, [str(path), "--data", str(bad)],
                       "renamed.csv: the column 'weight' the model was trained on is missing",
                       "'mass'")
    assert "if it is 'weight' renamed" in message


def test_an_unseen_category_is_refused_naming_its_line(model, tmp_path, capsys):
    path, csv, _, _ = model
    frame = pd.read_csv(csv)
    frame.loc[4, "colour"] = "purple"
    bad = tmp_path / "unseen.csv"
    frame.to_csv(bad, index=False)
    _refused(capsys, tmp_path, [str(path), "--data", str(bad)],
             "unseen.csv, line 6: 'purple' in column 'colour' is a category the model never "
             "saw", "'blue', 'green', 'red'")


def test_a_missing_value_is_refused_when_the_run_filled_none(model, tmp_path, capsys):
    path, csv, _, _ = model
    frame = pd.read_csv(csv)
    frame.loc[7, "size"] = np.nan
    bad = tmp_path / "nan.csv"
    frame.to_csv(bad, index=False, na_rep="NA")
    _refused(capsys, tmp_path, [str(path), "--data", str(bad)],
             "nan.csv, line 9: a missing value in column 'size'", "no missing values to fill")


def test_a_model_of_another_version_is_refused(model, tmp_path, capsys, monkeypatch):
    path, csv, _, _ = model
    import kernel_lab.engine.model_file as model_file

    with monkeypatch.context() as patch:  # the same models, saved by "another version"
        patch.setattr(model_file, "__version__", "9.9.9")
        other = save_model(_reloaded(path), tmp_path / "other.skops")
    assert read_metadata(other)["kernel_lab_version"] == "9.9.9"
    _refused(capsys, tmp_path, [str(other), "--data", str(csv)],
             f"other.skops: the model was saved by Kernel Lab 9.9.9 and this is Kernel Lab "
             f"{__version__}", "export the model again")


def _reloaded(path) -> SavedModel:
    """The models and metadata of a file, read with skops directly."""
    models = sio.load(path, trusted=sio.get_untrusted_types(file=path))["models"]
    return SavedModel(models, {k: v for k, v in read_metadata(path).items()
                               if k not in ("kernel_lab_version", "created")})


def test_files_that_are_not_models_and_missing_files(model, tmp_path, capsys):
    path, csv, _, _ = model
    _refused(capsys, tmp_path, [str(csv), "--data", str(csv)],
             "shop.csv: this is not a Kernel Lab model file")
    _refused(capsys, tmp_path, [str(tmp_path / "gone.skops"), "--data", str(csv)],
             "gone.skops: the model file does not exist")
    _refused(capsys, tmp_path, [str(path), "--data", str(tmp_path / "gone.csv")],
             "gone.csv: the file does not exist")
    _refused(capsys, tmp_path, [str(path), "--data", str(csv), "--model", "rff"],
             "no model named 'rff'", "'krr'")


def test_extra_columns_are_refused_unless_ignored(model, tmp_path, capsys):
    path, csv, _, _ = model
    extra = tmp_path / "extra.csv"
    pd.read_csv(csv).assign(shelf=2).to_csv(extra, index=False)
    _refused(capsys, tmp_path, [str(path), "--data", str(extra)], "'shelf'",
             "the training file did not have", "Leave it out of the data",
             "--ignore-extra-columns")
    out = tmp_path / "pred.csv"
    assert main(["predict", str(path), "--data", str(extra), "--out", str(out), "-q",
                 "--ignore-extra-columns"]) == 0
    assert len(pd.read_csv(out)) == 60


def test_a_failed_prediction_keeps_an_older_output(model, tmp_path, capsys):
    path, csv, _, _ = model
    out = tmp_path / "pred.csv"
    out.write_text("old\n")
    frame = pd.read_csv(csv)
    frame.loc[50, "colour"] = "teal"  # the last rows: nothing half-written either
    bad = tmp_path / "late.csv"
    frame.to_csv(bad, index=False)
    assert main(["predict", str(path), "--data", str(bad), "--out", str(out)]) == 2
    assert "'teal'" in capsys.readouterr().err
    assert out.read_text() == "old\n" and leftover_temporaries(tmp_path) == []


def test_the_output_never_replaces_the_input(model, tmp_path, capsys):
    """--out naming the --data file (or a folder inside a Parquet folder to predict)
    would overwrite the user's rows with predictions: refused, the input kept."""
    path, csv, _, _ = model
    before = csv.read_bytes()
    assert main(["predict", str(path), "--data", str(csv), "--out", str(csv)]) == 2
    message = capsys.readouterr().err
    assert message == ("kernel-lab: error: shop.csv: the predictions would replace the rows "
                       "to predict. Choose another output path than --data.\n")
    assert csv.read_bytes() == before
    folder = tmp_path / "new"
    folder.mkdir()
    pd.read_csv(csv).to_parquet(folder / "part.0.parquet", index=False)
    for out in (folder, folder / "pred"):
        assert main(["predict", str(path), "--data", str(folder), "--out", str(out)]) == 2
        assert "would replace the rows to predict or be written inside their folder" in \
            capsys.readouterr().err
    assert [p.name for p in folder.iterdir()] == ["part.0.parquet"]
    assert leftover_temporaries(tmp_path) == [] and leftover_temporaries(folder) == []


def test_a_folder_holding_other_files_is_not_replaced(model, tmp_path, capsys):
    """A Parquet folder's predictions replace the output folder whole: one holding
    anything but Parquet files (a user's folder named by mistake) is refused and kept;
    an earlier run's predictions are replaced."""
    path, csv, _, _ = model
    folder = tmp_path / "new"
    folder.mkdir()
    pd.read_csv(csv).to_parquet(folder / "part.0.parquet", index=False)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me\n")
    assert main(["predict", str(path), "--data", str(folder), "--out", str(mine)]) == 2
    message = capsys.readouterr().err
    assert message == ("kernel-lab: error: mine: the output folder exists and holds "
                       "more than Parquet predictions ('notes.txt'); it would be replaced "
                       "whole. Choose a new or empty folder for the predictions.\n")
    assert (mine / "notes.txt").read_text() == "keep me\n"
    out = tmp_path / "pred"
    for _ in range(2):  # the second time over the first's predictions
        assert main(["predict", str(path), "--data", str(folder), "--out", str(out),
                     "-q"]) == 0
    assert [p.name for p in out.iterdir()] == ["part.0.parquet"]
    assert leftover_temporaries(tmp_path) == []


@pytest.mark.parametrize("name", ["pred.parquet", "pred.tsv", "pred.csv.gz", "pred.xlsx"])
def test_an_output_named_as_another_format_is_refused(model, tmp_path, capsys, name):
    """The predictions of a file are a comma-separated CSV: an output named .parquet,
    .tsv, .gz or .xlsx would hold CSV text under a name that says otherwise."""
    path, csv, _, _ = model
    out = tmp_path / name
    assert main(["predict", str(path), "--data", str(csv), "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert message.startswith(f"kernel-lab: error: {name}: the predictions are written as a "
                              "comma-separated CSV table") and "Name the output .csv" in message
    assert not out.exists() and leftover_temporaries(tmp_path) == []


@pytest.mark.parametrize("backend", [[], ["--backend", "processes", "--workers", "2"]],
                         ids=["this-process", "processes"])
def test_a_parquet_folder_is_predicted_file_by_file(model, tmp_path, capsys, backend):
    path, csv, ds, est = model
    frame = pd.read_csv(csv)
    folder = tmp_path / "new"
    folder.mkdir()
    for k, (a, b) in enumerate(((0, 25), (25, 60))):
        frame.iloc[a:b].to_parquet(folder / f"part.{k}.parquet", index=False)
    out = tmp_path / "pred"
    assert main(["predict", str(path), "--data", str(folder), "--out", str(out), *backend]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["part.0.parquet", "part.1.parquet"]
    second = pd.read_parquet(out / "part.1.parquet")
    assert second["row"].tolist() == list(range(26, 61))
    assert second["file_row"].tolist() == list(range(1, 36))
    got = pd.concat([pd.read_parquet(out / "part.0.parquet"), second])
    np.testing.assert_allclose(got["prediction"].to_numpy()[ds.i_test],
                               est.predict(ds.X_test), rtol=0, atol=1e-12)
    # a bad category in the second file: no output folder, nothing hidden left
    frame.loc[40, "colour"] = "teal"
    frame.iloc[25:].to_parquet(folder / "part.1.parquet", index=False)
    out2 = tmp_path / "pred2"
    assert main(["predict", str(path), "--data", str(folder), "--out", str(out2),
                 *backend]) == 2
    message = capsys.readouterr().err
    assert "part.1.parquet: row 16: 'teal' in column 'colour'" in message
    assert not out2.exists() and leftover_temporaries(tmp_path) == []


def test_describe_model(model, tmp_path, capsys):
    path, _, _, _ = model
    assert main(["describe-model", str(path)]) == 0
    text = capsys.readouterr().out
    assert f"saved by: Kernel Lab {__version__}" in text
    assert "krr: KernelRidge, test MSE 0.125" in text
    assert "experiment: krr-path" in text and "seed: 3" in text
    assert "target: price (numbers)" in text
    lines = text.splitlines()
    at = lines.index("columns (3, in training order):")
    assert [line.split()[0] for line in lines[at + 1:]] == ["size", "colour", "weight"]
    assert "text, 3 categories: blue, green, red" in lines[at + 2]
    assert main(["describe-model", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == read_metadata(path)
    csv = tmp_path / "shop.csv"
    assert main(["describe-model", str(csv)]) == 2
    assert "shop.csv: this is not a Kernel Lab model file" in capsys.readouterr().err


def test_other_table_formats_give_the_same_predictions(model, tmp_path, capsys):
    import openpyxl

    path, csv, _, _ = model
    out = tmp_path / "pred.csv"
    assert main(["predict", str(path), "--data", str(csv), "--out", str(out), "-q"]) == 0
    want = pd.read_csv(out)["prediction"].to_numpy()
    frame = pd.read_csv(csv).drop(columns="price")
    book = openpyxl.Workbook()
    book.active.title = "notes"
    sheet = book.create_sheet("rows")
    sheet.append(list(frame.columns))
    for row in frame.itertuples(index=False):
        sheet.append([v.item() if hasattr(v, "item") else v for v in row])
    book.save(tmp_path / "new.xlsx")
    body = "\n".join(f"{r.size},{r.colour},{r.weight}" for r in frame.itertuples())
    (tmp_path / "new.arff").write_text(
        "@relation shop\n@attribute size numeric\n@attribute colour {red,green,blue}\n"
        f"@attribute weight numeric\n@data\n{body}\n")
    np.save(tmp_path / "new.npy", frame[["size", "weight"]].to_numpy())  # not the text
    for name, extra in (("new.xlsx", ["--sheet", "rows"]), ("new.arff", [])):
        assert main(["predict", str(path), "--data", str(tmp_path / name), "--out", str(out),
                     "-q", *extra]) == 0, capsys.readouterr().err
        got = pd.read_csv(out)
        np.testing.assert_allclose(got["prediction"].to_numpy(), want, rtol=0, atol=1e-12)
    assert pd.read_csv(out).columns.tolist() == ["row", "prediction"]  # ARFF: no lines
    out.unlink()
    _refused(capsys, tmp_path, [str(path), "--data", str(tmp_path / "new.npy")],
             "new.npy: the array has 2 columns, the model's feature columns are 3")


def test_rows_are_predicted_in_blocks(model, tmp_path, capsys, monkeypatch):
    import kernel_lab.engine.predict as predict

    path, csv, _, _ = model
    out = tmp_path / "pred.csv"
    assert main(["predict", str(path), "--data", str(csv), "--out", str(out), "-q"]) == 0
    whole = pd.read_csv(out)
    monkeypatch.setattr(predict, "PREDICT_ROWS", 7)  # 60 rows: nine blocks
    assert main(["predict", str(path), "--data", str(csv), "--out", str(out), "-q"]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(out), whole)
    out.unlink()
    frame = pd.read_csv(csv)
    frame.loc[50, "colour"] = "teal"  # in the eighth block: named by its own line
    bad = tmp_path / "late.csv"
    frame.to_csv(bad, index=False)
    _refused(capsys, tmp_path, [str(path), "--data", str(bad)], "late.csv, line 52: 'teal'")
    frame.iloc[:, 1:].to_parquet(tmp_path / "late.parquet", index=False)
    _refused(capsys, tmp_path, [str(path), "--data", str(tmp_path / "late.parquet")],
             "late.parquet: row 51: 'teal'")
