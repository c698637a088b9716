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
- Nyström and random-feature ridge: the feature matrices per data set, σ and s (or D); a
  new λ re-solves the small s × s (D × D) ridge system.

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
    nystrom_features,
    rff_features,
    ridge_leverage,
    timed,
)
from kernel_lab.core.playground.gridmap import GridMap
from kernel_lab.core.playground.preview import NystromPreview
from kernel_lab.core.playground.steppers import DSGStepper, GFCStepper, gfc_model

__all__ = [
    "BLANK",
    "EXTENT",
    "KERNELS",
    "MAX_NOISE",
    "MAX_POINTS",
    "METHODS",
    "SETS",
    "STEPPED",
    "Bordered",
    "CenteredEigenSystem",
    "DSGStepper",
    "EigenSystem",
    "ExactCache",
    "Factor",
    "FeatureRidge",
    "FitResult",
    "GFCStepper",
    "GridMap",
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
    "nystrom_features",
    "rff_features",
    "ridge_leverage",
    "subsample",
    "ticks",
    "timed",
    "zero_contour",
]
