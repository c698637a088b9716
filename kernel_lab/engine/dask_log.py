"""Dask's own log kept out of the user's terminal.

Dask's ``distributed`` package logs to standard error: a lost scheduler alone prints some
forty lines of ``distributed.client - ERROR`` tracebacks before Kernel Lab can say, in one
line, what happened. :func:`route_dask_log` sends those records to a log file instead
(:func:`dask_log_path`: ``$KERNEL_LAB_DASK_LOG``, else ``dask.log`` in the user's cache
folder), in this process and — with a worker plugin
(:class:`~kernel_lab.engine.dask_plugin.LogToFile`) — in the worker processes of a local
cluster, restarted workers included. Kernel Lab's own messages about
the cluster (:mod:`kernel_lab.engine.cluster_wait`) name the file.

The window shows the warnings and errors a run on Dask added to the file in its Log
(:class:`LogTail`); this module does not import ``distributed``, so the window can read
the file without it.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

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


#: The file :func:`route_dask_log` last sent this process's records to (None: none yet,
#: or it could not be written).
_routed: Path | None = None


def routed_file() -> Path | None:
    """The file Dask's log in this process goes to, for messages (None: not routed)."""
    return _routed


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
    global _routed
    _routed = target
    return target


#: The levels of the records :class:`LogTail` shows (a formatted line names its level).
SHOWN_LEVELS = ("WARNING", "ERROR", "CRITICAL")


class LogTail:
    """The warnings and errors Dask writes to its log file from now on: made when a run
    starts, read with :meth:`new_records` when it ends (for the window's Log)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else dask_log_path()
        try:
            self.offset = self.path.stat().st_size
        except OSError:
            self.offset = 0

    def new_records(self, limit: int = 20, max_bytes: int = 1 << 20) -> tuple[list[str], int]:
        """The first ``limit`` warning or error records written since this tail was made
        (one line each: a record's traceback lines are left in the file) and how many
        more there are; reads at most ``max_bytes`` of new text."""
        try:
            size = self.path.stat().st_size
            if size < self.offset:  # moved aside (rotated) since: read the new file whole
                self.offset = 0
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                text = fh.read(max_bytes).decode("utf-8", errors="replace")
        except OSError:
            return [], 0
        found = [line for line in text.splitlines()
                 if any(f" - {level} - " in line for level in SHOWN_LEVELS)]
        return found[:limit], max(0, len(found) - limit)


__all__ = ["DASK_LOGGERS", "LogTail", "dask_log_path", "route_dask_log", "routed_file"]
