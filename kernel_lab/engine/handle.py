"""One handle per run, and the launchers that make them (``launch(spec) -> RunHandle``).

A :class:`RunHandle` is the :class:`~kernel_lab.engine.worker.Ticket` of a run: its id (the
generation id of the worker that runs it), its :class:`RunSpec`, ``cancel()`` and its own
events. Both launchers are a :class:`~kernel_lab.engine.worker.Worker`:
:class:`ProcessLauncher` (the window) drives the worker process from the worker's thread,
:class:`InlineLauncher` (scripts, tests, the CLI's model) runs in the caller's thread.
Late messages of a cancelled or superseded run are dropped where the worker delivers
them, :meth:`Ticket.deliver <kernel_lab.engine.worker.Ticket.deliver>`; observers connect
to a handle's events and never compare run ids themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernel_lab.engine.events import Event
from kernel_lab.engine.spec import RunSpec
from kernel_lab.engine.worker import Job, Post, Ticket, Worker

TERMINAL = ("finished", "failed", "cancelled")


class RunHandle(Ticket):
    """A run that was prepared (:meth:`start` submits it) and can be cancelled.

    Events
    ------
    progressed(fraction, message), partial_arrived(PartialResult), finished(RunResult),
    failed(message, is_user_error), cancelled(worker_killed)
    """

    def __init__(self, run_id: int, spec: RunSpec, *, submit: Callable[[Ticket], None],
                 cancel: Callable[[Ticket], None]) -> None:
        super().__init__(run_id, spec, submit=submit, cancel=cancel)
        self.progressed: Event = Event()
        self.partial_arrived: Event = Event()
        self.finished: Event = Event()
        self.failed: Event = Event()
        self.cancelled: Event = Event()

    @property
    def run_id(self) -> int:
        return self.generation

    @property
    def spec(self) -> RunSpec:
        return self.request  # type: ignore[no-any-return]

    def _receive(self, kind: str, *payload: Any) -> None:
        if kind == "cancelled":
            self.cancelled.emit(bool(payload[0]) if payload else False)
            return
        {"progress": self.progressed, "partial": self.partial_arrived,
         "finished": self.finished, "failed": self.failed}[kind].emit(*payload)


class InlineLauncher:
    """Runs each started handle to its end in this thread (scripts, tests, the CLI's
    model): ``launch(spec)`` returns a handle; ``handle.start()`` returns when the run has
    ended. Cancelling from an observer stops the run at its next progress report."""

    def __init__(self) -> None:
        self.worker = Worker(self._run, inline=True)

    def __call__(self, spec: RunSpec) -> RunHandle:
        return self.worker.prepare(spec, RunHandle)

    @staticmethod
    def _run(job: Job) -> None:
        from kernel_lab.core.errors import KernelLabError
        from kernel_lab.core.progress import Cancelled
        from kernel_lab.engine.runner import run

        try:
            result = run(job.request,
                         on_progress=lambda f, m: job.emit("progress", f, m),
                         on_partial=lambda p: job.emit("partial", p),
                         is_cancelled=job.superseded)
        except Cancelled:
            job.emit("cancelled", False)
        except MemoryError as exc:
            if isinstance(exc, KernelLabError):
                raise  # a refusal by the memory budget: its message says what to do
            job.emit("failed", "out of memory: use fewer points or an approximate "
                               "method", False)
        else:
            job.emit("finished", result)


class ProcessLauncher:
    """Runs each started handle in the worker process (:mod:`kernel_lab.engine.process`),
    driven from a :class:`~kernel_lab.engine.worker.Worker` thread, so the caller never
    waits for it. The thread starts the process at once (a warm worker for the first
    run), submits each run, polls its messages and emits them; when the run is cancelled
    or superseded it asks the process to stop and kills it after
    :data:`~kernel_lab.engine.process.GRACE_S` if it sits in one long LAPACK call (the
    ``cancelled`` notice says whether it had to). ``post`` carries messages to the
    receiver's thread (the window: :func:`kernel_lab.engine.qt.gui_poster`).

    Events: ``worker_started(pid)`` — a (new) worker process started.
    """

    def __init__(self, post: Post | None = None) -> None:
        self.worker_started: Event = Event()
        self.worker_pid: int | None = None
        self._runner: Any = None
        self._refusal = ""
        self._closing = False
        self._post = post or (lambda fn: fn())
        self.worker = Worker(self._run, name="run-worker", post=post,
                             setup=self._open, teardown=self._close)

    def __call__(self, spec: RunSpec) -> RunHandle:
        return self.worker.prepare(spec, RunHandle)

    def close(self) -> None:
        """Cancel the run and stop the thread and the worker process."""
        self._closing = True
        self.worker.cancel()
        self.worker.close()

    def join(self, timeout: float | None = None) -> bool:
        return self.worker.join(timeout)

    # -- the worker thread ---------------------------------------------------------------
    def _open(self) -> None:
        from kernel_lab.engine.process import ProcessRunner

        try:
            self._runner = ProcessRunner()
        except Exception as exc:  # e.g. no process can be started here: said per run
            self._refusal = (f"the compute worker process could not start "
                             f"({type(exc).__name__}: {str(exc).strip().splitlines()[0]})")
            return
        self._announce()

    def _close(self) -> None:
        if self._runner is not None:
            self._runner.close()

    def _announce(self) -> None:
        pid = self._runner.pid
        if pid != self.worker_pid and not self._closing:
            self.worker_pid = pid
            self._post(lambda: self.worker_started.emit(int(pid or 0)))

    def _run(self, job: Job) -> None:
        runner = self._runner
        if runner is None:
            job.emit("failed", self._refusal, False)
            return
        runner.submit(job.generation, job.request)
        self._announce()
        while True:
            if job.superseded():
                if self._closing:
                    return  # the window is closing: the teardown stops the process
                killed = runner.cancel()
                self._announce()
                job.emit("cancelled", killed)
                return
            event = runner.poll(0.02)
            self._announce()  # restarted after a crash
            if event is not None:
                job.emit(event[0], *event[2:])
                if event[0] in TERMINAL:
                    return
