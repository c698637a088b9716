"""The Kernel Lab window: Data and Experiment panels, live plots, Results, Log and Explain.

Only draws and dispatches. Runs go to a worker process through
:class:`kernel_lab.engine.qt.RunRelay` (so Cancel works even inside one long LAPACK
call); the only computation on the GUI side is an experiment's closed-form ``preview``
(theory curves, milliseconds), and data loading for the preview runs on a pool thread.
"""

from __future__ import annotations

import html
import json
import math
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from kernel_lab import __version__
from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.memory import memory_budget_bytes
from kernel_lab.engine.output import write_curves_csv, write_result_json
from kernel_lab.engine.presets import load_preset, preset_names
from kernel_lab.engine.process import RunRequest
from kernel_lab.engine.qt import RunRelay
from kernel_lab.engine.runner import RunResult
from kernel_lab.engine.session import Session, load_session, save_session
from kernel_lab.experiments import PartialResult, get_experiment, list_experiments
from kernel_lab.gui.data_panel import DataPanel
from kernel_lab.gui.forms import ParamForm
from kernel_lab.gui.render import PlotView
from kernel_lab.gui.report import write_report

REDRAW_MS = 60          # live curves are redrawn at most ~16 times a second
PREVIEW_DELAY_MS = 40   # theory curves follow the widgets after this pause
MAX_RECENT = 8
SESSION_FILTER = "Kernel Lab sessions (*.json);;All files (*)"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "—" if not math.isfinite(value) else f"{value:.6g}"
    return str(value)


class PlotPanel(QtWidgets.QWidget):
    """The experiment's declared plots as tabs, with a crosshair read-out."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        col = QtWidgets.QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.setDocumentMode(True)
        col.addWidget(self.tabs, 1)
        self.readout = QtWidgets.QLabel(" ")
        self.readout.setStyleSheet("color: #444; padding: 2px 6px;")
        col.addWidget(self.readout)
        self.views: list[PlotView] = []
        self.widgets: list[pg.GraphicsLayoutWidget] = []
        self._proxies: list[Any] = []
        self._cross: dict[int, tuple[Any, Any]] = {}

    def build(self, plots: Any, colors: dict[str, str], scale: float) -> None:
        old = list(self.widgets)
        self.tabs.clear()  # removes the pages without deleting them
        for w in old:
            w.deleteLater()
        self.views, self.widgets, self._proxies = [], [], []
        self._cross: dict[int, tuple[Any, Any]] = {}
        for spec in plots:
            w = pg.GraphicsLayoutWidget()
            view = PlotView(w.ci, 0, spec, colors=colors, scale=scale,
                            mark_minima=spec.x == "lam" and spec.kind == "lines")
            self.views.append(view)
            self.widgets.append(w)
            self.tabs.addTab(w, spec.title)
            proxy = pg.SignalProxy(w.scene().sigMouseMoved, rateLimit=30,
                                   slot=lambda ev, v=view: self._moved(v, ev[0]))
            self._proxies.append(proxy)

    def _moved(self, view: PlotView, pos: Any) -> None:
        vb = view.item.vb
        if not view.item.sceneBoundingRect().contains(pos):
            return
        p = vb.mapSceneToView(pos)
        lines = self._cross.get(id(view))
        if lines is None:
            pen = pg.mkPen("#888888", width=1, style=QtCore.Qt.PenStyle.DashLine)
            lines = (pg.InfiniteLine(angle=90, pen=pen), pg.InfiniteLine(angle=0, pen=pen))
            for line in lines:
                view.item.addItem(line, ignoreBounds=True)
            self._cross[id(view)] = lines
        lines[0].setPos(p.x())
        lines[1].setPos(p.y())
        x = 10 ** p.x() if view.spec.logx else p.x()
        y = 10 ** p.y() if view.spec.logy else p.y()
        self.readout.setText(f"{view.spec.xlabel or view.spec.x} = {x:.4g}    "
                             f"{view.spec.ylabel or 'y'} = {y:.4g}")

    def current_widget(self) -> pg.GraphicsLayoutWidget | None:
        i = self.tabs.currentIndex()
        return self.widgets[i] if 0 <= i < len(self.widgets) else None


class MainWindow(QtWidgets.QMainWindow):
    """Kernel Lab's main window.

    Parameters
    ----------
    settings : QSettings, optional
        Where layout and last-used settings persist (default: the user's Kernel Lab
        settings); tests pass a temporary file.
    """

    def __init__(self, settings: QtCore.QSettings | None = None) -> None:
        super().__init__()
        self.setWindowTitle(f"Kernel Lab {__version__}")
        self.setWindowIcon(app_icon())
        self.setObjectName("KernelLabMainWindow")
        self.resize(1360, 860)
        self.settings = settings or QtCore.QSettings("KernelLab", "Kernel Lab")
        self._run_id = 0
        self._active: int | None = None
        self._started = 0.0
        self._table: dict[str, np.ndarray] = {}
        self._preview: dict[str, np.ndarray] | None = None
        self._dirty = False
        self._stale = False
        self._colors: dict[str, str] = {}
        self._pins: list[dict[str, Any]] = []
        self._last_times: dict[str, tuple[float, int]] = {}
        self._speed: float | None = None
        self.presentation = False
        self._session_text = ("", "")
        self.last_result: RunResult | None = None
        self.form: ParamForm | None = None
        pg.setConfigOptions(antialias=True, background="w", foreground="k")

        self.plot_panel = PlotPanel()
        self.setCentralWidget(self.plot_panel)
        self._build_docks()
        self._build_menus()
        self.setDockOptions(QtWidgets.QMainWindow.DockOption.AnimatedDocks
                            | QtWidgets.QMainWindow.DockOption.AllowTabbedDocks)
        self._default_state = self.saveState()

        self.relay = RunRelay(self)
        self.relay.progressed.connect(self._on_progress)
        self.relay.partial_arrived.connect(self._on_partial)
        self.relay.finished_run.connect(self._on_finished)
        self.relay.failed.connect(self._on_failed)
        self.relay.cancelled.connect(self._on_cancelled)
        self.relay.worker_started.connect(
            lambda pid: self.log(f"compute worker process started (pid {pid})"))
        self.relay.start()

        self._behind: set[int] = set()
        self._fresh = False
        self._redraw_timer = QtCore.QTimer(self, interval=REDRAW_MS,
                                           timeout=lambda: self._redraw(everything=False))
        self.plot_panel.tabs.currentChanged.connect(self._tab_shown)
        self._redraw_timer.start()
        self._preview_timer = QtCore.QTimer(self, singleShot=True, interval=PREVIEW_DELAY_MS,
                                            timeout=self._update_preview)
        self.data_panel.data_changed.connect(self._data_changed)
        self.experiment_box.currentIndexChanged.connect(self._experiment_changed)
        self._restore_settings()

    # -- layout -------------------------------------------------------------------------
    def _dock(self, title: str, widget: QtWidgets.QWidget,
              area: QtCore.Qt.DockWidgetArea) -> QtWidgets.QDockWidget:
        dock = QtWidgets.QDockWidget(title, self)
        dock.setObjectName(f"dock-{title.lower()}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_docks(self) -> None:
        Area = QtCore.Qt.DockWidgetArea
        self.data_panel = DataPanel()
        data_scroll = QtWidgets.QScrollArea()
        data_scroll.setWidgetResizable(True)
        data_scroll.setWidget(self.data_panel)
        self.data_dock = self._dock("Data", data_scroll, Area.LeftDockWidgetArea)

        exp = QtWidgets.QWidget()
        col = QtWidgets.QVBoxLayout(exp)
        col.setContentsMargins(4, 4, 4, 4)
        self.experiment_box = QtWidgets.QComboBox()
        for cls in list_experiments():
            self.experiment_box.addItem(f"{cls.name} — {cls.title}", cls.name)
            self.experiment_box.setItemData(self.experiment_box.count() - 1, cls.title,
                                            QtCore.Qt.ItemDataRole.ToolTipRole)
        col.addWidget(self.experiment_box)
        self.form_holder = QtWidgets.QScrollArea()
        self.form_holder.setWidgetResizable(True)
        col.addWidget(self.form_holder, 1)
        self.estimate = QtWidgets.QLabel(" ")
        self.estimate.setWordWrap(True)
        col.addWidget(self.estimate)
        buttons = QtWidgets.QHBoxLayout()
        self.run_button = QtWidgets.QPushButton("Run (Ctrl+R)")
        self.run_button.setToolTip("run the experiment in the background (Ctrl+R); a run "
                                   "in progress is cancelled first")
        self.cancel_button = QtWidgets.QPushButton("Cancel (Esc)")
        self.cancel_button.setEnabled(False)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        col.addLayout(buttons)
        self.progress = QtWidgets.QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setFormat("%p%")
        col.addWidget(self.progress)
        self.status = QtWidgets.QLabel("Ready.")
        self.status.setWordWrap(True)
        col.addWidget(self.status)
        self.exp_dock = self._dock("Experiment", exp, Area.LeftDockWidgetArea)
        self.splitDockWidget(self.data_dock, self.exp_dock, QtCore.Qt.Orientation.Vertical)

        self.results = QtWidgets.QTableWidget(0, 2)
        self.results.setHorizontalHeaderLabels(["result", "value"])
        self.results.horizontalHeader().setStretchLastSection(True)
        self.results.verticalHeader().setVisible(False)
        self.results.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.results.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.ActionsContextMenu)
        copy = QtGui.QAction("Copy", self.results, shortcut=QtGui.QKeySequence.StandardKey.Copy,
                             triggered=self.copy_results)
        copy.setShortcutContext(QtCore.Qt.ShortcutContext.WidgetShortcut)
        self.results.addAction(copy)
        self.results_dock = self._dock("Results", self.results, Area.BottomDockWidgetArea)
        self.log_view = QtWidgets.QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(2000)
        self.log_dock = self._dock("Log", self.log_view, Area.BottomDockWidgetArea)
        self.tabifyDockWidget(self.results_dock, self.log_dock)
        self.results_dock.raise_()
        self.explain = QtWidgets.QTextBrowser()
        self.explain_dock = self._dock("Explain", self.explain, Area.RightDockWidgetArea)
        self.resizeDocks([self.data_dock, self.explain_dock], [380, 300],
                         QtCore.Qt.Orientation.Horizontal)
        self.resizeDocks([self.data_dock, self.exp_dock], [270, 560],
                         QtCore.Qt.Orientation.Vertical)
        self.resizeDocks([self.results_dock], [190], QtCore.Qt.Orientation.Vertical)

    def _action(self, menu: QtWidgets.QMenu, text: str, slot: Any,
                shortcut: str | QtGui.QKeySequence.StandardKey | None = None,
                checkable: bool = False) -> QtGui.QAction:
        act = QtGui.QAction(text, self)
        if shortcut is not None:
            act.setShortcut(QtGui.QKeySequence(shortcut))
        act.setCheckable(checkable)
        act.triggered.connect(slot)
        menu.addAction(act)
        return act

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file = bar.addMenu("&File")
        self._action(file, "Open &data…", self.data_panel.browse_file, "Ctrl+O")
        self._action(file, "&Open session…", self.open_session_dialog, "Ctrl+Shift+O")
        self.recent_menu = file.addMenu("Recent sessions")
        self._action(file, "&Save session…", self.save_session_dialog, "Ctrl+S")
        file.addSeparator()
        self._action(file, "Export &plot…", self.export_plot_dialog, "Ctrl+E")
        self._action(file, "Export &results…", self.export_results_dialog, "Ctrl+Shift+E")
        self._action(file, "Export report (&HTML)…", self.export_report_dialog, "Ctrl+Shift+H")
        file.addSeparator()
        self._action(file, "&Quit", self.close, QtGui.QKeySequence.StandardKey.Quit)
        presets = bar.addMenu("&Presets")
        for name in preset_names():
            act = presets.addAction(load_preset(name).title)
            act.setData(name)
            act.triggered.connect(lambda checked=False, n=name: self.open_preset(n))
        run = bar.addMenu("&Run")
        self.run_action = self._action(run, "&Run", self.start_run, "Ctrl+R")
        self.cancel_action = self._action(run, "&Cancel", self.cancel_run, "Esc")
        run.addSeparator()
        backends = run.addMenu("Compute &backend")
        self.backend_group = QtGui.QActionGroup(self)
        for key, text in (("threads", "In-process threads (default)"),
                          ("processes", "Local process pool"),
                          ("dask", "Dask: local cluster"),
                          ("dask-scheduler", "Dask: connect to a scheduler…")):
            act = backends.addAction(text)
            act.setCheckable(True)
            act.setData(key)
            self.backend_group.addAction(act)
        self.backend_group.triggered.connect(self._backend_chosen)
        view = bar.addMenu("&View")
        for dock in (self.data_dock, self.exp_dock, self.results_dock, self.log_dock,
                     self.explain_dock):
            view.addAction(dock.toggleViewAction())
        view.addSeparator()
        self._action(view, "&Pin current curves", self.pin_curves, "Ctrl+P")
        self._action(view, "C&lear pinned curves", self.clear_pins, "Ctrl+Shift+P")
        self.presentation_action = self._action(view, "Presentation &mode",
                                                self.set_presentation, "F5", checkable=True)
        view.addSeparator()
        self._action(view, "&Reset layout", self.reset_layout)
        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&About Kernel Lab", self.about)
        self.run_button.clicked.connect(self.start_run)
        self.cancel_button.clicked.connect(self.cancel_run)

    # -- compute backend ----------------------------------------------------------------
    def backend(self) -> tuple[str, str | None]:
        """(backend, scheduler address) used for the next run."""
        key = self.settings.value("backend", "threads")
        scheduler = self.settings.value("scheduler", "") or None
        if key == "dask-scheduler":
            return "dask", scheduler
        return (key if key in ("threads", "processes", "dask") else "threads"), None

    def set_backend(self, key: str, scheduler: str | None = None) -> None:
        self.settings.setValue("backend", key)
        if scheduler is not None:
            self.settings.setValue("scheduler", scheduler)
        for act in self.backend_group.actions():
            act.setChecked(act.data() == key)
        self.log(f"compute backend: {key}" + (f" at {scheduler}" if scheduler else ""))

    def _backend_chosen(self, action: QtGui.QAction) -> None:
        key = action.data()
        if key == "dask-scheduler":
            address, ok = QtWidgets.QInputDialog.getText(
                self, "Dask scheduler", "Scheduler address (tcp://host:8786):",
                text=self.settings.value("scheduler", "tcp://127.0.0.1:8786"))
            if not ok or not address.strip():
                self.set_backend(self.settings.value("backend", "threads"))
                return
            self.set_backend(key, address.strip())
        else:
            self.set_backend(key)

    # -- settings -----------------------------------------------------------------------
    def _restore_settings(self) -> None:
        s = self.settings
        name = s.value("experiment", "")
        idx = self.experiment_box.findData(name) if name else -1
        self.experiment_box.blockSignals(True)
        self.experiment_box.setCurrentIndex(max(idx, 0))
        self.experiment_box.blockSignals(False)
        data = _json(s.value("data", ""))
        self.presentation = s.value("presentation", "false") == "true"
        self.presentation_action.setChecked(self.presentation)
        self._experiment_changed(restore=True)
        if isinstance(data, dict) and data.get("spec") and not data.get("use_default", True):
            self.data_panel.use_default.setChecked(False)
            self.data_panel.set_spec(data["spec"], data.get("options") or {})
        geometry, state = s.value("geometry"), s.value("state")
        if isinstance(geometry, QtCore.QByteArray):
            self.restoreGeometry(geometry)
        if isinstance(state, QtCore.QByteArray):
            self.restoreState(state)
        self._refresh_recent()
        key = s.value("backend", "threads")
        for act in self.backend_group.actions():
            act.setChecked(act.data() == key)

    def _save_settings(self) -> None:
        s = self.settings
        s.setValue("geometry", self.saveGeometry())
        s.setValue("state", self.saveState())
        s.setValue("experiment", self.experiment.name)
        spec, options = self.data_panel.spec()
        s.setValue("data", json.dumps({"spec": spec, "options": options,
                                       "use_default": self.data_panel.use_default.isChecked()}))
        if self.form is not None:
            s.setValue(f"params/{self.experiment.name}", json.dumps(self.form.values()))
        s.setValue("presentation", "true" if self.presentation else "false")
        s.sync()

    def reset_layout(self) -> None:
        """Docks back to where they started, all visible."""
        self.restoreState(self._default_state)
        for dock in (self.data_dock, self.exp_dock, self.results_dock, self.log_dock,
                     self.explain_dock):
            dock.setVisible(True)
            dock.setFloating(False)

    # -- experiment, form and preview ---------------------------------------------------
    def _experiment_changed(self, *args: Any, restore: bool = False) -> None:
        self.cancel_run()  # its results would belong to the other experiment
        if self.form is not None and hasattr(self, "experiment"):
            self.settings.setValue(f"params/{self.experiment.name}",
                                   json.dumps(self.form.values()))
        exp = get_experiment(self.experiment_box.currentData())
        self.experiment = exp
        self.form = ParamForm(exp.param_specs())
        saved = _json(self.settings.value(f"params/{exp.name}", ""))
        if isinstance(saved, dict):
            self.form.set_values(saved)
        self.form.changed.connect(self._params_changed)
        self.form_holder.setWidget(self.form)
        self.explain.setHtml(f"<h3>{html.escape(exp.title)}</h3>"
                             f"<p>{html.escape(exp.description)}</p>")
        self._table, self._preview, self.last_result = {}, None, None
        self._session_text = ("", "")
        self._pins = []
        self._colors = {}
        self.results.setRowCount(0)
        self._build_plots()
        if self.data_panel.use_default.isChecked():
            self.data_panel.set_spec(exp.default_data)
        elif not restore:
            self._schedule_preview()

    def _build_plots(self) -> None:
        self.plot_panel.build(self.experiment.plots, self._colors,
                              1.6 if self.presentation else 1.0)
        self.plot_views = self.plot_panel.views
        self._behind = set()
        for pin in self._pins:
            for view in self.plot_views:
                view.add_pin(pin["table"])
        self._dirty = True

    def _params_changed(self) -> None:
        if self.last_result is not None and not self._stale and self._active is None:
            self._stale = True
            self.status.setText("Parameters changed: the results shown are from the last "
                                "run (theory curves follow the new values). Run to update.")
        self._schedule_preview()

    def _data_changed(self) -> None:
        ds = self.data_panel.dataset
        if ds is not None:
            s = ds.summary()
            self.log(f"data loaded: {s['name']} (n = {s['n_train']} + {s['n_test']}, "
                     f"p = {s['p']})")
        self._schedule_preview()

    def _schedule_preview(self) -> None:
        self._preview_timer.start()

    def _update_preview(self) -> None:
        """Theory curves and the run's memory estimate for the current widgets."""
        assert self.form is not None
        ds = self.data_panel.dataset
        try:
            params = self.experiment.resolve(self.form.values())
        except KernelLabError as exc:
            self.estimate.setText(f"<span style='color:#B00020'>{html.escape(str(exc))}"
                                  "</span>")
            return
        self._show_estimate(params)
        try:
            preview = None if ds is None else self.experiment.preview(params, ds)
        except KernelLabError:
            preview = None
        if preview is None:
            if self._preview is not None:  # e.g. real data now: no limit to draw
                self._preview = None
                self._dirty = True
            return
        self._preview = {k: np.asarray(v, dtype=float) for k, v in preview.items()}
        self._dirty = True

    def _show_estimate(self, params: Mapping[str, Any]) -> None:
        ds = self.data_panel.dataset
        if ds is None:
            self.estimate.setText("")
            return
        est = self.experiment.estimate(params, ds.n_train, ds.p)
        mem = float(est.get("memory_bytes", 0))
        budget = memory_budget_bytes()
        text = f"Planned memory ≈ {mem / 2**20:,.0f} MB (budget {budget / 2**20:,.0f} MB)."
        if est.get("note"):
            text += f" {est['note']}."
        seconds = self._time_estimate(est, ds.n_train)
        if seconds is not None:
            text += f" Time ≈ {seconds:.2g} s." if seconds < 60 else \
                f" Time ≈ {seconds / 60:.2g} min."
        if mem > budget:
            text = ("<span style='color:#B00020'><b>Too large:</b> " + html.escape(text)
                    + " An exact kernel matrix would not fit; use fewer points or an "
                      "approximate method (Nyström or random features).</span>")
        self.estimate.setText(text)

    def _time_estimate(self, est: Mapping[str, Any], n: int) -> float | None:
        """Seconds for the planned run: from the experiment's operation count and this
        machine's measured speed, else from the last run of the experiment scaled by n."""
        if est.get("flops"):
            if self._speed is None:  # once: ~10 ms of matrix products
                a = np.random.default_rng(0).random((384, 384))
                best = math.inf
                for _ in range(4):  # the first call also starts the BLAS threads
                    t0 = time.perf_counter()
                    a @ a
                    best = min(best, time.perf_counter() - t0)
                # what the runs reach, measured against this (eigendecompositions of a
                # few hundred rows, kernel blocks, Python around them): ~15 % of it
                self._speed = 0.15 * 2 * 384**3 / max(best, 1e-9)
            return 0.1 + float(est["flops"]) / self._speed
        last = self._last_times.get(self.experiment.name)
        if last is None:
            return None
        seconds, n_last = last
        return seconds * n / max(n_last, 1)

    # -- running ------------------------------------------------------------------------
    def start_run(self) -> None:
        """Start a run with the form's values; a run in progress is cancelled first."""
        assert self.form is not None
        if self._active is not None:
            self.cancel_run()
        try:
            params = self.experiment.resolve(self.form.values())
        except KernelLabError as exc:
            self.status.setText(f"Cannot run: {exc}")
            self.log(f"cannot run: {exc}")
            return
        spec, options = self.data_panel.spec_for_run()
        self._run_id += 1
        self._active = self._run_id
        self._started = time.monotonic()
        backend, scheduler = self.backend()
        self.relay.submit(RunRequest(self._run_id, self.experiment.name, params, spec,
                                     dict(options), workers=None,  # as the CLI: all cores
                                     backend=backend, scheduler=scheduler))
        self._table = {}
        self._stale = False
        for view in self.plot_views:  # emptied now; rebuilt only if the columns change
            view.blank()
        self._fresh = True
        self._dirty = True
        self.results.setRowCount(0)
        self.progress.setValue(0)
        self.cancel_button.setEnabled(True)
        self.status.setText("Starting…")
        self.log(f"run {self._run_id}: {self.experiment.name} on {spec} "
                 f"(seed {params['seed']})")

    def cancel_run(self) -> None:
        if self._active is None:
            return
        self.relay.cancel()
        self.log(f"run {self._active}: cancelled")
        self._active = None
        self.cancel_button.setEnabled(False)
        self.status.setText("Cancelled.")

    @property
    def running(self) -> bool:
        return self._active is not None

    def run_blocking(self, timeout: float = 300.0) -> RunResult | None:
        """Wait for the data, run, and wait for the end while processing events (for
        scripted use: screenshots, the self-test). The result, or None if the run failed,
        was cancelled or took longer than ``timeout`` seconds."""
        app = QtWidgets.QApplication.instance()
        wait = QtCore.QEventLoop.ProcessEventsFlag.WaitForMoreEvents  # the timers wake it
        deadline = time.monotonic() + timeout
        while self.data_panel.loading and time.monotonic() < deadline:
            app.processEvents(wait)
        self.start_run()
        while self.running and time.monotonic() < deadline:
            app.processEvents(wait)
        return self.last_result if not self.running else None

    @QtCore.Slot(int, float, str)
    def _on_progress(self, run_id: int, fraction: float, message: str) -> None:
        if run_id != self._active:
            return
        self.progress.setValue(int(1000 * fraction))
        elapsed = time.monotonic() - self._started
        eta = ""
        if 0.05 < fraction < 1.0 and elapsed > 1.0:
            eta = f" — about {elapsed * (1 - fraction) / fraction:.0f} s left"
        self.status.setText(f"{message}{eta}")

    @QtCore.Slot(int, object)
    def _on_partial(self, run_id: int, partial: PartialResult) -> None:
        if run_id != self._active:
            return
        if partial.table is not None:
            self._table = {k: np.asarray(v, dtype=float) for k, v in partial.table.items()}
            self._dirty = True
        if partial.summaries is not None:
            self._show_summaries(partial.summaries)
        self.partial_count = getattr(self, "partial_count", 0) + 1

    @QtCore.Slot(int, object)
    def _on_finished(self, run_id: int, result: RunResult) -> None:
        if run_id != self._active:
            return
        self._active = None
        self._table = {k: np.asarray(v, dtype=float) for k, v in result.table.items()}
        self._dirty = True
        self._redraw(everything=False)
        self.cancel_button.setEnabled(False)
        total = result.timings.get("total_s", 0.0)
        self._last_times[result.experiment] = (total, int(result.data.get("n_train", 1)))
        self.status.setText(f"Done in {total:.2f} s.")
        self.log(f"run {run_id}: done in {total:.2f} s")
        self._show_summaries(result.summaries)
        self.progress.setValue(1000)
        self.last_result = result
        self._schedule_preview()

    @QtCore.Slot(int, str, bool)
    def _on_failed(self, run_id: int, message: str, user_error: bool) -> None:
        if run_id != self._active:
            return
        self._active = None
        self.cancel_button.setEnabled(False)
        text = ("Cannot run: " if user_error else "The run failed: ") + message
        self.status.setText(text)
        self.log(f"run {run_id}: {text}")

    @QtCore.Slot(int, bool)
    def _on_cancelled(self, run_id: int, killed: bool) -> None:
        if killed:
            self.log(f"run {run_id}: stopped inside a long computation; worker restarted")

    # -- drawing ------------------------------------------------------------------------
    def _shown_table(self) -> dict[str, np.ndarray]:
        """The run's table, with the preview's theory columns laid over it when both use
        the same x grid, or the preview alone before any run."""
        if self._preview is None:
            return self._table
        if not self._table:
            return self._preview
        x = self.experiment.plots[0].x if self.experiment.plots else ""
        a, b = self._table.get(x), self._preview.get(x)
        if a is not None and b is not None and a.shape == b.shape and np.allclose(a, b):
            return {**self._table, **self._preview}
        return self._table if self._active is not None else self._preview

    def _redraw(self, everything: bool = True) -> None:
        """Redraw when new results arrived since the last call. The timer redraws only
        the visible tab (the others catch up when shown) and spaces its ticks so that
        drawing takes at most ~15 % of the GUI thread, leaving the cores to the run."""
        if not self._dirty:
            return
        self._dirty = False
        t0 = time.perf_counter()
        table = self._shown_table()
        if self._fresh and self._table:
            # first results of a run: keep the plot items when the columns are the same
            # (other kernels or methods than last time: start the plots afresh)
            self._fresh = False
            for view in self.plot_views:
                if view.columns() - set(table):
                    view.clear()
        current = self.plot_panel.tabs.currentIndex()
        for i, view in enumerate(self.plot_views):
            if everything or i == current:
                view.update(table)
            else:
                self._behind.add(i)
        cost_ms = 1e3 * (time.perf_counter() - t0)
        self._redraw_timer.setInterval(int(min(500, max(REDRAW_MS, 6 * cost_ms))))

    def _tab_shown(self, index: int) -> None:
        if index in self._behind:
            self._behind.discard(index)
            self.plot_views[index].update(self._shown_table())

    def _show_summaries(self, summaries: Mapping[str, Any]) -> None:
        self.results.setRowCount(len(summaries))
        for row, (key, value) in enumerate(summaries.items()):
            self.results.setItem(row, 0, QtWidgets.QTableWidgetItem(key))
            self.results.setItem(row, 1, QtWidgets.QTableWidgetItem(_fmt(value)))
        self.results.resizeColumnToContents(0)

    def copy_results(self) -> None:
        """Selected result rows (all when none is selected) to the clipboard, as TSV."""
        rows = sorted({i.row() for i in self.results.selectedIndexes()}) or \
            list(range(self.results.rowCount()))
        lines = ["\t".join(self.results.item(r, c).text() if self.results.item(r, c) else ""
                           for c in range(2)) for r in rows]
        QtWidgets.QApplication.clipboard().setText("\n".join(lines))

    def pin_curves(self) -> None:
        """Keep the current curves as a faded overlay to compare with the next runs."""
        if not self._table:
            self.status.setText("Nothing to pin yet: run the experiment first.")
            return
        label = f"run {self._run_id}"
        table = {k: v.copy() for k, v in self._table.items()}
        self._pins.append({"label": label, "table": table})
        count = sum(view.add_pin(table) for view in self.plot_views)
        self.log(f"pinned {count} curves of {label}")

    def clear_pins(self) -> None:
        self._pins = []
        for view in self.plot_views:
            view.clear_pins()

    def set_presentation(self, on: bool) -> None:
        """Larger fonts, lines and symbols for projectors."""
        self.presentation = bool(on)
        font = QtWidgets.QApplication.font()
        font.setPointSizeF(13.0 if on else 9.0)
        for widget in (self.data_panel, self.form_holder, self.results, self.status,
                       self.explain, self.experiment_box):
            widget.setFont(font)
        self._build_plots()
        self._redraw()

    def log(self, message: str) -> None:
        self.log_view.appendPlainText(f"{time.strftime('%H:%M:%S')}  {message}")

    # -- export -------------------------------------------------------------------------
    def export_plot(self, path: str | Path, index: int | None = None) -> Path:
        """The plot of tab ``index`` (default: the current one) as PNG or SVG."""
        from pyqtgraph.exporters import ImageExporter

        self._redraw()
        i = self.plot_panel.tabs.currentIndex() if index is None else index
        view = self.plot_views[i]
        path = Path(path)
        if path.suffix.lower() == ".svg":
            # Qt's own SVG painter: pyqtgraph's SVGExporter fails on some symbol paths
            from PySide6.QtSvg import QSvgGenerator

            scene = view.item.scene()
            rect = scene.sceneRect()
            gen = QSvgGenerator()
            gen.setFileName(str(path))
            gen.setSize(QtCore.QSize(int(rect.width()), int(rect.height())))
            gen.setViewBox(rect)
            gen.setTitle(view.spec.title)
            painter = QtGui.QPainter(gen)
            scene.render(painter)
            painter.end()
        else:
            exporter = ImageExporter(view.item.scene())
            exporter.parameters()["width"] = 1600
            exporter.export(str(path if path.suffix else path.with_suffix(".png")))
        return path

    def export_results(self, path: str | Path) -> Path:
        """The last finished run as CSV (curves) or JSON (everything, as the CLI writes)."""
        if self.last_result is None:
            raise KernelLabError("no finished run to export yet: run the experiment first")
        path = Path(path)
        if path.suffix.lower() == ".json":
            return write_result_json(self.last_result, path)
        return write_curves_csv(self.last_result, path)

    def _ask_path(self, title: str, filters: str, default: str) -> str:
        start = str(Path(self.settings.value("last_dir", str(Path.home()))) / default)
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, title, start, filters)
        if path:
            self.settings.setValue("last_dir", str(Path(path).parent))
        return path

    def _export_dialog(self, what: str, filters: str, suffix: str, export: Any,
                       needs_result: bool = True) -> None:
        if needs_result and self.last_result is None:
            self.status.setText(f"No {what} yet: run the experiment first.")
            return
        path = self._ask_path(f"Export {what}", filters, f"{self.experiment.name}{suffix}")
        if path:
            self._try(lambda: export(path), f"{what} written to {path}")

    def export_plot_dialog(self) -> None:
        self._export_dialog("plot", "PNG image (*.png);;SVG drawing (*.svg)", ".png",
                            self.export_plot, needs_result=False)

    def export_results_dialog(self) -> None:
        self._export_dialog("results", "CSV curves (*.csv);;JSON, everything (*.json)", ".csv",
                            self.export_results)

    def _try(self, action: Any, done: str) -> bool:
        try:
            action()
        except (KernelLabError, OSError) as exc:
            QtWidgets.QMessageBox.warning(self, "Kernel Lab", str(exc))
            return False
        self.status.setText(done[0].upper() + done[1:] + ".")
        self.log(done)
        return True

    # -- sessions -----------------------------------------------------------------------
    def current_session(self) -> Session:
        assert self.form is not None
        params = self.experiment.resolve(self.form.values())
        spec, options = self.data_panel.spec()
        pinned = [{"label": p["label"], "table": p["table"]} for p in self._pins]
        return Session(self.experiment.name, params, spec or None, dict(options),
                       pinned=pinned)

    def save_session(self, path: str | Path) -> Path:
        path = save_session(self.current_session(), path)
        self._remember(path)
        return path

    def open_session(self, path: str | Path) -> Session:
        """Apply a session file; raises SessionError (and changes nothing) if it is bad."""
        session = load_session(path)
        self.apply_session(session)
        self._remember(Path(path))
        return session

    def apply_session(self, session: Session) -> None:
        self.cancel_run()
        self.data_panel.use_default.setChecked(session.data_spec is None)
        idx = self.experiment_box.findData(session.experiment)
        if idx != self.experiment_box.currentIndex():
            self.experiment_box.setCurrentIndex(idx)  # rebuilds form and plots
        assert self.form is not None
        self.last_result, self._table = None, {}  # a result of other settings
        self.results.setRowCount(0)
        for view in self.plot_views:
            view.blank()
        self._dirty = True
        self.form.set_values(session.params)
        if session.data_spec:
            self.data_panel.set_spec(session.data_spec, session.data_options)
        self.clear_pins()
        for pin in session.pinned:
            table = {k: np.array([np.nan if v is None else v for v in col], dtype=float)
                     for k, col in pin["table"].items()}
            self._pins.append({"label": pin.get("label", ""), "table": table})
            for view in self.plot_views:
                view.add_pin(table)
        self._session_text = (session.title, session.about)
        if session.about:
            self.explain.setHtml(f"<h3>{html.escape(session.title)}</h3><p>"
                                 f"{html.escape(session.about)}</p><hr>"
                                 f"<p>{html.escape(self.experiment.description)}</p>")
        self.log(f"session: {session.title or session.experiment}")

    def open_preset(self, name: str) -> None:
        """Load a teaching preset (press Run to see what it promises)."""
        session = load_preset(name)
        self.apply_session(session)
        self.status.setText(f"Preset “{session.title}” loaded: press Run (Ctrl+R).")

    def export_report(self, path: str | Path) -> Path:
        """A self-contained HTML report of the last finished run."""
        if self.last_result is None:
            raise KernelLabError("no finished run to report yet: run the experiment first")
        title, about = self._session_text
        return write_report(self.last_result.to_dict(), path, title=title, about=about)

    def export_report_dialog(self) -> None:
        self._export_dialog("report", "HTML report (*.html)", ".html", self.export_report)

    def open_session_dialog(self) -> None:
        start = self.settings.value("last_dir", str(Path.home()))
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Open session", start,
                                                        SESSION_FILTER)
        if path:
            self._open_and_report(path)

    def _open_and_report(self, path: str) -> None:
        try:
            self.open_session(path)
        except KernelLabError as exc:
            QtWidgets.QMessageBox.warning(self, "Cannot open the session", str(exc))
            self.log(f"session not opened: {exc}")
            return
        self.status.setText(f"Session {Path(path).name} opened; press Run (Ctrl+R).")

    def save_session_dialog(self) -> None:
        path = self._ask_path("Save session", SESSION_FILTER, f"{self.experiment.name}.json")
        if path:
            self._try(lambda: self.save_session(path), f"session saved to {path}")

    def _remember(self, path: Path) -> None:
        recent = [str(path.resolve())] + [p for p in self._recent() if p != str(path.resolve())]
        self.settings.setValue("recent", json.dumps(recent[:MAX_RECENT]))
        self._refresh_recent()

    def _recent(self) -> list[str]:
        value = _json(self.settings.value("recent", "[]"))
        return [p for p in value if isinstance(p, str)] if isinstance(value, list) else []

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        for p in self._recent():
            self.recent_menu.addAction(Path(p).name, lambda p=p: self._open_and_report(p))
        self.recent_menu.setEnabled(bool(self._recent()))

    def about(self) -> None:
        QtWidgets.QMessageBox.about(
            self, "About Kernel Lab",
            f"<b>Kernel Lab {__version__}</b><br>Scalable kernel methods, live: recursive "
            "RLS Nyström (Musco &amp; Musco), doubly stochastic gradients (Dai et al.), "
            "greedy feature construction (Oglic &amp; Gärtner) and the random-matrix risk "
            "of centered kernel ridge regression (Elkhalil et al.).")

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        self._save_settings()
        self.cancel_run()
        self.relay.stop()
        super().closeEvent(event)


def app_icon() -> QtGui.QIcon:
    """The application icon (a kernel matrix), from the package's resources."""
    from importlib import resources

    data = resources.files("kernel_lab").joinpath("resources", "icon.png").read_bytes()
    pixmap = QtGui.QPixmap()
    pixmap.loadFromData(data, "PNG")
    return QtGui.QIcon(pixmap)


def _json(value: Any) -> Any:
    try:
        return json.loads(value) if isinstance(value, str) and value else None
    except json.JSONDecodeError:
        return None


def screenshot(path: str | Path, session: str | None = None, timeout: float = 300.0, *,
               preset: str | None = None) -> int:
    """Open the window offscreen, run (the session, or the default experiment), wait for
    the result, and save a PNG of the whole window. Returns a process exit code."""
    from kernel_lab.gui.render import ensure_app

    app = ensure_app()
    settings = QtCore.QSettings(str(Path(path).with_suffix(".ini")),
                                QtCore.QSettings.Format.IniFormat)
    settings.clear()
    window = MainWindow(settings)
    window.resize(1440, 900)
    window.show()
    if session or preset:
        try:
            if preset:
                from kernel_lab.engine.presets import load_preset

                window.apply_session(load_preset(preset))
            else:
                window.open_session(session)
        except Exception as exc:  # said in one line; the window is closed properly
            print(f"kernel-lab: {exc}", file=sys.stderr)
            window.close()
            return 2
    ok = window.run_blocking(timeout) is not None
    window._redraw()
    app.processEvents()
    window.grab().save(str(path))
    if not ok:
        print(f"kernel-lab: the run did not finish: {window.status.text()}", file=sys.stderr)
    window.close()
    Path(settings.fileName()).unlink(missing_ok=True)
    return 0 if ok else 1


def main() -> int:
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("Kernel Lab")
    app.setOrganizationName("KernelLab")
    app.setWindowIcon(app_icon())
    window = MainWindow()
    window.show()
    return int(app.exec())
