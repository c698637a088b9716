"""Run > Compute backend: where the next run's parallel work goes (threads, a local
process pool, a local Dask cluster or a Dask scheduler), kept in the window's settings
and handed to the lab model (``LabModel.backend``). The standalone app has no Dask: its
Dask entries are shown disabled, saying so, and a saved Dask choice runs on threads."""

from __future__ import annotations

from collections.abc import Callable

from PySide6 import QtCore, QtGui, QtWidgets

from kernel_lab.core.errors import is_standalone
from kernel_lab.engine.executors import BACKENDS
from kernel_lab.model import LabModel

BACKEND_MENU = (("threads", "In-process threads (default)"),
                ("processes", "Local process pool"),
                ("dask", "Dask: local cluster"),
                ("dask-scheduler", "Dask: connect to a scheduler…"))
#: Why the Dask entries are disabled in the standalone app.
NO_DASK = ("not in the standalone app: for a Dask cluster use Kernel Lab installed in "
           "Python (with its dask extra)")


class BackendMenu(QtCore.QObject):
    """The backend submenu of ``menu``, bound to ``model`` and ``settings``; ``log``
    receives one line per change."""

    def __init__(self, menu: QtWidgets.QMenu, model: LabModel, settings: QtCore.QSettings,
                 log: Callable[[str], None]) -> None:
        super().__init__(menu)
        self.model, self.settings, self.log = model, settings, log
        backends = menu.addMenu("Compute &backend")
        self.group = QtGui.QActionGroup(self)
        backends.setToolTipsVisible(True)
        for key, text in BACKEND_MENU:
            act = backends.addAction(text)
            act.setCheckable(True)
            act.setData(key)
            if key.startswith("dask") and is_standalone():
                act.setEnabled(False)
                act.setToolTip(NO_DASK)
                act.setStatusTip(NO_DASK)
            self.group.addAction(act)
        self.group.triggered.connect(self._chosen)

    def set_backend(self, key: str, scheduler: str | None = None) -> None:
        self.settings.setValue("backend", key)
        if scheduler is not None:
            self.settings.setValue("scheduler", scheduler)
        self.apply()
        self.log(f"compute backend: {key}" + (f" at {scheduler}" if scheduler else ""))

    def apply(self) -> None:
        """The saved setting to the model and the menu's check marks."""
        key = self.settings.value("backend", "threads")
        scheduler = self.settings.value("scheduler", "") or None
        if key.startswith("dask") and is_standalone():  # chosen in a Python installation
            key = "threads"
        if key == "dask-scheduler":
            self.model.backend = ("dask", scheduler)
        else:
            self.model.backend = (key if key in BACKENDS else "threads", None)
        for act in self.group.actions():
            act.setChecked(act.data() == key)

    def _chosen(self, action: QtGui.QAction) -> None:
        key = action.data()
        if key == "dask-scheduler":
            parent = self.parent()
            address, ok = QtWidgets.QInputDialog.getText(
                parent if isinstance(parent, QtWidgets.QWidget) else None, "Dask scheduler",
                "Scheduler address (tcp://host:8786):",
                text=self.settings.value("scheduler", "tcp://127.0.0.1:8786"))
            if not ok or not address.strip():
                self.set_backend(self.settings.value("backend", "threads"))
                return
            self.set_backend(key, address.strip())
        else:
            self.set_backend(key)
