"""The Playground's controls: the data, the method and its parameters, Step / Play, as
one form beside the view. Built once per window; the window keeps every widget as an
attribute and binds it to the model."""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from kernel_lab.core.params import ParamSpec
from kernel_lab.core.playground import MAX_POINTS, SETS, STEPPED
from kernel_lab.engine.playground.params import PARAMS
from kernel_lab.gui.forms import LogSlider
from kernel_lab.gui.playground.words import METHOD_TEXT

_DECLARED = {p.name: p for p in PARAMS}


def _spec(name: str, default: float, low: float, high: float) -> ParamSpec:
    """A log slider's range (narrower than what a session may set)."""
    return ParamSpec(name, "float", default, low=low, high=high, log=True)


class PlaygroundControls:
    """The Playground window's form, mixed into the window: the widgets become the
    window's attributes and are connected to its gestures. (A mixin, so that the form
    and the window do not import each other.)"""

    def build_controls(self) -> QtWidgets.QWidget:
        """The form, its widgets set as attributes of the window."""
        w: Any = self  # the window (its gestures are defined there)
        controls = QtWidgets.QWidget()
        controls.setMaximumWidth(330)
        form = QtWidgets.QFormLayout(controls)
        w.dataset_box = QtWidgets.QComboBox()
        for name, s in SETS.items():
            w.dataset_box.addItem(f"{name} ({s.dim}-D {s.task})", name)
        w.dataset_box.addItem("blank canvas, 1-D", "paint-1d")
        w.dataset_box.addItem("blank canvas, 2-D classes", "paint-2d")
        w.dataset_box.activated.connect(
            lambda _i: w._guard(w.model.set_dataset, w.dataset_box.currentData()))
        form.addRow("data", w.dataset_box)
        w.n_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        w.n_slider.setRange(10, MAX_POINTS)  # the Playground's own limit
        w.n_slider.valueChanged.connect(w._n_or_noise_moved)
        w.n_slider.sliderReleased.connect(w._n_or_noise_moved)
        w.slider_values: dict[str, QtWidgets.QLabel] = {}  # each slider's value, shown
        form.addRow("points n", _with_value(w, "n", w.n_slider, str))
        w.noise_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        w.noise_slider.setRange(0, 100)
        w.noise_slider.valueChanged.connect(w._n_or_noise_moved)
        w.noise_slider.sliderReleased.connect(w._n_or_noise_moved)
        form.addRow("noise", _with_value(w, "noise", w.noise_slider,
                                              lambda v: f"{v / 100:.2f}"))
        w.paint_class = QtWidgets.QPushButton("painting class +1 (Shift: −1)")
        w.paint_class.setCheckable(True)
        w.paint_class.toggled.connect(lambda on: w.paint_class.setText(
            f"painting class {'−1' if on else '+1'} (Shift: {'+1' if on else '−1'})"))
        form.addRow(w.paint_class)
        edit = QtWidgets.QHBoxLayout()
        for text, slot, key in (("Undo", w.model.undo, QtGui.QKeySequence.StandardKey.Undo),
                                ("Redo", w.model.redo, "Ctrl+Shift+Z"),
                                ("Clear", w.model.clear, None)):
            button = QtWidgets.QPushButton(text)
            button.clicked.connect(slot)
            edit.addWidget(button)
            if key is not None:
                QtGui.QShortcut(QtGui.QKeySequence(key), w, activated=slot)
        form.addRow(edit)
        w.method_box = QtWidgets.QComboBox()
        w.compare_box = QtWidgets.QComboBox()
        w.compare_box.addItem("none", "")
        for m in _DECLARED["method"].choices:
            w.method_box.addItem(METHOD_TEXT[m], m)
            if m not in STEPPED:
                w.compare_box.addItem(METHOD_TEXT[m] + " (dashed)", m)
        w.method_box.activated.connect(
            lambda _i: w._apply(method=w.method_box.currentData()))
        w.compare_box.activated.connect(
            lambda _i: w._apply(compare=w.compare_box.currentData()))
        form.addRow("method", w.method_box)
        form.addRow("compare", w.compare_box)
        w.kernel_box = QtWidgets.QComboBox()
        w.kernel_box.addItems(_DECLARED["kernel"].choices)
        w.kernel_box.activated.connect(
            lambda _i: w._apply(kernel=w.kernel_box.currentText()))
        form.addRow("kernel", w.kernel_box)
        w.sigma = LogSlider(_spec("sigma", 0.5, 1e-2, 1e2))
        w.lam = LogSlider(_spec("lam", 0.1, 1e-6, 1e4))
        w.nu = LogSlider(_spec("nu", 1e-3, 1e-6, 1.0))
        for name, widget in (("σ", w.sigma), ("λ", w.lam), ("ν (DSG)", w.nu)):
            form.addRow(name, widget)
            widget.changed.connect(lambda s=widget: w._log_value_moved(s))
        w.s_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        w.s_slider.setRange(1, 400)
        w.s_slider.valueChanged.connect(lambda v: w._set(s=v))
        form.addRow("landmarks s", _with_value(w, "s", w.s_slider, str))
        w.sampler_box = QtWidgets.QComboBox()
        w.sampler_box.addItems(_DECLARED["sampler"].choices)
        w.sampler_box.activated.connect(
            lambda _i: w._apply(sampler=w.sampler_box.currentText()))
        form.addRow("sampler", w.sampler_box)
        w.leverage = QtWidgets.QCheckBox("size points by ridge leverage score")
        w.leverage.toggled.connect(lambda on: w._set(leverage=on))
        form.addRow(w.leverage)
        w.D_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        w.D_slider.setRange(1, 1000)
        w.D_slider.valueChanged.connect(lambda v: w._set(D=v))
        form.addRow("features D", _with_value(w, "D", w.D_slider, str))
        w.orthogonal = QtWidgets.QCheckBox("orthogonal random features")
        w.orthogonal.toggled.connect(lambda on: w._set(orthogonal=on))
        form.addRow(w.orthogonal)
        steps = QtWidgets.QHBoxLayout()
        w.play_button = QtWidgets.QPushButton("Play")
        w.play_button.setCheckable(True)
        w.play_button.toggled.connect(w.play)
        step = QtWidgets.QPushButton("Step")
        step.clicked.connect(lambda: w.model.step(1))
        reset = QtWidgets.QPushButton("Reset")
        reset.clicked.connect(w._reset)
        for b in (w.play_button, step, reset):
            steps.addWidget(b)
        form.addRow("DSG / GFC", steps)
        w.step_buttons = (w.play_button, step, reset)
        for key, slot, button in (("Ctrl+P", w.play_button.toggle, w.play_button),
                                  ("Ctrl+Right", step.click, step),
                                  ("Ctrl+R", reset.click, reset)):
            button.setToolTip(f"{button.text()} ({key})")
            QtGui.QShortcut(QtGui.QKeySequence(key), w,
                            activated=lambda s=slot, b=button: b.isEnabled() and s())
        w.speed = QtWidgets.QSpinBox()
        w.speed.setRange(1, 200)
        w.speed.setValue(5)
        w.speed.setSuffix(" per frame")
        form.addRow("speed", w.speed)
        w.about = QtWidgets.QLabel("")
        w.about.setWordWrap(True)
        form.addRow(w.about)
        return controls


def _with_value(w: Any, key: str, slider: QtWidgets.QSlider,
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
    w.slider_values[key] = label
    return holder

