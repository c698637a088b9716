"""The Playground's fits apart from exact ridge: the fit's value (:class:`FitResult`), the
error measure, ridge on Nyström or random features for every λ (:class:`FeatureRidge`) and
the exact ridge leverage scores."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.playground.gridmap import GridMap

Array = np.ndarray

METHODS = ("krr", "ckrr", "nystrom", "rff", "dsg", "gfc")
KERNELS = ("gaussian", "laplace", "cauchy")
#: Methods advanced by Step / Play, and how many steps one Play frame takes (× speed).
STEPPED = {"dsg": 1, "gfc": 0}


@dataclass
class FitResult:
    """What a fit draws and reports. ``grid`` values on the evaluation points; train/test
    predictions; ``landmarks`` (indices into the training points) and ``scores`` (ridge
    leverage scores of every training point) for Nyström; ``curve`` λ-grid errors."""

    method: str
    grid: Array
    train: Array
    test: Array
    seconds: float
    n_features: int | None = None
    dof: float | None = None
    landmarks: Array | None = None
    scores: Array | None = None
    curve: dict[str, Array] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: The zero contour of a 2-D classifier (:func:`zero_contour`), set by the engine.
    contour: Array | None = None
    #: :func:`error` on the training and the test points (set by the fit engine).
    train_error: float = float("nan")
    test_error: float = float("nan")


def error(pred: Array, y: Array, task: str) -> float:
    """Mean squared error, or the misclassification rate of sign(pred) for ±1 labels."""
    if len(y) == 0:
        return float("nan")
    if task == "classification":
        return float(np.mean(np.where(pred >= 0, 1.0, -1.0) != y))
    return float(np.mean((pred - y) ** 2))



class Superseded(Exception):
    """A computation given up because a newer request arrived (nothing to report)."""


def lam_grid(lam: float) -> Array:
    """The λ values of the error curve: 10⁻⁶ … 10⁴ and the current λ's decade."""
    return np.logspace(-6, 4, 41)


class FeatureRidge:
    """Ridge with an unpenalised intercept on features F, as the library's Nyström and RFF
    ridge estimators (``centered=True``), for every λ from one eigendecomposition of the
    small r × r matrix ``FcᵀFc`` (Fc: F with its column means over the training points
    removed), given with ``Fcᵀ(y − ȳ)`` (:mod:`~kernel_lab.core.playground.features` forms
    both from kept Gram products). ``values(w)``: the centred features times w on the
    grid, the training and the test points — ``F w − μᵀw`` there, μ the column means —
    to which the prediction adds ȳ (the intercept is ``ȳ − μᵀw``)."""

    def __init__(self, gram: Array, cross: Array, y_mean: float,
                 values: Callable[[Array], tuple[Array, Array, Array]]) -> None:
        self.values, self.y_mean = values, float(y_mean)
        self.e, self.V = np.linalg.eigh(gram)
        self.r = self.V.T @ cross

    def predict(self, lam: float) -> tuple[Array, Array, Array]:
        """Grid, train and test predictions at λ."""
        w = self.V @ (self.r / (np.clip(self.e, 0.0, None) + lam))
        grid, train, test = self.values(w)
        return grid + self.y_mean, train + self.y_mean, test + self.y_mean


@dataclass(frozen=True)
class Problem:
    """The training and test points, the evaluation grid and the task of one fit."""

    X: Array
    y: Array
    X_test: Array
    y_test: Array
    grid: GridMap
    task: str

    @property
    def G(self) -> Array:
        """The grid's points."""
        return self.grid.points


def kernel_spectrum(problem: Problem, kernel: str, sigma: float) -> tuple[Array, Array]:
    """The eigenvalues of K (clipped at 0) and the squared eigenvectors: every ridge
    leverage score for any λ from them (:func:`ridge_leverage`)."""
    e, U = np.linalg.eigh(make_kernel(kernel, {"sigma": sigma})(problem.X))
    return np.clip(e, 0.0, None), U ** 2


def ridge_leverage(spectrum: tuple[Array, Array], lam: float) -> Array:
    """Every training point's λ-ridge leverage score ``(K(K + λI)⁻¹)_ii`` (exact) from
    :func:`kernel_spectrum`: ``Σ_j U_ij² e_j / (e_j + λ)``."""
    e, U2 = spectrum
    return U2 @ (e / (e + lam))


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0
