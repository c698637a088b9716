"""The benchmarks' timer: the best of a few runs (the least disturbed by other work)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The shortest wall time of ``repeat`` calls of ``fn`` and the last call's result."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out
