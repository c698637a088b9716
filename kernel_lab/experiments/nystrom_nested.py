"""Nested trials of the ``nystrom`` experiment: every landmark count s of one trial of
uniform sampling or random Fourier features from one draw of the largest.

The first s of the uniform landmarks in the order of their keys are the uniform draw of s
with the same seed (the s smallest keys); the first s of D random features (orthogonal
ones: whole blocks of p, then the first columns of the next) are a draw of s, scaled by
``√(D/s)``. So one trial draws the largest s once and one map-reduce over the canonical
row blocks serves every size: per block the kernel columns (features) of the largest
draw and their centred sums, whose leading s × s part is the sums of the prefix
(:meth:`~kernel_lab.core.ridge.sums.CentredSums.leading`), mapped by the prefix's
``W^{-1/2}`` — or, where that map is ill conditioned, the prefix's features summed
themselves in the same pass. The sums are per canonical block in the one fixed tree, so
the same rows in any parts give the same bits. With sizes 10, 20, …, 160 that is the
work of the largest alone, about half that of five separate cells.

Time at s: the draw, the factorisation at s and the pass's share ``s² / s_max²`` of its
measured time (the Gram products' share of multiply-adds), plus the measures at s. The
samples of one trial are therefore not independent across sizes (the trials are); the
samplers whose draws do not nest keep one cell per size
(:func:`~kernel_lab.experiments.nystrom_cells.run_cell`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from kernel_lab.core.models.nystrom import nystrom_factor
from kernel_lab.core.nystrom.landmarks import UNIFORM, Landmarks, row_seed, uniform_landmarks
from kernel_lab.core.progress import Progress
from kernel_lab.core.ridge.fit import (
    RANDOM_FEATURES,
    SUM_ENTRIES,
    NystromMap,
    RandomMap,
    RidgeFit,
    make_features,
    spectral_error,
    test_rmse,
)
from kernel_lab.core.ridge.sums import CentredSums, LooGrid, columns_well_conditioned
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.mapreduce import PartMap, RowPlan, Rows, reduce_blocks
from kernel_lab.experiments.nystrom_cells import (
    EXACT_MAX,
    CellInputs,
    CellTask,
    clock,
    run_cell,
    trace_error,
)

#: The samplers whose trials are nested (one draw and one pass for all sizes).
NESTED_TRIALS = ("uniform", *RANDOM_FEATURES)


@dataclass(frozen=True)
class NestedTask:
    """One trial of a nesting sampler at every size (increasing), its seed and inputs."""

    sampler: str
    sizes: tuple[int, ...]
    seed: np.random.SeedSequence
    inputs: CellInputs = field(repr=False)


@dataclass(frozen=True)
class PrefixSums:
    """What a block's pass sums: the features of the largest draw (for landmarks their
    kernel columns) and, for the sizes whose map is ill conditioned, their own features
    (``maps``)."""

    largest: NystromMap | RandomMap
    maps: tuple[NystromMap | RandomMap, ...]


def _add(a: list[CentredSums], b: list[CentredSums]) -> list[CentredSums]:
    return [x + y for x, y in zip(a, b, strict=True)]


def _sums(rows: Rows, what: PrefixSums) -> list[CentredSums]:
    out = []
    for features in (what.largest, *what.maps):
        step = max(1, SUM_ENTRIES // max(features.width, 1))
        total = CentredSums.of(np.zeros((0, features.width)), np.zeros(0))
        for start in range(0, rows.index.size, step):
            sums = CentredSums.of(features.block(rows.X[start:start + step]),
                                  rows.y[start:start + step], overwrite=True)
            total = sums if total.n == 0 else total.absorb(sums)
        out.append(total)
    return out


def _loo(rows: Rows, maps: tuple[Any, ...], grids: tuple[LooGrid, ...]) -> list[np.ndarray]:
    out = []
    for features, grid in zip(maps, grids, strict=True):
        sse = np.zeros(grid.nus.size)
        step = max(1, SUM_ENTRIES // max(features.width, 1))
        for start in range(0, rows.index.size, step):
            sse += grid.sse(features.transform(rows.X[start:start + step]),
                            rows.y[start:start + step])
        out.append(sse)
    return out


def _sum_arrays(a: list[np.ndarray], b: list[np.ndarray]) -> list[np.ndarray]:
    return [x + y for x, y in zip(a, b, strict=True)]


def _prefixes(task: NestedTask) -> tuple[Any, list[Any]]:
    """The largest draw's feature map and the map of every size (prefixes)."""
    inputs, data = task.inputs, task.inputs.data
    s_max = task.sizes[-1]
    if task.sampler in RANDOM_FEATURES:
        largest = make_features(task.sampler, data.parts, data.plan, inputs.kernel, s_max,
                                task.seed)
        rff = largest.features
        maps = []
        for s in task.sizes:
            part = type(rff)(**rff.get_params()).set_params(n_components=s)
            part.kernel_, part.weights_ = rff.kernel_, rff.weights_[:, :s]
            part.offsets_ = rff.offsets_[:s]
            part.n_features_in_ = rff.n_features_in_
            maps.append(RandomMap(part))
        return largest, maps
    marks = uniform_landmarks(data.parts, data.plan, s_max, task.seed)
    key = rowkeys.keys(row_seed(task.seed), rowkeys.LANDMARKS + UNIFORM, marks.index)
    order = np.lexsort((marks.index, key))  # the order of the keys: prefixes are draws
    X = marks.X[order]
    K = inputs.kernel(X)
    maps = []
    for s in task.sizes:
        N = nystrom_factor(K[:s, :s])
        sample = Landmarks(np.sort(marks.index[order[:s]]), X[:s], 0)
        maps.append(NystromMap(inputs.kernel, X[:s], N, columns_well_conditioned(N), sample))
    return NystromMap(inputs.kernel, X, np.eye(s_max), True), maps


def run_nested(task: NestedTask) -> list[dict[str, Any]]:
    """The measures of every size of one nested trial, as
    :func:`~kernel_lab.experiments.nystrom_cells.run_cell` gives them for one cell."""
    inputs, data = task.inputs, task.inputs.data
    s_max = task.sizes[-1]
    t0 = clock()
    largest, maps = _prefixes(task)
    t_draw = clock() - t0
    alone = tuple(m for m in maps if isinstance(m, NystromMap) and not m.columns)
    sums = reduce_blocks(data.parts, _sums, data.plan, PrefixSums(largest, alone),
                         combine=_add)
    t_pass = clock() - t0 - t_draw
    own = dict(zip((id(m) for m in alone), sums[1:], strict=True))
    fitted = []
    for s, features in zip(task.sizes, maps, strict=True):
        if id(features) in own:
            fitted.append(own[id(features)])
        elif isinstance(features, NystromMap):
            fitted.append(sums[0].leading(s).mapped(features.normalization))
        else:
            fitted.append(sums[0].leading(s).mapped(np.eye(s) * math.sqrt(s_max / s)))
    if inputs.lam is None:
        grids = tuple(LooGrid.of(f) for f in fitted)
        sse = reduce_blocks(data.parts, _loo, data.plan, tuple(maps), grids,
                            combine=_sum_arrays)
        solved = [grid.solve(e) for grid, e in zip(grids, sse, strict=True)]
    else:
        solved = [(*f.solve(inputs.lam), float(inputs.lam)) for f in fitted]
    t_loo = clock() - t0 - t_draw - t_pass
    out = []
    for s, features, f, (coef, intercept, lam) in zip(task.sizes, maps, fitted, solved,
                                                      strict=True):
        t1 = clock()
        fit = RidgeFit(coef, intercept, lam, f.squared_norm, f)
        share = (s / s_max) ** 2
        res = {"spectral": spectral_error(inputs.K_eval, features, inputs.X_eval,
                                          exact_max=EXACT_MAX),
               "trace": trace_error(inputs.diag, fit.squared_norm),
               "squared_norm": fit.squared_norm,
               "evals": 0 if features.sample is None else s * s,
               "rmse": test_rmse(fit, features, inputs.X_test, inputs.y_test),
               "landmarks": s, "ridge_lam": fit.lam, "scores": None, "marks": None}
        res["time"] = t_draw + share * (t_pass + t_loo) + clock() - t1
        out.append(res)
    return out


def run_task(task: CellTask | NestedTask, progress: Progress | None = None
             ) -> list[dict[str, Any]]:
    """A cell's result, or a nested trial's (one per size)."""
    if isinstance(task, NestedTask):
        return run_nested(task)
    return [run_cell(task, progress)]


@dataclass(frozen=True)
class LaneData:
    """What a cell reads of its data set (``parts``, ``plan``), with a lane's parts."""

    parts: Any
    plan: RowPlan


def cell_job(task: CellTask | NestedTask, parts: PartMap, progress: Progress
             ) -> list[dict[str, Any]]:
    """A task (:func:`~kernel_lab.experiments.nystrom_nested.run_task`) on a lane's parts."""
    inputs = replace(task.inputs, data=LaneData(parts, task.inputs.data.plan))
    return run_task(replace(task, inputs=inputs), progress)
