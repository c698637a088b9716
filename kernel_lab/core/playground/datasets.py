"""The Playground's small data sets: generated 1-D and 2-D sets drawn in the view's
square, their evaluation grid, and a seeded subsample of a table sent to the Playground."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kernel_lab.core.errors import ParameterError

#: The view's extent: x in [−3, 3] (and y in [−3, 3] in 2-D).
EXTENT = 3.0
#: Points the Playground holds (generated, painted or sent from a table), and the
#: largest landmark or feature count.
MAX_POINTS = 5000
#: The largest noise level a generated set is drawn with.
MAX_NOISE = 10.0

Array = np.ndarray


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
    # the Playground checks n and noise by their declarations first
    # (engine.playground.params.STATE, the same limits); this guards a script's call
    if not 2 <= n <= MAX_POINTS:
        raise ParameterError(f"the Playground draws 2 to {MAX_POINTS} points, not {n}")
    if not (math.isfinite(noise) and 0 <= noise <= MAX_NOISE):
        raise ParameterError(f"the noise level must be from 0 to {MAX_NOISE:g}, not {noise}")
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
