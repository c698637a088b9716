"""Declarative plots: typed column keys, curve resolution and legends without Qt, and a
GUI that holds no experiment-specific words."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import kernel_lab
from kernel_lab.experiments import Curve, PlotSpec, SeriesKey, list_experiments
from kernel_lab.experiments.plotspec import ROLES, legend_entries, resolve_curves

CKRR_LIKE = PlotSpec(
    "risk", "lam",
    (Curve("R_limit", "limit", "limit", star=True),
     Curve("R_emp", "empirical", "empirical", spread="R_std"),
     Curve("R_thm2", "estimate", "Theorem 2")),
)


def _table(kernels=("linear", "exponential")):
    t = {"lam": np.logspace(-2, 2, 5)}
    for k in kernels:
        for s in ("R_limit", "R_emp", "R_std", "R_thm2"):
            t[f"{s}[{k}]"] = np.ones(5)
    return t


@pytest.mark.parametrize("column,key", [
    ("R_test_limit[linear]", SeriesKey("R_test_limit", "linear")),
    ("test_mse_krr", SeriesKey("test_mse_krr")),
    ("time[rff-gaussian]", SeriesKey("time", "rff-gaussian")),
])
def test_series_keys_read_and_write_columns(column, key):
    assert SeriesKey.parse(column) == key and key.column == column


def test_curves_resolve_in_declaration_order_with_spread_and_groups():
    lines = resolve_curves(CKRR_LIKE, _table())
    assert [ln.column for ln in lines] == [
        "R_limit[linear]", "R_limit[exponential]", "R_emp[linear]", "R_emp[exponential]",
        "R_thm2[linear]", "R_thm2[exponential]"]
    assert {ln.group for ln in lines} == {"linear", "exponential"}
    emp = [ln for ln in lines if ln.curve.role == "empirical"]
    assert [ln.spread for ln in emp] == ["R_std[linear]", "R_std[exponential]"]
    assert all(ln.spread is None for ln in lines if ln.curve.role != "empirical")
    # a series the table lacks (no limit on real data) is skipped
    table = {k: v for k, v in _table().items() if not k.startswith("R_limit")}
    assert all(ln.curve.role != "limit" for ln in resolve_curves(CKRR_LIKE, table))


def test_x_of_each_group_and_missing_x_skips_the_curve():
    spec = PlotSpec("t", "time[*]", (Curve("error"),))
    table = {"error[a]": np.ones(3), "time[a]": np.arange(3.0), "error[b]": np.ones(3)}
    lines = resolve_curves(spec, table)
    assert [(ln.column, ln.x) for ln in lines] == [("error[a]", "time[a]")]


def test_legend_has_one_entry_per_group_then_per_kind():
    entries = legend_entries(CKRR_LIKE, resolve_curves(CKRR_LIKE, _table(
        ("linear", "polynomial", "sigmoid", "exponential"))))
    assert [e.text for e in entries] == ["linear", "polynomial", "sigmoid", "exponential",
                                         "limit", "empirical", "Theorem 2"]
    single = PlotSpec("e", "x", (Curve("a", label="first"), Curve("b", "baseline")))
    entries = legend_entries(single, resolve_curves(single, {"x": [1], "a": [1], "b": [2]}))
    assert [(e.text, e.column) for e in entries] == [("first", "a"), ("b", "b")]


def test_declarations_are_checked():
    with pytest.raises(ValueError, match="role"):
        Curve("x", "dotted")
    with pytest.raises(ValueError, match="no curve"):
        PlotSpec("t", "x", ())


def test_every_experiment_declares_roles_and_labels():
    for exp in list_experiments():
        for plot in exp.plots:
            for curve in plot.curves:
                assert curve.role in ROLES and curve.text, (exp.name, plot.title)
            assert plot.to_dict()["curves"], exp.name


def test_the_gui_holds_no_experiment_words():
    """Experiment names and result series live in the experiments' declarations only."""
    names, series = set(), set()
    for exp in list_experiments():
        names.add(exp.name)
        for plot in exp.plots:
            series |= {c.series for c in plot.curves} | {c.spread for c in plot.curves}
    # series that are plain English words ("error", "spectrum") may appear as words
    words = names | {s for s in series if "_" in s}
    words |= {"thm2", "lemma1", "_emp", "_limit", "_krr", "_ckrr", "_rff", "_dsg", "_gfc"}
    gui = Path(kernel_lab.__file__).parent / "gui"
    found = [(path.name, w) for path in gui.glob("*.py") for w in sorted(words)
             if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])" if w[0] != "_"
                          else re.escape(w), path.read_text(encoding="utf-8"))]
    assert not found


def test_robust_range_leaves_out_isolated_spikes_only():
    from kernel_lab.experiments.plotspec import robust_range

    lam = np.logspace(-2, 2, 40)
    calm = [3000 + 50 * np.log(lam) ** 2, 3100 + 40 * np.log(lam) ** 2]
    spiky = np.where(lam < 3, 10.0 ** np.linspace(9, 4, 40), 3200 + 60 * np.log(lam) ** 2)
    cut = robust_range([*calm, spiky])
    above = int((spiky > 10 * np.percentile(np.concatenate([*calm, spiky]), 75)).sum())
    assert cut is not None and cut.above == above and cut.below == 0
    assert cut.worst == spiky.max() and cut.high < 1e5
    assert cut.low == pytest.approx(min(c.min() for c in calm), rel=1e-12)
    assert cut.text.startswith(f"▲ {above} points above the scale (up to 1e+09)")
    # without the spikes, nothing is left out
    assert robust_range(calm) is None
    # a learning curve falling over decades is not a spike, on linear or log axes
    decay = 1.0 / np.arange(1, 30) ** 1.5
    assert robust_range([decay]) is None and robust_range([decay], logy=True) is None
    # too few points, or values of both signs without spread: nothing to judge
    assert robust_range([np.array([1.0, 1e9])]) is None
    assert robust_range([np.zeros(20)]) is None
    # on log axes a dip far below is left out too
    dip = np.concatenate([np.full(30, 1.0), [1e-9]])
    low = robust_range([dip], logy=True)
    assert low is not None and low.below == 1 and low.above == 0 and low.low == 1.0


def _flat(level: float, n: int = 16, seed: int = 0) -> np.ndarray:
    return level * (1.0 + 0.05 * np.random.default_rng(seed).standard_normal(n))


@pytest.mark.parametrize("logy", [False, True])
def test_a_steadily_falling_curve_is_never_off_the_scale(logy):
    """The start of a learning curve, far above the flat curves beside it, is the curve
    (penguins: 8 of 16 DSG points were "above the scale")."""
    from kernel_lab.experiments.plotspec import robust_range

    flat = [_flat(0.012, seed=1), _flat(0.02, seed=2), _flat(0.015, seed=3)]
    falling = np.geomspace(0.6, 0.05, 16)
    assert robust_range([*flat, falling], logy) is None
    # a plateau, then a drop by less than a decade per step (the penguins run itself)
    dsg = np.array([0.291, 0.256, *[0.2326] * 6, 0.0349, 0.0233, 0.0349, 0.0116, 0.0116,
                    0.0116, 0.0116, 0.0116])
    assert robust_range([*flat, dsg], logy) is None
    # and rising steadily (overfitting at one end of a λ path) is the curve too
    assert robust_range([*flat, falling[::-1]], logy) is None


@pytest.mark.parametrize("logy", [False, True])
def test_isolated_explosions_are_still_off_the_scale(logy):
    from kernel_lab.experiments.plotspec import robust_range

    flat = _flat(1.0, 40, seed=4)
    spiky = _flat(1.2, 40, seed=5)
    spiky[10] = 1e6          # one point
    spiky[25:27] = [1e5, 3e5]  # two neighbours
    falling = np.geomspace(30.0, 1.0, 40)  # steady: stays in view
    cut = robust_range([flat, spiky, falling], logy)
    assert cut is not None and (cut.above, cut.below) == (3, 0) and cut.worst == 1e6
    assert cut.high == pytest.approx(30.0) and cut.low == pytest.approx(
        min(flat.min(), spiky.min()))
    # on a linear axis an erratic explosion (an indefinite kernel's risk below some λ)
    # goes as a whole, also where single points of it are only a few times the others
    lam = np.logspace(-2, 2, 40)
    calm = [3000 + 50 * np.log(lam) ** 2, 3200 + 30 * np.log(lam) ** 2, 2900 + 0 * lam]
    erratic = np.where(lam < 1.5, 10.0 ** np.random.default_rng(6).uniform(4.2, 8.7, 40),
                       3100 + 40 * np.log(lam) ** 2)
    erratic[np.flatnonzero(lam < 1.5)[-1]] = 1.7e4  # just before the calm part: 5× higher
    cut = robust_range([*calm, erratic])
    assert cut is not None and cut.above == int((lam < 1.5).sum())
    assert cut.high == pytest.approx(max(c.max() for c in calm))


def test_flagged_points_do_not_set_the_range():
    """Points flagged as not to be trusted (K + λI near singular) are off the scale when
    beyond the range the others set, however steadily their line walks there."""
    from kernel_lab.experiments.plotspec import robust_range

    lam = np.logspace(-2, 2, 40)
    calm = [3000 + 50 * np.log(lam) ** 2, 3100 + 10 * np.log(lam) ** 2]
    rising = np.where(lam < 1, 3000 + 2e4 * (1 - lam), 3200.0)  # up to ~2.3e4, steadily
    assert robust_range([*calm, rising]) is None  # unflagged: part of the curve
    flagged = lam < 1
    cut = robust_range([*calm, rising], untrusted=[lam < 0, lam < 0, flagged])
    beyond = rising[flagged] > max(c.max() for c in calm)
    assert cut is not None and cut.above == int(beyond.sum()) and cut.below == 0
    assert cut.high == pytest.approx(max(c.max() for c in calm))
    assert cut.worst == pytest.approx(rising.max())


def test_off_scale_text_says_what_is_left_out():
    from kernel_lab.experiments.plotspec import OffScale

    assert OffScale(0.0, 1.0, 21, 0, 5.43e8).text == \
        "▲ 21 points above the scale (up to 5.43e+08)"
    assert OffScale(0.0, 1.0, 2, 3, 9.0).text == \
        "▲ 2 points above the scale (up to 9), ▼ 3 below it"
    # only below (a Lemma 1 estimate diving at small λ): said in full
    assert OffScale(0.0, 1.0, 0, 40, -2.5).text == \
        "▼ 40 points below the scale (down to -2.5)"
    assert OffScale(0.0, 1.0, 0, 1, -2.5).text == "▼ 1 point below the scale (down to -2.5)"


def test_a_spike_within_the_range_of_a_rising_curve_is_not_off_the_scale():
    """The range keeps a steadily rising curve whole; an isolated spike lower than that
    curve's top is drawn, so the note must not count it as off the scale."""
    from kernel_lab.experiments.plotspec import robust_range

    rising = np.geomspace(1.0, 729.0, 12)
    spiky = np.ones(12)
    spiky[5] = 500.0
    flat = np.full(12, 1.2)
    assert robust_range([rising, spiky, flat]) is None  # drawn: nothing off the scale
    spiky[5] = 1e6  # above the rising curve's top: off the scale
    cut = robust_range([rising, spiky, flat])
    assert cut is not None and cut.above == 1 and cut.high == pytest.approx(729.0)
