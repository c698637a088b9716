"""Headless rendering: an experiment's declared plots to a PNG (for ``kernel-lab run``,
reports and the self-test), on the offscreen platform when there is no display."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kernel_lab.experiments.plotspec import PlotSpec

if TYPE_CHECKING:
    from kernel_lab.plotting.view import PlotView


def ensure_app() -> object:
    """The running QApplication, or a new one on the offscreen platform when there is
    no display (so rendering works on servers and in CI)."""
    if "QT_QPA_PLATFORM" not in os.environ and not has_display():
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6 import QtWidgets

    return QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])


def has_display() -> bool:
    """True where a window can be shown (always on Windows and macOS)."""
    if sys.platform.startswith(("win", "darwin")):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def layout_plots(table: Mapping[str, Sequence[float] | np.ndarray], plots: Sequence[PlotSpec],
                 *, title: str = "", width: int = 1000, height_per_plot: int = 400,
                 colors: dict[str, str] | None = None,
                 summaries: Mapping[str, Any] | None = None) -> tuple[Any, list[PlotView]]:
    """The laid-out widget :func:`render_plots` exports (not shown on a screen) and its
    plot views. A plot whose legend is taller than its row gets a taller row, so no
    legend runs into the next one. The plots share one colour map (``colors``, group →
    colour, filled in as groups appear; pass the same dict to keep colours across
    several calls), so a method or kernel has one colour in all of them. Their texts are
    filled from the run's ``summaries`` (the inputs' names on the axes, say), and their
    left axes take one width, so that plots of one x above each other line up. Close the
    widget when done."""
    ensure_app()
    import pyqtgraph as pg

    from kernel_lab.plotting.view import PlotView

    pg.setConfigOptions(antialias=True, background="w", foreground="k")
    layout = pg.GraphicsLayoutWidget()
    head = 30 if title else 0
    layout.resize(width, max(1, len(plots)) * height_per_plot + head)
    if title:
        shown = title if len(title) <= 110 else title[:107] + "…"
        layout.addLabel(shown, row=0, col=0, colspan=2, size="12pt")
    views = []
    colors = {} if colors is None else colors
    for row, spec in enumerate(plots, start=1 if title else 0):
        view = PlotView(layout, row, spec, colors=colors)
        view.set_summaries(summaries)
        view.update(table)
        views.append(view)
    # Lay the widget out at its size without putting a window on the screen.
    layout.setAttribute(pg.QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    layout.show()
    pg.QtWidgets.QApplication.processEvents()
    row = max([height_per_plot] + [int(v.column_height()) + 40 for v in views])
    if row > height_per_plot:  # every row as tall as the tallest legend needs
        layout.resize(width, len(views) * row + head)
        pg.QtWidgets.QApplication.processEvents()
    for view in views:  # the ranges, and so the axes' labels, at the final size
        view.update(table)
    pg.QtWidgets.QApplication.processEvents()
    align_left_axes(views)
    return layout, views


def align_left_axes(views: Sequence[PlotView]) -> None:
    """Give the left axes of plots stacked in one picture the width of the widest, so
    that their view boxes, and x axes, start and end at the same place."""
    import pyqtgraph as pg

    axes = [v.item.getAxis("left") for v in views]
    if len(axes) < 2:
        return
    widest = max(a.width() for a in axes)
    for axis in axes:
        if abs(axis.width() - widest) > 0.5:
            axis.setWidth(int(np.ceil(widest)))
    pg.QtWidgets.QApplication.processEvents()


def render_plots(table: Mapping[str, Sequence[float] | np.ndarray], plots: Sequence[PlotSpec],
                 path: str | os.PathLike[str], *, title: str = "", width: int = 1000,
                 height_per_plot: int = 400, colors: dict[str, str] | None = None,
                 summaries: Mapping[str, Any] | None = None) -> Path:
    """Draw ``plots`` from ``table`` into one PNG, stacked vertically, in the colours of
    ``colors``, their texts filled from ``summaries`` (see :func:`layout_plots`).

    Columns a plot names but the table lacks are skipped; non-finite values (and
    non-positive ones on a log axis) leave gaps.
    """
    from pyqtgraph.exporters import ImageExporter

    layout, _ = layout_plots(table, plots, title=title, width=width,
                             height_per_plot=height_per_plot, colors=colors,
                             summaries=summaries)
    exporter = ImageExporter(layout.scene())
    exporter.parameters()["width"] = width
    try:
        return export_png(exporter, path)
    finally:
        layout.close()
        layout.deleteLater()


def export_png(exporter: Any, path: str | os.PathLike[str]) -> Path:
    """The image of a pyqtgraph ``ImageExporter`` as a PNG file at ``path``, written whole
    (:func:`~kernel_lab.engine.atomic.write_atomic`): Qt's own ``QImage.save`` reports a
    full disk only by returning False, and leaves the file cut short.

    Raises
    ------
    OSError
        When the image cannot be encoded or the file cannot be written whole.
    """
    from PySide6 import QtCore

    from kernel_lab.engine.atomic import write_atomic

    image = exporter.export(toBytes=True)
    data = QtCore.QByteArray()
    buffer = QtCore.QBuffer(data)
    buffer.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise OSError(f"cannot encode the picture {Path(path).name} as PNG")
    buffer.close()
    return write_atomic(path, data.data())
