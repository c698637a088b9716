"""The experiment registry: the command line and the window list what is here.

The registry imports the built-in experiments (on first use) and registers their classes;
no experiment module imports the registry back."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.executor import TaskExecutor
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import PartitionedData
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.experiments.base import Experiment, PartialResult

_REGISTRY: dict[str, type[Experiment]] = {}


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
    _load_builtin(name)
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
    ``experiment`` cannot (e.g. more than two classes). Where the rows live is no rule
    here: an experiment that needs every row at once reads ``data.X_train``, which
    refuses rows that do not fit in memory (and offers a seeded sample)."""
    task = data.task
    if task in experiment.tasks:
        return
    able = [cls.name for cls in list_experiments() if task in cls.tasks]
    classes = len(getattr(data, "classes", None) or ())
    what = {"multiclass": f"{classes} classes"}.get(task, f"a {task} task")
    where = f"; {', '.join(able)} can" if able else ""
    raise ParameterError(f"experiment {experiment.name!r} cannot run on {data.name or 'the data'} "
                         f"({what}){where}")


def run_on(experiment: Experiment, params: Mapping[str, Any], data: Dataset | PartitionedData,
           progress: Progress, executor: TaskExecutor) -> Iterator[PartialResult]:
    """The experiment's partial results on ``data``, wherever its rows live (one run for
    every data set: :meth:`Experiment.run`)."""
    return experiment.run(params, data, progress, executor)


#: The built-in experiments: each name, its module and its class. ``get_experiment``
#: imports only the module of the experiment asked for (a run of one experiment does not
#: pay for the imports of the others); listing them all imports every one.
BUILTIN = {
    "ckrr-risk": ("kernel_lab.experiments.ckrr_risk", "CkrrRiskExperiment"),
    "gfc": ("kernel_lab.experiments.gfc", "GFCExperiment"),
    "krr-path": ("kernel_lab.experiments.krr_path", "KrrPathExperiment"),
    "learning-curve": ("kernel_lab.experiments.learning_curve", "LearningCurveExperiment"),
    "nystrom": ("kernel_lab.experiments.nystrom", "NystromExperiment"),
    "spectrum": ("kernel_lab.experiments.spectrum", "SpectrumExperiment"),
}


def _load_builtin(name: str | None = None) -> None:
    """Register the built-in experiments, or only ``name`` when it is one of them
    (imported on first use: they load scipy and the models, which listing parameters of a
    session does not always need)."""
    import importlib

    for key in BUILTIN if name not in BUILTIN else (name,):
        module, cls = BUILTIN[key]
        register(getattr(importlib.import_module(module), cls))
