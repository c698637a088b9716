"""Runs experiments. ``runner`` is plain Python; ``qt`` (the only Qt module here) wraps a
run for the window."""

from __future__ import annotations

from kernel_lab.engine.runner import RunResult, run, run_experiment
from kernel_lab.engine.spec import RunSpec

__all__ = ["RunResult", "RunSpec", "run", "run_experiment"]
