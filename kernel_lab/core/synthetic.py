"""The generating process of synthetic data: the input law (:class:`InputLaw`), the target
function (:class:`TargetFunction`, :func:`make_target`) and :class:`SyntheticSource`
(``y = f(x) + noise``), which the generators draw from and the theory reads.

The data set a run uses is :class:`kernel_lab.core.rows.dataset.Dataset`; the generators
live in :mod:`kernel_lab.data.generators`.

References
----------
K. Elkhalil et al., "Risk convergence of centered kernel ridge regression with large
dimensional data" (Gaussian/Bernoulli models, target sin(1ᵀx/√p)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.formula import Formula


# ======================================================================================
# Input laws and target functions
# ======================================================================================
@dataclass(frozen=True)
class InputLaw:
    """The distribution of the inputs of a synthetic data set.

    Attributes
    ----------
    kind : str
        ``"gaussian"`` (``x = Σ^{1/2} z``, z standard normal), ``"bernoulli"``
        (``x = Σ^{1/2} z``, ``z_j = ±1``), ``"clusters"``, ``"uniform"`` (on
        ``[0, 1]^p``) or ``"breiman"``.
    p : int
        Dimension.
    cov_eigvals : ndarray, shape (p,), optional
        Eigenvalues σ_j of Σ (ascending), for the Gaussian and Bernoulli laws.
    cov_eigvecs : ndarray, shape (p, p), optional
        Eigenvectors of Σ as columns; ``None`` means Σ is diagonal.
    centers, weights, scale : cluster model (centres (k, p), mixing weights, spread).
    """

    kind: str
    p: int
    cov_eigvals: np.ndarray | None = None
    cov_eigvecs: np.ndarray | None = None
    centers: np.ndarray | None = None
    weights: np.ndarray | None = None
    scale: float = 1.0

    @property
    def cov(self) -> np.ndarray | None:
        """Σ as a dense (p, p) matrix (Gaussian and Bernoulli laws)."""
        if self.cov_eigvals is None:
            return None
        if self.cov_eigvecs is None:
            return np.diag(self.cov_eigvals)
        U = self.cov_eigvecs
        return (U * self.cov_eigvals) @ U.T

    @cached_property
    def _cov_sqrt(self) -> np.ndarray:
        """Σ^{1/2} = U diag(√σ) Uᵀ (only for a non-diagonal Σ)."""
        U = self.cov_eigvecs
        return (U * np.sqrt(self.cov_eigvals)) @ U.T

    @property
    def linear(self) -> bool:
        """Whether inputs are ``x = Σ^{1/2} z`` of independent draws z (the Gaussian and
        Bernoulli laws): see :meth:`sample_white`."""
        return self.kind in ("gaussian", "bernoulli")

    def sqrt_apply(self, Z: np.ndarray) -> np.ndarray:
        """``Σ^{1/2}`` applied to each row of Z (shape (n, p), or one vector (p,))."""
        if self.cov_eigvecs is None:
            return Z * np.sqrt(self.cov_eigvals)
        return Z @ self._cov_sqrt  # rows z_iᵀ Σ^{1/2} (Σ^{1/2} is symmetric)

    def sample_white(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """The draws z behind n inputs of a :attr:`linear` law, shape (n, p):
        ``sample(n, rng)`` is ``sqrt_apply(sample_white(n, rng))``, from the same
        numbers of the generator."""
        if self.kind == "gaussian":
            return rng.standard_normal((n, self.p))
        if self.kind == "bernoulli":
            return rng.choice(np.array([-1.0, 1.0]), size=(n, self.p))
        raise AssertionError(self.kind)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw n inputs, shape (n, p)."""
        p = self.p
        if self.linear:
            return self.sqrt_apply(self.sample_white(n, rng))
        if self.kind == "uniform":
            return rng.random((n, p))
        if self.kind == "breiman":
            X = rng.integers(-1, 2, size=(n, p)).astype(np.float64)
            X[:, 0] = rng.choice(np.array([-1.0, 1.0]), size=n)
            return X
        if self.kind == "clusters":
            labels = rng.choice(len(self.weights), size=n, p=self.weights)
            return self.centers[labels] + self.scale * rng.standard_normal((n, p))
        raise AssertionError(self.kind)


@dataclass(frozen=True)
class TargetFunction:
    """A noiseless target ``f``; callable on (n, p) arrays.

    Attributes
    ----------
    kind : str
        ``"sin"``: ``sin(aᵀx)``; ``"linear"``: ``aᵀx``; ``"quadratic"``: ``(aᵀx)²``;
        ``"formula"``: a user formula; ``"friedman"``, ``"breiman"``.
        For the first three ``a = 1/√p · 1``, as in Elkhalil et al.
    p : int
    a : ndarray, shape (p,), optional
    formula : Formula, optional
    """

    kind: str
    p: int
    a: np.ndarray | None = None
    formula: Formula | None = None

    @property
    def text(self) -> str:
        return {
            "sin": "sin(1ᵀx/√p)",
            "linear": "1ᵀx/√p",
            "quadratic": "(1ᵀx/√p)²",
            "friedman": "10 sin(π x1 x2) + 20 (x3 − 0.5)² + 10 x4 + 5 x5",
            "breiman": "3 + 3x2 + 2x3 + x4 if x1 = 1 else −3 + 3x5 + 2x6 + x7",
        }.get(self.kind, self.formula.text if self.formula is not None else self.kind)

    @property
    def of_projection(self) -> bool:
        """Whether f depends on x through ``aᵀx`` only (sin, linear, quadratic): see
        :meth:`from_projection`."""
        return self.kind in TARGETS

    def from_projection(self, t: np.ndarray) -> np.ndarray:
        """f at inputs whose projections ``aᵀx`` are ``t`` (targets :attr:`of_projection`)."""
        if self.kind == "sin":
            return np.sin(t)
        if self.kind == "linear":
            return t
        if self.kind == "quadratic":
            return t**2
        raise AssertionError(self.kind)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if self.of_projection:
            return self.from_projection(X @ self.a)
        if self.kind == "formula":
            return self.formula(X)
        if self.kind == "friedman":
            return (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
                    + 10 * X[:, 3] + 5 * X[:, 4])
        if self.kind == "breiman":
            return np.where(X[:, 0] > 0, 3 + 3 * X[:, 1] + 2 * X[:, 2] + X[:, 3],
                            -3 + 3 * X[:, 4] + 2 * X[:, 5] + X[:, 6])
        raise AssertionError(self.kind)


TARGETS = ("sin", "linear", "quadratic")


def make_target(spec: str, p: int) -> TargetFunction:
    """``"sin"``, ``"linear"``, ``"quadratic"`` or a formula over x1…xp."""
    key = str(spec).strip()
    if key.lower() in TARGETS:
        return TargetFunction(key.lower(), p, a=np.full(p, 1.0 / math.sqrt(p)))
    return TargetFunction("formula", p, formula=Formula(key, p))


@dataclass(frozen=True)
class SyntheticSource:
    """A data-generating process ``y = f(x) + N(0, noise)``, ``x ~ law``."""

    law: InputLaw
    truth: TargetFunction
    noise: float

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Draw ``(X, f(X), y)`` with X of shape (n, p)."""
        X = self.law.sample(n, rng)
        f = self._checked(self.truth(X))
        y = f + math.sqrt(self.noise) * rng.standard_normal(n)
        return X, f, y

    def sample_white(self, n: int, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray] | None:
        """n noiseless points without forming their inputs: ``(Z, f(X))`` with
        ``X = Z Σ^{1/2}`` (:meth:`InputLaw.sqrt_apply`), for a :attr:`~InputLaw.linear`
        law and a target :attr:`~TargetFunction.of_projection`; None otherwise.

        What inner products with other inputs X' need, since ``X X'ᵀ = Z (X'Σ^{1/2})ᵀ``
        (Σ^{1/2} is symmetric): an inner-product kernel on a fresh test sample then costs
        one (n, p) product with the training inputs less (the map ``Z Σ^{1/2}``), and
        ``aᵀx = (Σ^{1/2}a)ᵀz`` gives f. The generator advances as in :meth:`sample`
        up to its last draw, the noise, which is not drawn.
        """
        if not (self.law.linear and self.truth.of_projection):
            return None
        Z = self.law.sample_white(n, rng)
        return Z, self._checked(self.truth.from_projection(Z @ self.law.sqrt_apply(self.truth.a)))

    def _checked(self, f: np.ndarray) -> np.ndarray:
        if not np.isfinite(f).all():
            raise ParameterError(
                f"the target function {self.truth.text} gives non-finite values on the generated "
                "inputs (e.g. log or sqrt of a negative number)")
        return f
