"""The engine's only Qt module: carries a worker's messages to the GUI thread.

:class:`kernel_lab.engine.worker.Worker` computes in a plain thread; the window gives it
``post=gui_poster(window)``, so each message is delivered (and, if stale, dropped by its
ticket) on the GUI thread. The poster is a child of the window: once the window is
deleted, nothing is delivered any more.
"""

from __future__ import annotations

from collections.abc import Callable

import shiboken6
from PySide6 import QtCore

from kernel_lab.engine.worker import Post


class _Poster(QtCore.QObject):
    posted = QtCore.Signal(object)

    def __init__(self, parent: QtCore.QObject | None) -> None:
        super().__init__(parent)
        self.posted.connect(self._call, QtCore.Qt.ConnectionType.QueuedConnection)

    @QtCore.Slot(object)
    def _call(self, fn: Callable[[], None]) -> None:
        fn()


def gui_poster(parent: QtCore.QObject | None = None) -> Post:
    """``post(fn)``: run ``fn`` on the GUI thread (``parent``'s), from any thread."""
    poster = _Poster(parent)

    def post(fn: Callable[[], None]) -> None:
        try:
            if shiboken6.isValid(poster):
                poster.posted.emit(fn)
        except RuntimeError:  # deleted meanwhile: its window is gone, and so is the receiver
            pass

    return post
