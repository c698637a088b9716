"""The Data panel: a generator (with its parameters), a bundled example, or a file (open
dialog, target column, preview, summary). It describes a
:class:`~kernel_lab.data.source.DataSource` and asks the lab model to load it; loading
runs on the window's loader thread (the model's :class:`~kernel_lab.engine.worker.Worker`);
an error is shown in the panel in plain words
and the previously loaded data stay in use."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import shiboken6
from PySide6 import QtCore, QtWidgets

from kernel_lab.core.errors import KernelLabError, name_controls
from kernel_lab.core.rows import PartitionedData
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.data.examples import EXAMPLES
from kernel_lab.data.generators import GENERATORS
from kernel_lab.data.read import FILE_PATTERNS, peek_rows
from kernel_lab.data.source import DataSource
from kernel_lab.gui.forms import ParamForm
from kernel_lab.model import LabModel
from kernel_lab.model.columns import TARGET

FILE_FILTER = f"Data files ({' '.join(FILE_PATTERNS)});;All files (*)"
SOURCES = ("Generator", "Example", "File")
KINDS = ("generator", "example", "file")
#: The labels of the widgets a message may point to (the widgets are made with them).
DROP_NAN_LABEL = "Drop rows with missing values"
KEEP_INDEX_LABEL = "Keep a row-index first column"
#: The widget of each data option a message may point to (see
#: :func:`~kernel_lab.core.errors.name_controls`): messages in the window name these,
#: never a command-line flag.
WINDOW_CONTROLS = {
    "drop_nan": f"tick '{DROP_NAN_LABEL}' in the Data panel",
    "keep_index": f"tick '{KEEP_INDEX_LABEL}' in the Data panel",
    "subsample": "'Rows' in the Data panel",
    "target": "'Target' in the Data panel",
    "text_features": "'Text columns' in the Data panel set to {value}",
    "sheet": "'Sheet' in the Data panel",
    "test_fraction": "'Test fraction' in the Data panel",
    "drop_columns": "untick {value} in the Data panel's column list",
    "features": "tick only {value} in the Data panel's column list",
}
#: The colour of a warning about the data (target leakage) in the panel's status.
WARNING_COLOUR = "#B35900"


class DataPanel(QtWidgets.QWidget):
    """Describe the data in widgets and have ``model`` load them."""

    def __init__(self, model: LabModel, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        model.controls = WINDOW_CONTROLS  # its messages name this panel's widgets
        self._format = "auto"  # a file's format option, kept from a session or spec
        # a file's chosen and dropped columns (the column list's state, kept in the source)
        self._columns: dict[str, Any] = {}
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
        self.path.setPlaceholderText("CSV, TSV, Excel .xlsx, NPY/NPZ, svmlight, ARFF or MAT")
        self.browse = QtWidgets.QPushButton("Browse…")
        prow.addWidget(self.path, 1)
        prow.addWidget(self.browse)
        fform.addRow("File", prow)
        self.target = QtWidgets.QComboBox()
        self.target.setEditable(True)
        self.target.lineEdit().setPlaceholderText("last column")
        self.target.setToolTip("the response column (header name or 0-based index)")
        fform.addRow("Target", self.target)
        self.drop_nan = QtWidgets.QCheckBox(DROP_NAN_LABEL)
        fform.addRow("", self.drop_nan)
        self.text_features = QtWidgets.QComboBox()
        self.text_features.addItem("one-hot encode", "onehot")
        self.text_features.addItem("drop", "drop")
        self.text_features.setToolTip(
            "text (category) columns: one 0/1 column per value, or left out; text with "
            "more than 50 values or one per row is left out either way (a note says so)")
        fform.addRow("Text columns", self.text_features)
        self.keep_index = QtWidgets.QCheckBox(KEEP_INDEX_LABEL)
        self.keep_index.setToolTip("R's row names, pandas' 'Unnamed: 0' or an id of 1 … n "
                                   "are dropped unless this is checked")
        fform.addRow("", self.keep_index)
        self.sheet = QtWidgets.QLineEdit()
        self.sheet.setPlaceholderText("first sheet")
        self.sheet.setToolTip("worksheet of an .xlsx file: its name or number")
        fform.addRow("Sheet", self.sheet)
        self.subsample = QtWidgets.QSpinBox()
        self.subsample.setRange(0, 100_000_000)
        self.subsample.setSingleStep(1000)
        self.subsample.setSpecialValueText("all rows")
        self.subsample.setToolTip("use this many random rows (seeded) — e.g. to run the "
                                  "exact methods on a table too large for them")
        fform.addRow("Rows", self.subsample)
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
        busy = QtWidgets.QHBoxLayout()
        self.load_progress = QtWidgets.QProgressBar()
        self.load_progress.setRange(0, 1000)
        self.load_progress.setTextVisible(True)
        self.cancel_load = QtWidgets.QPushButton("Cancel")
        self.cancel_load.setToolTip("stop loading; the data loaded before stay in use")
        busy.addWidget(self.load_progress, 1)
        busy.addWidget(self.cancel_load)
        self.busy = QtWidgets.QWidget()
        self.busy.setLayout(busy)
        busy.setContentsMargins(0, 0, 0, 0)
        self.busy.setVisible(False)
        col.addWidget(self.busy)
        self.status = QtWidgets.QLabel("No data loaded.")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        col.addWidget(self.status)
        self.preview = QtWidgets.QTableWidget(0, 0)
        self.preview.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.preview.verticalHeader().setVisible(False)
        self.preview.setMinimumHeight(90)
        # the file's columns beside the preview: untick one to leave it out
        self.column_list = QtWidgets.QListWidget()
        self.column_list.setToolTip(
            "the columns of the file: untick one to leave it out (e.g. a column derived "
            "from the target, or text); the target is not a feature")
        self.column_list.setMaximumWidth(190)
        beside = QtWidgets.QHBoxLayout()
        beside.addWidget(self.column_list)
        beside.addWidget(self.preview, 1)
        col.addLayout(beside, 1)

        self.source.currentIndexChanged.connect(self._source_changed)
        self.generator.currentIndexChanged.connect(self._generator_changed)
        self.browse.clicked.connect(self.browse_file)
        self.load_button.clicked.connect(self._user_load)
        self.cancel_load.clicked.connect(model.cancel_load)
        self.use_default.toggled.connect(self._use_default_toggled)
        self.column_list.itemChanged.connect(self._column_ticked)
        self._generator_changed()
        self._source_changed()
        model.data_loading.connect(self._loading)
        model.data_loaded.connect(self._loaded_ok)
        model.data_failed.connect(self._show_error)
        model.data_progress.connect(self._progressed)
        model.load_cancelled.connect(self._cancelled)
        model.session_applied.connect(
            lambda session: self.use_default.setChecked(model.use_default_data))

    # -- widgets ---------------------------------------------------------------------
    def _source_changed(self) -> None:
        idx = self.source.currentIndex()
        self.pages.setCurrentIndex(idx)
        for w in self.split_widgets:
            w.setEnabled(SOURCES[idx] != "Generator")

    def _generator_changed(self) -> None:
        if self.gen_form is not None:  # deleted now: deleteLater waits for an event loop
            shiboken6.delete(self.gen_form)  # that scripts calling processEvents never run
        self.gen_form = ParamForm(GENERATORS[self.generator.currentData()].params)
        self.gen_form_holder.addWidget(self.gen_form)

    def browse_file(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Open data", self.path.text(),
                                                        FILE_FILTER)
        self._open_path(path)

    def _open_path(self, path: str) -> None:
        """Load a file or folder the user picked (nothing when the dialog was cancelled)."""
        if path:
            self.source.setCurrentIndex(SOURCES.index("File"))
            self.path.setText(path)
            self._format = "auto"
            self._columns = {}
            self.target.clear()
            self._user_load()

    def browse_folder(self) -> None:
        """Pick a folder of Parquet files or a Zarr store (data that may not fit memory)."""
        path = QtWidgets.QFileDialog.getExistingDirectory(
            self, "Open a folder of Parquet files or a Zarr store", self.path.text())
        self._open_path(path)

    def _use_default_toggled(self, on: bool) -> None:
        self.model.use_default_data = on

    # -- specification ---------------------------------------------------------------
    def current_source(self) -> DataSource:
        """The data source the widgets describe (not necessarily loaded yet)."""
        kind = KINDS[self.source.currentIndex()]
        if kind == "generator":
            assert self.gen_form is not None
            defaults = {s.name: s.default for s in self.gen_form.specs}
            params = {k: v for k, v in self.gen_form.values().items()
                      if v != "auto" and not _same(v, defaults.get(k))}
            return DataSource(kind, self.generator.currentData(), params)
        options: dict[str, Any] = {"test_fraction": round(self.test_fraction.value(), 4),
                                   "standardize": self.standardize.isChecked()}
        if kind == "example":
            return DataSource(kind, self.example.currentData(), {}, options)
        target = self.target.currentText().strip()
        if target:
            options["target"] = target
        if self.drop_nan.isChecked():
            options["drop_nan"] = True
        if self._format != "auto":
            options["format"] = self._format
        if self.text_features.currentData() != "onehot":
            options["text_features"] = self.text_features.currentData()
        if self.keep_index.isChecked():
            options["keep_index"] = True
        if self.sheet.text().strip():
            options["sheet"] = self.sheet.text().strip()
        if self.subsample.value():
            options["subsample"] = self.subsample.value()
        options.update(self._columns)
        return DataSource(kind, self.path.text().strip(), {}, options)

    def set_spec(self, spec: str, options: dict[str, Any] | None = None) -> None:
        """Load the data of a text specification (``gaussian:n=200``, a file); a
        malformed one is shown in the panel."""
        try:
            source = DataSource.from_spec(spec, options)
        except KernelLabError as exc:
            self._show_error(str(exc))
            return
        self.model.load_data(source)

    def set_source(self, doc: dict[str, Any]) -> None:
        """Load a source in :meth:`DataSource.to_dict` form (saved settings)."""
        try:
            source = DataSource.from_dict(doc)
        except KernelLabError as exc:
            self._show_error(str(exc))
            return
        self.model.load_data(source)

    def show_source(self, source: DataSource) -> None:
        """Show ``source`` in the widgets."""
        self.source.setCurrentIndex(KINDS.index(source.kind))
        if source.kind == "generator":
            self.generator.setCurrentIndex(self.generator.findData(source.name))
            assert self.gen_form is not None
            self.gen_form.set_values(dict(source.params))
            return
        opts = source.options
        if source.kind == "example":
            self.example.setCurrentIndex(self.example.findData(source.name))
        else:
            self.path.setText(source.name)
            self._columns = {k: opts[k] for k in ("features", "drop_columns") if opts.get(k)}
            self.target.setEditText(str(opts.get("target", "")))
            self.drop_nan.setChecked(_flag(opts.get("drop_nan", False)))
            self._format = str(opts.get("format", "auto"))
            self.text_features.setCurrentIndex(
                max(0, self.text_features.findData(str(opts.get("text_features", "onehot")))))
            self.keep_index.setChecked(_flag(opts.get("keep_index", False)))
            self.sheet.setText(str(opts.get("sheet", "")))
            try:
                self.subsample.setValue(int(opts.get("subsample", 0)))
            except (TypeError, ValueError):
                self.subsample.setValue(0)
        try:
            self.test_fraction.setValue(float(opts.get("test_fraction", 0.25)))
        except (TypeError, ValueError):
            pass  # left as it was; loading will name the problem
        self.standardize.setChecked(_flag(opts.get("standardize", True)))

    # -- loading ---------------------------------------------------------------------
    def _user_load(self) -> None:
        self.use_default.setChecked(False)
        self.load()

    def load(self) -> None:
        """Load what the widgets describe."""
        source = self.current_source()
        if not source.name:
            self._show_error("no file chosen: use Browse… to pick one")
            return
        self.model.load_data(source)

    @property
    def loading(self) -> bool:
        return self.model.loading

    @property
    def dataset(self) -> Dataset | None:
        return self.model.dataset

    def _loading(self, source: DataSource) -> None:
        if source != self.current_source():
            self.show_source(source)
        self._fill_columns()
        self.status.setText(f"Loading {_breakable(source.to_spec())} …")
        self.status.setStyleSheet("")
        self.load_progress.setValue(0)
        self.load_progress.setFormat("starting")
        # shown only when loading takes a moment (no flicker for small data)
        QtCore.QTimer.singleShot(150, self._show_busy)
        if source.kind == "file":  # the file's first rows, at once, while it loads
            head = peek_rows(source.name)
            if head is not None:
                self._fill_cells(*head)
                self.preview.setToolTip("the first rows of the file, as written (loading …)")

    def _show_busy(self) -> None:
        self.busy.setVisible(self.model.loading)

    def _progressed(self, fraction: float, message: str) -> None:
        self.load_progress.setValue(round(1000 * fraction))
        self.load_progress.setFormat(f"{100 * fraction:.0f} % — {message}")

    def _done_loading(self) -> None:
        self.busy.setVisible(False)

    def _restore_preview(self) -> None:
        """The preview of the data in use again (a failed or cancelled load showed its
        file's first rows), or none."""
        if self.dataset is not None:
            self._fill_preview(self.dataset)
        else:
            self.preview.clear()
            self.preview.setRowCount(0)
            self.preview.setColumnCount(0)
            self.preview.setToolTip("")

    def _cancelled(self, message: str) -> None:
        self._done_loading()
        self._fill_columns()
        self.status.setStyleSheet("")
        self.status.setText(html.escape(message))
        self._restore_preview()

    def _loaded_ok(self, ds: Dataset | PartitionedData) -> None:
        self._done_loading()
        self._fill_columns()
        s = ds.summary()
        # warnings first: above the notes, where they are seen
        notes = "".join(f'<br><span style="color: {WARNING_COLOUR};"><b>warning:</b> '
                        f"{html.escape(name_controls(w, WINDOW_CONTROLS))}</span>"
                        for w in s.get("warnings", []))
        notes += "".join(f"<br>note: {html.escape(name_controls(n, WINDOW_CONTROLS))}"
                         for n in s["notes"])
        self.status.setStyleSheet("")
        if not ds.in_memory:
            where = (f"kept in {s['partitions']} partitions (too large to read whole: an "
                     "experiment that needs every row at once reads them when they fit in "
                     "memory, else use a seeded sample — 'Rows')")
        else:
            where = (f"from {s['target_min']:.4g} to {s['target_max']:.4g}")
        self.status.setText(
            f"<b>{_breakable(str(s['name']))}</b>: n = {s['n_train']} training + "
            f"{s['n_test']} test points, p = {s['p']} features; target "
            f"“{html.escape(str(s['target']))}” {where} ({s['task']}){notes}")
        if self.source.currentText() == "File":
            self._fill_targets(ds)
        self._fill_preview(ds)

    def _fill_targets(self, ds: Dataset | PartitionedData) -> None:
        current = self.target.currentText()
        self.target.blockSignals(True)
        self.target.clear()
        # the file's own columns (a text column once, not its one-hot parts)
        self.target.addItems(getattr(ds, "columns", None)
                             or [*ds.feature_names, ds.target_name])
        self.target.setEditText(current or ds.target_name)
        self.target.blockSignals(False)

    def _fill_columns(self) -> None:
        """The column list as the model has it: each column ticked when used, the target
        ticked, marked and not to be unticked."""
        self.column_list.blockSignals(True)
        self.column_list.clear()
        for row in self.model.column_rows():
            item = QtWidgets.QListWidgetItem(row.name if row.role != TARGET
                                             else f"{row.name} (target)")
            item.setData(QtCore.Qt.ItemDataRole.UserRole, row.name)
            Flag = QtCore.Qt.ItemFlag
            if row.role == TARGET:
                item.setFlags(Flag.ItemIsEnabled)
                item.setToolTip("the target: choose another with 'Target'")
            else:
                item.setFlags(Flag.ItemIsEnabled | Flag.ItemIsUserCheckable)
            item.setCheckState(QtCore.Qt.CheckState.Checked if row.used
                               else QtCore.Qt.CheckState.Unchecked)
            self.column_list.addItem(item)
        self.column_list.blockSignals(False)

    def _column_ticked(self, item: QtWidgets.QListWidgetItem) -> None:
        """A column ticked or unticked: the model uses it or leaves it out, and loads."""
        self.use_default.setChecked(False)
        self.model.use_column(item.data(QtCore.Qt.ItemDataRole.UserRole),
                              item.checkState() == QtCore.Qt.CheckState.Checked)

    def _fill_preview(self, ds: Dataset | PartitionedData, rows: int = 8) -> None:
        names = [*ds.feature_names, ds.target_name]
        head = ds.first_rows(rows)  # views in memory; read by the load for partitions
        data = np.column_stack([head.X, head.y])
        self._fill_cells([*names[:-1], f"{names[-1]} (target)"],
                         [[f"{v:.4g}" for v in row] for row in data])
        self.preview.setToolTip("the first training rows, as the methods see them")

    def _fill_cells(self, names: list[str], rows: list[list[str]]) -> None:
        self.preview.clear()
        self.preview.setColumnCount(len(names))
        self.preview.setRowCount(len(rows))
        self.preview.setHorizontalHeaderLabels(names)
        for i, row in enumerate(rows):
            for j, cell in enumerate(row[: len(names)]):
                self.preview.setItem(i, j, QtWidgets.QTableWidgetItem(cell))
        self.preview.resizeColumnsToContents()

    def _show_error(self, message: str) -> None:
        self._done_loading()
        self._fill_columns()
        self._restore_preview()
        loaded = self.model.loaded_source
        kept = (f"<br>Still using: {_breakable(loaded.to_spec())}"
                if self.dataset is not None and loaded is not None else "")
        self.status.setStyleSheet("color: #B00020;")
        message = name_controls(message, WINDOW_CONTROLS)
        self.status.setText(f"<b>Could not load the data.</b> {html.escape(message)}{kept}")


def _breakable(text: str) -> str:
    """HTML of a specification that may wrap after its commas and slashes (a long
    ``gaussian:n=…,p=…`` or a path would otherwise widen the panel)."""
    return html.escape(text).replace(",", ",\u200b").replace("/", "/\u200b")


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
