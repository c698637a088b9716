"""A Qt worker that runs an experiment off the GUI thread (the only Qt module of the engine).

Each run carries an id; the window ignores signals from runs it no longer waits for.
Cancellation is cooperative: the run stops at its next progress report.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from PySide6 import QtCore

from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.progress import Cancelled
from kernel_lab.engine.runner import run_experiment


class RunWorker(QtCore.QObject):
    """Runs one experiment in a QThread and reports through signals."""

    progressed = QtCore.Signal(int, float, str)     # run id, fraction, message
    partial_arrived = QtCore.Signal(int, object)    # run id, PartialResult
    finished = QtCore.Signal(int, object)           # run id, RunResult
    failed = QtCore.Signal(int, str, bool)          # run id, message, is_user_error
    cancelled = QtCore.Signal(int)

    def __init__(self, run_id: int, experiment: str, params: Mapping[str, Any],
                 data: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.experiment = experiment
        self.params = dict(params)
        self.data = data
        self._stop = threading.Event()

    def cancel(self) -> None:
        self._stop.set()

    @QtCore.Slot()
    def run(self) -> None:
        rid = self.run_id
        try:
            result = run_experiment(
                self.experiment, self.params, data=self.data,
                on_progress=lambda f, m: self.progressed.emit(rid, f, m),
                on_partial=lambda p: self.partial_arrived.emit(rid, p),
                is_cancelled=self._stop.is_set)
        except Cancelled:
            self.cancelled.emit(rid)
        except KernelLabError as exc:
            self.failed.emit(rid, str(exc), True)
        except MemoryError:
            self.failed.emit(rid, "out of memory: use fewer points or an approximate method",
                             False)
        except Exception as exc:  # reported in the window, never fatal to it
            self.failed.emit(rid, f"{type(exc).__name__}: {exc}", False)
        else:
            self.finished.emit(rid, result)
