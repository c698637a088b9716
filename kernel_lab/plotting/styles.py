"""How a curve looks: its role's line and markers, and one colour per group.

Curves are styled by their declared role (see :mod:`kernel_lab.experiments.plotspec`),
never by their column names: limits are thick lines, empirical means dots, estimates and
references dashed, measured curves and baselines lines with small markers, choices (a
point picked by a rule) large outlined diamonds and flags crosses.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernel_lab.experiments.plotspec import Curve, CurveLine

#: Colour-blind-safe palette (Okabe–Ito), used for curves in order.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442")
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
