"""The worker plugin that sends a local cluster's workers' Dask log to the log file.

Apart from :mod:`kernel_lab.engine.dask_log` because it subclasses ``distributed``'s
``WorkerPlugin``: the window reads the log file without importing ``distributed``.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from kernel_lab.engine.dask_log import route_dask_log


class LogToFile(WorkerPlugin):
    """Worker plugin: the worker process's Dask log goes to ``path``
    (:func:`~kernel_lab.engine.dask_log.route_dask_log`; a local cluster's workers share
    this machine's file system). Set up again on every worker that joins — one a nanny
    restarted included."""

    name = "kernel-lab-dask-log"
    idempotent = True

    def __init__(self, path: str) -> None:
        self.path = path

    def setup(self, worker: Any) -> None:
        route_dask_log(self.path, rotate=False)
