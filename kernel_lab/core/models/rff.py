"""Random Fourier features (Rahimi & Recht) and ridge regression on them.

For a shift-invariant kernel with spectral density p(ω) (see
:mod:`kernel_lab.core.kernels`), ``z(x) = √(2/D) cos(Wᵀx + b)`` with the D columns of
W drawn from p(ω) and ``b ~ U[0, 2π)`` gives ``E[z(x)ᵀz(x')] = k(x, x')``.

References
----------
A. Rahimi and B. Recht, "Random features for large-scale kernel machines", NIPS 2007.
F. X. Yu et al., "Orthogonal random features", NIPS 2016 (``orthogonal=True``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.fastcos import cos_features as cos_features  # re-exported
from kernel_lab.core.kernels import (
    GaussianKernel,
    Matern32Kernel,
    Matern52Kernel,
    ShiftInvariantKernel,
    make_kernel,
    resolve_bandwidth,
)
from kernel_lab.core.models.feature_ridge import feature_ridge
from kernel_lab.core.models.inputs import (
    DaskFront,
    row_set,
    rows_bandwidth,
    rows_input,
    rows_width,
)
from kernel_lab.core.ridge.sums import CentredSums
from kernel_lab.core.rows.mapreduce import Rows, reduce_blocks
from kernel_lab.core.validation import LAM, Integer, OneOf, Real, check_generator, check_params

RFF_KERNELS = ("gaussian", "laplace", "cauchy", "matern32", "matern52")
_ROTATION_INVARIANT = (GaussianKernel, Matern32Kernel, Matern52Kernel)

#: Entries of random features made at once in a block's sums (:func:`_feature_sums`).
SUM_ENTRIES = 1 << 18


def _feature_sums(rows: Rows, features: RandomFourierFeatures) -> CentredSums:
    """The centred sums of one canonical block's random features, made a few rows at a
    time (the block's features are never held at once)."""
    width = int(features.n_components)
    step = max(1, SUM_ENTRIES // max(width, 1))
    total = CentredSums.of(np.zeros((0, width)), np.zeros(0))
    for start in range(0, rows.index.size, step):
        total = total + CentredSums.of(features.transform(rows.X[start:start + step]),
                                       rows.y[start:start + step], overwrite=True)
    return total


def sample_features(kernel: ShiftInvariantKernel, p: int, n_components: int,
                    rng: np.random.Generator, *, orthogonal: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Frequencies W (p, D) and phases b (D,) for ``kernel``.

    With ``orthogonal=True`` (rotation-invariant kernels only) the directions of each
    block of p frequencies are made orthogonal while their lengths keep the kernel's
    radial law (Yu et al., 2016).
    """
    W = kernel.sample_frequencies(p, n_components, rng)
    if orthogonal:
        if not isinstance(kernel, _ROTATION_INVARIANT):
            raise ParameterError(
                f"orthogonal random features need a rotation-invariant kernel (gaussian, "
                f"matern32, matern52), not {kernel.name}")
        norms = np.linalg.norm(W, axis=0)
        for start in range(0, n_components, p):
            stop = min(start + p, n_components)
            Q, R = np.linalg.qr(rng.standard_normal((p, p)))
            Q *= np.sign(np.diag(R))  # Haar-distributed rotation
            W[:, start:stop] = Q[:, : stop - start] * norms[start:stop]
    b = rng.uniform(0.0, 2.0 * math.pi, n_components)
    return W, b


def given_features(frequencies: Any, phases: Any, p: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Given frequencies W (p, D) and phases b (D,) as float arrays, checked: both given,
    finite, W with ``p`` rows and as many columns as b has entries."""
    if frequencies is None or phases is None:
        raise ParameterError("give both frequencies (p × D) and phases (D,), or neither")
    W = np.array(frequencies, dtype=np.float64)
    b = np.array(phases, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != p or W.shape[1] < 1 or b.shape != (W.shape[1],) \
            or not (np.isfinite(W).all() and np.isfinite(b).all()):
        raise ParameterError(f"frequencies must be a finite {p} × D array (one row per "
                             f"feature column) and phases D finite numbers; got shapes "
                             f"{W.shape} and {b.shape}")
    return W, b


class RandomFourierFeatures(DaskFront, TransformerMixin, BaseEstimator):
    """Random Fourier feature map ``z(x) = √(2/D) cos(Wᵀx + b)``.

    Parameters
    ----------
    kernel : {"gaussian", "laplace", "cauchy", "matern32", "matern52"}
        Shift-invariant kernel; the bandwidth convention is that of
        :mod:`kernel_lab.core.kernels` (Gaussian: ``exp(−‖x − x'‖²/(2σ²))``).
    sigma : float or None
        Bandwidth σ; None = median pairwise distance of the training inputs.
    n_components : int
        Number of features D.
    orthogonal : bool
        Orthogonal random features (rotation-invariant kernels).
    random_state : int, RandomState, Generator or None
    frequencies : array_like of shape (p, D), optional
        Given frequencies W instead of a draw, with ``phases``: e.g. the first D columns
        of the one larger draw a run of the ``learning-curve`` experiment takes its
        features from (the first D of a draw of more are not a draw of D), to fit the
        model it measured. D is then their number of columns; ``n_components``,
        ``orthogonal`` and ``random_state`` are not used, and ``sigma`` only names the
        kernel (``kernel_``) the frequencies were drawn for.
    phases : array_like of shape (D,), optional
        Given phases b, with ``frequencies``.

    Attributes
    ----------
    kernel_ : ShiftInvariantKernel
    weights_ : ndarray, shape (p, D)
    offsets_ : ndarray, shape (D,)
    """

    _parameter_checks: ClassVar = {
        "kernel": OneOf(RFF_KERNELS, label="the kernel of random features"),
        "sigma": Real(optional=True, label="the bandwidth σ (sigma)"),
        "n_components": Integer(),
    }

    def __init__(self, kernel: str = "gaussian", *, sigma: float | None = None,
                 n_components: int = 100, orthogonal: bool = False,
                 random_state: Any = None, frequencies: Any = None,
                 phases: Any = None) -> None:
        self.kernel = kernel
        self.sigma = sigma
        self.n_components = n_components
        self.orthogonal = orthogonal
        self.random_state = random_state
        self.frequencies = frequencies
        self.phases = phases

    def fit(self, X: Any, y: Any = None) -> RandomFourierFeatures:
        """Draw the features for the columns of X: an array, a data set of the row layer
        (:func:`row_set`) or a Dask array or dataframe. Only the bandwidth (``sigma=None``:
        the median heuristic on :data:`~kernel_lab.core.models.inputs.BANDWIDTH_POINTS`
        keyed rows) reads rows: the same rows give the same σ and features wherever they
        are held."""
        X, _ = rows_input(X)
        rows = row_set(X)
        if rows is None:
            X = validate_data(self, X, dtype=np.float64)
            width = int(X.shape[1])
            p = check_params(self)
            sigma = resolve_bandwidth(p["sigma"], X)
        else:
            width = rows_width(*rows)
            p = check_params(self)
            sigma = rows_bandwidth(*rows) if p["sigma"] is None else p["sigma"]
            self.n_features_in_ = width
        kernel = make_kernel(p["kernel"], {"sigma": sigma})
        assert isinstance(kernel, ShiftInvariantKernel)
        self.kernel_ = kernel
        if self.frequencies is not None or self.phases is not None:
            self.weights_, self.offsets_ = given_features(self.frequencies, self.phases,
                                                          width)
            return self
        self.weights_, self.offsets_ = sample_features(
            kernel, width, p["n_components"], check_generator(self.random_state),
            orthogonal=self.orthogonal)
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Features, shape (n, D)."""
        check_is_fitted(self, "weights_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return cos_features(X, self.weights_, self.offsets_,
                            math.sqrt(2.0 / self.offsets_.shape[0]))


class RFFRidge(DaskFront, RegressorMixin, BaseEstimator):
    """Ridge regression on random Fourier features.

    Minimises ``Σ_i (y_i − z(x_i)ᵀw − c)² + λ ‖w‖²``: with ``centered=True`` the intercept
    c is unpenalised (the random-feature version of CKRR); with ``centered=False`` c = 0
    and the model approximates plain KRR with K ≈ Z Zᵀ.

    Parameters
    ----------
    lam : float
        Regularisation λ > 0.
    kernel, sigma, n_components, orthogonal, random_state, frequencies, phases
        As in :class:`RandomFourierFeatures` (given ``frequencies`` and ``phases``
        replace the draw).
    centered : bool
    target_mean : bool
        With ``centered=False``: c is the training targets' mean ȳ, fixed, not 0 — the
        ridge without intercept on ``y − ȳ``, predictions adding ȳ back (the squared-loss
        objective of DSG, whose offset is ȳ). With ``centered=True`` it changes nothing.

    Attributes
    ----------
    features_ : RandomFourierFeatures
    coef_ : ndarray, shape (D,)
    intercept_ : float
    """

    _parameter_checks: ClassVar = {**RandomFourierFeatures._parameter_checks, "lam": LAM}

    def __init__(self, lam: float = 1.0, *, kernel: str = "gaussian",
                 sigma: float | None = None, n_components: int = 100,
                 orthogonal: bool = False, centered: bool = True,
                 random_state: Any = None, frequencies: Any = None, phases: Any = None,
                 target_mean: bool = False) -> None:
        self.lam = lam
        self.kernel = kernel
        self.sigma = sigma
        self.n_components = n_components
        self.orthogonal = orthogonal
        self.centered = centered
        self.random_state = random_state
        self.frequencies = frequencies
        self.phases = phases
        self.target_mean = target_mean

    def fit(self, X: Any, y: Any = None) -> RFFRidge:
        """Fit on arrays X, y; or on a data set of the row layer given as X alone
        (:func:`row_set`), or a Dask array or dataframe X with its targets y, where their
        rows are: the features' centred sums per canonical row block, added in the one
        tree over the blocks, and one solve — never gathered, and the same rows give the
        same coefficients (to rounding) either way."""
        X, y = rows_input(X, y)
        rows = row_set(X)
        if rows is None:
            X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        lam = check_params(self)["lam"]
        self.features_ = RandomFourierFeatures(
            self.kernel, sigma=self.sigma, n_components=self.n_components,
            orthogonal=self.orthogonal, random_state=self.random_state,
            frequencies=self.frequencies, phases=self.phases).fit(X)
        self.n_features_in_ = self.features_.n_features_in_
        if rows is not None:
            sums = reduce_blocks(rows[0], _feature_sums, rows[1], self.features_,
                                 message="random feature sums")
            self.coef_, self.intercept_ = sums.solve_ridge(lam, self.centered,
                                                           self.target_mean)
            return self
        self.coef_, self.intercept_ = feature_ridge(self.features_.transform(X), y, lam,
                                                    intercept=self.centered,
                                                    target_mean=self.target_mean)
        return self

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.features_.transform(X) @ self.coef_ + self.intercept_
