"""The downstream ridge of the ``nystrom`` experiment over a data set's parts.

The features ``F`` (Nyström ``k(X, S) N`` or random Fourier features) of the training
rows of each canonical block are summed into
:class:`~kernel_lab.core.ridge.sums.CentredSums`, and the blocks' sums are combined
in the one tree over the blocks (:func:`~kernel_lab.core.rows.mapreduce.reduce_blocks`: the
same bits however the rows are stored). From them: the ridge at a given λ, ``‖F‖_F²``
for the trace error ``Σ k(x, x) − ‖F‖_F²``, and, with ``lam=None``, λ by exact
leave-one-out from a second pass (:class:`~kernel_lab.core.ridge.sums.LooGrid`, its
residuals summed per block). The spectral error and the test RMSE are measured on small
keyed subsets gathered to the client (:func:`spectral_error`, :func:`test_rmse`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.approx_error import residual_norm
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.models.inputs import rows_width
from kernel_lab.core.models.rff import RFF_KERNELS, RandomFourierFeatures
from kernel_lab.core.nystrom.common import BLOCK_ENTRIES
from kernel_lab.core.nystrom.factor import nystrom_factor
from kernel_lab.core.nystrom.landmarks import PART_SAMPLERS, Landmarks, choose_landmarks
from kernel_lab.core.progress import Progress
from kernel_lab.core.ridge.sums import (
    CentredSums,
    LooGrid,
    columns_well_conditioned,
)
from kernel_lab.core.rows.mapreduce import PartMap, RowPlan, Rows, reduce_blocks

#: Random Fourier features (orthogonal or not) beside the landmark samplers.
RANDOM_FEATURES = {"rff": False, "rff-orthogonal": True}


@dataclass(frozen=True)
class NystromMap:
    """Nyström features ``x ↦ k(x, S) N`` (picklable, for the partitions' workers).

    ``columns``: the sums are taken of ``k(X, S)`` and mapped by N afterwards (when W is
    well conditioned, see :func:`columns_well_conditioned`): s columns summed instead of
    the features, and exact enough."""

    kernel: Kernel
    landmarks: np.ndarray = field(repr=False)
    normalization: np.ndarray = field(repr=False)
    columns: bool
    sample: Landmarks | None = field(default=None, repr=False)

    @property
    def width(self) -> int:
        return int(self.landmarks.shape[0] if self.columns else self.normalization.shape[1])

    def transform(self, X: np.ndarray) -> np.ndarray:
        return self.kernel(X, self.landmarks) @ self.normalization

    def block(self, X: np.ndarray) -> np.ndarray:
        """The features the sums are taken of."""
        return self.kernel(X, self.landmarks) if self.columns else self.transform(X)

    def finish(self, sums: CentredSums) -> CentredSums:
        return sums.mapped(self.normalization) if self.columns else sums


@dataclass(frozen=True)
class RandomMap:
    """Random Fourier features (a fitted RandomFourierFeatures), picklable."""

    features: RandomFourierFeatures
    sample: None = None

    @property
    def width(self) -> int:
        return int(self.features.n_components)

    def transform(self, X: np.ndarray) -> np.ndarray:
        return self.features.transform(X)

    block = transform

    def finish(self, sums: CentredSums) -> CentredSums:
        return sums


FeatureMap = NystromMap | RandomMap


def nystrom_map(kernel: Kernel, landmarks: Landmarks) -> NystromMap:
    """The Nyström features on the landmarks (``N = W^{-1/2}``, :func:`nystrom_factor`)."""
    N = nystrom_factor(kernel(landmarks.X))
    return NystromMap(kernel, landmarks.X, N, columns_well_conditioned(N), landmarks)


def make_features(name: str, parts: PartMap, plan: RowPlan, kernel: Kernel, s: int | None,
                  seed: Any, *, lam: float | None = None, view: np.ndarray | None = None,
                  progress: Progress | None = None) -> FeatureMap:
    """s features of the named kind: landmarks of a sampler of :data:`PART_SAMPLERS`
    (``.sample`` holds them; ``recursive-rls`` with a fixed ``lam`` and ``s=None`` is
    Algorithm 2, see :func:`choose_landmarks`) or random Fourier features (``rff``,
    ``rff-orthogonal``) drawn from ``seed`` as the in-memory experiment draws them."""
    if name in RANDOM_FEATURES:
        if kernel.name not in RFF_KERNELS:
            raise ParameterError(f"random features need a shift-invariant kernel, not "
                                 f"{kernel.name}")
        p = rows_width(parts, plan)
        rff = RandomFourierFeatures(kernel.name, sigma=kernel.params()["sigma"],
                                    n_components=int(s), orthogonal=RANDOM_FEATURES[name],
                                    random_state=seed).fit(np.zeros((1, p)))
        return RandomMap(rff)
    if name not in PART_SAMPLERS:
        raise ParameterError(f"{name!r} does not run on partitioned data; choose among "
                             f"{', '.join((*PART_SAMPLERS, *RANDOM_FEATURES))}")
    return nystrom_map(kernel, choose_landmarks(name, parts, plan, kernel, s, seed, lam=lam,
                                                view=view, progress=progress))


def _block_rows(width: int) -> int:
    return max(1, BLOCK_ENTRIES // max(width, 1))


#: Rows of one step of the feature sums inside a canonical block: at most this many
#: entries of features (2 MiB), whose Gram product then runs in cache, added into one
#: running total: about 30 % less CPU per pass than steps of BLOCK_ENTRIES each summed
#: anew (750,000 rows × 20, s = 160, one thread: 0.78 s against 1.1 s).
SUM_ENTRIES = BLOCK_ENTRIES // 4


def _block_sums(rows: Rows, features: FeatureMap) -> CentredSums:
    step = max(1, SUM_ENTRIES // max(features.width, 1))
    total = CentredSums.of(np.zeros((0, features.width)), np.zeros(0))
    scratch = None
    for start in range(0, rows.index.size, step):
        sums = CentredSums.of(features.block(rows.X[start:start + step]),
                              rows.y[start:start + step], overwrite=True)
        if total.n == 0:  # a running total over the steps, in the arrays of the first
            total = sums
            continue
        if scratch is None:
            scratch = np.empty_like(total.gram)
        total = total.absorb(sums, scratch)
    return total


def _block_loo(rows: Rows, features: FeatureMap, grid: LooGrid) -> np.ndarray:
    sse = np.zeros(grid.nus.size)
    step = _block_rows(features.width)
    for start in range(0, rows.index.size, step):
        sse += grid.sse(features.transform(rows.X[start:start + step]),
                        rows.y[start:start + step])
    return sse


def _block_diag(rows: Rows, kernel: Kernel) -> float:
    return float(kernel.diag(rows.X).sum()) if rows.index.size else 0.0


@dataclass(frozen=True)
class RidgeFit:
    """The downstream ridge: coefficients, intercept, the λ used and ``‖F‖_F²``."""

    coef: np.ndarray
    intercept: float
    lam: float
    squared_norm: float
    sums: CentredSums = field(repr=False)

    def predict(self, features: FeatureMap, X: np.ndarray) -> np.ndarray:
        step = _block_rows(features.width)
        out = np.empty(X.shape[0])
        for start in range(0, X.shape[0], step):
            out[start:start + step] = features.transform(X[start:start + step]) @ self.coef
        return out + self.intercept


def ridge_sums(parts: PartMap, plan: RowPlan, features: FeatureMap,
               progress: Progress | None = None) -> CentredSums:
    """The centred sums of the features over every training row, tree-combined."""
    return features.finish(reduce_blocks(parts, _block_sums, plan, features,
                                         progress=progress, message="feature sums"))


def fit_ridge(parts: PartMap, plan: RowPlan, features: FeatureMap, lam: float | None,
              progress: Progress | None = None) -> RidgeFit:
    """Ridge with an unpenalised intercept on the features of all training rows at λ, or
    (``lam=None``) at the λ of least leave-one-out error on ``ridge_loo``'s grid (a second
    pass over the partitions)."""
    sums = ridge_sums(parts, plan, features, progress)
    if lam is None:
        grid = LooGrid.of(sums)
        coef, intercept, chosen = grid.solve(
            reduce_blocks(parts, _block_loo, plan, features, grid, progress=progress,
                          message="leave-one-out"))
        return RidgeFit(coef, intercept, chosen, sums.squared_norm, sums)
    coef, intercept = sums.solve(lam)
    return RidgeFit(coef, intercept, float(lam), sums.squared_norm, sums)


def diag_sum(parts: PartMap, plan: RowPlan, kernel: Kernel,
             progress: Progress | None = None) -> float:
    """``Σ k(x, x)`` over the training rows (the trace of K), tree-combined."""
    return float(reduce_blocks(parts, _block_diag, plan, kernel, progress=progress,
                               message="kernel diagonal"))


def spectral_error(K_eval: np.ndarray, features: FeatureMap, X_eval: np.ndarray,
                   exact_max: int = 2_000) -> float:
    """``‖K − FFᵀ‖₂`` on the evaluation rows (``K_eval = k(X_eval, X_eval)``)."""
    return residual_norm(K_eval, features.transform(X_eval), exact_max=exact_max).value


def test_rmse(fit: RidgeFit, features: FeatureMap, X_test: np.ndarray, y_test: np.ndarray
              ) -> float:
    """Root mean squared error of the ridge's predictions on the test rows given."""
    return float(np.sqrt(np.mean((fit.predict(features, X_test) - y_test) ** 2)))


test_rmse.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
