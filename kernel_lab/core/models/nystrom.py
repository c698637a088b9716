"""Nyström features ``F = C W^{-1/2}`` and ridge regression on them.

With landmarks S, ``C = K[:, S]`` and ``W = K[S, S]``, the Nyström approximation is
``K̃ = C W⁺ Cᵀ = F Fᵀ``. A well-conditioned W (its eigenvalues within
:data:`TRIANGULAR_KAPPA_MAX` of each other) is factorised by Cholesky, ``W = L Lᵀ``, and
``F = C L⁻ᵀ`` is one triangular product per block (half a general one); any other W by an
eigendecomposition with eigenvalues below a relative cut-off dropped, ``F = C V e^{-1/2}``,
so duplicate landmarks and a singular W are handled. The two bases differ by a rotation:
F Fᵀ, and every fit and prediction made from F, are the same.
:class:`NystromRidge` solves its ridge problem directly on the n × r features or, for large
n·s, by preconditioned conjugate gradients that never form them
(:mod:`kernel_lab.core.ridge.cg`). Both estimators also fit a data set of the row layer given
as X alone (:func:`row_set`: a Parquet folder or Zarr store kept in its partitions, on any
backend), where its rows are: keyed landmarks, then the features' centred sums in one pass
(:mod:`kernel_lab.core.ridge.fit`) and one solve — the same rows as an array give the same
coefficients.

References
----------
C. Williams and M. Seeger, "Using the Nyström method to speed up kernel machines", NIPS 2001.
C. Musco and C. Musco, "Recursive sampling for the Nyström method", NIPS 2017.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from kernel_lab.core import lapack
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.executor import one_blas_thread
from kernel_lab.core.kernels import (
    KERNELS,
    Kernel,
    ShiftInvariantKernel,
    canonical_kernel_name,
    make_kernel,
    resolve_bandwidth,
)
from kernel_lab.core.memory import check_allocation, rows_per_block
from kernel_lab.core.models.feature_ridge import feature_ridge
from kernel_lab.core.models.inputs import DaskFront, rows_bandwidth, rows_input
from kernel_lab.core.models.inputs import row_set as row_set  # re-exported
from kernel_lab.core.nystrom.common import CountingKernel
from kernel_lab.core.nystrom.factor import RCOND, eigen_factor
from kernel_lab.core.nystrom.factor import nystrom_factor as nystrom_factor  # re-exported
from kernel_lab.core.nystrom.landmarks import choose_landmarks
from kernel_lab.core.nystrom.samplers import SAMPLERS, make_sampler

# the module, not its names: a worker that unpickles parts.ridge first imports this module
# (through the models package) while parts.ridge is still being initialised
from kernel_lab.core.ridge import fit as parts_ridge
from kernel_lab.core.ridge.cg import (
    DEFAULT_MAX_ITER,
    DEFAULT_TOL,
    CGInfo,
    nystrom_predict,
    nystrom_ridge_cg,
    nystrom_ridge_cg_parts,
)
from kernel_lab.core.ridge.sums import (
    GRAM_KAPPA_MAX,
    columns_well_conditioned,
)
from kernel_lab.core.rows.mapreduce import PartMap, RowPlan
from kernel_lab.core.validation import (
    LAM,
    Integer,
    OneOf,
    Real,
    check_params,
    check_seed,
)

#: W whose largest eigenvalue is at most this many times its smallest gets the Cholesky
#: basis ``F = C L⁻ᵀ`` (rounding in F is then at most about this times the machine epsilon
#: relative, as in the eigenbasis); above, the eigenbasis with its cut-off. The bound of
#: the streamed ridge's sums of k(X, S), so those hold for every Cholesky basis.
TRIANGULAR_KAPPA_MAX = GRAM_KAPPA_MAX

#: ``NystromRidge(solver="auto")`` uses conjugate gradients when the n × s kernel block
#: ``k(X, S)`` (8 n s bytes) would exceed this, the direct solve otherwise.
CG_AUTO_BYTES = 256 * 2**20

#: Bytes of one block of ``k(X, S)`` in :func:`nystrom_features` (8 MiB): few, large
#: products with the normalization (BLAS-3 at full speed, on all its threads).
FEATURE_BLOCK_BYTES = 8 * 2**20

#: The solvers of :class:`NystromRidge`.
SOLVERS = ("auto", "cg", "direct")

def nystrom_normalization(W: np.ndarray, rcond: float = RCOND
                          ) -> tuple[np.ndarray, np.ndarray | None]:
    """``(N, L⁻¹)`` with ``F = C N`` the Nyström features: for a W whose eigenvalues lie
    within :data:`TRIANGULAR_KAPPA_MAX` of each other, ``N = L⁻ᵀ`` (upper triangular, W =
    LLᵀ) and L⁻¹ is returned too, so that F is a triangular product
    (:func:`nystrom_features`); otherwise ``N = nystrom_factor(W)`` and None. One
    eigendecomposition decides and, for the eigenbasis, gives N."""
    with one_blas_thread():  # small: a second thread costs more than it saves
        e, V = np.linalg.eigh(W)
        if e.size and e[0] > 0.0 and e[-1] <= TRIANGULAR_KAPPA_MAX * e[0]:
            try:
                Linv = lapack.lower_inverse(np.linalg.cholesky(W))
                return Linv.T, Linv
            except np.linalg.LinAlgError:
                pass
    return eigen_factor(e, V, rcond), None


def nystrom_features(kernel: Kernel, X: np.ndarray, landmarks: np.ndarray,
                     normalization: np.ndarray, lower_inverse: np.ndarray | None = None
                     ) -> np.ndarray:
    """``F = k(X, S) · normalization``, shape (n, r), over row blocks of X: each block of
    ``k(X, S)`` (at most :data:`FEATURE_BLOCK_BYTES`) is evaluated into one reused buffer
    and multiplied at once, so the n × s kernel matrix is never held (nor its 8 n s bytes
    freshly allocated, page by page). With ``lower_inverse`` (L⁻¹, normalization = L⁻ᵀ;
    see :func:`nystrom_normalization`) each block is evaluated into F itself and
    multiplied there by BLAS trmm."""
    n, s = X.shape[0], landmarks.shape[0]
    r = normalization.shape[1]
    check_allocation(8.0 * n * r, f"the {n}×{r} Nyström features",
                     "Use fewer points or fewer landmarks.")
    F = np.empty((n, r))
    rows = rows_per_block(s, FEATURE_BLOCK_BYTES)
    buffer = np.empty((min(rows, n), s)) if lower_inverse is None else None
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        if lower_inverse is None:
            C = kernel.block(X[start:stop], landmarks, buffer[:stop - start])
            np.dot(C, normalization, out=F[start:stop])
            continue
        C = kernel.block(X[start:stop], landmarks, F[start:stop])
        product = lapack.times_lower_transposed(C, lower_inverse, overwrite=True)
        if product is not C:  # the general product (no trmm): a new array
            F[start:stop] = product
    return F


class NystromFeatures(DaskFront, TransformerMixin, BaseEstimator):
    """Nyström feature map ``x ↦ Nᵀ k(S, x)`` (``N Nᵀ = W⁺``: ``W^{-1/2}``, or ``L⁻ᵀ`` for
    a well-conditioned W; see :func:`nystrom_normalization`) with landmarks chosen by a
    sampler.

    Parameters
    ----------
    kernel : str or Kernel
    kernel_params : dict, optional
        Parameters of the named kernel; a shift-invariant kernel without ``sigma`` gets the
        median pairwise distance of the training inputs.
    n_components : int
        Number of landmarks s (at most n).
    sampler : str
        One of :data:`kernel_lab.core.nystrom.samplers.SAMPLERS`: the one implementation of each
        (:mod:`kernel_lab.core.nystrom.landmarks`) on X as one part.
    random_state : int, RandomState, Generator, SeedSequence or None
        Gives the seed of the row keys that make every random choice of the sampler
        (:func:`~kernel_lab.core.validation.check_seed`).
    landmarks : array_like of shape (s, p), optional
        Given landmarks (rows prepared as the training rows are) instead of a sampler's
        draw — e.g. those a run of the ``nystrom`` experiment drew, to fit the model it
        measured; ``n_components``, ``sampler`` and ``random_state`` are then not used.

    Attributes
    ----------
    kernel_ : Kernel
    landmark_indices_ : ndarray, shape (s,), or None
        Positions (global row indices on a data set) of the landmarks among the training
        rows; None for given ``landmarks``.
    landmarks_ : ndarray, shape (s, p)
    normalization_ : ndarray, shape (s, r)
        N with ``F = k(X, S) N`` and ``N Nᵀ = W⁺`` (W = k(S, S)): ``L⁻ᵀ`` (upper
        triangular, r = s) for a well-conditioned W, else ``W^{-1/2}`` on the non-null
        eigenspace, r < s when W is singular (see :func:`nystrom_normalization`).
    lower_inverse_ : ndarray or None
        L⁻¹ when ``normalization_`` is L⁻ᵀ (the features are then a triangular product),
        else None.
    scores_ : ndarray or None
        The sampler's per-point scores on the training data.
    kernel_evaluations_ : int
        Kernel entries evaluated by the sampler and for W.
    """

    _parameter_checks: ClassVar = {"sampler": OneOf(tuple(SAMPLERS)), "n_components": Integer()}

    def __init__(self, kernel: str | Kernel = "gaussian", *,
                 kernel_params: dict[str, Any] | None = None, n_components: int = 100,
                 sampler: str = "recursive-rls", random_state: Any = None,
                 landmarks: Any = None) -> None:
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.sampler = sampler
        self.random_state = random_state
        self.landmarks = landmarks

    def fit(self, X: Any, y: Any = None) -> NystromFeatures:
        """Choose the landmarks among the rows of X: an array, or a data set of the row
        layer (:func:`row_set`: its prepared training rows where they are, never
        gathered; ``landmark_indices_`` are then global row indices), or a Dask array or
        dataframe, fitted on its chunks where they are
        (:mod:`~kernel_lab.core.models.inputs`). Every choice is keyed per row, so the
        same rows give the same landmarks either way. With given ``landmarks``, X only
        gives the bandwidth when the kernel needs one."""
        X, _ = rows_input(X)
        rows = row_set(X)
        if self.landmarks is not None:
            return self._fit_given(X, rows)
        if rows is not None:
            parts, plan = rows
            p = check_params(self)
            self._set_kernel(lambda: rows_bandwidth(parts, plan))
            got = choose_landmarks(p["sampler"], parts, plan, self.kernel_,
                                   min(p["n_components"], plan.n_train),
                                   check_seed(self.random_state))
            self.n_features_in_ = int(got.X.shape[1])
            return self._set_landmarks(got.index, got.X, got.scores, got.evaluations)
        X = validate_data(self, X, dtype=np.float64)
        p = check_params(self)
        s = min(p["n_components"], X.shape[0])
        self._set_kernel(lambda: resolve_bandwidth(None, X))
        # X is one part of the keyed samplers, every row a training row
        sample = make_sampler(p["sampler"]).sample(X, self.kernel_, s,
                                                   check_seed(self.random_state))
        return self._set_landmarks(sample.indices, X[sample.indices], sample.scores,
                                   sample.kernel_evaluations)

    def _fit_given(self, X: Any, rows: tuple[PartMap, RowPlan] | None) -> NystromFeatures:
        """The given ``landmarks`` as they are (checked: finite, p columns)."""
        marks = np.asarray(self.landmarks, dtype=np.float64)
        if rows is None:
            X = validate_data(self, X, dtype=np.float64)
            self._set_kernel(lambda: resolve_bandwidth(None, X))
        else:
            self._set_kernel(lambda: rows_bandwidth(*rows))
            self.n_features_in_ = int(marks.shape[1]) if marks.ndim == 2 else 0
        if marks.ndim != 2 or marks.shape[0] < 1 or marks.shape[1] != self.n_features_in_ \
                or not np.isfinite(marks).all():
            raise ParameterError(f"landmarks must be finite rows of the {self.n_features_in_} "
                                 f"feature columns, got an array of shape {marks.shape}")
        return self._set_landmarks(None, marks, None, 0)

    def _set_kernel(self, bandwidth: Callable[[], float]) -> None:
        """``kernel_``; a named shift-invariant kernel without ``sigma`` gets
        ``bandwidth()`` (the median heuristic on the training rows)."""
        params = dict(self.kernel_params or {})
        if (isinstance(self.kernel, str)
                and issubclass(KERNELS[canonical_kernel_name(self.kernel)],
                               ShiftInvariantKernel)
                and params.get("sigma") is None):
            params["sigma"] = bandwidth()
        self.kernel_ = make_kernel(self.kernel, params)

    def _set_landmarks(self, indices: np.ndarray | None, landmarks: np.ndarray,
                       scores: np.ndarray | None, evaluations: int) -> NystromFeatures:
        counter = CountingKernel(self.kernel_)
        self.landmark_indices_ = indices
        self.landmarks_ = landmarks
        self.normalization_, self.lower_inverse_ = nystrom_normalization(counter(landmarks))
        self.scores_ = scores
        self.kernel_evaluations_ = evaluations + counter.evaluations
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Features F, shape (n, r)."""
        check_is_fitted(self, "normalization_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return nystrom_features(self.kernel_, X, self.landmarks_, self.normalization_,
                                getattr(self, "lower_inverse_", None))


class NystromRidge(DaskFront, RegressorMixin, BaseEstimator):
    """Ridge regression on Nyström features: ``min ‖y − F w − c‖² + λ‖w‖²``.

    With ``centered=True`` the intercept c is unpenalised (Nyström CKRR); with
    ``centered=False`` c = 0 and the model approximates plain KRR with K̃ = F Fᵀ.

    Parameters
    ----------
    lam : float
    kernel, kernel_params, n_components, sampler, random_state, landmarks
        As in :class:`NystromFeatures` (given ``landmarks`` replace the sampler's draw).
    centered : bool
    solver : {"auto", "cg", "direct"}
        ``"direct"`` forms the n × r features and solves by Cholesky
        (:func:`~kernel_lab.core.models.feature_ridge.feature_ridge`); ``"cg"`` solves the
        same problem by preconditioned conjugate gradients streaming X in row blocks
        (:func:`~kernel_lab.core.ridge.cg.nystrom_ridge_cg`: memory O(block + s r),
        never n × s); ``"auto"`` takes CG when ``8 n s`` bytes exceed :data:`CG_AUTO_BYTES`.
    cg_tol : float
        CG stopping tolerance on the relative residual (see ``nystrom_ridge_cg``).
    cg_max_iter : int
        At most this many CG iterations; if the tolerance is not met a
        :class:`~sklearn.exceptions.ConvergenceWarning` is issued and ``converged_`` is False.

    Attributes
    ----------
    features_ : NystromFeatures
    coef_ : ndarray, shape (r,)
    intercept_ : float
    solver_ : str
        The solver used, ``"cg"`` or ``"direct"``.
    n_iter_ : int or None
        CG iterations (None for the direct solve).
    converged_ : bool
        False only when CG stopped at ``cg_max_iter`` above the tolerance.
    cg_info_ : CGInfo or None
        The CG run's details (residual history, block size); None for the direct solve.
    """

    _parameter_checks: ClassVar = {**NystromFeatures._parameter_checks, "lam": LAM,
                                   "solver": OneOf(SOLVERS),
                                   "cg_tol": Real(label="cg_tol", hint="e.g. 1e-8"),
                                   "cg_max_iter": Integer(label="cg_max_iter")}

    def __init__(self, lam: float = 1.0, *, kernel: str | Kernel = "gaussian",
                 kernel_params: dict[str, Any] | None = None, n_components: int = 100,
                 sampler: str = "recursive-rls", centered: bool = True,
                 solver: str = "auto", cg_tol: float = DEFAULT_TOL,
                 cg_max_iter: int = DEFAULT_MAX_ITER, random_state: Any = None,
                 landmarks: Any = None) -> None:
        self.lam = lam
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.sampler = sampler
        self.centered = centered
        self.solver = solver
        self.cg_tol = cg_tol
        self.cg_max_iter = cg_max_iter
        self.random_state = random_state
        self.landmarks = landmarks

    def fit(self, X: Any, y: Any = None, *,
            progress: Callable[[float, str], None] | None = None) -> NystromRidge:
        """Fit on arrays X, y, or on a data set of the row layer given as X alone
        (:func:`row_set`: a Parquet folder or Zarr store opened by the data layer, on any
        backend, or a data set in memory) — its prepared training rows and their targets,
        where they are: the landmarks by their keys, then (``"auto"``, ``"direct"``) the
        features' centred sums in one pass over the parts, combined in the fixed tree over
        the row blocks, and one solve; or CG with one pass per iteration. The same rows
        give the same coefficients either way (to rounding), and predictions take rows
        prepared as the data set's are. ``progress(fraction, message)`` is called once
        per CG iteration, and per part done on a data set (an exception it raises, a
        cancellation, propagates).

        A Dask array or dataframe X with its targets y (a Dask array or series, or an
        array) is fitted the same way on its row chunks, where they are — on the active
        ``distributed.Client``, else in this process — never gathered
        (:mod:`~kernel_lab.core.models.inputs`): its rows as given, every one a
        training row, no standardisation."""
        X, y = rows_input(X, y)
        rows = row_set(X)
        if rows is None:
            X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        p = check_params(self)
        if p["cg_tol"] >= 1:
            raise ParameterError(f"cg_tol must lie strictly between 0 and 1, got "
                                 f"{self.cg_tol!r}; e.g. 1e-8")
        self.features_ = NystromFeatures(self.kernel, kernel_params=self.kernel_params,
                                         n_components=self.n_components, sampler=self.sampler,
                                         random_state=self.random_state,
                                         landmarks=self.landmarks).fit(X)
        self.n_features_in_ = self.features_.n_features_in_
        self.cg_info_: CGInfo | None = None
        self.n_iter_: int | None = None
        self.converged_ = True
        if rows is not None:
            return self._fit_rows(*rows, p, progress)
        s = self.features_.landmarks_.shape[0]
        solver = p["solver"]
        if solver == "auto":
            solver = "cg" if 8.0 * X.shape[0] * s > CG_AUTO_BYTES else "direct"
        self.solver_ = solver
        if solver == "direct":
            self.coef_, self.intercept_ = feature_ridge(self.features_.transform(X), y,
                                                        p["lam"], intercept=self.centered)
            return self
        # a run that misses cg_tol warns (ConvergenceWarning) and sets converged_ = False
        self.coef_, self.intercept_, info = nystrom_ridge_cg(
            self.features_.kernel_, X, y, self.features_.landmarks_,
            self.features_.normalization_, p["lam"], intercept=self.centered,
            tol=p["cg_tol"], max_iter=p["cg_max_iter"],
            random_state=check_seed(self.random_state), progress=progress)
        self.cg_info_, self.n_iter_, self.converged_ = info, info.iterations, info.converged
        return self

    def _fit_rows(self, parts: PartMap, plan: RowPlan, p: dict[str, Any],
                  progress: Callable[[float, str], None] | None) -> NystromRidge:
        """The ridge over a data set's training rows: ``"auto"`` is the direct solve
        (the sums take O(s²) memory whatever the number of rows)."""
        f = self.features_
        self.solver_ = "cg" if p["solver"] == "cg" else "direct"
        if self.solver_ == "direct":
            # sums of k(X, S), mapped by N after the pass, when W is well conditioned
            columns = (f.lower_inverse_ is not None
                       or columns_well_conditioned(f.normalization_))
            features = parts_ridge.NystromMap(f.kernel_, f.landmarks_, f.normalization_,
                                              columns)
            sums = parts_ridge.ridge_sums(parts, plan, features,
                                          progress)  # type: ignore[arg-type]
            self.coef_, self.intercept_ = sums.solve_ridge(p["lam"], self.centered)
            return self
        self.coef_, self.intercept_, info = nystrom_ridge_cg_parts(
            parts, plan, f.kernel_, f.landmarks_, f.normalization_, p["lam"],
            intercept=self.centered, tol=p["cg_tol"], max_iter=p["cg_max_iter"],
            seed=check_seed(self.random_state), progress=progress)  # type: ignore[arg-type]
        self.cg_info_, self.n_iter_, self.converged_ = info, info.iterations, info.converged
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predictions, computed in row blocks (never the n × s kernel block at once)."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        f = self.features_
        return nystrom_predict(f.kernel_, X, f.landmarks_, f.normalization_, self.coef_,
                               self.intercept_)
