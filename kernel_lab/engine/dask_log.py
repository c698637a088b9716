"""Dask's own log kept out of the user's terminal.

Dask's ``distributed`` package logs to standard error: a lost scheduler alone prints some
forty lines of ``distributed.client - ERROR`` tracebacks before Kernel Lab can say, in one
line, what happened. :func:`route_dask_log` sends those records to a log file instead
(:func:`dask_log_path`: ``$KERNEL_LAB_DASK_LOG``, else ``dask.log`` in the user's cache
folder), in this process and — with :class:`LogToFile`, a worker plugin — in the worker
processes of a local cluster, restarted workers included. Kernel Lab's own messages about
the cluster (:mod:`kernel_lab.engine.cluster`) name the file.

Imported only when a Dask cluster is used (it imports ``distributed``).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

#: The loggers Dask configures with a handler on standard error (``distributed``'s
#: logging set-up), and ``asyncio``, whose records here come from Dask's event loop (e.g.
#: "Task exception was never retrieved" after a wait on the cluster was cut); everything
#: below them goes to the file too.
DASK_LOGGERS = ("distributed", "tornado", "bokeh", "asyncio")

#: A log file larger than this (bytes) is moved aside to ``dask.log.1`` when routing starts.
LOG_KEEP_BYTES = 8 * 2**20

_FORMAT = "%(asctime)s - pid %(process)d - %(name)s - %(levelname)s - %(message)s"


def dask_log_path() -> Path:
    """Where Dask's log goes: ``$KERNEL_LAB_DASK_LOG`` if set, else ``dask.log`` in the
    user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux,
    ``~/Library/Logs`` on macOS, ``%LOCALAPPDATA%`` on Windows) under ``kernel-lab``."""
    chosen = os.environ.get("KERNEL_LAB_DASK_LOG")
    if chosen:
        return Path(chosen).expanduser().absolute()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Logs"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kernel-lab" / "dask.log"


class _DaskFile(logging.FileHandler):
    """The file handler :func:`route_dask_log` installs (recognised by its class)."""


class _DaskNowhere(logging.NullHandler):
    """What :func:`route_dask_log` installs when the file cannot be written."""


def _is_terminal_handler(handler: logging.Handler) -> bool:
    """Dask's own handler: a plain stream handler (on standard error — or on what stood
    for it when ``distributed`` was imported, e.g. a test's capture)."""
    return type(handler) is logging.StreamHandler


def route_dask_log(path: str | os.PathLike[str] | None = None, *, rotate: bool = True
                   ) -> Path | None:
    """Send Dask's log records in this process to ``path`` (default
    :func:`dask_log_path`) instead of the terminal; returns the file, or None when it
    cannot be written (Dask's records are then dropped rather than printed: the run's own
    messages say what happened). Calling it again changes nothing."""
    target = Path(path) if path is not None else dask_log_path()
    handler: logging.Handler
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if rotate and target.exists() and target.stat().st_size > LOG_KEEP_BYTES:
            os.replace(target, target.with_name(target.name + ".1"))
        handler = _DaskFile(target, encoding="utf-8", delay=True)
    except OSError:
        handler, target = _DaskNowhere(), None  # type: ignore[assignment]
    handler.setFormatter(logging.Formatter(_FORMAT))
    # Dask gives some loggers below these their own handler (distributed.client, …)
    known = list(logging.root.manager.loggerDict)
    for name in [n for n in known if n.split(".")[0] in DASK_LOGGERS]:
        below = logging.getLogger(name)
        for old in list(below.handlers):
            if _is_terminal_handler(old) or isinstance(old, _DaskFile | _DaskNowhere):
                below.removeHandler(old)
                if isinstance(old, _DaskFile):
                    old.close()
        below.propagate = True  # Dask sets False beside its handler: up to the file's
    for name in DASK_LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False  # not to the root logger (nor Python's last resort)
    return target


class LogToFile(WorkerPlugin):
    """Worker plugin: the worker process's Dask log goes to ``path`` (a local cluster's
    workers share this machine's file system). Set up again on every worker that joins —
    one a nanny restarted included."""

    name = "kernel-lab-dask-log"
    idempotent = True

    def __init__(self, path: str) -> None:
        self.path = path

    def setup(self, worker: Any) -> None:
        route_dask_log(self.path, rotate=False)


__all__ = ["DASK_LOGGERS", "LogToFile", "dask_log_path", "route_dask_log"]
