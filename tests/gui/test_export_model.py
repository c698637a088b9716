"""*File → Export model…* in the window, for real on the offscreen platform: enabled once a
run has finished, the file asked for beside the data, the export off the GUI thread with
its progress, Esc cancelling it, the status line naming the file and the models, and a
failure said in a message box with the window still working."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtCore, QtWidgets

from kernel_lab.core.errors import KernelLabError
from kernel_lab.engine.atomic import write_atomic
from kernel_lab.gui import tear_down, top_level_widgets
from kernel_lab.gui.app import MainWindow
from kernel_lab.gui.files import EXPORT_MODEL_KEY
from kernel_lab.model import export as model_export
from tests.model.test_model_export import Report

DATA = ("gaussian:n=120,p=5", {"n_lams": 6})


class FakeExport:
    """The engine's ``export_run`` signature: records the thread it ran on, reports
    progress, waits at ``gate`` when given, then writes a file naming the run."""

    def __init__(self, fail: Exception | None = None, gate: threading.Event | None = None
                 ) -> None:
        self.fail, self.gate = fail, gate
        self.threads: list[str] = []
        self.reached = threading.Event()

    def __call__(self, spec, result, path, progress=None):
        self.threads.append(threading.current_thread().name)
        for i in range(20):
            progress(i / 20, f"refitting, part {i + 1} of 20")
            self.reached.set()
            if self.gate is not None:
                self.gate.wait(0.05)
        progress(1.0, "saving")
        if self.fail is not None:
            raise self.fail
        write_atomic(path, json.dumps({"experiment": spec.experiment,
                                       "lam_count": result.params["n_lams"]}))
        name = "KRR gaussian σ=1 λ=0.01"
        return Report(Path(path), [name], {name: (0.5, "test MSE")},
                      {name: ["refitted on all 96 training rows"]})


@pytest.fixture
def window(qtbot, tmp_path):
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"),
                                QtCore.QSettings.Format.IniFormat)
    existing = top_level_widgets()
    w = MainWindow(settings, autosave=False)
    w.show()
    yield w
    # deleted now, with its plots, not later while another test's window runs Qt's loop
    # (pyqtgraph's legend anchors of a half-deleted plot then raised in that test)
    assert tear_down(w, existing=existing)


def run_krr(window, qtbot):
    window.experiment_box.setCurrentIndex(window.experiment_box.findData("krr-path"))
    window.data_panel.set_spec(DATA[0])
    qtbot.waitUntil(lambda: not window.data_panel.loading, timeout=30_000)
    window.form.set_values(DATA[1])
    window.start_run()
    qtbot.waitUntil(lambda: not window.running, timeout=90_000)
    assert window.model.fresh_result is not None, window.status.text()


def ask_path(monkeypatch, path):
    asked: list[str] = []

    def dialog(parent, title, start, filters):
        asked.append(start)
        return str(path), filters.split(";;")[0]

    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", dialog)
    return asked


def test_export_model_after_a_run_writes_off_the_gui_thread_and_says_what(
        window, qtbot, monkeypatch, tmp_path):
    action = window.files.export_model_action
    assert action.text() == "Export &model…" and action.shortcut().toString() == \
        EXPORT_MODEL_KEY
    assert not action.isEnabled() and "run the experiment" in action.toolTip()
    run_krr(window, qtbot)
    assert action.isEnabled()
    fake = FakeExport()
    monkeypatch.setattr(model_export, "export_run", fake)
    window.settings.setValue("last_dir", str(tmp_path))
    asked = ask_path(monkeypatch, tmp_path / "mine.skops")
    action.trigger()
    # generated data: the default file is in the window's last folder
    assert asked == [str(tmp_path / "krr-path-model.skops")]
    qtbot.waitUntil(lambda: window.status.text().startswith("Exported"), timeout=10_000)
    assert window.status.text() == (f"Exported model KRR gaussian σ=1 λ=0.01 (test MSE 0.5) "
                                    f"to mine.skops in {tmp_path}. Refitted on all 96 "
                                    "training rows.")
    assert fake.threads == ["model-export"]  # not the GUI thread
    assert json.loads((tmp_path / "mine.skops").read_text()) == {
        "experiment": "krr-path", "lam_count": 6}
    assert "model export: Exported" in window.log_view.toPlainText()
    assert not window.files.export_progress.isVisible()
    assert window.files.model_export.worker in window.workers  # closed with the window


def test_esc_cancels_the_export_and_keeps_the_run(window, qtbot, monkeypatch, tmp_path):
    run_krr(window, qtbot)
    gate = threading.Event()
    slow = FakeExport(gate=gate)
    monkeypatch.setattr(model_export, "export_run", slow)
    window.files.export_model(tmp_path / "slow.skops")
    assert slow.reached.wait(5)
    qtbot.waitUntil(lambda: window.files.export_progress.value() > 0, timeout=5_000)
    window.cancel_action.trigger()  # Esc
    gate.set()
    assert window.files.model_export.worker.wait_idle(10)
    qtbot.wait(50)
    assert window.status.text().startswith("Export of the model to slow.skops cancelled")
    assert not (tmp_path / "slow.skops").exists()
    assert window.model.fresh_result is not None  # Esc stopped the export, not the result
    assert window.files.export_model_action.isEnabled()
    assert not window.files.export_progress.isVisible()


def test_a_failed_export_is_a_message_and_the_window_goes_on(window, qtbot, monkeypatch,
                                                             tmp_path):
    run_krr(window, qtbot)
    warned: list[tuple[str, str]] = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "warning",
                        lambda parent, title, text: warned.append((title, text)))
    monkeypatch.setattr(model_export, "export_run", FakeExport(
        fail=KernelLabError("column 'colour' of cars.csv is text; the model needs numbers")))
    window.files.export_model(tmp_path / "bad.skops")
    qtbot.waitUntil(lambda: bool(warned), timeout=10_000)
    assert warned == [("Cannot export the model",
                       "The model was not exported to bad.skops: column 'colour' of "
                       "cars.csv is text; the model needs numbers")]
    assert not (tmp_path / "bad.skops").exists()
    assert "not exported" in window.status.text()
    monkeypatch.setattr(model_export, "export_run", FakeExport())
    window.files.export_model(tmp_path / "good.skops")
    qtbot.waitUntil(lambda: window.status.text().startswith("Exported"), timeout=10_000)
    assert (tmp_path / "good.skops").exists()


def test_the_action_is_off_while_a_run_goes_on(window, qtbot):
    run_krr(window, qtbot)
    action = window.files.export_model_action
    assert action.isEnabled()
    window.start_run()
    assert window.running and not action.isEnabled()
    assert "in progress" in action.toolTip()
    qtbot.waitUntil(lambda: not window.running, timeout=90_000)
    assert action.isEnabled()


def test_the_default_file_is_beside_the_data_file(window, qtbot, monkeypatch, tmp_path):
    csv = tmp_path / "table.csv"
    rows = ["x1,x2,y"] + [f"{i % 7},{(i * 3) % 5},{(i % 7) * 0.5 + (i % 3)}"
                          for i in range(60)]
    csv.write_text("\n".join(rows) + "\n")
    window.experiment_box.setCurrentIndex(window.experiment_box.findData("krr-path"))
    window.data_panel.use_default.setChecked(False)
    window.data_panel.set_spec(str(csv))
    qtbot.waitUntil(lambda: not window.data_panel.loading, timeout=30_000)
    window.form.set_values({"n_lams": 4})
    window.start_run()
    qtbot.waitUntil(lambda: not window.running, timeout=90_000)
    assert window.model.fresh_result is not None, window.status.text()
    asked = ask_path(monkeypatch, "")  # the user cancels the dialog
    window.files.export_model_action.trigger()
    assert asked == [str(tmp_path / "krr-path-model.skops")]
    assert window.files.model_export.ticket is None  # nothing exported


def test_the_real_export_of_a_window_run_gives_the_runs_test_error(window, qtbot, monkeypatch,
                                                                   tmp_path):
    """No stand-in: krr-path on a small table as R writes one (row names, a text column),
    File → Export model… through the engine's export_run on the export thread; the file
    loads through the model file's checks, and its default model applied to the rows of
    the original file the run held out gives the run's starred test MSE."""
    import numpy as np
    import pandas as pd

    from kernel_lab.core.progress import Progress
    from kernel_lab.data.source import DataSource
    from kernel_lab.engine.model_file import load_model
    from kernel_lab.experiments.base import row_index

    rng = np.random.default_rng(4)
    n = 90
    x = rng.normal(size=(n, 2))
    kind = rng.choice(["north", "south"], size=n)
    frame = pd.DataFrame({"": [f"r{i}" for i in range(n)], "x1": x[:, 0], "x2": x[:, 1],
                          "kind": kind, "price": 3 + np.sin(x[:, 0]) + x[:, 1]
                          + (kind == "south") + 0.1 * rng.normal(size=n)})
    csv = tmp_path / "prices.csv"
    frame.to_csv(csv, index=False)
    window.experiment_box.setCurrentIndex(window.experiment_box.findData("krr-path"))
    window.data_panel.use_default.setChecked(False)
    window.data_panel.set_spec(f"{csv}:target=price")
    qtbot.waitUntil(lambda: not window.data_panel.loading, timeout=30_000)
    window.form.set_values({"n_lams": 8})
    window.start_run()
    qtbot.waitUntil(lambda: not window.running, timeout=90_000)
    result = window.model.fresh_result
    assert result is not None, window.status.text()
    ask_path(monkeypatch, tmp_path / "prices-model.skops")
    window.files.export_model_action.trigger()
    qtbot.waitUntil(lambda: window.status.text().startswith(("Exported", "The model")),
                    timeout=120_000)
    report = window.files.model_export.last_report
    assert report is not None, window.status.text()
    saved = load_model(tmp_path / "prices-model.skops")
    assert list(saved.models) == report.models
    assert window.status.text().startswith(f"Exported 2 models: {report.models[0]}")
    best = min(result.summaries["test_mse_min_krr"], result.summaries["test_mse_min_ckrr"])
    assert saved.metadata["models"][report.models[0]]["test_error"] == best
    data = DataSource.from_spec(f"{csv}:target=price").open(result.seed, Progress(None))
    held_out = pd.read_csv(csv).iloc[row_index(data, "test")]
    pred = saved.model().predict(held_out.drop(columns=["price"]))
    assert np.mean((pred - held_out["price"].to_numpy()) ** 2) == pytest.approx(best,
                                                                                 rel=1e-10)
