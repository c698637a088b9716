"""The pins of :class:`~kernel_lab.plotting.view.PlotView`: the curves of an earlier
result drawn faded and dashed under the current ones, to compare runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kernel_lab.experiments.plotspec import PIN_MAX_POINTS, peak_rows, resolve_curves
from kernel_lab.plotting.ranges import positive_mask
from kernel_lab.plotting.styles import assign_colors

#: A pinned curve of more points than this is drawn with a hairline (see add_pin).
PIN_THICK_MAX = 300


class PinParts:
    """The pinned half of :class:`~kernel_lab.plotting.view.PlotView` (a mixin: it uses
    the view's plot item, spec, colours and :attr:`pins`)."""

    def add_pin(self, table: Mapping[str, Sequence[float] | np.ndarray]) -> int:
        """Draw the curves of an earlier result ``table`` as a faded, dashed overlay (to
        compare runs); returns how many curves were drawn."""
        import pyqtgraph as pg

        spec = self.spec
        if spec.kind != "lines":
            return 0
        count = 0
        lines = resolve_curves(spec, table)
        colors = assign_colors(lines, self.colors)
        for line in lines:
            col, xcol, color = line.column, line.x, colors[line.group]
            if np.shape(table[xcol]) != np.shape(table[col]):
                continue
            x = np.asarray(table[xcol], dtype=np.float64)
            y = np.asarray(table[col], dtype=np.float64)
            mask = positive_mask(x, spec.logx) & positive_mask(y, self.logy)
            if not mask.any():
                continue
            xs = np.log10(x[mask]) if spec.logx else x[mask]
            ys = np.log10(y[mask]) if self.logy else y[mask]
            rows = peak_rows([xs, ys], PIN_MAX_POINTS)  # its shape, in as many points
            xs, ys = xs[rows], ys[rows]
            faded = pg.mkColor(color)
            faded.setAlpha(100)
            # a dense one in a hairline: Qt paints thick translucent dashes along
            # thousands of short steps slowly (2,000 points: 100 ms a paint; 1 ms thin)
            width = 1.5 * self.scale if xs.size <= PIN_THICK_MAX else 1.0
            ghost = pg.PlotDataItem(xs, ys, pen=pg.mkPen(
                faded, width=width, style=pg.QtCore.Qt.PenStyle.DashLine))
            ghost.setZValue(-10)
            self.item.vb.addItem(ghost)  # raw coordinates: already log-mapped above
            self.pins.append(ghost)
            count += 1
        return count

    def clear_pins(self) -> None:
        """Remove every pinned curve."""
        for ghost in self.pins:
            self.item.vb.removeItem(ghost)
        self.pins.clear()
