"""Offscreen rendering of an experiment's declared plots to PNG with pyqtgraph."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from kernel_lab.experiments import PlotSpec

#: Colour-blind-safe palette (Okabe–Ito), used for curves in order.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442")


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


def curve_label(column: str) -> str:
    """Readable legend text for a result column, e.g. ``test_mse_ckrr`` → ``test mse (CKRR)``."""
    head, _, method = column.rpartition("_")
    if head and method.isalpha() and len(method) <= 6:
        return f"{head.replace('_', ' ')} ({method.upper()})"
    return column.replace("_", " ")


def _positive_mask(a: np.ndarray, log: bool) -> np.ndarray:
    m = np.isfinite(a)
    return m & (a > 0) if log else m


def render_plots(table: Mapping[str, Sequence[float] | np.ndarray], plots: Sequence[PlotSpec],
                 path: str | os.PathLike[str], *, title: str = "", width: int = 900,
                 height_per_plot: int = 420) -> Path:
    """Draw ``plots`` from ``table`` into one PNG, stacked vertically.

    Columns a plot names but the table lacks are skipped; non-finite values (and
    non-positive ones on a log axis) leave gaps.
    """
    ensure_app()
    import pyqtgraph as pg
    from pyqtgraph.exporters import ImageExporter

    pg.setConfigOptions(antialias=True, background="w", foreground="k")
    layout = pg.GraphicsLayoutWidget()
    layout.resize(width, max(1, len(plots)) * height_per_plot + (30 if title else 0))
    if title:
        layout.addLabel(title, row=0, col=0, size="13pt")
    for row, spec in enumerate(plots, start=1 if title else 0):
        item = layout.addPlot(row=row, col=0, title=spec.title)
        item.setLogMode(x=spec.logx, y=spec.logy)
        item.setLabel("bottom", spec.xlabel or spec.x)
        item.setLabel("left", spec.ylabel)
        item.showGrid(x=True, y=True, alpha=0.25)
        legend = item.addLegend(offset=(-10, 10))
        x = np.asarray(table.get(spec.x, []), dtype=np.float64)
        for k, col in enumerate(c for c in spec.y if c in table):
            y = np.asarray(table[col], dtype=np.float64)
            mask = _positive_mask(x, spec.logx) & _positive_mask(y, spec.logy)
            if not mask.any():
                continue
            color = PALETTE[k % len(PALETTE)]
            dashed = "risk" in col or "limit" in col
            pen = pg.mkPen(color, width=2,
                           style=pg.QtCore.Qt.PenStyle.DashLine if dashed else
                           pg.QtCore.Qt.PenStyle.SolidLine)
            item.plot(x[mask], y[mask], pen=pen, symbol="o", symbolSize=4, symbolBrush=color,
                      symbolPen=None, name=curve_label(col))
        legend.setBrush(pg.mkBrush(255, 255, 255, 200))
    # Lay the widget out at its size without putting a window on the screen.
    layout.setAttribute(pg.QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    layout.show()
    pg.QtWidgets.QApplication.processEvents()
    path = Path(path)
    exporter = ImageExporter(layout.scene())
    exporter.parameters()["width"] = width
    exporter.export(str(path))
    layout.close()
    layout.deleteLater()
    return path
