"""In-process runner: resolve parameters, load the data, drive the experiment's
generator, and assemble a JSON-serialisable :class:`RunResult`."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from kernel_lab import __version__
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import LocalParts, PartitionedData
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.core.rows.mapreduce import run_cache_bytes
from kernel_lab.data.lazy import MakeParts
from kernel_lab.data.source import DataSource
from kernel_lab.engine.executors import ProcessExecutor, make_executor
from kernel_lab.engine.jsonable import jsonable
from kernel_lab.engine.spec import RunSpec
from kernel_lab.experiments import PartialResult, check_task, get_experiment, run_on


def versions() -> dict[str, str]:
    """Versions of Kernel Lab, Python and the numerical libraries."""
    import scipy
    import sklearn

    return {"kernel_lab": __version__, "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__,
            "platform": platform.platform()}


@dataclass
class RunResult:
    """The outcome of one run: table, summaries, and what is needed to reproduce it."""

    experiment: str
    params: dict[str, Any]
    seed: int
    data: dict[str, Any]
    table: dict[str, np.ndarray] = field(default_factory=dict)
    summaries: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    started: str = ""
    versions: dict[str, str] = field(default_factory=versions)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (non-finite numbers become ``null``)."""
        return jsonable({
            "experiment": self.experiment,
            "params": self.params,
            "seed": self.seed,
            "data": self.data,
            "summaries": self.summaries,
            "timings": self.timings,
            "started": self.started,
            "versions": self.versions,
            "columns": list(self.table),
            "table": self.table,
        })

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)


def parts_runner(executor: Any) -> MakeParts:
    """Where the computations on a partitioned source run: on the Dask cluster of a
    ``dask`` executor, in the kept process pool of a ``processes`` executor
    (:class:`~kernel_lab.engine.pool_parts.PoolParts`), else in this process, one
    partition at a time. Both local ways keep a share of the memory budget of what they
    read, for the run's later passes. What it returns may have a ``close()``, which the
    runner calls when the run ends."""
    client = getattr(executor, "client", None)
    if isinstance(executor, ProcessExecutor):
        from kernel_lab.engine.pool_parts import PoolRunner

        return PoolRunner(executor.workers)
    if client is None:
        return lambda parts: LocalParts(parts, cache=run_cache_bytes())

    def on_cluster(parts: Any) -> Any:
        from kernel_lab.engine.dask_parts import DaskParts

        return DaskParts(parts, client)

    return on_cluster


def run(
    spec: RunSpec,
    *,
    dataset: Dataset | PartitionedData | None = None,
    on_progress: Callable[[float, str], None] | None = None,
    on_partial: Callable[[PartialResult], None] | None = None,
    is_cancelled: Callable[[], bool] | None = None,
) -> RunResult:
    """Run ``spec`` in this process and return its result.

    Parameters
    ----------
    spec : RunSpec
        What to run: experiment, parameters (with the seed), data source, backend.
    dataset : Dataset, optional
        The data already loaded (instead of loading ``spec.data``).
    on_progress, on_partial : callable, optional
        Receive ``(fraction, message)`` and each :class:`PartialResult`.
    is_cancelled : callable, optional
        Polled at every report; when it returns True the run raises
        :class:`~kernel_lab.core.progress.Cancelled`.

    Raises
    ------
    ParameterError, DataError, MemoryBudgetError
        For user errors (bad parameters, unreadable data, too large).
    Cancelled
        When cancelled.
    """
    experiment = get_experiment(spec.experiment)
    resolved = experiment.resolve(spec.params)
    seed = int(resolved["seed"])
    progress = Progress(on_progress, is_cancelled)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    progress(0.0, "loading data")
    executor = make_executor(spec.workers, spec.backend, spec.scheduler)
    make_parts = parts_runner(executor)
    try:
        if dataset is None:
            dataset = spec.data_source().open(
                seed, progress.sub(0.0, 0.02), make_parts=make_parts)
        t_data = time.perf_counter() - t0
        check_task(experiment, dataset)
        resolved, fitted = experiment.fit_to_data(resolved, dataset)  # too big: clamped
        summary = dataset.summary()
        summary["notes"] = [*summary["notes"], *fitted]
        # the column the run learns, and what to check before trusting it, first
        progress(0.02, next((n for n in summary["notes"] if n.startswith("target:")),
                            f"target: column {summary['target']!r}"))
        for warning in summary.get("warnings", []):
            progress(0.02, f"warning: {warning}")
        result = RunResult(spec.experiment, resolved, seed, summary, started=started)
        run_progress = progress.sub(0.02, 1.0)
        t1 = time.perf_counter()
        for partial in run_on(experiment, resolved, dataset, run_progress, executor):
            run_progress(partial.fraction, partial.message)
            if partial.table is not None:
                result.table = {k: np.asarray(v, dtype=np.float64)
                                for k, v in partial.table.items()}
            if partial.summaries is not None:
                result.summaries = dict(partial.summaries)
            if on_partial is not None:
                on_partial(partial)
    finally:
        for used in (make_parts, executor):
            close = getattr(used, "close", None)
            if close is not None:
                close()
    t_run = time.perf_counter() - t1
    result.timings = {"data_s": round(t_data, 4), "run_s": round(t_run, 4),
                      "total_s": round(time.perf_counter() - t0, 4)}
    progress(1.0, "done")
    return result


def run_experiment(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    data: str | DataSource | Dataset | PartitionedData | None = None,
    data_options: Mapping[str, Any] | None = None,
    workers: int | None = 1,
    backend: str = "threads",
    scheduler: str | None = None,
    **callbacks: Any,
) -> RunResult:
    """Scripting shorthand for :func:`run`: builds the :class:`RunSpec` from keywords.

    ``data`` is a specification (``"gaussian:n=200"``, a file), a
    :class:`~kernel_lab.data.source.DataSource` or a loaded data set (default: the
    experiment's own); ``data_options`` override the specification's options;
    ``callbacks`` are :func:`run`'s ``on_progress``, ``on_partial``, ``is_cancelled``.
    """
    dataset = None if data is None or isinstance(data, str | DataSource) else data
    if isinstance(data, str):
        source: DataSource | None = DataSource.from_spec(data, data_options)
    elif isinstance(data, DataSource):
        source = data.with_options(**{k: v for k, v in (data_options or {}).items()
                                      if v is not None})
    elif data is None and data_options and any(v is not None for v in data_options.values()):
        source = DataSource.from_spec(get_experiment(name).default_data, data_options)
    else:
        source = None
    spec = RunSpec(name, dict(params or {}), source, workers, backend, scheduler)
    return run(spec, dataset=dataset, **callbacks)
