"""The lab's state, without Qt: data source, experiment and parameters, one explicit run
state, the merged result table, pins and the plan.

The window binds its widgets to a :class:`LabModel` and holds no run state of its own; the
same model can be driven from a script or a test with no GUI at all. Runs are started
through a *launcher* (``launch(spec) -> RunHandle``: the window's worker-process relay, or
:class:`~kernel_lab.engine.handle.InlineLauncher`), data are loaded through a *loader*
(``load(source, done, failed)``: a pool thread in the window, inline by default). Late
results of a cancelled or superseded run never reach the model: its handle drops them.
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core.dataset import Dataset
from kernel_lab.core.errors import KernelLabError, name_controls
from kernel_lab.core.memory import memory_budget_bytes
from kernel_lab.core.progress import Cancelled, Progress
from kernel_lab.data.source import DataSource
from kernel_lab.engine.events import Event
from kernel_lab.engine.handle import RunHandle
from kernel_lab.engine.runner import RunResult
from kernel_lab.engine.session import Session
from kernel_lab.engine.spec import RunSpec
from kernel_lab.experiments import Experiment, PartialResult, get_experiment, list_experiments

Table = dict[str, np.ndarray]
Launcher = Callable[[RunSpec], RunHandle]
Loader = Callable[[DataSource, Callable[[Dataset], None], Callable[[str], None], "LoadWatch"],
                  None]


@dataclass(frozen=True)
class LoadWatch:
    """What a loader is given besides ``done`` and ``failed``: ``report(fraction,
    message)`` to call on the model's thread as the load goes on, and ``cancelled()``, which
    any thread may ask (the user cancelled, or a newer load replaced this one)."""

    report: Callable[[float, str], None]
    cancelled: Callable[[], bool]


class RunState(enum.Enum):
    """Where the lab's current run is."""

    IDLE = "idle"            # nothing run since the experiment was chosen
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: Finished runs per experiment kept for the time estimate.
TIME_HISTORY = 6
#: The rows offered when a run is too large also keep the run under this many seconds.
OFFER_SECONDS = 120.0


def fit_time(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """``(a, b)`` of t = a + b·flops through finished runs (flops, seconds): least
    squares with a, b ≥ 0 when their flops differ, else a quarter of the one time fixed
    and the rest proportional to the flops."""
    f = np.array([r[0] for r in runs], dtype=np.float64)
    t = np.array([r[1] for r in runs], dtype=np.float64)
    if len(runs) >= 2 and f.max() > 1.5 * f.min():
        b, a = np.polyfit(f, t, 1)
        if a >= 0 and b > 0:
            return float(a), float(b)
        if b > 0:
            return 0.0, float(np.sum(f * t) / np.sum(f * f))
    a = 0.25 * float(np.median(t))
    return a, max(float(np.median(t)) - a, 1e-9) / float(np.median(f))


@dataclass(frozen=True)
class Plan:
    """What a run of the current settings will need, shown before Run."""

    memory_bytes: float = 0.0
    budget_bytes: float = 0.0
    note: str = ""
    seconds: float | None = None
    error: str = ""          # the parameters are invalid: why
    #: The estimate as a range (low, high) in seconds: wide before this machine has run
    #: the experiment, narrower once finished runs have calibrated it.
    seconds_range: tuple[float, float] | None = None
    #: When too large and the data are a table: how many of its rows would fit (offered as
    #: a one-click ``subsample``), else 0.
    fitting_rows: int = 0

    @property
    def too_large(self) -> bool:
        return self.memory_bytes > self.budget_bytes > 0

    @property
    def advice(self) -> str:
        """What to do when the run is too large."""
        if not self.too_large:
            return ""
        rows = f", e.g. a random {self.fitting_rows:,} rows" if self.fitting_rows else ""
        return ("An exact kernel matrix would not fit; use fewer points" + rows +
                ", or an approximate method (Nyström or random features).")


def rows_that_fit(experiment: Experiment, params: Mapping[str, Any], ds: Dataset,
                  budget: float,
                  seconds: Callable[[Mapping[str, Any], int], float | None] | None = None
                  ) -> int:
    """How many rows of the table ``ds`` (training and test) a run of ``experiment`` with
    ``params`` can use: its estimate fits in 90 % of ``budget`` and, by ``seconds(estimate,
    n_train)``, it takes at most :data:`OFFER_SECONDS` (or has at most 1000 training
    points); 0 when no size does. Shrinks the training size by 10 % steps from the
    n·√(budget / need) guess of an n² method until the estimate fits. The window offers
    these rows in one click, the command line names them (``--subsample N``)."""
    need = float(experiment.estimate(params, ds.n_train, ds.p).get("memory_bytes", 0))
    n = int(ds.n_train * math.sqrt(0.9 * budget / need)) if need > 0 else ds.n_train
    for _ in range(40):
        if n < 2:
            return 0
        try:
            est = experiment.estimate(params, n, ds.p)
            fits = float(est.get("memory_bytes", 0)) <= 0.9 * budget
            t = seconds(est, n) if fits and seconds is not None else None
            # about two minutes at most (or small anyway: a model fitted on long runs
            # can put its fixed part above that)
            fits = fits and (t is None or t <= OFFER_SECONDS or n <= 1000)
        except KernelLabError:
            fits = False
        if fits:
            share = ds.n_train / max(ds.n_train + ds.n_test, 1)  # training share of rows
            return max(2, int(n / share))
        n = int(0.9 * n)
    return 0


def uncalibrated_seconds(est: Mapping[str, Any], flops_per_second: float) -> float | None:
    """Seconds of a run by its estimated flops at ``flops_per_second`` before any run of
    its experiment has calibrated the time model (None: the estimate counts no flops)."""
    flops = est.get("flops")
    return 0.2 + float(flops) / flops_per_second if flops else None


def probe_flops_per_second() -> float:
    """15 % of the best of four 384×384 matrix products: what runs reach on this machine
    before any has been timed (the first product also starts the BLAS threads)."""
    a = np.random.default_rng(0).random((384, 384))
    best = math.inf
    for _ in range(4):
        t0 = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t0)
    return 0.15 * 2 * 384**3 / max(best, 1e-9)


@dataclass
class Pin:
    """Curves kept as a faded overlay to compare with later runs."""

    label: str
    table: Table


def inline_loader(source: DataSource, done: Callable[[Dataset], None],
                  failed: Callable[[str], None], watch: LoadWatch | None = None) -> None:
    """Load in this thread (scripts and tests)."""
    try:
        dataset = source.load(progress=None if watch is None else
                              Progress(watch.report, watch.cancelled))
    except Cancelled:
        return
    except KernelLabError as exc:
        failed(str(exc))
    except MemoryError:
        failed("the data do not fit in memory")
    else:
        done(dataset)


def _as_table(table: Mapping[str, Any]) -> Table:
    return {k: np.asarray(v, dtype=float) for k, v in table.items()}


class LabModel:
    """The state behind the window.

    Parameters
    ----------
    launch : callable
        ``launch(spec) -> RunHandle`` for each run.
    load : callable, optional
        ``load(source, done, failed)``; default: inline.

    Events (plain callbacks, see :class:`~kernel_lab.engine.events.Event`)
    ------
    experiment_changed(Experiment) — a new form and plots are needed;
    params_replaced(dict) — values set from outside the form (a session);
    inputs_changed() — parameters or data changed: the preview is due (debounce it);
    data_loading(DataSource), data_progress(fraction, message), data_loaded(Dataset),
    data_failed(str), load_cancelled(str);
    state_changed(RunState), progressed(fraction, text);
    table_changed() — the table to show changed; run_started() — a run begins;
    summaries_changed(dict); pins_changed(); plan_changed(Plan);
    status(str) — one line for the status bar; logged(str) — a line for the log;
    session_applied(Session).
    """

    def __init__(self, launch: Launcher, load: Loader = inline_loader) -> None:
        self._launch, self._load = launch, load
        for name in ("experiment_changed", "params_replaced", "inputs_changed",
                     "data_loading", "data_progress", "data_loaded", "data_failed",
                     "load_cancelled", "state_changed",
                     "progressed", "table_changed", "run_started", "summaries_changed",
                     "pins_changed", "plan_changed", "status", "logged", "session_applied"):
            setattr(self, name, Event())
        self.experiment: Experiment = list_experiments()[0]
        self.values: dict[str, Any] = {}
        self.use_default_data = True
        self.source: DataSource | None = None     # the data loaded (or being loaded)
        self.dataset: Dataset | None = None       # the data last loaded successfully
        self.loaded_source: DataSource | None = None
        self._load_token = 0
        self.loading = False
        self.backend: tuple[str, str | None] = ("threads", None)
        self.state = RunState.IDLE
        self.handle: RunHandle | None = None
        self.table: Table = {}
        self.preview: Table | None = None
        self.summaries: dict[str, Any] = {}
        self.result: RunResult | None = None
        self.pins: list[Pin] = []
        self.title, self.about = "", ""
        self.plan = Plan()
        #: How the place showing this model's messages names the data options they point
        #: to (:func:`~kernel_lab.core.errors.name_controls`): the window's widgets.
        self.controls: dict[str, str] = {}
        self._started = 0.0
        self._speed: float | None = None
        self._probed = -math.inf
        self._probed_loading = False
        self._runs: dict[str, list[tuple[float, float]]] = {}  # (flops, seconds) per run
        self._run_work: dict[int, tuple[str, float]] = {}     # the runs in progress
        self._last_times: dict[str, tuple[float, int]] = {}

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
        self._load_token += 1
        self.loading = False

    def load_data(self, source: DataSource) -> None:
        """Load ``source`` (latest request wins); the data loaded before stay in use until
        it succeeds, and stay if it fails."""
        self._load_token += 1
        token = self._load_token
        self.source, self.loading = source, True
        self.data_loading.emit(source)

        def done(dataset: Dataset) -> None:
            if token != self._load_token:
                return
            self.loading, self.dataset, self.loaded_source = False, dataset, source
            s = dataset.summary()
            self.logged.emit(f"data loaded: {s['name']} (n = {s['n_train']} + "
                             f"{s['n_test']}, p = {s['p']})")
            self.data_loaded.emit(dataset)
            self.inputs_changed.emit()

        def failed(message: str) -> None:
            if token != self._load_token:
                return
            # the data loaded before stay in use; with none, runs keep the failed source
            # (and fail with its message) rather than silently use other data
            self.loading, self.source = False, self.loaded_source or source
            self.data_failed.emit(name_controls(message, self.controls))

        def report(fraction: float, message: str) -> None:
            if token == self._load_token:
                self.data_progress.emit(fraction, message)

        self._load(source, done, failed,
                   LoadWatch(report, lambda: token != self._load_token))

    def cancel_load(self) -> None:
        """Stop the load in flight: its reader stops at its next progress report, its
        answer is ignored, and the data loaded before stay in use."""
        if not self.loading:
            return
        self._load_token += 1
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
            preview = None if ds is None else self.experiment.preview(params, ds)
        except KernelLabError:
            preview = None
        if preview is None and self.preview is None:
            return
        self.preview = None if preview is None else _as_table(preview)
        self.table_changed.emit()

    def refresh_plan(self) -> None:
        """Recompute the plan alone (the window asks again a few seconds after a load: a
        speed probe taken while the machine was still busy with it is then replaced)."""
        try:
            self._update_plan(self.resolved_params())
        except KernelLabError as exc:
            self.plan = Plan(error=str(exc))
            self.plan_changed.emit(self.plan)

    def _update_plan(self, params: Mapping[str, Any]) -> None:
        ds = self.dataset
        if ds is None:
            self.plan = Plan()
        else:
            est = self.experiment.estimate(params, ds.n_train, ds.p)
            budget = float(memory_budget_bytes())
            memory = float(est.get("memory_bytes", 0))
            timing = self._time_estimate(est, ds.n_train)
            self.plan = Plan(memory, budget, str(est.get("note", "")),
                             None if timing is None else timing[0],
                             fitting_rows=self._fitting_rows(params, ds, budget)
                             if memory > budget > 0 else 0,
                             seconds_range=None if timing is None else timing[1:])
        self.plan_changed.emit(self.plan)

    def _fitting_rows(self, params: Mapping[str, Any], ds: Dataset, budget: float) -> int:
        """:func:`rows_that_fit` of the loaded table by this model's time estimate (0 when
        the data are not a table)."""
        source = self.loaded_source
        if source is None or source.kind == "generator":
            return 0

        def seconds(est: Mapping[str, Any], n: int) -> float | None:
            timing = self._time_estimate(est, n)
            return None if timing is None else timing[0]

        return rows_that_fit(self.experiment, params, ds, budget, seconds)

    def use_rows(self, rows: int) -> None:
        """Load a seeded random ``rows`` of the current table (the one-click way forward
        when a run is too large)."""
        if self.loaded_source is None or self.loaded_source.kind == "generator":
            return
        self.load_data(self.loaded_source.with_options(subsample=int(rows)))

    def _time_estimate(self, est: Mapping[str, Any], n: int
                       ) -> tuple[float, float, float] | None:
        """(seconds, low, high) for the planned run, calibrated by what runs achieve here:
        the experiment's own finished runs fit t = a + b·flops (range ×/÷ 1.5); before
        its first, the speed other experiments reached on this machine, else a matrix-
        product probe (the best of probes taken when the estimate is asked for, never one
        taken under start-up load alone) — range ×/÷ 3."""
        flops = est.get("flops")
        name = self.experiment.name
        if flops:
            runs = self._runs.get(name)
            if runs:
                a, b = fit_time(runs)
                t = a + b * float(flops)
                return t, t / 1.5, t * 1.5
            t = uncalibrated_seconds(est, self._machine_rate())
            assert t is not None
            return t, t / 3, t * 3
        last = self._last_times.get(name)
        if last is None:
            return None
        seconds, n_last = last
        t = seconds * n / max(n_last, 1)
        return t, t / 3, t * 3

    def _machine_rate(self) -> float:
        """Flops per second the runs reach on this machine: the median over finished runs
        of every experiment, else 15 % of the best matrix-product probe."""
        achieved = [f / max(t - 0.2, 0.05) for runs in self._runs.values() for f, t in runs]
        if achieved:
            return float(np.median(achieved))
        now = time.monotonic()
        # re-probe after 3 s (the best one counts), and at once when the last probe
        # shared the machine with a load (a large file parsed next to it reads as a slow
        # machine: 5–10× too long estimates for the run that follows, measured on 1M rows)
        if self._speed is None or now - self._probed > 3.0 or self._probed_loading:
            self._probed, self._probed_loading = now, self.loading
            self._speed = max(self._speed or 0.0, probe_flops_per_second())
        return self._speed

    def _record_time(self, run_id: int, seconds: float) -> None:
        """A finished run refines its experiment's time model."""
        work = self._run_work.pop(run_id, None)
        if work is None:
            return
        name, flops = work
        runs = self._runs.setdefault(name, [])
        runs.append((flops, seconds))
        del runs[:-TIME_HISTORY]

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
        work = self._planned_flops(spec)
        handle = self._launch(spec)
        if work is not None:
            self._run_work[handle.run_id] = (spec.experiment, work)
        handle.progressed.connect(self._on_progress)
        handle.partial_arrived.connect(self._on_partial)
        handle.finished.connect(lambda result: self._on_finished(handle, result))
        handle.failed.connect(lambda message, user: self._on_failed(handle, message, user))
        handle.cancelled.connect(lambda killed: self._on_cancelled(handle, killed))
        self.handle = handle
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

    def _on_finished(self, handle: RunHandle, result: RunResult) -> None:
        self.table = _as_table(result.table)
        self.summaries, self.result = dict(result.summaries), result
        total = result.timings.get("total_s", 0.0)
        self._last_times[result.experiment] = (total, int(result.data.get("n_train", 1)))
        self._record_time(handle.run_id, total)
        self._set_state(RunState.DONE)
        self.table_changed.emit()
        self.summaries_changed.emit(self.summaries)
        self.progressed.emit(1.0, f"Done in {total:.2f} s.")
        self.status.emit(f"Done in {total:.2f} s.")
        self.logged.emit(f"run {handle.run_id}: done in {total:.2f} s")
        self.inputs_changed.emit()

    def _on_failed(self, handle: RunHandle, message: str, user_error: bool) -> None:
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
        pin = Pin(label, {k: v.copy() for k, v in self.table.items()})
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
        self.pins = [Pin(str(p.get("label", "")),
                         {k: np.array([np.nan if v is None else v for v in col], dtype=float)
                          for k, col in p["table"].items()}) for p in session.pinned]
        self.pins_changed.emit()
        self.title, self.about = session.title, session.about
        self.session_applied.emit(session)
        self.logged.emit(f"session: {session.title or spec.experiment}")
