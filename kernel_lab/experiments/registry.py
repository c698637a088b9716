"""The experiment registry: the command line and the window list what is here.

The registry imports the built-in experiments (on first use) and registers their classes;
no experiment module imports the registry back."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kernel_lab.core.dataset import Dataset
from kernel_lab.core.errors import ParameterError, data_option
from kernel_lab.core.executor import TaskExecutor
from kernel_lab.core.parts import PartitionedData
from kernel_lab.core.progress import Progress
from kernel_lab.experiments.base import Experiment, PartialResult

_REGISTRY: dict[str, type[Experiment]] = {}
#: The experiments that also run on data kept in partitions (a PartitionedData, never
#: gathered), with the function that runs them there: ``fn(experiment, params, data,
#: progress)`` yielding the partial results :meth:`Experiment.run` would.
_ON_PARTS: dict[str, Callable[..., Iterator[PartialResult]]] = {}


def register(cls: type[Experiment]) -> type[Experiment]:
    """Class decorator adding an experiment to the registry."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"experiment {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def get_experiment(name: str) -> Experiment:
    """A new instance of the registered experiment ``name``."""
    _load_builtin()
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, _REGISTRY, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ParameterError(f"unknown experiment {name!r}{hint} "
                             f"(available: {', '.join(sorted(_REGISTRY))})")
    return _REGISTRY[name]()


def list_experiments() -> list[type[Experiment]]:
    """Registered experiment classes, sorted by name."""
    _load_builtin()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def check_task(experiment: Experiment, data: Dataset | PartitionedData) -> None:
    """Raise a ParameterError naming the experiments that can run on ``data`` when
    ``experiment`` cannot (e.g. more than two classes, or data kept in partitions for an
    experiment that needs all rows in memory)."""
    if isinstance(data, PartitionedData):
        _check_partitions(experiment, data)
    task = data.task
    if task in experiment.tasks:
        return
    able = [cls.name for cls in list_experiments() if task in cls.tasks]
    classes = len(getattr(data, "classes", None) or ())
    what = {"multiclass": f"{classes} classes"}.get(task, f"a {task} task")
    where = f"; {', '.join(able)} can" if able else ""
    raise ParameterError(f"experiment {experiment.name!r} cannot run on {data.name or 'the data'} "
                         f"({what}){where}")


def partitioned_experiments() -> list[str]:
    """Names of the experiments that also run on data kept in partitions."""
    _load_builtin()
    return sorted(_ON_PARTS)


def run_on(experiment: Experiment, params: Mapping[str, Any], data: Dataset | PartitionedData,
           progress: Progress, executor: TaskExecutor) -> Iterator[PartialResult]:
    """The experiment's partial results on ``data``: :meth:`Experiment.run` on a data set in
    memory, its partitioned half on data kept in partitions (:func:`check_task` refuses
    those for the experiments that need all rows in memory)."""
    if not isinstance(data, PartitionedData):
        return experiment.run(params, data, progress, executor)
    check_task(experiment, data)
    return _ON_PARTS[experiment.name](experiment, params, data, progress)


def _check_partitions(experiment: Experiment, data: PartitionedData) -> None:
    _load_builtin()
    if experiment.name not in _ON_PARTS:
        raise ParameterError(
            f"experiment {experiment.name!r} needs all {data.n_train:,} training rows in "
            f"memory (an exact n × n kernel matrix), and the data stay in their "
            f"{len(data.parts.parts)} partitions; use a seeded sample of the rows "
            f"({data_option('subsample', 'N')}, e.g. 2000) or run "
            f"{' or '.join(partitioned_experiments())} "
            "on all of them")


def _load_builtin() -> None:
    """Register the built-in experiments (imported on first use: they load scipy and the
    models, which listing parameters of a session does not always need)."""
    from kernel_lab.experiments.ckrr_risk import CkrrRiskExperiment
    from kernel_lab.experiments.gfc import GFCExperiment
    from kernel_lab.experiments.krr_path import KrrPathExperiment
    from kernel_lab.experiments.learning_curve import LearningCurveExperiment
    from kernel_lab.experiments.nystrom import NystromExperiment
    from kernel_lab.experiments.spectrum import SpectrumExperiment

    for cls in (CkrrRiskExperiment, GFCExperiment, KrrPathExperiment, LearningCurveExperiment,
                NystromExperiment, SpectrumExperiment):
        register(cls)
    if not _ON_PARTS:
        from kernel_lab.experiments.nystrom_parts import run_on_parts as nystrom_on_parts

        _ON_PARTS["learning-curve"] = lambda exp, params, data, progress: exp.run(
            params, data, progress)
        _ON_PARTS["nystrom"] = nystrom_on_parts
