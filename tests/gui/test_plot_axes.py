"""Axes of the declared plots: every log axis labels at least two ticks (the window's
plots and the headless PNG's), labels at the ends of an axis are kept, none overlap."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("pytestqt")

import pyqtgraph as pg
from PySide6 import QtGui

from kernel_lab.experiments import Curve, PlotSpec
from kernel_lab.plotting.view import PlotView

SPEC = PlotSpec("error", "lam", (Curve("err", "measured", "error"),), logx=True,
                logy=True, positive=True)
#: y values as met on real tables: Salaries (1e8–1e10 and 3e8–2e9), CASchools (~100–700),
#: a narrow band within one decade, a wide one over several, Hitters' learning curve
#: (9e4–2.2e5: its "90000" and "100000" touched).
Y_RANGES = [(1e8, 1e10), (3.2e8, 2.2e9), (150.0, 700.0), (3.2e8, 3.9e8), (2e3, 2e6),
            (0.012, 0.3), (9e4, 2.2e5)]
#: Plot sizes: the window's tab, a small docked one, the PNG's row.
SIZES = [(660, 640), (480, 230), (1000, 400)]


def drawn_labels(axis: pg.AxisItem) -> list[tuple[str, QtGui.QRectF]]:
    """The tick labels the axis draws (text and rectangle), as its paint does."""
    image = QtGui.QImage(16, 16, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(image)
    if axis.style["tickFont"]:
        painter.setFont(axis.style["tickFont"])
    specs = axis.generateDrawSpecs(painter)
    painter.end()
    return [(text, rect) for rect, _, text in (specs[2] if specs else []) if text]


def check_axis(axis: pg.AxisItem, where: str, must: str = "") -> None:
    labels = drawn_labels(axis)
    texts = [t for t, _ in labels]
    assert len(set(texts)) >= 2, f"{where}: {texts}"
    assert len(set(texts)) == len(texts), f"{where}: a label drawn twice: {texts}"
    for (a, ra), (b, rb) in itertools.combinations(labels, 2):
        assert not ra.intersects(rb), f"{where}: {a!r} and {b!r} overlap"
    if must:
        assert must in texts, f"{where}: {must!r} missing from {texts}"


def _table(lo: float, hi: float, xlo: float = 1e-4) -> dict[str, np.ndarray]:
    lam = np.logspace(np.log10(xlo), 2, 40)
    return {"lam": lam, "err": lo * (hi / lo) ** np.linspace(0, 1, 40) ** 2}


@pytest.mark.parametrize("size", SIZES)
def test_window_log_axes_label_at_least_two_ticks(qtbot, size):
    problems = []
    for (lo, hi), xlo in itertools.product(Y_RANGES, (1e-4, 1e-3, 1e-2)):
        w = pg.GraphicsLayoutWidget()
        qtbot.addWidget(w)
        w.resize(*size)
        view = PlotView(w.ci, 0, SPEC, colors={})
        w.show()
        qtbot.waitExposed(w)
        view.update(_table(lo, hi, xlo))  # then one pass of events, as before a screenshot
        pg.QtWidgets.QApplication.processEvents()
        where = f"y {lo:g}–{hi:g}, x from {xlo:g}, {size}"
        for side, must in (("left", ""), ("bottom", f"{xlo:g}")):
            try:
                check_axis(view.item.getAxis(side), f"{side}, {where}", must=must)
            except AssertionError as exc:
                problems.append(str(exc).splitlines()[0])
        w.close()
    assert not problems, "\n".join(problems)


def test_png_log_axes_label_at_least_two_ticks(qtbot):
    from kernel_lab.plotting.render import layout_plots

    specs = [SPEC] * len(Y_RANGES)
    for (lo, hi), spec in zip(Y_RANGES, specs, strict=True):
        table = _table(lo, hi)
        layout, views = layout_plots(table, [spec], title="t")
        try:
            where = f"PNG, y {lo:g}–{hi:g}"
            check_axis(views[0].item.getAxis("left"), "left, " + where)
            check_axis(views[0].item.getAxis("bottom"), "bottom, " + where, must="0.0001")
        finally:
            layout.close()


def test_the_axis_and_the_grid_share_the_ticks_they_ask_for(qtbot, monkeypatch):
    """The grid asks the axis for its ticks at every repaint with the view box's length,
    the axis with its own: both answers are kept (one kept answer was worked out again
    at every repaint, a tenth of it)."""
    from kernel_lab.plotting import axes

    calls = []
    real = axes.log_ticks
    monkeypatch.setattr(axes, "log_ticks", lambda *a: calls.append(a) or real(*a))
    axis = axes.log_axis("bottom")
    axis.setLogMode(True)
    for _ in range(3):
        for length in (600.0, 587.0):
            ticks = axis.tickValues(-2.0, 2.0, length)
            assert [round(10 ** v, 6) for v in ticks[0][1]][:2] == [0.01, 0.1]
    assert len(calls) == 2


def test_the_grid_draws_opaque_lines_that_look_as_the_translucent_ones(qtbot, monkeypatch):
    """The grid's lines are the opaque grey that its translucent black makes over the
    white background (Qt draws translucent lines about 40× slower): the picture is the
    same but at the pixels where two grid lines cross, and no pen is translucent."""
    from kernel_lab.plotting import axes

    white = pg.mkColor("w")
    assert axes.grid_color(64, white) == (191, 191, 191, 255)
    assert axes.grid_color(0, white) == (255, 255, 255, 255)
    assert axes.grid_color(64, pg.mkColor(0, 0, 0, 0)) == (0, 0, 0, 64)  # see-through

    def picture() -> np.ndarray:
        w = pg.GraphicsLayoutWidget()
        qtbot.addWidget(w)
        w.resize(500, 400)
        view = PlotView(w.ci, 0, SPEC, colors={})
        view.update(_table(0.01, 0.3))
        for item in view.item.vb.addedItems:
            if item is not view.grid:
                item.hide()  # the grid alone
        view.legend.hide()
        pg.QtWidgets.QApplication.processEvents()
        image = QtGui.QImage(500, 400, QtGui.QImage.Format.Format_RGB32)
        image.fill(QtGui.QColor("white"))
        painter = QtGui.QPainter(image)
        w.render(painter)
        painter.end()
        pixels = np.frombuffer(image.constBits(), np.uint8).reshape(400, 500, 4)
        w.close()
        return pixels[:, :, :3].copy()

    monkeypatch.setitem(pg.CONFIG_OPTIONS, "background", "w")  # as the application sets
    monkeypatch.setitem(pg.CONFIG_OPTIONS, "foreground", "k")
    pens = []
    real_paint_color = axes.grid_color
    monkeypatch.setattr(axes, "grid_color", lambda a, b: pens.append(real_paint_color(a, b))
                        or pens[-1])
    opaque = picture()
    assert pens and all(c[3] == 255 for c in pens)
    monkeypatch.setattr(axes, "grid_color", lambda a, b: (0, 0, 0, a))
    translucent = picture()
    grey = (opaque < 250).any(axis=2)
    assert grey.sum() > 1000  # lines were drawn
    differ = (np.abs(opaque.astype(int) - translucent.astype(int)) > 1).any(axis=2)
    assert differ.sum() < 0.05 * grey.sum()
    # where they differ, a horizontal and a vertical grid line cross (both pass through
    # the pixel's row and column for a long way), and the double blend is darker
    r, c = np.nonzero(differ)
    assert (grey.sum(axis=1)[r] > 100).all() and (grey.sum(axis=0)[c] > 100).all()
    assert (translucent[r, c].astype(int) < opaque[r, c]).all()
