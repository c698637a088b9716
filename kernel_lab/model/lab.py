"""The lab's state, without Qt: data source, experiment and parameters, one explicit run
state, the merged result table, pins and the plan.

The window binds its widgets to a :class:`LabModel` and holds no run state of its own; the
same model can be driven from a script or a test with no GUI at all. Runs are started
through a *launcher* (``launch(spec) -> RunHandle``: the window's
:class:`~kernel_lab.engine.handle.ProcessLauncher`, or
:class:`~kernel_lab.engine.handle.InlineLauncher`), data are loaded by a *loader*, a
:class:`~kernel_lab.engine.worker.Worker` computing :func:`load_source` (a thread in the
window, inline by default). Both are the one worker primitive: the latest request wins,
and late messages of a cancelled or superseded run or load never reach the model, as
their ticket drops them. The plan line is :mod:`kernel_lab.model.plan`'s.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core.errors import KernelLabError, name_controls
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import PartitionedData
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.data.source import DataSource
from kernel_lab.engine.dask_log import LogTail
from kernel_lab.engine.events import Event
from kernel_lab.engine.handle import RunHandle
from kernel_lab.engine.runner import RunResult
from kernel_lab.engine.session import Session
from kernel_lab.engine.spec import RunSpec
from kernel_lab.engine.worker import Job, Ticket, Worker
from kernel_lab.experiments import Experiment, PartialResult, get_experiment, list_experiments
from kernel_lab.experiments.plotspec import thin_table
from kernel_lab.model.columns import (
    TARGET,
    ColumnRow,
    column_rows,
    columns_of_data,
    columns_of_file,
    source_using,
)
from kernel_lab.model.plan import Plan, Planner

Table = dict[str, np.ndarray]
Launcher = Callable[[RunSpec], RunHandle]


class RunState(enum.Enum):
    """Where the lab's current run is."""

    IDLE = "idle"            # nothing run since the experiment was chosen
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass
class Pin:
    """Curves kept as a faded overlay to compare with later runs."""

    label: str
    table: Table


def load_source(job: Job) -> None:
    """Load ``job.request`` (a :class:`DataSource`): the compute function of the lab's
    loading :class:`~kernel_lab.engine.worker.Worker`. Emits ``progress(fraction,
    message)``, then ``finished(Dataset)`` — or ``finished(PartitionedData)`` for a Parquet
    folder or Zarr store too large to read whole, whose runs then keep it in its
    partitions — or ``failed(message, is_user_error)``; a superseded load stops at its next
    progress report."""
    try:
        dataset = job.request.open(progress=Progress(
            lambda f, m: job.emit("progress", f, m), job.superseded))
        dataset.first_rows()  # the preview's rows, read here (not on the GUI thread)
    except MemoryError:
        job.emit("failed", "the data do not fit in memory", False)
    else:
        job.emit("finished", dataset)


def _as_table(table: Mapping[str, Any]) -> Table:
    return {k: np.asarray(v, dtype=float) for k, v in table.items()}


class LabModel:
    """The state behind the window.

    Parameters
    ----------
    launch : callable
        ``launch(spec) -> RunHandle`` for each run.
    loader : Worker, optional
        Computes :func:`load_source` for each load; default: inline (in this thread).

    The events are plain callbacks (:class:`~kernel_lab.engine.events.Event`), each
    declared in ``__init__`` with what it carries.
    """

    def __init__(self, launch: Launcher, loader: Worker | None = None) -> None:
        self._launch = launch
        self.loader = loader or Worker(load_source, inline=True)
        self._load: Ticket | None = None  # the load in flight (or the last one)
        #: (Experiment) a new form and plots are needed
        self.experiment_changed: Event = Event()
        #: (dict) values set from outside the form (a session)
        self.params_replaced: Event = Event()
        #: () parameters or data changed: the preview is due (debounce it)
        self.inputs_changed: Event = Event()
        self.data_loading: Event = Event()    # (DataSource) a load starts
        self.data_progress: Event = Event()   # (fraction, message) of the load
        self.data_loaded: Event = Event()     # (Dataset)
        self.data_failed: Event = Event()     # (message) the data before stay in use
        self.load_cancelled: Event = Event()  # (message)
        self.state_changed: Event = Event()   # (RunState)
        self.progressed: Event = Event()      # (fraction, text) of the run
        self.table_changed: Event = Event()   # () the table to show changed
        self.run_started: Event = Event()     # () a run begins
        self.summaries_changed: Event = Event()  # (dict)
        self.pins_changed: Event = Event()    # ()
        self.plan_changed: Event = Event()    # (Plan)
        self.status: Event = Event()          # (str) one line for the status bar
        self.logged: Event = Event()          # (str) a line for the log
        self.session_applied: Event = Event()  # (Session)
        self.experiment: Experiment = list_experiments()[0]
        self.values: dict[str, Any] = {}
        self.use_default_data = True
        self.source: DataSource | None = None     # the data loaded (or being loaded)
        # the data last loaded successfully (kept in partitions when too large to read)
        self.dataset: Dataset | PartitionedData | None = None
        self.loaded_source: DataSource | None = None
        self.loading = False
        self.backend: tuple[str, str | None] = ("threads", None)
        self._dask_tail: LogTail | None = None
        self.state = RunState.IDLE
        self.handle: RunHandle | None = None
        self.table: Table = {}
        self.preview: Table | None = None
        self.summaries: dict[str, Any] = {}
        self.result: RunResult | None = None
        self.pins: list[Pin] = []
        self.title, self.about = "", ""
        self.plan = Plan()
        self.planner = Planner()
        #: How the place showing this model's messages names the data options they point
        #: to (:func:`~kernel_lab.core.errors.name_controls`): the window's widgets.
        self.controls: dict[str, str] = {}
        self._started = 0.0
        #: The columns of the file (or example) in use, for the Data panel's column list
        #: (:mod:`kernel_lab.model.columns`), and the source they were read for.
        self.file_columns: list[str] = []
        self._columns_of: DataSource | None = None

    # -- experiment and parameters -------------------------------------------------------
    def set_experiment(self, name: str, values: Mapping[str, Any] | None = None) -> None:
        """Choose the experiment (its results so far are dropped) with form ``values``."""
        self.cancel_run()
        self.experiment = get_experiment(name)
        self.values = dict(values or {})
        self.table, self.preview, self.summaries, self.result = {}, None, {}, None
        self.title, self.about = "", ""
        self.pins = []
        self._set_state(RunState.IDLE)
        self.experiment_changed.emit(self.experiment)
        self.summaries_changed.emit({})
        self.pins_changed.emit()
        self.table_changed.emit()
        if self.use_default_data:
            self.load_data(DataSource.from_spec(self.experiment.default_data))
        else:
            self.inputs_changed.emit()

    def set_params(self, values: Mapping[str, Any]) -> None:
        """The form's values changed."""
        was_stale = self.stale
        self.values = dict(values)
        if self.stale and not was_stale:
            self.status.emit("Parameters changed: the results shown are from the last run "
                             "(theory curves follow the new values). Run to update.")
        self.inputs_changed.emit()

    def resolved_params(self) -> dict[str, Any]:
        """The parameters checked by the experiment (raises ParameterError)."""
        return self.experiment.resolve(self.values)

    @property
    def stale(self) -> bool:
        """A finished result is shown but the parameters are no longer those it ran with."""
        if self.state is not RunState.DONE or self.result is None:
            return False
        try:
            return self.resolved_params() != self.result.params
        except KernelLabError:
            return True

    # -- data ----------------------------------------------------------------------------
    def drop_pending_load(self) -> None:
        """Forget a load still in flight: its answer is ignored (the window closing, whose
        widgets would otherwise receive it after they are gone)."""
        if self._load is not None:
            self._load.cancel()
        self.loading = False

    def load_data(self, source: DataSource) -> None:
        """Load ``source`` (latest request wins); the data loaded before stay in use until
        it succeeds, and stay if it fails."""
        self.source, self.loading = source, True
        same = self._columns_of is not None and (self._columns_of.kind, self._columns_of.name) \
            == (source.kind, source.name)
        if not same:  # a new file: its first line's columns until it has loaded
            self.file_columns = columns_of_file(source)
        self._columns_of = source  # the list shows (and edits) the choice asked for
        self.data_loading.emit(source)
        self._load = self.loader.prepare(
            source, receive=lambda kind, *payload: self._load_message(source, kind, *payload))
        self._load.start()

    def _load_message(self, source: DataSource, kind: str, *payload: Any) -> None:
        """A message of the current load (its ticket dropped those of older loads)."""
        if kind == "progress":
            self.data_progress.emit(*payload)
        elif kind == "finished":
            dataset: Dataset | PartitionedData = payload[0]
            self.loading, self.dataset, self.loaded_source = False, dataset, source
            if source.kind != "generator":
                self.file_columns = columns_of_data(dataset, source)
            s = dataset.summary()
            self.logged.emit(f"data loaded: {s['name']} (n = {s['n_train']} + "
                             f"{s['n_test']}, p = {s['p']})")
            for warning in s.get("warnings", []):
                self.logged.emit(f"warning: {name_controls(warning, self.controls)}")
            self.data_loaded.emit(dataset)
            self.inputs_changed.emit()
        elif kind == "failed":
            # the data loaded before stay in use; with none, runs keep the failed source
            # (and fail with its message) rather than silently use other data
            self.loading, self.source = False, self.loaded_source or source
            self.data_failed.emit(name_controls(payload[0], self.controls))

    def column_rows(self) -> list[ColumnRow]:
        """The Data panel's column list: each column of the file last asked for and its
        role (target, feature, left out) under that request's options — also when it
        failed to load, so that the column stopping it can be left out."""
        source = self._columns_of
        if source is None or source.kind == "generator" or not self.file_columns:
            return []
        loaded = self.dataset if self.loaded_source is not None and \
            (self.loaded_source.kind, self.loaded_source.name, self.loaded_source.options
             .get("target")) == (source.kind, source.name, source.options.get("target")) \
            else None
        return column_rows(source, self.file_columns,
                           None if loaded is None else loaded.target_name)

    def use_column(self, name: str, used: bool) -> None:
        """Use the column ``name`` as a feature or leave it out (the source's
        ``features`` / ``drop_columns`` options), and load the data so chosen."""
        source = self._columns_of
        rows = {r.name: r for r in self.column_rows()}
        if source is None or name not in rows or rows[name].role == TARGET \
                or rows[name].used == used:
            return
        self.load_data(source_using(source, self.file_columns, name, used))

    def cancel_load(self) -> None:
        """Stop the load in flight: its reader stops at its next progress report, its
        answer is ignored, and the data loaded before stay in use."""
        if not self.loading:
            return
        if self._load is not None:
            self._load.cancel()  # its reader stops at its next report
        cancelled = self.source
        self.loading, self.source = False, self.loaded_source or self.source
        kept = (f"; still using {self.loaded_source.label()}"
                if self.loaded_source is not None and self.dataset is not None else "")
        self.logged.emit(f"loading {cancelled.label() if cancelled else 'the data'} "
                         f"cancelled{kept}")
        self.load_cancelled.emit(f"Loading cancelled{kept}.")

    @property
    def fresh_result(self) -> RunResult | None:
        """The result of the last run if it finished (None while running, after a
        cancel or a failure)."""
        return self.result if self.state is RunState.DONE else None

    def run_source(self) -> DataSource:
        """The data a run started now uses: those being loaded, else the last loaded,
        else the experiment's default."""
        return self.source or DataSource.from_spec(self.experiment.default_data)

    # -- plan and preview ----------------------------------------------------------------
    def refresh(self) -> None:
        """Recompute the plan and the theory preview for the current inputs (the window
        calls it a moment after the last change)."""
        try:
            params = self.resolved_params()
        except KernelLabError as exc:
            self.plan = Plan(error=str(exc))
            self.plan_changed.emit(self.plan)
            return
        self._update_plan(params)
        ds = self.dataset
        try:
            # a preview reads every training row at once; none for data kept in partitions
            preview = (None if ds is None or not ds.in_memory
                       else self.experiment.preview(params, ds))
        except KernelLabError:
            preview = None
        if preview is None and self.preview is None:
            return
        self.preview = None if preview is None else _as_table(preview)
        self.table_changed.emit()

    def refresh_plan(self) -> None:
        """Recompute the plan alone (the window asks again a few seconds after a load: a
        speed probe taken while the machine was still busy with it is then replaced).
        Not while a run is going on: the probe would time the machine busy with the run
        (and take the window's thread for it); a finished run teaches the planner its
        speed anyway."""
        if self.running:
            return
        try:
            self._update_plan(self.resolved_params())
        except KernelLabError as exc:
            self.plan = Plan(error=str(exc))
            self.plan_changed.emit(self.plan)

    def _update_plan(self, params: Mapping[str, Any]) -> None:
        self.plan = self.planner.plan(self.experiment, params, self.dataset,
                                      self.loaded_source, self.loading)
        self.plan_changed.emit(self.plan)

    def use_rows(self, rows: int) -> None:
        """Load a seeded random ``rows`` of the current table (the one-click way forward
        when a run is too large)."""
        if self.loaded_source is None or self.loaded_source.kind == "generator":
            return
        self.load_data(self.loaded_source.with_options(subsample=int(rows)))

    def shown_table(self) -> Table:
        """The run's table, with the preview's theory columns laid over it when both use
        the same x grid, or the preview alone before any run."""
        if self.preview is None:
            return self.table
        if not self.table:
            return self.preview
        x = self.experiment.plots[0].x if self.experiment.plots else ""
        a, b = self.table.get(x), self.preview.get(x)
        if a is not None and b is not None and a.shape == b.shape and np.allclose(a, b):
            return {**self.table, **self.preview}
        return self.table if self.state is RunState.RUNNING else self.preview

    # -- runs ----------------------------------------------------------------------------
    def run_spec(self) -> RunSpec:
        """What Run would start now (raises ParameterError for invalid parameters)."""
        backend, scheduler = self.backend
        return RunSpec(self.experiment.name, self.resolved_params(), self.run_source(),
                       workers=None, backend=backend, scheduler=scheduler)  # as the CLI

    def start_run(self) -> RunHandle | None:
        """Start a run of the current settings; a run in progress is cancelled first.
        Returns its handle, or None (with a status message) when the parameters are
        invalid."""
        self.cancel_run()
        try:
            spec = self.run_spec()
        except KernelLabError as exc:
            message = name_controls(str(exc), self.controls)
            self._set_state(RunState.FAILED)  # refused before it started: still a failure
            self.status.emit(f"Cannot run: {message}")
            self.logged.emit(f"cannot run: {message}")
            return None
        handle = self._launch(spec)
        self.planner.run_started(handle.run_id, spec.experiment, self._planned_flops(spec))
        handle.progressed.connect(self._on_progress)
        handle.partial_arrived.connect(self._on_partial)
        handle.finished.connect(lambda result: self._on_finished(handle, result))
        handle.failed.connect(lambda message, user: self._on_failed(handle, message, user))
        handle.cancelled.connect(lambda killed: self._on_cancelled(handle, killed))
        self.handle = handle
        # Dask's own log goes to a file, not the terminal: what a run on a cluster adds
        # to it is shown in the Log when the run ends
        self._dask_tail = LogTail() if self.backend[0] == "dask" else None
        self.table, self.summaries = {}, {}  # the last finished result stays for exports
        self._started = time.monotonic()
        self._set_state(RunState.RUNNING)
        self.run_started.emit()
        self.table_changed.emit()
        self.summaries_changed.emit({})
        self.status.emit("Starting…")
        self.logged.emit(f"run {handle.run_id}: {spec.experiment} on "
                         f"{spec.data_source().to_spec()} (seed {spec.seed})")
        handle.start()
        return handle

    def _planned_flops(self, spec: RunSpec) -> float | None:
        ds = self.dataset
        if ds is None or spec.data_source() != self.loaded_source:
            return None  # its data are not the loaded ones: n unknown here
        try:
            flops = self.experiment.estimate(spec.params, ds.n_train, ds.p).get("flops")
        except KernelLabError:
            return None
        return float(flops) if flops else None

    def cancel_run(self) -> None:
        if self.state is not RunState.RUNNING or self.handle is None:
            return
        self.handle.cancel()
        self.logged.emit(f"run {self.handle.run_id}: cancelled")
        self._set_state(RunState.CANCELLED)
        self.status.emit("Cancelled.")

    @property
    def running(self) -> bool:
        return self.state is RunState.RUNNING

    def _set_state(self, state: RunState) -> None:
        if state is not self.state:
            self.state = state
            self.state_changed.emit(state)

    def _on_progress(self, fraction: float, message: str) -> None:
        elapsed = time.monotonic() - self._started
        eta = ""
        if 0.05 < fraction < 1.0 and elapsed > 1.0:
            eta = f" — about {elapsed * (1 - fraction) / fraction:.0f} s left"
        self.progressed.emit(fraction, f"{message}{eta}")

    def _on_partial(self, partial: PartialResult) -> None:
        if partial.table is not None:
            self.table = _as_table(partial.table)
            self.table_changed.emit()
        if partial.summaries is not None:
            self.summaries = dict(partial.summaries)
            self.summaries_changed.emit(self.summaries)

    def _log_dask_records(self, handle: RunHandle) -> None:
        """The warnings and errors Dask logged during the run (to its file), in the Log."""
        tail, self._dask_tail = self._dask_tail, None
        if tail is None:
            return
        lines, more = tail.new_records()
        for line in lines:
            self.logged.emit(f"run {handle.run_id}: dask: {line}")
        if more:
            self.logged.emit(f"run {handle.run_id}: dask: {more} more in {tail.path}")

    def _on_finished(self, handle: RunHandle, result: RunResult) -> None:
        self._log_dask_records(handle)
        for warning in result.data.get("warnings", []):  # read before trusting the result
            self.logged.emit(f"run {handle.run_id}: warning: "
                             f"{name_controls(warning, self.controls)}")
        self.table = _as_table(result.table)
        self.summaries, self.result = dict(result.summaries), result
        total = result.timings.get("total_s", 0.0)
        self.planner.run_finished(handle.run_id, result.experiment, total,
                                  int(result.data.get("n_train", 1)))
        self._set_state(RunState.DONE)
        self.table_changed.emit()
        self.summaries_changed.emit(self.summaries)
        self.progressed.emit(1.0, f"Done in {total:.2f} s.")
        self.status.emit(f"Done in {total:.2f} s.")
        self.logged.emit(f"run {handle.run_id}: done in {total:.2f} s")
        self.inputs_changed.emit()

    def _on_failed(self, handle: RunHandle, message: str, user_error: bool) -> None:
        self._log_dask_records(handle)
        text = (("Cannot run: " if user_error else "The run failed: ")
                + name_controls(message, self.controls))
        self._set_state(RunState.FAILED)
        self.status.emit(text)
        self.logged.emit(f"run {handle.run_id}: {text}")

    def _on_cancelled(self, handle: RunHandle, killed: bool) -> None:
        if killed:
            self.logged.emit(f"run {handle.run_id}: stopped inside a long computation; "
                             "worker restarted")

    # -- pins ----------------------------------------------------------------------------
    def pin(self) -> Pin | None:
        """Keep the current curves as a faded overlay (None when there is nothing yet)."""
        if not self.table:
            self.status.emit("Nothing to pin yet: run the experiment first.")
            return None
        label = f"run {self.handle.run_id}" if self.handle is not None else "pinned"
        pin = Pin(label, thin_table(self.table))  # copies, at most PIN_MAX_POINTS rows
        self.pins.append(pin)
        self.pins_changed.emit()
        return pin

    def clear_pins(self) -> None:
        self.pins = []
        self.pins_changed.emit()

    # -- sessions ------------------------------------------------------------------------
    def to_session(self) -> Session:
        """The current state as a session (raises ParameterError for invalid values)."""
        spec = RunSpec(self.experiment.name, self.resolved_params(),
                       self.loaded_source or self.source)
        pinned = [{"label": p.label, "table": p.table} for p in self.pins]
        return Session(spec, self.title, self.about, pinned)

    def apply_session(self, session: Session) -> None:
        """Restore a session: experiment, parameters, data and pins."""
        spec = session.spec
        self.use_default_data = spec.data is None
        self.set_experiment(spec.experiment, spec.params)
        self.params_replaced.emit(dict(spec.params))
        if spec.data is not None:
            self.load_data(spec.data)
        self.pins = [Pin(str(p.get("label", "")), thin_table(p["table"]))
                     for p in session.pinned]
        self.pins_changed.emit()
        self.title, self.about = session.title, session.about
        self.session_applied.emit(session)
        self.logged.emit(f"session: {session.title or spec.experiment}")
