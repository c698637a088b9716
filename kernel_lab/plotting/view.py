"""Offscreen rendering of an experiment's declared plots to PNG with pyqtgraph."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from kernel_lab.experiments import PlotSpec
from kernel_lab.experiments.base import expand_columns

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


LEGEND_WIDTH = 190
#: Colour levels of a scatter plot's score scale.
SCATTER_LEVELS = 16

_KIND_LABELS = (("limit", "limit"), ("thm2", "Theorem 2"), ("lemma1", "Lemma 1"),
                ("emp", "empirical"))


def curve_label(column: str, labels: Mapping[str, str] | None = None) -> str:
    """Readable legend text: an explicit label from the plot, else ``test_mse_ckrr`` →
    ``test mse (CKRR)`` and ``R_test_limit[linear]`` → ``linear: limit``."""
    if labels and column in labels:
        return labels[column]
    if column.endswith("]") and "[" in column:
        head, key = column[:-1].split("[", 1)
        kind = next((text for tag, text in _KIND_LABELS if tag in head), head.replace("_", " "))
        return f"{key}: {kind}"
    head, _, method = column.rpartition("_")
    if head and method in ("krr", "ckrr", "rff", "dsg", "gfc"):
        return f"{head.replace('_', ' ')} ({method.upper()})"
    return column.replace("_", " ")


def curve_group(column: str) -> str:
    """Curves of one group share a colour: the bracketed key (a kernel) or the column."""
    if column.endswith("]") and "[" in column:
        return column[:-1].split("[", 1)[1]
    return column


def curve_style(column: str, color: str, scale: float = 1.0) -> dict[str, object]:
    """pyqtgraph keyword arguments: limits are lines, empirical means are dots, estimators
    dashed (Theorem 2) or dotted (Lemma 1), noiseless risks dashed. ``scale`` widens
    lines and symbols (presentation mode)."""
    import pyqtgraph as pg

    Qt = pg.QtCore.Qt.PenStyle
    if "limit" in column:
        return {"pen": pg.mkPen(color, width=2.5 * scale), "symbol": None}
    if "thm2" in column or "risk" in column:
        return {"pen": pg.mkPen(color, width=2 * scale, style=Qt.DashLine), "symbol": None}
    if "lemma1" in column:
        return {"pen": pg.mkPen(color, width=2 * scale, style=Qt.DotLine), "symbol": None}
    if "emp" in column:
        return {"pen": None, "symbol": "o", "symbolSize": 6 * scale, "symbolBrush": color,
                "symbolPen": None}
    return {"pen": pg.mkPen(color, width=2 * scale), "symbol": "o", "symbolSize": 4 * scale,
            "symbolBrush": color, "symbolPen": None}


def plot_columns(spec: PlotSpec, columns: Sequence[str],
                 colors: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(column, colour) pairs for a plot: patterns expanded, one colour per group.
    ``colors`` (group → colour) is shared between plots so that a method or kernel keeps
    its colour everywhere; new groups are added to it."""
    chosen = expand_columns(spec.y, columns)
    groups: dict[str, str] = {} if colors is None else colors
    out = []
    for col in chosen:
        g = curve_group(col)
        groups.setdefault(g, PALETTE[len(groups) % len(PALETTE)])
        out.append((col, groups[g]))
    return out


def _positive_mask(a: np.ndarray, log: bool) -> np.ndarray:
    m = np.isfinite(a)
    return m & (a > 0) if log else m


def _log_axis(orientation: str) -> object:
    """An axis that, in log mode, labels only 1, 2 and 5 times a power of ten (the
    default labels every minor tick, and they run into each other)."""
    import pyqtgraph as pg

    class SparseLogAxis(pg.AxisItem):
        def tickStrings(self, values, scale, spacing):
            if not self.logMode:
                return super().tickStrings(values, scale, spacing)
            decades = (max(values) - min(values)) if len(values) > 1 else 0.0
            keep = (1.0,) if decades > 3 else (1.0, 2.0, 5.0)
            out = []
            for v in values:
                x = 10.0 ** v
                mantissa = x / 10.0 ** np.floor(np.log10(x) + 1e-9)
                out.append(f"{x:g}" if any(abs(mantissa - k) < 1e-6 for k in keep) else "")
            return out

    return SparseLogAxis(orientation)


def _marks_minimum(column: str, columns: list[tuple[str, str]]) -> bool:
    """Which curves get a star at their minimum: the limit curves where there are any
    (one star per kernel), else every curve drawn as a line (not dots or estimates)."""
    if any("limit" in c for c, _ in columns):
        return "limit" in column
    return not any(tag in column for tag in ("emp", "thm2", "lemma1"))


class PlotView:
    """One declared plot inside a pyqtgraph GraphicsLayout, updated in place.

    Curves are created the first time their column appears and afterwards only get
    ``setData``; the legend sits in the column to the right of the plot, so it never
    hides data.
    """

    def __init__(self, layout: object, row: int, spec: PlotSpec, *,
                 colors: dict[str, str] | None = None, scale: float = 1.0,
                 mark_minima: bool = False) -> None:
        import pyqtgraph as pg

        self.spec = spec
        self.colors = colors
        self.scale = scale
        self.mark_minima = mark_minima
        self.minima: dict[str, object] = {}
        self.pins: list[object] = []
        self._scatter_key: tuple[bytes, ...] | None = None
        self._levels: list[object] = []
        self.item = item = layout.addPlot(
            row=row, col=0, title=spec.title,
            axisItems={"bottom": _log_axis("bottom"), "left": _log_axis("left")})
        item.setLogMode(x=spec.logx, y=spec.logy)
        item.setLabel("bottom", spec.xlabel or spec.x)
        item.setLabel("left", spec.ylabel)
        for side in ("left", "bottom"):
            item.getAxis(side).enableAutoSIPrefix(False)
            # major and minor ticks only: the third level adds dozens of grid lines on
            # log axes and a quarter of the cost of every repaint
            item.getAxis(side).setStyle(maxTickLevel=1)
        item.showGrid(x=True, y=True, alpha=0.25)
        holder = layout.addLayout(row=row, col=1)
        holder.setFixedWidth(LEGEND_WIDTH * scale)
        self.legend = pg.LegendItem(verSpacing=-6, labelTextSize=f"{9 * scale:.0f}pt")
        if scale != 1.0:
            item.setTitle(spec.title, size=f"{11 * scale:.0f}pt")
            font = pg.QtGui.QFont()
            font.setPointSizeF(9 * scale)
            for side in ("left", "bottom"):
                axis = item.getAxis(side)
                axis.setTickFont(font)
                axis.label.setFont(font)
        self.legend.setParentItem(holder)
        self.legend.anchor(itemPos=(0, 0), parentPos=(0, 0), offset=(0, 28))
        self.curves: dict[str, object] = {}
        self.error_bars: dict[str, object] = {}  # spread bands (FillBetweenItem)
        self._band_edges: dict[str, tuple[object, object]] = {}
        self._legend_keys: set[str] = set()
        self._legend_samples: list[object] = []

    def _sync_legend(self, columns: list[tuple[str, str]]) -> None:
        """Per-column entries, except for grouped columns (``R_test_limit[linear]``):
        one entry per group (its colour) then one per kind of curve (its line style),
        so four kernels × three kinds need seven lines, not twelve."""
        import pyqtgraph as pg

        wanted: list[tuple[str, dict[str, object] | None, str]] = []
        kinds: list[tuple[str, dict[str, object] | None, str]] = []
        for col, color in columns:
            group = curve_group(col)
            if group == col:
                wanted.append((f"col:{col}", None, col))
                continue
            wanted.append((f"group:{group}", {"pen": pg.mkPen(color, width=6)}, group))
            kind = curve_label(col).split(": ", 1)[1]
            kinds.append((f"kind:{kind}", curve_style(col, "#555555"), kind))
        if len({key for key, _, _ in kinds}) < 2:
            kinds = []  # one kind of curve: the colours say it all
        for key, style, text in wanted + kinds:
            if key in self._legend_keys:
                continue
            self._legend_keys.add(key)
            if style is None:  # an ungrouped column: its own curve is the sample
                self.legend.addItem(self.curves[text], curve_label(text, self.spec.labels))
            else:
                sample = pg.PlotDataItem([], [], **style)
                self._legend_samples.append(sample)
                self.legend.addItem(sample, text)

    def _x_column(self, column: str) -> str:
        return self.spec.x.replace("*", curve_group(column)) if "*" in self.spec.x \
            else self.spec.x

    def _draw_points(self, x: np.ndarray, y: np.ndarray, c: np.ndarray) -> None:
        """Points coloured by ``c`` on the viridis scale, drawn as one scatter item per
        colour level (a brush per point makes pyqtgraph redraw thousands of brushes)."""
        import pyqtgraph as pg

        if "points" not in self.curves:
            cmap = pg.colormap.get("viridis")
            colors = cmap.mapToQColor(np.linspace(0.0, 1.0, SCATTER_LEVELS))
            self._levels = []
            for q in colors:
                item = pg.ScatterPlotItem(size=6 * self.scale, pen=None, brush=pg.mkBrush(q))
                self.item.addItem(item)
                self._levels.append(item)
            self.curves["points"] = self._levels[SCATTER_LEVELS // 3]
            self.legend.addItem(self.curves["points"],
                                curve_label(self.spec.y[0], self.spec.labels))
        finite = np.isfinite(c)
        if finite.any():
            lo, hi = float(np.min(c[finite])), float(np.max(c[finite]))
            t = (c - lo) / (hi - lo) if hi > lo else np.zeros_like(c)
            level = np.clip(np.nan_to_num(t) * (SCATTER_LEVELS - 1) + 0.5, 0,
                            SCATTER_LEVELS - 1).astype(int)
        else:  # no scores yet: one colour
            level = np.zeros(x.size, dtype=int)
        for i, item in enumerate(self._levels):
            sel = level == i
            item.setData(x[sel], y[sel])

    def _update_scatter(self, table: Mapping[str, Sequence[float] | np.ndarray]) -> int:
        """Points coloured by a score (viridis), with marked overlay points on top."""
        import pyqtgraph as pg

        spec = self.spec
        if spec.x not in table or spec.y[0] not in table:
            return 0
        x = np.asarray(table[spec.x], dtype=np.float64)
        y = np.asarray(table[spec.y[0]], dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        c = (np.asarray(table[spec.color], dtype=np.float64)[ok] if spec.color in table
             else np.full(int(ok.sum()), np.nan))
        key = (x.tobytes(), y.tobytes(), c.tobytes())
        if key != self._scatter_key:  # partial results often repeat the point cloud
            self._scatter_key = key
            self._draw_points(x[ok], y[ok], c)
        if len(spec.overlay) == 2 and all(k in table for k in spec.overlay):
            ox = np.asarray(table[spec.overlay[0]], dtype=np.float64)
            oy = np.asarray(table[spec.overlay[1]], dtype=np.float64)
            good = np.isfinite(ox) & np.isfinite(oy)
            if "overlay" not in self.curves:
                self.curves["overlay"] = pg.ScatterPlotItem(
                    size=9, symbol="x", pen=pg.mkPen("#D55E00", width=1.5), brush=None)
                self.item.addItem(self.curves["overlay"])
                self.legend.addItem(self.curves["overlay"],
                                    curve_label(spec.overlay[0], spec.labels))
            self.curves["overlay"].setData(ox[good], oy[good])
        return int(ok.sum())

    def update(self, table: Mapping[str, Sequence[float] | np.ndarray]) -> int:
        """Show the current values of the plot's columns; returns how many have data."""
        import pyqtgraph as pg

        spec = self.spec
        if spec.kind == "scatter":
            return self._update_scatter(table)
        errors = {c: e for pat, epat in spec.y_err.items()
                  for c, e in zip(expand_columns([pat], table), expand_columns([epat], table),
                                  strict=False)}
        shown = 0
        columns = [(c, color) for c, color in plot_columns(spec, list(table), self.colors)
                   if self._x_column(c) in table
                   and np.shape(table[c]) == np.shape(table[self._x_column(c)])]
        if self.columns() - {c for c, _ in columns}:
            self.clear()  # curves (a kernel, a method) that are no longer in the results
        for col, color in columns:
            x = np.asarray(table[self._x_column(col)], dtype=np.float64)
            y = np.asarray(table[col], dtype=np.float64)
            mask = _positive_mask(x, spec.logx) & _positive_mask(y, spec.logy)
            if col not in self.curves:
                self.curves[col] = self.item.plot([], [], **curve_style(col, color,
                                                                         self.scale))
            self.curves[col].setData(x[mask], y[mask])
            shown += bool(mask.any())
            if self.mark_minima and mask.any() and _marks_minimum(col, columns):
                self._mark_minimum(col, color, x[mask], y[mask])
            if col in errors and not spec.logy:
                err = np.asarray(table[errors[col]], dtype=np.float64)[mask]
                xs = np.log10(x[mask]) if spec.logx else x[mask]
                ok = np.isfinite(err)
                if col not in self.error_bars:  # a shaded band: mean ± spread
                    lo, hi = pg.PlotCurveItem(), pg.PlotCurveItem()
                    shade = pg.mkColor(color)
                    shade.setAlpha(45)
                    band = pg.FillBetweenItem(lo, hi, brush=pg.mkBrush(shade))
                    band.setZValue(-5)
                    self.item.addItem(band)
                    self.error_bars[col] = band
                    self._band_edges[col] = (lo, hi)
                lo, hi = self._band_edges[col]
                mid = y[mask][ok]
                lo.setData(xs[ok], mid - err[ok])
                hi.setData(xs[ok], mid + err[ok])
        self._sync_legend(columns)
        if spec.y_range_from:
            ref = [np.asarray(table[c], dtype=np.float64)
                   for c in expand_columns(spec.y_range_from, table)]
            vals = np.concatenate(ref) if ref else np.array([])
            vals = vals[np.isfinite(vals)]
            if vals.size:
                lo, hi = float(vals.min()), float(vals.max())
                pad = 0.5 * (hi - lo) + 1e-12
                self.item.setYRange(lo - pad, hi + pad, padding=0)
        return shown


    def _mark_minimum(self, col: str, color: str, x: np.ndarray, y: np.ndarray) -> None:
        """A star at the minimum of the curve (λ* of a risk curve)."""
        import pyqtgraph as pg

        if col not in self.minima:
            self.minima[col] = pg.ScatterPlotItem(symbol="star", size=18 * self.scale,
                                                  brush=pg.mkBrush(color),
                                                  pen=pg.mkPen("k", width=1.0))
            self.minima[col].setZValue(20)  # above the curves
            self.item.addItem(self.minima[col])
        k = int(np.argmin(y))
        xs = np.log10(x[k]) if self.spec.logx else x[k]
        ys = np.log10(y[k]) if self.spec.logy else y[k]
        self.minima[col].setData([xs], [ys])

    def add_pin(self, table: Mapping[str, Sequence[float] | np.ndarray]) -> int:
        """Draw the curves of an earlier result ``table`` as a faded, dashed overlay (to
        compare runs); returns how many curves were drawn."""
        import pyqtgraph as pg

        spec = self.spec
        if spec.kind != "lines":
            return 0
        count = 0
        for col, color in plot_columns(spec, list(table), self.colors):
            xcol = self._x_column(col)
            if xcol not in table or np.shape(table[xcol]) != np.shape(table[col]):
                continue
            x = np.asarray(table[xcol], dtype=np.float64)
            y = np.asarray(table[col], dtype=np.float64)
            mask = _positive_mask(x, spec.logx) & _positive_mask(y, spec.logy)
            if not mask.any():
                continue
            xs = np.log10(x[mask]) if spec.logx else x[mask]
            ys = np.log10(y[mask]) if spec.logy else y[mask]
            faded = pg.mkColor(color)
            faded.setAlpha(100)
            ghost = pg.PlotDataItem(xs, ys, pen=pg.mkPen(
                faded, width=1.5 * self.scale, style=pg.QtCore.Qt.PenStyle.DashLine))
            ghost.setZValue(-10)
            self.item.vb.addItem(ghost)  # raw coordinates: already log-mapped above
            self.pins.append(ghost)
            count += 1
        return count

    def blank(self) -> None:
        """Empty every curve but keep the items, for a new run that will draw the same
        columns (creating pyqtgraph items is what costs)."""
        for group in (self.curves, self.minima):
            for item in group.values():
                item.setData([], [])
        for lo, hi in self._band_edges.values():
            lo.setData([], [])
            hi.setData([], [])
        for item in self._levels:
            item.setData([], [])
        self._scatter_key = None

    def columns(self) -> set[str]:
        """The columns this plot has items for."""
        return {c for c in self.curves if c not in ("points", "overlay")}

    def clear(self) -> None:
        """Remove every curve (and its legend entry), keeping the axes: a new run starts
        from an empty plot without the cost of building a new one. Pins stay."""
        for group in (self.curves, self.error_bars, self.minima):
            for item in group.values():
                self.item.removeItem(item)
            group.clear()
        self._band_edges.clear()
        for item in self._levels:
            self.item.removeItem(item)
        self._levels = []
        self._scatter_key = None
        self.legend.clear()
        self._legend_keys.clear()
        self._legend_samples.clear()

    def clear_pins(self) -> None:
        for ghost in self.pins:
            self.item.vb.removeItem(ghost)
        self.pins.clear()


def render_plots(table: Mapping[str, Sequence[float] | np.ndarray], plots: Sequence[PlotSpec],
                 path: str | os.PathLike[str], *, title: str = "", width: int = 1000,
                 height_per_plot: int = 400) -> Path:
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
        shown = title if len(title) <= 110 else title[:107] + "…"
        layout.addLabel(shown, row=0, col=0, colspan=2, size="12pt")
    for row, spec in enumerate(plots, start=1 if title else 0):
        PlotView(layout, row, spec).update(table)
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
