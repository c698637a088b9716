"""A first Kernel Lab window: choose an experiment and data, edit the parameters in a
form generated from the experiment's declarations, run it in the background and watch
its curves arrive.

Only draws and dispatches; the run happens in :class:`kernel_lab.engine.qt.RunWorker`.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from kernel_lab import __version__
from kernel_lab.core.params import ParamSpec
from kernel_lab.engine.qt import RunWorker
from kernel_lab.experiments import PartialResult, get_experiment, list_experiments
from kernel_lab.gui.render import PlotView


class ParamForm(QtWidgets.QWidget):
    """Widgets built from parameter specs; hides those whose ``when`` does not hold."""

    changed = QtCore.Signal()

    def __init__(self, specs: tuple[ParamSpec, ...], parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.specs = specs
        self.widgets: dict[str, QtWidgets.QWidget] = {}
        self.form = QtWidgets.QFormLayout(self)
        for spec in specs:
            w = self._make(spec)
            w.setToolTip(spec.help)
            self.widgets[spec.name] = w
            self.form.addRow(spec.title + (f" [{spec.unit}]" if spec.unit else ""), w)
        self._update_visibility()

    def _make(self, spec: ParamSpec) -> QtWidgets.QWidget:
        if spec.kind == "choice":
            w = QtWidgets.QComboBox()
            w.addItems(list(spec.choices))
            w.setCurrentText(str(spec.default))
            w.currentTextChanged.connect(self._on_change)
        elif spec.kind == "choices":
            w = QtWidgets.QWidget()
            row = QtWidgets.QGridLayout(w)
            row.setContentsMargins(0, 0, 0, 0)
            w.boxes = []
            for i, choice in enumerate(spec.choices):
                box = QtWidgets.QCheckBox(choice)
                box.setChecked(choice in (spec.default or []))
                box.toggled.connect(self._on_change)
                row.addWidget(box, i // 2, i % 2)
                w.boxes.append(box)
        elif spec.kind == "bool":
            w = QtWidgets.QCheckBox()
            w.setChecked(bool(spec.default))
            w.toggled.connect(self._on_change)
        elif spec.kind == "int":
            w = QtWidgets.QSpinBox()
            low = int(max(spec.low if spec.low is not None else -2**31 + 1, -2**31 + 1))
            if spec.allow_auto:
                low -= 1  # one step below the range stands for "auto"
                w.setSpecialValueText("auto")
            w.setRange(low, int(min(spec.high if spec.high is not None else 2**31 - 1,
                                    2**31 - 1)))
            w.setValue(low if spec.default is None else int(spec.default))
            w.valueChanged.connect(self._on_change)
        else:
            w = QtWidgets.QLineEdit("auto" if spec.default is None else
                                    (f"{spec.default:g}" if isinstance(spec.default, float)
                                     else str(spec.default)))
            if spec.allow_auto:
                w.setPlaceholderText("auto")
            w.textChanged.connect(self._on_change)
        return w

    def _on_change(self, *args: Any) -> None:
        self._update_visibility()
        self.changed.emit()

    def _update_visibility(self) -> None:
        values = {name: self._raw(name) for name in self.widgets}
        for spec in self.specs:
            visible = all(
                any(x in v for x in values.get(k)) if isinstance(values.get(k), list)
                else str(values.get(k)) in v
                for k, v in spec.when.items())
            self.form.setRowVisible(self.widgets[spec.name], visible)

    def _raw(self, name: str) -> Any:
        w = self.widgets[name]
        if isinstance(w, QtWidgets.QComboBox):
            return w.currentText()
        if isinstance(w, QtWidgets.QCheckBox):
            return w.isChecked()
        if isinstance(w, QtWidgets.QSpinBox):
            if w.specialValueText() and w.value() == w.minimum():
                return "auto"
            return w.value()
        if hasattr(w, "boxes"):
            return [b.text() for b in w.boxes if b.isChecked()]
        return w.text().strip() or "auto"

    def values(self) -> dict[str, Any]:
        """Raw values (strings for text fields); the experiment checks them."""
        return {name: self._raw(name) for name in self.widgets}


class MainWindow(QtWidgets.QMainWindow):
    """Experiment and data choice, a generated form, Run/Cancel, progress and live plots."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle(f"Kernel Lab {__version__}")
        self.resize(1200, 760)
        self._run_id = 0
        self._thread: QtCore.QThread | None = None
        self._worker: RunWorker | None = None
        self._table: dict[str, np.ndarray] = {}
        self._dirty = False

        pg.setConfigOptions(antialias=True, background="w", foreground="k")
        left = QtWidgets.QWidget()
        col = QtWidgets.QVBoxLayout(left)
        self.experiment_box = QtWidgets.QComboBox()
        for cls in list_experiments():
            self.experiment_box.addItem(f"{cls.name} — {cls.title}", cls.name)
        col.addWidget(QtWidgets.QLabel("<b>Experiment</b>"))
        col.addWidget(self.experiment_box)
        col.addWidget(QtWidgets.QLabel("<b>Data</b> (file, example or generator)"))
        self.data_edit = QtWidgets.QLineEdit()
        col.addWidget(self.data_edit)
        self.form_holder = QtWidgets.QScrollArea()
        self.form_holder.setWidgetResizable(True)
        col.addWidget(self.form_holder, 1)
        buttons = QtWidgets.QHBoxLayout()
        self.run_button = QtWidgets.QPushButton("Run (Ctrl+R)")
        self.cancel_button = QtWidgets.QPushButton("Cancel (Esc)")
        self.cancel_button.setEnabled(False)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        col.addLayout(buttons)
        self.progress = QtWidgets.QProgressBar()
        self.progress.setRange(0, 1000)
        col.addWidget(self.progress)
        self.status = QtWidgets.QLabel("Ready.")
        self.status.setWordWrap(True)
        col.addWidget(self.status)
        self.results = QtWidgets.QTableWidget(0, 2)
        self.results.setHorizontalHeaderLabels(["result", "value"])
        self.results.horizontalHeader().setStretchLastSection(True)
        self.results.verticalHeader().setVisible(False)
        self.results.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        col.addWidget(self.results, 1)

        self.plots = pg.GraphicsLayoutWidget()
        self.explain = QtWidgets.QTextBrowser()
        right = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        right.addWidget(self.plots)
        right.addWidget(self.explain)
        right.setSizes([560, 160])
        split = QtWidgets.QSplitter()
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([330, 870])
        self.setCentralWidget(split)

        self.run_button.clicked.connect(self.start_run)
        self.cancel_button.clicked.connect(self.cancel_run)
        QtGui.QShortcut(QtGui.QKeySequence("Ctrl+R"), self, activated=self.start_run)
        QtGui.QShortcut(QtGui.QKeySequence("Esc"), self, activated=self.cancel_run)
        self.experiment_box.currentIndexChanged.connect(self._experiment_changed)
        self._timer = QtCore.QTimer(self, interval=80, timeout=self._redraw)
        self._timer.start()
        self._experiment_changed()

    # -- experiment and form -------------------------------------------------------
    def _experiment_changed(self) -> None:
        exp = get_experiment(self.experiment_box.currentData())
        self.experiment = exp
        self.form = ParamForm(exp.param_specs())
        self.form_holder.setWidget(self.form)
        self.data_edit.setText(exp.default_data)
        self.explain.setPlainText(f"{exp.title}\n\n{exp.description}")
        self._table = {}
        self._build_plots()

    def _build_plots(self) -> None:
        self.plots.clear()
        self.plot_views = [PlotView(self.plots.ci, row, spec)
                           for row, spec in enumerate(self.experiment.plots)]

    # -- running -------------------------------------------------------------------
    def start_run(self) -> None:
        """Start a run with the form's values; a run in progress is cancelled first."""
        self.cancel_run()
        self._run_id += 1
        worker = RunWorker(self._run_id, self.experiment.name, self.form.values(),
                           self.data_edit.text().strip())
        thread = QtCore.QThread(self)
        worker.moveToThread(thread)
        thread.started.connect(worker.run)
        worker.progressed.connect(self._on_progress)
        worker.partial_arrived.connect(self._on_partial)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        worker.cancelled.connect(self._on_cancelled)
        for signal in (worker.finished, worker.failed, worker.cancelled):
            signal.connect(thread.quit)
        thread.finished.connect(worker.deleteLater)
        thread.finished.connect(thread.deleteLater)
        self._thread, self._worker = thread, worker
        self._table = {}
        self._build_plots()  # a new run may have other curves (e.g. other kernels)
        self.results.setRowCount(0)
        self._dirty = True
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(True)
        self.status.setText("Running…")
        thread.start()

    def cancel_run(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None
            self.cancel_button.setEnabled(False)
            self.status.setText("Cancelled.")

    def _current(self, run_id: int) -> bool:
        return run_id == self._run_id and self._worker is not None

    @QtCore.Slot(int, float, str)
    def _on_progress(self, run_id: int, fraction: float, message: str) -> None:
        if self._current(run_id):
            self.progress.setValue(int(1000 * fraction))
            self.status.setText(message)

    @QtCore.Slot(int, object)
    def _on_partial(self, run_id: int, partial: PartialResult) -> None:
        if self._current(run_id) and partial.table is not None:
            self._table = {k: np.asarray(v, dtype=float) for k, v in partial.table.items()}
            self._dirty = True
        if self._current(run_id) and partial.summaries is not None:
            self._show_summaries(partial.summaries)

    def _show_summaries(self, summaries: dict[str, Any]) -> None:
        self.results.setRowCount(len(summaries))
        for row, (key, value) in enumerate(summaries.items()):
            text = f"{value:.6g}" if isinstance(value, float) else str(value)
            self.results.setItem(row, 0, QtWidgets.QTableWidgetItem(key))
            self.results.setItem(row, 1, QtWidgets.QTableWidgetItem(text))
        self.results.resizeColumnToContents(0)

    @QtCore.Slot(int, object)
    def _on_finished(self, run_id: int, result: Any) -> None:
        if not self._current(run_id):
            return
        self._table = {k: np.asarray(v, dtype=float) for k, v in result.table.items()}
        self._dirty = True
        self._redraw()
        self._worker = None
        self.cancel_button.setEnabled(False)
        self.status.setText(f"Done in {result.timings['total_s']:.2f} s.")
        self._show_summaries(result.summaries)
        self.progress.setValue(1000)
        self.last_result = result

    @QtCore.Slot(int, str, bool)
    def _on_failed(self, run_id: int, message: str, user_error: bool) -> None:
        if not self._current(run_id):
            return
        self._worker = None
        self.cancel_button.setEnabled(False)
        self.status.setText(("Cannot run: " if user_error else "The run failed: ") + message)

    @QtCore.Slot(int)
    def _on_cancelled(self, run_id: int) -> None:
        pass  # the window already said so when Cancel was pressed

    def _redraw(self) -> None:
        """Timer slot: redraw the plots when new results arrived since the last tick."""
        if not self._dirty:
            return
        self._dirty = False
        for view in self.plot_views:
            view.update(self._table)

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        self.cancel_run()
        if self._thread is not None:
            try:
                self._thread.quit()
                self._thread.wait(2000)
            except RuntimeError:  # already deleted
                pass
        super().closeEvent(event)


def main() -> int:
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("Kernel Lab")
    window = MainWindow()
    window.show()
    return int(app.exec())


