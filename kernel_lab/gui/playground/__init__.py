"""The Playground window: ``window`` (:class:`PlaygroundWindow`: layout, drawing, gestures),
``controls`` (the form), ``canvas`` (the view box that paints, the error axis) and
``words`` (how methods are named, which controls each uses)."""

from __future__ import annotations

from kernel_lab.gui.playground.canvas import PaintBox, error_axis
from kernel_lab.gui.playground.window import PlaygroundWindow, open_playground

__all__ = ["PaintBox", "PlaygroundWindow", "error_axis", "open_playground"]
