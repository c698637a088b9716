"""The range policy of a line plot: which y range it shows, what that range leaves off the
scale, and how the axes follow results while they stream in.

Plain functions over arrays and numbers, without Qt: :class:`~kernel_lab.plotting.view.PlotView`
asks them and sets what they answer on its pyqtgraph view box. "View coordinates" are
those of the view box: the values themselves on a linear axis, their ``log10`` on a
logarithmic one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from kernel_lab.experiments.plotspec import CurveLine, OffScale, robust_range

#: Roles drawn as markers over points of other lines: they repeat those points and obey
#: the same y range, so they never set it (a flagged spike is off the scale with its point).
MARKERS = ("choice", "flag")

Table = Mapping[str, Sequence[float] | np.ndarray]


class YPlan(NamedTuple):
    """What a table's lines make of a plot's y range (:func:`plan_y_range`)."""

    #: Per drawn line (by column, markers left out): which of its points, in the table's
    #: order, a ``flag`` line marks as not to be trusted.
    marked: dict[str, np.ndarray]
    #: The range that leaves spikes out and what it leaves out; None when nothing is off
    #: the scale.
    cut: OffScale | None
    #: A fixed range ``(low, high)`` in data units (a plot with ``y_range_from``), else None.
    window: tuple[float, float] | None


def positive_mask(a: np.ndarray, log: bool) -> np.ndarray:
    """Which values of ``a`` an axis can show: finite ones, and positive too on a log axis.

    Parameters
    ----------
    a : ndarray
        Values along one axis.
    log : bool
        Whether the axis is logarithmic.

    Returns
    -------
    ndarray of bool, shape of ``a``
    """
    m = np.isfinite(a)
    return m & (a > 0) if log else m


def along_x(table: Table, line: CurveLine, marked: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """A line's y values in the order of its x (the off-scale rule looks at the steps of
    each line), and ``marked`` in the same order.

    Parameters
    ----------
    table : mapping of str to array_like
        The result table (column → values).
    line : CurveLine
        The line: its column and its x column.
    marked : ndarray of bool, optional
        Which of the line's points, in the table's order, a flag marks (see
        :func:`flagged`); none when omitted.

    Returns
    -------
    y, marked : ndarray
        Both sorted by x (a stable sort: equal x keep the table's order), or left in the
        table's order when the x and y columns differ in shape.
    """
    x = np.asarray(table[line.x], dtype=np.float64)
    y = np.asarray(table[line.column], dtype=np.float64)
    if marked is None:
        marked = np.zeros(y.shape, dtype=bool)
    if x.shape != y.shape:
        return y, marked
    order = np.argsort(x, kind="stable")
    return y[order], marked[order]


def flagged(table: Table, line: CurveLine, flags: Sequence[CurveLine]) -> np.ndarray:
    """Which points of ``line`` a ``flag`` line marks: a cross drawn over the point, the
    same value (to 1e-12 relative) at the same x column.

    Parameters
    ----------
    table : mapping of str to array_like
        The result table.
    line : CurveLine
        The line whose points may be marked.
    flags : sequence of CurveLine
        The plot's lines of role ``flag``.

    Returns
    -------
    ndarray of bool, shape of the line's column, in the table's order
    """
    y = np.asarray(table[line.column], dtype=np.float64)
    marked = np.zeros(y.shape, dtype=bool)
    for flag in flags:
        f = np.asarray(table[flag.column], dtype=np.float64)
        if flag.x == line.x and f.shape == y.shape:
            with np.errstate(invalid="ignore"):
                marked |= np.isfinite(f) & np.isclose(y, f, rtol=1e-12, atol=0.0)
    return marked


def plan_y_range(table: Table, lines: Sequence[CurveLine], *, logy: bool,
                 positive: bool, reference: Collection[str] = ()) -> YPlan:
    """The y range of a line plot, worked out once per table.

    A plot declared ``positive`` (risks and errors) leaves isolated spikes off the scale
    (:func:`~kernel_lab.experiments.plotspec.robust_range`), its flagged points setting
    no range; a plot with ``reference`` series shows their range widened by half
    (:func:`reference_range`); any other (a spectrum, a histogram) keeps its peaks.

    Parameters
    ----------
    table : mapping of str to array_like
        The result table.
    lines : sequence of CurveLine
        The plot's lines, markers (:data:`MARKERS`) included; they do not set the range.
    logy : bool
        Whether the y axis is logarithmic.
    positive : bool
        Whether the plot declares positive values (``PlotSpec.positive``).
    reference : collection of str
        The series whose range the plot shows (``PlotSpec.y_range_from``); none: the range
        follows the data.

    Returns
    -------
    YPlan
    """
    flags = [ln for ln in lines if ln.curve.role == "flag"]
    drawn = [ln for ln in lines if ln.curve.role not in MARKERS]
    marked = {ln.column: flagged(table, ln, flags) for ln in drawn}
    window = None
    if reference:
        window, cut = reference_range(table, drawn, reference, logy)
    elif positive:
        pairs = [along_x(table, ln, marked[ln.column]) for ln in drawn]
        cut = robust_range([y for y, _ in pairs], logy, [m for _, m in pairs])
    else:
        cut = None
    return YPlan(marked, cut, window)


def reference_range(table: Table, lines: Sequence[CurveLine], reference: Collection[str],
                    logy: bool) -> tuple[tuple[float, float] | None, OffScale | None]:
    """The y range of a plot whose curves can blow up: that of the ``reference`` series
    without their own isolated spikes, widened by half its span on each side (in decades
    on a log axis), and what of the plot's ``lines`` it leaves out.

    Parameters
    ----------
    table : mapping of str to array_like
        The result table.
    lines : sequence of CurveLine
        The lines that are drawn (markers left out).
    reference : collection of str
        The series (``SeriesKey.series``) that set the range.
    logy : bool
        Whether the y axis is logarithmic.

    Returns
    -------
    window : tuple of float or None
        ``(low, high)`` in data units; None when the reference series hold no value the
        axis can show.
    cut : OffScale or None
        The points of ``lines`` outside the window (the farthest above it, else below it,
        as ``worst``); None when there are none.
    """
    along = {ln.column: along_x(table, ln)[0] for ln in lines}
    ref = [along[ln.column] for ln in lines if ln.key.series in reference]
    vals = np.concatenate(ref) if ref else np.array([])
    vals = vals[positive_mask(vals, logy)]
    if not vals.size:
        return None, None
    cut = robust_range(ref, logy)
    lo, hi = (cut.low, cut.high) if cut is not None else (vals.min(), vals.max())
    if logy:
        lo, hi = np.log10(lo), np.log10(hi)
    pad = 0.5 * (hi - lo) + 1e-12 * max(1.0, abs(hi), abs(lo))
    lo, hi = lo - pad, hi + pad
    if logy:
        lo, hi = 10.0 ** lo, 10.0 ** hi
    window = (float(lo), float(hi))
    v = np.concatenate(list(along.values())) if along else np.array([])
    v = v[positive_mask(v, logy)]
    up, down = v > hi, v < lo
    if not (up.any() or down.any()):
        return window, None
    worst = float(v[up].max()) if up.any() else float(v[down].min())
    return window, OffScale(window[0], window[1], int(up.sum()), int(down.sum()), worst)


def padded_range(low: float, high: float, *, logy: bool, fixed: bool
                 ) -> tuple[float, float, float]:
    """A y range in data units as the view shows it: in view coordinates, with a margin.

    A fixed range (``fixed``: a plot's reference window) is shown as it is. A range that
    leaves spikes out gets a twentieth of its span on each side: of its decades on a log
    axis (at least a tenth of a decade), on a linear one plus a twentieth of its largest
    magnitude (so that a flat range still has room).

    Parameters
    ----------
    low, high : float
        The range in data units (positive on a log axis).
    logy : bool
        Whether the y axis is logarithmic.
    fixed : bool
        Whether the range is a fixed window (no margin).

    Returns
    -------
    lo, hi, pad : float
        The range in view coordinates and the margin to add on each side.
    """
    lo, hi = low, high
    if logy:
        lo, hi = np.log10(lo), np.log10(hi)
    if fixed:
        pad = 0.0
    elif logy:
        pad = 0.05 * max(hi - lo, 0.1)
    else:
        pad = 0.05 * (hi - lo) + 0.05 * max(abs(hi), abs(lo), 1e-12)
    return lo, hi, pad


def keeps_cut(shown: tuple[float, float], lo: float, hi: float, pad: float,
              values: Sequence[np.ndarray], logy: bool) -> bool:
    """While results stream in: whether the y range on screen may stay although the range
    that leaves spikes out is now ``[lo, hi]``. A new range at every partial result
    re-laid out the axes and every curve.

    Parameters
    ----------
    shown : tuple of float
        The y range on screen, view coordinates.
    lo, hi, pad : float
        The new range and its margin, view coordinates (:func:`padded_range`).
    values : sequence of ndarray
        The lines' values, data units.
    logy : bool
        Whether the y axis is logarithmic.

    Returns
    -------
    bool
        True when the range on screen holds ``[lo, hi]``, is at most twice as tall as it
        with its margin, and shows none of the ``values`` outside ``[lo, hi]`` (those the
        off-scale note counts).
    """
    a, b = shown
    if not (a <= lo and hi <= b and (hi - lo + 2 * pad) >= 0.5 * (b - a)):
        return False
    v = np.concatenate(values) if len(values) else np.array([])
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.log10(v) if logy else v
    v = v[np.isfinite(v) & ((v > hi) | (v < lo))]
    return not ((v >= a) & (v <= b)).any()


def follow_axis(values: Sequence[np.ndarray], shown: tuple[float, float], logged: bool
                ) -> tuple[float, float] | None:
    """While results stream in: the range an autoscaled axis moves to, or None when it
    keeps the one on screen.

    The axis keeps its range as long as the points fit in it and fill at least half of
    it; otherwise it takes theirs with a tenth of their spread on each side, and, on the
    one side they left by, room for as far again as half their spread (results of a run
    move on: larger s, more samples, smaller errors), so that the axes, their ticks and
    every curve are re-laid out less often. A single value (the first point of a curve)
    gets a range around it as wide as a decade on a log axis, else as the value itself.

    Parameters
    ----------
    values : sequence of ndarray
        The points' coordinates on this axis, data units.
    shown : tuple of float
        The axis' range on screen, view coordinates.
    logged : bool
        Whether the axis is logarithmic.

    Returns
    -------
    tuple of float or None
        The new range, view coordinates; None when the range stays (or no value can be
        shown on the axis).
    """
    if not len(values):
        return None
    v = np.concatenate(values)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.log10(v) if logged else v
    v = v[np.isfinite(v)]
    if not v.size:
        return None
    lo, hi = float(v.min()), float(v.max())
    a, b = shown
    if a <= lo and hi <= b and hi - lo >= 0.5 * (b - a):
        return None
    spread = hi - lo > 1e-9 * max(1.0, abs(hi), abs(lo))
    pad = (0.1 * (hi - lo) if spread
           else 0.5 if logged else 0.5 * max(abs(hi), 1e-9))
    # the points still fill 1/1.7 of the range, over the half kept
    ahead = 0.5 * (hi - lo) if spread and (lo < a) != (hi > b) else 0.0
    lo_pad = pad + (ahead if lo < a else 0.0)
    hi_pad = pad + (ahead if hi > b else 0.0)
    return lo - lo_pad, hi + hi_pad


def within(extent: tuple[float, float], window: tuple[float, float] | None) -> bool:
    """Whether a curve's values lie within a plot's y range, so that it needs no clamping
    near the view (pyqtgraph's dynamic range limit).

    Parameters
    ----------
    extent : tuple of float
        The curve's lowest and highest drawn value; ``(inf, -inf)`` when it has none.
    window : tuple of float or None
        The plot's y range, data units; None when the range is fitted to all the data.

    Returns
    -------
    bool
        True for a curve without points, or with finite values all inside ``window``.
    """
    lo, hi = extent
    return bool(lo > hi or (np.isfinite(lo) and np.isfinite(hi)
                            and (window is None or (lo >= window[0] and hi <= window[1]))))
