"""The Kernel Lab window: Data and Experiment panels, live plots, Results, Log and Explain.

Only lays out, draws and dispatches: the state lives in a Qt-free
:class:`~kernel_lab.model.LabModel` that the panels are bound to. Runs go to a worker
process through :class:`kernel_lab.engine.handle.ProcessLauncher` (so Cancel works even
inside one long LAPACK call); data load on a thread of their own. Both are a
:class:`kernel_lab.engine.worker.Worker` whose messages reach the GUI thread through
:func:`kernel_lab.engine.qt.gui_poster`.
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
from kernel_lab.engine.handle import ProcessLauncher
from kernel_lab.engine.qt import gui_poster
from kernel_lab.engine.runner import RunResult
from kernel_lab.engine.session import Session
from kernel_lab.engine.worker import Worker
from kernel_lab.experiments import Experiment
from kernel_lab.gui import preload_for_threads, tear_down, top_level_widgets
from kernel_lab.gui.autosave import Autosave
from kernel_lab.gui.backend_menu import BackendMenu
from kernel_lab.gui.data_panel import DataPanel
from kernel_lab.gui.experiment_panel import ExperimentPanel
from kernel_lab.gui.files import FileActions
from kernel_lab.gui.plot_panel import PlotPanel
from kernel_lab.model import LabModel, RunState
from kernel_lab.model.lab import load_source
from kernel_lab.plotting.view import PlotView

#: One paragraph on what Kernel Lab covers (the window's About box).
ABOUT = ("Scalable kernel methods, live: recursive ridge-leverage-score Nyström sampling "
         "(Musco & Musco), doubly stochastic functional gradients (Dai et al.), greedy "
         "feature construction (Oglic & Gärtner) and the random-matrix theory of centered "
         "kernel ridge regression (Elkhalil et al.).")


def show_results(table: QtWidgets.QTableWidget, summaries: Mapping[str, Any]) -> None:
    """The results table, changed cell by cell (every partial result of a run comes
    here: new items and a new column width each time cost the window's thread)."""
    keys_changed = table.rowCount() != len(summaries)
    table.setRowCount(len(summaries))
    for row, (key, value) in enumerate(summaries.items()):
        for col, text in ((0, key), (1, _fmt(value))):
            item = table.item(row, col)
            if item is None:
                table.setItem(row, col, QtWidgets.QTableWidgetItem(text))
                keys_changed = True
            elif item.text() != text:
                item.setText(text)
                keys_changed |= col == 0
    if keys_changed:
        table.resizeColumnToContents(0)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "—" if not math.isfinite(value) else f"{value:.6g}"
    return str(value)


#: Why no columns can be sent to the Playground: no data (True), or data kept in partitions.
NO_COLUMNS = {True: "Load data first, then send two of its columns.",
              False: "These data stay in their partitions: load a random N of their rows "
                     "('Rows' in the Data panel) to send two of its columns."}


class MainWindow(QtWidgets.QMainWindow):
    """Kernel Lab's main window.

    Parameters
    ----------
    settings : QSettings, optional
        Where layout and last-used settings persist (default: the user's Kernel Lab
        settings); tests pass a temporary file. The autosave file lives beside it.
    autosave : bool
        Autosave, and offer to restore after an unclean end (:mod:`kernel_lab.gui.autosave`).
    """

    def __init__(self, settings: QtCore.QSettings | None = None, *, autosave: bool = True
                 ) -> None:
        super().__init__()
        preload_for_threads()
        self.setWindowTitle(f"Kernel Lab {__version__}")
        self.setWindowIcon(app_icon())
        self.setObjectName("KernelLabMainWindow")
        self.resize(1360, 860)
        self.settings = settings or QtCore.QSettings("KernelLab", "Kernel Lab")
        self.presentation = False
        pg.setConfigOptions(antialias=True, background="w", foreground="k")

        post = gui_poster(self)  # the workers' messages, on this thread
        self.runs = ProcessLauncher(post)
        self.runs.worker_started.connect(
            lambda pid: self.log(f"compute worker process started (pid {pid})"))
        self.loader = Worker(load_source, name="data-loader", post=post)
        self.model = model = LabModel(self.runs, self.loader)
        self.autosave = Autosave(self, on=autosave)
        self.workers = (self.runs, self.loader, self.autosave.worker)  # tear_down waits
        self.plot_panel = PlotPanel(model)
        self.setCentralWidget(self.plot_panel)
        self.playground: Any = None  # the Playground window, made on first use
        self.files = FileActions(self)
        self._build_docks()
        self._build_menus()
        self.setDockOptions(QtWidgets.QMainWindow.DockOption.AnimatedDocks
                            | QtWidgets.QMainWindow.DockOption.AllowTabbedDocks)
        self._default_state = self.saveState()
        model.logged.connect(self.log)
        model.summaries_changed.connect(lambda rows: show_results(self.results, rows))
        model.experiment_changed.connect(self._explain)
        model.session_applied.connect(lambda session: self._explain(model.experiment))
        model.state_changed.connect(self._state_changed)
        self._restore_settings()
        self.autosave.start()

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
        self.data_panel = DataPanel(self.model)
        data_scroll = QtWidgets.QScrollArea()
        data_scroll.setWidgetResizable(True)
        data_scroll.setWidget(self.data_panel)
        self.data_dock = self._dock("Data", data_scroll, Area.LeftDockWidgetArea)
        self.exp_panel = ExperimentPanel(self.model, self._saved_params)
        self.exp_panel.leaving.connect(self._remember_params)
        self.exp_dock = self._dock("Experiment", self.exp_panel, Area.LeftDockWidgetArea)
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
        self.files.build_menus(bar)
        run = bar.addMenu("&Run")
        self.run_action = self._action(run, "&Run", self.start_run, "Ctrl+R")
        self.cancel_action = self._action(run, "&Cancel", self.cancel_run, "Esc")
        run.addSeparator()
        self.backends = BackendMenu(run, self.model, self.settings, self.log)
        play = bar.addMenu("Play&ground")
        self.playground_action = self._action(play, "Open the &Playground",
                                              self.open_playground, "Ctrl+G")
        self._action(play, "&Send columns of the loaded data…", self.send_to_playground)
        view = bar.addMenu("&View")
        for dock in self._docks():
            view.addAction(dock.toggleViewAction())
        view.addSeparator()
        self._action(view, "&Pin current curves", self.pin_curves, "Ctrl+P")
        self._action(view, "C&lear pinned curves", self.model.clear_pins, "Ctrl+Shift+P")
        self.presentation_action = self._action(view, "Presentation &mode",
                                                self.set_presentation, "F5", checkable=True)
        self.log_y_action = self._action(view, "&Logarithmic risk and error axes",
                                         self.plot_panel.set_log_y, "Ctrl+L", checkable=True)
        view.addSeparator()
        self._action(view, "&Reset layout", self.reset_layout)
        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&About Kernel Lab", self.about)

    def open_playground(self, preset: str | None = None, *, show: bool = True) -> Any:
        """The Playground window (one, reused), optionally with a Playground preset;
        ``show=False``: made (or found) but not shown."""
        from kernel_lab.gui.playground import PlaygroundWindow

        if getattr(self, "playground", None) is None:  # one per window: closing only hides
            self.playground = PlaygroundWindow(self)
            self.playground.resize(1300, 850)
            self.autosave.watch_playground()
        if preset:
            self.playground.open_preset(preset)
        if show:
            self.playground.show()
            self.playground.raise_()
        return self.playground

    def send_to_playground(self, columns: tuple[int, ...] | None = None) -> bool:
        """Send one input column (with the target: 1-D regression) or two (with a
        two-class target: 2-D classification) of the loaded data to the Playground."""
        ds = self.model.dataset
        if ds is None or not ds.in_memory:  # none, or kept in partitions
            self.status.setText(NO_COLUMNS[ds is None])
            return False
        names = list(ds.feature_names)
        if columns is None:
            dialog = QtWidgets.QDialog(self)
            dialog.setWindowTitle("Send columns to the Playground")
            form = QtWidgets.QFormLayout(dialog)
            first, second = QtWidgets.QComboBox(), QtWidgets.QComboBox()
            first.addItems(names)
            second.addItem("— none: 1-D, the target on the vertical axis —")
            second.addItems(names)
            form.addRow("input x₁", first)
            form.addRow("input x₂ (two classes only)", second)
            buttons = QtWidgets.QDialogButtonBox(
                QtWidgets.QDialogButtonBox.StandardButton.Ok
                | QtWidgets.QDialogButtonBox.StandardButton.Cancel)
            buttons.accepted.connect(dialog.accept)
            buttons.rejected.connect(dialog.reject)
            form.addRow(buttons)
            if not dialog.exec():
                return False
            columns = (first.currentIndex(),) + (
                (second.currentIndex() - 1,) if second.currentIndex() > 0 else ())
        X = np.vstack([ds.X_train, ds.X_test])[:, list(columns)]
        y = np.concatenate([ds.y_train, ds.y_test])
        window = self.open_playground()
        try:
            window.model.load_table(X, y, tuple(names[c] for c in columns))
        except KernelLabError as exc:
            window.readout.setText(f"⚠ {exc}")
            return False
        return True

    def _docks(self) -> tuple[QtWidgets.QDockWidget, ...]:
        return (self.data_dock, self.exp_dock, self.results_dock, self.log_dock,
                self.explain_dock)

    # -- the panels' parts, as the window's (scripts and tests use them) ---------------
    experiment_box = property(lambda self: self.exp_panel.experiment_box)
    form = property(lambda self: self.exp_panel.form)
    estimate = property(lambda self: self.exp_panel.estimate)
    status = property(lambda self: self.exp_panel.status)
    progress = property(lambda self: self.exp_panel.progress)
    run_button = property(lambda self: self.exp_panel.run_button)
    cancel_button = property(lambda self: self.exp_panel.cancel_button)

    @property
    def experiment(self) -> Experiment:
        return self.model.experiment

    @property
    def plot_views(self) -> list[PlotView]:
        return self.plot_panel.views

    @property
    def last_result(self) -> RunResult | None:
        return self.model.result

    @property
    def running(self) -> bool:
        return self.model.running

    def start_run(self) -> None:
        """Start a run with the form's values; a run in progress is cancelled first."""
        self.model.start_run()

    def cancel_run(self) -> None:  # Esc: a model export in progress first, else the run
        self.files.cancel_export() or self.model.cancel_run()

    def pin_curves(self) -> None:
        """Keep the current curves as a faded overlay to compare with the next runs."""
        pin = self.model.pin()
        if pin is not None:
            self.log(f"pinned the curves of {pin.label}")

    # -- compute backend ----------------------------------------------------------------
    def backend(self) -> tuple[str, str | None]:
        """(backend, scheduler address) used for the next run."""
        return self.model.backend

    def set_backend(self, key: str, scheduler: str | None = None) -> None:
        self.backends.set_backend(key, scheduler)

    # -- settings -----------------------------------------------------------------------
    def _saved_params(self, name: str) -> dict[str, Any]:
        saved = _json(self.settings.value(f"params/{name}", ""))
        return saved if isinstance(saved, dict) else {}

    def _remember_params(self, name: str, values: Mapping[str, Any]) -> None:
        self.settings.setValue(f"params/{name}", json.dumps(dict(values)))

    def _restore_settings(self) -> None:
        s = self.settings
        self.backends.apply()
        log_y = s.value("log_y", "false") == "true"
        self.log_y_action.setChecked(log_y)
        if log_y:
            self.plot_panel.set_log_y(True)
        self.presentation = s.value("presentation", "false") == "true"
        self.presentation_action.setChecked(self.presentation)
        if self.presentation:
            self.set_presentation(True)
        data = _json(s.value("data", ""))
        custom = isinstance(data, dict) and data.get("spec") and not data.get("use_default",
                                                                              True)
        self.model.use_default_data = not custom
        self.data_panel.use_default.setChecked(not custom)
        name = s.value("experiment", "")
        idx = self.experiment_box.findData(name) if name else -1
        self.experiment_box.blockSignals(True)
        self.experiment_box.setCurrentIndex(max(idx, 0))
        self.experiment_box.blockSignals(False)
        exp = self.experiment_box.currentData()
        self.model.set_experiment(exp, self._saved_params(exp))
        if custom:
            self.data_panel.set_source(data)
        geometry, state = s.value("geometry"), s.value("state")
        if isinstance(geometry, QtCore.QByteArray):
            self.restoreGeometry(geometry)
        if isinstance(state, QtCore.QByteArray):
            self.restoreState(state)
        self.files.refresh_recent()

    def _save_settings(self) -> None:
        s = self.settings
        s.setValue("geometry", self.saveGeometry())
        s.setValue("state", self.saveState())
        s.setValue("experiment", self.experiment.name)
        source = self.model.loaded_source
        doc = source.to_dict() if source is not None else {"spec": "", "options": {}}
        s.setValue("data", json.dumps({**doc, "use_default": self.model.use_default_data}))
        if self.form is not None:
            self._remember_params(self.experiment.name, self.form.values())
        s.setValue("presentation", "true" if self.presentation else "false")
        s.setValue("log_y", "true" if self.plot_panel.log_y else "false")
        s.sync()

    def reset_layout(self) -> None:
        """Docks back to where they started, all visible."""
        self.restoreState(self._default_state)
        for dock in self._docks():
            dock.setVisible(True)
            dock.setFloating(False)

    # -- views of the model -------------------------------------------------------------
    def _explain(self, exp: Experiment) -> None:
        text = f"<h3>{html.escape(exp.title)}</h3><p>{html.escape(exp.description)}</p>"
        if self.model.about:
            text = (f"<h3>{html.escape(self.model.title)}</h3><p>"
                    f"{html.escape(self.model.about)}</p><hr>"
                    f"<p>{html.escape(exp.description)}</p>")
        self.explain.setHtml(text)

    def _state_changed(self, state: RunState) -> None:
        if state in (RunState.DONE, RunState.CANCELLED, RunState.FAILED):
            self.plot_panel.mark_dirty()  # no longer live: exact axes (PlotView.update)
            self.plot_panel.redraw(everything=False)

    def copy_results(self) -> None:
        """Selected result rows (all when none is selected) to the clipboard, as TSV."""
        rows = sorted({i.row() for i in self.results.selectedIndexes()}) or \
            list(range(self.results.rowCount()))
        lines = ["\t".join(self.results.item(r, c).text() if self.results.item(r, c) else ""
                           for c in range(2)) for r in rows]
        QtWidgets.QApplication.clipboard().setText("\n".join(lines))

    def set_presentation(self, on: bool) -> None:
        """Larger fonts, lines and symbols for projectors."""
        self.presentation = bool(on)
        font = QtWidgets.QApplication.font()
        font.setPointSizeF(13.0 if on else 9.0)
        for widget in (self.data_panel, self.exp_panel, self.results, self.explain):
            widget.setFont(font)
        self.plot_panel.set_scale(1.6 if on else 1.0)

    def log(self, message: str) -> None:
        self.log_view.appendPlainText(f"{time.strftime('%H:%M:%S')}  {message}")

    # -- files (sessions, presets, exports) ----------------------------------------------
    def save_session(self, path: str | Path) -> Path:
        return self.files.save_session(path)

    def open_session(self, path: str | Path) -> Session:
        """Apply a session file; raises SessionError (and changes nothing) if it is bad."""
        return self.files.open_session(path)

    def apply_session(self, session: Session) -> None:
        if session.playground is not None:  # checked before anything changes
            from kernel_lab.model.playground import PlaygroundModel

            PlaygroundModel(worker=Worker(lambda _job: None, inline=True)  # no fit
                            ).apply(session.playground)
        if session.spec is not None:  # not a Playground session alone
            self.remember_form()
            self.model.apply_session(session)
        if session.playground is not None:
            self.open_playground().model.apply(session.playground)

    def remember_form(self) -> None:
        """Keep the current experiment's form values in the settings (before a session
        or preset replaces them)."""
        if self.form is not None:
            self._remember_params(self.experiment.name, self.form.values())

    def open_preset(self, name: str) -> None:
        self.files.open_preset(name)

    def export_plot(self, path: str | Path, index: int | None = None) -> Path:
        return self.files.export_plot(path, index)

    def export_results(self, path: str | Path) -> Path:
        return self.files.export_results(path)

    def export_report(self, path: str | Path) -> Path:
        return self.files.export_report(path)

    def run_blocking(self, timeout: float = 300.0) -> RunResult | None:
        """Wait for the data, run, and wait for the end while processing events (for
        scripted use: screenshots, the self-test). The result, or None if the run failed,
        was cancelled or took longer than ``timeout`` seconds."""
        app = QtWidgets.QApplication.instance()
        wait = QtCore.QEventLoop.ProcessEventsFlag.WaitForMoreEvents  # the timers wake it
        deadline = time.monotonic() + timeout
        while self.model.loading and time.monotonic() < deadline:
            app.processEvents(wait)
        self.model.start_run()
        while self.running and time.monotonic() < deadline:
            app.processEvents(wait)
        return self.model.fresh_result

    def about(self) -> None:
        QtWidgets.QMessageBox.about(
            self, "About Kernel Lab",
            f"<b>Kernel Lab {__version__}</b><br>{html.escape(ABOUT)}")

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        self._save_settings()
        self.autosave.close()  # the last state, marked clean
        for worker in self.workers:  # first: a cancel at exit starts no fresh process
            worker.close()
        self.model.cancel_run()
        self.model.drop_pending_load()
        if getattr(self, "playground", None) is not None:
            self.playground.shutdown()
        self.runs.join(3.0)  # the worker process is stopped with its thread
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
    from kernel_lab.plotting.render import ensure_app

    app = ensure_app()
    from kernel_lab.engine.presets import playground_preset_names

    if preset in playground_preset_names():
        return playground_screenshot(path, preset, timeout)
    existing = top_level_widgets()
    settings = QtCore.QSettings(str(Path(path).with_suffix(".ini")),
                                QtCore.QSettings.Format.IniFormat)
    settings.clear()
    window = MainWindow(settings, autosave=False)
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
            tear_down(window, existing=existing)
            return 2
    ok = window.run_blocking(timeout) is not None
    window.plot_panel.redraw()
    app.processEvents()
    window.grab().save(str(path))
    if not ok:
        print(f"kernel-lab: the run did not finish: {window.status.text()}", file=sys.stderr)
    tear_down(window, existing=existing)  # closed and deleted before Python exits
    Path(settings.fileName()).unlink(missing_ok=True)
    return 0 if ok else 1


def playground_screenshot(path: str | Path, preset: str, timeout: float = 120.0) -> int:
    """Open the Playground with ``preset``, wait for its fit and save a PNG of it."""
    from kernel_lab.gui.playground import PlaygroundWindow

    app = QtWidgets.QApplication.instance()
    existing = top_level_widgets()
    window = PlaygroundWindow()
    window.resize(1300, 850)
    window.show()
    failed: list[str] = []
    window.model.failed.connect(failed.append)
    window.open_preset(preset)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not (
            window.worker.wait_idle(0.02)
            and (window.fits_drawn or failed or window.model.points.n == 0)):
        app.processEvents()
    for _ in range(5):
        app.processEvents()
    ok = (window.fits_drawn > 0 or window.model.points.n == 0) and not failed
    window.grab().save(str(path))
    if not ok:
        print(f"kernel-lab: the Playground fit did not finish: {window.readout.text()}",
              file=sys.stderr)
    tear_down(window, existing=existing)
    return 0 if ok else 1


def main() -> int:
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("Kernel Lab")
    app.setOrganizationName("KernelLab")
    app.setWindowIcon(app_icon())
    window = MainWindow()
    window.show()
    code = int(app.exec())
    tear_down(window)  # deleted here, not by PySide6's exit handler
    return code
