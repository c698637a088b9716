"""One BLAS thread for a while, safely from several threads at once.

threadpoolctl's limit of a BLAS library (OpenBLAS here) is process-wide and restores, on
exit, what it saw on entry: two threads whose limits overlap without nesting (two
Playground fits, or a fit and a script's) would otherwise leave the process at one BLAS
thread for good — the first to leave restores two threads under the other, which then
restores one. Here the first caller in sets the limit and the last one out restores the
original. (OpenMP's thread count is per thread, so only the BLAS libraries are limited;
the executors' per-task limits, :func:`kernel_lab.core.executor.call_single_threaded`,
remain threadpoolctl's own.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kernel_lab.core import executor
from kernel_lab.core.executor import blas_controller

_LOCK = threading.Lock()
_users = 0
_limiter: Any = None


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """One BLAS thread in this process while any caller is inside."""
    global _users, _limiter
    with _LOCK:
        if _users == 0:
            _limiter = blas_controller().limit(limits=1, user_api="blas")
        _users += 1
    try:
        yield
    finally:
        with _LOCK:
            _users -= 1
            if _users == 0:
                _limiter.restore_original_limits()
                _limiter = None


# the core's small factorisations (samplers, Nyström) take this counted limit too
executor.ONE_BLAS_THREAD = single_blas_thread


@contextmanager
def every_blas_thread() -> Iterator[None]:
    """Every core's BLAS thread for a while, also inside :func:`single_blas_thread`: for
    work done while the user's hand rests (the Playground's exact fit and λ curve at large
    n, whose products with the n × n kernel matrix then take about half the time), and
    never around SciPy's routines — SciPy bundles a second OpenBLAS, whose threads would
    spin against numpy's. The limit seen on entry is restored on exit."""
    import os

    with _LOCK:
        limiter = blas_controller().limit(limits=os.cpu_count() or 1, user_api="blas")
    try:
        yield
    finally:
        with _LOCK:
            limiter.restore_original_limits()
