"""Nyström features ``F = C W^{-1/2}`` and ridge regression on them.

With landmarks S, ``C = K[:, S]`` and ``W = K[S, S]``, the Nyström approximation is
``K̃ = C W⁺ Cᵀ = F Fᵀ``. W is factorised by an eigendecomposition with eigenvalues below a
relative cut-off dropped, so duplicate landmarks and a singular W are handled.

References
----------
C. Williams and M. Seeger, "Using the Nyström method to speed up kernel machines", NIPS 2001.
C. Musco and C. Musco, "Recursive sampling for the Nyström method", NIPS 2017.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from kernel_lab.core.kernels import (
    KERNELS,
    Kernel,
    ShiftInvariantKernel,
    canonical_kernel_name,
    make_kernel,
    resolve_bandwidth,
)
from kernel_lab.core.models.feature_ridge import feature_ridge
from kernel_lab.core.samplers import SAMPLERS, CountingKernel, make_sampler
from kernel_lab.core.validation import LAM, Integer, OneOf, check_generator, check_params

#: Eigenvalues of W below this fraction of the largest are treated as zero.
RCOND = 1e-12


def nystrom_factor(W: np.ndarray, rcond: float = RCOND) -> np.ndarray:
    """``W^{-1/2}`` restricted to the numerically non-null eigenspace of the symmetric W:
    returns ``V diag(e^{-1/2})`` of shape (s, r), r ≤ s, so that ``F = C · result``."""
    e, V = np.linalg.eigh(W)
    keep = e > rcond * max(float(e.max(initial=0.0)), 1e-300)
    return V[:, keep] / np.sqrt(e[keep])


class NystromFeatures(TransformerMixin, BaseEstimator):
    """Nyström feature map ``x ↦ W^{-1/2} k(S, x)`` with landmarks chosen by a sampler.

    Parameters
    ----------
    kernel : str or Kernel
    kernel_params : dict, optional
        Parameters of the named kernel; a shift-invariant kernel without ``sigma`` gets the
        median pairwise distance of the training inputs.
    n_components : int
        Number of landmarks s (at most n).
    sampler : str
        One of :data:`kernel_lab.core.samplers.SAMPLERS`.
    random_state : int, RandomState, Generator, SeedSequence or None

    Attributes
    ----------
    kernel_ : Kernel
    landmark_indices_ : ndarray, shape (s,)
    landmarks_ : ndarray, shape (s, p)
    normalization_ : ndarray, shape (s, r)
        ``W^{-1/2}`` on the non-null eigenspace; r < s when W is singular.
    scores_ : ndarray or None
        The sampler's per-point scores on the training data.
    kernel_evaluations_ : int
        Kernel entries evaluated by the sampler and for W.
    """

    _parameter_checks: ClassVar = {"sampler": OneOf(tuple(SAMPLERS)), "n_components": Integer()}

    def __init__(self, kernel: str | Kernel = "gaussian", *,
                 kernel_params: dict[str, Any] | None = None, n_components: int = 100,
                 sampler: str = "recursive-rls", random_state: Any = None) -> None:
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.sampler = sampler
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> NystromFeatures:
        X = validate_data(self, X, dtype=np.float64)
        p = check_params(self)
        s = min(p["n_components"], X.shape[0])
        params = dict(self.kernel_params or {})
        if (isinstance(self.kernel, str)
                and issubclass(KERNELS[canonical_kernel_name(self.kernel)],
                               ShiftInvariantKernel)):
            params["sigma"] = resolve_bandwidth(params.get("sigma"), X)
        self.kernel_ = make_kernel(self.kernel, params)
        sample = make_sampler(p["sampler"]).sample(X, self.kernel_, s,
                                                   check_generator(self.random_state))
        counter = CountingKernel(self.kernel_)
        self.landmark_indices_ = sample.indices
        self.landmarks_ = X[sample.indices]
        self.normalization_ = nystrom_factor(counter(self.landmarks_))
        self.scores_ = sample.scores
        self.kernel_evaluations_ = sample.kernel_evaluations + counter.evaluations
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Features F, shape (n, r)."""
        check_is_fitted(self, "normalization_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.kernel_(X, self.landmarks_) @ self.normalization_


class NystromRidge(RegressorMixin, BaseEstimator):
    """Ridge regression on Nyström features: ``min ‖y − F w − c‖² + λ‖w‖²``.

    With ``centered=True`` the intercept c is unpenalised (Nyström CKRR); with
    ``centered=False`` c = 0 and the model approximates plain KRR with K̃ = F Fᵀ.

    Parameters
    ----------
    lam : float
    kernel, kernel_params, n_components, sampler, random_state
        As in :class:`NystromFeatures`.
    centered : bool

    Attributes
    ----------
    features_ : NystromFeatures
    coef_ : ndarray, shape (r,)
    intercept_ : float
    """

    _parameter_checks: ClassVar = {**NystromFeatures._parameter_checks, "lam": LAM}

    def __init__(self, lam: float = 1.0, *, kernel: str | Kernel = "gaussian",
                 kernel_params: dict[str, Any] | None = None, n_components: int = 100,
                 sampler: str = "recursive-rls", centered: bool = True,
                 random_state: Any = None) -> None:
        self.lam = lam
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.sampler = sampler
        self.centered = centered
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> NystromRidge:
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        lam = check_params(self)["lam"]
        self.features_ = NystromFeatures(self.kernel, kernel_params=self.kernel_params,
                                         n_components=self.n_components, sampler=self.sampler,
                                         random_state=self.random_state).fit(X)
        self.coef_, self.intercept_ = feature_ridge(self.features_.transform(X), y, lam,
                                                    intercept=self.centered)
        return self

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.features_.transform(X) @ self.coef_ + self.intercept_
