"""The cells of the ``nystrom`` experiment: one (sampler, s, trial) — or (Algorithm 2, λ,
trial) — draw of landmarks or random features, the ridge on the features of every
training row and the errors measured on them (:func:`run_cell`), on any data set (its
``parts`` and ``plan``).

A cell's landmarks come from :func:`~kernel_lab.core.parts.landmarks.choose_landmarks`
(keyed draws), its sums from one map-reduce over the canonical row blocks
(:func:`~kernel_lab.core.parts.ridge.fit_ridge`; a second one for λ by leave-one-out under
the paper protocol): the same bits however the rows are stored. Each cell has its own seed
(:func:`cell_seed`), so the cells may run in any order, one after the other or at once."""

from __future__ import annotations

import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.models import CenteredKernelRidge
from kernel_lab.core.models.feature_ridge import feature_ridge, ridge_loo
from kernel_lab.core.models.nystrom import nystrom_factor
from kernel_lab.core.models.rff import RFF_KERNELS
from kernel_lab.core.parts.ridge import (
    RANDOM_FEATURES,
    FeatureMap,
    fit_ridge,
    make_features,
    spectral_error,
    test_rmse,
)
from kernel_lab.core.progress import Progress

#: Algorithm 2 of Musco & Musco (fixed λ, sample size set by d_eff(λ)) as a sampler choice;
#: its runs are placed at the number of landmarks they actually sampled.
FIXED_LAMBDA = "recursive-rls-lambda"

#: The samplers and features whose draws nest: with one seed, the draw at a smaller s is
#: (up to the accelerated RP-Cholesky's rounds) the start of the draw at a larger one, so
#: their cells of one trial share a seed across the sizes (see :func:`cell_seed`).
NESTED = ("uniform", "rp-cholesky", *RANDOM_FEATURES)

#: Up to this many evaluation points ‖K − FFᵀ‖₂ comes from a full eigendecomposition; above,
#: from Lanczos (the same value to about 1e-10 relative, 20–60 times faster at 2000 points).
EXACT_MAX = 500


#: The clock of a cell run as a lane of a fused run (``lane_clock.now``, set in that
#: lane's thread by :mod:`~kernel_lab.experiments.nystrom_fused`): its own running time
#: and its shares of the passes; elsewhere :func:`time.perf_counter`.
lane_clock = threading.local()


def clock() -> float:
    """Seconds for a cell's time (see :data:`lane_clock`)."""
    now = getattr(lane_clock, "now", None)
    return time.perf_counter() if now is None else now()


def trace_error(diag: float | None, squared_norm: float) -> float | None:
    """``Σ k(x, x) − ‖F‖_F²``; None while the diagonal's sum is not known yet (a fused run
    takes it in its first pass, and fills it in with :func:`fill_trace`)."""
    return None if diag is None else float(diag - squared_norm)


def fill_trace(result: dict[str, Any], diag: float | None) -> dict[str, Any]:
    """A cell's result with its trace error from ``diag`` (see :func:`trace_error`), and
    without the ``squared_norm`` it was computed from."""
    squared_norm = result.pop("squared_norm", None)
    if result["trace"] is None and diag is not None:
        result["trace"] = float(diag - squared_norm)
    return result


def cell_seed(seed: int, sampler: str, trial: int, s: int | None = None,
              lam: float | None = None) -> np.random.SeedSequence:
    """The seed of one cell: ``SeedSequence([seed, crc32(sampler), trial])``, plus s for a
    sampler whose draws do not nest (recursive RLS, exact RLS: their λ follows s) and
    the bits of λ for Algorithm 2. Adding a size, a λ or a sampler to a run therefore
    leaves every other cell's draws as they were."""
    entropy = [int(seed), zlib.crc32(sampler.encode()), int(trial)]
    if lam is not None:
        entropy.append(int(np.float64(lam).view(np.uint64)))
    elif sampler not in NESTED and s is not None:
        entropy.append(int(s))
    return np.random.SeedSequence(entropy)


@dataclass(frozen=True)
class CellInputs:
    """What every cell of a run shares: the data set (``parts``, ``plan``), the kernel,
    the downstream λ (None: by leave-one-out), ``Σ k(x, x)`` over the training rows (None:
    not known yet, see :func:`trace_error`), the
    evaluation rows and their kernel matrix, the test rows and the picture's rows."""

    data: Any = field(repr=False)
    kernel: Kernel
    lam: float | None
    diag: float | None
    X_eval: np.ndarray = field(repr=False)
    K_eval: np.ndarray = field(repr=False)
    X_test: np.ndarray = field(repr=False)
    y_test: np.ndarray = field(repr=False)
    view: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class CellTask:
    """One cell: the sampler, s (None for Algorithm 2), Algorithm 2's λ, the cell's seed
    and the shared inputs."""

    sampler: str
    s: int | None
    rls_lam: float | None
    seed: np.random.SeedSequence
    inputs: CellInputs = field(repr=False)


def run_cell(task: CellTask, progress: Progress | None = None) -> dict[str, Any]:
    """The measures of one cell: ‖K − FFᵀ‖₂ on the evaluation rows, the trace error
    ``Σ k(x, x) − ‖F‖_F²`` over every training row, the seconds to the fitted ridge,
    kernel evaluations, the number of landmarks (features), the downstream λ, the test
    RMSE, and the sampler's scores of the picture's rows and its landmark rows (None
    without). ``progress`` covers the cell (the landmarks its first half, the pass over the
    rows the rest)."""
    inputs = task.inputs
    data = inputs.data
    t0 = clock()
    features: FeatureMap = make_features(
        "recursive-rls" if task.sampler == FIXED_LAMBDA else task.sampler, data.parts,
        data.plan, inputs.kernel, task.s, task.seed, lam=task.rls_lam, view=inputs.view,
        progress=None if progress is None else progress.sub(0.0, 0.5))
    fit = fit_ridge(data.parts, data.plan, features, inputs.lam,
                    None if progress is None else progress.sub(0.5, 1.0))
    seconds = clock() - t0
    sample = features.sample
    size = features.width if sample is None else sample.index.size
    return {"spectral": spectral_error(inputs.K_eval, features, inputs.X_eval,
                                       exact_max=EXACT_MAX),
            "trace": trace_error(inputs.diag, fit.squared_norm),
            "squared_norm": fit.squared_norm, "time": seconds,
            "evals": 0 if sample is None else sample.evaluations + size * size,
            "rmse": test_rmse(fit, features, inputs.X_test, inputs.y_test),
            "landmarks": size, "ridge_lam": fit.lam,
            "scores": None if sample is None else sample.scores,
            "marks": None if sample is None else sample.X}


def downstream_ridge(F: np.ndarray, y: np.ndarray, lam: float | None
                     ) -> tuple[np.ndarray, float, float]:
    """Ridge on the features with an unpenalised intercept (Nyström CKRR) at ``lam``, or,
    with ``lam=None``, at the candidate λ with the least leave-one-out error
    (exact, n folds of one point, from one SVD of the centred F; the grid is
    ``ridge_loo``'s: 61 values log-spaced over ``[1e-10, 10] · λ_max(F_cᵀ F_c)``, without
    refinement). Returns the coefficients, the intercept and the λ used."""
    if lam is not None:
        coef, intercept = feature_ridge(F, y, lam)
        return coef, intercept, float(lam)
    coef, intercept, chosen, _ = ridge_loo(F, y, refine=False)
    return coef, intercept, chosen


def check_random_features(samplers: list[str], kernel: Kernel) -> None:
    """Random features need a shift-invariant kernel, orthogonal ones a rotation-invariant
    one: a ParameterError saying so otherwise."""
    if "rff-orthogonal" in samplers and kernel.name not in ("gaussian", "matern32",
                                                            "matern52"):
        raise ParameterError(f"orthogonal random features need a rotation-invariant "
                             f"kernel (gaussian, matern32, matern52), not {kernel.name}; "
                             "leave rff-orthogonal out")
    if any(s in RANDOM_FEATURES for s in samplers) and kernel.name not in RFF_KERNELS:
        raise ParameterError(f"random features need a shift-invariant kernel, not "
                             f"{kernel.name}")


def exact_reference(X: np.ndarray, y: np.ndarray, Xt: np.ndarray, yt: np.ndarray,
                    kernel: Kernel, lam: float | None) -> dict[str, float]:
    """Test RMSE of exact kernel ridge on all n training points at ``lam`` — or, with
    ``lam=None``, at the λ the paper protocol's cross-validation picks, through the
    features ``F = K W^{-1/2}`` with every training point a landmark (``F Fᵀ = K``)."""
    out: dict[str, float] = {}
    if lam is not None:
        pred = CenteredKernelRidge(lam, kernel=kernel).fit(X, y).predict(Xt)
    else:
        K = kernel(X)
        N = nystrom_factor(K)
        coef, intercept, out["lam_exact"] = downstream_ridge(K @ N, y, None)
        pred = kernel(Xt, X) @ N @ coef + intercept
    out["rmse_exact"] = float(np.sqrt(np.mean((pred - yt) ** 2)))
    return out
