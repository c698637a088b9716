"""Runs experiments. ``runner`` is plain Python; ``qt`` (the only Qt module here) wraps a
run for the window."""

from __future__ import annotations

from kernel_lab.engine.runner import RunResult, run_experiment

__all__ = ["RunResult", "run_experiment"]
