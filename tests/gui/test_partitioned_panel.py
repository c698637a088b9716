"""A folder of Parquet files too large to read whole, opened in the Data panel: it stays in
its partitions, the panel says so and previews its first training rows; every experiment
runs on it — one that needs every row at once reads them when they fit in memory, and is
refused by memory, with the seeded sample offered, when they do not."""

from __future__ import annotations

import html

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyarrow")

import pandas as pd

from kernel_lab.engine.handle import InlineLauncher
from kernel_lab.gui.data_panel import DataPanel
from kernel_lab.model import LabModel
from kernel_lab.model.lab import RunState


@pytest.fixture
def folder(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 3))
    y = X[:, 0] - 2 * X[:, 2] + 0.1 * rng.normal(size=600)
    for k in range(3):
        frame = pd.DataFrame(X[200 * k:200 * (k + 1)], columns=["a", "b", "c"])
        frame["target"] = y[200 * k:200 * (k + 1)]
        frame.to_parquet(tmp_path / f"rows-{k}.parquet")
    return tmp_path


@pytest.fixture
def panel(qtbot, monkeypatch):
    # as if the folder were larger than memory many times over: kept in partitions
    monkeypatch.setattr("kernel_lab.data.lazy.WHOLE_BYTES", 0)
    model = LabModel(InlineLauncher())
    model.use_default_data = False
    panel = DataPanel(model)
    qtbot.addWidget(panel)
    return panel


def test_a_large_folder_stays_in_partitions_and_runs(panel, folder):
    panel.set_spec(str(folder))
    ds = panel.dataset
    assert not ds.in_memory
    shown = html.unescape(panel.status.text())
    assert "kept in 3 partitions" in shown and "n = 450 training + 150 test" in shown
    assert panel.preview.rowCount() == 8 and panel.preview.columnCount() == 4
    first = ds.first_rows(1)
    assert panel.preview.item(0, 0).text() == f"{first.X[0, 0]:.4g}"

    said: list[str] = []
    panel.model.status.connect(said.append)
    # an exact experiment reads the 450 training rows: they fit, so it runs
    panel.model.set_experiment("krr-path")
    panel.model.set_params({"n_lams": 5})
    panel.model.start_run()
    assert panel.model.state is RunState.DONE, said
    assert np.isfinite(panel.model.table["test_mse_krr"]).all()

    panel.model.set_experiment("nystrom")
    panel.model.set_params({"samplers": ["uniform"], "sizes": "5,10", "trials": 1,
                            "eval_points": 100})
    panel.model.start_run()
    assert panel.model.state is RunState.DONE, said
    spectral = panel.model.table["spectral_median[uniform]"][:2]  # s = 5, 10 (then padding)
    assert np.isfinite(spectral).all() and spectral[1] < spectral[0]


def test_rows_that_do_not_fit_are_refused_with_the_sample_offered(panel, folder,
                                                                  monkeypatch):
    panel.set_spec(str(folder))
    said: list[str] = []
    panel.model.status.connect(said.append)
    # a budget below the 450 training rows' 2 × 450 × 4 × 8 bytes: the gather refuses
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", str(20_000 / 2**20))
    panel.model.set_experiment("krr-path")
    panel.model.set_params({"n_lams": 5})
    panel.model.start_run()
    assert panel.model.state is not RunState.DONE
    assert any("all 450 training rows" in s and "'Rows' in the Data panel" in s
               for s in said), said
