"""Task executors for the independent tasks of an experiment (Monte Carlo trials, …).

Results come back in task order and each task carries its own seed, so a run gives the
same numbers on every executor.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.executor import (
    SERIAL,
    SerialExecutor,
    TaskExecutor,
    blas_controller,
    call_single_threaded,
)
from kernel_lab.engine.cluster import DASK_QUIET, SHARE_BYTES, connect
from kernel_lab.engine.cluster_wait import WorkerLost, cancel_futures, scatter_to_all, wait_result
from kernel_lab.engine.heap import keep_heap_in_children, linux_libc, release_heap

# WorkerLost, DASK_QUIET and SHARE_BYTES (arrays at least this large that several tasks
# share are sent to Dask workers once) live in kernel_lab.engine.cluster, with the code that
# starts clusters; they are imported from here too.

#: The backends a run can use (:func:`make_executor`); the command line and the window
#: offer these.
BACKENDS = ("threads", "processes", "dask")


class ThreadExecutor:
    """Runs tasks on ``workers`` threads (numpy and LAPACK release the GIL).

    While tasks run in parallel, BLAS is limited to one thread per worker: small
    factorisations run faster that way than with competing BLAS thread pools, and
    the cores are not oversubscribed. One worker or one task runs serially, with the
    same one-thread limit (so the numbers are those of every other backend). Tasks not
    yet started are cancelled when the consumer stops iterating (e.g. when the run is
    cancelled).
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        tasks = list(tasks)
        if self.workers == 1 or len(tasks) <= 1:
            yield from SERIAL.map(fn, tasks)
            return
        with blas_controller().limit(limits=1), ThreadPoolExecutor(self.workers) as pool:
            futures: list[Future[Any]] = [pool.submit(fn, t) for t in tasks]
            try:
                for fut in futures:
                    yield fut.result()
            finally:
                for fut in futures:
                    fut.cancel()


def _die_with_parent() -> None:
    """Pool-process initializer: on Linux, ask the kernel to kill this process when its
    parent dies — also when the parent is killed outright (a cancelled run in the window's
    worker process), which leaves no chance to shut the pool down."""
    libc = linux_libc()
    if libc is not None:
        import signal

        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _pool_task(fn: Callable[[Any], Any], task: Any) -> Any:
    """A task in a pool process: ``fn(task)`` with one BLAS thread, then the heap's free
    memory returned, so idle pool processes do not sit on their peak
    (:mod:`kernel_lab.engine.heap`)."""
    try:
        return call_single_threaded(fn, task)
    finally:
        release_heap()


class ProcessExecutor:
    """Runs tasks in a local pool of ``workers`` processes (spawned: the same on every OS).

    A worker process that dies (crash, out-of-memory kill) breaks the pool; the tasks not
    yet returned are then run once more in a fresh pool — each task carries its own seed,
    so a repeated task gives the same result — and a second failure stops the run with a
    message saying so. Nothing is dropped silently.
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        from concurrent.futures.process import BrokenProcessPool
        from functools import partial

        pending = list(tasks)
        call = partial(_pool_task, fn)
        for attempt in (1, 2):
            pool, futures = submit_to_pool(self.workers, call, pending)
            try:
                for k, fut in enumerate(futures):
                    try:
                        result = fut.result()
                    except BrokenProcessPool:
                        drop_pool(self.workers, pool)
                        if attempt == 2:
                            raise WorkerLost(
                                "a worker process of the process pool died twice (crashed "
                                "or killed, often for lack of memory); the run is stopped — "
                                "use fewer workers or smaller tasks") from None
                        pending = pending[k:]
                        break
                    yield result
                else:
                    return
            finally:
                for fut in futures:
                    fut.cancel()


_POOLS: dict[int, Any] = {}


def kept_pool(workers: int, start: bool = True) -> Any:
    """The kept pool of ``workers`` spawned processes, started now if there is none (None
    then, with ``start=False``): starting processes costs about a second, so later runs
    reuse it. Each process gets :func:`_die_with_parent` and keeps its heap
    (:mod:`kernel_lab.engine.heap`)."""
    pool = _POOLS.get(workers)
    if pool is None and start:
        pool = _new_pool(workers)
        _POOLS[workers] = pool
    return pool


def submit_to_pool(workers: int, call: Callable[[Any], Any], tasks: Iterable[Any]
                   ) -> tuple[Any, list[Future[Any]]]:
    """``call(task)`` submitted to the kept pool of ``workers`` processes for every task;
    a kept pool that lost a process while idle is replaced first. Returns the pool and
    the futures, in task order."""
    from concurrent.futures.process import BrokenProcessPool

    tasks = list(tasks)
    pool = kept_pool(workers)
    try:
        return pool, [pool.submit(call, t) for t in tasks]
    except BrokenProcessPool:  # a kept pool lost a process while idle: start afresh
        drop_pool(workers, pool)
        pool = kept_pool(workers)
        return pool, [pool.submit(call, t) for t in tasks]


def drop_pool(workers: int, pool: Any, kill: bool = False) -> None:
    """Forget ``pool`` (the next run starts a fresh one) and shut it down; ``kill``: kill
    its processes at once — tasks still running in them (a cancelled run's) stop there
    rather than finish unused while the next run waits."""
    if _POOLS.get(workers) is pool:
        _POOLS.pop(workers)
    if kill:
        _kill_processes(pool)
    pool.shutdown(wait=False, cancel_futures=True)


def _new_pool(workers: int) -> Any:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    keep_heap_in_children()
    return ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"),
                               initializer=_die_with_parent)


def shutdown_pools() -> None:
    """Stop the kept process pools (at exit, or in tests)."""
    for pool in _POOLS.values():
        pool.shutdown(wait=False, cancel_futures=True)
    _POOLS.clear()


def kill_pools() -> None:
    """Kill the kept pools' processes at once (this process is being terminated)."""
    for pool in _POOLS.values():
        _kill_processes(pool)
    _POOLS.clear()


def _kill_processes(pool: Any) -> None:
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            proc.kill()
        except (OSError, AttributeError):
            pass


atexit.register(shutdown_pools)


class DaskExecutor:
    """Runs tasks on a Dask cluster: an existing scheduler (``address``) or a local cluster
    of ``workers`` single-threaded processes on 127.0.0.1 started for the run.

    Each task is retried on another worker if its worker dies (``retries``); results come
    back in task order, and, every task being seeded, equal those of any other backend.
    Needs the optional extra: ``pip install 'kernel-lab[dask]'``.
    """

    def __init__(self, address: str | None = None, workers: int | None = None,
                 retries: int = 2) -> None:
        self.retries = retries
        self.connection = connect(address, workers, timeout=5)
        self.client = self.connection.client
        self.cluster = self.connection.local

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        from functools import partial

        tasks = list(tasks)
        stripped, shared = _strip_shared(tasks)
        if shared:  # large arrays common to the tasks travel once to every worker
            refs = {key: scatter_to_all(self.client, arr) for key, arr in shared.items()}
            futures = self.client.map(partial(_call_with_shared, fn), stripped,
                                      [refs] * len(stripped), pure=False,
                                      retries=self.retries)
        else:
            futures = self.client.map(partial(call_single_threaded, fn), tasks,
                                      pure=False, retries=self.retries)
        try:
            for fut in futures:  # a cluster left without workers fails, never hangs
                yield wait_result(fut)
        finally:
            cancel_futures(self.client, futures)

    def close(self) -> None:
        self.connection.close()




def _strip_shared(tasks: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    """For dataclass tasks: replace array fields that are one and the same large array in
    every task by a placeholder name; return the stripped tasks and ``{name: array}``."""
    import dataclasses

    import numpy as np

    if len(tasks) < 2 or not dataclasses.is_dataclass(tasks[0]):
        return tasks, {}
    shared = {}
    for f in dataclasses.fields(tasks[0]):
        value = getattr(tasks[0], f.name)
        if (isinstance(value, np.ndarray) and value.nbytes >= SHARE_BYTES
                and all(getattr(t, f.name) is value for t in tasks)):
            shared[f.name] = value
    if not shared:
        return tasks, {}
    blank = dict.fromkeys(shared)
    return [dataclasses.replace(t, **blank) for t in tasks], shared


def _call_with_shared(fn: Callable[[Any], Any], task: Any, shared: dict[str, Any]) -> Any:
    import dataclasses

    return call_single_threaded(fn, dataclasses.replace(task, **shared))


def make_executor(workers: int | None, backend: str = "threads",
                  scheduler: str | None = None) -> TaskExecutor:
    """The executor for a run.

    ``threads`` (default): serial for ``workers == 1``, else a :class:`ThreadExecutor`
    (None: one per core); ``processes``: a :class:`ProcessExecutor`; ``dask``: a
    :class:`DaskExecutor` on ``scheduler`` or on a local cluster of ``workers`` processes.
    Executors with a ``close()`` method are closed by the runner after the run.
    """
    if backend == "threads":
        return SERIAL if workers == 1 else ThreadExecutor(workers)
    if backend == "processes":
        return ProcessExecutor(workers)
    if backend == "dask":
        return DaskExecutor(scheduler, workers)
    raise ParameterError(f"unknown backend {backend!r}; choose one of: {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "DASK_QUIET", "SERIAL", "SHARE_BYTES", "DaskExecutor", "ProcessExecutor",
           "SerialExecutor", "TaskExecutor", "ThreadExecutor", "WorkerLost", "make_executor"]
