"""The Playground's computations: small visible data sets and fits that answer a slider at
once.

Everything here is plain numpy on the library's estimators — the window draws what these
functions return. Speed comes from caches that a slider does not invalidate:

- exact KRR / CKRR: one symmetric eigendecomposition ``K = U diag(e) Uᵀ`` (of K_c = PKP for
  CKRR) per data set, kernel and σ, and the products ``K_X U`` for the grid, the training
  and the test points. A new λ then costs one matrix–vector product per point set,
  ``f(λ) = (K_X U)(Uᵀ(y − shift)/(e + λ)) + intercept`` — the same numbers as
  :class:`~kernel_lab.core.models.KernelRidge` / ``CenteredKernelRidge`` — and the whole
  train/test-error-against-λ curve a matrix product;
- Nyström and random-feature ridge: the feature matrices per data set, σ and s (or D); a
  new λ re-solves the small s × s (D × D) ridge system.

DSG and GFC are stepped: :class:`DSGStepper` continues the same doubly stochastic run
(iteration k of a stepped run equals a run of k iterations); :class:`GFCStepper` adds one
greedy feature per step (one descent of one step per pass, so after k steps the model is
GFC with k features).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import (
    DSGClassifier,
    DSGRegressor,
    GreedyFeatureRegressor,
    NystromFeatures,
    RandomFourierFeatures,
)
from kernel_lab.core.samplers import SAMPLERS

#: The view's extent: x in [−3, 3] (and y in [−3, 3] in 2-D).
EXTENT = 3.0

Array = np.ndarray


# ======================================================================================
# Data sets
# ======================================================================================
@dataclass(frozen=True)
class PlaygroundSet:
    """A generated data set: dimension, task and a sampler ``(n, noise, rng) → X, y``;
    ``truth`` is the noiseless function (regression) for drawing."""

    name: str
    dim: int
    task: str
    sample: Callable[[int, float, np.random.Generator], tuple[Array, Array]]
    truth: Callable[[Array], Array] | None = None
    text: str = ""


def _uniform(n: int, rng: np.random.Generator, dim: int = 1) -> Array:
    return rng.uniform(-2.7, 2.7, size=(n, dim))


def _regression_1d(f: Callable[[Array], Array], scale: Callable[[Array], Array] | None = None,
                   outliers: bool = False):
    def sample(n: int, noise: float, rng: np.random.Generator) -> tuple[Array, Array]:
        X = np.sort(_uniform(n, rng), axis=0)
        sd = noise * (scale(X[:, 0]) if scale is not None else 1.0)
        y = f(X[:, 0]) + sd * rng.standard_normal(n)
        if outliers:
            k = max(1, n // 20)
            idx = rng.choice(n, size=k, replace=False)
            y[idx] += rng.choice([-1.0, 1.0], k) * rng.uniform(1.5, 3.0, k)
        return X, y
    return sample


def _two_class(positive: Callable[[Array], Array], spread: float = 1.0):
    """Points uniform in the square, labelled by a rule; noise flips labels near it."""
    def sample(n: int, noise: float, rng: np.random.Generator) -> tuple[Array, Array]:
        X = _uniform(n, rng, 2)
        y = np.where(positive(X + noise * spread * rng.standard_normal(X.shape)), 1.0, -1.0)
        return X, y
    return sample


def _moons(n: int, noise: float, rng: np.random.Generator) -> tuple[Array, Array]:
    half = n // 2
    t = rng.uniform(0, math.pi, n)
    upper = np.column_stack([np.cos(t[:half]), np.sin(t[:half])])
    lower = np.column_stack([1 - np.cos(t[half:]), 0.5 - np.sin(t[half:])])
    X = (np.vstack([upper, lower]) - [0.5, 0.25]) * 1.8
    X += noise * 0.6 * rng.standard_normal(X.shape)
    y = np.concatenate([np.ones(half), -np.ones(n - half)])
    return X, y


def _circles(n: int, noise: float, rng: np.random.Generator) -> tuple[Array, Array]:
    half = n // 2
    t = rng.uniform(0, 2 * math.pi, n)
    r = np.where(np.arange(n) < half, 0.9, 2.2)
    X = np.column_stack([r * np.cos(t), r * np.sin(t)])
    X += noise * 0.5 * rng.standard_normal(X.shape)
    return X, np.where(np.arange(n) < half, 1.0, -1.0)


def _spirals(n: int, noise: float, rng: np.random.Generator) -> tuple[Array, Array]:
    half = n // 2
    t = np.sqrt(rng.uniform(0.02, 1, n)) * 3 * math.pi
    sign = np.where(np.arange(n) < half, 1.0, -1.0)
    X = sign[:, None] * np.column_stack([t * np.cos(t), t * np.sin(t)]) / (3 * math.pi) * 2.6
    X += noise * 0.3 * rng.standard_normal(X.shape)
    return X, sign


def _blobs(n: int, noise: float, rng: np.random.Generator) -> tuple[Array, Array]:
    half = n // 2
    y = np.where(np.arange(n) < half, 1.0, -1.0)
    X = np.column_stack([y * 1.0, y * 0.8]) + (0.4 + noise) * rng.standard_normal((n, 2))
    return X, y


def _surface(x: Array) -> Array:
    return np.sin(1.3 * x[:, 0]) * np.cos(0.9 * x[:, 1]) + 0.2 * x[:, 0]


def _surface_sample(n: int, noise: float, rng: np.random.Generator) -> tuple[Array, Array]:
    X = _uniform(n, rng, 2)
    return X, _surface(X) + noise * rng.standard_normal(n)


def _sinc(x: Array) -> Array:
    return np.sinc(1.2 * x)


SETS: dict[str, PlaygroundSet] = {s.name: s for s in (
    PlaygroundSet("sine", 1, "regression", _regression_1d(np.sin), np.sin,
                  "y = sin(x) + noise"),
    PlaygroundSet("step", 1, "regression",
                  _regression_1d(lambda x: np.where(x > 0, 1.0, -1.0)),
                  lambda x: np.where(x > 0, 1.0, -1.0), "a jump at 0: smooth kernels overshoot"),
    PlaygroundSet("sinc", 1, "regression", _regression_1d(_sinc), _sinc,
                  "sinc(1.2 x): a peak and decaying ripples"),
    PlaygroundSet("heteroscedastic", 1, "regression",
                  _regression_1d(np.sin, scale=lambda x: 0.2 + np.abs(x) / 1.5), np.sin,
                  "sin(x) with noise growing away from 0"),
    PlaygroundSet("outliers", 1, "regression", _regression_1d(np.sin, outliers=True), np.sin,
                  "sin(x) with 5 % gross outliers: the squared loss follows them"),
    PlaygroundSet("moons", 2, "classification", _moons, None, "two interleaved half-circles"),
    PlaygroundSet("circles", 2, "classification", _circles, None, "a ring around a disc"),
    PlaygroundSet("xor", 2, "classification",
                  _two_class(lambda X: X[:, 0] * X[:, 1] > 0, 0.5), None,
                  "classes by quadrant: no linear boundary"),
    PlaygroundSet("spirals", 2, "classification", _spirals, None, "two interleaved spirals"),
    PlaygroundSet("blobs", 2, "classification", _blobs, None, "two Gaussian clusters"),
    PlaygroundSet("checkerboard", 2, "classification",
                  _two_class(lambda X: (np.floor(X[:, 0] / 1.5) + np.floor(X[:, 1] / 1.5)) % 2
                             == 0, 0.4), None, "a 4 × 4 checkerboard"),
    PlaygroundSet("surface", 2, "regression", _surface_sample, _surface,
                  "sin(1.3 x₁) cos(0.9 x₂) + 0.2 x₁ + noise"),
)}
#: Painted data of no generator: 1-D regression and 2-D classification.
BLANK = {"paint-1d": (1, "regression"), "paint-2d": (2, "classification")}


def generate(name: str, n: int, noise: float, seed: int, test_fraction: float = 0.25
             ) -> tuple[Array, Array, Array]:
    """``X`` (n, d), ``y`` (n,) and the test mask of a generated set, from ``seed``."""
    if name not in SETS:
        raise ParameterError(f"unknown Playground data set {name!r}; choose one of: "
                             f"{', '.join(SETS)}")
    if not 2 <= n <= 5000:
        raise ParameterError(f"the Playground draws 2 to 5000 points, not {n}")
    if not (math.isfinite(noise) and 0 <= noise <= 10):
        raise ParameterError(f"the noise level must be from 0 to 10, not {noise}")
    rng = np.random.default_rng([seed, 11])
    X, y = SETS[name].sample(int(n), float(noise), rng)
    test = np.zeros(len(y), dtype=bool)
    test[rng.permutation(len(y))[: round(test_fraction * len(y))]] = True
    return np.clip(X, -EXTENT, EXTENT), y, test


def grid(dim: int, resolution: int) -> Array:
    """Evaluation points: 4 × ``resolution`` points on [−3, 3] (1-D: a curve fine enough
    for small σ) or a resolution² grid (2-D, x₁ fastest)."""
    if dim == 1:
        return np.linspace(-EXTENT, EXTENT, 4 * resolution)[:, None]
    g1, g2 = np.meshgrid(ticks(resolution), ticks(resolution))
    return np.column_stack([g1.ravel(), g2.ravel()])


def ticks(resolution: int) -> Array:
    """The coordinates of a 2-D grid's rows and columns."""
    return np.linspace(-EXTENT, EXTENT, resolution)


def subsample(X: Array, y: Array, limit: int, seed: int) -> tuple[Array, Array, str]:
    """At most ``limit`` rows (a seeded random subset), with a note when rows were left out."""
    if len(y) <= limit:
        return X, y, ""
    keep = np.sort(np.random.default_rng([seed, 12]).choice(len(y), limit, replace=False))
    return X[keep], y[keep], f"showing a random {limit} of {len(y)} points"


# ======================================================================================
# Fits
# ======================================================================================
METHODS = ("krr", "ckrr", "nystrom", "rff", "dsg", "gfc")
METHOD_TEXT = {"krr": "exact KRR", "ckrr": "exact CKRR", "nystrom": "Nyström ridge",
               "rff": "random-feature ridge", "dsg": "doubly stochastic gradients",
               "gfc": "greedy feature construction"}
KERNELS = ("gaussian", "laplace", "cauchy")
#: Methods advanced by Step / Play, and how many steps one Play frame takes (× speed).
STEPPED = {"dsg": 1, "gfc": 0}
#: What one step of a stepped method adds (the step plot's x axis).
STEP_WORD = {"dsg": "iteration", "gfc": "features"}
#: The parameters each method uses (the window greys out the others).
USES = {"krr": {"kernel", "sigma", "lam"}, "ckrr": {"kernel", "sigma", "lam"},
        "nystrom": {"kernel", "sigma", "lam", "s", "sampler", "leverage"},
        "rff": {"kernel", "sigma", "lam", "D", "orthogonal"},
        "dsg": {"kernel", "sigma", "nu", "steps"}, "gfc": {"steps"}}
#: What a method's size counts ("features" unless said).
SIZE_WORD = {"nystrom": "landmarks"}


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


class ExactCache:
    """Exact KRR (``centered=False``) or CKRR (``True``) for every λ from one
    eigendecomposition; see the module docstring. The kernel blocks of the grid and the
    test points are kept, so a λ costs ``α(λ) = U (w / (e + λ))`` and one product per
    point set; training predictions need no product at all: ``f(X) = y − λ α(λ)`` (from
    ``(K_c + λI) α = P y`` and ``1ᵀα = 0`` for CKRR; ``(K + λI) α = y`` for KRR)."""

    def __init__(self, X: Array, y: Array, X_test: Array, G: Array, kernel: str,
                 sigma: float, centered: bool) -> None:
        k = make_kernel(kernel, {"sigma": sigma})
        K = k(X)
        self.col_means = K.mean(axis=0)
        if centered:
            K -= self.col_means[None, :]
            K -= self.col_means[:, None]
            K += self.col_means.mean()
        self.e, self.U = np.linalg.eigh(K)
        del K
        self.centered = centered
        self.y = y
        self.shift = float(y.mean()) if centered else 0.0
        self.w = self.U.T @ (y - self.shift)
        self.K_test = k(X_test, X) if len(X_test) else np.zeros((0, len(y)))
        self.K_grid = k(G, X)

    def alphas(self, lam: float | Array) -> tuple[Array, Array]:
        lams = np.atleast_1d(np.asarray(lam, dtype=np.float64))
        A = self.U @ (self.w[:, None] / (self.e[:, None] + lams[None, :]))
        if self.centered:
            # CKRR's α sums to zero; at a tiny λ the rounding left along the constant
            # eigenvector (eigenvalue ≈ 0 of K_c) would be divided by ≈ λ — project it out
            A -= A.mean(axis=0, keepdims=True)
        return lams, A

    def _apply(self, K: Array, A: Array) -> Array:
        out = K @ A
        if self.centered:
            out += self.shift - self.col_means @ A
        return out

    def predict(self, lam: float) -> tuple[Array, Array, Array]:
        """Grid, train and test predictions at λ."""
        lams, A = self.alphas(lam)
        train = self.y[:, None] - lams[None, :] * A
        return (self._apply(self.K_grid, A)[:, 0], train[:, 0],
                self._apply(self.K_test, A)[:, 0])

    def dof(self, lam: float) -> float:
        """Effective degrees of freedom tr K(K + λI)⁻¹ (of K_c for CKRR)."""
        e = np.clip(self.e, 0.0, None)
        return float(np.sum(e / (e + lam)))

    def curve(self, lams: Array, y_test: Array, task: str) -> dict[str, Array]:
        """Train and test error at every λ of ``lams`` (kept: the grid does not move)."""
        key = (tuple(np.asarray(lams, dtype=float)), task)
        if getattr(self, "_curve", (None,))[0] != key:
            self._curve = (key, self._curve_of(lams, y_test, task))
        return self._curve[1]

    def _curve_of(self, lams: Array, y_test: Array, task: str) -> dict[str, Array]:
        lams, A = self.alphas(lams)
        train = self.y[:, None] - lams[None, :] * A
        test = self._apply(self.K_test, A)
        return {"lam": lams,
                "train": np.array([error(train[:, j], self.y, task)
                                   for j in range(len(lams))]),
                "test": np.array([error(test[:, j], y_test, task) for j in range(len(lams))])}


class Superseded(Exception):
    """A computation given up because a newer request arrived (nothing to report)."""


def exact_direct(problem: Problem, kernel: str, sigma: float, lam: float, centered: bool,
                 cancelled: Callable[[], bool] | None = None) -> tuple[Array, Array, Array]:
    """One exact fit at λ by the library's estimator (a Cholesky factorisation): the quick
    answer to a new σ or new data while the eigendecomposition is still to be made. The
    grid — most of the cost — is predicted in blocks, and ``cancelled()`` asked between
    them (:class:`Superseded`: a σ drag's stale answers stop within a block)."""
    from kernel_lab.core.models import CenteredKernelRidge, KernelRidge

    est = (CenteredKernelRidge if centered else KernelRidge)(
        lam, kernel=kernel, kernel_params={"sigma": sigma}).fit(problem.X, problem.y)
    test = est.predict(problem.X_test) if len(problem.X_test) else np.zeros(0)
    G = problem.G
    grid = np.empty(len(G))
    for start in range(0, len(G), 2000):
        if cancelled is not None and cancelled():
            raise Superseded
        grid[start:start + 2000] = est.predict(G[start:start + 2000])
    return grid, est.predict(problem.X), test


def zero_contour(values: Array, ticks: Array) -> Array:
    """The zero level set of ``values`` (res × res on ``ticks`` × ``ticks``, x fastest) by
    marching squares, as segment end points in pairs, shape (2k, 2): computed with the fit
    (off the GUI thread), drawn as lines. Saddle cells are resolved by the cell's mean."""
    Z = np.asarray(values, dtype=np.float64)
    pos = Z >= 0
    a, b, c, d = Z[:-1, :-1], Z[:-1, 1:], Z[1:, 1:], Z[1:, :-1]  # cell corners, anticlockwise
    sa, sb, sc, sd = pos[:-1, :-1], pos[:-1, 1:], pos[1:, 1:], pos[1:, :-1]
    x0, x1 = ticks[None, :-1], ticks[None, 1:]
    y0, y1 = ticks[:-1, None], ticks[1:, None]

    def at(v1: Array, v2: Array) -> Array:  # where the linear interpolant crosses 0
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(v1 != v2, v1 / (v1 - v2), 0.5)
        return np.clip(t, 0.0, 1.0)

    shape = a.shape
    ones = np.ones(shape)
    # the four edges: bottom (a→b), right (b→c), top (d→c), left (a→d)
    px = np.stack([x0 + at(a, b) * (x1 - x0), x1 * ones, x0 + at(d, c) * (x1 - x0), x0 * ones])
    py = np.stack([y0 * ones, y0 + at(b, c) * (y1 - y0), y1 * ones, y0 + at(a, d) * (y1 - y0)])
    cut = np.stack([sa != sb, sb != sc, sd != sc, sa != sd])
    count = cut.sum(axis=0)
    pairs: list[tuple[Array, Array, Array]] = []  # (cells mask, edge i, edge j)
    two = count == 2
    if two.any():
        order = np.argsort(~cut[:, two], axis=0, kind="stable")
        pairs.append((two, order[0], order[1]))
    four = count == 4
    if four.any():
        centre_pos = ((a + b + c + d) / 4 >= 0)[four]
        same = centre_pos == sa[four]  # a and c joined through the centre: b, d cut off
        e0, e1, e2, e3 = (np.full(int(four.sum()), k) for k in range(4))
        pairs.append((four, np.where(same, e0, e0), np.where(same, e1, e3)))
        pairs.append((four, np.where(same, e2, e1), np.where(same, e3, e2)))
    segs = []
    for mask, i, j in pairs:
        cx, cy = px[:, mask], py[:, mask]
        k = np.arange(int(mask.sum()))
        start = np.column_stack([cx[i, k], cy[i, k]])
        end = np.column_stack([cx[j, k], cy[j, k]])
        segs.append(np.stack([start, end], axis=1).reshape(-1, 2))
    return np.concatenate(segs) if segs else np.zeros((0, 2))


def lam_grid(lam: float) -> Array:
    """The λ values of the error curve: 10⁻⁶ … 10⁴ and the current λ's decade."""
    return np.logspace(-6, 4, 41)


class FeatureRidge:
    """Ridge with an unpenalised intercept on features F, as the library's Nyström and RFF
    ridge estimators (``centered=True``), for every λ from one eigendecomposition of the
    small r × r matrix FcᵀFc (Fc: F with its column means removed)."""

    def __init__(self, F: Array, F_test: Array, F_grid: Array, y: Array) -> None:
        self.F, self.F_test, self.F_grid = F, F_test, F_grid
        self.f_mean = F.mean(axis=0)
        self.y_mean = float(y.mean())
        Fc = F - self.f_mean
        self.e, self.V = np.linalg.eigh(Fc.T @ Fc)
        self.r = self.V.T @ (Fc.T @ (y - self.y_mean))

    def predict(self, lam: float) -> tuple[Array, Array, Array]:
        """Grid, train and test predictions at λ."""
        w = self.V @ (self.r / (np.clip(self.e, 0.0, None) + lam))
        b = self.y_mean - float(self.f_mean @ w)
        return self.F_grid @ w + b, self.F @ w + b, self.F_test @ w + b


@dataclass(frozen=True)
class Problem:
    """The training and test points, the evaluation grid and the task of one fit."""

    X: Array
    y: Array
    X_test: Array
    y_test: Array
    G: Array
    task: str


def nystrom_features(problem: Problem, kernel: str, sigma: float, s: int, sampler: str,
                     seed: int) -> tuple[NystromFeatures, Array, Array, Array]:
    n = len(problem.y)
    if not 1 <= s <= n:
        raise ParameterError(f"s = {s} landmarks: choose 1 to n = {n} (the training points)")
    if sampler not in SAMPLERS:
        raise ParameterError(f"unknown sampler {sampler!r}")
    nf = NystromFeatures(kernel, kernel_params={"sigma": sigma}, n_components=s,
                         sampler=sampler, random_state=seed).fit(problem.X)
    return (nf, *_features(nf, problem))


def rff_features(problem: Problem, kernel: str, sigma: float, D: int, orthogonal: bool,
                 seed: int) -> tuple[Array, Array, Array]:
    rff = RandomFourierFeatures(kernel, sigma=sigma, n_components=D, orthogonal=orthogonal,
                                random_state=seed).fit(problem.X)
    return _features(rff, problem)


def _features(model: Any, problem: Problem) -> tuple[Array, Array, Array]:
    """A fitted feature map on the training points, the test points (maybe none) and the
    grid."""
    F = model.transform(problem.X)
    F_test = model.transform(problem.X_test) if len(problem.X_test) else \
        np.zeros((0, F.shape[1]))
    return F, F_test, model.transform(problem.G)


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


# ======================================================================================
# Stepped methods
# ======================================================================================
class DSGStepper:
    """A DSG run advanced k iterations at a time; the loss after each step is kept."""

    #: Iterations run between two checks for a newer request.
    CHUNK = 100

    def __init__(self, problem: Problem, kernel: str, sigma: float, nu: float, seed: int,
                 batch_size: int = 8, features_per_iter: int = 8) -> None:
        cls = DSGClassifier if problem.task == "classification" else DSGRegressor
        loss = "logistic" if problem.task == "classification" else "squared"
        self.problem = problem
        self.model = cls(loss, kernel=kernel, sigma=sigma, nu=nu, n_iter=1,
                         batch_size=min(batch_size, len(problem.y)),
                         n_features_per_iter=features_per_iter, cache_features=True,
                         warm_start=True, random_state=seed)
        self.iterations = 0
        # before the first iteration f is DSG's offset: the target mean (regression)
        self._offset = float(np.mean(problem.y)) if problem.task == "regression" else 0.0
        self.history: list[tuple[int, float, float]] = []  # (iteration, train, test error)
        self._sums: dict[int, tuple[int, Array | None, int]] = {}  # running sums per set

    def step(self, k: int = 1, cancelled: Callable[[], bool] | None = None) -> None:
        """Advance k iterations; the errors are recorded at up to 20 points on the way
        (a long jump) or once (a few iterations, as in Play). ``cancelled()`` is asked
        between chunks of at most :attr:`CHUNK` iterations: a long replay stops early
        (where it got to is kept and consistent)."""
        if k < 1:
            return
        target = self.iterations + int(k)
        marks = [target] if k <= 20 else np.unique(np.round(np.geomspace(
            self.iterations + 1, target, 20)).astype(int))
        for mark in marks:
            while self.iterations < mark:
                if cancelled is not None and cancelled():
                    return
                upto = min(int(mark), self.iterations + self.CHUNK)
                self.model.set_params(n_iter=upto - self.iterations)
                self.model.fit(self.problem.X, self.problem.y)
                self.iterations = upto
            _, train, test = self.predict(grid=False)
            p = self.problem
            self.history.append((self.iterations, error(train, p.y, p.task),
                                 error(test, p.y_test, p.task)))

    def _scores(self, which: int, X: Array) -> Array:
        """f on a point set, extended by the iterations since the last call only."""
        if len(X) == 0 or self.iterations == 0:
            return np.full(len(X), self._offset)
        m = self.model
        done, total, rescales = self._sums.get(which, (0, None, -1))
        if rescales != m.n_rescales_ or total is None:
            done, total = 0, np.zeros((len(X), 1))
        if done < self.iterations:
            total = total + m.partial_sum(X, done, self.iterations)
        self._sums[which] = (self.iterations, total, m.n_rescales_)
        f = total[:, 0] * (math.sqrt(2.0) * m.scale_)
        return f + getattr(m, "offset_", 0.0)

    def predict(self, grid: bool = True) -> tuple[Array, Array, Array]:
        p = self.problem
        G = self._scores(0, p.G) if grid else np.zeros(0)
        return G, self._scores(1, p.X), self._scores(2, p.X_test)


class GFCStepper:
    """Greedy feature construction one feature at a time: passes of one descent of one
    step each (the paper's protocol, no pruning), so after k steps the model is GFC with k
    features; the learned frequencies are kept for the frequency-plane view."""

    def __init__(self, problem: Problem, seed: int, max_features: int = 60) -> None:
        self.problem = problem
        self.model = gfc_model(max_features, seed)
        self._passes = self.model.fit_passes(problem.X, problem.y)
        self.features = 0
        self.done = False
        self.history: list[tuple[int, float, float]] = []

    def step(self) -> None:
        if self.done:
            return
        try:
            next(self._passes)
        except StopIteration:
            self.done = True
            return
        self.features = int(self.model.n_features_out_)
        _, train, test = self.predict()
        p = self.problem
        self.history.append((self.features, error(train, p.y, p.task),
                             error(test, p.y_test, p.task)))

    def predict(self) -> tuple[Array, Array, Array]:
        p = self.problem
        if self.features == 0:
            mean = float(np.mean(p.y))
            return (np.full(len(p.G), mean), np.full(len(p.y), mean),
                    np.full(len(p.y_test), mean))
        m = self.model
        test = m.predict(p.X_test) if len(p.X_test) else np.zeros(0)
        return m.predict(p.G), m.predict(p.X), test

    @property
    def frequencies(self) -> Array:
        return getattr(self.model, "frequencies_", np.zeros((0, self.problem.X.shape[1])))


def gfc_model(k: int, seed: int) -> GreedyFeatureRegressor:
    """GFC adding exactly one feature per pass (k passes: k features)."""
    return GreedyFeatureRegressor(n_features=k, n_passes=k, n_descents=1, max_steps=1,
                                  protocol="paper", eta=0.0, random_state=seed)


def check_fit_params(params: Mapping[str, Any], n: int | None = None) -> None:
    """Clear messages for values a slider cannot produce but a session file can (one
    validator for the window's gestures, sessions and presets); ``n``: the training
    points, when known."""
    if not isinstance(params["method"], str) or params["method"] not in METHODS:
        raise ParameterError(f"unknown Playground method {params['method']!r}")
    if not isinstance(params["kernel"], str) or params["kernel"] not in KERNELS:
        raise ParameterError(f"unknown kernel {params['kernel']!r}; choose one of "
                             f"{', '.join(KERNELS)}")
    compare = params.get("compare", "")
    if not isinstance(compare, str) or (compare and (compare not in METHODS
                                                     or compare in STEPPED)):
        able = ", ".join(m for m in METHODS if m not in STEPPED)
        raise ParameterError(f"the comparison must be one of {able} (or none), "
                             f"got {compare!r}")
    if not isinstance(params["sampler"], str) or params["sampler"] not in SAMPLERS:
        raise ParameterError(f"unknown sampler {params['sampler']!r}; choose one of "
                             f"{', '.join(SAMPLERS)}")
    for key in ("sigma", "lam", "nu"):
        value = params[key]
        if not (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value) and value > 0):
            raise ParameterError(f"{key} must be a positive number, got {value!r}")
    for key, high in (("s", 5000), ("D", 5000), ("resolution", 400), ("seed", 2**32 - 1)):
        value = params[key]
        low = 0 if key == "seed" else 1
        if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
                and low <= value <= high):
            raise ParameterError(f"{key} must be a whole number from {low} to {high}, "
                                 f"got {value!r}")
    for key in ("orthogonal", "leverage"):
        if not isinstance(params[key], bool):
            raise ParameterError(f"{key} must be true or false, got {params[key]!r}")
    if n is not None and n < 2:
        raise ParameterError("the Playground needs at least two training points: paint "
                             "some, or choose a data set")
