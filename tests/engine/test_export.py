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


def test_an_experiment_without_a_model_says_so(tmp_path) -> None:
    from kernel_lab.core.errors import ParameterError

    spec = RunSpec("spectrum", {}, DataSource.from_spec("gaussian:n=60,p=10"))
    with pytest.raises(ParameterError, match="fits no model"):
        export_run(spec, run(spec), tmp_path / "m.skops")
    assert not (tmp_path / "m.skops").exists()
