"""PlotView: styles come from the declared roles; a first draw can be spread over calls."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

import pyqtgraph as pg

from kernel_lab.experiments import Curve, PlotSpec
from kernel_lab.plotting.view import PlotView

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
        view.update(t, budget_s=0.0)  # one new item per call
        calls += 1
        if view.complete:
            break
    assert calls == 6 and len(view.columns()) == 6
    legend = [label.text for _, label in view.legend.items]
    assert legend == ["linear", "exponential", "limit", "empirical", "estimate"]
    ys = view.curves["R_est[exponential]"].getData()[1]
    np.testing.assert_allclose(ys, t["R_est[exponential]"])
