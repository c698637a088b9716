"""Task executors for the independent tasks of an experiment (Monte Carlo trials, …).

Results come back in task order and each task carries its own seed, so a run gives the
same numbers on every executor.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from threadpoolctl import threadpool_limits

from kernel_lab.experiments.base import SERIAL, SerialExecutor, TaskExecutor


class ThreadExecutor:
    """Runs tasks on ``workers`` threads (numpy and LAPACK release the GIL).

    While tasks run in parallel, BLAS is limited to one thread per worker: small
    factorisations run faster that way than with competing BLAS thread pools, and
    the cores are not oversubscribed. Tasks not yet started are cancelled when the
    consumer stops iterating (e.g. when the run is cancelled).
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        tasks = list(tasks)
        if self.workers == 1 or len(tasks) <= 1:
            yield from map(fn, tasks)
            return
        with threadpool_limits(1), ThreadPoolExecutor(self.workers) as pool:
            futures: list[Future[Any]] = [pool.submit(fn, t) for t in tasks]
            try:
                for fut in futures:
                    yield fut.result()
            finally:
                for fut in futures:
                    fut.cancel()


def make_executor(workers: int | None) -> TaskExecutor:
    """Serial for ``workers == 1``, else a :class:`ThreadExecutor` (None: one per core)."""
    if workers == 1:
        return SERIAL
    return ThreadExecutor(workers)


__all__ = ["SERIAL", "SerialExecutor", "TaskExecutor", "ThreadExecutor", "make_executor"]
