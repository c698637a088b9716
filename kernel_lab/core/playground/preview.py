"""A quick first answer to a new σ at large n: the Nyström approximation of exact KRR /
CKRR on landmarks kept for the data set (:class:`NystromPreview`), drawn while the exact
fit, O(n³), is computed."""

from __future__ import annotations

import numpy as np

from kernel_lab.core.models.nystrom import nystrom_normalization
from kernel_lab.core.playground.exact import PairKernel
from kernel_lab.core.playground.fits import Problem

Array = np.ndarray


class NystromPreview:
    """Nyström ridge on fixed landmarks Z (rows ``landmarks`` of the training points) for
    any σ and λ: the library's Nyström features ``F = K(X, Z) N`` (N from
    :func:`~kernel_lab.core.models.nystrom.nystrom_normalization` of ``W = K(Z, Z)``) and
    ridge on them — without an intercept (approximating exact KRR) or with an unpenalised
    one (CKRR), as :class:`~kernel_lab.core.playground.fits.FeatureRidge`.

    The kernel's σ-free parts between the points and the landmarks are kept
    (:class:`~kernel_lab.core.playground.exact.PairKernel`), so a σ costs ``(n + m) s``
    kernel values, one product ``CᵀC`` (n s², C = K(X, Z)) and O(s³): ``FᵀF = Nᵀ(CᵀC)N``
    without forming F."""

    def __init__(self, problem: Problem, kernel: str, landmarks: Array) -> None:
        self.problem, self.kernel = problem, kernel
        self.landmarks = np.asarray(landmarks)
        self.Z = problem.X[self.landmarks]
        self._train = PairKernel(kernel, problem.X, self.Z)
        self._test = PairKernel(kernel, problem.X_test, self.Z) if len(problem.X_test) \
            else None
        self._marks = PairKernel(kernel, self.Z, self.Z)

    @property
    def s(self) -> int:
        """The number of landmarks."""
        return len(self.landmarks)

    def predict(self, sigma: float, lam: float, centered: bool
                ) -> tuple[Array, Array, Array]:
        """Grid, train and test predictions at σ and λ."""
        p = self.problem
        C = self._train(sigma)
        N = nystrom_normalization(self._marks(sigma))[0]
        M = N.T @ (C.T @ C) @ N
        y = p.y
        if centered:
            c_mean, y_mean = C.mean(axis=0), float(y.mean())
            f_mean = N.T @ c_mean  # the features' column means
            M -= len(y) * np.outer(f_mean, f_mean)
            rhs = N.T @ (C.T @ (y - y_mean))
        else:
            rhs = N.T @ (C.T @ y)
        M.flat[:: M.shape[0] + 1] += lam
        w = np.linalg.solve(M, rhs)
        beta = N @ w  # f(x) = K(x, Z) β + b
        b = y_mean - float(c_mean @ beta) if centered else 0.0
        grid = p.grid.kernel(self.kernel, sigma, self.Z)(beta) + b
        test = self._test(sigma) @ beta + b if self._test is not None else np.zeros(0)
        return grid, C @ beta + b, test
