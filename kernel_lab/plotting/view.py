"""One declared plot drawn with pyqtgraph: the live view of the window and the headless
renderer share it.

Curves are styled by their declared role (see
:mod:`kernel_lab.experiments.plotspec`), never by their column names: limits are thick
lines, empirical means dots with a shaded spread band, estimates and references dashed,
measured curves and baselines lines with small markers, choices (a point picked by a
rule) large outlined diamonds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from kernel_lab.experiments.plotspec import (
    PIN_MAX_POINTS,
    Curve,
    CurveLine,
    OffScale,
    PlotSpec,
    legend_entries,
    peak_rows,
    resolve_curves,
    robust_range,
)
from kernel_lab.plotting.axes import grid_item, log_axis
from kernel_lab.plotting.view_scatter import ScatterParts
from kernel_lab.plotting.view_texts import TextParts

#: Colour-blind-safe palette (Okabe–Ito), used for curves in order.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442")
LEGEND_WIDTH = 190
#: … widened up to this for long entries (they ran past the picture's edge).
LEGEND_MAX_WIDTH = 340
#: The legend starts this far below the top of its row (level with the plot's top).
LEGEND_TOP = 28
#: Line style of each role: (pen width, dash, symbol size); a symbol size 0 draws no
#: markers and a width 0 no line.
ROLE_STYLES: dict[str, tuple[float, str, float]] = {
    "limit": (2.5, "solid", 0.0),
    "empirical": (0.0, "solid", 6.0),
    "estimate": (2.0, "dash", 0.0),
    "reference": (2.0, "dash", 0.0),
    "measured": (2.0, "solid", 4.0),
    "baseline": (2.0, "solid", 4.0),
    "choice": (0.0, "solid", 12.0),
    "flag": (0.0, "solid", 14.0),
}
#: Marker shape and outline of the roles drawn with other than plain dots.
ROLE_MARKERS: dict[str, tuple[str, str]] = {"choice": ("d", "k"), "flag": ("x", "k")}
#: Roles drawn as markers over points of other lines.
MARKERS = ("choice", "flag")
#: A curve with points off the plot's scale has them clamped to this many view heights
#: around the view (pyqtgraph's dynamic range limit, its default); see
#: PlotView._limit_ranges.
RANGE_LIMIT = 1e6
#: A pinned curve of more points than this is drawn with a hairline (see add_pin).
PIN_THICK_MAX = 300


def curve_style(curve: Curve, color: str, scale: float = 1.0) -> dict[str, object]:
    """pyqtgraph keyword arguments for a curve of ``curve``'s role in ``color``;
    ``scale`` widens lines and symbols (presentation mode)."""
    import pyqtgraph as pg

    width, dash, symbol = ROLE_STYLES[curve.role]
    dash = curve.dash or dash
    pen_style = {"solid": pg.QtCore.Qt.PenStyle.SolidLine,
                 "dash": pg.QtCore.Qt.PenStyle.DashLine,
                 "dot": pg.QtCore.Qt.PenStyle.DotLine}[dash]
    style: dict[str, object] = {
        "pen": pg.mkPen(color, width=width * scale, style=pen_style) if width else None}
    if symbol:
        shape, outline = ROLE_MARKERS.get(curve.role, ("o", ""))
        # a brush and a pen object, not their descriptions: pyqtgraph keys its rendered
        # symbols by these objects, so a colour string made a new one — and rendered the
        # symbol again — at every setData
        style.update(symbol=shape, symbolSize=symbol * scale, symbolBrush=pg.mkBrush(color),
                     symbolPen=pg.mkPen(outline, width=1.0) if outline else pg.mkPen(None))
    else:
        style["symbol"] = None
    return style


def assign_colors(lines: Sequence[CurveLine], colors: dict[str, str] | None = None
                  ) -> dict[str, str]:
    """One colour per group, in order of appearance. ``colors`` (group → colour) is shared
    between plots so that a method or kernel keeps its colour everywhere; new groups are
    added to it."""
    groups: dict[str, str] = {} if colors is None else colors
    for line in lines:
        groups.setdefault(line.group, PALETTE[len(groups) % len(PALETTE)])
    return groups


def _along_x(table: Mapping[str, Sequence[float] | np.ndarray], line: CurveLine,
             marked: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A line's y values in the order of its x (the off-scale rule looks at the steps
    of each line), and ``marked`` (which of them a flag marks, see :func:`_flagged`;
    none when None) in the same order."""
    x = np.asarray(table[line.x], dtype=np.float64)
    y = np.asarray(table[line.column], dtype=np.float64)
    if marked is None:
        marked = np.zeros(y.shape, dtype=bool)
    if x.shape != y.shape:
        return y, marked
    order = np.argsort(x, kind="stable")
    return y[order], marked[order]


def _flagged(table: Mapping[str, Sequence[float] | np.ndarray], line: CurveLine,
             flags: Sequence[CurveLine]) -> np.ndarray:
    """Which points of ``line`` (in the table's order) a ``flag`` line marks: a cross
    drawn over the point, the same value at the same x."""
    y = np.asarray(table[line.column], dtype=np.float64)
    marked = np.zeros(y.shape, dtype=bool)
    for flag in flags:
        f = np.asarray(table[flag.column], dtype=np.float64)
        if flag.x == line.x and f.shape == y.shape:
            with np.errstate(invalid="ignore"):
                marked |= np.isfinite(f) & np.isclose(y, f, rtol=1e-12, atol=0.0)
    return marked


def _has_rows(table: Mapping[str, Sequence[float] | np.ndarray]) -> bool:
    """Whether a result table holds any row (a plot of an empty one says nothing)."""
    return any(np.size(v) for v in table.values())


def _positive_mask(a: np.ndarray, log: bool) -> np.ndarray:
    m = np.isfinite(a)
    return m & (a > 0) if log else m


class PlotView(TextParts, ScatterParts):
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
        self._holder = holder = layout.addLayout(row=row, col=1)
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
        self.legend.anchor(itemPos=(0, 0), parentPos=(0, 0), offset=(0, LEGEND_TOP * scale))
        self._title_fit: tuple[str, float] | None = None
        item.geometryChanged.connect(self._fit_title)
        self._fit_title()
        self.curves: dict[str, object] = {}
        self.error_bars: dict[str, object] = {}  # spread bands (FillBetweenItem)
        self._band_edges: dict[str, tuple[object, object]] = {}
        self._legend_keys: set[str] = set()
        self._legend_samples: list[object] = []
        #: the legend's entries in order (their keys), and the columns of the lines a
        #: colour or style sample stands for
        self._legend_order: list[str] = []
        self._legend_columns: dict[str, list[str]] = {}
        self._note_labels: dict[str, object] = {}  # legend labels that follow the table
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

    def _sync_legend(self, lines: list[CurveLine], colors: Mapping[str, str],
                     table: Mapping[str, Sequence[float] | np.ndarray],
                     deadline: float | None = None, busy: bool = False) -> None:
        """Add the legend entries that are not there yet and update the texts of notes
        (see :func:`~kernel_lab.experiments.plotspec.legend_entries`); after
        ``deadline`` (a ``perf_counter`` time) new entries wait for the next call, in
        their order, and :attr:`complete` is False — but one is added if the call did
        nothing else (``busy``: it drew curves)."""
        import html

        import pyqtgraph as pg

        entries = legend_entries(self.spec, lines, table)
        keys = [e.key for e in entries]
        if keys[:len(self._legend_order)] != self._legend_order:
            # a line lost its points, or one declared before those listed got some (the
            # floor's line comes first, DSG's later): the legend afresh, in declared order
            self._clear_legend()
        for entry in entries:
            # a label's line breaks are kept (a long one in two lines, not past the edge)
            text = html.escape(entry.text, quote=False).replace("\n", "<br>")
            if entry.key in self._legend_keys:
                label = self._note_labels.get(entry.key)
                if label is not None and label.text != text:
                    label.setText(text)
                continue
            if deadline is not None and busy and time.perf_counter() > deadline:
                self.complete = False
                break
            busy = True
            self._legend_keys.add(entry.key)
            self._legend_order.append(entry.key)
            if entry.column:  # an ungrouped line or a note: its own curve is the sample
                self.legend.addItem(self.curves[entry.column], text)
                if entry.note:
                    self._note_labels[entry.key] = self.legend.items[-1][1]
                continue
            if entry.group:
                style: dict[str, object] = {"pen": pg.mkPen(colors[entry.group], width=6)}
                self._legend_columns[entry.key] = [ln.column for ln in lines
                                                   if ln.group == entry.group]
            else:
                assert entry.curve is not None
                style = curve_style(entry.curve, "#555555")
                self._legend_columns[entry.key] = [ln.column for ln in lines
                                                   if ln.curve.text == entry.curve.text]
            sample = pg.PlotDataItem([], [], **style)
            self._legend_samples.append(sample)
            self.legend.addItem(sample, text)
        self._fit_legend()

    def _fit_legend(self) -> None:
        """The legend at the size its entries ask for. pyqtgraph sums the entries'
        current heights on each new entry, and those are stretched to the legend's
        last size: each entry grew the legend further (13 entries took 500 pixels and
        ran into the next plot's legend)."""
        from PySide6 import QtCore

        hint = self.legend.layout.effectiveSizeHint(QtCore.Qt.SizeHint.PreferredSize)
        if abs(self.legend.height() - hint.height()) > 0.5 or \
                abs(self.legend.width() - hint.width()) > 0.5:
            self.legend.setGeometry(0, 0, hint.width(), hint.height())
        column = float(np.clip(hint.width() + 8, LEGEND_WIDTH * self.scale,
                               LEGEND_MAX_WIDTH * self.scale))
        if abs(self._holder.maximumWidth() - column) > 0.5:
            self._holder.setFixedWidth(column)
        self._place_colorbar()

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
            mask = _positive_mask(x, spec.logx) & _positive_mask(y, self.logy)
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
            lo, hi = self._extent.get(col, (np.inf, -np.inf))
            inside = not self._user_zoomed and (lo > hi or (
                np.isfinite(lo) and np.isfinite(hi)
                and (window is None or (lo >= window[0] and hi <= window[1]))))
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
        # risks and errors (declared positive) leave isolated spikes off the scale; a
        # spectrum or a histogram keeps its peaks. Markers repeat points of lines: skipped
        self._y_window = None
        flags = [ln for ln in lines if ln.curve.role == "flag"]
        drawn = [ln for ln in lines if ln.curve.role not in MARKERS]
        marked = {ln.column: _flagged(table, ln, flags) for ln in drawn}
        if spec.y_range_from:
            cut = self._reference_range(table, drawn)
        elif spec.positive:  # flagged points do not set the range (nor their crosses)
            pairs = [_along_x(table, ln, marked[ln.column]) for ln in drawn]
            cut = robust_range([y for y, _ in pairs], self.logy, [m for _, m in pairs])
        else:
            cut = None
        return lines, colors, marked, cut

    def _reference_range(self, table: Mapping[str, Sequence[float] | np.ndarray],
                         lines: list[CurveLine]) -> OffScale | None:
        """The y range of a plot whose curves can blow up (``spec.y_range_from``): that of
        the reference series without their own isolated spikes, widened by half, and
        what of the plot's ``lines`` (markers left out) it leaves out."""
        along = {ln.column: _along_x(table, ln)[0] for ln in lines}
        ref = [along[ln.column] for ln in lines if ln.key.series in self.spec.y_range_from]
        vals = np.concatenate(ref) if ref else np.array([])
        vals = vals[_positive_mask(vals, self.logy)]
        if not vals.size:
            return None
        cut = robust_range(ref, self.logy)
        lo, hi = (cut.low, cut.high) if cut is not None else (vals.min(), vals.max())
        if self.logy:
            lo, hi = np.log10(lo), np.log10(hi)
        pad = 0.5 * (hi - lo) + 1e-12 * max(1.0, abs(hi), abs(lo))
        lo, hi = lo - pad, hi + pad
        if self.logy:
            lo, hi = 10.0 ** lo, 10.0 ** hi
        self._y_window = (float(lo), float(hi))
        v = np.concatenate(list(along.values())) if along else np.array([])
        v = v[_positive_mask(v, self.logy)]
        up, down = v > hi, v < lo
        if not (up.any() or down.any()):
            return None
        worst = float(v[up].max()) if up.any() else float(v[down].min())
        return OffScale(float(lo), float(hi), int(up.sum()), int(down.sum()), worst)

    def _fit_y_range(self, live: list[tuple[np.ndarray, np.ndarray]] | None = None,
                     values: list[np.ndarray] | None = None) -> None:
        """Autoscale y, except when isolated spikes would flatten every other curve: then
        the range leaves them out and the view says how many points lie off the scale
        (:func:`~kernel_lab.experiments.plotspec.robust_range`). With ``live`` (the
        curves' points, while results stream in) the autoscaled axes follow them with
        slack instead (:meth:`_follow_data`), and a range that leaves points out stays
        while it may (:meth:`_keeps_cut`; ``values``: the lines' values)."""
        import pyqtgraph as pg

        cut = self.off_scale
        text = "" if cut is None else cut.text
        if text and self._off_label is None:  # inside the view, top right: no relayout
            self._off_label = pg.TextItem(color="#B00020", anchor=(1, 0),
                                          fill=pg.mkBrush(255, 255, 255, 215))
            self._off_label.setParentItem(self.item.vb)
            self.item.vb.sigResized.connect(self._place_off_label)
            self._place_off_label()
        if self._off_label is not None and self._off_label.toPlainText() != text:
            self._off_label.setText(text)
            self._place_off_label()
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
        lo, hi = self._y_window or (cut.low, cut.high)
        if self.logy:
            lo, hi = np.log10(lo), np.log10(hi)
        if self._y_window:
            pad = 0.0
        elif self.logy:  # decades: a twentieth of the span (at least of a tenth decade)
            pad = 0.05 * max(hi - lo, 0.1)
        else:
            pad = 0.05 * (hi - lo) + 0.05 * max(abs(hi), abs(lo), 1e-12)
        if self._user_zoomed or (live is not None
                                 and self._keeps_cut(lo, hi, pad, values or [])):
            return
        self.item.setYRange(lo - pad, hi + pad, padding=0)

    def _keeps_cut(self, lo: float, hi: float, pad: float, values: list[np.ndarray]) -> bool:
        """While results stream in: whether the y range on screen may stay although the
        range that leaves spikes out is now ``[lo, hi]`` (view coordinates, ``pad`` its
        margin): it holds that range, is at most twice as tall with the margin, and shows
        none of the ``values`` outside ``[lo, hi]`` — those the off-scale note counts. A
        new range at every partial result re-laid out the axes and every curve."""
        a, b = self.item.vb.viewRange()[1]
        if not (a <= lo and hi <= b and (hi - lo + 2 * pad) >= 0.5 * (b - a)):
            return False
        v = np.concatenate(values) if values else np.array([])
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.log10(v) if self.logy else v
        v = v[np.isfinite(v) & ((v > hi) | (v < lo))]
        return not ((v >= a) & (v <= b)).any()

    def _follow_data(self, points: list[tuple[np.ndarray, np.ndarray]],
                     fixed_y: bool) -> None:
        """While results stream in, each autoscaled axis keeps its range as long as the
        points fit in it and fill at least half of it; otherwise it is set to theirs, with
        room ahead on the one side they left by.
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
            v = np.concatenate([p[axis] for p in points])
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.log10(v) if logged else v
            v = v[np.isfinite(v)]
            if not v.size:
                continue
            lo, hi = float(v.min()), float(v.max())
            a, b = ranges[axis]
            if a <= lo and hi <= b and hi - lo >= 0.5 * (b - a):
                continue
            # a single value (the first point of a curve): a range around it, as wide as
            # a decade on a log axis, else as the value itself
            spread = hi - lo > 1e-9 * max(1.0, abs(hi), abs(lo))
            pad = (0.1 * (hi - lo) if spread
                   else 0.5 if logged else 0.5 * max(abs(hi), 1e-9))
            # the one side the points left by: room for as far again as half their
            # spread (results of a run move on: larger s, more samples, smaller
            # errors), so that the axes, their ticks and every curve are re-laid out
            # less often; the points still fill 1/1.7 of the range, over the half kept
            ahead = 0.5 * (hi - lo) if spread and (lo < a) != (hi > b) else 0.0
            lo_pad = pad + (ahead if lo < a else 0.0)
            hi_pad = pad + (ahead if hi > b else 0.0)
            if axis == 0:
                vb.setXRange(lo - lo_pad, hi + hi_pad, padding=0)
            else:
                vb.setYRange(lo - lo_pad, hi + hi_pad, padding=0)

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

    def legend_height(self) -> float:
        """The height the legend takes below the top of its row (pixels)."""
        return LEGEND_TOP * self.scale + self.legend.boundingRect().height()

    def _place_off_label(self) -> None:
        """The off-scale note at the top right inside the view, wrapped to its width."""
        label = self._off_label
        if label is None:
            return
        room = max(self.item.vb.width() - 8, 40.0)
        label.setTextWidth(-1)
        if label.textItem.boundingRect().width() > room:
            label.setTextWidth(room)
        label.setPos(self.item.vb.width() - 4, 2)

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
            mask = _positive_mask(x, spec.logx) & _positive_mask(y, self.logy)
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

    def detach(self) -> None:
        """Cut the legend's anchor to its holder before the widget is deleted at once:
        the anchor follows ``geometryChanged`` of the holder and of the legend, and a
        signal sent while the C++ items are being destroyed would reach a holder that is
        already gone ("Internal C++ object (GraphicsLayout) already deleted")."""
        for item in (self._holder, self.legend, self.item):
            try:
                item.geometryChanged.disconnect()
            except (RuntimeError, TypeError):  # nothing connected, or already deleted
                pass
        # and the anchor forgets its holder, so that a signal still on its way does
        # nothing (pyqtgraph's anchor returns at once without one; a CI run still met the
        # error once after the disconnection)
        self.legend._GraphicsWidgetAnchor__parent = None

    def clear_pins(self) -> None:
        for ghost in self.pins:
            self.item.vb.removeItem(ghost)
        self.pins.clear()


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

