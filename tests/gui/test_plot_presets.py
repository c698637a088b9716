"""The ckrr-real preset drawn headless (plot.png) and in a window-sized view: legends
apart, the off-scale note whole and inside its plot, every panel scaled to what it is
about (issue: overlapping legends, "1 points above the scale", Lemma 1 at ±8e8, flag
crosses setting the y range)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("pytestqt")

import pyqtgraph as pg

from kernel_lab.engine import run_experiment
from kernel_lab.engine.presets import load_preset
from kernel_lab.experiments import get_experiment
from kernel_lab.plotting.view import PlotView

CALM = ("linear", "polynomial", "exponential")  # the sigmoid kernel's risk explodes


@pytest.fixture(scope="module")
def ckrr_real():
    """The preset's run with fewer trials (the sigmoid explosion is there all the same)."""
    spec = load_preset("ckrr-real").spec
    result = run_experiment(spec.experiment, {**spec.params, "trials": 6}, data=spec.data)
    return {k: np.asarray(v, dtype=np.float64) for k, v in result.table.items()}


def calm_span(table):
    """Lowest and highest mean empirical test risk of the kernels that do not explode."""
    emp = np.concatenate([table[f"R_test_emp_mean[{k}]"] for k in CALM])
    return float(np.nanmin(emp)), float(np.nanmax(emp))


def test_headless_png_panels_do_not_collide_and_are_readable(qtbot, ckrr_real):
    from kernel_lab.plotting.render import layout_plots

    plots = get_experiment("ckrr-risk").plots
    layout, views = layout_plots(ckrr_real, plots, title="CKRR on real data")
    try:
        legends = [v.legend.sceneBoundingRect() for v in views]
        for a, b in itertools.combinations(range(len(views)), 2):
            assert not legends[a].intersects(legends[b]), (plots[a].title, plots[b].title)
        for view, below in itertools.pairwise(views):  # within its own row
            assert view.legend.sceneBoundingRect().bottom() <= \
                below.item.sceneBoundingRect().top()
        for view in views:
            assert view.off_scale is not None, view.spec.title  # the sigmoid's explosion
            label = view._off_label
            assert label.toPlainText().startswith(f"▲ {view.off_scale.above} points")
            inside = view.item.vb.sceneBoundingRect()
            assert inside.contains(label.mapRectToScene(label.boundingRect())), \
                view.spec.title
        low, high = calm_span(ckrr_real)
        lemma = next(v for v in views if v.spec.y_range_from)
        y0, y1 = lemma.item.vb.viewRange()[1]
        # the empirical risks fill the panel: not flattened by the estimate's blow-up
        assert y0 > -high and y1 < 3 * high and y0 < low
    finally:
        layout.close()


def test_window_test_risk_is_scaled_to_the_common_minimum(qtbot, ckrr_real):
    """The flag crosses sit on the sigmoid's exploding points and are off the scale with
    them: the kernels' common minimum is not squeezed into the bottom of the plot. The
    calm kernels' empirical risks set the range: they fill it but for its padding (were
    the crosses counted, at up to 10⁹, they would fill a millionth of it)."""
    w = pg.GraphicsLayoutWidget()
    qtbot.addWidget(w)
    w.resize(660, 640)
    view = PlotView(w.ci, 0, get_experiment("ckrr-risk").plots[0], colors={})
    w.show()
    qtbot.waitExposed(w)
    view.update(ckrr_real)
    pg.QtWidgets.QApplication.processEvents()
    y0, y1 = view.item.vb.viewRange()[1]
    low, high = calm_span(ckrr_real)
    assert y0 < low and high < y1 < 3 * high
    assert (high - low) / (y1 - y0) > 0.75  # the calm curves fill the view
    flagged = ckrr_real["R_test_indefinite[sigmoid]"]
    flagged = flagged[np.isfinite(flagged)]
    assert flagged.size and (flagged > y1).any()  # crosses off the scale, like their points


def test_a_long_legend_entry_stays_in_the_picture(qtbot):
    """learning-curve's "DSG: mean |f_t − f*|² (test)" ran past the PNG's right edge."""
    from kernel_lab.experiments import Curve, PlotSpec
    from kernel_lab.plotting.render import layout_plots

    spec = PlotSpec("convergence", "t", (
        Curve("d", "measured", "DSG: mean |f_t − f*|² (test, every 10th step)"),
        Curve("e", "estimate", "slope −1 (O(1/t))")), logx=True, logy=True)
    t = np.arange(1.0, 100.0)
    layout, views = layout_plots({"t": t, "d": 10 / t, "e": 12 / t}, [spec], width=900)
    try:
        legend = views[0].legend.sceneBoundingRect()
        assert legend.right() <= layout.width() and legend.width() > 0
        assert legend.left() >= views[0].item.sceneBoundingRect().right()  # beside the plot
    finally:
        layout.close()
