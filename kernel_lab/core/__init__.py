"""Numerical core: numpy and scipy only. No Qt, no threads, no printing."""

from __future__ import annotations

from kernel_lab.core.errors import (
    DataError,
    KernelLabError,
    MemoryBudgetError,
    ParameterError,
)
from kernel_lab.core.progress import Cancelled, Progress

__all__ = [
    "Cancelled",
    "DataError",
    "KernelLabError",
    "MemoryBudgetError",
    "ParameterError",
    "Progress",
]
