"""The Playground window: paint data, move a slider, see the fitted function at once.

A view over :class:`kernel_lab.model.playground.PlaygroundModel`: widgets send gestures
to the model, the model's fits (computed by the window's
:class:`~kernel_lab.engine.worker.Worker`, latest request wins) come back to the GUI
thread through :func:`~kernel_lab.engine.qt.gui_poster` and are drawn here. Nothing is
computed on the GUI thread. The
controls are built in :mod:`~kernel_lab.gui.playground.controls`, the view box that paints
in :mod:`~kernel_lab.gui.playground.canvas`, the function view is
:class:`~kernel_lab.plotting.function_view.FunctionView`.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.playground import SETS, STEPPED
from kernel_lab.engine.presets import load_preset, playground_preset_names
from kernel_lab.engine.qt import gui_poster
from kernel_lab.engine.worker import Ticket, Worker
from kernel_lab.gui import preload_for_threads
from kernel_lab.gui.files import export_worker
from kernel_lab.gui.forms import LogSlider
from kernel_lab.gui.playground.canvas import PaintBox, error_axis
from kernel_lab.gui.playground.controls import PlaygroundControls
from kernel_lab.gui.playground.words import ERROR_LABEL, METHOD_TEXT, SIZE_WORD, STEP_WORD, USES
from kernel_lab.model.export import describe_report
from kernel_lab.model.playground import Fit, FitEngine, PlaygroundModel, fit_worker
from kernel_lab.model.playground.export import export_request, playground_export_job
from kernel_lab.plotting.axes import log_axis
from kernel_lab.plotting.function_view import FunctionView, picture_painter


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None



#: Play's clock: a new frame is asked for at most this often (and only when the worker is
#: idle), so the frame rate is what a frame costs, up to a 60 Hz display's. The next frame
#: is asked for as soon as the last is drawn and this period has passed (the clock's own
#: ticks only catch a frame that finished between them).
PLAY_TICK_MS = 14
#: During Play the step plot's error curves are redrawn at most this often (seconds).
HISTORY_PERIOD_S = 0.25


class PlaygroundWindow(PlaygroundControls, QtWidgets.QMainWindow):
    """The Playground. ``model`` holds every value; this class draws and dispatches."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, *,
                 model: PlaygroundModel | None = None) -> None:
        super().__init__(parent)
        preload_for_threads()
        self.setWindowTitle("Kernel Lab — Playground")
        engine = model.engine if model is not None else FitEngine(quick=True)
        # the fits' messages reach the model on this thread (the poster is deleted with
        # the window: no answer outlives it)
        self.worker = fit_worker(engine, post=gui_poster(self), paint=picture_painter())
        self.workers = (self.worker,)  # the window's threads (tear_down waits)
        self._given_worker = model.worker if model is not None else None
        self.model = model or PlaygroundModel(worker=self.worker, engine=engine)
        self.model.worker = self.worker  # a given model computes off this thread too
        self._shut = False
        self.fits_drawn = 0
        self.drawn_serial = 0  # the request whose fit is on screen
        self.drawn_complete = False
        self.drawn_preview = False
        self._pending_history: tuple[Any, bool] = (None, False)
        self._history_due = 0.0
        self._sized = False  # points sized by leverage scores
        self._syncing = False
        self._build()
        self.model.fit_ready.connect(self.draw)
        self.model.failed.connect(self._failed)
        self.model.data_changed.connect(self.draw_points)
        self.model.params_changed.connect(self._params_changed)
        self.regenerate_timer = QtCore.QTimer(self)  # n / noise: once the slider rests
        self.regenerate_timer.setSingleShot(True)
        self.regenerate_timer.setInterval(200)
        self.regenerate_timer.timeout.connect(self._regenerate)
        self.play_timer = QtCore.QTimer(self)  # Play's clock; frame_timer: the next frame
        self.play_timer.setInterval(PLAY_TICK_MS)
        self._next_frame = 0.0  # time.monotonic() before which Play asks for no frame
        self.frame_timer = QtCore.QTimer(self, singleShot=True,
                                         timerType=QtCore.Qt.TimerType.PreciseTimer)
        self.frame_timer.timeout.connect(self._tick)
        self.play_timer.timeout.connect(self._tick)
        self.sync_controls()
        self.draw_points()
        self.model.refit()

    # -- layout -------------------------------------------------------------------------
    def _build(self) -> None:
        central = QtWidgets.QWidget()
        self.setCentralWidget(central)
        row = QtWidgets.QHBoxLayout(central)
        row.addWidget(self.build_controls())

        plots = QtWidgets.QVBoxLayout()
        self.box = PaintBox(self)
        self.plot = pg.PlotWidget(viewBox=self.box, background="w")
        self.view = FunctionView(self.plot)
        v = self.view  # its items, named as the window's tests and tools know them
        self.image, self.contour, self.compare_contour = v.image, v.contour, v.compare_contour
        self.truth_curve, self.fit_curve, self.compare_curve = \
            v.truth_curve, v.fit_curve, v.compare_curve
        self.point_items, self.landmark_scatter = v.point_items, v.landmark_scatter
        self._label_axes(self.plot, "x", "y")
        # room above the view: the top label of its fixed ±3 axis ("3") was cut in half
        # by the widget's edge
        self.plot.getPlotItem().setContentsMargins(0, 8, 0, 0)
        plots.addWidget(self.plot, 4)
        small = QtWidgets.QHBoxLayout()
        # the lab's axes: one form of label per axis (pyqtgraph's own wrote "1e+06"
        # beside "500000", and powers of ten as 10⁻² beside decimals)
        self.lam_plot = pg.PlotWidget(axisItems={"left": error_axis(),
                                                 "bottom": log_axis("bottom")},
                                      background="w", title="error against λ")
        self.lam_plot.setLogMode(True, False)  # a linear error axis: readable when small
        self._label_axes(self.lam_plot, "λ (log scale)", ERROR_LABEL["regression"])
        self.lam_train = self.lam_plot.plot(pen=pg.mkPen((31, 119, 180), width=2),
                                            name="train")
        self.lam_test = self.lam_plot.plot(pen=pg.mkPen((214, 39, 40), width=2), name="test")
        self.lam_line = pg.InfiniteLine(angle=90, pen=pg.mkPen("k", width=1))
        self.lam_plot.addItem(self.lam_line)
        self.step_plot = pg.PlotWidget(axisItems={"left": error_axis(),
                                                  "bottom": log_axis("bottom")},
                                       background="w",
                                       title="train (blue) / test (red) error by step")
        self.step_train = self.step_plot.plot(pen=pg.mkPen((31, 119, 180), width=2))
        self.step_test = self.step_plot.plot(pen=pg.mkPen((214, 39, 40), width=2))
        self._label_axes(self.step_plot, "step", ERROR_LABEL["regression"])
        self.freq_plot = pg.PlotWidget(axisItems={"left": log_axis("left"),
                                                  "bottom": log_axis("bottom")},
                                       background="w", title="learned frequencies (GFC)")
        self._label_axes(self.freq_plot, "ω₁ (rad per unit of x₁)", "ω₂ (rad per unit of x₂)")
        self.freq_scatter = pg.ScatterPlotItem(size=7, brush=pg.mkBrush(148, 103, 189))
        self.freq_plot.addItem(self.freq_scatter)
        for w in (self.lam_plot, self.step_plot, self.freq_plot):
            w.setMinimumHeight(150)
            small.addWidget(w)
            for side in ("left", "bottom"):  # values as they are, never "(x1e-06)"
                w.getPlotItem().getAxis(side).enableAutoSIPrefix(False)
        for w in (self.plot, self.lam_plot, self.step_plot, self.freq_plot):
            for side in ("left", "bottom"):
                # drawn again only when its range or size changes, else blitted: a slider
                # move or a Play frame repaints the plot under the axes, not the axes
                w.getPlotItem().getAxis(side).setCacheMode(
                    QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache)
        plots.addLayout(small, 1)
        self.readout = QtWidgets.QLabel("")
        self.readout.setTextInteractionFlags(
            QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        plots.addWidget(self.readout)
        row.addLayout(plots, 1)
        tools = self.menuBar().addMenu("&Playground")
        presets = tools.addMenu("&Presets")
        for name in playground_preset_names():
            presets.addAction(name, lambda n=name: self._guard(self.open_preset, n))
        export = QtGui.QAction("&Export view as PNG or SVG…", self)
        export.setShortcut(QtGui.QKeySequence("Ctrl+E"))
        export.triggered.connect(self.export_dialog)
        tools.addAction(export)
        self.export_model_action = QtGui.QAction("Export &model…", self)
        self.export_model_action.setShortcut(QtGui.QKeySequence("Ctrl+Shift+M"))
        self.export_model_action.setStatusTip("Save the current fit as a model file "
                                              "(.skops) to use in scripts")
        self.export_model_action.triggered.connect(self.export_model_dialog)
        tools.addAction(self.export_model_action)
        #: Exports the current fit (made on first use; one of the window's workers).
        self.exporter: Worker | None = None

    @staticmethod
    def _label_axes(plot: pg.PlotWidget, bottom: str, left: str) -> None:
        """Axis titles (set only when they change: a label change relays the plot out)."""
        item = plot.getPlotItem()
        for side, text in (("bottom", bottom), ("left", left)):
            if item.getAxis(side).labelText != text:
                item.setLabel(side, text)

    # -- gestures -------------------------------------------------------------------------
    def paint(self, points: list[tuple[float, float]], other_class: bool = False,
              continues: bool = False) -> None:
        """Add painted points (one undo step, or part of the drag before with
        ``continues``): 1-D at (x, y); 2-D of the selected class."""
        xy = np.array(points, dtype=np.float64).reshape(-1, 2)
        if self.model.dim == 1:
            self._guard(self.model.add_points, xy[:, :1], xy[:, 1], continues=continues)
            return
        label = -1.0 if self.paint_class.isChecked() != other_class else 1.0
        if self.model.task == "regression":
            label = 0.0
        self._guard(self.model.add_points, xy, label, continues=continues)

    def remove_nearest(self, x: np.ndarray) -> None:
        """Remove the point nearest to ``x`` (a right-click on the canvas)."""
        self.model.remove_nearest(x)

    def _guard(self, action: Any, *args: Any, **kwargs: Any) -> None:
        """Run a model gesture; a refusal is said in the read-out (never raised into Qt)."""
        try:
            action(*args, **kwargs)
        except KernelLabError as exc:
            self.readout.setText(f"⚠ {exc}")
            self.sync_controls()

    def _apply(self, **values: Any) -> None:
        """Send parameters to the model; a refused value is said in the read-out."""
        self._guard(self.model.set_params, **values)

    def _set(self, **values: Any) -> None:
        if not self._syncing:
            self._apply(**values)

    def _log_value_moved(self, widget: LogSlider) -> None:
        """σ, λ or ν moved or typed: send that value only (a half-typed one waits)."""
        if self._syncing:
            return
        try:
            v = float(widget.text())
        except ValueError:
            return
        if v > 0 and math.isfinite(v):
            self._apply(**{widget.spec.name: v})

    def _n_or_noise_moved(self) -> None:
        if not self._syncing:
            self.regenerate_timer.start()  # regenerated once the slider rests

    def _regenerate(self) -> None:
        if self.n_slider.isSliderDown() or self.noise_slider.isSliderDown():
            return  # still dragging: regenerated on release
        n, noise = self.n_slider.value(), self.noise_slider.value() / 100
        if self.model.dataset in SETS and (n, noise) != (self.model.n, self.model.noise):
            self._guard(self.model.set_dataset, self.model.dataset, n=n, noise=noise)

    def _reset(self) -> None:
        self.play_button.setChecked(False)
        self.model.reset_steps()

    def play(self, on: bool) -> None:
        self.play_button.setText("Pause" if on else "Play")
        if on and self.model.params["method"] not in STEPPED:
            self._apply(method=next(iter(STEPPED)))
        (self.play_timer.start if on else self.play_timer.stop)()
        if not on:
            self.frame_timer.stop()
            self._draw_history()

    def _tick(self) -> None:
        m = self.model
        # one frame per finished fit (never a queue), at most one per PLAY_TICK_MS (less
        # the timers' millisecond)
        now = time.monotonic()
        if now < self._next_frame - 1e-3 or not self.worker.wait_idle(0):
            return
        if not m.can_step():
            self.play_button.setChecked(False)  # nothing (more) to step: Play stops
            return
        self._next_frame = now + PLAY_TICK_MS / 1e3
        m.step(max(1, STEPPED[m.params["method"]] * self.speed.value()))

    def open_preset(self, name: str) -> None:
        preset = load_preset(name)
        if preset.playground is None:
            raise KernelLabError(f"preset {name!r} is not a Playground preset")
        self.model.apply(preset.playground, points=False)
        self.setWindowTitle(f"Kernel Lab — Playground — {preset.title}")
        self.about.setText(f"<b>{preset.title}</b><br>{preset.about}")

    def export_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Export the Playground view", "playground.png", "PNG (*.png);;SVG (*.svg)")
        if path:
            self.export(path)

    def export(self, path: str) -> None:
        from pyqtgraph.exporters import ImageExporter, SVGExporter

        from kernel_lab.plotting.view import uncached

        exporter = SVGExporter if path.lower().endswith(".svg") else ImageExporter
        with uncached(self.plot.scene()):  # the cached points and axes painted afresh
            exporter(self.plot.plotItem).export(path)

    def export_model_dialog(self) -> None:
        """Ask where, then save the current fit as a model file."""
        settings = getattr(self.parent(), "settings", None)
        folder = settings.value("last_dir", None) if settings is not None else None
        start = Path(folder or Path.home()) / \
            f"playground-{self.model.params['method']}-model.skops"
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Export the Playground's model", str(start),
            "Kernel Lab models (*.skops);;All files (*)")
        if path:
            if settings is not None:
                settings.setValue("last_dir", str(Path(path).parent))
            self.export_model(path)

    def export_model(self, path: str | Path) -> Ticket | None:
        """Save the current fit to ``path`` on the export thread (refitted there: the
        method's estimator on the Playground's training points); the answer in the
        status bar, or a message box."""
        if self.exporter is None:  # first use: its thread
            try:
                self.exporter = export_worker(self, playground_export_job,
                                              "playground-export",
                                              "kernel_lab.engine.model_file")
            except ImportError as exc:
                self._export_refused(f"This Kernel Lab cannot save models: {exc}")
                return None
        request = export_request(self.model, path)
        self.statusBar().showMessage(f"Exporting the model to {request.path.name} …")
        return self.exporter.submit(request, receive=self._export_message)

    def _export_message(self, kind: str, *payload: Any) -> None:
        if kind == "finished":  # the notes (what the inputs are) in the tooltip
            report = payload[0]
            bar = self.statusBar()
            bar.showMessage(describe_report(replace(report, notes=[])) + " (more: hover)")
            bar.setToolTip(describe_report(report))
        elif kind == "failed":
            self._export_refused(f"The model was not exported: {payload[0]}")

    def _export_refused(self, message: str) -> None:
        self.statusBar().showMessage("The model was not exported (see the message).")
        QtWidgets.QMessageBox.warning(self, "Cannot export the model", message)

    # -- drawing --------------------------------------------------------------------------
    def sync_controls(self) -> None:
        m, p = self.model, self.model.params
        self._syncing = True
        try:
            self.dataset_box.setCurrentIndex(self.dataset_box.findData(m.dataset))
            # an n / noise move still in the hand or waiting for the slider to rest keeps
            # its value: the data are regenerated from it, not from the model's old one
            if not (self.regenerate_timer.isActive() or self.n_slider.isSliderDown()
                    or self.noise_slider.isSliderDown()):
                self.n_slider.setValue(m.n)
                self.noise_slider.setValue(round(m.noise * 100))
            self.method_box.setCurrentIndex(self.method_box.findData(p["method"]))
            self.compare_box.setCurrentIndex(max(0, self.compare_box.findData(p["compare"])))
            self.kernel_box.setCurrentText(p["kernel"])
            for key, widget in (("sigma", self.sigma), ("lam", self.lam), ("nu", self.nu)):
                if _number(widget.text()) != p[key]:  # the exact value, not a rounding
                    widget.set_text(repr(float(p[key])))
            self.s_slider.setValue(int(p["s"]))
            self.sampler_box.setCurrentText(p["sampler"])
            self.leverage.setChecked(bool(p["leverage"]))
            self.D_slider.setValue(int(p["D"]))
            self.orthogonal.setChecked(bool(p["orthogonal"]))
            # scores are drawn for the active method only
            used = USES[p["method"]] | (USES.get(p["compare"], set()) - {"leverage"})
            for key, widgets in (("kernel", (self.kernel_box,)), ("sigma", (self.sigma,)),
                                 ("lam", (self.lam,)), ("nu", (self.nu,)),
                                 ("s", (self.s_slider, self.slider_values["s"])),
                                 ("sampler", (self.sampler_box,)),
                                 ("leverage", (self.leverage,)),
                                 ("D", (self.D_slider, self.slider_values["D"])),
                                 ("orthogonal", (self.orthogonal,)),
                                 ("steps", (*self.step_buttons, self.speed))):
                for widget in widgets:
                    widget.setEnabled(key in used)
        finally:
            self._syncing = False

    def draw_points(self) -> None:
        m = self.model
        pts = m.points
        self.sync_controls()
        self.paint_class.setVisible(m.task == "classification")  # classes to paint
        self._label_axes(self.plot, *(("x", "y") if m.dim == 1 else ("x₁", "x₂")))
        self.view.draw_points(pts.X, pts.y, pts.test, m.dim, m.task, m.truth)
        if pts.n == 0:
            self.readout.setText("Paint points: click (drag to spray), right-click removes.")

    def draw(self, fit: Fit) -> None:
        m = self.model
        r = fit.primary
        train = ~m.points.test
        Xtr, ytr = m.points.X[train], m.points.y[train]
        where = np.column_stack([Xtr[:, 0], ytr]) if fit.dim == 1 else Xtr
        self.view.draw_fit(
            fit.dim, fit.task, fit.grid, r.grid,
            compare=fit.compare.grid if fit.compare is not None else None,
            contour=r.contour,
            compare_contour=fit.compare.contour if fit.compare is not None else None,
            landmarks=where[r.landmarks] if r.landmarks is not None else None,
            picture=fit.picture)
        # leverage scores
        for (cls, is_test), item in self.point_items.items():
            rows = self.view.groups.get((cls, is_test), np.zeros(0, dtype=int))
            if r.scores is not None and not is_test and len(rows):
                size = 5 + 25 * np.sqrt(r.scores / max(float(r.scores.max()), 1e-12))
                item.setSize(size[rows])
                self._sized = True
            elif self._sized and len(rows):
                item.setSize(8)
        if r.scores is None:
            self._sized = False
        # small plots
        curve = r.curve if r.curve is not None else (
            fit.compare.curve if fit.compare is not None else None)
        exact = {"krr", "ckrr"} & {r.method, fit.compare.method if fit.compare else ""}
        self.lam_plot.setVisible(bool(exact))  # a quick answer keeps the last curve
        error_label = ERROR_LABEL[fit.task]
        self._label_axes(self.lam_plot, "λ (log scale)", error_label)
        if curve is not None:
            self.lam_line.setVisible(True)
            self.lam_train.setData(curve["lam"], curve["train"])
            self.lam_test.setData(curve["lam"], curve["test"])
            self.lam_line.setValue(math.log10(float(m.params["lam"])))
            drawn = r if r.curve is not None else fit.compare
            # the method whose curve this is: the comparison's, under another method
            title = METHOD_TEXT[drawn.method] + (
                "" if drawn is r else " (the comparison)") + \
                ": train (blue) / test (red) error against λ"
            if self.lam_plot.getPlotItem().titleLabel.text != title:
                self.lam_plot.setTitle(title)
        elif exact:
            self.lam_line.setValue(math.log10(float(m.params["lam"])))
        # the step and frequency plots only where they say something
        self.step_plot.setVisible(r.method in STEPPED)
        self.freq_plot.setVisible("frequencies" in r.extra)
        # a mean squared error on a log axis: the first steps' errors, many times the
        # later ones, would flatten everything after them on a linear one (a
        # misclassified fraction reaches 0: linear)
        log_error = fit.task == "regression"
        if r.method in STEPPED:
            if self.step_plot.getPlotItem().ctrl.logYCheck.isChecked() != log_error:
                self.step_plot.setLogMode(False, log_error)
            self._label_axes(self.step_plot, STEP_WORD[r.method], error_label)
        if "frequencies" in r.extra:
            self._label_axes(self.freq_plot, *(
                ("ω (rad per unit of x)", "") if fit.dim == 1
                else ("ω₁ (rad per unit of x₁)", "ω₂ (rad per unit of x₂)")))
            self.freq_plot.getPlotItem().showAxis("left", fit.dim > 1)
        self._pending_history = (r.extra.get("history"), log_error)
        if not self.play_timer.isActive() or time.monotonic() >= self._history_due:
            self._draw_history()
        freqs = r.extra.get("frequencies")
        if freqs is not None and len(freqs):
            self.freq_scatter.setData(pos=freqs[:, :2] if freqs.shape[1] > 1
                                      else np.column_stack([freqs[:, 0], np.zeros(len(freqs))]))
        else:
            self.freq_scatter.setData([])
        self.readout.setText(self._readout(fit))
        self.fits_drawn += 1
        self.drawn_serial = fit.serial
        if self.play_timer.isActive():  # the next frame as soon as Play's clock allows
            self.frame_timer.start(round(max(0.0, self._next_frame - time.monotonic()) * 1e3))
        # whether this is the complete answer (no follow-up to come for this request)
        self.drawn_complete = not any(x is not None and x.extra.get("followup")
                                      for x in (fit.primary, fit.compare))
        # whether a preview (not the exact fit) is on screen
        self.drawn_preview = any(x is not None and "preview" in x.extra
                                 for x in (fit.primary, fit.compare))

    def _draw_history(self) -> None:
        """The step plot's error curves of the last fit drawn. During Play at most every
        :data:`HISTORY_PERIOD_S` (a new point rescales its axes: redrawn at every frame
        it cost the GUI thread as much as the function view); Pause draws the last."""
        history, log_error = self._pending_history
        self._history_due = time.monotonic() + HISTORY_PERIOD_S
        if history is not None and len(history):
            errors = np.maximum(history[:, 1:], 1e-12) if log_error else history[:, 1:]
            self.step_train.setData(history[:, 0], errors[:, 0])
            self.step_test.setData(history[:, 0], errors[:, 1])
        else:
            self.step_train.setData([], [])
            self.step_test.setData([], [])

    def _failed(self, message: str) -> None:
        self.readout.setText(f"⚠ {message}")

    def _params_changed(self, _changed: dict[str, Any]) -> None:
        self.sync_controls()

    def _readout(self, fit: Fit) -> str:
        m, r = self.model, fit.primary
        err = "misclassified" if fit.task == "classification" else "MSE"
        what = METHOD_TEXT[r.method]
        if "preview" in r.extra:  # never shown as exact: the errors are the preview's
            what += f" — preview: {r.extra['preview']} (the exact fit follows)"
        parts = [what, f"train {err} {r.train_error:.3g}",
                 f"test {err} {r.test_error:.3g}"]
        if r.dof is not None:
            parts.append(f"degrees of freedom {r.dof:.1f}")
        if "iterations" in r.extra:
            parts.append(f"iteration {r.extra['iterations']}")
        if "features" in r.extra:
            parts.append(f"{r.extra['features']} features"
                         + (" (done)" if r.extra.get("done") else ""))
        elif r.n_features is not None:
            parts.append(f"{r.n_features} {SIZE_WORD.get(r.method, 'features')}")
        parts.append(f"fit {1000 * r.seconds:.1f} ms")
        if fit.compare is not None and "preview" in fit.compare.extra:
            parts.append(f"comparison: preview, {fit.compare.extra['preview']}")
        if m.note:
            parts.append(m.note)
        return " · ".join(parts)

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        self.play_button.setChecked(False)
        if self.parent() is not None:  # opened from the main window: keep the work, hide
            event.ignore()
            self.hide()
            return
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        """Stop the worker and drop answers still in flight (the window is going away:
        closed on its own, or with the main window that owns it)."""
        if self._shut:
            return
        self._shut = True
        self.hide()
        self.play_timer.stop()
        self.frame_timer.stop()
        self.regenerate_timer.stop()
        self.worker.close()  # nothing it computes is delivered any more
        self.worker.join(2.0)
        if self.exporter is not None:  # an export in progress finishes unreported
            self.exporter.close()
            self.exporter.join(2.0)
        if self.model.worker is self.worker:  # the model computes by itself from now on
            self.model.worker = self._given_worker or \
                fit_worker(self.model.engine, inline=True)
        for event, slot in ((self.model.fit_ready, self.draw),
                            (self.model.data_changed, self.draw_points),
                            (self.model.failed, self._failed),
                            (self.model.params_changed, self._params_changed)):
            event.disconnect(slot)


def open_playground(parent: QtWidgets.QWidget | None = None,
                    preset: str | None = None) -> PlaygroundWindow:
    window = PlaygroundWindow(parent)
    window.resize(1300, 850)
    if preset:
        try:
            window.open_preset(preset)
        except KernelLabError as exc:
            window.readout.setText(f"⚠ {exc}")
    window.show()
    return window
