"""A fitted estimator behind the data set's typing (kernel_lab.data.pipeline): applied to
the original file's rows, read by pandas, it gives the estimator's predictions on the
lab's prepared rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kernel_lab.core.errors import DataError
from kernel_lab.core.models import KernelRidge, RFFRidge
from kernel_lab.core.models.preprocess import ClassLabels, TableColumns, encoded_names
from kernel_lab.data.pipeline import model_pipeline
from kernel_lab.data.source import DataSource


def _table(n: int = 90, seed: int = 3) -> pd.DataFrame:
    """A table as R's write.csv writes one: row names first, a text feature, a coded
    column, numbers with missing cells, a numeric target and two text targets."""
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = rng.uniform(-2, 2, size=n).round(3)
    x2[[4, 17, 40]] = np.nan  # filled by the training means
    colour = rng.choice(["red", "green", "blue"], size=n).astype(object)
    colour[[9, 33]] = None  # a (missing) column
    score = 2 * x1 + np.nan_to_num(x2) + (colour == "red") + rng.normal(scale=0.1, size=n)
    return pd.DataFrame({
        "": np.arange(1, n + 1), "x1": x1.round(6), "colour": colour, "x2": x2,
        "size": rng.choice(["S", "M", "L"], size=n), "y": score.round(4),
        "two": np.where(score > 0, "yes", "no"),
        "three": np.where(score > 1, "high", np.where(score > -1, "mid", "low")),
    })


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "t.csv"
    _table().to_csv(path, index=False, na_rep="NA")
    return path


def _check(pipe, est, ds, frame) -> None:
    for rows, X in ((ds.i_train, ds.X_train), (ds.i_test, ds.X_test)):
        got = pipe.predict(frame.iloc[rows])
        want = (est.predict(X) if not isinstance(pipe[-1], ClassLabels)
                else pipe[-1].predict(X))
        if got.dtype == object:
            assert list(got) == list(want)
            raw = pipe.decision_function(frame.iloc[rows])
            np.testing.assert_allclose(raw, est.predict(X), rtol=0, atol=1e-12)
        else:
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("target", ["y", "two", "three"])
def test_pipeline_on_the_original_rows_gives_the_estimators_predictions(csv, target):
    # the other targets are left out, as a user would leave them out
    others = ",".join(t for t in ("y", "two", "three") if t != target)
    ds = DataSource.from_spec(str(csv), {"target": target, "drop_columns": others}).load(5)
    assert ds.encoding["index"] == "column 1"  # R's row names (no header cell) dropped
    assert encoded_names(ds.encoding) == ds.feature_names
    assert ds.plan.fill is not None  # the NaN cells of x2 were filled
    est = KernelRidge(0.05, kernel_params={"sigma": 2.0}).fit(ds.X_train, ds.y_train)
    pipe = model_pipeline(ds, est)
    frame = pd.read_csv(csv)
    _check(pipe, est, ds, frame)
    if target == "two":
        assert ds.encoding["target"] == {"column": "two", "kind": "two classes",
                                         "classes": ["no", "yes"], "positive": "yes"}
        assert set(pipe.predict(frame)) <= {"no", "yes"}
        # the labels: the run's own ±1 signs
        signs = np.where(est.predict(ds.X_test) >= 0, "yes", "no")
        assert list(pipe.predict(frame.iloc[ds.i_test])) == list(signs)
    if target == "three":
        assert ds.encoding["target"]["classes"] == ["high", "low", "mid"]
        assert ds.classes == ["high", "low", "mid"]


def test_an_array_of_the_feature_columns_in_training_order(csv):
    ds = DataSource.from_spec(str(csv), {"target": "y", "drop_columns": "two,three"}).load(0)
    est = RFFRidge(n_components=40, random_state=0).fit(ds.X_train, ds.y_train)
    pipe = model_pipeline(ds, est)
    frame = pd.read_csv(csv)
    order = pipe["columns"].feature_columns_
    assert order == ["x1", "colour", "x2", "size"]
    got = pipe.predict(frame[order].to_numpy(dtype=object)[ds.i_test])
    np.testing.assert_allclose(got, est.predict(ds.X_test), rtol=0, atol=1e-12)
    # a dict of columns, too
    got = pipe.predict({c: frame[c].iloc[ds.i_test].tolist() for c in frame.columns})
    np.testing.assert_allclose(got, est.predict(ds.X_test), rtol=0, atol=1e-12)


def test_refusals_name_the_column(csv):
    ds = DataSource.from_spec(str(csv), {"target": "y", "drop_columns": "two,three"}).load(0)
    pipe = model_pipeline(ds, KernelRidge(0.1).fit(ds.X_train, ds.y_train))
    frame = pd.read_csv(csv).iloc[:10]
    with pytest.raises(DataError, match=r"'colour'.*missing.*'color'"):
        pipe.predict(frame.rename(columns={"colour": "color"}))
    unseen = frame.assign(colour=["purple"] * 10)
    with pytest.raises(DataError, match=r"'purple' in column 'colour'.*never saw"):
        pipe.predict(unseen)
    with pytest.raises(DataError, match=r"'abc' in column 'x1' is not a number"):
        pipe.predict(frame.assign(x1=["abc"] * 10))
    with pytest.raises(DataError, match=r"column 'weight' the training file did not have"):
        pipe.predict(frame.assign(weight=1.0))
    pipe.set_params(columns__extra_columns="ignore")
    np.testing.assert_array_equal(pipe.predict(frame.assign(weight=1.0)), pipe.predict(frame))
    # the file's own other columns (target, row index, columns left out) are ignored
    assert pipe.predict(frame.drop(columns=["y", "two", "three", "Unnamed: 0"])).shape == (10,)


def test_a_missing_value_without_filling_is_refused(tmp_path):
    frame = _table().drop(columns=["two", "three"])
    frame["x2"] = frame["x2"].fillna(0.5)
    frame["colour"] = frame["colour"].fillna("red")
    path = tmp_path / "clean.csv"
    frame.to_csv(path, index=False)
    ds = DataSource.from_spec(f"{path}:target=y").load(0)
    assert ds.plan.fill is None
    pipe = model_pipeline(ds, KernelRidge(0.1).fit(ds.X_train, ds.y_train))
    bad = frame.iloc[:5].copy()
    bad.loc[bad.index[2], "x2"] = np.nan
    with pytest.raises(DataError, match=r"row 3: a missing value in column 'x2'"):
        pipe.predict(bad)
    bad = frame.iloc[:5].copy()
    bad.loc[bad.index[1], "colour"] = None
    with pytest.raises(DataError, match=r"row 2: a missing value in the text column "
                       "'colour' \\(an empty cell or a missing-value mark such as NA\\)"):
        pipe.predict(bad)
    bad.loc[bad.index[1], "colour"] = "NA"  # R's mark: missing too, not an empty cell
    with pytest.raises(DataError, match=r"row 2: a missing value in the text column"):
        pipe.predict(bad)
    assert isinstance(pipe["columns"], TableColumns)


def test_a_parquet_folder_kept_in_partitions(tmp_path):
    frame = _table(240, seed=8).drop(columns=["", "colour", "size"])
    folder = tmp_path / "parts"
    folder.mkdir()
    for k, (a, b) in enumerate(((0, 70), (70, 160), (160, 240))):
        frame.iloc[a:b].to_parquet(folder / f"part.{k}.parquet", index=False)
    for target in ("y", "three"):
        others = ",".join(t for t in ("y", "two", "three") if t != target)
        data = DataSource.from_spec(str(folder), {"target": target, "drop_columns": others,
                                                  "partitions": "keep"}).open(2)
        assert not data.in_memory
        assert data.encoding["features"] == [{"column": "x1", "kind": "number"},
                                             {"column": "x2", "kind": "number"}]
        est = KernelRidge(0.05).fit(data.X_train, data.y_train)
        pipe = model_pipeline(data, est)
        rows = np.arange(data.plan.n)
        read = pd.read_parquet(folder)
        for which, X in (("train", data.X_train), ("test", data.X_test)):
            at = rows[data.plan.which(rows, which)]
            got = pipe.predict(read.iloc[at])
            if target == "y":
                np.testing.assert_allclose(got, est.predict(X), rtol=0, atol=1e-12)
            else:
                assert list(got) == list(pipe[-1].predict(X))
                np.testing.assert_allclose(pipe.decision_function(read.iloc[at]),
                                           est.predict(X), rtol=0, atol=1e-12)


def test_pandas_nullable_and_string_columns(csv):
    ds = DataSource.from_spec(str(csv), {"target": "y", "drop_columns": "two,three"}).load(0)
    est = KernelRidge(0.1).fit(ds.X_train, ds.y_train)
    pipe = model_pipeline(ds, est)
    frame = pd.read_csv(csv)
    typed = frame.astype({"x2": "Float64", "colour": "string"})  # pd.NA for the missing
    np.testing.assert_array_equal(pipe.predict(typed), pipe.predict(frame))
    # numbers written as text read as the lab reads them ("NA" missing, filled)
    text = frame.astype({"x2": str}).replace({"x2": {"nan": "NA"}})
    np.testing.assert_array_equal(pipe.predict(text), pipe.predict(frame))


def test_a_dask_frame_is_refused_and_its_partitions_predict(csv):
    """A kept model types rows in memory: a Dask frame is refused with the way to predict
    it (it failed with "AttributeError: 'Series' object has no attribute 'to_numpy'"), and
    predicting partition by partition gives the rows' predictions."""
    dd = pytest.importorskip("dask.dataframe")
    ds = DataSource.from_spec(str(csv), {"target": "y", "drop_columns": "two,three"}).load(5)
    est = KernelRidge(0.1).fit(ds.X_train, ds.y_train)
    pipe = model_pipeline(ds, est)
    frame = pd.read_csv(csv)
    lazy = dd.from_pandas(frame, npartitions=3)
    with pytest.raises(DataError, match=r"a kept model types rows in memory, and these are "
                       r"a Dask collection\. Predict it partition by partition"):
        pipe.predict(lazy)
    got = lazy.map_partitions(pipe.predict, meta=(None, "f8")).compute()
    np.testing.assert_allclose(np.asarray(got), pipe.predict(frame), rtol=0, atol=1e-12)
