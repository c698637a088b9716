"""What to run, as one value: the experiment, its parameters (with the seed), the data
source and where the independent tasks run. The window, the command line, sessions and
the worker process all pass a :class:`RunSpec`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kernel_lab.core.errors import ParameterError
from kernel_lab.data.source import DataSource
from kernel_lab.engine.executors import BACKENDS


@dataclass(frozen=True)
class RunSpec:
    """One run, fully described (picklable, JSON-able through a session).

    Parameters
    ----------
    experiment : str
        Registered experiment name.
    params : mapping
        Parameter values (text accepted); ``seed`` is one of them.
    data : DataSource, optional
        The data; None: the experiment's default data.
    workers : int or None
        Threads or processes for independent tasks (None: one per core). Results do not
        depend on it, nor on the backend.
    backend : {"threads", "processes", "dask"}
    scheduler : str, optional
        A Dask scheduler address (default: a local cluster).
    """

    experiment: str
    params: Mapping[str, Any] = field(default_factory=dict)
    data: DataSource | None = None
    workers: int | None = 1
    backend: str = "threads"
    scheduler: str | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ParameterError(f"unknown compute backend {self.backend!r}; choose one of "
                                 f"{', '.join(BACKENDS)}")

    @property
    def seed(self) -> int:
        """The seed that drives every random choice of the run."""
        return int(self.params.get("seed", 0) or 0)

    def with_params(self, **params: Any) -> RunSpec:
        return replace(self, params={**self.params, **params})

    def data_source(self) -> DataSource:
        """The data the run uses (the experiment's default when none is set)."""
        if self.data is not None:
            return self.data
        from kernel_lab.experiments import get_experiment

        return DataSource.from_spec(get_experiment(self.experiment).default_data)
