"""Model files (kernel_lab.engine.model_file): skops archives with Kernel Lab's metadata,
loaded only when written by this version and holding only trusted types."""

from __future__ import annotations

import io
import json
import re
import zipfile

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.pipeline import Pipeline

from kernel_lab import __version__
from kernel_lab.core.models import (
    CenteredKernelRidge,
    DSGClassifier,
    DSGRegressor,
    GreedyFeatureRegressor,
    KernelRidge,
    NystromRidge,
    RFFRidge,
)
from kernel_lab.data.pipeline import model_pipeline
from kernel_lab.data.source import DataSource
from kernel_lab.engine.atomic import leftover_temporaries
from kernel_lab.engine.model_file import (
    METADATA_MEMBER,
    ModelFileError,
    SavedModel,
    load_model,
    read_metadata,
    save_model,
)


def _table(n: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    x = rng.normal(size=n)
    kind = rng.choice(["a", "b", "c"], size=n)
    return pd.DataFrame({"x": x.round(5), "kind": kind, "z": rng.uniform(size=n).round(4),
                         "y": (np.sin(x) + (kind == "b")).round(4)})


@pytest.fixture
def fitted(tmp_path):
    path = tmp_path / "t.csv"
    _table().to_csv(path, index=False)
    ds = DataSource.from_spec(str(path), {"target": "y"}).load(1)
    models = {"krr": model_pipeline(ds, KernelRidge(0.1).fit(ds.X_train, ds.y_train)),
              "nystrom": model_pipeline(ds, NystromRidge(1e-3, n_components=15,
                                                         random_state=0)
                                        .fit(ds.X_train, ds.y_train)),
              "dsg": model_pipeline(ds, DSGRegressor(n_iter=30, random_state=0)
                                    .fit(ds.X_train, ds.y_train))}
    return ds, models, pd.read_csv(path)


def _saved(models, **meta) -> SavedModel:
    return SavedModel(models, {"data": {"kind": "file", "spec": "t.csv"}, "seed": 1,
                               "models": {"krr": {"params": {"lam": 0.1},
                                                  "test_error": 0.25,
                                                  "error_name": "test MSE"}}, **meta})


def test_round_trip_loads_with_skops_and_predicts_the_same(fitted, tmp_path):
    _, models, frame = fitted
    path = save_model(_saved(models), tmp_path / "m.skops")
    assert leftover_temporaries(tmp_path) == []
    # what skops itself says of the file: only scikit-learn, numpy and kernel_lab types
    untrusted = sio.get_untrusted_types(file=path)
    assert untrusted and all(t.split(".")[0] in ("sklearn", "numpy", "kernel_lab")
                             for t in untrusted)
    plain = sio.load(path, trusted=untrusted)
    loaded = load_model(path)
    assert list(loaded.models) == ["krr", "nystrom", "dsg"] and loaded.default == "krr"
    for name, pipe in models.items():
        want = pipe.predict(frame)
        np.testing.assert_array_equal(plain["models"][name].predict(frame), want)
        np.testing.assert_array_equal(loaded.model(name).predict(frame), want)
        assert isinstance(loaded.model(name), Pipeline)
    meta = loaded.metadata
    assert meta["kernel_lab_version"] == __version__
    assert meta["models"]["krr"]["test_error"] == 0.25
    assert meta["models"]["dsg"]["estimator"] == "DSGRegressor"
    assert meta["target"] == {"column": "y", "kind": "number"}
    assert [c["column"] for c in meta["columns"]] == ["x", "kind", "z"]
    assert meta["columns"][1]["levels"] == ["a", "b", "c"]
    assert read_metadata(path) == meta
    with pytest.raises(KeyError, match="'krr', 'nystrom', 'dsg'"):
        loaded.model("rff")


def _rewrite(path, member: str, data: bytes | None) -> None:
    """The archive at ``path`` with ``member`` replaced (None: removed)."""
    with zipfile.ZipFile(path) as old:
        items = [(i, old.read(i)) for i in old.infolist()]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as new:
        for info, content in items:
            if info.filename == member:
                if data is None:
                    continue
                content = data
            new.writestr(info, content)
    path.write_bytes(out.getvalue())


def test_another_version_is_refused_saying_which(fitted, tmp_path):
    _, models, _ = fitted
    path = save_model(_saved(models), tmp_path / "old.skops")
    meta = read_metadata(path)
    meta["kernel_lab_version"] = "0.0.9"
    _rewrite(path, METADATA_MEMBER, json.dumps(meta).encode())
    with pytest.raises(ModelFileError, match=r"^old\.skops: the model was saved by Kernel "
                       r"Lab 0\.0\.9 and this is Kernel Lab .*export the model again"):
        load_model(path)


def test_another_layout_of_this_version_is_refused_saying_so(fitted, tmp_path):
    """Same version, another format: the message must not say "saved by Kernel Lab X and
    this is Kernel Lab X" (it did)."""
    _, models, _ = fitted
    path = save_model(_saved(models), tmp_path / "dev.skops")
    meta = read_metadata(path)
    meta["format"] = 0
    _rewrite(path, METADATA_MEMBER, json.dumps(meta).encode())
    with pytest.raises(ModelFileError, match=r"^dev\.skops: the model file's layout \(format "
                       r"0\) is not the one Kernel Lab .* writes \(format 1\)") as caught:
        load_model(path)
    assert "this is Kernel Lab" not in str(caught.value)


def test_files_that_are_not_models_are_refused_by_name(fitted, tmp_path):
    _, models, _ = fitted
    csv = tmp_path / "data.csv"
    csv.write_text("a,b\n1,2\n")
    with pytest.raises(ModelFileError, match=r"^data\.csv: this is not a Kernel Lab model "
                       "file"):
        load_model(csv)
    bare = tmp_path / "bare.skops"
    sio.dump({"models": models}, bare)  # skops, but not written by Kernel Lab
    with pytest.raises(ModelFileError, match=r"bare\.skops: .*skops file without Kernel Lab"):
        load_model(bare)
    with pytest.raises(ModelFileError, match=r"nothing\.skops: the model file does not exist"):
        load_model(tmp_path / "nothing.skops")


def test_a_model_file_cut_short_is_called_damaged(fitted, tmp_path):
    """A copy that did not finish is a Kernel Lab model file damaged, not "not a model
    file"; describe-model (the metadata alone) says the same."""
    _, models, _ = fitted
    whole = save_model(SavedModel(models), tmp_path / "whole.skops").read_bytes()
    cut = tmp_path / "cut.skops"
    cut.write_bytes(whole[: len(whole) // 2])
    for read in (load_model, read_metadata):
        with pytest.raises(ModelFileError, match=r"^cut\.skops: the model file is damaged: "
                           "a zip archive cut short"):
            read(cut)


class Foreign(RegressorMixin, BaseEstimator):
    """An estimator from outside scikit-learn, NumPy and Kernel Lab."""

    def fit(self, X, y):
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


def test_a_type_outside_the_trusted_modules_is_refused_by_name(fitted, tmp_path):
    ds, models, _ = fitted
    pipe = model_pipeline(ds, Foreign().fit(ds.X_train, ds.y_train))
    path = save_model(SavedModel({"foreign": pipe, **models}), tmp_path / "f.skops")
    name = re.escape(f"{Foreign.__module__}.Foreign")
    with pytest.raises(ModelFileError, match=r"f\.skops: the model file holds types Kernel "
                       rf"Lab does not load: {name} \(only classes of scikit-learn"):
        load_model(path)


def test_a_function_is_refused_even_from_a_trusted_module(fitted, tmp_path):
    """A function in a model runs on the rows to predict (a FunctionTransformer's func):
    none is trusted, not even NumPy's, whose ``runstring`` calls ``exec``."""
    from numpy.testing._private.utils import runstring
    from sklearn.preprocessing import FunctionTransformer

    _, models, _ = fitted
    evil = Pipeline([("run", FunctionTransformer(runstring, kw_args={"dict": {}}))])
    path = save_model(SavedModel({"evil": evil, **models}), tmp_path / "e.skops")
    assert "numpy.testing._private.utils.runstring" in sio.get_untrusted_types(file=path)
    with pytest.raises(ModelFileError, match=r"e\.skops: the model file holds types Kernel "
                       r"Lab does not load: numpy\.testing\._private\.utils\.runstring "
                       r"\(only classes of"):
        load_model(path)
    load_model(save_model(SavedModel(models), tmp_path / "fine.skops"))  # classes only


def test_a_failed_save_leaves_the_old_file(fitted, tmp_path):
    _, models, _ = fitted
    path = save_model(_saved(models), tmp_path / "m.skops")
    before = path.read_bytes()
    with pytest.raises(TypeError):  # metadata that is not JSON: refused before writing
        save_model(SavedModel(models, {"seed": object()}), path)
    assert path.read_bytes() == before
    assert leftover_temporaries(tmp_path) == []


ESTIMATORS = {
    "KernelRidge": lambda: KernelRidge(0.1),
    "CenteredKernelRidge": lambda: CenteredKernelRidge(0.1),
    "NystromRidge": lambda: NystromRidge(1e-3, n_components=10, random_state=0),
    "RFFRidge": lambda: RFFRidge(0.01, n_components=12, random_state=0),
    "DSGRegressor": lambda: DSGRegressor(n_iter=20, random_state=0),
    "DSGClassifier": lambda: DSGClassifier(n_iter=20, random_state=0),
    "GreedyFeatureRegressor": lambda: GreedyFeatureRegressor(random_state=0),
}


@pytest.mark.parametrize("target", ["two", "three"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_estimator_round_trips_with_class_names(tmp_path, name, target):
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.normal(size=70).round(4), "b": rng.normal(size=70).round(4),
                          "c": rng.choice(["x", "y"], 70)})
    frame["two"] = np.where(frame.a + frame.b > 0, "pos", "neg")
    frame["three"] = np.where(frame.a > 0.5, "hi", np.where(frame.a < -0.5, "lo", "mid"))
    path = tmp_path / "c.csv"
    frame.to_csv(path, index=False)
    other = "three" if target == "two" else "two"
    ds = DataSource.from_spec(str(path), {"target": target, "drop_columns": other}).load(0)
    est = ESTIMATORS[name]().fit(ds.X_train, ds.y_train)
    pipe = model_pipeline(ds, est)
    saved = save_model(SavedModel({name: pipe}), tmp_path / "c.skops")
    assert load_model(saved).metadata["models"][name]["estimator"] == name
    assert all(t.split(".")[0] in ("sklearn", "numpy", "kernel_lab")
               for t in sio.get_untrusted_types(file=saved))
    loaded = load_model(saved).model()
    np.testing.assert_array_equal(loaded.predict(frame), pipe.predict(frame))
    np.testing.assert_array_equal(loaded.decision_function(frame),
                                  pipe.decision_function(frame))
    classes = np.array(sorted(set(frame[target])), dtype=object)
    X = np.vstack([ds.X_train, ds.X_test])
    rows = frame.iloc[np.concatenate([ds.i_train, ds.i_test])]
    if name == "DSGClassifier":  # its own labels are the lab's codes: the names of those
        np.testing.assert_allclose(loaded.predict_proba(rows), est.predict_proba(X), rtol=0,
                                   atol=1e-12)
        own = est.predict(X)
        want = classes[(own > 0).astype(int)] if target == "two" else classes[own.astype(int)]
        np.testing.assert_array_equal(loaded.predict(rows), want)
    else:
        assert not hasattr(loaded, "predict_proba")
    if name != "DSGClassifier" and target == "two":  # a regressor's score: its sign
        np.testing.assert_array_equal(loaded.predict(rows),
                                      classes[(est.predict(X) >= 0).astype(int)])


def test_saving_where_it_cannot_be_written_names_the_file(fitted, tmp_path):
    _, models, _ = fitted
    with pytest.raises(ModelFileError, match=r"m\.skops: the folder .*nowhere.* does not exist"):
        save_model(_saved(models), tmp_path / "nowhere" / "m.skops")
    with pytest.raises(ModelFileError, match=r"this is a folder"):
        save_model(_saved(models), tmp_path)
