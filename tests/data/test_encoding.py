"""Every reader records how it typed the table (kernel_lab.data.encoding), and the record
gives the data set's own feature columns, in order, whatever the format."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kernel_lab.core.models import KernelRidge
from kernel_lab.core.models.preprocess import encoded_names
from kernel_lab.data.pipeline import model_pipeline
from kernel_lab.data.source import DataSource


def _numbers(n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(n, 3)).round(5)
    return X, (X @ [1.0, -2.0, 0.5]).round(5)


def _loaded(path, **options):
    ds = DataSource.from_spec(str(path), options).load(0)
    assert encoded_names(ds.encoding) == ds.feature_names
    return ds


def _same_predictions(ds, columns: dict) -> None:
    """The pipeline on the file's columns gives the estimator's predictions."""
    est = KernelRidge(0.1).fit(ds.X_train, ds.y_train)
    pipe = model_pipeline(ds, est)
    rows = np.concatenate([ds.i_train, ds.i_test])
    got = pipe.predict({k: np.asarray(v)[rows] for k, v in columns.items()})
    want = est.predict(np.vstack([ds.X_train, ds.X_test]))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_arrays_npy_npz_mat_and_svmlight_are_numbers(tmp_path):
    from scipy.io import savemat
    from sklearn.datasets import dump_svmlight_file

    X, y = _numbers()
    np.save(tmp_path / "a.npy", np.column_stack([X, y]))
    np.savez(tmp_path / "a.npz", X=X, y=y)
    savemat(tmp_path / "a.mat", {"X": X, "y": y[:, None]})
    dump_svmlight_file(X, y, str(tmp_path / "a.svm"), zero_based=False)
    for name, target in (("a.npy", "y"), ("a.npz", "y"), ("a.mat", "y"), ("a.svm", "y")):
        ds = _loaded(tmp_path / name)
        enc = ds.encoding
        assert [f["kind"] for f in enc["features"]] == ["number"] * 3, name
        assert enc["target"] == {"column": target, "kind": "number"}, name
        assert enc["index"] is None
        _same_predictions(ds, {n: X[:, j] for j, n in enumerate(ds.feature_names)})
    # a column choice is recorded: the columns left out and the option
    ds = _loaded(tmp_path / "a.npy", drop_columns="x2")
    assert ds.feature_names == ["x1", "x3"]
    assert ds.encoding["left_out"] == ["x2"]
    assert ds.encoding["choice"]["drop_columns"] == "x2"


def test_text_tables_csv_xlsx_arff_and_parquet_record_their_categories(tmp_path):
    import openpyxl

    X, y = _numbers(30)
    kind = np.array(["a", "b", "c"] * 10, dtype=object)
    frame = pd.DataFrame({"id": np.arange(1, 31), "u": X[:, 0], "kind": kind, "v": X[:, 1],
                          "y": y})
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(list(frame.columns))
    for row in frame.itertuples(index=False):
        sheet.append([float(v) if isinstance(v, float) else v for v in row])
    book.save(tmp_path / "t.xlsx")
    body = "\n".join(f"{r.u},{r.kind},{r.v},{r.y}" for r in frame.itertuples())
    (tmp_path / "t.arff").write_text(
        "@relation t\n@attribute u numeric\n@attribute kind {a,b,c}\n"
        f"@attribute v numeric\n@attribute y numeric\n@data\n{body}\n")
    for name in ("t.csv", "t.parquet", "t.xlsx", "t.arff"):
        ds = _loaded(tmp_path / name, target="y")
        enc = ds.encoding
        assert enc["features"] == [
            {"column": "u", "kind": "number"},
            {"column": "kind", "kind": "onehot", "levels": ["a", "b", "c"], "missing": False},
            {"column": "v", "kind": "number"}], name
        assert enc["index"] == (None if name == "t.arff" else "id"), name
        used = ("u", "kind", "v") if name == "t.arff" else ("id", "u", "kind", "v")
        _same_predictions(ds, {c: frame[c].to_numpy() for c in used})


def test_a_numeric_csv_with_row_names_and_a_zarr_store(tmp_path):
    import zarr

    X, y = _numbers()
    frame = pd.DataFrame(np.column_stack([X, y]), columns=["p", "q", "r", "s"])
    frame.to_csv(tmp_path / "n.csv")  # pandas writes its index: an empty header cell
    ds = _loaded(tmp_path / "n.csv")
    assert ds.encoding["index"] == "column 1"
    assert ds.encoding["columns"] == ["column 1", "p", "q", "r", "s"]
    read = pd.read_csv(tmp_path / "n.csv")  # "Unnamed: 0": the lab's "column 1"
    _same_predictions(ds, {c: read[c].to_numpy() for c in read.columns if c != "s"})
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    group.create_array("X", data=X, chunks=(16, 3))
    group.create_array("y", data=y, chunks=(16,))
    group.attrs["feature_names"] = ["a", "b", "c"]
    data = DataSource.from_spec(str(tmp_path / "s.zarr"), {"partitions": "keep"}).open(0)
    assert [f["column"] for f in data.encoding["features"]] == ["a", "b", "c"]
    assert data.encoding["columns"] == ["a", "b", "c", "y"]


@pytest.mark.parametrize("spec", ["diabetes", "gaussian:n=60,p=4"])
def test_examples_and_generated_data(spec):
    ds = DataSource.from_spec(spec).load(0)
    pipe = model_pipeline(ds, KernelRidge(1.0).fit(ds.X_train, ds.y_train))
    assert pipe["columns"].feature_columns_ == ds.feature_names
