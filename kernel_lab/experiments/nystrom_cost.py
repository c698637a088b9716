"""The cost model of the ``nystrom`` experiment: the multiply-adds and memory a run will
take (:func:`estimate`, the plan line before Run) and the operations of each cell
(:func:`cell_cost`, :func:`task_cost`), by which the progress bar moves."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from kernel_lab.core.kernels import KERNELS
from kernel_lab.core.nystrom.common import BLOCK_ENTRIES, RPC_STORED_MAX
from kernel_lab.experiments.nystrom_cells import FIXED_LAMBDA, RANDOM_FEATURES
from kernel_lab.experiments.nystrom_nested import NESTED_TRIALS
from kernel_lab.experiments.nystrom_table import (
    EXACT_CV_MAX_N,
    EXACT_MAX_N,
    PAPER_EVAL_POINTS,
    PAPER_TRIALS,
    TEST_MAX,
)

#: What a cell costs whatever its size (Python, small factorisations, the measures' set-up),
#: in the operations the estimate counts: about 5 ms measured per cell (n = 150, s = 10,
#: 5–25 cells; machine probe eigh 1000² in 100 ms), at the 9 GFLOPS an uncalibrated plan
#: assumes there. Small runs are mostly this (75 cells at the defaults), so without it a
#: plan calibrated on one small run over-estimated a larger one up to 3×.
CELL_OVERHEAD = 4.5e7

#: Operations the estimate counts per multiply-add of a large matrix product (Grams,
#: triangular products): those run near the probe's peak, several times the rate the
#: estimate's operations are counted at (16 % of it). Measured on 750,000 rows: 0.24 for
#: the features' Gram of 160 columns, 0.41 for Lemma 6's triangular products.
PRODUCT = 0.35

#: Algorithm 2's landmarks per ``sqrt(n / λ)`` in :func:`fixed_lambda_size`.
FIXED_LAMBDA_SIZE = 12.0


def fixed_lambda_size(n: int, lam: float) -> int:
    """A rough estimate, known before any kernel entry, of the landmarks Algorithm 2 draws
    at λ on n rows: about d_eff(λ) times its oversampling, which depend on the data's
    spectrum. Taken as ``12 · sqrt(n / λ)`` (at most n): the one measured calibration
    point, 269,000 training rows of a real table at λ = 10, drew about 1,950 landmarks
    (this gives 1,970); the estimate can be several times off on other data (tight
    clusters have a far smaller d_eff), which the plan's range allows for."""
    return int(min(n, math.ceil(FIXED_LAMBDA_SIZE * math.sqrt(n / max(lam, 1e-300)))))


def _fixed_lams(params: Mapping[str, Any]) -> list[float]:
    try:
        return [float(v) for v in str(params.get("rls_lams", "1")).replace(";", ",")
                .split(",") if v.strip()] or [1.0]
    except ValueError:
        return [1.0]


def estimate(params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
    """The plan of a run on n training rows of p features
    (:meth:`~kernel_lab.experiments.base.Experiment.estimate`): its memory in bytes, its
    operations and a note on how it is made."""
    paper = params.get("protocol", "light") == "paper"
    m = min(n, PAPER_EVAL_POINTS if paper else params.get("eval_points", 2000))
    samplers = list(params.get("samplers", [])) or ["uniform"]
    try:
        sizes = [min(int(float(v)), n) for v in str(params.get("sizes", "100")).split(",")
                 if v.strip()]
    except ValueError:
        sizes = [100]
    sizes = sizes or [100]
    trials = PAPER_TRIALS if paper else int(params.get("trials", 3))
    n_test = min(max(n // 3, 1), TEST_MAX)  # a quarter of the rows, capped
    exact_ref = n <= (EXACT_CV_MAX_N if paper else EXACT_MAX_N)
    # multiply-adds: a kernel entry ≈ p + 15 (distance and exponential), a cosine
    # feature p + 30; per cell the sampler, one pass over the n rows (the entries and
    # their s × s Gram, twice under the paper protocol), the m-point error (~25
    # products with the m × m matrix) and the test points
    entry, cosine = p + 15.0, p + 30.0
    # recursive RLS scores from coarse entries (float32 exponentials) where their
    # kernel has them: a block of them took 0.45 of the time of float64 ones (p = 10)
    kind = KERNELS.get(str(params.get("kernel", "gaussian")))
    scored = 0.45 * entry if kind is not None and kind.coarse_error else entry
    mul = PRODUCT  # per multiply-add of a large product
    passes = 2.0 if paper else 1.0
    flops = 0.0
    for name in samplers:
        # Algorithm 2 at λ draws about fixed_lambda_size(n, λ) landmarks (an estimate)
        cell_sizes = ([fixed_lambda_size(n, lam) for lam in _fixed_lams(params)]
                      if name == FIXED_LAMBDA else sizes)
        for s in cell_sizes:
            measures = (m * s * (entry + mul * s) + 25.0 * m * m + n_test * s * entry
                        + mul * s**3 + CELL_OVERHEAD)
            if name in NESTED_TRIALS and len(sizes) > 1 and s != max(sizes):
                # one draw and pass serve every size; leave-one-out per size
                flops += trials * (measures + (passes - 1.0) * n * s * (entry + mul * s))
                continue
            if name in RANDOM_FEATURES:
                sampling, per_entry = 0.0, cosine
            elif name == "uniform":
                sampling, per_entry = 0.0, entry
            elif name in ("recursive-rls", FIXED_LAMBDA):
                # about 1.5 n s entries over the levels, and their Lemma 6 products
                sampling, per_entry = 1.5 * n * s * scored + mul * n * s * s, entry
            elif name == "recursive-rls-fast":
                s_rec = math.sqrt((n * s + s**3) / (4.0 * n))
                sampling, per_entry = (6.0 * n * s_rec * (scored + mul * s_rec) + 30.0 * n,
                                       entry)
            elif name == "rp-cholesky":
                stored = n * s <= RPC_STORED_MAX
                sampling = (n * s * (entry + mul * s / 2.0) if stored
                            else 0.3 * n * s * (entry + mul * 0.3 * s) + 10.0 * n)
                per_entry = entry
            else:  # exact-rls
                sampling, per_entry = 9.0 * n**3 + n * n * entry, entry
            flops += trials * (sampling + passes * n * s * (per_entry + mul * s)
                               + measures)
    flops += m * m * entry + (9.0 * n**3 / 4 if exact_ref else 0.0)
    # memory: the split data (train, test and the table they came from), the m × m
    # evaluation kernel, and per cell running at once (one per core) its n-long vectors
    # (permutation, scores, residual diagonal, …), a few blocks of the features and
    # the m × s features of the evaluation rows; exact references are n × n
    s_max = max(sizes + ([fixed_lambda_size(n, min(_fixed_lams(params)))]
                         if FIXED_LAMBDA in samplers else []))
    workers = max(1, min(os.cpu_count() or 1, trials * len(samplers) * len(sizes)))
    cell = 8.0 * (8 * n + 4 * BLOCK_ENTRIES + m * s_max + n_test)
    memory = (8.0 * 2 * (n + n // 3) * (p + 1) + 8.0 * m * m + workers * cell
              + (8.0 * 4 * n * n if exact_ref else 0.0)
              + (8.0 * 3 * n * n if "exact-rls" in samplers else 0.0))
    note = f"spectral error on {m} of {n} points"
    if n > BLOCK_ENTRIES // s_max:
        note += "; features summed over row blocks"
    if FIXED_LAMBDA in samplers:
        note += "; Algorithm 2's landmarks estimated at 12·√(n/λ)"
    if n // 3 > TEST_MAX:
        note += f"; test RMSE on {TEST_MAX} test points"
    return {"memory_bytes": memory, "flops": flops, "note": note}


def task_cost(task: Any, n: int, p: int, m: int) -> float:
    """:func:`cell_cost` of a cell, or of a nested trial (``task.sizes``): one pass at its
    largest s and the measures at every s."""
    sizes = getattr(task, "sizes", None)
    if not sizes:
        return cell_cost(task.s, n, p, m, task.rls_lam)
    *smaller, largest = sizes
    return cell_cost(largest, n, p, m) + sum(2.0 * m * m * s + 60.0 * m * m + s**3
                                              + CELL_OVERHEAD for s in smaller)


def cell_cost(s: int | None, n: int, p: int, m: int, lam: float | None = None) -> float:
    """Multiply-adds of one cell, as :func:`estimate` counts them: the sampler and the sums
    over the rows (n s², n s kernel entries at about 200 each), the spectral error on the
    m evaluation points and the s × s solves. Algorithm 2's cells (``s=None``, at
    ``lam``) count the landmarks :func:`fixed_lambda_size` estimates."""
    s = fixed_lambda_size(n, 1.0 if lam is None else lam) if s is None else int(s)
    return (4.0 * n * s * s + 2.0 * n * s * (p + 200) + 2.0 * m * m * s + 60.0 * m * m + s**3
            + CELL_OVERHEAD)
