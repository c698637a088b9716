"""Running independent tasks: the executor protocol and the serial executor.

Tasks are ``fn(task)`` calls with a module-level ``fn`` and a picklable ``task``, so any
backend (threads, processes, a cluster: :mod:`kernel_lab.engine.executors`) can run them.
Every backend runs each task with one BLAS thread, as :class:`SerialExecutor` does here:
multi-threaded BLAS sums in another order, and results would then differ between backends
in the last bits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol


class TaskExecutor(Protocol):
    """Runs independent tasks, possibly in parallel; results come back in task order.

    Each task carries its own seed, so results do not depend on the backend.
    """

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]: ...


class SerialExecutor:
    """Runs tasks one after the other in this thread (the default).

    Each task runs with one BLAS thread, as on every parallel backend (see the module
    docstring). Work outside tasks keeps all BLAS threads.
    """

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        for task in tasks:
            yield call_single_threaded(fn, task)


def call_single_threaded(fn: Callable[[Any], Any], task: Any) -> Any:
    """``fn(task)`` with one BLAS thread (the parallelism, if any, is across tasks)."""
    with blas_controller().limit(limits=1):
        return fn(task)


#: The context :func:`one_blas_thread` uses when set (by :mod:`kernel_lab.engine.blas`).
ONE_BLAS_THREAD: Callable[[], Any] | None = None


def one_blas_thread() -> Any:
    """A context in which BLAS (and LAPACK) run on one thread: for small dense
    factorisations (a few hundred rows), where waking a second thread costs more than it
    saves. Measured on 2 cores: ``eigvalsh`` of 410 × 410 took 9 ms (median) on one thread
    and 49 ms on two on a busy machine; on a quiet one, recursive RLS (n = 50,000,
    s = 500) took 0.85 s with its factorisations on one thread and 0.98-1.10 s with all on
    two. The large block products keep both threads (on one, 1.19 s).

    threadpoolctl's limit is process-wide and restores on exit what it saw on entry, so
    two threads whose limits overlap without nesting could leave the process at one
    thread; the engine (:mod:`kernel_lab.engine.blas`) therefore sets
    :data:`ONE_BLAS_THREAD` to its reference-counted limit (this layer starts no threads
    and takes no locks)."""
    if ONE_BLAS_THREAD is not None:
        return ONE_BLAS_THREAD()
    return blas_controller().limit(limits=1)


_CONTROLLER: Any = None


def blas_controller() -> Any:
    """A threadpoolctl controller, created once (creating one scans the loaded libraries,
    which costs milliseconds every time).

    SciPy's BLAS is loaded first: SciPy links its own OpenBLAS, and a controller made
    before it was loaded would never limit it. A Dask worker whose first task needs no
    SciPy (the column statistics of a learning curve, since the core's tasks stopped
    importing scikit-learn, which loaded SciPy) then ran every later ``dsyrk`` of the
    normal sums on two threads per worker — four on two cores for two workers."""
    global _CONTROLLER
    if _CONTROLLER is None:
        import scipy.linalg.blas  # noqa: F401  (its OpenBLAS, before the scan)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


SERIAL = SerialExecutor()
