"""The Playground window: paint data, move a slider, see the fitted function at once.

A view over :class:`kernel_lab.model.playground.PlaygroundModel`: widgets send gestures
to the model, the model's fits (computed in its worker thread, latest request wins) come
back through a Qt signal and are drawn here. Nothing is computed on the GUI thread.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from kernel_lab.core import playground as core
from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.params import ParamSpec
from kernel_lab.gui import preload_for_threads
from kernel_lab.gui.forms import LogSlider
from kernel_lab.model.playground import (
    Fit,
    FitEngine,
    FitWorker,
    PlaygroundModel,
    load_playground_preset,
    playground_preset_names,
)
from kernel_lab.plotting.view import log_axis

CLASS_COLOURS = {1.0: (214, 39, 40), -1.0: (31, 119, 180)}
PRIMARY, SECOND, TRUTH = (0, 0, 0), (120, 120, 120), (44, 160, 44, 110)
SAMPLERS = ("recursive-rls", "uniform", "exact-rls", "rp-cholesky")
#: The error the small plots show, by task (the read-out's words, spelled out).
ERROR_LABEL = {"regression": "MSE", "classification": "misclassified"}


def error_axis() -> pg.AxisItem:
    """The error axis of the small plots: the lab's log axis (decades or 1, 2, 5 times a
    power of ten in plain decimals, always two labels at least: pyqtgraph's own labels
    every minor tick as ``7·10⁻²``, and in a small plot they run into each other), with
    no SI prefix: the errors are read as they are (not "MSE (x0.001)")."""
    axis = log_axis("left")
    axis.enableAutoSIPrefix(False)
    return axis


class _Relay(QtCore.QObject):
    """Carries the worker thread's answers to the GUI thread."""

    done = QtCore.Signal(object)
    error = QtCore.Signal(int, str)


class PaintBox(pg.ViewBox):
    """A view box where a click adds a point, a drag sprays points and a right-click
    removes the nearest one (the window decides what a point is)."""

    def __init__(self, owner: PlaygroundWindow) -> None:
        super().__init__(enableMenu=False)
        self.owner = owner
        self.setMouseEnabled(False, False)
        self._last: QtCore.QPointF | None = None

    def mouseClickEvent(self, ev: Any) -> None:
        p = self.mapSceneToView(ev.scenePos())
        shift = bool(ev.modifiers() & QtCore.Qt.KeyboardModifier.ShiftModifier)
        if ev.button() == QtCore.Qt.MouseButton.LeftButton:
            self.owner.paint([(p.x(), p.y())], other_class=shift)
            ev.accept()
        elif ev.button() == QtCore.Qt.MouseButton.RightButton:
            self.owner.model.remove_nearest(np.array([p.x(), p.y()]))
            ev.accept()

    def mouseDragEvent(self, ev: Any, axis: Any = None) -> None:
        if ev.button() != QtCore.Qt.MouseButton.LeftButton:
            ev.ignore()
            return
        ev.accept()
        p = self.mapSceneToView(ev.scenePos())
        if ev.isStart():
            self._last = p
        if self._last is not None and (ev.isStart() or math.hypot(
                p.x() - self._last.x(), p.y() - self._last.y()) > 0.15):
            rng = np.random.default_rng()
            spray = np.array([p.x(), p.y()]) + 0.08 * rng.standard_normal((3, 2))
            self.owner.paint([tuple(row) for row in spray],
                             other_class=bool(ev.modifiers()
                                              & QtCore.Qt.KeyboardModifier.ShiftModifier),
                             continues=not ev.isStart())  # one drag: one undo step
            self._last = p


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _spec(name: str, default: float, low: float, high: float) -> ParamSpec:
    return ParamSpec(name, "float", default, low=low, high=high, log=True)


class PlaygroundWindow(QtWidgets.QMainWindow):
    """The Playground. ``model`` holds every value; this class draws and dispatches."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, *,
                 model: PlaygroundModel | None = None) -> None:
        super().__init__(parent)
        preload_for_threads()
        self.setWindowTitle("Kernel Lab — Playground")
        self.relay = _Relay(self)  # deleted with the window: no answer outlives it
        engine = model.engine if model is not None else FitEngine(quick=True)
        self.worker = FitWorker(engine, self.relay.done.emit, self.relay.error.emit)
        self.model = model or PlaygroundModel(launch=self.worker.submit, engine=engine)
        self._given_launch = self.model.launch  # restored when this window goes away
        self.model.launch = self.worker.submit  # a given model computes off this thread too
        self._shut = False
        self.relay.done.connect(self.model.deliver, QtCore.Qt.ConnectionType.QueuedConnection)
        self.relay.error.connect(self.model.fail, QtCore.Qt.ConnectionType.QueuedConnection)
        self.fits_drawn = 0
        self.drawn_serial = 0  # the request whose fit is on screen
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
        self.play_timer = QtCore.QTimer(self)
        self.play_timer.setInterval(40)
        self.play_timer.timeout.connect(self._tick)
        self.sync_controls()
        self.draw_points()
        self.model.refit()

    # -- layout -------------------------------------------------------------------------
    def _build(self) -> None:
        central = QtWidgets.QWidget()
        self.setCentralWidget(central)
        row = QtWidgets.QHBoxLayout(central)
        controls = QtWidgets.QWidget()
        controls.setMaximumWidth(330)
        form = QtWidgets.QFormLayout(controls)
        self.dataset_box = QtWidgets.QComboBox()
        for name, s in core.SETS.items():
            self.dataset_box.addItem(f"{name} ({s.dim}-D {s.task})", name)
        self.dataset_box.addItem("blank canvas, 1-D", "paint-1d")
        self.dataset_box.addItem("blank canvas, 2-D classes", "paint-2d")
        self.dataset_box.activated.connect(
            lambda _i: self._guard(self.model.set_dataset, self.dataset_box.currentData()))
        form.addRow("data", self.dataset_box)
        self.n_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.n_slider.setRange(10, 2000)
        self.n_slider.valueChanged.connect(self._n_or_noise_moved)
        self.n_slider.sliderReleased.connect(self._n_or_noise_moved)
        self.slider_values: dict[str, QtWidgets.QLabel] = {}  # each slider's value, shown
        form.addRow("points n", self._with_value("n", self.n_slider, str))
        self.noise_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.noise_slider.setRange(0, 100)
        self.noise_slider.valueChanged.connect(self._n_or_noise_moved)
        self.noise_slider.sliderReleased.connect(self._n_or_noise_moved)
        form.addRow("noise", self._with_value("noise", self.noise_slider,
                                              lambda v: f"{v / 100:.2f}"))
        self.paint_class = QtWidgets.QPushButton("painting class +1 (Shift: −1)")
        self.paint_class.setCheckable(True)
        self.paint_class.toggled.connect(lambda on: self.paint_class.setText(
            f"painting class {'−1' if on else '+1'} (Shift: {'+1' if on else '−1'})"))
        form.addRow(self.paint_class)
        edit = QtWidgets.QHBoxLayout()
        for text, slot, key in (("Undo", self.model.undo, QtGui.QKeySequence.StandardKey.Undo),
                                ("Redo", self.model.redo, "Ctrl+Shift+Z"),
                                ("Clear", self.model.clear, None)):
            button = QtWidgets.QPushButton(text)
            button.clicked.connect(slot)
            edit.addWidget(button)
            if key is not None:
                QtGui.QShortcut(QtGui.QKeySequence(key), self, activated=slot)
        form.addRow(edit)
        self.method_box = QtWidgets.QComboBox()
        self.compare_box = QtWidgets.QComboBox()
        self.compare_box.addItem("none", "")
        for m in core.METHODS:
            self.method_box.addItem(core.METHOD_TEXT[m], m)
            if m not in core.STEPPED:
                self.compare_box.addItem(core.METHOD_TEXT[m] + " (dashed)", m)
        self.method_box.activated.connect(
            lambda _i: self._apply(method=self.method_box.currentData()))
        self.compare_box.activated.connect(
            lambda _i: self._apply(compare=self.compare_box.currentData()))
        form.addRow("method", self.method_box)
        form.addRow("compare", self.compare_box)
        self.kernel_box = QtWidgets.QComboBox()
        self.kernel_box.addItems(core.KERNELS)
        self.kernel_box.activated.connect(
            lambda _i: self._apply(kernel=self.kernel_box.currentText()))
        form.addRow("kernel", self.kernel_box)
        self.sigma = LogSlider(_spec("sigma", 0.5, 1e-2, 1e2))
        self.lam = LogSlider(_spec("lam", 0.1, 1e-6, 1e4))
        self.nu = LogSlider(_spec("nu", 1e-3, 1e-6, 1.0))
        for name, widget in (("σ", self.sigma), ("λ", self.lam), ("ν (DSG)", self.nu)):
            form.addRow(name, widget)
            widget.changed.connect(lambda w=widget: self._log_value_moved(w))
        self.s_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.s_slider.setRange(1, 400)
        self.s_slider.valueChanged.connect(lambda v: self._set(s=v))
        form.addRow("landmarks s", self._with_value("s", self.s_slider, str))
        self.sampler_box = QtWidgets.QComboBox()
        self.sampler_box.addItems(SAMPLERS)
        self.sampler_box.activated.connect(
            lambda _i: self._apply(sampler=self.sampler_box.currentText()))
        form.addRow("sampler", self.sampler_box)
        self.leverage = QtWidgets.QCheckBox("size points by ridge leverage score")
        self.leverage.toggled.connect(lambda on: self._set(leverage=on))
        form.addRow(self.leverage)
        self.D_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.D_slider.setRange(1, 1000)
        self.D_slider.valueChanged.connect(lambda v: self._set(D=v))
        form.addRow("features D", self._with_value("D", self.D_slider, str))
        self.orthogonal = QtWidgets.QCheckBox("orthogonal random features")
        self.orthogonal.toggled.connect(lambda on: self._set(orthogonal=on))
        form.addRow(self.orthogonal)
        steps = QtWidgets.QHBoxLayout()
        self.play_button = QtWidgets.QPushButton("Play")
        self.play_button.setCheckable(True)
        self.play_button.toggled.connect(self.play)
        step = QtWidgets.QPushButton("Step")
        step.clicked.connect(lambda: self.model.step(1))
        reset = QtWidgets.QPushButton("Reset")
        reset.clicked.connect(self._reset)
        for b in (self.play_button, step, reset):
            steps.addWidget(b)
        form.addRow("DSG / GFC", steps)
        self.step_buttons = (self.play_button, step, reset)
        for key, slot, button in (("Ctrl+P", self.play_button.toggle, self.play_button),
                                  ("Ctrl+Right", step.click, step),
                                  ("Ctrl+R", reset.click, reset)):
            button.setToolTip(f"{button.text()} ({key})")
            QtGui.QShortcut(QtGui.QKeySequence(key), self,
                            activated=lambda s=slot, b=button: b.isEnabled() and s())
        self.speed = QtWidgets.QSpinBox()
        self.speed.setRange(1, 200)
        self.speed.setValue(5)
        self.speed.setSuffix(" per frame")
        form.addRow("speed", self.speed)
        self.about = QtWidgets.QLabel("")
        self.about.setWordWrap(True)
        form.addRow(self.about)
        row.addWidget(controls)

        plots = QtWidgets.QVBoxLayout()
        self.box = PaintBox(self)
        self.plot = pg.PlotWidget(viewBox=self.box, background="w")
        self.plot.setRange(xRange=(-core.EXTENT, core.EXTENT), yRange=(-core.EXTENT,
                                                                        core.EXTENT),
                           padding=0)
        self.image = pg.ImageItem()
        self.image.setZValue(-10)
        self.plot.addItem(self.image)
        # the decision boundaries, computed with the fit (marching squares, off this thread)
        self.contour = pg.PlotCurveItem(pen=pg.mkPen((0, 0, 0), width=2), connect="pairs")
        self.plot.addItem(self.contour)
        self.truth_curve = self.plot.plot(pen=pg.mkPen(TRUTH, width=3))
        self.fit_curve = self.plot.plot(pen=pg.mkPen(PRIMARY, width=2.5))
        self.compare_curve = self.plot.plot(pen=pg.mkPen(SECOND, width=2,
                                                         style=QtCore.Qt.PenStyle.DashLine))
        self.compare_contour = pg.PlotCurveItem(pen=pg.mkPen(
            (60, 60, 60), width=1.5, style=QtCore.Qt.PenStyle.DashLine), connect="pairs")
        self.plot.addItem(self.compare_contour)
        # one scatter per (class, train/test): a single symbol each, drawn fast
        self.point_items: dict[tuple[float, bool], pg.ScatterPlotItem] = {}
        self._groups: dict[tuple[float, bool], np.ndarray] = {}
        for cls in (1.0, -1.0, 0.0):
            colour = CLASS_COLOURS.get(cls, (50, 50, 50))
            self.point_items[cls, False] = pg.ScatterPlotItem(
                size=8, brush=pg.mkBrush(*colour), pen=pg.mkPen("k", width=0.5))
            self.point_items[cls, True] = pg.ScatterPlotItem(
                size=8, brush=pg.mkBrush(0, 0, 0, 0), pen=pg.mkPen(*colour, width=2))
        self.landmark_scatter = pg.ScatterPlotItem(size=17, brush=pg.mkBrush(0, 0, 0, 0),
                                                   pen=pg.mkPen((0, 0, 0), width=2))
        for item in (*self.point_items.values(), self.landmark_scatter):
            self.plot.addItem(item)
        self._label_axes(self.plot, "x", "y")
        plots.addWidget(self.plot, 4)
        small = QtWidgets.QHBoxLayout()
        self.lam_plot = pg.PlotWidget(axisItems={"left": error_axis()}, background="w",
                                      title="error against λ")
        self.lam_plot.setLogMode(True, False)  # a linear error axis: readable when small
        self._label_axes(self.lam_plot, "λ (log scale)", ERROR_LABEL["regression"])
        self.lam_train = self.lam_plot.plot(pen=pg.mkPen((31, 119, 180), width=2),
                                            name="train")
        self.lam_test = self.lam_plot.plot(pen=pg.mkPen((214, 39, 40), width=2), name="test")
        self.lam_line = pg.InfiniteLine(angle=90, pen=pg.mkPen("k", width=1))
        self.lam_plot.addItem(self.lam_line)
        self.step_plot = pg.PlotWidget(axisItems={"left": error_axis()}, background="w",
                                       title="train (blue) / test (red) error by step")
        self.step_train = self.step_plot.plot(pen=pg.mkPen((31, 119, 180), width=2))
        self.step_test = self.step_plot.plot(pen=pg.mkPen((214, 39, 40), width=2))
        self._label_axes(self.step_plot, "step", ERROR_LABEL["regression"])
        self.freq_plot = pg.PlotWidget(background="w", title="learned frequencies (GFC)")
        self._label_axes(self.freq_plot, "ω₁ (rad per unit of x₁)", "ω₂ (rad per unit of x₂)")
        self.freq_scatter = pg.ScatterPlotItem(size=7, brush=pg.mkBrush(148, 103, 189))
        self.freq_plot.addItem(self.freq_scatter)
        for w in (self.lam_plot, self.step_plot, self.freq_plot):
            w.setMinimumHeight(150)
            small.addWidget(w)
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

    def _with_value(self, key: str, slider: QtWidgets.QSlider,
                    text: Any) -> QtWidgets.QWidget:
        """``slider`` with its value beside it (``text(value)``), updated as it moves."""
        holder = QtWidgets.QWidget()
        row = QtWidgets.QHBoxLayout(holder)
        row.setContentsMargins(0, 0, 0, 0)
        label = QtWidgets.QLabel(text(slider.value()))
        label.setMinimumWidth(label.fontMetrics().horizontalAdvance("0000"))
        label.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight
                           | QtCore.Qt.AlignmentFlag.AlignVCenter)
        slider.valueChanged.connect(lambda v: label.setText(text(v)))
        row.addWidget(slider, 1)
        row.addWidget(label)
        self.slider_values[key] = label
        return holder

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
        if self.model.dataset in core.SETS and (n, noise) != (self.model.n, self.model.noise):
            self._guard(self.model.set_dataset, self.model.dataset, n=n, noise=noise)

    def _reset(self) -> None:
        self.play_button.setChecked(False)
        self.model.reset_steps()

    def play(self, on: bool) -> None:
        self.play_button.setText("Pause" if on else "Play")
        if on and self.model.params["method"] not in core.STEPPED:
            self._apply(method=next(iter(core.STEPPED)))
        (self.play_timer.start if on else self.play_timer.stop)()

    def _tick(self) -> None:
        m = self.model
        if not self.worker.wait_idle(0):  # one frame per finished fit: never a queue
            return
        if not m.can_step():
            self.play_button.setChecked(False)  # nothing (more) to step: Play stops
            return
        m.step(max(1, core.STEPPED[m.params["method"]] * self.speed.value()))

    def open_preset(self, name: str) -> None:
        preset = load_playground_preset(name)
        self.model.apply(preset.doc, points=False)
        self.setWindowTitle(f"Kernel Lab — Playground — {preset.title}")
        self.about.setText(f"<b>{preset.title}</b><br>{preset.about}")

    def export_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Export the Playground view", "playground.png", "PNG (*.png);;SVG (*.svg)")
        if path:
            self.export(path)

    def export(self, path: str) -> None:
        from pyqtgraph.exporters import ImageExporter, SVGExporter

        exporter = SVGExporter if path.lower().endswith(".svg") else ImageExporter
        exporter(self.plot.plotItem).export(path)

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
            used = core.USES[p["method"]] | (core.USES.get(p["compare"], set()) - {"leverage"})
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
        where = np.column_stack([pts.X[:, 0], pts.y]) if m.dim == 1 else pts.X
        key = np.zeros(pts.n) if m.dim == 1 or m.task == "regression" else np.sign(pts.y)
        key[key == 0] = 0.0
        train_rank = np.cumsum(~pts.test) - 1  # a point's index among the training points
        for (cls, is_test), item in self.point_items.items():
            sel = (key == cls) & (pts.test == is_test)
            item.setData(pos=where[sel] if sel.any() else np.zeros((0, 2)), size=8)
            self._groups[cls, is_test] = train_rank[sel]
        truth = m.truth
        if m.dim == 1 and truth is not None:
            xs = np.linspace(-core.EXTENT, core.EXTENT, 300)
            self.truth_curve.setData(xs, truth(xs))
        elif m.dim == 2 and truth is not None:
            self.truth_curve.setData([], [])
        else:
            self.truth_curve.setData([], [])
        if pts.n == 0:
            self.fit_curve.setData([], [])
            self.compare_curve.setData([], [])
            self.image.clear()
            self.contour.setData([], [])
            self.compare_contour.setData([], [])
            self.landmark_scatter.setData([])
            self.readout.setText("Paint points: click (drag to spray), right-click removes.")

    def draw(self, fit: Fit) -> None:
        m = self.model
        r = fit.primary
        train = ~m.points.test
        Xtr, ytr = m.points.X[train], m.points.y[train]
        if fit.dim == 1:
            self.image.clear()
            self.plot.setYRange(-core.EXTENT, core.EXTENT, padding=0)
            self.fit_curve.setData(fit.grid[:, 0], r.grid)
            self.compare_curve.setData(*((fit.grid[:, 0], fit.compare.grid)
                                         if fit.compare else ([], [])))
        else:
            self.fit_curve.setData([], [])
            self.compare_curve.setData([], [])
            res = round(math.sqrt(len(r.grid)))
            img = r.grid.reshape(res, res).T  # x₁ fastest in the grid: columns
            lim = float(np.nanmax(np.abs(img))) or 1.0
            cmap = pg.colormap.get("CET-D1") if fit.task == "classification" else \
                pg.colormap.get("viridis")
            if fit.task == "classification":
                self.image.setImage(img, levels=(-lim, lim))
            else:
                self.image.setImage(img, autoLevels=True)
            self.image.setColorMap(cmap)
            # pixel centres on the grid points: the image reaches half a step beyond them
            half = core.EXTENT / (res - 1)
            size = 2 * (core.EXTENT + half)
            self.image.setRect(QtCore.QRectF(-core.EXTENT - half, -core.EXTENT - half,
                                             size, size))
        for item, result in ((self.contour, r), (self.compare_contour, fit.compare)):
            seg = result.contour if result is not None and result.contour is not None \
                else np.zeros((0, 2))
            item.setData(seg[:, 0], seg[:, 1], connect="pairs")
        # landmarks and leverage scores
        if r.landmarks is not None:
            where = np.column_stack([Xtr[:, 0], ytr]) if fit.dim == 1 else Xtr
            self.landmark_scatter.setData(pos=where[r.landmarks])
        else:
            self.landmark_scatter.setData([])
        for (cls, is_test), item in self.point_items.items():
            rows = self._groups.get((cls, is_test), np.zeros(0, dtype=int))
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
            exact = r if r.curve is not None else fit.compare
            self.lam_plot.setTitle(f"{exact.method.upper()}: train (blue) / test (red) "
                                   "vs λ")
        elif exact:
            self.lam_line.setValue(math.log10(float(m.params["lam"])))
        # the step and frequency plots only where they say something
        self.step_plot.setVisible(r.method in core.STEPPED)
        self.freq_plot.setVisible("frequencies" in r.extra)
        # a mean squared error on a log axis: the first steps' errors, many times the
        # later ones, would flatten everything after them on a linear one (a
        # misclassified fraction reaches 0: linear)
        log_error = fit.task == "regression"
        if r.method in core.STEPPED:
            if self.step_plot.getPlotItem().ctrl.logYCheck.isChecked() != log_error:
                self.step_plot.setLogMode(False, log_error)
            self._label_axes(self.step_plot, core.STEP_WORD[r.method], error_label)
        if "frequencies" in r.extra:
            self._label_axes(self.freq_plot, *(
                ("ω (rad per unit of x)", "") if fit.dim == 1
                else ("ω₁ (rad per unit of x₁)", "ω₂ (rad per unit of x₂)")))
            self.freq_plot.getPlotItem().showAxis("left", fit.dim > 1)
        history = r.extra.get("history")
        if history is not None and len(history):
            errors = np.maximum(history[:, 1:], 1e-12) if log_error else history[:, 1:]
            self.step_train.setData(history[:, 0], errors[:, 0])
            self.step_test.setData(history[:, 0], errors[:, 1])
        else:
            self.step_train.setData([], [])
            self.step_test.setData([], [])
        freqs = r.extra.get("frequencies")
        if freqs is not None and len(freqs):
            self.freq_scatter.setData(pos=freqs[:, :2] if freqs.shape[1] > 1
                                      else np.column_stack([freqs[:, 0], np.zeros(len(freqs))]))
        else:
            self.freq_scatter.setData([])
        self.readout.setText(self._readout(fit))
        self.fits_drawn += 1
        self.drawn_serial = fit.serial

    def _failed(self, message: str) -> None:
        self.readout.setText(f"⚠ {message}")

    def _params_changed(self, _changed: dict[str, Any]) -> None:
        self.sync_controls()

    def _readout(self, fit: Fit) -> str:
        m, r = self.model, fit.primary
        err = "misclassified" if fit.task == "classification" else "MSE"
        parts = [f"{core.METHOD_TEXT[r.method]}", f"train {err} {r.train_error:.3g}",
                 f"test {err} {r.test_error:.3g}"]
        if r.dof is not None:
            parts.append(f"degrees of freedom {r.dof:.1f}")
        if "iterations" in r.extra:
            parts.append(f"iteration {r.extra['iterations']}")
        if "features" in r.extra:
            parts.append(f"{r.extra['features']} features"
                         + (" (done)" if r.extra.get("done") else ""))
        elif r.n_features is not None:
            parts.append(f"{r.n_features} {core.SIZE_WORD.get(r.method, 'features')}")
        parts.append(f"fit {1000 * r.seconds:.1f} ms")
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
        self.regenerate_timer.stop()
        self.worker.close()
        self.worker.join(2.0)
        if self.model.launch == self.worker.submit:
            self.model.launch = self._given_launch if self._given_launch != self.worker.submit \
                else self.model._compute_now
        for signal in (self.relay.done, self.relay.error):
            try:
                signal.disconnect()
            except (RuntimeError, TypeError):  # nothing connected any more
                pass
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
