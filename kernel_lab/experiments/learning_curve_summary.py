"""The summaries of the ``learning-curve`` experiment once its curve is complete: the final
values and the log–log slopes over the last two decades of iterations, each beside the rate
of Dai et al. (2014) it is to be compared with."""

from __future__ import annotations

from typing import Any

import numpy as np

#: What each reported slope is compared with (Dai et al. 2014: the iterate converges to
#: the optimum at O(1/t), the generalisation error at O(1/√t); both are upper bounds,
#: reached asymptotically, for losses whose derivative is Lipschitz).
RATES = ("asymptotic upper bounds — floor_distance_slope: −1 (E|f_t(x) − f*(x)|² = O(1/t)); "
         "excess_objective_slope: −1 (J(h_t) − J* is at most a multiple of ‖h_t − f*‖², "
         "O(1/t); one run's slope scatters more than the distance's: −0.82 to −1.27 over "
         "five seeds after 3,000 iterations on Friedman data with t0 = 20, where the "
         "distance's was −1.03 to −1.13); excess_test_error_slope: −½ (the test error above "
         "the floor's is O(1/√t); it may fall faster, and cross the floor; while t < t0 its "
         "slope changes from decade to decade: with the defaults −0.75 to −0.81 over "
         "iterations 10–100 and −0.31 to −0.52 over 100–1000, five seeds)")
RATES_HINGE = ("the hinge loss has a derivative that jumps, outside Dai et al.'s assumptions "
               "(a Lipschitz derivative): no O(1/t) rate is promised for it; for smooth "
               "losses the slopes are compared with: " + RATES)


def measured_slope(x: np.ndarray, y: np.ndarray, what: str
                   ) -> tuple[float | None, str | None]:
    """Least-squares slope of log y against log x, or None and the reason: fewer than three
    points, or a value that is not positive (no logarithm; dropping it would bias the
    slope)."""
    if x.size < 3:
        return None, f"{x.size} curve point{'s' if x.size != 1 else ''} (3 needed)"
    bad = ~(np.isfinite(y) & (y > 0))
    if bad.any():
        return None, (f"{what} is not positive at {int(bad.sum())} of the {y.size} points "
                      "(no logarithm)")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0]), None


def summarise(table: dict[str, np.ndarray], summaries: dict[str, Any]) -> None:
    """Final values and the log–log slopes over the last two decades of iterations,
    each with the rate it is to be compared with (:data:`RATES`); a slope that
    cannot be measured is left out and ``<name>_note`` says why."""
    it = table["iteration"]
    window = it >= it[-1] / 100.0  # two decades, as the paper's rates are asymptotic
    span = f"iterations {int(it[window][0])}–{int(it[-1])}"
    loss = summaries["loss"]

    def slope(name: str, values: np.ndarray, what: str) -> None:
        value, reason = measured_slope(it[window], values[window], what)
        if value is None:
            summaries[f"{name}_note"] = f"{name} not measured over {span}: {reason}"
        else:
            summaries[name] = value

    dist = table["dsg_floor_distance"]
    if np.isfinite(dist).any():
        slope("floor_distance_slope", dist, "the distance to the floor")
        table["rate_guide"] = dist[-1] * it[-1] / it
    twin = table["dsg_twin_excess_objective"]
    if np.isfinite(twin).any():
        slope("excess_objective_slope", twin, "the twin's excess objective")
        summaries["dsg_twin_excess_objective"] = float(twin[-1])
    err = table["dsg_test_error"]
    summaries["dsg_test_error"] = float(err[-1])
    if "krr_test_error" in summaries:
        if summaries["task"] == "regression":
            slope("excess_test_error_slope", err - summaries["krr_test_error"],
                  "the test error above the floor's")
        else:
            summaries["excess_test_error_slope_note"] = (
                "no slope for the misclassification rate above the floor's: Dai et "
                "al.'s generalisation bound is for the loss, not for the error rate, "
                "which moves in steps of one test point")
    if np.isfinite(dist).any() or np.isfinite(twin).any():
        summaries["rates"] = RATES if loss != "hinge" else RATES_HINGE
        t0 = summaries["t0"]
        if it[-1] < 10.0 * t0:
            summaries["rates_note"] = (
                f"the last iteration ({int(it[-1])}) is below 10 × t0 (t0 = {t0:g}): "
                "the steps θ/(t + t0) have barely started to fall, so the slopes are "
                "still flatter than the asymptotic rates; run more iterations or take "
                "a larger ν (by default t0 = θ = 1/ν)")
    rff = table["rff_test_error"]
    if np.isfinite(rff).any():
        k = int(np.flatnonzero(np.isfinite(rff))[-1])
        summaries["rff_test_error_at_max_features"] = float(rff[k])
        summaries["dsg_test_error_at_same_features"] = float(err[k])
