"""Runs experiments. ``runner`` is plain Python; ``worker`` is the one background worker
(the latest request wins) that runs, loading and the Playground use; ``qt`` (the only Qt
module here) carries a worker's messages to the window's GUI thread."""

from __future__ import annotations

from kernel_lab.engine import blas  # noqa: F401  (the core's one-BLAS-thread limit)
from kernel_lab.engine.runner import RunResult, run, run_experiment
from kernel_lab.engine.spec import RunSpec

__all__ = ["RunResult", "RunSpec", "run", "run_experiment"]
