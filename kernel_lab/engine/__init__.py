"""Runs experiments. ``runner`` is plain Python; ``worker`` is the one background worker
(the latest request wins) that runs, loading and the Playground use; ``qt`` (the only Qt
module here) carries a worker's messages to the window's GUI thread.

``run``, ``run_experiment``, ``RunResult`` and ``RunSpec`` are imported on first use
(PEP 562): a Dask worker unpickling a task of :mod:`kernel_lab.engine.dask_parts` imports
this package, and must not import the runner (the experiments, the data readers and
scikit-learn) with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kernel_lab.engine import blas  # noqa: F401  (the core's one-BLAS-thread limit)

if TYPE_CHECKING:
    from kernel_lab.engine.runner import RunResult, run, run_experiment
    from kernel_lab.engine.spec import RunSpec

#: Each public name and the module that defines it.
_HOMES = {"RunResult": "runner", "RunSpec": "spec", "run": "runner",
          "run_experiment": "runner"}

__all__ = ["RunResult", "RunSpec", "run", "run_experiment"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later look-ups find it at once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
