"""What a run of the current settings will need, shown before Run: the :class:`Plan`
(memory against the budget, the time as a range, the rows of a table that would fit) and
the :class:`Planner` that makes it, calibrated by the runs finished on this machine.

No Qt; the lab model (:mod:`kernel_lab.model.lab`) holds one planner and the command line
uses :func:`rows_that_fit` and :func:`uncalibrated_seconds` for its own messages.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.memory import format_bytes, memory_budget_bytes
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.data.source import DataSource
from kernel_lab.experiments import Experiment

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
    #: Which limit set :attr:`fitting_rows` (:meth:`RowsThatFit.why`), else "".
    fitting_why: str = ""

    @property
    def too_large(self) -> bool:
        return self.memory_bytes > self.budget_bytes > 0

    @property
    def advice(self) -> str:
        """What to do when the run is too large."""
        if not self.too_large:
            return ""
        rows = ""
        if self.fitting_rows:
            why = f" ({self.fitting_why})" if self.fitting_why else ""
            rows = f", e.g. a random {self.fitting_rows:,} rows{why}"
        return ("An exact kernel matrix would not fit; use fewer points" + rows +
                ", or an approximate method (Nyström or random features).")


@dataclass(frozen=True)
class RowsThatFit:
    """The rows of a table a run too large for it is offered (:func:`rows_that_fit`), and
    which limit set their number: the memory budget, or the time cap
    (:data:`OFFER_SECONDS`) when the budget alone would allow more."""

    #: Rows (training and test) to use; 0 when no size fits.
    rows: int
    #: Rows the memory budget alone would allow (0 when no size fits it).
    memory_rows: int
    #: The memory budget the rows were fitted to, in bytes.
    budget_bytes: float

    @property
    def by_time(self) -> bool:
        """Whether the time cap, not the memory budget, set :attr:`rows`."""
        return 0 < self.rows < self.memory_rows

    def why(self) -> str:
        """Which limit set the number, with both figures, e.g. ``the time cap: more rows
        would take over about 2 minutes on this machine; the memory budget of 12.9 GiB
        alone would allow 21,958``."""
        if not self.rows:
            return ""
        budget = format_bytes(self.budget_bytes)
        if self.by_time:
            return (f"set by the time cap: more rows would take over about "
                    f"{OFFER_SECONDS / 60:.0f} minutes on this machine; the memory budget "
                    f"of {budget} alone would allow {self.memory_rows:,}")
        return f"set by the memory budget of {budget}"


def rows_that_fit(experiment: Experiment, params: Mapping[str, Any], ds: Dataset,
                  budget: float,
                  seconds: Callable[[Mapping[str, Any], int], float | None] | None = None
                  ) -> RowsThatFit:
    """How many rows of the table ``ds`` (training and test) a run of ``experiment`` with
    ``params`` can use, and which limit set the number: its estimate fits in 90 % of
    ``budget`` and, by ``seconds(estimate, n_train)``, it takes at most
    :data:`OFFER_SECONDS` (or has at most 1000 training points); 0 rows when no size does.
    Shrinks the training size by 10 % steps from the n·√(budget / need) guess of an n²
    method until the estimate fits. The window offers these rows in one click, the command
    line names them (``--subsample N``)."""
    need = float(experiment.estimate(params, ds.n_train, ds.p).get("memory_bytes", 0))
    n = int(ds.n_train * math.sqrt(0.9 * budget / need)) if need > 0 else ds.n_train
    share = ds.n_train / max(ds.n_train + ds.n_test, 1)  # training share of rows
    memory_n = 0  # the largest training size whose memory fits the budget
    for _ in range(40):
        if n < 2:
            break
        try:
            est = experiment.estimate(params, n, ds.p)
            fits = float(est.get("memory_bytes", 0)) <= 0.9 * budget
            memory_n = memory_n or (n if fits else 0)
            t = seconds(est, n) if fits and seconds is not None else None
            # about two minutes at most (or small anyway: a model fitted on long runs
            # can put its fixed part above that)
            fits = fits and (t is None or t <= OFFER_SECONDS or n <= 1000)
        except KernelLabError:
            fits = False
        if fits:
            return RowsThatFit(max(2, int(n / share)), max(2, int(memory_n / share)),
                               budget)
        n = int(0.9 * n)
    return RowsThatFit(0, max(2, int(memory_n / share)) if memory_n else 0, budget)


def uncalibrated_seconds(est: Mapping[str, Any], flops_per_second: float) -> float | None:
    """Seconds of a run by its estimated flops at ``flops_per_second`` before any run of
    its experiment has calibrated the time model (None: the estimate counts no flops)."""
    flops = est.get("flops")
    return 0.2 + float(flops) / flops_per_second if flops else None


#: Size of the probe's matrix products: four of them take about 1 ms on the window's
#: thread. Products of 384 × 384 read about 8 % faster but took 7–10 ms, and up to 100 ms
#: while the run's process was starting next to them (measured on a 2-core machine).
PROBE_SIZE = 192


def probe_flops_per_second() -> float:
    """16 % of the best of four :data:`PROBE_SIZE`² matrix products: what runs reach on this
    machine before any has been timed (the first product also starts the BLAS threads;
    16 % of this probe is the 15 % of a 384² probe the time model was set by)."""
    a = np.random.default_rng(0).random((PROBE_SIZE, PROBE_SIZE))
    best = math.inf
    for _ in range(4):
        t0 = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t0)
    return 0.16 * 2 * PROBE_SIZE**3 / max(best, 1e-9)


class Planner:
    """Makes the :class:`Plan` of a run and learns this machine's speed from the runs
    that finish (t = a + b·flops per experiment, :func:`fit_time`)."""

    def __init__(self) -> None:
        self._speed: float | None = None
        self._probed = -math.inf
        self._probed_loading = False
        self._runs: dict[str, list[tuple[float, float]]] = {}  # (flops, seconds) per run
        self._run_work: dict[int, tuple[str, float]] = {}     # the runs in progress
        self._last_times: dict[str, tuple[float, int]] = {}

    def plan(self, experiment: Experiment, params: Mapping[str, Any], ds: Dataset | None,
             source: DataSource | None, loading: bool = False) -> Plan:
        """The plan of a run of ``experiment`` with ``params`` on ``ds`` (loaded from
        ``source``; ``loading``: another load is in flight, so a speed probe is unsure).
        Raises KernelLabError when the estimate refuses the parameters."""
        if ds is None:
            return Plan()
        est = experiment.estimate(params, ds.n_train, ds.p)
        budget = float(memory_budget_bytes())
        memory = float(est.get("memory_bytes", 0))
        timing = self.time_estimate(experiment.name, est, ds.n_train, loading)
        rows, why = 0, ""
        if memory > budget > 0 and source is not None and source.kind != "generator":
            def seconds(est: Mapping[str, Any], n: int) -> float | None:
                t = self.time_estimate(experiment.name, est, n, loading)
                return None if t is None else t[0]

            fitting = rows_that_fit(experiment, params, ds, budget, seconds)
            rows, why = fitting.rows, fitting.why()
        return Plan(memory, budget, str(est.get("note", "")),
                    None if timing is None else timing[0], fitting_rows=rows,
                    fitting_why=why,
                    seconds_range=None if timing is None else timing[1:])

    def time_estimate(self, name: str, est: Mapping[str, Any], n: int,
                      loading: bool = False) -> tuple[float, float, float] | None:
        """(seconds, low, high) for a run of experiment ``name``, calibrated by what runs
        achieve here: the experiment's own finished runs fit t = a + b·flops (range ×/÷
        1.5); before its first, the speed other experiments reached on this machine, else
        a matrix-product probe (the best of probes taken when the estimate is asked for,
        never one taken under start-up load alone) — range ×/÷ 3."""
        flops = est.get("flops")
        if flops:
            runs = self._runs.get(name)
            if runs:
                a, b = fit_time(runs)
                t = a + b * float(flops)
                return t, t / 1.5, t * 1.5
            t = uncalibrated_seconds(est, self.machine_rate(loading))
            assert t is not None
            return t, t / 3, t * 3
        last = self._last_times.get(name)
        if last is None:
            return None
        seconds, n_last = last
        t = seconds * n / max(n_last, 1)
        return t, t / 3, t * 3

    def machine_rate(self, loading: bool = False) -> float:
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
            self._probed, self._probed_loading = now, loading
            self._speed = max(self._speed or 0.0, probe_flops_per_second())
        return self._speed

    def run_started(self, run_id: int, name: str, flops: float | None) -> None:
        """Remember the planned work of run ``run_id`` of experiment ``name``."""
        if flops is not None:
            self._run_work[run_id] = (name, flops)

    def run_finished(self, run_id: int, name: str, seconds: float, n_train: int) -> None:
        """A finished run refines its experiment's time model."""
        self._last_times[name] = (seconds, n_train)
        work = self._run_work.pop(run_id, None)
        if work is None:
            return
        runs = self._runs.setdefault(work[0], [])
        runs.append((work[1], seconds))
        del runs[:-TIME_HISTORY]
