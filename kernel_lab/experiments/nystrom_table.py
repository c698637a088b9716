"""The result table and summaries of the ``nystrom`` experiment: the protocol (light or the
paper's) and what it says, the table's columns before any cell ran (:func:`empty_table`),
a row filled from its cells' results (:func:`fill_row`), and Algorithm 2's summaries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kernel_lab.core.kernels import Kernel
from kernel_lab.experiments.nystrom_cells import FIXED_LAMBDA, CellTask

#: The paper's protocol (Musco & Musco, Section 5): the spectral error on at most 20 000
#: points, the mean of 10 trials, the downstream ridge λ by cross-validation.
PAPER_EVAL_POINTS = 20_000
PAPER_TRIALS = 10
#: The downstream λ of the paper protocol, in words (``ridge_loo``'s grid, no refinement).
CV_TEXT = ("λ by leave-one-out cross-validation (n folds of one point, exact) over 61 values "
           "log-spaced from 1e-10 to 10 × the largest eigenvalue of the centred K̃")

#: The exact-KRR line is drawn up to this many training points (light protocol), and up to
#: EXACT_CV_MAX_N under the paper protocol, whose cross-validation needs an SVD of an n × n
#: factor of K.
EXACT_MAX_N = 5000
EXACT_CV_MAX_N = 2000

#: The downstream test RMSE is measured on at most this many test points (a seeded subset).
TEST_MAX = 20_000

#: Per-cell results aggregated into table columns ``{key}_{statistic}[sampler]``.
CELL_KEYS = ("spectral", "trace", "time", "evals", "rmse")

#: A cell's results by (table row, sampler): one dict per trial.
Results = dict[tuple[int, str], list[dict[str, Any]]]


def protocol_settings(params: Mapping[str, Any], n: int
                      ) -> tuple[bool, int, str, float | None, int]:
    """Of the protocol: whether it is the paper's, the trials, the statistic over them,
    the downstream λ (None: by leave-one-out) and the number of evaluation points."""
    paper = params["protocol"] == "paper"
    trials = PAPER_TRIALS if paper else params["trials"]
    m = min(n, PAPER_EVAL_POINTS if paper else params["eval_points"])
    return (paper, trials, "mean" if paper else "median", None if paper else params["lam"],
            m)


def protocol_summaries(params: Mapping[str, Any], kernel: Kernel, n: int, m: int,
                       where: str) -> dict[str, Any]:
    """The summaries every run starts with (kernel, sizes, the protocol in words)."""
    paper, trials, stat, _, _ = protocol_settings(params, n)
    return {"kernel": kernel.spec(), "n": n, "eval_points": m, "protocol": params["protocol"],
            "trials": trials, "statistic": stat,
            "protocol_note": (
                f"{params['protocol']} protocol: ‖K − K̃‖₂ on {where}, {stat} of {trials} "
                f"trial{'s' if trials > 1 else ''}, downstream "
                + (CV_TEXT + ", chosen per trial and sampler" if paper
                   else f"λ = {params['lam']:g} (fixed)"))}


def empty_table(samplers: list[str], sizes: np.ndarray, lams: np.ndarray, stat: str,
                paper: bool) -> dict[str, np.ndarray]:
    """The result table before any cell ran: NaN per sampler and size (or λ)."""
    table: dict[str, np.ndarray] = {"s": sizes.astype(float)}
    for name in samplers:
        rows = lams.size if name == FIXED_LAMBDA else sizes.size
        for key in (*(f"{k}_{stat}" for k in CELL_KEYS), "spectral_q25", "spectral_q75",
                    "s", "time", *(("ridge_lam_median",) if paper else ())):
            table[f"{key}[{name}]"] = np.full(rows, np.nan)
        if name != FIXED_LAMBDA:
            table[f"s[{name}]"] = sizes.astype(float)
    return table


def fill_row(table: dict[str, np.ndarray], results: Results, i: int, name: str, stat: str,
             paper: bool) -> None:
    """Row ``i`` of sampler ``name``'s columns from the results of its cells so far: the
    statistic ``stat`` (median or mean) of every :data:`CELL_KEYS` measure and of the
    landmarks used, the spectral error's quartiles, and under the ``paper`` protocol the
    median downstream λ."""
    cell = results[(i, name)]
    average = np.mean if stat == "mean" else np.median
    spectral = np.array([r["spectral"] for r in cell])
    table[f"spectral_q25[{name}]"][i] = np.quantile(spectral, 0.25)
    table[f"spectral_q75[{name}]"][i] = np.quantile(spectral, 0.75)
    for key in CELL_KEYS:
        table[f"{key}_{stat}[{name}]"][i] = average([r[key] for r in cell])
    table[f"time[{name}]"][i] = table[f"time_{stat}[{name}]"][i]
    table[f"s[{name}]"][i] = average([r["landmarks"] for r in cell])
    if paper:
        table[f"ridge_lam_median[{name}]"][i] = np.median([r["ridge_lam"] for r in cell])


def row_of(task: CellTask, sizes: np.ndarray, lams: np.ndarray) -> int:
    """The table row of a cell: its s among the sizes, or its λ among Algorithm 2's."""
    if task.sampler == FIXED_LAMBDA:
        return int(np.flatnonzero(lams == task.rls_lam)[0])
    return int(np.flatnonzero(sizes == task.s)[0])


def fixed_lambda_summaries(table: dict[str, np.ndarray], results: Results,
                           lams: np.ndarray) -> dict[str, Any]:
    """Algorithm 2's realised sizes per λ and how often ‖K − K̃‖₂ ≤ λ held on the
    evaluation rows (a principal submatrix: its norm is at most the full one's)."""
    out: dict[str, Any] = {}
    held = total = 0
    for j, lam_j in enumerate(lams):
        cell = results.get((j, FIXED_LAMBDA), [])
        if cell:
            out[f"landmarks[λ={lam_j:g}]"] = float(table[f"s[{FIXED_LAMBDA}]"][j])
            held += sum(r["spectral"] <= lam_j for r in cell)
            total += len(cell)
    out[f"bound_held[{FIXED_LAMBDA}]"] = held / total
    return out
