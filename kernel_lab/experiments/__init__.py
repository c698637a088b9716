"""Experiments: declared parameters, a generator of partial results, declared plots.

No Qt here: experiments run the same in the window, the command line and tests.
"""

from __future__ import annotations

from kernel_lab.experiments.base import Experiment, ModelChoice, PartialResult
from kernel_lab.experiments.plotspec import Curve, PlotSpec, SeriesKey
from kernel_lab.experiments.registry import (
    check_task,
    get_experiment,
    list_experiments,
    register,
    run_on,
)

__all__ = [
    "Curve",
    "Experiment",
    "ModelChoice",
    "PartialResult",
    "PlotSpec",
    "SeriesKey",
    "check_task",
    "get_experiment",
    "list_experiments",
    "register",
    "run_on",
]
