"""The data a run uses: a :class:`Dataset` (train and test arrays, names, notes) and, for
synthetic data, its generating process (:class:`InputLaw`, :class:`TargetFunction`,
:class:`SyntheticSource`), which the theory reads. A data set is one part of the row
layer (:attr:`Dataset.parts`); a table's keyed split is made in
:mod:`kernel_lab.data.split`.

Reading files, the generators and the bundled examples live in :mod:`kernel_lab.data`.

References
----------
K. Elkhalil et al., "Risk convergence of centered kernel ridge regression with large
dimensional data" (Gaussian/Bernoulli models, target sin(1ᵀx/√p)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.formula import Formula
from kernel_lab.core.parts.base import LocalParts, MemoryPart, RowPlan, Rows, split_signature


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


# ======================================================================================
# Dataset
# ======================================================================================
@dataclass
class Dataset:
    """Train and test arrays with their names and, for synthetic data, the truth.

    Attributes
    ----------
    X_train : ndarray, shape (n, p)
    y_train : ndarray, shape (n,)
    X_test : ndarray, shape (m, p)
    y_test : ndarray, shape (m,)
    feature_names : list of str
    target_name : str
    name : str
        The specification the data came from.
    f_train, f_test : ndarray, optional
        Noiseless target values (synthetic data only).
    source : SyntheticSource, optional
        The generating process, for fresh draws and for the theory.
    notes : list of str
        What was done to the data (rows dropped, standardisation, …).
    plan : RowPlan, optional
        The split the rows came from, with the filling and scaling they were prepared
        by; ``i_train``/``i_test`` the sorted global indices of the training and test rows
        (the arrays hold the rows in that order). Without them the arrays are a *given*
        split (:meth:`RowPlan.given`): global rows ``0 … n_train − 1`` train, the next
        ``n_test`` test.

    The data set is one part of the row layer: :attr:`parts` runs every computation
    written for parts on its arrays (views, no copy), with the numbers of the same rows
    kept in files and prepared by the same plan.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: list[str]
    target_name: str
    name: str = ""
    f_train: np.ndarray | None = None
    f_test: np.ndarray | None = None
    source: SyntheticSource | None = None
    notes: list[str] = field(default_factory=list)
    #: Class names when the target holds class codes 0 … K−1 (more than two classes).
    classes: list[str] | None = None
    #: A table's own column names before encoding (a text column before one-hot).
    columns: list[str] | None = None
    #: What the user should look at before trusting a result (target leakage, …).
    warnings: list[str] = field(default_factory=list)
    plan: RowPlan = None  # type: ignore[assignment]  # set in __post_init__ when None
    i_train: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    i_test: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        n_train, n_test = int(self.X_train.shape[0]), int(self.X_test.shape[0])
        if self.plan is None:
            self.plan = RowPlan.given(n_train + n_test, n_test)
        if self.i_train is None or self.i_test is None:
            start = self.plan.given_test_start
            if start is None or start != n_train or self.plan.n_dropped:
                raise ValueError("a data set with a keyed split needs its rows' global "
                                 "indices (i_train, i_test)")
            self.i_train = np.arange(n_train)
            self.i_test = np.arange(n_train, n_train + n_test)
        if (self.i_train.size, self.i_test.size) != (n_train, n_test) or \
                (self.plan.n_train, self.plan.n_test) != (n_train, n_test):
            raise ValueError(f"{n_train} training and {n_test} test rows do not match the "
                             f"plan's {self.plan.n_train} and {self.plan.n_test}")

    @cached_property
    def parts(self) -> LocalParts:
        """The data set as one part (:class:`~kernel_lab.core.parts.base.MemoryPart`),
        built on first use: the arrays themselves, not copies."""
        return LocalParts([MemoryPart(0, 0, self.plan.n, self.X_train, self.y_train,
                                      self.i_train, self.X_test, self.y_test, self.i_test,
                                      split_signature(self.plan))])

    @property
    def n_train(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.X_test.shape[0])

    @property
    def p(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def task(self) -> str:
        """``"multiclass"`` for a target of class codes (``classes`` set, more than two),
        ``"classification"`` if the target takes exactly two values, else ``"regression"``."""
        if self.classes is not None and len(self.classes) > 2:
            return "multiclass"
        values = np.unique(np.concatenate([self.y_train, self.y_test]))
        return "classification" if values.size == 2 else "regression"

    #: Every row is in this process's memory (data kept in partitions say False): what
    #: reads every training row at once — the window's theory preview — asks this.
    in_memory = True

    def first_rows(self, rows: int = 8) -> Rows:
        """The first ``rows`` training rows as the methods see them (views, no copy), as
        data kept in partitions give theirs; ``index`` is their position among the
        training rows."""
        k = min(rows, self.n_train)
        return Rows(self.X_train[:k], self.y_train[:k], np.arange(k))

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable description (sizes, target range, notes)."""
        y = np.concatenate([self.y_train, self.y_test])
        return {
            "name": self.name,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "p": self.p,
            "partitions": 1,
            "target": self.target_name,
            "target_min": float(y.min()),
            "target_max": float(y.max()),
            "task": self.task,
            "classes": None if self.classes is None else list(self.classes),
            "synthetic": self.source is not None,
            "truth": None if self.source is None else self.source.truth.text,
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }
