"""Forms generated from parameter specs: the experiment panel and the data generators use
the same builder, so a new experiment or generator needs no GUI code."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from PySide6 import QtCore, QtWidgets

from kernel_lab.core.params import ParamSpec

#: Steps of a log-scale slider per decade.
SLIDER_STEPS_PER_DECADE = 20


class LogSlider(QtWidgets.QWidget):
    """A log-scale slider with an exact entry beside it (λ, σ, …).

    The text field holds the value (``auto`` where allowed); the slider moves on a log
    scale between the spec's bounds (clipped to 12 decades around the default).
    """

    changed = QtCore.Signal()

    def __init__(self, spec: ParamSpec, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.spec = spec
        row = QtWidgets.QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.edit = QtWidgets.QLineEdit()
        self.edit.setMaximumWidth(90)
        if spec.allow_auto:
            self.edit.setPlaceholderText("auto")
        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        centre = spec.default if isinstance(spec.default, int | float) and spec.default > 0 \
            else 1.0
        lo = max(spec.low if spec.low and spec.low > 0 else centre * 1e-6, centre * 1e-6)
        hi = min(spec.high if spec.high else centre * 1e6, centre * 1e6)
        self._lo, self._hi = math.log10(lo), math.log10(hi)
        self.slider.setRange(0, max(1, round((self._hi - self._lo) * SLIDER_STEPS_PER_DECADE)))
        row.addWidget(self.edit)
        row.addWidget(self.slider, 1)
        self._syncing = False
        self.edit.textChanged.connect(self._text_changed)
        self.slider.valueChanged.connect(self._slider_moved)
        self.set_text("auto" if spec.default is None else f"{spec.default:g}")

    def set_text(self, text: str) -> None:
        self.edit.setText("" if text == "auto" and self.spec.allow_auto else text)

    def text(self) -> str:
        return self.edit.text().strip() or "auto"

    def _text_changed(self) -> None:
        if not self._syncing:
            try:
                v = float(self.edit.text())
            except ValueError:
                v = float("nan")
            if v > 0 and math.isfinite(v):
                self._syncing = True
                step = (math.log10(v) - self._lo) * SLIDER_STEPS_PER_DECADE
                self.slider.setValue(round(min(max(step, 0), self.slider.maximum())))
                self._syncing = False
        self.changed.emit()

    def _slider_moved(self, step: int) -> None:
        if self._syncing:
            return
        value = 10.0 ** (self._lo + step / SLIDER_STEPS_PER_DECADE)
        self._syncing = True
        self.edit.setText(f"{float(f'{value:.3g}'):g}")
        self._syncing = False
        self.changed.emit()


class ParamForm(QtWidgets.QWidget):
    """Widgets built from parameter specs; hides those whose ``when`` does not hold.

    ``values()`` returns raw values (text for text fields); the experiment checks them,
    so the form never needs to know the rules.
    """

    changed = QtCore.Signal()

    def __init__(self, specs: Sequence[ParamSpec], parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.specs = tuple(specs)
        self.widgets: dict[str, QtWidgets.QWidget] = {}
        self.form = QtWidgets.QFormLayout(self)
        self.form.setFieldGrowthPolicy(
            QtWidgets.QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for spec in self.specs:
            w = self._make(spec)
            w.setToolTip(spec.help)
            self.widgets[spec.name] = w
            label = QtWidgets.QLabel(spec.title + (f" [{spec.unit}]" if spec.unit else ""))
            label.setToolTip(spec.help)
            self.form.addRow(label, w)
        self._update_visibility()

    def _make(self, spec: ParamSpec) -> QtWidgets.QWidget:
        if spec.kind == "choice":
            w = QtWidgets.QComboBox()
            w.addItems(list(spec.choices))
            w.setCurrentText(str(spec.default))
            w.currentTextChanged.connect(self._on_change)
        elif spec.kind == "choices":
            w = QtWidgets.QWidget()
            grid = QtWidgets.QGridLayout(w)
            grid.setContentsMargins(0, 0, 0, 0)
            w.boxes = []
            for i, choice in enumerate(spec.choices):
                box = QtWidgets.QCheckBox(choice)
                box.setChecked(choice in (spec.default or []))
                box.toggled.connect(self._on_change)
                grid.addWidget(box, i // 2, i % 2)
                w.boxes.append(box)
        elif spec.kind == "bool":
            w = QtWidgets.QCheckBox()
            w.setChecked(bool(spec.default))
            w.toggled.connect(self._on_change)
        elif spec.kind == "int" and _fits_a_spin_box(spec):
            w = QtWidgets.QSpinBox()
            low = int(spec.low if spec.low is not None else SPIN_MIN)
            if spec.allow_auto:
                low -= 1  # one step below the range stands for "auto"
                w.setSpecialValueText("auto")
            w.setRange(low, int(spec.high if spec.high is not None else SPIN_MAX))
            w.setValue(low if spec.default is None else int(spec.default))
            w.setKeyboardTracking(False)
            w.valueChanged.connect(self._on_change)
        elif spec.kind == "float" and spec.log:
            w = LogSlider(spec)
            w.changed.connect(self._on_change)
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
        if isinstance(w, LogSlider):
            return w.text()
        if hasattr(w, "boxes"):
            return [b.text() for b in w.boxes if b.isChecked()]
        return w.text().strip() or "auto"

    def values(self) -> dict[str, Any]:
        """Raw values (strings for text fields); the experiment checks them."""
        return {name: self._raw(name) for name in self.widgets}

    def set_values(self, values: Mapping[str, Any]) -> None:
        """Show ``values`` (e.g. from a session); names the form lacks are ignored."""
        self.blockSignals(True)
        try:
            for name, value in values.items():
                w = self.widgets.get(name)
                if w is None:
                    continue
                if isinstance(w, QtWidgets.QComboBox):
                    w.setCurrentText(str(value))
                elif isinstance(w, QtWidgets.QCheckBox):
                    w.setChecked(bool(value))
                elif isinstance(w, QtWidgets.QSpinBox):
                    w.setValue(w.minimum() if value in (None, "auto") else int(value))
                elif isinstance(w, LogSlider):
                    w.set_text("auto" if value is None else _text(value))
                elif hasattr(w, "boxes"):
                    chosen = set(value if isinstance(value, list) else str(value).split(","))
                    for b in w.boxes:
                        b.setChecked(b.text() in chosen)
                else:
                    w.setText("auto" if value is None else _text(value))
        finally:
            self.blockSignals(False)
        self._update_visibility()
        self.changed.emit()


#: The range of Qt's spin box (a C int).
SPIN_MIN, SPIN_MAX = -2**31 + 1, 2**31 - 1


def _fits_a_spin_box(spec: Any) -> bool:
    """Whether an int parameter's declared range fits Qt's spin box; a wider one (a seed
    up to 2³² − 1) is a text field, checked by the experiment like the others (a spin box
    overflows on a session's larger value)."""
    return ((spec.low is None or spec.low >= SPIN_MIN)
            and (spec.high is None or spec.high <= SPIN_MAX))


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
