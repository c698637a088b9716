"""The Experiment panel: the experiment chooser, its parameter form, the plan line (memory
and time before Run), Run / Cancel, progress and status — bound to the lab model."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from PySide6 import QtCore, QtWidgets

from kernel_lab.experiments import Experiment, list_experiments
from kernel_lab.gui.forms import ParamForm
from kernel_lab.model import LabModel, Plan, RunState

PREVIEW_DELAY_MS = 40   # theory curves follow the widgets after this pause


def plan_text(plan: Plan) -> str:
    """The plan line as rich text (red when the parameters are invalid or too large)."""
    if plan.error:
        return f"<span style='color:#B00020'>{html.escape(plan.error)}</span>"
    if not plan.budget_bytes:
        return ""
    text = (f"Planned memory ≈ {plan.memory_bytes / 2**20:,.0f} MB (budget "
            f"{plan.budget_bytes / 2**20:,.0f} MB).")
    if plan.note:
        text += f" {plan.note}."
    if plan.seconds is not None:
        lo, hi = plan.seconds_range or (plan.seconds, plan.seconds)
        text += f" Time {_span(lo, hi)}."
    if plan.too_large:
        return ("<span style='color:#B00020'><b>Too large:</b> " + html.escape(text)
                + " " + html.escape(plan.advice) + "</span>")
    return text


def _span(lo: float, hi: float) -> str:
    """``'1–3 s'``, ``'20 s – 2 min'``: a time range in readable units."""
    def one(t: float) -> tuple[str, str]:
        if t < 60:
            return (f"{t:.1f}" if t < 1 else f"{t:.2g}"), "s"
        if t < 3600:
            return f"{t / 60:.0f}" if t >= 600 else f"{t / 60:.2g}", "min"
        return (f"{t / 3600:.0f}" if t >= 36000 else f"{t / 3600:.2g}"), "h"
    (a, ua), (b, ub) = one(lo), one(hi)
    return f"{a}–{b} {ub}" if ua == ub else f"{a} {ua} – {b} {ub}"


class ExperimentPanel(QtWidgets.QWidget):
    """Chooser, form and run controls of the model's experiment.

    ``saved_values(name)`` gives the form values remembered for an experiment (the
    window's settings) when the user switches to it.
    """

    #: (experiment name, form values) just before the user switches to another experiment
    leaving = QtCore.Signal(str, dict)

    def __init__(self, model: LabModel, saved_values: Callable[[str], dict[str, Any]],
                 parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.saved_values = saved_values
        self.form: ParamForm | None = None
        col = QtWidgets.QVBoxLayout(self)
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
        self.use_rows = QtWidgets.QPushButton("")  # offered when the run would not fit
        self.use_rows.setVisible(False)
        self.use_rows.clicked.connect(lambda: model.use_rows(model.plan.fitting_rows))
        col.addWidget(self.use_rows)
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

        self._preview_timer = QtCore.QTimer(self, singleShot=True, interval=PREVIEW_DELAY_MS,
                                            timeout=model.refresh)
        self.experiment_box.currentIndexChanged.connect(self._chosen)
        self.run_button.clicked.connect(model.start_run)
        self.cancel_button.clicked.connect(model.cancel_run)
        model.experiment_changed.connect(self._experiment_changed)
        model.params_replaced.connect(self._params_replaced)
        model.inputs_changed.connect(self._preview_timer.start)
        # the plan once more a few seconds after a load (its speed probe then runs on a
        # machine no longer busy with the load or the worker's start)
        self._plan_timer = QtCore.QTimer(self, singleShot=True, interval=4000,
                                         timeout=model.refresh_plan)
        model.data_loaded.connect(lambda _ds: self._plan_timer.start())
        model.plan_changed.connect(self._plan_changed)
        model.state_changed.connect(self._state_changed)
        model.progressed.connect(self._progressed)
        model.status.connect(self.status.setText)

    def _plan_changed(self, plan: Plan) -> None:
        self.estimate.setText(plan_text(plan))
        self.use_rows.setVisible(plan.too_large and plan.fitting_rows > 0)
        self.use_rows.setText(f"Use a random {plan.fitting_rows:,} rows of the data")

    def _chosen(self) -> None:
        name = self.experiment_box.currentData()
        if name != self.model.experiment.name or self.form is None:
            if self.form is not None:
                self.leaving.emit(self.model.experiment.name, self.form.values())
            self.model.set_experiment(name, self.saved_values(name))

    def _experiment_changed(self, exp: Experiment) -> None:
        idx = self.experiment_box.findData(exp.name)
        if idx != self.experiment_box.currentIndex():
            self.experiment_box.blockSignals(True)
            self.experiment_box.setCurrentIndex(idx)
            self.experiment_box.blockSignals(False)
        self.form = ParamForm(exp.param_specs())
        self.form.set_values(self.model.values)
        self.model.set_params(self.form.values())  # the full set, defaults included
        self.form.changed.connect(lambda: self.model.set_params(self.form.values()))
        self.form_holder.setWidget(self.form)

    def _params_replaced(self, values: dict[str, Any]) -> None:
        if self.form is not None:
            self.form.set_values(values)

    def _state_changed(self, state: RunState) -> None:
        running = state is RunState.RUNNING
        self.cancel_button.setEnabled(running)
        if state is not RunState.DONE:
            # a run starting, refused, failed or cancelled, or another experiment: the bar
            # shows no share of a run that is not going on (a refusal left it at 3 %)
            self.progress.setValue(0)

    def _progressed(self, fraction: float, text: str) -> None:
        self.progress.setValue(int(1000 * fraction))
        self.status.setText(text)
