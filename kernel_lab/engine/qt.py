"""Relays a worker process's messages as Qt signals (the only Qt module of the engine).

The window talks to :class:`RunRelay` only: ``submit`` and ``cancel`` put commands on a
queue that the relay's thread executes between polls of the worker, so the GUI thread
never waits for the worker. Each run carries an id; messages of cancelled or superseded
runs are dropped before they become signals.
"""

from __future__ import annotations

import queue
from typing import Any

from PySide6 import QtCore

from kernel_lab.engine.process import ProcessRunner, RunRequest


class RunRelay(QtCore.QThread):
    """Owns a :class:`ProcessRunner` and turns its messages into signals."""

    progressed = QtCore.Signal(int, float, str)     # run id, fraction, message
    partial_arrived = QtCore.Signal(int, object)    # run id, PartialResult
    finished_run = QtCore.Signal(int, object)       # run id, RunResult
    failed = QtCore.Signal(int, str, bool)          # run id, message, is_user_error
    cancelled = QtCore.Signal(int, bool)            # run id, whether the worker was killed
    worker_started = QtCore.Signal(int)             # pid of a (new) worker process

    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self._commands: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stopping = False
        self.worker_pid: int | None = None

    def submit(self, request: RunRequest) -> None:
        self._commands.put(("submit", request))

    def cancel(self) -> None:
        self._commands.put(("cancel", None))

    def stop(self, wait_ms: int = 3000) -> None:
        """End the thread and the worker process."""
        self._commands.put(("stop", None))
        self.wait(wait_ms)

    def run(self) -> None:  # the relay thread
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
                    self._emit(event)
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
                self.failed.emit(arg.run_id, message, False)

    def _execute(self, runner: ProcessRunner) -> bool:
        while True:
            try:
                command, arg = self._commands.get_nowait()
            except queue.Empty:
                return True
            if command == "stop":
                return False
            if command == "submit":
                runner.submit(arg)
            elif command == "cancel":
                rid = runner.current
                killed = runner.cancel()
                if rid is not None:
                    self.cancelled.emit(rid, killed)
            self._announce(runner)

    def _announce(self, runner: ProcessRunner) -> None:
        if runner.pid != self.worker_pid:
            self.worker_pid = runner.pid
            self.worker_started.emit(int(runner.pid or 0))

    def _emit(self, event: tuple[Any, ...]) -> None:
        kind, rid = event[0], event[1]
        if kind == "progress":
            self.progressed.emit(rid, float(event[2]), str(event[3]))
        elif kind == "partial":
            self.partial_arrived.emit(rid, event[2])
        elif kind == "finished":
            self.finished_run.emit(rid, event[2])
        elif kind == "failed":
            self.failed.emit(rid, str(event[2]), bool(event[3]))
        elif kind == "cancelled":
            self.cancelled.emit(rid, False)
