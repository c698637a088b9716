"""The range policy of line plots (:mod:`kernel_lab.plotting.ranges`) without Qt: each
function against values worked out by hand from its rule, and the module loads no Qt."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernel_lab.experiments import Curve, PlotSpec, SeriesKey
from kernel_lab.experiments.plotspec import CurveLine, OffScale, resolve_curves, robust_range
from kernel_lab.plotting import ranges
from kernel_lab.plotting.ranges import (
    along_x,
    flagged,
    follow_axis,
    keeps_cut,
    padded_range,
    plan_y_range,
    positive_mask,
    reference_range,
    within,
)
from tests.sources import parse


def _lines(table: dict[str, np.ndarray], *curves: Curve, x: str = "x") -> list[CurveLine]:
    return resolve_curves(PlotSpec("plot", x, curves), table)


def _line(table: dict[str, np.ndarray], column: str, role: str = "measured") -> CurveLine:
    return _lines(table, Curve(column, role))[0]


# --- the points an axis can show, in the order of their x ---------------------------------

def test_a_log_axis_shows_only_finite_positive_values():
    a = np.array([-1.0, 0.0, 2.0, np.nan, np.inf, 1e-300])
    assert positive_mask(a, log=True).tolist() == [False, False, True, False, False, True]
    assert positive_mask(a, log=False).tolist() == [True, True, True, False, False, True]


def test_a_line_is_read_in_the_order_of_its_x_with_its_marks():
    table = {"x": np.array([3.0, 1.0, 2.0, 1.0]), "y": np.array([30.0, 10.0, 20.0, 11.0])}
    y, marked = along_x(table, _line(table, "y"), np.array([True, False, False, True]))
    # equal x keep the table's order (10 before 11)
    assert y.tolist() == [10.0, 11.0, 20.0, 30.0]
    assert marked.tolist() == [False, True, False, True]
    y, marked = along_x(table, _line(table, "y"))
    assert y.tolist() == [10.0, 11.0, 20.0, 30.0] and not marked.any()


def test_a_line_whose_x_has_another_shape_keeps_the_table_order():
    table = {"x": np.array([3.0, 1.0]), "y": np.array([5.0, 4.0, 3.0])}
    line = CurveLine(SeriesKey("y"), "x", Curve("y"), None)
    y, marked = along_x(table, line)
    assert y.tolist() == [5.0, 4.0, 3.0] and marked.tolist() == [False] * 3


def test_a_flag_marks_the_points_it_repeats_at_the_same_x():
    table = {"x": np.arange(4.0), "r": np.array([1.0, 2.0, 3.0, 4.0]),
             "bad": np.array([np.nan, 2.0, 3.5, 4.0 * (1 + 1e-13)]),
             "t": np.arange(4.0), "other": np.array([1.0, 2.0, 3.0, 4.0])}
    line, flag = _line(table, "r"), _line(table, "bad", "flag")
    # equal to 1e-12 relative: the same value; NaN marks nothing; 3.5 is another value
    assert flagged(table, line, [flag]).tolist() == [False, True, False, True]
    assert not flagged(table, line, []).any()
    # a flag against another x column marks nothing, even with equal values
    other = CurveLine(SeriesKey("other"), "t", Curve("other", "flag"), None)
    assert not flagged(table, line, [other]).any()


def test_a_flag_of_another_length_marks_nothing():
    table = {"x": np.arange(3.0), "r": np.array([1.0, 2.0, 3.0])}
    line = _line(table, "r")
    short = {**table, "bad": np.array([1.0, 2.0])}
    flag = CurveLine(SeriesKey("bad"), "x", Curve("bad", "flag"), None)
    assert not flagged(short, line, [flag]).any()


# --- the y range a table asks for -----------------------------------------------------------

def _spiky_table() -> dict[str, np.ndarray]:
    x = np.arange(20.0)
    calm = 1.0 + 0.1 * np.sin(x)
    spike = calm.copy()
    spike[10] = 1e6  # one isolated point, five decades above the others
    return {"x": x, "calm": calm, "spike": spike}


def test_a_plot_of_risks_leaves_an_isolated_spike_off_the_scale():
    table = _spiky_table()
    lines = _lines(table, Curve("calm"), Curve("spike"))
    plan = plan_y_range(table, lines, logy=False, positive=True)
    others = np.concatenate([table["calm"], np.delete(table["spike"], 10)])
    assert plan.window is None and set(plan.marked) == {"calm", "spike"}
    cut = plan.cut
    assert (cut.above, cut.below, cut.worst) == (1, 0, 1e6)
    assert cut.low <= others.min() and others.max() <= cut.high < 1e6


def test_a_plot_that_is_not_of_risks_keeps_its_peaks():
    table = _spiky_table()
    lines = _lines(table, Curve("calm"), Curve("spike"))
    plan = plan_y_range(table, lines, logy=False, positive=False)
    assert plan.cut is None and plan.window is None


def test_markers_set_no_range_and_are_not_checked_for_flags():
    table = _spiky_table()
    table["pick"] = np.full(20, np.nan)
    table["pick"][3] = -5e7  # a chosen point far below: a marker, not a line
    plain = plan_y_range(table, _lines(table, Curve("calm"), Curve("spike")),
                         logy=False, positive=True)
    marked = plan_y_range(table, _lines(table, Curve("calm"), Curve("spike"),
                                        Curve("pick", "choice")), logy=False, positive=True)
    assert marked.cut == plain.cut and "pick" not in marked.marked


def test_the_range_follows_each_line_along_its_x_not_the_table_order():
    """A curve rising steadily by a factor 1.5 a step, far above five flat ones, is part
    of the picture: read in a shuffled table's order it would jump by decades and look
    like spikes."""
    x = np.linspace(1.0, 40.0, 40)
    order = np.random.default_rng(3).permutation(40)
    table = {"x": x[order], "r": 2.0 * 1.5 ** np.arange(40.0)[order]}
    for i in range(5):
        table[f"flat{i}"] = (2.0 + 0.01 * np.sin(x + i))[order]
    lines = _lines(table, Curve("r"), *(Curve(f"flat{i}") for i in range(5)))
    assert robust_range([table[ln.column] for ln in lines], logy=True) is not None
    assert plan_y_range(table, lines, logy=True, positive=True).cut is None


def test_flagged_points_of_a_line_set_no_range():
    """Points a flag marks are off the scale when beyond what the trusted ones span,
    however steadily their line walks there."""
    x = np.linspace(0.0, 1.0, 30)
    table = {"x": x, "calm": 100.0 + 5.0 * x, "rise": 100.0 + 400.0 * x ** 2}
    rise = _lines(table, Curve("calm"), Curve("rise"))
    assert plan_y_range(table, rise, logy=False, positive=True).cut is None
    bad = x > 0.8
    table["bad"] = np.where(bad, table["rise"], np.nan)
    lines = _lines(table, Curve("calm"), Curve("rise"), Curve("bad", "flag"))
    plan = plan_y_range(table, lines, logy=False, positive=True)
    assert plan.marked["rise"].tolist() == bad.tolist() and not plan.marked["calm"].any()
    trusted = np.concatenate([table["calm"], table["rise"][~bad]])
    beyond = table["rise"][bad] > trusted.max()
    assert plan.cut.above == int(beyond.sum()) > 0 and plan.cut.below == 0
    assert plan.cut.high == pytest.approx(trusted.max())
    assert plan.cut.worst == pytest.approx(table["rise"].max())


def test_a_reference_range_is_the_references_span_widened_by_half():
    table = {"x": np.arange(4.0), "ref": np.array([1.0, 2.0, 3.0, 4.0]),
             "wild": np.array([0.0, 2.0, 10.0, -3.0])}
    lines = _lines(table, Curve("ref"), Curve("wild"))
    window, cut = reference_range(table, lines, ("ref",), logy=False)
    tiny = 1e-12 * 4.0  # the margin that keeps a flat reference from a zero span
    assert window == pytest.approx((1.0 - 1.5 - tiny, 4.0 + 1.5 + tiny), abs=0, rel=1e-15)
    assert cut == OffScale(window[0], window[1], 1, 1, 10.0)  # the farthest above first
    plan = plan_y_range(table, lines, logy=False, positive=True, reference=("ref",))
    assert plan.window == window and plan.cut == cut


def test_a_reference_range_on_a_log_axis_is_widened_in_decades():
    table = {"x": np.arange(4.0), "ref": np.array([1.0, 10.0, 100.0, -1.0]),
             "wild": np.array([1e-3, 5.0, 1e4, -1.0])}
    lines = _lines(table, Curve("ref"), Curve("wild"))
    window, cut = reference_range(table, lines, ("ref",), logy=True)
    # decades 0 to 2, one decade more on each side (and 1e-12 of the largest decade, 2)
    assert window == pytest.approx((10 ** (-1 - 2e-12), 10 ** (3 + 2e-12)), rel=1e-12)
    assert (cut.above, cut.below, cut.worst) == (1, 1, 1e4)  # -1 is not on the axis


def test_a_reference_range_that_leaves_nothing_out_says_so():
    table = {"x": np.arange(3.0), "ref": np.array([1.0, 3.0, 5.0]),
             "near": np.array([0.0, 2.0, 6.0])}
    window, cut = reference_range(table, _lines(table, Curve("ref"), Curve("near")),
                                  ("ref",), logy=False)
    assert window == pytest.approx((-1.0, 7.0)) and cut is None


def test_a_reference_without_a_value_on_the_axis_fixes_no_range():
    table = {"x": np.arange(3.0), "ref": np.array([-1.0, 0.0, np.nan]),
             "other": np.array([1.0, 2.0, 3.0])}
    lines = _lines(table, Curve("ref"), Curve("other"))
    assert reference_range(table, lines, ("ref",), logy=True) == (None, None)
    assert plan_y_range(table, lines, logy=True, positive=True,
                        reference=("ref",)).window is None


# --- the range on screen ----------------------------------------------------------------------

def test_a_cut_range_gets_a_twentieth_of_its_span_and_its_size_as_margin():
    assert padded_range(2.0, 6.0, logy=False, fixed=False) == pytest.approx((2, 6, 0.5))
    # a flat range still gets room: a twentieth of its magnitude
    assert padded_range(-4.0, -4.0, logy=False, fixed=False) == pytest.approx((-4, -4, 0.2))
    assert padded_range(1.0, 1000.0, logy=True, fixed=False) == pytest.approx((0, 3, 0.15))
    # at least a twentieth of a tenth of a decade
    assert padded_range(10.0, 10.5, logy=True, fixed=False) == pytest.approx(
        (1.0, np.log10(10.5), 0.005))


def test_a_fixed_window_is_shown_as_it_is():
    assert padded_range(2.0, 6.0, logy=False, fixed=True) == (2.0, 6.0, 0.0)
    assert padded_range(0.1, 100.0, logy=True, fixed=True) == pytest.approx((-1, 2, 0))


@pytest.mark.parametrize(("shown", "values", "keeps"), [
    ((0.0, 10.0), [np.array([5.0, 12.0])], True),  # 12 is off the scale and off screen
    ((0.0, 10.0), [np.array([5.0]), np.array([1.0])], False),  # 1: left out, yet shown
    ((0.0, 10.0), [], True),
    ((0.0, 14.0), [np.array([5.0])], True),  # twice as tall as the range with margin
    ((0.0, 15.0), [np.array([5.0])], False),  # taller
    ((3.0, 10.0), [np.array([5.0])], False),  # does not hold the range
])
def test_a_live_range_stays_while_it_holds_the_cut_and_shows_nothing_it_leaves_out(
        shown, values, keeps):
    assert keeps_cut(shown, 2.0, 8.0, 0.5, values, logy=False) is keeps


@pytest.mark.parametrize(("values", "keeps"), [
    ([np.array([10.0, 1e5])], True),  # decades 1 and 5: in the range, and off screen
    ([np.array([0.5])], True),  # below the range, and below the screen's 0
    ([np.array([1.5])], False),  # decade 0.18: left out, on screen
    ([np.array([0.0, -1.0, np.nan])], True),  # nothing a log axis shows
])
def test_a_live_range_on_a_log_axis_compares_decades(values, keeps):
    assert keeps_cut((0.0, 3.0), 0.5, 2.5, 0.1, values, logy=True) is keeps


def test_streaming_points_that_fit_and_fill_half_the_axis_keep_it():
    assert follow_axis([np.arange(1.0, 10.0)], (0.0, 10.0), False) is None
    assert follow_axis([np.array([2.0, 3.0]), np.array([6.0])], (1.0, 9.0), False) is None


def test_streaming_points_that_fill_too_little_get_their_range():
    # 1 to 9 in 0 to 100: a tenth of their spread on each side
    assert follow_axis([np.arange(1.0, 10.0)], (0.0, 100.0), False) == pytest.approx(
        (0.2, 9.8))


def test_streaming_points_that_leave_on_one_side_get_room_ahead_there():
    # 2 to 14 left 0 to 10 on the right: 1.2 each side and 6 (half of 12) more ahead
    new = follow_axis([np.linspace(2.0, 14.0, 7)], (0.0, 10.0), False)
    assert new == pytest.approx((0.8, 21.2))
    assert (14.0 - 2.0) / (new[1] - new[0]) == pytest.approx(1 / 1.7)
    # left on both sides: no side ahead
    assert follow_axis([np.array([0.0, 10.0])], (4.0, 6.0), False) == pytest.approx(
        (-1.0, 11.0))


def test_streaming_points_on_a_log_axis_are_followed_in_decades():
    # 1 to 1e4 (decades 0 to 4) past 0 to 3: 0.4 each side and 2 decades ahead on top
    new = follow_axis([np.logspace(0, 4, 5), np.array([-1.0, 0.0])], (0.0, 3.0), True)
    assert new == pytest.approx((-0.4, 6.4))


def test_a_single_streaming_value_gets_a_readable_range():
    assert follow_axis([np.array([5.0])], (0.0, 1.0), False) == pytest.approx((2.5, 7.5))
    assert follow_axis([np.array([100.0])], (0.0, 1.0), True) == pytest.approx((1.5, 2.5))
    assert follow_axis([np.array([0.0])], (1.0, 2.0), False) == pytest.approx(
        (-5e-10, 5e-10))


def test_streaming_points_the_axis_cannot_show_move_nothing():
    assert follow_axis([], (0.0, 1.0), False) is None
    assert follow_axis([np.array([0.0, -3.0, np.nan])], (0.0, 1.0), True) is None


@pytest.mark.parametrize(("extent", "window", "inside"), [
    ((np.inf, -np.inf), (0.0, 1.0), True),  # no point: nothing to clamp
    ((1.0, 2.0), None, True),  # the range is fitted to every point
    ((1.0, 2.0), (0.0, 3.0), True),
    ((1.0, 2.0), (1.0, 2.0), True),
    ((1.0, 4.0), (0.0, 3.0), False),
    ((-1.0, 2.0), (0.0, 3.0), False),
    ((-np.inf, 2.0), None, False),
])
def test_a_curve_within_the_plot_s_range_needs_no_clamping(extent, window, inside):
    assert within(extent, window) is inside


# --- no Qt ------------------------------------------------------------------------------------

def test_the_range_policy_imports_numpy_and_the_plot_declarations_only():
    """Every import of the module, those inside functions too."""
    tree = parse(Path(ranges.__file__).read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add(node.module)
    assert found <= {"__future__", "collections.abc", "typing", "numpy",
                     "kernel_lab.experiments.plotspec"}, found


def test_importing_the_range_policy_loads_no_qt():
    code = ("import sys, kernel_lab.plotting.ranges\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'pyqtgraph', 'shiboken6', 'superqt'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""
