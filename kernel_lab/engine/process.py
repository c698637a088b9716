"""Runs experiments in a separate worker process that can be stopped at any moment.

Cooperative cancellation (the ``Progress`` checks) cannot interrupt a single long LAPACK
call, so the window runs experiments here: a cancel first asks the run to stop at its next
report and, if it has not within a short grace period, terminates the process and starts a
fresh one. A crash or an out-of-memory kill of the worker becomes a ``failed`` event; the
caller's process is never affected.

Messages from the worker are tuples ``(kind, run_id, *payload)``:

- ``("progress", id, fraction, message)``
- ``("partial", id, PartialResult)``
- ``("finished", id, RunResult)``
- ``("failed", id, message, is_user_error)``
- ``("cancelled", id)``

No Qt here; :class:`kernel_lab.engine.handle.ProcessLauncher` drives it from its worker
thread and hands the messages to the runs' tickets.
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import queue
import time
from typing import Any

from kernel_lab.engine.heap import keep_heap_in_children, release_heap
from kernel_lab.engine.spec import RunSpec

#: Seconds a cancelled run gets to stop by itself before its process is terminated.
GRACE_S = 0.15
#: Scheduling priority of the worker process relative to the window (Unix ``nice``).
WORKER_NICENESS = 10


def _below_the_window() -> None:
    """Every thread of this process at the niceness of the calling (main) thread, which
    ``os.nice`` set (Linux; elsewhere nothing).

    ``os.nice`` sets the calling thread's priority only, and threads inherit their
    creator's: the BLAS threads numpy and SciPy start when they are imported — here,
    before the worker's first line, as the process unpickles its target — stayed at the
    window's priority and took half a core from the window's thread while a run used
    BLAS on both cores (a repaint of 7 ms of CPU took 15 ms). Threads started later
    (the run's pools) inherit the main thread's niceness."""
    import os

    try:
        tasks = os.listdir("/proc/self/task")
        niceness = os.getpriority(os.PRIO_PROCESS, 0)  # this thread's, on Linux
    except (OSError, AttributeError):
        return
    for tid in tasks:
        try:
            if os.getpriority(os.PRIO_PROCESS, int(tid)) < niceness:
                os.setpriority(os.PRIO_PROCESS, int(tid), niceness)
        except (OSError, ValueError, AttributeError):
            pass


def _worker_main(requests: Any, events: Any, cancel: Any) -> None:
    """Entry point of the worker process: serve requests until told to stop (None)."""
    import os

    try:
        # Below the window in the scheduler: with every core busy computing, the GUI
        # thread still gets the CPU the moment it needs it (no stutter while drawing).
        os.nice(WORKER_NICENESS)
    except (AttributeError, OSError):  # not on this platform: the run is unaffected
        pass
    import signal

    from kernel_lab.core.errors import KernelLabError
    from kernel_lab.core.progress import Cancelled
    from kernel_lab.engine.runner import run

    def stop(signum: int, frame: object) -> None:
        # Terminated (a cancel inside a long call, or the window closing): take the run's
        # own worker processes along, which would otherwise outlive this one.
        from kernel_lab.engine.executors import kill_pools

        kill_pools()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    _below_the_window()
    parent = mp.parent_process()
    while True:
        try:
            request = requests.get(timeout=0.5)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                return  # the window is gone (even if it crashed): do not linger
            continue
        if request is None:
            return
        rid, spec = request
        cancel.clear()
        last = [0.0]
        held: list[tuple[float, str]] = []  # the last report left out by the rate limit

        def progress(fraction: float, message: str, rid: int = rid,
                     last: list[float] = last, held: list[tuple[float, str]] = held
                     ) -> None:
            now = time.monotonic()
            held.clear()
            if now - last[0] >= 0.03 or fraction >= 1.0:  # at most ~30 reports a second
                last[0] = now
                events.put(("progress", rid, fraction, message))
            else:
                held.append((fraction, message))

        def flush(rid: int = rid, held: list[tuple[float, str]] = held) -> None:
            """The last report before the end, if the rate limit left it out (a run
            refused right after a report showed the report before it)."""
            for fraction, message in held:
                events.put(("progress", rid, fraction, message))
            held.clear()

        try:
            result = run(spec, on_progress=progress,
                         on_partial=lambda p, rid=rid: events.put(("partial", rid, p)),
                         is_cancelled=cancel.is_set)
            end: tuple[Any, ...] = ("finished", rid, result)
        except Cancelled:
            end = ("cancelled", rid)
        except KernelLabError as exc:
            end = ("failed", rid, str(exc), True)
        except MemoryError:
            end = ("failed", rid, "out of memory: use fewer points or an approximate method",
                   False)
        except Exception as exc:  # reported to the caller, never fatal to the worker
            end = ("failed", rid, f"{type(exc).__name__}: {exc}", False)
        flush()
        events.put(end)
        end = result = None  # the queue's feeder thread holds what it still has to send
        release_heap()  # an idle worker does not sit on the run's peak memory


class ProcessRunner:
    """One worker process that runs experiments on request, one at a time.

    Not thread-safe: call :meth:`submit`, :meth:`cancel` and :meth:`poll` from one thread
    (the worker thread of :class:`kernel_lab.engine.handle.ProcessLauncher` does).
    """

    def __init__(self) -> None:
        self._ctx = mp.get_context("spawn")  # the same on every OS, and under PyInstaller
        self._proc: Any = None
        self._current: int | None = None
        self._start()
        # The worker is not a daemon, and multiprocessing waits for such children at exit:
        # make sure it is told to stop first, even if close() is never called.
        atexit.register(self.close)

    def _start(self) -> None:
        keep_heap_in_children()
        ctx = self._ctx
        self._requests = ctx.Queue()
        self._events = ctx.Queue()
        self._cancel = ctx.Event()
        self._proc = ctx.Process(target=_worker_main, name="kernel-lab-worker",
                                 args=(self._requests, self._events, self._cancel),
                                 # not a daemon: a run may start its own worker processes
                                 # (process pool, local Dask cluster); it exits with the
                                 # window (close(), or it notices the parent is gone)
                                 daemon=False)
        self._proc.start()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def current(self) -> int | None:
        """Id of the run in progress (submitted and not ended), or None."""
        return self._current

    def submit(self, run_id: int, spec: RunSpec) -> None:
        """Start run ``run_id`` of ``spec``; a run still in progress is cancelled first."""
        if self._current is not None:
            self.cancel()
        if not self._proc.is_alive():
            self._restart()
        self._current = run_id
        self._requests.put((run_id, spec))

    def cancel(self, grace: float = GRACE_S) -> bool:
        """Stop the current run: ask it, then terminate the process after ``grace``
        seconds. Returns True when the process had to be terminated."""
        if self._current is None:
            return False
        rid, self._current = self._current, None
        self._cancel.set()
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                event = self._events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if event[0] in ("cancelled", "finished", "failed") and event[1] == rid:
                return False  # stopped (or ended) by itself; the worker is free again
        self._restart()
        return True

    def _restart(self) -> None:
        self._kill()
        self._start()

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.is_alive():
            proc.terminate()  # handled between two Python steps: pools are taken along
            proc.join(0.1)
            if proc.is_alive():  # inside one long C call: no handler runs, so kill it
                proc.kill()      # (its pool processes die with it: see executors.py)
                proc.join(1.0)
        for q in (getattr(self, "_requests", None), getattr(self, "_events", None)):
            if q is not None:
                q.cancel_join_thread()
                q.close()

    def poll(self, timeout: float = 0.05) -> tuple[Any, ...] | None:
        """The next message of the current run, or None. Messages of runs that were
        cancelled or superseded are dropped here. A worker that died mid-run yields a
        ``failed`` message (and a fresh worker is started)."""
        try:
            event = self._events.get(timeout=timeout)
        except queue.Empty:
            if self._current is not None and not self._proc.is_alive():
                rid, self._current = self._current, None
                code = self._proc.exitcode
                self._restart()
                return ("failed", rid, _death_message(code), False)
            return None
        if event[1] != self._current:
            return None
        if event[0] in ("finished", "failed", "cancelled"):
            self._current = None
        return event

    def close(self) -> None:
        """Stop the worker process (safe to call more than once)."""
        atexit.unregister(self.close)
        if self._proc is not None and self._proc.is_alive() and self._current is None:
            try:
                self._requests.put(None)
                self._proc.join(0.5)
            except (OSError, ValueError):
                pass
        self._kill()
        self._proc = None
        self._current = None


def _death_message(code: int | None) -> str:
    if code is not None and code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if name == "SIGKILL":
            return ("the computation was killed (SIGKILL) — most often the system ran out of "
                    "memory; use fewer points or an approximate method")
        return f"the computation crashed ({name}); the window is unaffected, try again"
    return f"the computation stopped unexpectedly (exit code {code})"
