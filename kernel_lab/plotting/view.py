"""One declared plot drawn with pyqtgraph: the live view of the window and the headless
renderer share it.

Curves are styled by their declared role (:mod:`~kernel_lab.plotting.styles`), never by
their column names; empirical means get a shaded spread band. The view asks
:mod:`~kernel_lab.plotting.ranges` (no Qt) which y range to show and how its axes follow
streaming results, and keeps its legend (:mod:`~kernel_lab.plotting.legend`) in the column
to its right.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from kernel_lab.experiments.plotspec import (
    Curve,
    CurveLine,
    OffScale,
    PlotSpec,
    resolve_curves,
)
from kernel_lab.plotting.axes import grid_item, log_axis
from kernel_lab.plotting.legend import LegendParts
from kernel_lab.plotting.ranges import (
    MARKERS,
    follow_axis,
    keeps_cut,
    padded_range,
    plan_y_range,
    positive_mask,
    within,
)
from kernel_lab.plotting.styles import ROLE_STYLES, assign_colors, curve_style
from kernel_lab.plotting.view_pins import PinParts
from kernel_lab.plotting.view_scatter import ScatterParts
from kernel_lab.plotting.view_texts import TextParts

#: A curve with points off the plot's scale has them clamped to this many view heights
#: around the view (pyqtgraph's dynamic range limit, its default); see
#: PlotView._limit_ranges.
RANGE_LIMIT = 1e6


def _has_rows(table: Mapping[str, Sequence[float] | np.ndarray]) -> bool:
    """Whether a result table holds any row (a plot of an empty one says nothing)."""
    return any(np.size(v) for v in table.values())


class PlotView(LegendParts, TextParts, ScatterParts, PinParts):
    """One declared plot inside a pyqtgraph GraphicsLayout, updated in place.

    Curves are created the first time their column appears and afterwards only get
    ``setData``; the legend sits in the column to the right of the plot, so it never
    hides data.
    """

    def __init__(self, layout: object, row: int, spec: PlotSpec, *,
                 colors: dict[str, str] | None = None, scale: float = 1.0,
                 log_y: bool = False) -> None:
        import pyqtgraph as pg

        #: The plot as declared, and :attr:`spec` with its texts filled from the run's
        #: summaries (:meth:`set_summaries`; their defaults until then).
        self.declared = spec
        self.spec = spec = spec.filled(None)
        #: A log y axis: the spec's, or asked for (``log_y``) where its values are positive.
        self.logy = spec.logy or (log_y and spec.positive)
        self.colors = colors
        self.scale = scale
        self.minima: dict[str, object] = {}
        self.pins: list[object] = []
        self._scatter_key: tuple[bytes, ...] | None = None
        self._levels: list[object] = []
        self.colorbar: object | None = None  # a scatter plot's colour scale
        self._faint = False  # a scatter plot's points drawn faint
        self._scatter_legend: list[tuple[str, int]] = []
        self._empty_label: object | None = None  # why the plot has nothing to draw
        self._has_data: set[str] = set()  # columns whose items hold points
        self.item = item = layout.addPlot(
            row=row, col=0, title=spec.title,
            axisItems={"bottom": log_axis("bottom"), "left": log_axis("left")})
        item.setLogMode(x=spec.logx, y=self.logy)
        item.setLabel("bottom", spec.xlabel or spec.x)
        item.setLabel("left", spec.ylabel)
        for side in ("top", "right"):
            # hidden, but linked to the view: with their SI prefix on, every range change
            # set their (invisible) labels' HTML again (4 % of the GUI thread in a run)
            item.getAxis(side).enableAutoSIPrefix(False)
        for side in ("left", "bottom"):
            item.getAxis(side).enableAutoSIPrefix(False)
            # major and minor ticks only: the third level adds dozens of grid lines on
            # log axes and a quarter of the cost of every repaint
            item.getAxis(side).setStyle(maxTickLevel=1)
        self.grid = grid_item(item)
        item.vb.sigRangeChangedManually.connect(self._zoomed)
        if scale != 1.0:
            item.setTitle(spec.title, size=f"{11 * scale:.0f}pt")
            font = pg.QtGui.QFont()
            font.setPointSizeF(9 * scale)
            for side in ("left", "bottom"):
                axis = item.getAxis(side)
                axis.setTickFont(font)
                axis.label.setFont(font)
        self._make_legend(layout, row)
        self._title_fit: tuple[str, float] | None = None
        item.geometryChanged.connect(self._fit_title)
        self._fit_title()
        self.curves: dict[str, object] = {}
        self.error_bars: dict[str, object] = {}  # spread bands (FillBetweenItem)
        self._band_edges: dict[str, tuple[object, object]] = {}
        self._drawn: dict[str, tuple[bytes, bytes, bytes | None]] = {}
        self._extent: dict[str, tuple[float, float]] = {}  # each curve's lowest, highest y
        self.complete = True
        #: What the y range leaves out (None: nothing), after :meth:`update`.
        self.off_scale: OffScale | None = None
        self._off_label: object | None = None
        self._cut_applied = False
        self._y_window: tuple[float, float] | None = None  # a fixed range (y_range_from)
        self._waiting: set[str] = set()  # curves a budgeted update left for the next one
        self._user_zoomed = False  # since the last run started (see _zoomed)
        #: The last table :meth:`update` was given and what :meth:`_plan` made of it.
        self._planned: tuple[object, ...] | None = None
        #: The axes the view took from autoscaling while results stream in.
        self._following: tuple[bool, bool] | None = None

    def update(self, table: Mapping[str, Sequence[float] | np.ndarray],
               budget_s: float | None = None, live: bool = False,
               same: bool = False) -> int:
        """Show the current values of the plot's curves; returns how many have data.

        With ``budget_s``, curves are created or given new data only while the call has
        taken less than that (at least one per call); the others wait for the next call,
        first in line then, and :attr:`complete` is False until every curve shows the
        table. The window uses it to keep each redraw, and the repaint after it, within
        a frame.

        ``live`` (results still streaming in): the axes follow the data with some slack
        instead of fitting them exactly at every call (see :meth:`_follow_data`); the
        first call that is not live fits them exactly again. ``same``: ``table`` is the
        object of the last call, unchanged since (what was worked out from it is kept).
        """
        import pyqtgraph as pg

        t0 = time.perf_counter()
        self.complete = True
        spec = self.spec
        if spec.kind == "scatter":
            shown = self._update_scatter(table)
            self._say_empty(not shown and not live and _has_rows(table))
            return shown
        if not (same and self._planned is not None and self._planned[0] is table):
            self._planned = (table, *self._plan(table))
        _, lines, colors, marked, cut = self._planned
        self.off_scale = cut
        window = self._y_window or ((cut.low, cut.high) if cut is not None else None)
        shown = work = 0
        waiting, self._waiting = self._waiting, set()
        bounds: list[tuple[np.ndarray, np.ndarray]] = []  # what the axes must show
        line_values: list[np.ndarray] = []  # the lines' values (what the note counts)
        for line in sorted(lines, key=lambda ln: ln.column not in waiting):
            col, color = line.column, colors[line.group]
            x = np.asarray(table[line.x], dtype=np.float64)
            y = np.asarray(table[col], dtype=np.float64)
            mask = positive_mask(x, spec.logx) & positive_mask(y, self.logy)
            shown += bool(mask.any())
            err = (np.asarray(table[line.spread], dtype=np.float64)[mask]
                   if line.spread is not None and not self.logy else None)
            if err is not None and cut is not None and not (
                    (y[mask] <= cut.high) & (y[mask] >= cut.low)).all():
                err = np.full(err.shape, np.nan)  # a line off the scale: no band for it
            if line.curve.role not in MARKERS:
                bounds.append((x[mask], y[mask]))
                line_values.append(y[mask])
                if err is not None:
                    bounds += [(x[mask], y[mask] - err), (x[mask], y[mask] + err)]
            key = (x.tobytes(), y.tobytes(), None if err is None else err.tobytes())
            if self._drawn.get(col) == key:
                continue  # unchanged since the last call (e.g. theory curves during a run)
            if work and budget_s is not None and time.perf_counter() - t0 > budget_s:
                self.complete = False  # at least one curve per call; this one next time
                self._waiting.add(col)
                continue
            work += 1
            if col not in self.curves:
                style = curve_style(line.curve, color, self.scale)
                self.curves[col] = curve = pg.PlotDataItem([], [], **style)
                # markers repeat points of lines and obey the same y range: they do not
                # widen it (a flagged spike is off the scale with its point)
                self.item.addItem(curve, ignoreBounds=line.curve.role in MARKERS)
                if line.curve.role in MARKERS:
                    curve.setZValue(25)  # a chosen point: above curves and stars
            self._drawn[col] = key
            ym = y[mask]
            self._extent[col] = ((float(ym.min()), float(ym.max())) if ym.size
                                 else (np.inf, -np.inf))
            self.curves[col].setData(x[mask], ym)
            self._mark_lone_point(self.curves[col], line.curve, color, ym.size == 1)
            if ym.size:
                self._has_data.add(col)
            else:
                self._has_data.discard(col)
            if line.curve.star:
                # the minimum among the trusted points: a flagged point (K + λI near
                # singular) is no candidate, as in the experiments' own choice of λ
                trusted = mask & ~marked[col] if col in marked else mask
                if trusted.any():
                    self._mark_minimum(col, color, x[trusted], y[trusted])
                elif col in self.minima:
                    self.minima[col].setData([], [])
            if err is not None:
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
        # the legend lists what is drawn: lines with points (not one without any, as
        # the floor of a run that has none)
        self._sync_legend([ln for ln in lines if ln.column in self._has_data], colors,
                          table, None if budget_s is None else t0 + budget_s, bool(work))
        self._limit_ranges(window)
        self._fit_y_range(bounds if live else None, line_values)
        self._say_empty(not shown and not live and _has_rows(table))
        return shown


    def _mark_lone_point(self, item: Any, curve: Curve, color: str, lone: bool) -> None:
        """A curve drawn as a line alone (limit, estimate, reference) with a single point
        draws nothing — one λ of Algorithm 2's bound, the first partial result of a limit:
        such a point gets a dot, taken away again when the curve has two."""
        import pyqtgraph as pg

        if ROLE_STYLES[curve.role][2]:
            return  # the role draws its points already
        if lone and item.opts.get("symbol") is None:
            item.setSymbol("o")
            item.setSymbolSize(7 * self.scale)
            item.setSymbolBrush(pg.mkBrush(color))
            item.setSymbolPen(pg.mkPen(None))
        elif not lone and item.opts.get("symbol") is not None:
            item.setSymbol(None)
    def _limit_ranges(self, window: tuple[float, float] | None) -> None:
        """pyqtgraph clamps a curve's points to a band around the view (Qt mis-draws, or
        drops, coordinates far outside it) and so makes the curve and its symbols again
        at every change of the y range — most of a live redraw's cost. A curve within
        the plot's range (``window``; None: the range is fitted to all the data) needs no
        clamping: its points are at most as many view heights away as the user zoomed
        in, so it is off for those and kept for a curve with points off the scale — for
        every curve, whenever the window moves — and for all once the user zooms."""
        for col, curve in self.curves.items():
            if not hasattr(curve, "setDynamicRangeLimit"):
                continue  # a scatter plot's points: drawn only where in view
            inside = not self._user_zoomed and within(
                self._extent.get(col, (np.inf, -np.inf)), window)
            curve.setDynamicRangeLimit(None if inside else RANGE_LIMIT)

    def _plan(self, table: Mapping[str, Sequence[float] | np.ndarray]
              ) -> tuple[list[CurveLine], dict[str, str], dict[str, np.ndarray],
                         OffScale | None]:
        """What :meth:`update` works out from a table before drawing it (the lines, their
        colours, the flagged points and the y range), once per table: a budgeted redraw
        comes back with the same table until it is drawn whole (``same``)."""
        spec = self.spec
        lines = [ln for ln in resolve_curves(spec, table)
                 if np.shape(table[ln.column]) == np.shape(table[ln.x])]
        colors = assign_colors(lines, self.colors)
        if self.columns() - {ln.column for ln in lines}:
            self.clear()  # curves (a kernel, a method) that are no longer in the results
        marked, cut, self._y_window = plan_y_range(
            table, lines, logy=self.logy, positive=spec.positive,
            reference=spec.y_range_from)
        return lines, colors, marked, cut

    def _fit_y_range(self, live: list[tuple[np.ndarray, np.ndarray]] | None = None,
                     values: list[np.ndarray] | None = None) -> None:
        """Autoscale y, except when isolated spikes would flatten every other curve: then
        the range leaves them out and the view says how many points lie off the scale
        (:func:`~kernel_lab.experiments.plotspec.robust_range`). With ``live`` (the
        curves' points, while results stream in) the autoscaled axes follow them with
        slack instead (:meth:`_follow_data`), and a range that leaves points out stays
        while it may (:func:`~kernel_lab.plotting.ranges.keeps_cut`; ``values``: the
        lines' values)."""
        cut = self.off_scale
        self._say_off_scale("" if cut is None else cut.text)
        fixed_y = not (cut is None and self._y_window is None)
        if live is not None:
            self._follow_data(live, fixed_y)
        elif self._following is not None:  # the run is over: exact autoscaling again
            vb, (fx, fy) = self.item.vb, self._following
            self._following = None
            if fx:
                vb.enableAutoRange(axis="x")
            if fy and not fixed_y:
                vb.enableAutoRange(axis="y")
            vb.updateAutoRange()
        if not fixed_y:
            if self._cut_applied:  # back to autoscaling (a user's zoom is left alone)
                self._cut_applied = False
                self.item.enableAutoRange(axis="y")
            if live is None and self.item.vb.state["autoRange"][1] is not False:
                # now, not at the next paint: the axes take the room of their labels
                # before a screenshot or an export
                self.item.vb.updateAutoRange()
            return
        self._cut_applied = True
        lo, hi, pad = padded_range(*(self._y_window or (cut.low, cut.high)),
                                   logy=self.logy, fixed=bool(self._y_window))
        if self._user_zoomed or (live is not None and keeps_cut(
                self.item.vb.viewRange()[1], lo, hi, pad, values or [], self.logy)):
            return
        self.item.setYRange(lo - pad, hi + pad, padding=0)

    def _follow_data(self, points: list[tuple[np.ndarray, np.ndarray]],
                     fixed_y: bool) -> None:
        """While results stream in, each autoscaled axis keeps its range as long as the
        points fit in it and fill at least half of it; otherwise it is set to theirs, with
        room ahead on the one side they left by
        (:func:`~kernel_lab.plotting.ranges.follow_axis`).
        Fitting them exactly at every partial result re-laid out the axes, their ticks
        and grid and every curve's path at each redraw (the biggest share of a redraw
        and of the repaint after it); the last, complete picture is fitted exactly."""
        vb = self.item.vb
        if self.pins and self._following is None:
            return  # pinned curves set the range too: pyqtgraph's autoscaling counts them
        if self._following is None:
            auto = [vb.state["autoRange"][i] is not False for i in (0, 1)]
            if not (auto[0] or auto[1]):
                return  # the user's zoom
            self._following = (auto[0], auto[1] and not fixed_y)
            for axis in (0, 1):  # or pyqtgraph fits them again at every repaint
                if self._following[axis]:
                    vb.disableAutoRange(axis="xy"[axis])
        follow = self._following
        points = [(x, y) for x, y in points if x.size]
        if not points:
            return
        ranges = vb.viewRange()
        for axis, logged in ((0, self.spec.logx), (1, self.logy)):
            if not follow[axis] or (axis == 1 and fixed_y):
                continue
            new = follow_axis([p[axis] for p in points], ranges[axis], logged)
            if new is not None:
                (vb.setXRange if axis == 0 else vb.setYRange)(*new, padding=0)

    def _zoomed(self, *_args: object) -> None:
        """The user zoomed or panned: the axes stay where the user put them, during the
        run and after (also a range that leaves spikes out), until the next run."""
        self._user_zoomed = True
        if self._following is not None:
            self._following = (False, False)
        self._limit_ranges(None)  # zoomed in: every curve clamped near the view again

    def cache_static(self) -> None:
        """Keep the grid and the axes as pixmaps, painted again only when they change
        (range, size, ticks): a window repaints them at every table, while a run changes
        only the curves. For the window only; an export paints under :func:`uncached`."""
        import pyqtgraph as pg

        device = pg.QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache
        for item in (self.grid, self.item.getAxis("left"), self.item.getAxis("bottom")):
            item.setCacheMode(device)

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
        ys = np.log10(y[k]) if self.logy else y[k]
        self.minima[col].setData([xs], [ys])

    def blank(self) -> None:
        """Empty every curve but keep the items, for a new run that will draw the same
        columns (creating pyqtgraph items is what costs)."""
        self._drawn.clear()
        self._extent.clear()
        self._waiting.clear()
        self._user_zoomed = False
        for group in (self.curves, self.minima):
            for item in group.values():
                item.setData([], [])
        for lo, hi in self._band_edges.values():
            lo.setData([], [])
            hi.setData([], [])
        for item in self._levels:
            item.setData([], [])
        self._scatter_key = None
        self._has_data.clear()
        if self._empty_label is not None:
            self._empty_label.hide()

    def columns(self) -> set[str]:
        """The columns this plot has items for."""
        return {c for c in self.curves if c not in ("points", "overlay")}

    def clear(self) -> None:
        """Remove every curve (and its legend entry), keeping the axes: a new run starts
        from an empty plot without the cost of building a new one. Pins stay."""
        self._drawn.clear()
        self._extent.clear()
        self._waiting.clear()
        self._user_zoomed = False
        for group in (self.curves, self.error_bars, self.minima):
            for item in group.values():
                self.item.removeItem(item)
            group.clear()
        self._band_edges.clear()
        for item in self._levels:
            self.item.removeItem(item)
        self._levels = []
        self._scatter_key = None
        self._has_data.clear()
        self._clear_legend()
        self._scatter_legend = []

@contextmanager
def uncached(scene: Any) -> Iterator[None]:
    """Paint the items of ``scene`` afresh while the block runs (an export), their pixmap
    caches (:meth:`PlotView.cache_static`, the Playground's points) off: Qt keeps one
    "paint again" flag per item for all its paint targets, so an export through the
    cache used up the window's repaint (stale ticks on screen) or reused an older
    export's pixmap, and an SVG held the axes as images."""
    import pyqtgraph as pg

    none = pg.QtWidgets.QGraphicsItem.CacheMode.NoCache
    cached = [(item, item.cacheMode()) for item in scene.items() if item.cacheMode() != none]
    for item, _ in cached:
        item.setCacheMode(none)
    try:
        yield
    finally:
        for item, mode in cached:
            item.setCacheMode(mode)

