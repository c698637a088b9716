"""The Playground's function view: the fitted function over its points — a 1-D curve (with
the noiseless truth and a dashed comparison), or in 2-D a heatmap of the function with the
decision boundary (its zero contour) — the points (train filled, test hollow, by class) and
Nyström's landmarks. The Playground window draws into one; ``kernel-lab run --preset
playground-…`` renders one to ``plot.png`` (:func:`render_function_view`)."""

from __future__ import annotations

import html
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from kernel_lab.core.playground import EXTENT, SETS

CLASS_COLOURS = {1.0: (214, 39, 40), -1.0: (31, 119, 180)}
PRIMARY, SECOND, TRUTH = (0, 0, 0), (120, 120, 120), (44, 160, 44, 110)
_EMPTY = np.zeros((0, 2))


#: The heatmap's colour map by task: diverging around 0 for classes, else viridis.
COLOUR_MAPS = {"classification": "CET-D1", "regression": "viridis"}


def _levels(img: np.ndarray, task: str) -> tuple[float, float]:
    """The heatmap's colour range: symmetric around 0 for classes, else the values'."""
    if task == "classification":
        lim = float(np.nanmax(np.abs(img))) or 1.0
        return -lim, lim
    return float(np.nanmin(img)), float(np.nanmax(img))


def colour_tables() -> dict[str, np.ndarray]:
    """The heatmap's colour table (256 RGBA rows) by task, from pyqtgraph's maps."""
    return {task: pg.colormap.get(name).getLookupTable(0.0, 1.0, 256, alpha=True)
            for task, name in COLOUR_MAPS.items()}


def heatmap_colours(img: np.ndarray, task: str, tables: Mapping[str, np.ndarray]
                    ) -> np.ndarray:
    """The RGBA image of the heatmap values ``img`` as pyqtgraph colours them with the
    task's table and levels (:func:`_levels`): numpy only, for any thread."""
    lo, hi = _levels(img, task)
    table = tables[task]
    scale = len(table) / (hi - lo) if hi > lo else 0.0
    index = np.nan_to_num((img - lo) * scale, nan=0.0)
    np.clip(index, 0, len(table) - 1, out=index)
    out = table[index.astype(np.intp)]
    out[np.isnan(img), 3] = 0  # no value: transparent, as pyqtgraph draws it
    return out


def picture_painter() -> Callable[[Any], None]:
    """``paint(fit)``: sets ``fit.picture``, the 2-D primary fit as the RGBA image the
    view draws (:meth:`FunctionView.draw_fit`), with the colour tables made here (on the
    GUI thread) so that the function itself is numpy only: the Playground's worker runs
    it, and the GUI thread only hands the image to Qt."""
    tables = colour_tables()

    def paint(fit: Any) -> None:
        if fit.dim == 2:
            res = round(math.sqrt(len(fit.primary.grid)))
            # x₁ fastest in the grid: columns
            fit.picture = heatmap_colours(fit.primary.grid.reshape(res, res).T, fit.task,
                                          tables)

    return paint


class FunctionView:
    """The items of the function view, added to ``plot`` (a ``PlotWidget`` or
    ``PlotItem``), and the drawing of points and fits into them."""

    def __init__(self, plot: Any) -> None:
        self.plot = plot
        plot.setRange(xRange=(-EXTENT, EXTENT), yRange=(-EXTENT, EXTENT), padding=0)
        self.image = pg.ImageItem()
        #: The values the heatmap shows (rows x₂, columns x₁), None without one.
        self.heatmap: np.ndarray | None = None
        self.image.setZValue(-10)
        plot.addItem(self.image)
        # the decision boundaries, computed with the fit (marching squares, off this thread)
        self.contour = pg.PlotCurveItem(pen=pg.mkPen((0, 0, 0), width=2), connect="pairs")
        plot.addItem(self.contour)
        self.truth_curve = plot.plot(pen=pg.mkPen(TRUTH, width=3))
        self.fit_curve = plot.plot(pen=pg.mkPen(PRIMARY, width=2.5))
        self.compare_curve = plot.plot(pen=pg.mkPen(SECOND, width=2,
                                                    style=QtCore.Qt.PenStyle.DashLine))
        self.compare_contour = pg.PlotCurveItem(pen=pg.mkPen(
            (60, 60, 60), width=1.5, style=QtCore.Qt.PenStyle.DashLine), connect="pairs")
        plot.addItem(self.compare_contour)
        # one scatter per (class, train/test): a single symbol each, drawn fast
        self.point_items: dict[tuple[float, bool], pg.ScatterPlotItem] = {}
        #: each scatter's points as indices among the training points
        self.groups: dict[tuple[float, bool], np.ndarray] = {}
        for cls in (1.0, -1.0, 0.0):
            colour = CLASS_COLOURS.get(cls, (50, 50, 50))
            self.point_items[cls, False] = pg.ScatterPlotItem(
                size=8, brush=pg.mkBrush(*colour), pen=pg.mkPen("k", width=0.5))
            self.point_items[cls, True] = pg.ScatterPlotItem(
                size=8, brush=pg.mkBrush(0, 0, 0, 0), pen=pg.mkPen(*colour, width=2))
        #: the points drawn last (positions, group key, test mask)
        self._points: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.landmark_scatter = pg.ScatterPlotItem(size=17, brush=pg.mkBrush(0, 0, 0, 0),
                                                   pen=pg.mkPen((0, 0, 0), width=2))
        for item in (*self.point_items.values(), self.landmark_scatter):
            # drawn once per change of the points, then blitted: a new fit under them
            # (every Play frame, every slider move) does not redraw a thousand symbols
            item.setCacheMode(QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache)
            plot.addItem(item)

    def draw_points(self, X: np.ndarray, y: np.ndarray, test: np.ndarray, dim: int, task: str,
                    truth: Callable[[np.ndarray], np.ndarray] | None) -> None:
        """The points (1-D: at (x, y); 2-D: coloured by class) and the truth curve; no
        points: the fit is cleared too."""
        where = np.column_stack([X[:, 0], y]) if dim == 1 else X
        key = np.zeros(len(y)) if dim == 1 or task == "regression" else np.sign(y)
        key[key == 0] = 0.0
        train_rank = np.cumsum(~test) - 1  # a point's index among the training points
        last = self._points
        self._points = (where, key, test)
        n = 0 if last is None else len(last[1])
        # painted points appended to the last ones: only they are added (a repaint of a
        # thousand symbols per click cost the GUI thread more than the fit)
        appended = (last is not None and len(key) > n and last[0].shape[1:] == where.shape[1:]
                    and np.array_equal(last[0], where[:n]) and np.array_equal(last[1], key[:n])
                    and np.array_equal(last[2], test[:n]))
        for (cls, is_test), item in self.point_items.items():
            sel = (key == cls) & (test == is_test)
            if appended:
                new = sel[n:]
                if new.any():
                    item.addPoints(pos=where[n:][new], size=8)
            else:
                item.setData(pos=where[sel] if sel.any() else _EMPTY, size=8)
            self.groups[cls, is_test] = train_rank[sel]
        if dim == 1 and truth is not None:
            xs = np.linspace(-EXTENT, EXTENT, 300)
            self.truth_curve.setData(xs, truth(xs))
        else:
            self.truth_curve.setData([], [])
        if len(y) == 0:
            self.clear_fit()

    def clear_fit(self) -> None:
        for item in (self.fit_curve, self.compare_curve, self.contour, self.compare_contour):
            _set_curve(item, None)
        self.image.clear()
        self.heatmap = None
        _set_scatter(self.landmark_scatter, None)

    def draw_fit(self, dim: int, task: str, G: np.ndarray, values: np.ndarray,
                 compare: np.ndarray | None = None, contour: np.ndarray | None = None,
                 compare_contour: np.ndarray | None = None,
                 landmarks: np.ndarray | None = None,
                 picture: np.ndarray | None = None) -> None:
        """A fit: ``values`` on the grid ``G`` (1-D: a curve; 2-D: a heatmap, diverging
        around 0 for classes), the comparison's values, the zero contours (segment end
        points in pairs) and the landmarks' positions; ``picture``: the heatmap already
        coloured (:func:`picture_painter`, made off the GUI thread)."""
        if dim == 1:
            self.image.clear()
            self.heatmap = None
            self.plot.setYRange(-EXTENT, EXTENT, padding=0)
            _set_curve(self.fit_curve, (G[:, 0], values))
            _set_curve(self.compare_curve, None if compare is None else (G[:, 0], compare))
        else:
            _set_curve(self.fit_curve, None)
            _set_curve(self.compare_curve, None)
            res = round(math.sqrt(len(values)))
            img = values.reshape(res, res).T  # x₁ fastest in the grid: columns
            self.heatmap = img
            if picture is not None:  # coloured by the worker: Qt takes it as it is
                self.image.setLookupTable(None)
                self.image.setImage(picture, autoLevels=False, levels=None)
            else:
                self.image.setImage(img, levels=_levels(img, task))
                self.image.setColorMap(pg.colormap.get(COLOUR_MAPS[task]))
            # pixel centres on the grid points: the image reaches half a step beyond them
            half = EXTENT / (res - 1)
            size = 2 * (EXTENT + half)
            rect = QtCore.QRectF(-EXTENT - half, -EXTENT - half, size, size)
            if self.image.mapRectToParent(self.image.boundingRect()) != rect:
                self.image.setRect(rect)
        for item, seg in ((self.contour, contour), (self.compare_contour, compare_contour)):
            _set_curve(item, None if seg is None or not len(seg) else (seg[:, 0], seg[:, 1]),
                       connect="pairs")
        _set_scatter(self.landmark_scatter, landmarks)


# Only what changed is set: setting an item's data, even to nothing, makes Qt lay it out
# and paint it again — on every Play frame and slider move.
def _set_curve(item: Any, xy: tuple[np.ndarray, np.ndarray] | None, **kwargs: Any) -> None:
    """``item.setData(x, y)``, or no data; nothing when it had none and gets none."""
    empty = xy is None
    if not (empty and getattr(item, "_kl_empty", False)):
        item.setData(*(([], []) if empty else xy), **kwargs)
        item._kl_empty = empty


def _set_scatter(item: Any, pos: np.ndarray | None) -> None:
    """``item.setData(pos=pos)``, or no points; nothing when it had none and gets none."""
    empty = pos is None or not len(pos)
    if not (empty and getattr(item, "_kl_empty", False)):
        item.setData(pos=_EMPTY if empty else pos)
        item._kl_empty = empty


def render_function_view(doc: Mapping[str, Any], path: str | os.PathLike[str], *,
                         title: str = "", size: int = 700) -> Path:
    """A Playground result (``result.json``'s document: ``points``, ``fit``, ``data`` and
    maybe ``compare``, drawn dashed) as a PNG of its function view."""
    from pyqtgraph.exporters import ImageExporter

    from kernel_lab.core.playground import zero_contour
    from kernel_lab.plotting.render import ensure_app, export_png

    ensure_app()
    pg.setConfigOptions(antialias=True, background="w", foreground="k")
    caption = _caption(doc, title)
    widget = pg.PlotWidget(background="w", title=caption)
    # pyqtgraph fixes the title's row at one line (30 px): make room for every line
    rows = caption.count("<br>") + 1
    item = widget.getPlotItem()
    item.titleLabel.setMaximumHeight(18 * rows + 8)
    item.layout.setRowFixedHeight(0, 18 * rows + 8)
    widget.resize(size, size)
    view = FunctionView(widget)
    dim, task = int(doc["data"]["dim"]), doc["data"]["task"]
    pts = doc["points"]
    X = np.asarray(pts["X"], dtype=np.float64).reshape(-1, dim)
    y = np.asarray(pts["y"], dtype=np.float64)
    test = np.asarray(pts["test"], dtype=bool)
    dataset = SETS.get(doc["data"]["dataset"])
    view.draw_points(X, y, test, dim, task, dataset.truth if dataset is not None else None)
    fit = doc["fit"]
    G = np.asarray(fit["grid"]["points"], dtype=np.float64).reshape(-1, dim)
    values = np.asarray(fit["grid"]["values"], dtype=np.float64)
    compare = doc.get("compare")
    compare_values = None if compare is None else \
        np.asarray(compare["grid"]["values"], dtype=np.float64)
    contour = compare_contour = None
    if dim == 2 and task == "classification":  # the boundaries, dashed: the comparison's
        res = round(math.sqrt(len(values)))
        contour = zero_contour(values.reshape(res, res), G[:res, 0])
        if compare_values is not None:
            compare_contour = zero_contour(compare_values.reshape(res, res), G[:res, 0])
    landmarks = None
    if fit.get("landmarks") is not None:
        train = ~test
        where = np.column_stack([X[train, 0], y[train]]) if dim == 1 else X[train]
        landmarks = where[np.asarray(fit["landmarks"], dtype=int)]
    view.draw_fit(dim, task, G, values, compare_values, contour, compare_contour,
                  landmarks)
    item = widget.getPlotItem()
    item.setLabel("bottom", "x" if dim == 1 else "x₁")
    item.setLabel("left", "y" if dim == 1 else "x₂")
    widget.setAttribute(QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    widget.show()
    pg.QtWidgets.QApplication.processEvents()
    exporter = ImageExporter(item)
    exporter.parameters()["width"] = size
    try:
        return export_png(exporter, path)
    finally:
        widget.close()
        widget.deleteLater()


def _caption(doc: Mapping[str, Any], title: str) -> str:
    """The PNG's title and, below it, what a reader needs without the window: each fit's
    method and errors, and what the marks are."""
    task, dim = doc["data"]["task"], int(doc["data"]["dim"])
    word = "misclassified" if task == "classification" else "mse"
    lines = [f"<b>{html.escape(title)}</b>"] if title else []
    for key, how in (("fit", ""), ("compare", " (dashed)")):
        fit = doc.get(key)
        if fit is not None:
            train, test = (("no points" if fit[k] is None else f"{fit[k]:.3g}")
                           for k in ("train_error", "test_error"))
            lines.append(html.escape(f"{fit['method']}{how}: train {word} {train}, "
                                     f"test {word} {test}"))
    marks = ["filled: train points", "hollow: test points"]
    if doc["fit"].get("landmarks") is not None:
        marks.append("rings: landmarks")
    if dim == 1 and doc["data"]["dataset"] in SETS:
        marks.append("green: the true function")
    elif dim == 2 and task == "classification":
        marks.append("line: the class boundary")
    lines.append(html.escape(" · ".join(marks)))
    return ("<p align='center' style='font-size:9pt'>" + "<br>".join(lines) + "</p>")


