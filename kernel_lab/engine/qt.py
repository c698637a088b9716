"""Relays a worker process's messages to run handles on the GUI thread (the only Qt
module of the engine).

``RunRelay.start(spec)`` returns a :class:`~kernel_lab.engine.handle.RunHandle`; starting
the handle puts the run on a command queue that the relay's thread executes between polls
of the worker, so the GUI thread never waits for the worker. The worker's messages cross
to the GUI thread as one queued signal and are handed to the run's handle, which drops
them once the run was cancelled or superseded. Starting a run cancels the previous one.
"""

from __future__ import annotations

import queue
from typing import Any

from PySide6 import QtCore

from kernel_lab.engine.handle import TERMINAL, RunHandle
from kernel_lab.engine.process import ProcessRunner
from kernel_lab.engine.spec import RunSpec


class RunRelay(QtCore.QThread):
    """Owns a :class:`ProcessRunner` in its thread and hands its messages to handles."""

    message = QtCore.Signal(int, str, object)   # run id, kind, payload tuple
    worker_started = QtCore.Signal(int)         # pid of a (new) worker process

    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self._commands: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._handles: dict[int, RunHandle] = {}
        self._next_id = 0
        self.worker_pid: int | None = None
        self.message.connect(self._route)  # queued: emitted from the relay's thread

    # -- GUI thread ----------------------------------------------------------------------
    def start_run(self, spec: RunSpec) -> RunHandle:
        """A handle for a run of ``spec`` (started with ``handle.start()``)."""
        self._next_id += 1
        return RunHandle(self._next_id, spec, submit=self._submit, cancel=self._cancel)

    __call__ = start_run  # a relay is a launcher: ``launch(spec) -> RunHandle``

    def _submit(self, handle: RunHandle) -> None:
        for other in list(self._handles.values()):
            other.cancel()  # one run at a time: a new one supersedes the old
        self._handles[handle.run_id] = handle
        self._commands.put(("submit", (handle.run_id, handle.spec)))

    def _cancel(self, handle: RunHandle) -> None:
        self._commands.put(("cancel", handle.run_id))

    @QtCore.Slot(int, str, object)
    def _route(self, run_id: int, kind: str, payload: tuple[Any, ...]) -> None:
        handle = self._handles.get(run_id)
        if handle is None:
            return
        handle.deliver(kind, *payload)
        if kind in TERMINAL:
            del self._handles[run_id]

    def stop(self, wait_ms: int = 3000) -> None:
        """End the thread and the worker process."""
        self._commands.put(("stop", None))
        self.wait(wait_ms)

    # -- relay thread --------------------------------------------------------------------
    def run(self) -> None:
        try:
            runner = ProcessRunner()
        except Exception as exc:  # e.g. no process can be started here: say so per run
            self._refuse(f"the compute worker process could not start "
                         f"({type(exc).__name__}: {str(exc).strip().splitlines()[0]})")
            return
        self._announce(runner)
        try:
            while True:
                if not self._execute(runner):
                    return
                event = runner.poll(0.02)
                if event is not None:
                    self.message.emit(event[1], event[0], tuple(event[2:]))
                if runner.pid != self.worker_pid:
                    self._announce(runner)  # restarted after a crash
        finally:
            runner.close()

    def _refuse(self, message: str) -> None:
        """Without a worker: answer every submitted run with ``failed`` until stopped."""
        while True:
            command, arg = self._commands.get()
            if command == "stop":
                return
            if command == "submit":
                self.message.emit(arg[0], "failed", (message, False))

    def _execute(self, runner: ProcessRunner) -> bool:
        while True:
            try:
                command, arg = self._commands.get_nowait()
            except queue.Empty:
                return True
            if command == "stop":
                return False
            if command == "submit":
                runner.submit(*arg)
            elif command == "cancel" and runner.current == arg:
                killed = runner.cancel()
                self.message.emit(arg, "cancelled", (killed,))
            self._announce(runner)

    def _announce(self, runner: ProcessRunner) -> None:
        if runner.pid != self.worker_pid:
            self.worker_pid = runner.pid
            self.worker_started.emit(int(runner.pid or 0))
