"""The Playground behind its window, Qt-free: :class:`PlaygroundModel` (``state``: the
points with undo/redo, the parameters, the stepping position) and :func:`fit_worker`
(``worker``: the fits on the one worker primitive, :class:`kernel_lab.engine.worker.Worker`,
which computes the latest request only). The fit engine it drives is
:mod:`kernel_lab.engine.playground`; its presets are in the one preset registry,
:mod:`kernel_lab.engine.presets`."""

from __future__ import annotations

from kernel_lab.core.playground import Superseded
from kernel_lab.engine.playground.fit import Fit, FitEngine, Request
from kernel_lab.engine.playground.params import DEFAULTS, MAX_STEPS
from kernel_lab.engine.playground.state import PlaygroundState, Points
from kernel_lab.model.playground.state import UNDO_LIMIT, PlaygroundModel
from kernel_lab.model.playground.worker import FOLLOWUP_DELAY, fit_job, fit_worker

__all__ = ["DEFAULTS", "FOLLOWUP_DELAY", "MAX_STEPS", "UNDO_LIMIT", "Fit", "FitEngine",
           "PlaygroundModel", "PlaygroundState", "Points", "Request", "Superseded",
           "fit_job", "fit_worker"]
