"""Run → Compute backend in the standalone app, which has no Dask: its Dask entries are
disabled and say what to use instead (never ``pip install``); a Dask choice saved by a
Python installation sharing the settings runs on threads."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtCore

from kernel_lab.gui.app import MainWindow


def _window(qtbot, tmp_path, backend: str) -> MainWindow:
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"),
                                QtCore.QSettings.Format.IniFormat)
    settings.setValue("backend", backend)
    window = MainWindow(settings)
    qtbot.addWidget(window)
    return window


def _actions(window: MainWindow) -> dict[str, object]:
    return {act.data(): act for act in window.backends.group.actions()}


def test_standalone_app_offers_no_dask(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    window = _window(qtbot, tmp_path, "dask")
    assert window.backend() == ("threads", None)  # the saved Dask choice cannot run here
    actions = _actions(window)
    assert actions["threads"].isChecked()
    for key in ("dask", "dask-scheduler"):
        act = actions[key]
        assert not act.isEnabled()
        assert "standalone app" in act.toolTip() and "pip" not in act.toolTip()
    assert actions["processes"].isEnabled()
    window.set_backend("processes")
    assert window.backend() == ("processes", None)


def test_python_installation_keeps_its_dask_choice(qtbot, tmp_path, monkeypatch):
    monkeypatch.delattr(sys, "frozen", raising=False)
    window = _window(qtbot, tmp_path, "dask")
    assert window.backend() == ("dask", None)
    assert all(act.isEnabled() for act in _actions(window).values())
