"""The Playground window's *Export model…*: the current fit saved from a worker thread, its
model giving what the window draws; a fit that cannot be exported is said in a message
box."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtWidgets

from kernel_lab.core import playground as core
from kernel_lab.engine.model_file import load_model
from kernel_lab.gui import tear_down, top_level_widgets
from kernel_lab.gui.playground import PlaygroundWindow
from kernel_lab.model.playground import export as pexport


@pytest.fixture
def window(qtbot):
    existing = top_level_widgets()
    w = PlaygroundWindow()
    w.resize(1200, 800)
    w.show()
    qtbot.waitExposed(w)
    yield w
    assert tear_down(w, existing=existing)  # deleted now, not in another test's loop


def settle(w, qtbot):
    qtbot.waitUntil(lambda: w.worker.wait_idle(0) and w.model.latest is not None
                    and w.model.latest.serial == w.model.serial and w.drawn_complete,
                    timeout=30_000)


def test_export_model_saves_the_drawn_fit(window, qtbot, monkeypatch, tmp_path):
    w = window
    w.model.set_dataset("moons", n=150)
    w.model.set_params(method="ckrr", sigma=0.6, lam=0.02)
    settle(w, qtbot)
    threads: list[str] = []
    save = pexport.save_model
    monkeypatch.setattr(pexport, "save_model", lambda saved, path: (
        threads.append(threading.current_thread().name), save(saved, path))[1])
    asked: list[str] = []

    def dialog(parent, title, start, filters):
        asked.append(start)
        return str(tmp_path / "moons"), ""

    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", dialog)
    assert w.export_model_action.shortcut().toString() == "Ctrl+Shift+M"
    w.export_model_action.trigger()
    assert asked[0].endswith("playground-ckrr-model.skops")
    qtbot.waitUntil(lambda: w.statusBar().currentMessage().startswith("Exported"),
                    timeout=30_000)
    (thread,) = threads
    assert thread == "playground-export"  # not the GUI thread
    (name, pipeline), = load_model(tmp_path / "moons.skops").models.items()
    assert w.statusBar().currentMessage() == \
        f"Exported model {name} to moons.skops in {tmp_path}. (more: hover)"
    assert w.statusBar().toolTip().startswith(
        f"Exported model {name} to moons.skops in {tmp_path}. Fitted on the Playground's")
    res = w.model.params["resolution"]
    np.testing.assert_allclose(pipeline.predict(core.grid(2, res)),
                               w.view.heatmap.T.ravel(), rtol=0, atol=1e-10)
    assert w.exporter in w.workers


def test_a_fit_that_cannot_be_exported_is_said(window, qtbot, monkeypatch, tmp_path):
    w = window
    w.model.set_params(method="dsg")  # no iteration yet
    warned: list[tuple[str, str]] = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "warning",
                        lambda parent, title, text: warned.append((title, text)))
    w.export_model(tmp_path / "d.skops")
    qtbot.waitUntil(lambda: bool(warned), timeout=10_000)
    assert warned[0][0] == "Cannot export the model"
    assert "DSG has run no iteration yet: press Step or Play" in warned[0][1]
    assert not (tmp_path / "d.skops").exists()
    w.model.step(5)  # the window goes on: the next export works
    settle(w, qtbot)
    w.export_model(tmp_path / "d.skops")
    qtbot.waitUntil(lambda: w.statusBar().currentMessage().startswith("Exported"),
                    timeout=10_000)
    assert load_model(tmp_path / "d.skops").model()[-1].n_iter == 5
