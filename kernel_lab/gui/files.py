"""The window's File and Presets menus: sessions (open, save, recent), presets, and
exports of the plot, the results, an HTML report and the run's model.

A session chosen in the menus is read, parsed and checked on a worker thread
(:func:`read_session`) and applied on the GUI thread when it is ready: a session of tens
of megabytes takes a second or two to parse, and the window stays live meanwhile. A
model is exported on a worker thread too (:class:`~kernel_lab.model.export.ModelExport`:
it refits the run's best models), with a progress dialog that Esc or its button
cancels."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from kernel_lab.core.errors import KernelLabError
from kernel_lab.engine.output import write_curves_csv, write_result_json
from kernel_lab.engine.presets import load_preset, playground_preset_names, preset_names
from kernel_lab.engine.qt import gui_poster
from kernel_lab.engine.session import Session, load_session, read_session_apart, save_session
from kernel_lab.engine.worker import Job, Ticket, Worker
from kernel_lab.model.export import ModelExport, describe_report, export_job

MAX_RECENT = 8
SESSION_FILTER = "Kernel Lab sessions (*.json);;All files (*)"
MODEL_FILTER = "Kernel Lab models (*.skops);;All files (*)"
#: Export model's shortcut (Ctrl+E exports the plot; the Playground's is the same).
EXPORT_MODEL_KEY = "Ctrl+Shift+M"


#: What every export imports (skops.io takes about half a second: once, on the GUI thread).
EXPORT_MODULES = ("kernel_lab.engine.model_file", "skops.io", "sklearn.pipeline")


def export_worker(window: Any, compute: Callable[[Job], None], name: str, module: str
                  ) -> Worker:
    """A worker thread of ``window`` for an export (one of its workers from now on:
    closed and joined with them), made after ``module`` and :data:`EXPORT_MODULES`, which
    the export needs, are imported here on the GUI thread (see
    :func:`kernel_lab.gui.preload_for_threads`). Raises ImportError when one is missing."""
    import importlib

    for needed in (module, *EXPORT_MODULES):
        importlib.import_module(needed)
    worker = Worker(compute, name=name, post=gui_poster(window))
    window.workers = (*window.workers, worker)
    return worker


def read_session(job: Job) -> None:
    """Read the session file ``job.request`` (the compute function of the window's
    session reader): ``finished(Session)``, or ``failed(message, is_user_error)``; a
    large file in a process of its own (:func:`read_session_apart`)."""
    session = read_session_apart(job.request, job.superseded)
    if session is not None:
        job.emit("finished", session)


class FileActions:
    """Files of a :class:`~kernel_lab.gui.app.MainWindow` (its model, settings, plots)."""

    def __init__(self, window: Any) -> None:
        self.window = window
        self.model = window.model
        self.settings: QtCore.QSettings = window.settings
        #: Reads the sessions opened from the menus (made on first use; one of the
        #: window's workers from then on, closed and joined with them).
        self.reader: Worker | None = None
        #: The export of the shown run's model (its worker thread made on first use).
        self.model_export = ModelExport(self.model)
        self.export_progress: QtWidgets.QProgressDialog | None = None
        self._exporting = ""  # the dialog's first line

    def build_menus(self, bar: QtWidgets.QMenuBar) -> None:
        w = self.window
        file = bar.addMenu("&File")
        w._action(file, "Open &data…", w.data_panel.browse_file, "Ctrl+O")
        w._action(file, "Open data &folder (Parquet, Zarr)…", w.data_panel.browse_folder,
                  "Ctrl+Alt+O")
        w._action(file, "&Open session…", self.open_session_dialog, "Ctrl+Shift+O")
        self.recent_menu = file.addMenu("Recent sessions")
        w._action(file, "&Save session…", self.save_session_dialog, "Ctrl+S")
        file.addSeparator()
        w._action(file, "Export &plot…", self.export_plot_dialog, "Ctrl+E")
        w._action(file, "Export &results…", self.export_results_dialog, "Ctrl+Shift+E")
        w._action(file, "Export report (&HTML)…", self.export_report_dialog, "Ctrl+Shift+H")
        self.export_model_action = w._action(file, "Export &model…",
                                             self.export_model_dialog, EXPORT_MODEL_KEY)
        self.export_model_action.setStatusTip("Save the model the run marks best (refitted "
                                              "as the run says) to a .skops file")
        self._model_available(self.model_export.available)
        self.model_export.available_changed.connect(self._model_available)
        self.model_export.started.connect(self._export_started)
        self.model_export.progressed.connect(self._export_progressed)
        self.model_export.finished.connect(self._export_finished)
        self.model_export.failed.connect(self._export_failed)
        self.model_export.cancelled.connect(self._export_cancelled)
        file.addSeparator()
        w._action(file, "&Quit", w.close, QtGui.QKeySequence.StandardKey.Quit)
        presets = bar.addMenu("&Presets")
        for name in preset_names():
            act = presets.addAction(load_preset(name).title)
            act.setData(name)
            act.triggered.connect(lambda checked=False, n=name: self.open_preset(n))
        playground = presets.addMenu("Play&ground")
        for name in playground_preset_names():
            act = playground.addAction(load_preset(name).title)
            act.setData(name)
            act.triggered.connect(lambda checked=False, n=name: w.open_playground(n))

    # -- sessions -----------------------------------------------------------------------
    def save_session(self, path: str | Path) -> Path:
        session = self.model.to_session()
        playground = getattr(self.window, "playground", None)
        if playground is not None:
            session.playground = playground.model.state()
        path = save_session(session, path)
        self._remember(path)
        return path

    def open_session(self, path: str | Path) -> Session:
        """Read and apply a session file on this thread (scripts, the screenshot); the
        menus read in the background (:meth:`read_in_background`)."""
        session = load_session(path)
        self._apply(session, Path(path))
        return session

    def _apply(self, session: Session, path: Path) -> None:
        self.window.apply_session(session)
        self._remember(path)
        for note in session.notes:
            self.window.log(f"note: {note}")

    def read_in_background(self, path: str | Path) -> Ticket:
        """Read, parse and check ``path`` on the reader thread, then apply it here (or
        say why not); the window stays live meanwhile. A newer request supersedes one
        still being read."""
        if self.reader is None:
            self.reader = Worker(read_session, name="session-reader",
                                 post=gui_poster(self.window))
            self.window.workers = (*self.window.workers, self.reader)
        path = Path(path)
        self.window.status.setText(f"Reading session {path.name} …")
        return self.reader.submit(
            str(path), receive=lambda kind, *payload: self._read(path, kind, *payload))

    def _read(self, path: Path, kind: str, *payload: Any) -> None:
        """A message of the reader about ``path``, on the GUI thread."""
        if kind == "failed":
            self._refused(str(payload[0]))
            return
        if kind != "finished":
            return
        try:
            with self.window.plot_panel.staged():  # its plots built one per pass
                self._apply(payload[0], path)
        except KernelLabError as exc:
            self._refused(str(exc))
            return
        notes = payload[0].notes
        self.window.status.setText(f"Session {path.name} opened; press Run (Ctrl+R)."
                                   + (f" {len(notes)} note(s) in the Log." if notes else ""))

    def _refused(self, message: str) -> None:
        self.window.status.setText("The session was not opened (see the message).")
        self.window.log(f"session not opened: {message}")
        QtWidgets.QMessageBox.warning(self.window, "Cannot open the session", message)

    def open_preset(self, name: str) -> None:
        """Load a teaching preset (press Run to see what it promises)."""
        session = load_preset(name)
        self.window.apply_session(session)
        self.window.status.setText(f"Preset “{session.title}” loaded: press Run (Ctrl+R).")

    def open_session_dialog(self) -> None:
        start = self.settings.value("last_dir", str(Path.home()))
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self.window, "Open session", start,
                                                        SESSION_FILTER)
        if path:
            self._open_and_report(path)

    def _open_and_report(self, path: str) -> None:
        self.read_in_background(path)

    def save_session_dialog(self) -> None:
        path = self._ask_path("Save session", SESSION_FILTER, ".json")
        if path:
            self._try(lambda: self.save_session(path), f"session saved to {path}")

    def _remember(self, path: Path) -> None:
        full = str(path.resolve())
        recent = [full] + [p for p in self._recent() if p != full]
        self.settings.setValue("recent", json.dumps(recent[:MAX_RECENT]))
        self.refresh_recent()

    def _recent(self) -> list[str]:
        try:
            value = json.loads(self.settings.value("recent", "[]") or "[]")
        except (TypeError, json.JSONDecodeError):
            return []
        return [p for p in value if isinstance(p, str)] if isinstance(value, list) else []

    def refresh_recent(self) -> None:
        self.recent_menu.clear()
        for p in self._recent():
            self.recent_menu.addAction(Path(p).name, lambda p=p: self._open_and_report(p))
        self.recent_menu.setEnabled(bool(self._recent()))

    # -- exports ------------------------------------------------------------------------
    def export_plot(self, path: str | Path, index: int | None = None) -> Path:
        """The plot of tab ``index`` (default: the current one) as PNG or SVG."""
        from kernel_lab.plotting.view import uncached

        panel = self.window.plot_panel
        panel.build_all()
        panel.redraw()
        i = panel.tabs.currentIndex() if index is None else index
        view = panel.views[i]
        with uncached(view.item.scene()):
            return self._export_view(view, Path(path))

    @staticmethod
    def _export_view(view: Any, path: Path) -> Path:
        """The plot as SVG or PNG, written whole (a temporary file renamed into place:
        Qt's own writers leave a file cut short on a full disk without a word)."""
        from pyqtgraph.exporters import ImageExporter

        from kernel_lab.engine.atomic import write_atomic
        from kernel_lab.plotting.render import export_png

        if path.suffix.lower() == ".svg":
            # Qt's own SVG painter: pyqtgraph's SVGExporter fails on some symbol paths
            from PySide6.QtSvg import QSvgGenerator

            scene = view.item.scene()
            rect = scene.sceneRect()
            data = QtCore.QByteArray()
            buffer = QtCore.QBuffer(data)
            buffer.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
            gen = QSvgGenerator()
            gen.setOutputDevice(buffer)
            gen.setSize(QtCore.QSize(int(rect.width()), int(rect.height())))
            gen.setViewBox(rect)
            gen.setTitle(view.spec.title)
            painter = QtGui.QPainter(gen)
            scene.render(painter)
            painter.end()
            buffer.close()
            return write_atomic(path, data.data())
        exporter = ImageExporter(view.item.scene())
        exporter.parameters()["width"] = 1600
        return export_png(exporter, path if path.suffix else path.with_suffix(".png"))

    def _result(self, what: str) -> Any:
        if self.model.result is None:
            raise KernelLabError(f"no finished run to {what} yet: run the experiment first")
        return self.model.result

    def export_results(self, path: str | Path) -> Path:
        """The last finished run as CSV (curves) or JSON (everything, as the CLI writes)."""
        result, path = self._result("export"), Path(path)
        if path.suffix.lower() == ".json":
            return write_result_json(result, path)
        return write_curves_csv(result, path)

    def export_report(self, path: str | Path) -> Path:
        """A self-contained HTML report of the last finished run."""
        from kernel_lab.plotting.report import write_report

        result = self._result("report")
        return write_report(result.to_dict(), path, title=self.model.title,
                            about=self.model.about)

    def _ask_path(self, title: str, filters: str, suffix: str,
                  start: str | Path | None = None) -> str:
        if start is None:
            default = f"{self.model.experiment.name}{suffix}"
            start = Path(self.settings.value("last_dir", str(Path.home()))) / default
        start = str(start)
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self.window, title, start, filters)
        if path:
            self.settings.setValue("last_dir", str(Path(path).parent))
        return path

    def _export_dialog(self, what: str, filters: str, suffix: str,
                       export: Callable[[str], Any], needs_result: bool = True) -> None:
        if needs_result and self.model.result is None:
            self.window.status.setText(f"No {what} yet: run the experiment first.")
            return
        path = self._ask_path(f"Export {what}", filters, suffix)
        if path:
            self._try(lambda: export(path), f"{what} written to {path}")

    def export_plot_dialog(self) -> None:
        self._export_dialog("plot", "PNG image (*.png);;SVG drawing (*.svg)", ".png",
                            self.export_plot, needs_result=False)

    def export_results_dialog(self) -> None:
        self._export_dialog("results", "CSV curves (*.csv);;JSON, everything (*.json)", ".csv",
                            self.export_results)

    def export_report_dialog(self) -> None:
        self._export_dialog("report", "HTML report (*.html)", ".html", self.export_report)

    # -- the model ----------------------------------------------------------------------
    def _model_available(self, available: bool) -> None:
        self.export_model_action.setEnabled(available)
        self.export_model_action.setToolTip(
            "Export the model of the finished run" if available
            else self.model_export.why_not())

    def export_model_dialog(self) -> None:
        """Ask where, then export the shown run's model in the background."""
        if not self.model_export.available:
            self.window.status.setText(self.model_export.why_not())
            return
        start = self.model_export.default_path(self.settings.value("last_dir", None))
        path = self._ask_path("Export model", MODEL_FILTER, ".skops", start)
        if path:
            self.export_model(path)

    def export_model(self, path: str | Path) -> Ticket | None:
        """Export the shown run's model to ``path`` on the export thread (progress in a
        dialog; the answer in the status line, the Log, or a message box)."""
        export = self.model_export
        if export.worker.inline:  # first use: its thread
            try:
                export.worker = export_worker(self.window, export_job, "model-export",
                                              "kernel_lab.engine.export")
            except ImportError as exc:
                self._export_failed(f"This Kernel Lab cannot export models: {exc}")
                return None
        return export.start(path)

    def cancel_export(self) -> bool:
        """Stop the model export in progress (False when none)."""
        return self.model_export.cancel()

    def _export_started(self, path: Path) -> None:
        if self.export_progress is None:
            dialog = QtWidgets.QProgressDialog(self.window)
            dialog.setWindowTitle("Export model")
            dialog.setRange(0, 1000)
            dialog.setMinimumDuration(400)  # a quick export shows no dialog at all
            dialog.setAutoClose(False)
            dialog.setAutoReset(False)
            dialog.canceled.connect(self.cancel_export)  # its button, or Esc
            self.export_progress = dialog
        dialog = self.export_progress
        self._exporting = f"Exporting the model to {path.name} …"
        dialog.setLabelText(self._exporting)
        dialog.setValue(0)
        self.window.status.setText(f"Exporting the model to {path.name} … (Esc cancels)")
        self.window.log(f"model export to {path} started")

    def _export_progressed(self, fraction: float, message: str) -> None:
        if self.export_progress is not None:
            self.export_progress.setValue(round(1000 * min(max(fraction, 0.0), 1.0)))
            if message:
                self.export_progress.setLabelText(f"{self._exporting}\n{message}")

    def _close_progress(self) -> None:
        if self.export_progress is not None:
            self.export_progress.reset()  # its timer stopped: not shown later
            self.export_progress.hide()

    def _export_finished(self, report: Any, text: str) -> None:
        self._close_progress()
        self.window.status.setText(text)
        self.window.log(f"model export: {describe_report(report)}")  # every note

    def _export_failed(self, message: str) -> None:
        self._close_progress()
        self.window.status.setText("The model was not exported (see the message).")
        self.window.log(f"model export: {message}")
        QtWidgets.QMessageBox.warning(self.window, "Cannot export the model", message)

    def _export_cancelled(self, text: str) -> None:
        self._close_progress()
        self.window.status.setText(text)
        self.window.log(f"model export: {text}")

    def _try(self, action: Callable[[], Any], done: str) -> bool:
        try:
            action()
        except (KernelLabError, OSError) as exc:
            QtWidgets.QMessageBox.warning(self.window, "Kernel Lab", str(exc))
            return False
        self.window.status.setText(done[0].upper() + done[1:] + ".")
        self.window.log(done)
        return True
