"""The axes of a plot: log axes labelled by decades or 1, 2, 5 times a power of ten
(:func:`log_axis`, the ticks chosen by :func:`log_ticks`), and the grid drawn as one item
from the axes' ticks (:func:`grid_item`). :class:`~kernel_lab.plotting.view.PlotView` and
the Playground's error plot use them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: At most this many labelled ticks on an axis (log mode).
MAX_LABELS = 12
#: Space between neighbouring tick labels of a log axis, in pixels, beyond the labels
#: themselves (a vertical axis: in line heights).
LABEL_GAP = 14
LABEL_GAP_LINES = 1.8
#: Labels at the ends of an axis may reach this far (pixels) beyond it: "0.0001" at the
#: left end of a λ axis is drawn, not dropped.
LABEL_OVERHANG = 32


#: An axis whose range reaches this magnitude (or, on a log axis, goes below
#: :data:`SCI_BELOW`) labels every tick as a power of ten ("2e5", "1e9"): ``:g`` wrote
#: "100000" beside "1e+06" on one axis.
SCI_ABOVE = 1e5
SCI_BELOW = 1e-4


def _sci(x: float, digits: int) -> str:
    """``x`` as mantissa and power of ten, ``"2.5e9"`` (not ``"2.5e+09"``); 0 as "0"."""
    if x == 0:
        return "0"
    exp = int(np.floor(np.log10(abs(x))))
    mantissa = x / 10.0 ** exp
    if abs(round(mantissa, digits)) >= 10.0:  # 9.9999… rounds up to the next power
        exp, mantissa = exp + 1, mantissa / 10.0
    return f"{mantissa:.{digits}g}e{exp}"


def scientific(lo: float, hi: float, log: bool) -> bool:
    """Whether an axis over ``lo`` … ``hi`` (data units) labels its ticks as powers of
    ten: when the values reach :data:`SCI_ABOVE`, or (a log axis) fall below
    :data:`SCI_BELOW`, or (a linear one) stay below a thousandth. One answer per axis
    and range, so that every label of an axis has the same form."""
    big = max(abs(lo), abs(hi))
    if not np.isfinite(big):
        return False
    if big >= SCI_ABOVE:
        return True
    small = min(abs(lo), abs(hi))
    return bool(small < SCI_BELOW) if log else bool(0 < big < 1e-3)


def _decimals(values: Sequence[float], sci: bool = False) -> list[str]:
    """``values`` as ``:g`` writes them (``sci``: as :func:`_sci` does), with more digits
    where six do not write them exactly."""
    v = np.asarray(values, dtype=np.float64)
    write = (lambda x, d: _sci(x, d)) if sci else (lambda x, d: f"{x:.{d}g}")
    for digits in range(6, 16):
        out = [write(x, digits) for x in v.tolist()]
        if np.allclose([float(t) for t in out], v, rtol=1e-9, atol=0.0):
            return out
    return [write(x, 6) for x in v.tolist()]


def tick_labels(values: Sequence[float], lo: float, hi: float, log: bool) -> list[str]:
    """The labels of ticks at ``values`` (data units) of an axis over ``lo`` … ``hi``:
    all plain decimals or all powers of ten (:func:`scientific`). A log axis labels one
    level of ticks: its labelled values decide (the range's margin below "0.0001" would
    have turned it into "1e-4"); a linear one labels two, and its range decides."""
    v = np.abs(np.asarray(values, dtype=np.float64))
    if log and v.size and np.isfinite(v).all() and (v > 0).all():
        lo, hi = float(v.min()), float(v.max())
    return _decimals(values, scientific(lo, hi, log))


def log_ticks(lo: float, hi: float,
              fits: Callable[[np.ndarray, list[str]], bool]) -> list[float]:
    """The labelled ticks of a log axis showing ``10**lo`` to ``10**hi``: decades (every
    k-th when there are many), else 1, 2, 5 or 1 … 9 times a power of ten, else — a range
    within one decade — evenly spaced values. Of these, the densest whose labels ``fits``
    (ticks, labels) says have room, with at most :data:`MAX_LABELS`, else the sparsest;
    always at least two ticks when the range is not empty. Values are log10 of the
    ticks."""
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
        return []
    eps = 1e-9 * max(1.0, abs(lo), abs(hi))
    d0, d1 = int(np.floor(lo)), int(np.ceil(hi))
    candidates: list[np.ndarray] = []
    first = np.ceil(lo - eps)  # every k-th decade from the first in view ("0.0001" kept)
    for k in (100, 50, 20, 10, 5, 3, 2, 1):  # sparse to dense
        candidates.append(np.arange(first, hi + eps, k, dtype=np.float64))
    if d1 - d0 <= 12:
        for mantissas in ((1.0, 2.0, 5.0), tuple(range(1, 10))):
            m = np.log10(np.asarray(mantissas, dtype=np.float64))
            v = (np.arange(d0, d1 + 1)[:, None] + m[None, :]).ravel()
            candidates.append(v[(v >= lo - eps) & (v <= hi + eps)])
    usable = [c for c in candidates if c.size >= 2]
    if not usable:  # within a decade: evenly spaced values (3.2e8, 3.4e8, …)
        a, b = 10.0 ** lo, 10.0 ** hi
        base = 10.0 ** np.floor(np.log10(b - a))
        for step in base * np.array([5.0, 2.0, 1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01]):
            first = np.ceil(a / step - 1e-9) * step
            v = np.arange(first, b + 1e-9 * step, step)
            usable += [np.log10(v)] if v.size >= 2 else []
    if not usable:
        return [lo, hi]
    for c in reversed(usable):  # dense to sparse: the first that fits
        if c.size <= MAX_LABELS and fits(c, tick_labels((10.0 ** c).tolist(), 10.0 ** lo,
                                                         10.0 ** hi, True)):
            return c.tolist()
    return usable[0].tolist()


def fit_value_axis(axis: Any, lo: float, hi: float, length: float) -> None:
    """A linear pyqtgraph ``axis`` made by others (a colour bar's) over ``lo`` … ``hi``:
    its labels in one form (:func:`tick_labels`), and as wide as they need — pyqtgraph
    drops a label that does not fit its axis's fixed width ("0.0005" on a colour bar)."""
    from PySide6 import QtGui

    def strings(values: Sequence[float], scale: float, spacing: float) -> list[str]:
        a, b = sorted(float(v) * scale for v in axis.range)
        return tick_labels([v * scale for v in values], a, b, False)

    axis.tickStrings = strings
    levels = axis.tickValues(lo, hi, max(length, 50.0))
    texts = [t for _, values in levels[:1] for t in strings(values, 1.0, 0.0)]
    fm = QtGui.QFontMetricsF(axis.style["tickFont"] or QtGui.QFont())
    need = max((fm.horizontalAdvance(t) for t in texts), default=20.0)
    axis.setWidth(int(np.ceil(need * 1.15)) + 5 + axis.style["tickTextOffset"][0] + 4)


def log_axis(orientation: str) -> object:
    """A new axis of :func:`_log_axis_class` for ``orientation``."""
    return _log_axis_class()(orientation)


@functools.cache
def _log_axis_class() -> type:
    """The axis class, made once (pyqtgraph is imported on first use; a class per axis
    was never freed), whose log mode labels decades or 1, 2, 5 times a power of ten —
    always at least two ticks (:func:`log_ticks`) — with the other integer multiples as
    unlabelled minor ticks; labels at its ends may overhang it (:data:`LABEL_OVERHANG`), and a
    vertical axis takes the width of its labels when its range changes, not a paint
    later (a screenshot taken in between showed an axis without labels)."""
    import pyqtgraph as pg
    from PySide6 import QtGui

    class LabelledLogAxis(pg.AxisItem):
        def __init__(self, orientation: str) -> None:
            super().__init__(orientation)
            self.setStyle(maxTextLevel=0, hideOverlappingLabels=LABEL_OVERHANG)
            #: ticks by (low, high, length): the axis and the grid (whose length is the
            #: view box's, not the axis's) ask again at every repaint
            self._ticks: dict[tuple[float, float, float], list] = {}

        def setTickFont(self, font: QtGui.QFont | None) -> None:
            self._ticks.clear()
            super().setTickFont(font)

        def _metrics(self) -> QtGui.QFontMetricsF:
            return QtGui.QFontMetricsF(self.style["tickFont"] or QtGui.QFont())

        def _fits(self, ticks: np.ndarray, labels: list[str], lo: float, hi: float,
                  size: float) -> bool:
            """Whether neighbouring labels at ``ticks`` keep their distance."""
            fm = self._metrics()
            pos = np.asarray(ticks) * size / (hi - lo)
            if self.orientation in ("left", "right"):
                need = np.full(pos.size - 1, LABEL_GAP_LINES * fm.height())
            else:
                w = np.array([fm.horizontalAdvance(t) for t in labels])
                need = 0.5 * (w[1:] + w[:-1]) + LABEL_GAP
            return bool((np.diff(pos) >= need).all())

        def tickValues(self, minVal, maxVal, size):
            if not self.logMode:
                return super().tickValues(minVal, maxVal, size)
            lo, hi = sorted((float(minVal), float(maxVal)))
            key = (lo, hi, float(size))
            if key in self._ticks:
                return self._ticks[key]
            major = log_ticks(lo, hi, lambda ticks, labels: self._fits(
                ticks, labels, lo, hi, size))
            if not major:
                return []
            minor: list[float] = []
            if 9 * (hi - lo) <= size / 4:  # about 4 px between minor lines at least
                m = np.log10(np.arange(1.0, 10.0))
                v = (np.arange(np.floor(lo), np.ceil(hi) + 1)[:, None] + m).ravel()
                v = v[(v >= lo) & (v <= hi)]
                near = np.abs(v[:, None] - np.asarray(major)[None, :]) <= 1e-9
                minor = v[~near.any(axis=1)].tolist()
            if len(self._ticks) >= 4:  # the latest few ranges
                del self._ticks[next(iter(self._ticks))]
            self._ticks[key] = [(None, major), (None, minor)]
            return self._ticks[key]

        def tickStrings(self, values, scale, spacing):
            lo, hi = sorted(float(v) for v in self.range)
            if not self.logMode:
                lo, hi = lo * scale, hi * scale
                if not scientific(lo, hi, False):
                    return super().tickStrings(values, scale, spacing)
                return tick_labels([v * scale for v in values], lo, hi, False)
            return tick_labels([10.0 ** v for v in values], 10.0 ** lo, 10.0 ** hi, True)

        def setRange(self, mn, mx):
            super().setRange(mn, mx)
            if self.logMode and self.orientation in ("left", "right"):
                lo, hi = sorted(self.range)
                size = max(self.height(), 100.0)
                labels = self.tickStrings(self.tickValues(lo, hi, size)[0][1], 1.0, None) \
                    if hi > lo else []
                if labels:  # the room the labels need, before they are drawn
                    fm = self._metrics()
                    self._updateMaxTextSize(int(max(fm.horizontalAdvance(t)
                                                    for t in labels)) + 2)

    return LabelledLogAxis


def grid_color(alpha: int, background: Any) -> tuple[int, int, int, int]:
    """The grid's black at opacity ``alpha`` (0–255) as the opaque colour it makes over an
    opaque ``background`` (a QColor); over a translucent one, the translucent black.

    Qt's raster engine draws translucent one-pixel lines about 40 times slower than opaque
    ones (measured: 110 lines over 450 × 620 pixels, 10–12 ms against 0.3 ms), which made
    the grid most of a repaint while a run streams. Over an opaque background the two
    look the same but where two grid lines cross (one pixel)."""
    if background.alpha() < 255:
        return (0, 0, 0, alpha)
    keep = 1.0 - alpha / 255.0
    return (round(background.red() * keep), round(background.green() * keep),
            round(background.blue() * keep), 255)


def grid_item(item: object) -> object:
    """The plot's grid (major and minor lines of both axes) as one item in its view box,
    drawn from the axes' current ticks at paint time.

    pyqtgraph's own axis grid is replayed from a recorded picture on every repaint of
    anything under it: about 30 ms for a 700-pixel plot, most of a frame while curves
    stream in; this item costs about 1 ms. The opacity follows pyqtgraph's rule (¼ for
    major lines, halved for minor ones, fainter when ticks are dense).
    """
    import pyqtgraph as pg
    from PySide6 import QtCore

    class Grid(pg.GraphicsObject):
        ALPHA = 0.25

        def __init__(self) -> None:
            super().__init__()
            self.setZValue(-100)
            item.vb.sigRangeChanged.connect(self._moved)
            item.vb.sigResized.connect(self._moved)

        def _moved(self, *args: object) -> None:
            self.prepareGeometryChange()
            self.update()

        def boundingRect(self) -> QtCore.QRectF:
            return item.vb.viewRect()

        def paint(self, p: object, *args: object) -> None:
            vb = item.vb
            (x0, x1), (y0, y1) = vb.viewRange()
            lines: list[list[QtCore.QLineF]] = [[], []]
            density = [1.0, 1.0]
            for side, lo, hi, length in (("bottom", x0, x1, vb.width()),
                                         ("left", y0, y1, vb.height())):
                if length <= 0:
                    continue
                levels = item.getAxis(side).tickValues(lo, hi, length)[:2]
                for level, (_spacing, values) in enumerate(levels):
                    density[level] = min(density[level], float(
                        np.clip(0.05 * length / (len(values) + 1), 0.0, 1.0)))
                    lines[level] += [QtCore.QLineF(v, y0, v, y1) if side == "bottom"
                                     else QtCore.QLineF(x0, v, x1, v) for v in values]
            p.setRenderHint(p.RenderHint.Antialiasing, False)
            background = pg.mkColor(pg.getConfigOption("background"))
            for level, group in enumerate(lines):
                alpha = int(255 / (level + 1) * self.ALPHA * density[level])
                pen = pg.mkPen(grid_color(alpha, background), width=1)
                pen.setCosmetic(True)
                p.setPen(pen)
                p.drawLines(group)

    grid = Grid()
    item.vb.addItem(grid, ignoreBounds=True)
    return grid
