"""``export_run`` and ``kernel-lab run … --save-model``: the model a run marks best, with
the table's typing and standardisation in front, saved with skops — applied to the rows
of the original file that the run held out, it gives the run's own test error; the file
loads with ``skops.io.load`` after ``get_untrusted_types`` lists nothing outside
scikit-learn, numpy and kernel_lab."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kernel_lab.cli import main
from kernel_lab.core.progress import Progress
from kernel_lab.data.source import DataSource
from kernel_lab.engine.export import export_run
from kernel_lab.engine.runner import run
from kernel_lab.engine.spec import RunSpec
from kernel_lab.experiments import get_experiment
from kernel_lab.experiments.base import row_index

sio = pytest.importorskip("skops.io")


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small table as R's write.csv writes one: row names, a text column, a target."""
    rng = np.random.default_rng(21)
    n = 120
    x = rng.normal(size=(n, 2))
    kind = rng.choice(["north", "south", "west"], size=n)
    price = 10 + 2 * np.sin(x[:, 0]) + x[:, 1] + (kind == "west") * 1.5 \
        + 0.2 * rng.normal(size=n)
    frame = pd.DataFrame({"": [f"r{i}" for i in range(n)], "x1": x[:, 0], "x2": x[:, 1],
                          "kind": kind, "price": price})
    path = tmp_path_factory.mktemp("export") / "prices.csv"
    frame.to_csv(path, index=False)
    return path


def _held_out(path: Path, seed: int) -> pd.DataFrame:
    """The rows of the original file the run tested on (the data layer's split)."""
    data = DataSource.from_spec(f"{path}:target=price").open(seed, Progress(None))
    return pd.read_csv(path).iloc[row_index(data, "test")]


def test_export_run_keeps_the_starred_model_and_its_test_error(table, tmp_path) -> None:
    from kernel_lab.engine.model_file import load_model

    spec = RunSpec("krr-path", {"n_lams": 12, "seed": 5},
                   DataSource.from_spec(f"{table}:target=price"))
    result = run(spec)
    report = export_run(spec, result, tmp_path / "m.skops")
    assert report.path.is_file() and report.models
    untrusted = sio.get_untrusted_types(file=report.path)
    assert all(t.split(".")[0] in ("sklearn", "numpy", "kernel_lab") for t in untrusted)
    saved = load_model(report.path)
    assert list(saved.models) == report.models
    meta = saved.metadata["models"][report.models[0]]
    best = min(result.summaries["test_mse_min_krr"], result.summaries["test_mse_min_ckrr"])
    assert meta["test_error"] == best and meta["error_name"] == "test MSE"
    rows = _held_out(table, result.seed)
    pipeline = saved.models[report.models[0]]
    pred = pipeline.predict(rows.drop(columns=["price"]))
    # the raw rows through the table's typing and standardisation, then the model fitted
    # from the curve's eigendecomposition: the run's figure to rounding (see
    # tests/experiments/test_best_models.py)
    assert np.mean((pred - rows["price"].to_numpy()) ** 2) == pytest.approx(best, rel=1e-10)


def test_run_save_model_on_the_command_line(table, tmp_path, capsys) -> None:
    model = tmp_path / "m.skops"
    code = main(["run", "krr-path", "--data", f"{table}:target=price", "--save-model",
                 str(model), "--no-plot", "--out", str(tmp_path / "r1"), "--set",
                 "n_lams=10"])
    assert code == 0 and model.is_file()
    assert "model file" in capsys.readouterr().err


def test_save_model_into_a_missing_folder_is_refused_before_the_run(table, tmp_path,
                                                                    capsys) -> None:
    target = tmp_path / "nowhere" / "m.skops"
    code = main(["run", "krr-path", "--data", f"{table}:target=price", "--save-model",
                 str(target), "--no-plot", "--out", str(tmp_path / "r2")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--save-model" in err and "does not exist" in err
    assert not (tmp_path / "r2").exists()


def test_save_model_of_an_experiment_without_models_is_refused_before_the_run(
        table, tmp_path, capsys) -> None:
    """spectrum fits no model: --save-model was refused only after the whole run (exit 2
    with the run's results written); now before it, as a folder given as the file is."""
    for experiment, model, said in (
            ("spectrum", tmp_path / "m.skops", "experiment 'spectrum' fits no model to keep"),
            ("krr-path", tmp_path, "this is a folder; give a file name")):
        out = tmp_path / f"r-{experiment}"
        code = main(["run", experiment, "--data", f"{table}:target=price", "--save-model",
                     str(model), "--no-plot", "--out", str(out)])
        assert code == 2
        assert said in capsys.readouterr().err
        assert not out.exists() and not (tmp_path / "m.skops").exists()
    assert [e.keeps_models for e in map(get_experiment, ("spectrum", "krr-path", "gfc"))] \
        == [False, True, True]


def test_an_experiment_without_a_model_says_so(tmp_path) -> None:
    from kernel_lab.core.errors import ParameterError

    spec = RunSpec("spectrum", {}, DataSource.from_spec("gaussian:n=60,p=10"))
    with pytest.raises(ParameterError, match="fits no model"):
        export_run(spec, run(spec), tmp_path / "m.skops")
    assert not (tmp_path / "m.skops").exists()


def _measure(name: str, meta: dict, pred: np.ndarray, y: np.ndarray) -> float:
    """The run's measure of a model's predictions (its ``error_name``)."""
    what = meta["error_name"]
    if what == "test error rate":
        return float(np.mean(pred != y))
    err = float(np.mean((pred - y.astype(float)) ** 2))
    if what.startswith("test RMSE × 100"):
        return 100 * np.sqrt(err) / meta["params"]["target_range"]
    return float(np.sqrt(err)) if what == "test RMSE" else err


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two classes named in words, a text feature, row names."""
    rng = np.random.default_rng(4)
    n = 200
    x = rng.normal(size=(n, 3))
    colour = rng.choice(["red", "blue"], size=n)
    label = np.where(x[:, 0] + np.sin(2 * x[:, 1]) + (colour == "red") > 0.3, "yes", "no")
    frame = pd.DataFrame({"": np.arange(n), "a": x[:, 0], "b": x[:, 1], "c": x[:, 2],
                          "colour": colour, "bought": label})
    path = tmp_path_factory.mktemp("classes") / "bought.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("experiment, params, which", [
    ("krr-path", {"n_lams": 10}, "table"),
    ("ckrr-risk", {"trials": 2, "n_lams": 8, "kernels": ["linear", "exponential"]}, "table"),
    ("nystrom", {"samplers": ["uniform", "rp-cholesky"], "sizes": "8,16", "eval_points": 60},
     "table"),
    ("learning-curve", {"n_iter": 30, "points": 3, "exact_max": 0}, "table"),
    ("learning-curve", {"n_iter": 30, "points": 3, "exact_max": 0}, "classes"),
    ("gfc", {"n_features": 10, "n_passes": 2, "methods": ["gfc"]}, "table"),
])
def test_every_experiment_round_trips_from_the_file_rows(experiment, params, which, table,
                                                         classes, tmp_path) -> None:
    """Each exported model applied to the rows of the original file the run held out
    (row names dropped, text one-hot, a text target's labels mapped back) predicts what
    its estimator predicts on the run's prepared test rows, and so has the recorded test
    error — the run's own figure, which tests/experiments/test_best_models.py compares
    with the estimators' predictions at each model's own tolerance."""
    from kernel_lab.engine.model_file import load_model

    path, target = (table, "price") if which == "table" else (classes, "bought")
    source = DataSource.from_spec(f"{path}:target={target}")
    spec = RunSpec(experiment, {**params, "seed": 1}, source)
    result = run(spec)
    report = export_run(spec, result, tmp_path / "m.skops")
    untrusted = sio.get_untrusted_types(file=report.path)
    assert all(t.split(".")[0] in ("sklearn", "numpy", "kernel_lab") for t in untrusted)
    saved = load_model(report.path)
    data = source.open(result.seed, Progress(None))
    choices = get_experiment(experiment).best_models(result.params, data, result.table,
                                                     result.summaries, Progress(None))
    assert list(saved.models) == [c.name for c in choices] == report.models
    rows = pd.read_csv(path).iloc[row_index(data, "test")]
    for choice in choices:
        meta = saved.metadata["models"][choice.name]
        assert meta["test_error"] == choice.test_error
        pipeline = saved.models[choice.name]
        got = np.asarray(pipeline.predict(rows.drop(columns=[target])))
        want = choice.estimator.predict(data.X_test)
        if data.task == "regression":
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
        else:   # the file's labels, back from the estimator's ±1: the run's error rate
            assert np.array_equal(got == "yes", want == np.max(want))
            assert _measure(experiment, meta, got, rows[target].to_numpy()) \
                == choice.test_error


def test_learning_curve_on_a_kept_parquet_folder_saves_and_predicts_every_model(
        tmp_path, capsys) -> None:
    """``run learning-curve --data FOLDER:partitions=keep --save-model M``, then ``predict M
    --data FOLDER --out OUT --model NAME`` for each saved model (DSG and both baselines):
    each writes the folder's files with the model's predictions, equal on the run's test
    rows to its estimator's on the prepared rows (1e-12) — whose test errors
    tests/experiments/test_best_models.py compares with the run's at each model's own
    tolerance."""
    from kernel_lab.engine.model_file import load_model

    rng = np.random.default_rng(9)
    folder = tmp_path / "rows"
    folder.mkdir()
    for k, rows in enumerate((90, 70)):
        X = rng.normal(size=(rows, 3))
        frame = pd.DataFrame(X, columns=["a", "b", "c"])
        frame["y"] = np.sin(2 * X[:, 0]) + X[:, 1] / 2 + 0.1 * rng.normal(size=rows)
        frame.to_parquet(folder / f"part.{k}.parquet", index=False)
    spec = f"{folder}:partitions=keep,target=y"
    model = tmp_path / "lc.skops"
    assert main(["run", "learning-curve", "--data", spec, "--save-model", str(model),
                 "--no-plot", "--out", str(tmp_path / "run"), "-q", "--set", "n_iter=20",
                 "--set", "points=2", "--set", "exact_max=0", "--set", "seed=3"]) == 0
    saved = load_model(model)
    names = list(saved.models)
    assert len(names) == 3 and names[1].startswith("RFF baseline") \
        and names[2].startswith("Nyström baseline")
    data = DataSource.from_spec(spec).open(3, Progress(None))
    test = row_index(data, "test")
    for k, name in enumerate(names):
        out = tmp_path / f"pred{k}"
        assert main(["predict", str(model), "--data", str(folder), "--out", str(out),
                     "--model", name, "-q"]) == 0
        assert sorted(p.name for p in out.iterdir()) == ["part.0.parquet", "part.1.parquet"]
        got = pd.concat([pd.read_parquet(out / f"part.{i}.parquet") for i in (0, 1)])
        pred = got["prediction"].to_numpy()[test]
        want = saved.models[name][-1].predict(data.X_test)
        np.testing.assert_allclose(pred, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    capsys.readouterr()


def test_a_cancel_once_the_file_is_written_reports_the_file(table, tmp_path) -> None:
    """Cancelling while the model file is being written comes too late: the file is
    written whole, so the export reports it rather than raising Cancelled (a window would
    have said the export was cancelled with the file written, an older one replaced)."""
    spec = RunSpec("krr-path", {"n_lams": 8, "seed": 2},
                   DataSource.from_spec(f"{table}:target=price"))
    result = run(spec)
    asked = []

    def report(fraction: float, message: str) -> None:
        if message.startswith("writing "):
            asked.append(message)

    path = tmp_path / "late.skops"
    got = export_run(spec, result, path, progress=Progress(report, lambda: bool(asked)))
    assert asked and got.path == path and path.is_file()
