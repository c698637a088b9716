"""The Playground's computations: small visible data sets and fits that answer a slider at
once — ``datasets`` (the generated sets, the grid), ``gridmap`` (values on the grid),
``fits`` (the fit's value, feature ridge, leverage scores), ``exact`` (exact KRR / CKRR
for every λ), ``preview`` (their Nyström preview, the first answer at large n),
``steppers`` (DSG and GFC step by step) and ``contour`` (the decision boundary).

Everything here is plain numpy on the library's estimators — the window draws what these
functions return. Speed comes by design, not from a fast machine:

- the picture: every fit's values on the grid are a linear map of its coefficients,
  ``K(G, Z) c`` or ``cos(G W + b) c``; the 2-D grid is a tensor product and the kernels
  factor over the coordinates, so ``gridmap`` forms them at the cost of the grid's rows
  and columns (``2 r m`` kernel values and one product instead of ``r² m`` values);
- exact KRR / CKRR: a new σ or new data is answered at once by one Cholesky solve, a
  painted point by bordering the last solved system (a factor, or exact KRR's
  eigendecomposition at any λ) in O(n²); then
  one symmetric eigendecomposition ``K = U diag(e) Uᵀ`` (of K_c = PKP for CKRR) per data
  set, kernel and σ gives every λ: ``f(λ) = K_X (U (Uᵀ(y − shift)/(e + λ))) +
  intercept`` — the same numbers as :class:`~kernel_lab.core.models.KernelRidge` /
  ``CenteredKernelRidge`` — and the whole train/test-error-against-λ curve a matrix
  product;
- Nyström and random-feature ridge: the feature columns per data set and σ, with their
  Gram products (``features``); a new s or D adds the new landmarks' (frequencies')
  columns and forms the small s × s (D × D) ridge system from the kept products; a new λ
  re-solves it.

DSG and GFC are stepped: :class:`DSGStepper` continues the same doubly stochastic run
(iteration k of a stepped run equals a run of k iterations); :class:`GFCStepper` adds one
greedy feature per step (one descent of one step per pass, so after k steps the model is
GFC with k features).
"""

from __future__ import annotations

from kernel_lab.core.playground.contour import zero_contour
from kernel_lab.core.playground.datasets import (
    BLANK,
    EXTENT,
    MAX_NOISE,
    MAX_POINTS,
    SETS,
    PlaygroundSet,
    generate,
    grid,
    subsample,
    ticks,
)
from kernel_lab.core.playground.exact import (
    Bordered,
    CenteredEigenSystem,
    EigenSystem,
    ExactCache,
    Factor,
    PairKernel,
    Solved,
    exact_direct,
)
from kernel_lab.core.playground.features import (
    FrequencyColumns,
    LandmarkColumns,
    LandmarkDraws,
    rff_frequencies,
)
from kernel_lab.core.playground.fits import (
    KERNELS,
    METHODS,
    STEPPED,
    FeatureRidge,
    FitResult,
    Problem,
    Superseded,
    error,
    kernel_spectrum,
    lam_grid,
    ridge_leverage,
    timed,
)
from kernel_lab.core.playground.gridmap import GridMap
from kernel_lab.core.playground.preview import NystromPreview
from kernel_lab.core.playground.solves import (
    BASIS_TOL,
    TOL,
    CGSystem,
    ExactSolves,
    NotSolved,
    NystromPreconditioner,
    low_rank_factor,
    shifted_cg,
)
from kernel_lab.core.playground.steppers import DSGStepper, GFCStepper, gfc_model

__all__ = [
    "BASIS_TOL",
    "BLANK",
    "EXTENT",
    "KERNELS",
    "MAX_NOISE",
    "MAX_POINTS",
    "METHODS",
    "SETS",
    "STEPPED",
    "TOL",
    "Bordered",
    "CGSystem",
    "CenteredEigenSystem",
    "DSGStepper",
    "EigenSystem",
    "ExactCache",
    "ExactSolves",
    "Factor",
    "FeatureRidge",
    "FitResult",
    "FrequencyColumns",
    "GFCStepper",
    "GridMap",
    "LandmarkColumns",
    "LandmarkDraws",
    "NotSolved",
    "NystromPreconditioner",
    "NystromPreview",
    "PairKernel",
    "PlaygroundSet",
    "Problem",
    "Solved",
    "Superseded",
    "error",
    "exact_direct",
    "generate",
    "gfc_model",
    "grid",
    "kernel_spectrum",
    "lam_grid",
    "low_rank_factor",
    "rff_frequencies",
    "ridge_leverage",
    "shifted_cg",
    "subsample",
    "ticks",
    "timed",
    "zero_contour",
]
