"""One handle per run: its id, its :class:`RunSpec`, its own events and ``cancel()``.

Whoever executes runs (the window's worker process through
:class:`kernel_lab.engine.qt.RunRelay`, or :class:`InlineLauncher` in this thread) delivers
each message of a run to that run's handle with :meth:`RunHandle.deliver`. That is the one
place where late messages are dropped: once a handle has ended (finished, failed) or was
cancelled, it delivers nothing more (except the one ``cancelled`` notice that says whether
the worker had to be killed). Observers connect to a handle's events and never compare run
ids themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernel_lab.engine.events import Event
from kernel_lab.engine.spec import RunSpec

TERMINAL = ("finished", "failed", "cancelled")


class RunHandle:
    """A run that was prepared (:meth:`start` submits it) and can be cancelled.

    Events
    ------
    progressed(fraction, message), partial_arrived(PartialResult), finished(RunResult),
    failed(message, is_user_error), cancelled(worker_killed)
    """

    def __init__(self, run_id: int, spec: RunSpec, *, submit: Callable[[RunHandle], None],
                 cancel: Callable[[RunHandle], None]) -> None:
        self.run_id = run_id
        self.spec = spec
        self._submit, self._cancel = submit, cancel
        self.status = "prepared"  # → running → finished | failed | cancelled
        self.progressed = Event()
        self.partial_arrived = Event()
        self.finished = Event()
        self.failed = Event()
        self.cancelled = Event()
        self._cancel_told = False

    @property
    def active(self) -> bool:
        return self.status in ("prepared", "running")

    def start(self) -> None:
        if self.status == "prepared":
            self.status = "running"
            self._submit(self)

    def cancel(self) -> None:
        """Stop the run; from now on its results are dropped."""
        if self.active:
            was_running = self.status == "running"
            self.status = "cancelled"
            if was_running:
                self._cancel(self)

    def deliver(self, kind: str, *payload: Any) -> None:
        """Hand a message of this run to its observers, unless the run has ended."""
        if kind == "cancelled":
            if not self._cancel_told:
                self._cancel_told = True
                self.status = "cancelled"
                self.cancelled.emit(bool(payload[0]) if payload else False)
            return
        if self.status != "running":
            return
        if kind in TERMINAL:
            self.status = kind
        {"progress": self.progressed, "partial": self.partial_arrived,
         "finished": self.finished, "failed": self.failed}[kind].emit(*payload)


class InlineLauncher:
    """Runs each started handle to its end in this thread (scripts, tests, the CLI's
    model): ``launch(spec)`` returns a handle; ``handle.start()`` returns when the run has
    ended. Cancelling from an observer stops the run at its next progress report."""

    def __init__(self) -> None:
        self._next = 0

    def __call__(self, spec: RunSpec) -> RunHandle:
        self._next += 1
        return RunHandle(self._next, spec, submit=self._execute, cancel=lambda h: None)

    @staticmethod
    def _execute(handle: RunHandle) -> None:
        from kernel_lab.core.errors import KernelLabError
        from kernel_lab.core.progress import Cancelled
        from kernel_lab.engine.runner import run

        try:
            result = run(handle.spec,
                         on_progress=lambda f, m: handle.deliver("progress", f, m),
                         on_partial=lambda p: handle.deliver("partial", p),
                         is_cancelled=lambda: not handle.active)
        except Cancelled:
            handle.deliver("cancelled", False)
        except KernelLabError as exc:
            handle.deliver("failed", str(exc), True)
        except MemoryError:
            handle.deliver("failed", "out of memory: use fewer points or an approximate "
                                     "method", False)
        except Exception as exc:  # reported as the worker process reports it
            handle.deliver("failed", f"{type(exc).__name__}: {exc}", False)
        else:
            handle.deliver("finished", result)
