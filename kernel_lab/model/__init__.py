"""Qt-free application state: the lab behind the window (and, next, the Playground)."""

from __future__ import annotations

from kernel_lab.model.lab import LabModel, Pin, RunState
from kernel_lab.model.plan import Plan

__all__ = ["LabModel", "Pin", "Plan", "RunState"]
