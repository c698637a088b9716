"""The Data panel: a generator (with its parameters), a bundled example, or a file (open
dialog, target column, preview, summary). Loading runs on a pool thread; an error is shown
in the panel in plain words and the previously loaded data stay in use."""

from __future__ import annotations

import html
import os
from typing import Any

import numpy as np
from PySide6 import QtCore, QtWidgets

from kernel_lab.core.data import EXAMPLES, GENERATORS, Dataset, _split_spec, load_data
from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.params import parse_assignments
from kernel_lab.gui.forms import ParamForm

FILE_FILTER = ("Data files (*.csv *.tsv *.txt *.dat *.npy *.npz *.svm *.svmlight *.libsvm "
               "*.arff *.mat);;All files (*)")
SOURCES = ("Generator", "Example", "File")


class _LoadSignals(QtCore.QObject):
    loaded = QtCore.Signal(int, object)
    failed = QtCore.Signal(int, str)


class _LoadTask(QtCore.QRunnable):
    def __init__(self, token: int, spec: str, options: dict[str, Any]) -> None:
        super().__init__()
        self.token, self.spec, self.options = token, spec, options
        self.signals = _LoadSignals()

    def run(self) -> None:
        try:
            ds = load_data(self.spec, overrides=self.options)
        except KernelLabError as exc:
            self.signals.failed.emit(self.token, str(exc))
        except MemoryError:
            self.signals.failed.emit(self.token, "the data do not fit in memory")
        except Exception as exc:  # shown in the panel, never fatal
            self.signals.failed.emit(self.token, f"{type(exc).__name__}: {exc}")
        else:
            self.signals.loaded.emit(self.token, ds)


def _quote(value: Any) -> str:
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return f'"{text}"' if any(c in text for c in ',=:" ') else text


class DataPanel(QtWidgets.QWidget):
    """Choose and load the data; ``spec()`` describes the data last loaded successfully."""

    data_changed = QtCore.Signal()

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.dataset: Dataset | None = None
        self._format = "auto"  # a file's format option, kept from a session or spec
        self._loaded: tuple[str, dict[str, Any]] = ("", {})
        self._token = 0
        self._pending: tuple[str, dict[str, Any]] | None = None
        col = QtWidgets.QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)

        self.use_default = QtWidgets.QCheckBox("Use the experiment's default data")
        self.use_default.setChecked(True)
        self.use_default.setToolTip("switching experiments loads the data each was designed "
                                    "for; untick to keep your own data across experiments")
        col.addWidget(self.use_default)
        top = QtWidgets.QFormLayout()
        self.source = QtWidgets.QComboBox()
        self.source.addItems(SOURCES)
        top.addRow("Source", self.source)
        col.addLayout(top)

        self.pages = QtWidgets.QStackedWidget()
        # generator page
        gen = QtWidgets.QWidget()
        gcol = QtWidgets.QVBoxLayout(gen)
        gcol.setContentsMargins(0, 0, 0, 0)
        self.generator = QtWidgets.QComboBox()
        for g in GENERATORS.values():
            self.generator.addItem(g.title, g.name)
            self.generator.setItemData(self.generator.count() - 1, g.description,
                                       QtCore.Qt.ItemDataRole.ToolTipRole)
        gcol.addWidget(self.generator)
        self.gen_form_holder = QtWidgets.QVBoxLayout()
        gcol.addLayout(self.gen_form_holder)
        self.gen_form: ParamForm | None = None
        self.pages.addWidget(gen)
        # example page
        ex = QtWidgets.QWidget()
        ecol = QtWidgets.QVBoxLayout(ex)
        ecol.setContentsMargins(0, 0, 0, 0)
        self.example = QtWidgets.QComboBox()
        for key, (title, _) in EXAMPLES.items():
            self.example.addItem(title, key)
        ecol.addWidget(self.example)
        ecol.addStretch(1)
        self.pages.addWidget(ex)
        # file page
        fp = QtWidgets.QWidget()
        fform = QtWidgets.QFormLayout(fp)
        fform.setContentsMargins(0, 0, 0, 0)
        prow = QtWidgets.QHBoxLayout()
        self.path = QtWidgets.QLineEdit()
        self.path.setPlaceholderText("CSV, TSV, NPY/NPZ, svmlight, ARFF or MAT file")
        self.browse = QtWidgets.QPushButton("Browse…")
        prow.addWidget(self.path, 1)
        prow.addWidget(self.browse)
        fform.addRow("File", prow)
        self.target = QtWidgets.QComboBox()
        self.target.setEditable(True)
        self.target.lineEdit().setPlaceholderText("last column")
        self.target.setToolTip("the response column (header name or 0-based index)")
        fform.addRow("Target", self.target)
        self.drop_nan = QtWidgets.QCheckBox("Drop rows with missing values")
        fform.addRow("", self.drop_nan)
        self.pages.addWidget(fp)
        col.addWidget(self.pages)

        split = QtWidgets.QFormLayout()
        self.test_fraction = QtWidgets.QDoubleSpinBox()
        self.test_fraction.setRange(0.0, 0.95)
        self.test_fraction.setSingleStep(0.05)
        self.test_fraction.setValue(0.25)
        self.test_fraction.setToolTip("fraction of rows held out for testing (files and "
                                      "examples; generators draw n_test fresh points)")
        self.standardize = QtWidgets.QCheckBox("Standardise features")
        self.standardize.setChecked(True)
        split.addRow("Test fraction", self.test_fraction)
        split.addRow("", self.standardize)
        col.addLayout(split)
        self.split_widgets = (self.test_fraction, self.standardize)

        self.load_button = QtWidgets.QPushButton("Load data")
        col.addWidget(self.load_button)
        self.status = QtWidgets.QLabel("No data loaded.")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        col.addWidget(self.status)
        self.preview = QtWidgets.QTableWidget(0, 0)
        self.preview.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.preview.verticalHeader().setVisible(False)
        self.preview.setMinimumHeight(90)
        col.addWidget(self.preview, 1)

        self.source.currentIndexChanged.connect(self._source_changed)
        self.generator.currentIndexChanged.connect(self._generator_changed)
        self.browse.clicked.connect(self.browse_file)
        self.load_button.clicked.connect(self._user_load)
        self._generator_changed()
        self._source_changed()

    # -- widgets ---------------------------------------------------------------------
    def _source_changed(self) -> None:
        idx = self.source.currentIndex()
        self.pages.setCurrentIndex(idx)
        for w in self.split_widgets:
            w.setEnabled(SOURCES[idx] != "Generator")

    def _generator_changed(self) -> None:
        if self.gen_form is not None:
            self.gen_form.setParent(None)
            self.gen_form.deleteLater()
        self.gen_form = ParamForm(GENERATORS[self.generator.currentData()].params)
        self.gen_form_holder.addWidget(self.gen_form)

    def browse_file(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Open data", self.path.text(),
                                                        FILE_FILTER)
        if path:
            self.source.setCurrentIndex(SOURCES.index("File"))
            self.path.setText(path)
            self._format = "auto"
            self.target.clear()
            self._user_load()

    # -- specification ---------------------------------------------------------------
    def current_spec(self) -> tuple[str, dict[str, Any]]:
        """(spec, options) described by the widgets (not necessarily loaded yet)."""
        kind = SOURCES[self.source.currentIndex()]
        if kind == "Generator":
            name = self.generator.currentData()
            assert self.gen_form is not None
            defaults = {s.name: s.default for s in self.gen_form.specs}
            parts = []
            for key, value in self.gen_form.values().items():
                if value == "auto" or _same(value, defaults.get(key)):
                    continue
                parts.append(f"{key}={_quote(value)}")
            return (f"{name}:{','.join(parts)}" if parts else name), {}
        options: dict[str, Any] = {"test_fraction": round(self.test_fraction.value(), 4),
                                   "standardize": self.standardize.isChecked()}
        if kind == "Example":
            return self.example.currentData(), options
        target = self.target.currentText().strip()
        if target:
            options["target"] = target
        if self.drop_nan.isChecked():
            options["drop_nan"] = True
        if self._format != "auto":
            options["format"] = self._format
        return self.path.text().strip(), options

    def spec(self) -> tuple[str, dict[str, Any]]:
        """(spec, options) of the data last loaded successfully."""
        return self._loaded

    def spec_for_run(self) -> tuple[str, dict[str, Any]]:
        """What a run started now should use: the data being loaded, else those last loaded
        (a failed load leaves them in use), else what the widgets describe."""
        if self._pending is not None:
            return self._pending
        return self._loaded if self._loaded[0] else self.current_spec()

    def set_spec(self, spec: str, options: dict[str, Any] | None = None, *,
                 load: bool = True) -> None:
        """Show ``spec`` in the widgets (and load it)."""
        options = dict(options or {})
        name, rest = _split_spec(spec.strip()) if spec else ("", "")
        key = name.strip().lower()
        try:
            assigned = parse_assignments(rest, what="data") if rest else {}
        except KernelLabError:
            assigned = {}
        if key in GENERATORS and not os.path.exists(name):
            self.source.setCurrentIndex(SOURCES.index("Generator"))
            self.generator.setCurrentIndex(self.generator.findData(key))
            assert self.gen_form is not None
            self.gen_form.set_values({**assigned, **options})
        else:
            assigned.update(options)
            if key in EXAMPLES and not os.path.exists(name):
                self.source.setCurrentIndex(SOURCES.index("Example"))
                self.example.setCurrentIndex(self.example.findData(key))
            else:
                self.source.setCurrentIndex(SOURCES.index("File"))
                self.path.setText(name)
                self.target.setEditText(str(assigned.get("target", "")))
                self.drop_nan.setChecked(_flag(assigned.get("drop_nan", False)))
                self._format = str(assigned.get("format", "auto"))
            try:
                self.test_fraction.setValue(float(assigned.get("test_fraction", 0.25)))
            except (TypeError, ValueError):
                pass  # left as it was; loading will name the problem
            self.standardize.setChecked(_flag(assigned.get("standardize", True)))
        if load:
            self.load()

    # -- loading ---------------------------------------------------------------------
    def _user_load(self) -> None:
        self.use_default.setChecked(False)
        self.load()

    def load(self) -> None:
        """Load what the widgets describe on a pool thread."""
        spec, options = self.current_spec()
        if not spec:
            self._show_error("no file chosen: use Browse… to pick one")
            return
        self._token += 1
        self._pending = (spec, options)
        self.status.setText(f"Loading {spec} …")
        self.status.setStyleSheet("")
        task = _LoadTask(self._token, spec, options)
        task.signals.loaded.connect(self._loaded_ok)
        task.signals.failed.connect(self._load_failed)
        QtCore.QThreadPool.globalInstance().start(task)

    @property
    def loading(self) -> bool:
        return self._pending is not None

    @QtCore.Slot(int, object)
    def _loaded_ok(self, token: int, ds: Dataset) -> None:
        if token != self._token or self._pending is None:
            return
        self._loaded, self._pending = self._pending, None
        self.dataset = ds
        s = ds.summary()
        notes = "".join(f"<br>note: {n}" for n in s["notes"])
        self.status.setStyleSheet("")
        self.status.setText(
            f"<b>{s['name']}</b>: n = {s['n_train']} training + {s['n_test']} test points, "
            f"p = {s['p']} features; target “{s['target']}” from {s['target_min']:.4g} to "
            f"{s['target_max']:.4g} ({s['task']}){notes}")
        if self.source.currentText() == "File":
            self._fill_targets(ds)
        self._fill_preview(ds)
        self.data_changed.emit()

    def _fill_targets(self, ds: Dataset) -> None:
        current = self.target.currentText()
        self.target.blockSignals(True)
        self.target.clear()
        self.target.addItems([*ds.feature_names, ds.target_name])
        self.target.setEditText(current or ds.target_name)
        self.target.blockSignals(False)

    def _fill_preview(self, ds: Dataset, rows: int = 8) -> None:
        names = [*ds.feature_names, ds.target_name]
        data = np.column_stack([ds.X_train[:rows], ds.y_train[:rows]])
        self.preview.setColumnCount(len(names))
        self.preview.setRowCount(data.shape[0])
        self.preview.setHorizontalHeaderLabels([*names[:-1], f"{names[-1]} (target)"])
        for i in range(data.shape[0]):
            for j in range(data.shape[1]):
                self.preview.setItem(i, j, QtWidgets.QTableWidgetItem(f"{data[i, j]:.4g}"))
        self.preview.resizeColumnsToContents()

    @QtCore.Slot(int, str)
    def _load_failed(self, token: int, message: str) -> None:
        if token != self._token:
            return
        self._pending = None
        self._show_error(message)

    def _show_error(self, message: str) -> None:
        kept = (f"<br>Still using: {html.escape(self._loaded[0])}"
                if self.dataset is not None else "")
        self.status.setStyleSheet("color: #B00020;")
        self.status.setText(f"<b>Could not load the data.</b> {html.escape(message)}{kept}")


def _flag(value: Any) -> bool:
    """A yes/no option from a spec or session: ``false``, ``0``, ``no`` are false."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no", "off", "")
    return bool(value)


def _same(value: Any, default: Any) -> bool:
    if default is None:
        return value in (None, "auto")
    try:
        return float(value) == float(default)
    except (TypeError, ValueError):
        return str(value) == str(default)
