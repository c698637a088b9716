"""The window's autosave, driven for real: a window in a separate process is killed with
SIGKILL after points were painted in the Playground and parameters edited; the next window
on the same settings offers to restore, and Restore brings everything back exactly,
Discard starts from the settings. A clean close restores the lab from the settings as
before, and the Playground's points from the autosave, without asking."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtCore

import kernel_lab.gui.autosave as autosave_gui
from kernel_lab.gui.app import MainWindow
from kernel_lab.model.autosave import Debounce, read_autosave

ROOT = Path(__file__).resolve().parents[2]
N_POINTS = 50
#: What the first window is given: an experiment, data and parameters off their defaults.
EXPERIMENT, DATA = "krr-path", "gaussian:n=150,p=6"
EDITED = {"n_lams": 13, "lam_min": 0.00025}

#: A user's session, scripted: the window started on a settings folder, edits made, then
#: "READY" and the state printed once the autosave has written them; then it waits to be
#: killed. (The guard: the window's worker processes start by importing this script.)
SCRIPT = r"""
import json, sys, time
from pathlib import Path


def main():
    from PySide6 import QtCore, QtWidgets

    app = QtWidgets.QApplication(sys.argv[:1])
    from kernel_lab.gui.app import MainWindow

    folder, points, experiment, data, edited = sys.argv[1:6]
    settings = QtCore.QSettings(str(Path(folder) / "settings.ini"),
                                QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings)
    w.show()
    w.experiment_box.setCurrentIndex(w.experiment_box.findData(experiment))
    w.data_panel.set_spec(data)
    w.form.set_values(json.loads(edited))
    if w.run_blocking(120) is None:
        raise SystemExit(f"the run failed: {w.status.text()}")
    w.pin_curves()
    w.explain_dock.setVisible(False)
    pg = w.open_playground()
    pg.model.set_dataset("paint-2d")
    for x, y, other in json.loads(Path(points).read_text()):  # one click per point
        pg.paint([(x, y)], other_class=other)
    painted = len(json.loads(Path(points).read_text()))
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
        a = w.autosave
        if a.writes and not a.timer.isActive() and a.worker.wait_idle(0) \
                and not w.model.loading:
            doc = json.loads(a.paths.file.read_text())
            if len(doc["session"]["playground"]["points"]["y"]) == painted \
                    and doc["session"].get("pinned"):
                break
    state = {"values": w.model.values, "params": w.model.resolved_params(),
             "experiment": w.experiment.name,
             "data": w.model.source.to_dict(), "X": pg.model.points.X.tolist(),
             "y": pg.model.points.y.tolist(), "form": w.form.values(),
             "pins": [[p.label, {k: v.tolist() for k, v in p.table.items()}]
                      for p in w.model.pins],
             "written_after_s": round(time.monotonic() - (deadline - 90), 2)}
    print(json.dumps(state), flush=True)
    print("READY", flush=True)
    app.exec()


if __name__ == "__main__":
    main()
"""


def _settings(folder: Path) -> QtCore.QSettings:
    return QtCore.QSettings(str(folder / "settings.ini"), QtCore.QSettings.Format.IniFormat)


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """A settings folder left by a window killed (SIGKILL) after its edits were
    autosaved, and the state that window held (printed by it before the kill)."""
    folder = tmp_path_factory.mktemp("killed")
    rng = np.random.default_rng(42)
    clicks = [(float(x), float(y), bool(o)) for (x, y), o in
              zip(rng.uniform(-2.5, 2.5, size=(N_POINTS, 2)), rng.random(N_POINTS) < 0.5,
                  strict=True)]
    points = folder / "clicks.json"
    points.write_text(json.dumps(clicks))
    script = folder / "user.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(script), str(folder / "settings"),
                             str(points), EXPERIMENT, DATA, json.dumps(EDITED)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    (folder / "settings").mkdir()
    try:
        lines = []
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line or line.strip() == "READY":
                break
            lines.append(line)
        assert line.strip() == "READY", "".join(lines) + proc.stderr.read()[-3000:]
        state = json.loads(lines[-1])
        state["clicks"] = clicks
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
    return folder / "settings", state


@pytest.fixture
def after_kill(killed, tmp_path):
    """A copy of the killed window's settings folder, for one test."""
    folder, state = killed
    shutil.copytree(folder, tmp_path / "settings")
    return tmp_path / "settings", state


@pytest.fixture
def answers(monkeypatch):
    """The restore question, answered by the test: ``answers.append(True)`` before the
    window starts; what the window asked is kept in ``answers.asked``."""

    class Answers(list):
        def __init__(self) -> None:
            super().__init__()
            self.asked: list = []

    given = Answers()

    def ask(parent, recovered, path):
        given.asked.append((recovered, path))
        return given.pop(0)

    monkeypatch.setattr(autosave_gui, "ask_restore", ask)
    return given


def _window(qtbot, folder: Path) -> MainWindow:
    w = MainWindow(_settings(folder))
    qtbot.addWidget(w)
    w.show()
    return w


def test_a_killed_window_is_offered_back_and_restore_brings_everything(after_kill, qtbot,
                                                                       answers):
    folder, before = after_kill
    saved = read_autosave(folder / "settings.autosave.json")
    assert saved is not None and not saved.clean  # no clean-exit mark: killed
    assert before["params"]["n_lams"] == 13 and before["form"]["n_lams"] == 13
    assert before["params"]["lam_min"] == EDITED["lam_min"]
    answers.append(True)
    w = _window(qtbot, folder)
    try:
        assert len(answers.asked) == 1
        recovered, kept_as = answers.asked[0]
        assert f"{N_POINTS} points" in recovered.summary() and "krr-path" in recovered.summary()
        assert kept_as == folder / "settings.autosave-discarded.json"
        assert w.experiment.name == EXPERIMENT
        assert w.model.values == before["values"]  # exactly, every parameter
        assert w.model.resolved_params() == before["params"]
        assert w.form.values() == before["form"]
        assert w.model.source.to_dict() == before["data"]
        assert w.explain_dock.isHidden() and not w.exp_dock.isHidden()  # the layout
        assert len(before["pins"]) == 1 and len(w.model.pins) == 1  # the pinned run
        (label, table), pin = before["pins"][0], w.model.pins[0]
        assert pin.label == label and set(pin.table) == set(table)
        for key, column in table.items():  # NaN where a curve has no value
            np.testing.assert_array_equal(pin.table[key], np.array(column, dtype=float))
        pg = w.playground
        assert pg is not None and pg.isVisible() and pg.model.dataset == "paint-2d"
        np.testing.assert_array_equal(pg.model.points.X, np.array(before["X"]))
        np.testing.assert_array_equal(pg.model.points.y, np.array(before["y"]))
        # the painted points are the clicks, bit for bit, the two classes included
        clicks = np.array(before["clicks"])
        np.testing.assert_array_equal(pg.model.points.X, clicks[:, :2])
        assert len(np.unique(pg.model.points.y[clicks[:, 2] == 1])) == 1
        assert set(pg.model.points.y) == {-1.0, 1.0}
        # the restored state is protected again: the file stays, not marked clean
        assert not read_autosave(folder / "settings.autosave.json").clean
    finally:
        w.close()
    assert read_autosave(folder / "settings.autosave.json").clean  # a clean close now


def test_discard_starts_from_the_settings_and_keeps_the_state_aside(after_kill, qtbot,
                                                                    answers):
    folder, _ = after_kill
    answers.append(False)
    w = _window(qtbot, folder)
    try:
        assert len(answers.asked) == 1
        assert w.playground is None  # nothing of the killed window's Playground
        # the killed window never closed: its settings hold no experiment, the first one
        assert w.experiment.name == w.experiment_box.itemData(0) != EXPERIMENT
        assert not (folder / "settings.autosave.json").exists()
        kept = read_autosave(folder / "settings.autosave-discarded.json")
        assert kept.session.playground.points.n == N_POINTS
    finally:
        w.close()
    answers.asked.clear()
    again = _window(qtbot, folder)  # closed cleanly: no question any more
    again.close()
    assert answers.asked == []


def test_a_clean_close_restores_the_lab_from_the_settings_and_the_points(tmp_path, qtbot,
                                                                         answers):
    first = _window(qtbot, tmp_path)
    first.experiment_box.setCurrentIndex(first.experiment_box.findData(EXPERIMENT))
    first.form.set_values({"n_lams": 17})
    pg = first.open_playground()
    pg.model.set_dataset("paint-1d")
    pg.paint([(0.125, -1.0 / 3.0), (1.0 / 7.0, 2.0)])
    X, y = pg.model.points.X.copy(), pg.model.points.y.copy()
    first.close()
    assert read_autosave(tmp_path / "settings.autosave.json").clean
    second = _window(qtbot, tmp_path)
    try:
        assert answers.asked == []  # a clean close: nothing to ask
        assert second.experiment.name == EXPERIMENT and second.form.values()["n_lams"] == 17
        assert second.playground is not None and not second.playground.isVisible()
        assert second.playground.model.dataset == "paint-1d"
        np.testing.assert_array_equal(second.playground.model.points.X, X)
        np.testing.assert_array_equal(second.playground.model.points.y, y)
        assert second.open_playground() is second.playground  # shown with them
    finally:
        second.close()


def test_a_change_is_written_after_the_delay_and_unchanged_state_is_not(tmp_path, qtbot):
    w = _window(qtbot, tmp_path)
    try:
        w.autosave.policy = Debounce(delay=0.3, max_wait=2.0)
        path = w.autosave.paths.file
        assert not path.exists()  # started, nothing changed: nothing written
        w.form.set_values({"n_lams": 21})
        assert w.autosave.timer.isActive()
        qtbot.waitUntil(lambda: w.autosave.writes == 1, timeout=10_000)
        doc = read_autosave(path)
        assert not doc.clean and doc.session.spec.params["n_lams"] == 21
        assert doc.session.spec.experiment == w.experiment.name
        w.form.set_values({"n_lams": 21})  # the same values again
        w.autosave.flush()
        assert w.autosave.writes == 1
    finally:
        w.close()
    assert read_autosave(path).clean


def test_a_second_window_on_the_same_settings_does_not_autosave_or_ask(tmp_path, qtbot,
                                                                       answers):
    first = _window(qtbot, tmp_path)
    first.autosave.policy = Debounce(delay=0.1, max_wait=1.0)
    first.form.set_values({"n_lams": 9})
    qtbot.waitUntil(lambda: first.autosave.writes == 1, timeout=10_000)
    second = _window(qtbot, tmp_path)
    try:
        assert answers.asked == []  # the first window is alive: not a crash
        assert not second.autosave.enabled
        assert "another Kernel Lab window" in second.log_view.toPlainText()
    finally:
        second.close()
        first.close()
    assert read_autosave(tmp_path / "settings.autosave.json").session.spec.params[
        "n_lams"] == 9


def test_a_damaged_autosave_file_is_set_aside_and_the_window_starts(tmp_path, qtbot,
                                                                    answers):
    (tmp_path / "settings.autosave.json").write_text('{"format": "kernel-lab-autosave", "ve')
    w = _window(qtbot, tmp_path)
    try:
        assert answers.asked == []
        assert "autosave not restored" in w.log_view.toPlainText()
        assert "damaged" in w.log_view.toPlainText()
        assert (tmp_path / "settings.autosave-discarded.json").exists()
        assert w.autosave.enabled
    finally:
        w.close()
