"""The Playground's canvas: the view box that turns clicks and drags into painted points,
and the error axis of the small plots. The function view itself is
:class:`kernel_lab.plotting.function_view.FunctionView`."""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from kernel_lab.plotting.view import log_axis


class Painter(Protocol):
    """What the canvas needs of its owner (the Playground window): a canvas knows no
    window, so the two do not import each other."""

    def paint(self, points: list[tuple[float, float]], *, other_class: bool = False,
              continues: bool = False) -> None: ...

    def remove_nearest(self, x: np.ndarray) -> None: ...


def error_axis() -> pg.AxisItem:
    """The error axis of the small plots: the lab's log axis (decades or 1, 2, 5 times a
    power of ten in plain decimals, always two labels at least: pyqtgraph's own labels
    every minor tick as ``7·10⁻²``, and in a small plot they run into each other), with
    no SI prefix: the errors are read as they are (not "MSE (x0.001)")."""
    axis = log_axis("left")
    axis.enableAutoSIPrefix(False)
    return axis



class PaintBox(pg.ViewBox):
    """A view box where a click adds a point, a drag sprays points and a right-click
    removes the nearest one (the window decides what a point is)."""

    def __init__(self, owner: Painter) -> None:
        super().__init__(enableMenu=False)
        self.owner = owner
        self.setMouseEnabled(False, False)
        self._last: QtCore.QPointF | None = None

    def mouseClickEvent(self, ev: Any) -> None:
        p = self.mapSceneToView(ev.scenePos())
        shift = bool(ev.modifiers() & QtCore.Qt.KeyboardModifier.ShiftModifier)
        if ev.button() == QtCore.Qt.MouseButton.LeftButton:
            self.owner.paint([(p.x(), p.y())], other_class=shift)
            ev.accept()
        elif ev.button() == QtCore.Qt.MouseButton.RightButton:
            self.owner.remove_nearest(np.array([p.x(), p.y()]))
            ev.accept()

    def mouseDragEvent(self, ev: Any, axis: Any = None) -> None:
        if ev.button() != QtCore.Qt.MouseButton.LeftButton:
            ev.ignore()
            return
        ev.accept()
        p = self.mapSceneToView(ev.scenePos())
        if ev.isStart():
            self._last = p
        if self._last is not None and (ev.isStart() or math.hypot(
                p.x() - self._last.x(), p.y() - self._last.y()) > 0.15):
            rng = np.random.default_rng()
            spray = np.array([p.x(), p.y()]) + 0.08 * rng.standard_normal((3, 2))
            self.owner.paint([tuple(row) for row in spray],
                             other_class=bool(ev.modifiers()
                                              & QtCore.Qt.KeyboardModifier.ShiftModifier),
                             continues=not ev.isStart())  # one drag: one undo step
            self._last = p
