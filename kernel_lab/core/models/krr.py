"""Exact kernel ridge regression (KRR) and centered kernel ridge regression (CKRR).

KRR solves ``min_f Σ_i (y_i − f(x_i))² + λ ‖f‖²_H``, so ``f̂(s) = κ(s)ᵀ (K + λI)⁻¹ y``
(scikit-learn's ``KernelRidge`` with ``alpha = λ``).

CKRR adds an unpenalised intercept. With ``P = I − 11ᵀ/n`` and ``K_c = PKP``
(Elkhalil et al., eq. 10)::

    f̂_c(s) = κ_c(s)ᵀ (K_c + λI)⁻¹ P y + ȳ,     κ_c(s) = P κ(s) − (1/n) P K 1.

Since ``α = (K_c + λI)⁻¹ P y`` satisfies ``1ᵀα = 0``, this equals
``κ(s)ᵀα + b`` with ``b = ȳ − mean(Kα)``, which is how predictions are made.

``path(lams)`` returns predictions for a whole λ grid from one symmetric
eigendecomposition ``K = U diag(e) Uᵀ``: ``α(λ) = U diag(1/(e + λ)) Uᵀ y``.

References
----------
K. Elkhalil, A. Kammoun, X. Zhang, M.-S. Alouini, T. Al-Naffouri, "Risk convergence of
centered kernel ridge regression with large dimensional data", IEEE Trans. Signal
Processing 68, 2020.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.linalg as sla
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from kernel_lab.core.errors import ParameterError, data_option
from kernel_lab.core.kernels import Kernel, make_kernel
from kernel_lab.core.memory import DEFAULT_BLOCK_BYTES, check_allocation, memory_budget_bytes
from kernel_lab.core.models.inputs import DaskFront, gathered
from kernel_lab.core.validation import LAM, check_params


@dataclass(frozen=True)
class PathResult:
    """Predictions along a λ grid.

    Attributes
    ----------
    lams : ndarray, shape (L,)
    train : ndarray, shape (L, n)
        Fitted values at the training points for each λ.
    test : ndarray, shape (L, m) or None
        Predictions at the requested test points for each λ.
    eigvals : ndarray, shape (n,)
        Eigenvalues of the (centered) kernel matrix used.
    """

    lams: np.ndarray
    train: np.ndarray
    test: np.ndarray | None
    eigvals: np.ndarray


def check_lams(lams: Any) -> np.ndarray:
    """λ values as a 1-D float array; each must be positive and finite."""
    arr = np.atleast_1d(np.asarray(lams, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError("λ must be a number or a non-empty 1-D list of numbers")
    if not np.isfinite(arr).all() or (arr <= 0).any():
        bad = arr[~(np.isfinite(arr) & (arr > 0))][0]
        raise ParameterError(
            f"λ must be positive and finite, got {bad:g}; use a value such as 1e-3")
    return arr


def center_gram(K: np.ndarray) -> np.ndarray:
    """Centre a kernel matrix in place, ``K_c = P K P`` with ``P = I − 11ᵀ/n``; returns the
    column means of the uncentred one (what a prediction's centring needs)."""
    col_means = K.mean(axis=0)
    K -= col_means[None, :]
    K -= col_means[:, None]
    K += col_means.mean()
    return col_means


def solve_regularised(K: np.ndarray, lam: float, y: np.ndarray) -> np.ndarray:
    """Solve ``(K + λI) α = y`` for symmetric K: Cholesky, or a general solve when
    ``K + λI`` is not positive definite (e.g. the sigmoid kernel).

    The factorisations use numpy's LAPACK, like the matrix products around them: with
    numpy's and scipy's separate BLAS thread pools alternating, small factorisations
    were several times slower.
    """
    A = K.copy()
    A.flat[:: A.shape[0] + 1] += lam
    try:
        L = np.linalg.cholesky(A)
        return sla.cho_solve((L, True), y, check_finite=False)
    except np.linalg.LinAlgError:
        try:
            return np.linalg.solve(A, y)
        except np.linalg.LinAlgError:
            raise ParameterError(
                f"K + λI is singular for λ = {lam:g} (the kernel is not positive definite); "
                "increase λ or use a positive definite kernel") from None


class _KernelRidgeBase(DaskFront, RegressorMixin, BaseEstimator):
    _centered: bool = False
    _parameter_checks: ClassVar = {"lam": LAM}

    def __init__(self, lam: float = 1.0, *, kernel: str | Kernel = "gaussian",
                 kernel_params: dict[str, Any] | None = None) -> None:
        self.lam = lam
        self.kernel = kernel
        self.kernel_params = kernel_params

    # -- fitting ------------------------------------------------------------------
    def _kernel_matrix(self, X: np.ndarray) -> np.ndarray:
        n = X.shape[0]
        budget = memory_budget_bytes()
        check_allocation(
            3 * 8.0 * n * n,
            f"exact kernel ridge regression on {n} points (three {n}×{n} matrices)",
            f"Use fewer points ({data_option('subsample', 'N')} for a table, a smaller n "
            "for a generator) or an approximate method (Nyström ridge, random-feature "
            "ridge).",
            budget,
        )
        # an overflow (inf) is reported just below with what to do: no numpy
        # RuntimeWarning before that message
        with np.errstate(over="ignore"):
            K = self.kernel_(X, budget=budget)
        if not np.isfinite(K).all():
            raise ParameterError(
                f"the {self.kernel_.name} kernel overflows on these inputs (non-finite kernel "
                "values); standardise the features or choose a smaller scale parameter")
        return K

    def _gram_matrix(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The training kernel matrix (centered in place, K_c = PKP, for CKRR) and the
        column means of the uncentered one."""
        K = self._kernel_matrix(X)
        return K, center_gram(K) if self._centered else K.mean(axis=0)

    def _prepare(self, X: Any, y: Any, check_input: bool = True
                 ) -> tuple[float, np.ndarray, np.ndarray]:
        """Validate, build the kernel and its Gram matrix, and record the training data.

        Returns ``(λ, Gram matrix (centered for CKRR), column means)``.
        """
        if check_input:
            # three n × n matrices per row: refused by name before the rows are gathered
            X, y = gathered(self, X, y, extra_bytes=lambda n: 24.0 * n * n)
            X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        else:  # the caller vouches for finite float64 arrays of matching shapes
            self.n_features_in_ = X.shape[1]
            self.__dict__.pop("feature_names_in_", None)   # from an earlier DataFrame fit
        lam = check_params(self)["lam"]
        self.kernel_ = make_kernel(self.kernel, self.kernel_params)
        K, col_means = self._gram_matrix(X)
        self.X_fit_ = X
        self._y_fit = y
        # CKRR fits P y and adds ȳ back (its unpenalised intercept); KRR fits y itself.
        self._shift = float(y.mean()) if self._centered else 0.0
        if self._centered:
            self.y_mean_ = self._shift
        self._gram: tuple[np.ndarray, np.ndarray] | None = None
        self._eig: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        return lam, K, col_means

    def _set_coef(self, alpha: np.ndarray, col_means: np.ndarray) -> None:
        self.dual_coef_ = alpha
        self.intercept_ = (self._shift - float(col_means @ alpha)) if self._centered else 0.0

    def fit(self, X: Any, y: Any) -> _KernelRidgeBase:
        """Fit on X of shape (n, p) and y of shape (n,) (one Cholesky factorisation).

        The n × n kernel matrix needs every row at once: a Dask array or dataframe is
        gathered into this process when its rows and the matrices fit in the memory budget,
        and refused by name (:class:`~kernel_lab.core.errors.MemoryBudgetError`) when they
        do not — :class:`~kernel_lab.core.models.nystrom.NystromRidge` fits such data on
        its chunks (:mod:`~kernel_lab.core.models.inputs`)."""
        lam, K, col_means = self._prepare(X, y)
        self._set_coef(solve_regularised(K, lam, self._y_fit - self._shift), col_means)
        # The (centered) kernel matrix is kept for path(), whose eigendecomposition then
        # consumes it in place; like the Cholesky factor a Gaussian process keeps, it costs
        # one n×n matrix (already within the memory budget checked above).
        self._gram = (K, col_means)
        return self

    def fit_path(self, X: Any, y: Any, lams: Any, X_test: Any | None = None, *,
                 check_input: bool = True, K_test: np.ndarray | None = None) -> PathResult:
        """Fit at ``lam`` and return :meth:`path` over ``lams``, all from one
        eigendecomposition (no separate factorisation for the fit).

        Parameters
        ----------
        X : array_like, shape (n, p)
        y : array_like, shape (n,)
        lams : array_like, shape (L,)
        X_test : array_like, shape (m, p), optional
        check_input : bool
            False skips scikit-learn's input validation (as ``check_input`` does in
            scikit-learn's own estimators): for callers that pass finite float64 arrays
            of consistent shapes they made themselves, such as the Monte Carlo trials of
            ``ckrr-risk``, where validation was a noticeable part of a trial's cost.
        K_test : ndarray, shape (m, n), optional
            The kernel between the test points and X, in place of ``X_test`` (see
            :meth:`path`).
        """
        lams = check_lams(lams)
        lam, K, col_means = self._prepare(X, y, check_input)
        e, U = np.linalg.eigh(K)  # LAPACK syevd via numpy (see solve_regularised)
        del K
        self._eig = (e, U, col_means)
        w = U.T @ (self._y_fit - self._shift)
        self._set_coef(U @ (w / (e + lam)), col_means)
        return self.path(lams, X_test, check_input=check_input, K_test=K_test)

    def __getstate__(self) -> dict[str, Any]:
        # Caches are not part of a fitted model: pickles stay O(n p), not O(n²).
        state = super().__getstate__()
        state.pop("_gram", None)
        state.pop("_eig", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        if "dual_coef_" in state:
            self._gram = None
            self._eig = None

    # -- prediction ---------------------------------------------------------------
    def _blocks(self, X: np.ndarray) -> Any:
        rows = max(1, DEFAULT_BLOCK_BYTES // (8 * max(self.X_fit_.shape[0], 1)))
        for start in range(0, X.shape[0], rows):
            stop = min(start + rows, X.shape[0])
            yield slice(start, stop), self.kernel_(X[start:stop], self.X_fit_)

    def predict(self, X: Any) -> np.ndarray:
        """Predictions, shape (m,), evaluated in blocks of bounded memory."""
        check_is_fitted(self, "dual_coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        out = np.empty(X.shape[0])
        for rows, Ks in self._blocks(X):
            out[rows] = Ks @ self.dual_coef_ + self.intercept_
        return out

    # -- λ path -------------------------------------------------------------------
    def _eigen(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(eigenvalues, eigenvectors, column means) of the (centered) training kernel."""
        if self._eig is None:
            if self._gram is not None:
                K, col_means = self._gram
                self._gram = None
            else:
                K, col_means = self._gram_matrix(self.X_fit_)
            e, U = np.linalg.eigh(K)
            self._eig = (e, U, col_means)
        return self._eig

    def path(self, lams: Any, X_test: Any | None = None, *,
             check_input: bool = True, K_test: np.ndarray | None = None) -> PathResult:
        """Train (and test) predictions for every λ in ``lams`` from one eigendecomposition.

        Parameters
        ----------
        lams : array_like, shape (L,)
            Positive regularisation values.
        X_test : array_like, shape (m, p), optional
        check_input : bool
            False skips the validation of ``X_test`` (see :meth:`fit_path`).
        K_test : ndarray, shape (m, n), optional
            The kernel between the test points and the training points, given instead of
            ``X_test`` by a caller that computes it more cheaply than from the inputs
            (``ckrr-risk``'s fresh test samples: :meth:`SyntheticSource.sample_white`).

        Returns
        -------
        PathResult
            ``train`` of shape (L, n) and ``test`` of shape (L, m) (or None).
        """
        check_is_fitted(self, "dual_coef_")
        lams = check_lams(lams)
        e, U, col_means = self._eigen()
        shift = self._shift
        w = U.T @ (self._y_fit - shift)
        denom = e[:, None] + lams[None, :]
        tol = 1e-12 * max(1.0, float(np.abs(e).max()))
        # e is ascending: e₀ + min λ ≥ tol rules every |e + λ| < tol out (the usual case)
        if float(e[0]) + float(lams.min()) < tol and np.any(np.abs(denom) < tol):
            warnings.warn("K + λI is numerically singular for some λ on the grid",
                          RuntimeWarning, stacklevel=2)
        C = w[:, None] / denom  # (n, L): coefficients of α(λ) in the eigenbasis
        alphas = U @ C                                   # α(λ), one column per λ
        # Fitted values without a second product: (K + λI) α = y − shift gives
        # K α = y − shift − λ α (exact; e ≥ 0 keeps the subtraction benign).
        train = (self._y_fit - shift)[None, :] - lams[:, None] * alphas.T + shift
        test = None
        if X_test is not None and K_test is not None:
            raise ValueError("give the test points or their kernel matrix, not both")
        if K_test is not None:
            blocks: Any = [(slice(0, K_test.shape[0]), K_test)]
        elif X_test is not None:
            if check_input:
                X_test = validate_data(self, X_test, reset=False, dtype=np.float64)
            blocks = self._blocks(X_test)
        if X_test is not None or K_test is not None:
            # κ_c(s)ᵀα = (κ(s) − K1/n)ᵀα since 1ᵀα = 0: the column means enter as one
            # vector subtracted from the product, not as a pass over every block.
            offset = (col_means @ alphas if self._centered else np.zeros(lams.size)) - shift
            # Written as αᵀ Ksᵀ, the product lands in the (L, m) layout directly, without a
            # transposed copy (40 % faster than (Ks α)ᵀ at m = 2000, n = 400, L = 51).
            m = (X_test if K_test is None else K_test).shape[0]
            test = np.empty((lams.size, m))   # replaced by the product if one block
            for rows, Ks in blocks:
                if rows.stop - rows.start == m:   # a single block: keep the product itself
                    test = alphas.T @ Ks.T
                else:
                    test[:, rows] = alphas.T @ Ks.T
            test -= offset[:, None]
        return PathResult(lams, train, test, e)


class KernelRidge(_KernelRidgeBase):
    """Exact kernel ridge regression ``f̂(s) = κ(s)ᵀ (K + λI)⁻¹ y``.

    Parameters
    ----------
    lam : float
        Regularisation λ > 0 (scikit-learn's ``alpha``).
    kernel : str or Kernel
        A name from :data:`kernel_lab.core.kernels.KERNELS` or a kernel object.
    kernel_params : dict, optional
        Parameters of the named kernel (``sigma``, ``alpha``, ``beta``, ``degree``).

    Attributes
    ----------
    kernel_ : Kernel
    dual_coef_ : ndarray, shape (n,)
    intercept_ : float
        Always 0.
    X_fit_ : ndarray, shape (n, p)

    References
    ----------
    B. Schölkopf and A. Smola, "Learning with kernels", MIT Press, 2002.
    """


class CenteredKernelRidge(_KernelRidgeBase):
    """Centered kernel ridge regression: KRR with an unpenalised intercept.

    ``f̂_c(s) = κ_c(s)ᵀ (K_c + λI)⁻¹ P y + ȳ`` (Elkhalil et al., eq. 10).

    Parameters
    ----------
    lam : float
        Regularisation λ > 0.
    kernel : str or Kernel
    kernel_params : dict, optional

    Attributes
    ----------
    kernel_ : Kernel
    dual_coef_ : ndarray, shape (n,)
        ``α = (K_c + λI)⁻¹ P y`` (sums to zero).
    intercept_ : float
        ``ȳ − mean(K α)``, so that ``f̂_c(s) = κ(s)ᵀα + intercept_``.
    y_mean_ : float
    X_fit_ : ndarray, shape (n, p)

    References
    ----------
    K. Elkhalil et al., "Risk convergence of centered kernel ridge regression with large
    dimensional data", IEEE Trans. Signal Processing 68, 2020.
    """

    _centered = True
