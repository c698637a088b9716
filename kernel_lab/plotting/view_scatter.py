"""The scatter plots of :class:`~kernel_lab.plotting.view.PlotView`: points coloured by a
score on a scale shown below the legend, at most :data:`SCATTER_MAX` of them (faint when
many), and marked points on top."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kernel_lab.plotting.axes import fit_value_axis

#: Colour levels of a scatter plot's score scale …
SCATTER_LEVELS = 16
#: … drawn at least this tall (pixels), below the legend.
COLORBAR_MIN = 120
#: A scatter plot draws at most this many of its points (evenly spread over the table's,
#: which are a random subset already where the data are large) and says so …
SCATTER_MAX = 2000
#: … and above this many draws them small and faint, so that the marked points on top
#: stay visible (5,000 points buried a hundred landmarks).
SCATTER_FAINT = 500

class ScatterParts:
    """The scatter-plot half of :class:`~kernel_lab.plotting.view.PlotView` (a mixin: it
    uses the view's items, legend and column)."""

    def _draw_points(self, x: np.ndarray, y: np.ndarray, c: np.ndarray) -> None:
        """Points coloured by ``c`` on the viridis scale, drawn as one scatter item per
        colour level (a brush per point makes pyqtgraph redraw thousands of brushes),
        small and faint when there are many (:data:`SCATTER_FAINT`); the scale is shown
        beside the plot once there are scores."""
        import pyqtgraph as pg

        faint = x.size > SCATTER_FAINT
        if "points" not in self.curves or self._faint != faint:
            for item in self._levels:
                self.item.removeItem(item)
            cmap = pg.colormap.get("viridis")
            colors = cmap.mapToQColor(np.linspace(0.0, 1.0, SCATTER_LEVELS))
            self._levels = []
            for q in colors:
                if faint:
                    q.setAlpha(110)
                item = pg.ScatterPlotItem(size=(4 if faint else 6) * self.scale, pen=None,
                                          brush=pg.mkBrush(q))
                self.item.addItem(item)
                self._levels.append(item)
            self._faint = faint
            self.curves["points"] = self._levels[SCATTER_LEVELS // 3]
        finite = np.isfinite(c)
        if finite.any():
            lo, hi = float(np.min(c[finite])), float(np.max(c[finite]))
            t = (c - lo) / (hi - lo) if hi > lo else np.zeros_like(c)
            level = np.clip(np.nan_to_num(t) * (SCATTER_LEVELS - 1) + 0.5, 0,
                            SCATTER_LEVELS - 1).astype(int)
            self._show_scale(lo, hi)
        else:  # no scores yet: one colour
            level = np.zeros(x.size, dtype=int)
            self._show_scale(None, None)
        for i, item in enumerate(self._levels):
            sel = level == i
            item.setData(x[sel], y[sel])

    def _show_scale(self, lo: float | None, hi: float | None) -> None:
        """The colour scale of a scatter plot's points beside it, labelled with
        ``spec.color_label``; hidden while there are no scores (``lo`` None)."""
        import pyqtgraph as pg

        if lo is None or hi is None:
            if self.colorbar is not None:
                self.colorbar.hide()
            return
        if self.colorbar is None:
            self.colorbar = pg.ColorBarItem(
                values=(lo, hi), colorMap=pg.colormap.get("viridis"), interactive=False,
                label=self.spec.color_label or None, width=14 * self.scale,
                colorMapMenu=False)
            self.colorbar.getAxis("right").enableAutoSIPrefix(False)
            # in the legend's column, below the legend: beside the plot it widened the
            # plot past a docked window's width and pushed the legend out of view
            self.colorbar.setParentItem(self._holder)
            self._holder.geometryChanged.connect(self._place_colorbar)
        if hi <= lo:
            hi = lo + max(abs(lo), 1.0) * 1e-9
        self.colorbar.rounding = (hi - lo) * 1e-6  # its default (1) rounded 3e-4 to 0
        self.colorbar.setLevels((lo, hi))
        fit_value_axis(self.colorbar.axis, lo, hi, self.item.vb.height())
        self.colorbar.show()
        self._place_colorbar()

    def _place_colorbar(self, *_args: object) -> None:
        """The colour scale below the legend, down to the level of the plot's x axis."""
        from PySide6 import QtCore

        bar = self.colorbar
        if bar is None:
            return
        top = self.legend_height() + 16 * self.scale
        bottom = self._holder.height() - self.item.getAxis("bottom").height() - 8
        width = (bar.getAxis("left").width() + 14 * self.scale
                 + bar.getAxis("right").width() + 6)
        bar.setGeometry(QtCore.QRectF(6, top, width, max(bottom - top, COLORBAR_MIN
                                                          * self.scale)))

    def _sync_scatter_legend(self, entries: list[tuple[str, object]]) -> None:
        """The scatter plot's legend: its points and its marked points, those that are
        drawn (``entries``: text and item), rebuilt when they change."""
        if [(t, id(i)) for t, i in entries] == self._scatter_legend:
            return
        self._clear_legend()
        for text, item in entries:
            self.legend.addItem(item, text)
            self._legend_order.append(f"scatter:{text}")
        self._scatter_legend = [(t, id(i)) for t, i in entries]
        self._fit_legend()

    def _update_scatter(self, table: Mapping[str, Sequence[float] | np.ndarray]) -> int:
        """Points coloured by a score (viridis), with marked overlay points on top; at
        most :data:`SCATTER_MAX` points drawn, and the legend says how many of how many."""
        import pyqtgraph as pg

        spec = self.spec
        ycol = spec.curves[0].series
        if spec.x not in table or ycol not in table:
            return 0
        x = np.asarray(table[spec.x], dtype=np.float64)
        y = np.asarray(table[ycol], dtype=np.float64)
        ok = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
        total = np.asarray(table.get(spec.total, []), dtype=np.float64)
        total = total[np.isfinite(total)]
        of = max(int(total[0]) if total.size else 0, ok.size)
        if ok.size > SCATTER_MAX:  # evenly over the table's points
            ok = ok[np.linspace(0, ok.size - 1, SCATTER_MAX).round().astype(int)]
        c = (np.asarray(table[spec.color], dtype=np.float64)[ok] if spec.color in table
             else np.full(ok.size, np.nan))
        key = (x.tobytes(), y.tobytes(), c.tobytes())
        if key != self._scatter_key:  # partial results often repeat the point cloud
            self._scatter_key = key
            self._draw_points(x[ok], y[ok], c)
        if ok.size:
            self._has_data.add("points")
        else:
            self._has_data.discard("points")
        text = spec.curves[0].text
        if of > ok.size:
            text = f"{ok.size:,} of {of:,} {text}"
        entries: list[tuple[str, object]] = (
            [(text, self.curves["points"])] if ok.size and "points" in self.curves else [])
        if len(spec.overlay) == 2 and all(k in table for k in spec.overlay):
            ox = np.asarray(table[spec.overlay[0]], dtype=np.float64)
            oy = np.asarray(table[spec.overlay[1]], dtype=np.float64)
            good = np.isfinite(ox) & np.isfinite(oy)
            if "overlay" not in self.curves:
                self.curves["overlay"] = pg.ScatterPlotItem(
                    size=11 * self.scale, symbol="x", brush=None,
                    pen=pg.mkPen("#D55E00", width=2.5 * self.scale))
                self.curves["overlay"].setZValue(10)  # above every point
                self.item.addItem(self.curves["overlay"])
            self.curves["overlay"].setData(ox[good], oy[good])
            if good.any():
                self._has_data.add("overlay")
                entries.append((spec.overlay_label or "marked", self.curves["overlay"]))
            else:
                self._has_data.discard("overlay")
        self._sync_scatter_legend(entries)
        return int(ok.size)

    def column_height(self) -> float:
        """The height the legend's column needs: the legend, and a colour scale below
        it at its smallest."""
        bar = self.colorbar is not None and self.colorbar.isVisible()
        return self.legend_height() + (COLORBAR_MIN + 60) * self.scale * bar
