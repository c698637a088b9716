"""PlotView: styles come from the declared roles; a first draw can be spread over calls."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

import pyqtgraph as pg

from kernel_lab.experiments import Curve, PlotSpec
from kernel_lab.plotting.view import RANGE_LIMIT, PlotView

SPEC = PlotSpec("risk", "lam",
                (Curve("R_limit", "limit", "limit", star=True),
                 Curve("R_emp", "empirical", "empirical", spread="R_std"),
                 Curve("R_est", "estimate", "estimate", dash="dot")),
                logx=True)


def table():
    lam = np.logspace(-2, 2, 9)
    t = {"lam": lam}
    for i, k in enumerate(("linear", "exponential")):
        t[f"R_limit[{k}]"] = (np.log(lam) - i) ** 2 + 1
        t[f"R_emp[{k}]"] = t[f"R_limit[{k}]"] + 0.1
        t[f"R_std[{k}]"] = np.full(9, 0.05)
        t[f"R_est[{k}]"] = t[f"R_limit[{k}]"] - 0.1
    return t


@pytest.fixture
def view(qtbot):
    w = pg.GraphicsLayoutWidget()
    qtbot.addWidget(w)
    view = PlotView(w.ci, 0, SPEC, colors={})
    view.widget = w  # keeps the widget (and its C++ items) alive for the test
    return view


def test_roles_decide_the_style(view):
    view.update(table())
    limit, emp, est = (view.curves[f"{s}[linear]"] for s in ("R_limit", "R_emp", "R_est"))
    assert limit.opts["symbol"] is None and limit.opts["pen"].widthF() == 2.5
    assert emp.opts["pen"] is None and emp.opts["symbol"] == "o"
    assert est.opts["pen"].style() == pg.QtCore.Qt.PenStyle.DotLine
    assert set(view.error_bars) == {"R_emp[linear]", "R_emp[exponential]"}
    assert set(view.minima) == {"R_limit[linear]", "R_limit[exponential]"}
    x, _ = view.minima["R_limit[linear]"].getData()
    assert x[0] == pytest.approx(0.0)  # the minimum of (log λ)² + 1 is at λ = 1
    # one colour per group across curves
    assert limit.opts["pen"].color().name() == pg.mkBrush(emp.opts["symbolBrush"]).color().name()


def test_a_budgeted_first_draw_completes_over_several_calls(view):
    t = table()
    calls = 0
    while True:
        view.update(t, budget_s=0.0)  # one new curve, else one legend entry, per call
        calls += 1
        if view.complete:
            break
    assert calls == 6 + 5 and len(view.columns()) == 6
    legend = [label.text for _, label in view.legend.items]
    assert legend == ["linear", "exponential", "limit", "empirical", "estimate"]
    ys = view.curves["R_est[exponential]"].getData()[1]
    np.testing.assert_allclose(ys, t["R_est[exponential]"])


def test_a_budgeted_update_of_new_values_finishes_the_waiting_curves_first(view):
    """Changed curves, not only new ones, wait for the next call when the budget is
    spent; those that waited come first then, so none is left behind by a stream of
    tables, and the result is the table drawn whole."""
    t = table()
    view.update(t)
    t2 = {k: (v * 1.5 if k.startswith("R_emp") else v) for k, v in t.items()}
    view.update(t2, budget_s=0.0, same=False)
    assert not view.complete and len(view._waiting) == 1  # two changed: one drawn
    waiting = set(view._waiting)
    t3 = {k: (v * 2.0 if k.startswith("R_emp") else v) for k, v in t.items()}
    view.update(t3, budget_s=0.0)
    assert not view.complete and view._waiting.isdisjoint(waiting)
    view.update(t3, budget_s=0.0, same=True)
    assert view.complete
    for k in ("linear", "exponential"):
        np.testing.assert_allclose(view.curves[f"R_emp[{k}]"].getData()[1],
                                   t3[f"R_emp[{k}]"])


def test_live_axes_keep_their_range_while_the_points_fit_and_fit_exactly_after(view):
    """While results stream in, the axes move only when the points leave the range or
    fill less than half of it (a new range at every partial result re-laid out the
    axes, the grid and every curve); the first update after the run fits them exactly."""
    t = table()
    view.update(t, live=True)
    vb = view.item.vb
    first = vb.viewRange()
    assert vb.state["autoRange"] == [False, False]  # not fitted again at every repaint
    t2 = {k: (v * 1.01 if k.startswith("R_emp") else v) for k, v in t.items()}
    view.update(t2, live=True)
    assert vb.viewRange() == first  # the points still fit: nothing moves
    t3 = {k: (v * 30.0 if k.startswith("R_") else v) for k, v in t.items()}
    view.update(t3, live=True)
    (_, _), (lo, hi) = vb.viewRange()
    ys = np.concatenate([t3[f"R_emp[{k}]"] for k in ("linear", "exponential")])
    assert lo <= ys.min() and ys.max() <= hi and hi < 2 * ys.max()  # followed them
    view.update(t3)  # the run is over
    assert vb.autoRangeEnabled()[0] and vb.autoRangeEnabled()[1]
    exact = vb.viewRange()
    vb.enableAutoRange()
    vb.updateAutoRange()
    assert vb.viewRange() == exact


def test_live_axes_leave_room_on_the_side_the_points_move_to(view):
    """Results that move on (λ growing one grid point at a time, as cells come in): an
    axis the points leave on one side is set with room ahead on that side, so it moves
    on fewer partial results than the points do, and the points always fit and fill at
    least half of it."""
    t = table()
    vb = view.item.vb
    moves, last = 0, None
    for n in range(2, 10):
        part = {k: v[:n] for k, v in t.items()}
        view.update(part, live=True)
        (a, b), _ = vb.viewRange()
        x = np.log10(part["lam"])
        assert a <= x.min() and x.max() <= b and x.max() - x.min() >= 0.5 * (b - a)
        moves += (a, b) != last
        last = (a, b)
    assert moves <= 4  # 8 growing tables; following the points exactly took 8
    # room ahead on the side the points left by (the high side), not behind
    lam = np.log10(t["lam"])
    assert b - lam.max() >= 2 * (lam.min() - a)


def test_live_axes_leave_a_users_zoom_alone(view):
    t = table()
    view.update(t, live=True)
    vb = view.item.vb
    vb.setYRange(0.0, 1.0, padding=0)
    vb.sigRangeChangedManually.emit(vb.state["mouseEnabled"])  # as a wheel or drag does
    view.update({k: v * 50.0 if k.startswith("R_") else v for k, v in t.items()},
                live=True)
    assert vb.viewRange()[1] == [0.0, 1.0]
    view.update(t)
    assert vb.viewRange()[1] == [0.0, 1.0]  # and after the run


def test_a_users_zoom_stays_on_a_plot_with_spikes_off_the_scale(qtbot):
    view, t, _lam = exploding(qtbot)
    view.update(t, live=True)
    vb = view.item.vb
    vb.setYRange(0.5, 0.6, padding=0)
    vb.sigRangeChangedManually.emit(vb.state["mouseEnabled"])
    view.update({k: v * 1.3 if k.startswith("R_limit") else v for k, v in t.items()},
                live=True)
    assert vb.viewRange()[1] == [0.5, 0.6]
    view.update(t)  # the run is over
    assert vb.viewRange()[1] == [0.5, 0.6]
    view.blank()  # a new run: the range is the data's again
    view.update(t)
    assert vb.viewRange()[1] != [0.5, 0.6]


def test_pinned_curves_keep_their_part_in_the_range_while_results_stream_in(view):
    """A pin is drawn into the view box and counts for autoscaling; following only the
    run's curves would cut it off during the run."""
    t = table()
    pinned = {k: (v * 100 if k.startswith("R_") else v) for k, v in t.items()}
    assert view.add_pin(pinned) > 0
    view.update(t, live=True)
    vb = view.item.vb
    assert vb.autoRangeEnabled()[1]
    vb.updateAutoRange()
    top = max(pinned[f"R_limit[{k}]"].max() for k in ("linear", "exponential"))
    assert vb.viewRange()[1][1] >= top


def test_a_single_point_gets_a_readable_range(view):
    """The first partial result of a curve may be one point: a range around it, not one
    of zero width (curves mapped to 10^15 pixels broke the SVG export)."""
    view.update({"lam": np.array([1.0]), "R_limit[linear]": np.array([2.0]),
                 "R_emp[linear]": np.array([2.0]), "R_std[linear]": np.array([0.0]),
                 "R_est[linear]": np.array([2.0])}, live=True)
    (x0, x1), (y0, y1) = view.item.vb.viewRange()
    assert 0.5 <= x1 - x0 <= 2 and 1 <= y1 - y0 <= 4


def exploding(qtbot):
    """A plot of risks (declared positive) and a table whose exponential curve explodes
    below λ = 0.5."""
    import dataclasses

    w = pg.GraphicsLayoutWidget()
    qtbot.addWidget(w)
    view = PlotView(w.ci, 0, dataclasses.replace(SPEC, positive=True), colors={})
    view.widget = w
    t = table()
    t["R_emp[exponential]"] = np.where(t["lam"] < 0.5, 1e9, t["R_emp[exponential]"])
    return view, t, t["lam"]


def test_one_exploding_curve_does_not_flatten_the_others(qtbot):
    view, t, lam = exploding(qtbot)
    t["R_std[exponential]"] = np.where(lam < 0.5, 5e8, 0.05)
    view.update(t)
    cut = view.off_scale
    assert cut is not None and cut.above == int((lam < 0.5).sum())
    _, hi = view.item.vb.viewRange()[1]
    assert hi < 100  # the calm curves fill the plot
    assert view._off_label.toPlainText().startswith(f"▲ {cut.above} points above the scale")
    xs = view._band_edges["R_emp[exponential]"][0].getData()[0]
    assert xs is None or len(xs) == 0  # no band for the exploding line
    t["R_emp[exponential]"] = t["R_limit[exponential]"] + 0.1  # calm again
    t["R_std[exponential]"] = np.full(9, 0.05)
    view.update(t)
    assert view.off_scale is None and view._off_label.toPlainText() == ""


def test_a_live_range_that_leaves_spikes_out_stays_but_never_shows_them(qtbot):
    """While results stream in, the range that leaves spikes off the scale stays while
    the calm curves move within it, and a point the note counts as off the scale is
    never inside the range on screen."""
    view, t, lam = exploding(qtbot)
    view.update(t, live=True)
    vb = view.item.vb
    first = vb.viewRange()[1]
    spikes = t["R_emp[exponential]"][lam < 0.5]
    for step in range(1, 6):
        t2 = {k: (v * (1 + 0.01 * step) if k.startswith("R_limit") else v)
              for k, v in t.items()}
        view.update(t2, live=True)
        lo, hi = vb.viewRange()[1]
        assert view.off_scale is not None and not ((spikes >= lo) & (spikes <= hi)).any()
    assert vb.viewRange()[1] == first  # the calm curves stayed within it
    t3 = dict(t2, **{"R_emp[linear]": t2["R_emp[linear]"] * 40})  # a calm curve grows
    view.update(t3, live=True)
    lo, hi = vb.viewRange()[1]
    assert hi >= t3["R_emp[linear]"].max() and view.off_scale is not None
    assert not ((spikes >= lo) & (spikes <= hi)).any()


def test_a_spectrum_keeps_its_peaks(view):
    """Only risks and errors (declared positive) leave spikes off the scale: the leading
    eigenvalues of a spectrum are the point of the plot."""
    t = table()
    t["R_emp[exponential]"] = np.where(t["lam"] < 0.5, 1e9, t["R_emp[exponential]"])
    view.update(t)
    assert view.off_scale is None and view.item.vb.autoRangeEnabled()[1]
    view.item.vb.updateAutoRange()
    assert view.item.vb.viewRange()[1][1] > 1e8


def test_a_scatter_of_a_subset_says_how_many_points_of_how_many(qtbot):
    spec = PlotSpec("picture", "vx", (Curve("vy", "measured", "points"),), kind="scatter",
                    color="vc", total="vn")
    w = pg.GraphicsLayoutWidget()
    qtbot.addWidget(w)
    view = PlotView(w.ci, 0, spec, colors={})
    rng = np.random.default_rng(0)
    x, y, c = rng.normal(size=(3, 500))
    labels = lambda: [label.text for _, label in view.legend.items]  # noqa: E731
    view.update({"vx": x, "vy": y, "vc": c, "vn": np.r_[150_000.0, np.full(499, np.nan)]})
    assert labels() == ["500 of 150,000 points"]
    view.update({"vx": x[:100], "vy": y[:100], "vc": c[:100], "vn": np.array([100.0])})
    assert labels() == ["points"]  # all of them: no count


def test_the_star_marks_the_least_trusted_point_as_the_experiment_chooses(qtbot):
    """krr-path with the sigmoid kernel: the points where K + λI is near singular are
    crossed out and hold the curve's least values; the star must sit where the run's
    own best λ is, the least error above that region."""
    from kernel_lab.engine import run_experiment
    from kernel_lab.experiments import get_experiment

    r = run_experiment("krr-path", {"kernel": "sigmoid", "n_lams": 30, "lam_min": 1e-3,
                                    "lam_max": 1e3}, data="diabetes")
    w = pg.GraphicsLayoutWidget()
    qtbot.addWidget(w)
    spec = get_experiment("krr-path").plots[0]
    view = PlotView(w.ci, 0, spec, colors={})
    view.update(r.table)
    traps = 0
    for method in ("krr", "ckrr"):
        flagged = np.isfinite(r.table[f"test_mse_indefinite_{method}"])
        mse = r.table[f"test_mse_{method}"]
        traps += mse[flagged].min() < r.summaries[f"test_mse_min_{method}"]
        x, y = view.minima[f"test_mse_{method}"].getData()
        np.testing.assert_allclose(10 ** x[0], r.summaries[f"lam_best_{method}"], rtol=1e-9)
        np.testing.assert_allclose(10 ** y[0], r.summaries[f"test_mse_min_{method}"], rtol=1e-9)
    assert traps  # a flagged point below the best: the case this test is about


@pytest.mark.parametrize("name, same", [
    ("krr-path", [("test_mse_krr", "train_mse_krr", "test_risk_krr"),
                  ("test_mse_ckrr", "train_mse_ckrr", "test_risk_ckrr")]),
    ("learning-curve", [("dsg_test_error", "dsg_floor_distance", "dsg_train_loss"),
                        ("nystrom_test_error", "nystrom_excess_objective")])])
def test_a_method_keeps_its_colour_in_every_plot(name, same):
    """The window shares one colour map between an experiment's plots (README: one colour
    per kernel or method in every plot): KRR is not blue in one tab and pink in the next."""
    from kernel_lab.experiments import get_experiment
    from kernel_lab.experiments.plotspec import resolve_curves
    from kernel_lab.plotting.view import assign_colors

    colors: dict[str, str] = {}
    by_column: dict[str, str] = {}
    for spec in get_experiment(name).plots:
        columns = [c.series for c in spec.curves]
        lines = resolve_curves(spec, [*columns, spec.x])
        shared = assign_colors(lines, colors)
        by_column.update({ln.column: shared[ln.group] for ln in lines})
    for columns in same:
        assert len({by_column[c] for c in columns}) == 1, columns
    assert len({by_column[c[0]] for c in same}) == len(same)  # and methods differ


def test_the_png_keeps_a_method_s_colour_across_its_plots(qtbot):
    """plot.png (all plots stacked) and the report (one render per plot) draw a method in
    the colour it has in the other plots."""
    from kernel_lab.experiments import get_experiment
    from kernel_lab.plotting.render import layout_plots

    x = np.logspace(1, 3, 6)
    table = {"n_features": x, "iteration": x}
    for col in ("dsg_test_error", "rff_test_error", "nystrom_test_error", "krr_test_error",
                "dsg_floor_distance", "dsg_twin_excess_objective",
                "nystrom_excess_objective", "rate_guide", "dsg_train_loss"):
        table[col] = 1.0 / x + len(table)
    plots = get_experiment("learning-curve").plots

    def pen(view, col):
        return view.curves[col].opts["pen"].color().name()

    layout, views = layout_plots(table, plots)
    assert pen(views[0], "nystrom_test_error") == pen(views[1], "nystrom_excess_objective")
    assert pen(views[0], "dsg_test_error") == pen(views[2], "dsg_train_loss")
    layout.close()
    colors: dict[str, str] = {}  # the report renders each plot on its own, one colour map
    first, (v0,) = layout_plots(table, plots[:1], colors=colors)
    second, (v1,) = layout_plots(table, plots[1:2], colors=colors)
    assert pen(v0, "nystrom_test_error") == pen(v1, "nystrom_excess_objective")
    first.close()
    second.close()


def test_only_a_curve_off_the_scale_is_clamped_at_every_range_change(qtbot):
    """pyqtgraph's dynamic range limit (points clamped near the view, the curve and its
    symbols made again at every change of the y range) stays on for a curve with points
    off the scale, and is off for the curves inside it; their symbols are drawn with the
    same brush and pen objects from one table to the next (no symbol rendered again)."""

    view, t, _lam = exploding(qtbot)
    view.update(t)
    assert view.curves["R_emp[exponential]"].opts["dynamicRangeLimit"] == RANGE_LIMIT
    calm = view.curves["R_emp[linear]"]
    assert calm.opts["dynamicRangeLimit"] is None
    assert calm.opts["symbol"]  # drawn with symbols
    brush = calm.scatter.opts["brush"]
    view.update({k: (v * 1.01 if k.startswith("R_emp[linear]") else v) for k, v in t.items()})
    assert calm.scatter.opts["brush"] is brush  # the same object: its symbol is kept
    np.testing.assert_allclose(calm.getData()[1], t["R_emp[linear]"] * 1.01)
    t["R_emp[exponential]"] = t["R_limit[exponential]"] + 0.1  # calm again: no clamping
    view.update(t)
    assert view.curves["R_emp[exponential]"].opts["dynamicRangeLimit"] is None
    view._zoomed()  # the user zooms in: every curve is clamped near the view again
    assert all(c.opts["dynamicRangeLimit"] == RANGE_LIMIT for c in view.curves.values())


def test_an_unchanged_curve_left_off_the_scale_by_the_others_is_clamped(qtbot):
    """Every curve explodes at small λ (no isolated spikes: the range takes them in);
    then all but one calm down and the range leaves that one's points out — although
    its values did not change, it is clamped again."""
    view, t, lam = exploding(qtbot)
    wild = {k: (np.where(lam < 0.5, 1e20, v) if k.startswith(("R_emp", "R_limit")) else v)
            for k, v in t.items()}
    view.update(wild)
    assert view.off_scale is None
    assert all(c.opts["dynamicRangeLimit"] is None for c in view.curves.values())
    calm = dict(t, **{"R_limit[exponential]": wild["R_limit[exponential]"]})
    calm["R_emp[exponential]"] = t["R_limit[exponential]"] + 0.1
    view.update(calm)
    assert view.off_scale is not None
    assert view.curves["R_limit[exponential]"].opts["dynamicRangeLimit"] == RANGE_LIMIT
    assert view.curves["R_emp[linear]"].opts["dynamicRangeLimit"] is None


def test_no_axis_sets_its_label_again_at_every_range_change(qtbot, monkeypatch):
    """The hidden top and right axes are linked to the view too: none of the four
    re-renders its label's HTML when the range moves."""
    import pyqtgraph as pg

    w = pg.GraphicsLayoutWidget()
    qtbot.addWidget(w)
    view = PlotView(w.ci, 0, SPEC, colors={})
    calls = []
    monkeypatch.setattr(pg.AxisItem, "_updateLabel", lambda self: calls.append(self))
    view.item.vb.setYRange(0.0, 123.0, padding=0)
    view.item.vb.setXRange(1.0, 7.0, padding=0)
    assert calls == []


def test_the_legend_ignores_its_deleted_holder_detached_or_not(qtbot):
    """The legend sits at a fixed place in its holder, with no anchor following the
    holder: a geometry change that reaches it once the holder's C++ object is gone does
    nothing, whether or not the view was detached first (CI runs met "Internal C++ object
    (GraphicsLayout) already deleted" from such a late signal — the last one from a
    window a previous test closed, whose plots were destroyed during the next test)."""
    import shiboken6

    from kernel_lab.plotting.legend import LEGEND_TOP

    for detach in (True, False):
        w = pg.GraphicsLayoutWidget()
        qtbot.addWidget(w)
        view = PlotView(w.ci, 0, SPEC, colors={})
        assert view.legend.parentItem() is view._holder
        assert (view.legend.pos().x(), view.legend.pos().y()) == (0.0, LEGEND_TOP * view.scale)
        if detach:
            view.detach()
        shiboken6.delete(view._holder)
        view.legend._GraphicsWidgetAnchor__geometryChanged()  # the late signal: no error


def test_a_line_of_one_point_gets_a_dot_until_it_has_two(view):
    """A limit, estimate or reference curve is a line without markers: with a single point
    (one λ of Algorithm 2's bound) it would draw nothing. It gets a dot, in its colour,
    which goes again when the curve has two points; roles that draw points keep theirs."""
    one = {"lam": np.array([1.0]), "R_limit[linear]": np.array([2.0]),
           "R_emp[linear]": np.array([2.5]), "R_std[linear]": np.array([0.0]),
           "R_est[linear]": np.array([1.5])}
    view.update(one)
    limit, emp, est = (view.curves[f"{s}[linear]"] for s in ("R_limit", "R_emp", "R_est"))
    for line in (limit, est):
        assert line.opts["symbol"] == "o"
        assert pg.mkBrush(line.opts["symbolBrush"]).color().name() == \
            line.opts["pen"].color().name()
    assert emp.opts["symbol"] == "o" and emp.opts["symbolSize"] == 6.0  # its own marker
    view.update(table())
    assert limit.opts["symbol"] is None and est.opts["symbol"] is None
    assert emp.opts["symbol"] == "o"
