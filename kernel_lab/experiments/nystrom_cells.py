"""The cells of the ``nystrom`` experiment: one (sampler, s, trial) — or (Algorithm 2, λ,
trial) — draw of landmarks or random features, the n × s features it gives, the downstream
ridge fitted on them and the errors measured on them (:func:`run_cell`). A nested trial,
every streamed s from one draw, is :mod:`~kernel_lab.experiments.nystrom_nested`'s;
:func:`run_task` runs either.

Up to one block of rows (:func:`feature_block_rows`) a cell forms its n × s features whole;
above, it streams them over row blocks (:class:`StreamedRidge`) and never holds them."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.models import CenteredKernelRidge
from kernel_lab.core.models.feature_ridge import feature_ridge, ridge_loo
from kernel_lab.core.models.nystrom import NystromFeatures, nystrom_factor
from kernel_lab.core.models.rff import RFF_KERNELS, RandomFourierFeatures
from kernel_lab.core.models.streaming import StreamedRidge, kernel_columns
from kernel_lab.core.samplers import (
    BLOCK_ENTRIES,
    CountingKernel,
    RecursiveRLSSampler,
    Sample,
)
from kernel_lab.core.validation import check_generator
from kernel_lab.experiments.nystrom_nested import (
    RANDOM_FEATURES,
    CellTask,
    cell_measures,
    run_nested,
)

#: Algorithm 2 of Musco & Musco (fixed λ, sample size set by d_eff(λ)) as a sampler choice;
#: its runs are placed at the number of landmarks they actually sampled.
FIXED_LAMBDA = "recursive-rls-lambda"

#: Entries of one row block of the n × s features (8 MiB of float64): up to one block of
#: rows the features are formed whole, as they always were.
FEATURE_BLOCK_ENTRIES = BLOCK_ENTRIES

#: Above that, a cell streams its kernel columns and their Gram in blocks of at most this
#: many entries (2 MiB): the block's Gram product then runs in cache, 7 % less time per
#: cell than blocks of FEATURE_BLOCK_ENTRIES (recursive-rls-fast on 750,000 rows, s = 40
#: and 160, medians of 4). The nested pass keeps its blocks (no difference measured).
STREAM_BLOCK_ENTRIES = BLOCK_ENTRIES // 4


def feature_block_rows(width: int) -> int:
    """Rows of one block of :data:`FEATURE_BLOCK_ENTRIES` features of this width: up to this
    many training rows the features are formed whole, above they stream (and a nested
    trial's pass at its largest width takes blocks of this many rows)."""
    return max(1, FEATURE_BLOCK_ENTRIES // max(width, 1))


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


class SampledFeatures:
    """Nyström features ``x ↦ W^{-1/2} k(S, x)`` on the landmarks of a sampler whose size is
    its own (Algorithm 2 at a fixed λ), with the attributes :class:`NystromFeatures` has."""

    def __init__(self, kernel: Kernel, sampler: RecursiveRLSSampler, X: np.ndarray,
                 seed: Any) -> None:
        sample: Sample = sampler.sample(X, kernel, None, check_generator(seed))
        counter = CountingKernel(kernel)
        self.kernel_ = kernel
        self.landmark_indices_ = sample.indices
        self.landmarks_ = X[sample.indices]
        self.normalization_ = nystrom_factor(counter(self.landmarks_))
        self.lower_inverse_ = None  # the eigenbasis (see NystromFeatures)
        self.scores_ = sample.scores
        self.kernel_evaluations_ = sample.kernel_evaluations + counter.evaluations

    def transform(self, X: np.ndarray) -> np.ndarray:
        return self.kernel_(X, self.landmarks_) @ self.normalization_


def run_cell(task: CellTask) -> dict[str, Any]:
    """Fit s Nyström features (landmark sampling and factorisation), the landmarks of
    Algorithm 2 at λ, or s random Fourier features, and measure the n × s factor F:
    ‖K − FFᵀ‖₂ on the evaluation rows, tr(K − FFᵀ), the time to F, kernel evaluations,
    the number of landmarks (features), the downstream λ and test RMSE. Up to one block of
    rows F is formed whole; above, it is streamed over row blocks (:class:`StreamedRidge`)
    and never held, and the time includes that pass."""
    t0 = time.perf_counter()
    if task.sampler in RANDOM_FEATURES:
        kernel = task.kernel
        features: Any = RandomFourierFeatures(
            kernel.name, sigma=kernel.params()["sigma"], n_components=task.s,
            orthogonal=RANDOM_FEATURES[task.sampler], random_state=task.seed).fit(task.X)
        width = int(task.s)
    elif task.sampler == FIXED_LAMBDA:
        features = SampledFeatures(task.kernel, RecursiveRLSSampler(lam=task.rls_lam), task.X,
                                   task.seed)
        width = features.landmarks_.shape[0]
    else:
        features = NystromFeatures(task.kernel, n_components=task.s, sampler=task.sampler,
                                   random_state=task.seed).fit(task.X)
        width = features.landmarks_.shape[0]
    whole = task.block_rows or feature_block_rows(width)
    rows = task.block_rows or max(1, STREAM_BLOCK_ENTRIES // max(width, 1))
    F = ridge = None
    if task.X.shape[0] <= whole:  # one block: F in memory
        F = features.transform(task.X)
        seconds = time.perf_counter() - t0
        coef, intercept, ridge_lam = downstream_ridge(F, task.y, task.lam)
    else:
        ridge = StreamedRidge(features.transform, task.X, task.y, rows,
                              kernel_columns(features))
        seconds = time.perf_counter() - t0
        coef, intercept, ridge_lam = ridge.solve(task.lam)
    out: dict[str, Any] = cell_measures(
        features, ridge, F, coef, intercept, float(task.kernel.diag(task.X).sum()),
        task.X[task.eval_rows], task.K_eval, task.X_test, task.y_test, rows)
    del F
    indices = getattr(features, "landmark_indices_", None)
    scores = getattr(features, "scores_", None)
    if scores is not None and task.view_rows is not None:
        scores = scores[task.view_rows]
    out.update({"time": seconds, "evals": getattr(features, "kernel_evaluations_", 0),
                "landmarks": task.s if indices is None else indices.size,
                "ridge_lam": ridge_lam, "indices": indices, "scores": scores})
    return out


def run_task(task: CellTask) -> list[dict[str, Any]]:
    """A cell's result, or a nested trial's (one per size; see
    :mod:`~kernel_lab.experiments.nystrom_nested`)."""
    return run_nested(task) if task.sizes else [run_cell(task)]


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
    ``lam=None``, at the λ the paper protocol's cross-validation picks, through Nyström
    features with every training point a landmark (``F Fᵀ = K``)."""
    out: dict[str, float] = {}
    if lam is not None:
        pred = CenteredKernelRidge(lam, kernel=kernel).fit(X, y).predict(Xt)
    else:
        features = NystromFeatures(kernel, n_components=X.shape[0], sampler="uniform",
                                   random_state=0).fit(X)
        coef, intercept, out["lam_exact"] = downstream_ridge(features.transform(X), y, None)
        pred = features.transform(Xt) @ coef + intercept
    out["rmse_exact"] = float(np.sqrt(np.mean((pred - yt) ** 2)))
    return out
