"""Data sets: a :class:`Dataset` container, synthetic generators, bundled examples,
file loading by specification, standardisation and a seeded train/test split.

A data *specification* is one string, used by the command line and stored in
sessions:

- a file path, optionally followed by options: ``data/housing.csv``,
  ``data/housing.csv:target=price,test_fraction=0.2``;
- a bundled example: ``diabetes``, ``breast-cancer``, ``digits``;
- a generator with parameters: ``gaussian:n=200,p=100,cov=toeplitz,rho=0.4``,
  ``friedman:n=2000``, ``gaussian:p=5,f="sin(x1) + x2^2"``.

References
----------
K. Elkhalil et al., "Risk convergence of centered kernel ridge regression with large
dimensional data" (Gaussian/Bernoulli models, target sin(1ᵀx/√p)).
J. H. Friedman, "Multivariate adaptive regression splines", 1991 (friedman).
L. Breiman et al., "Classification and regression trees", 1984 (breiman, 2-D planes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError, KernelLabError, ParameterError
from kernel_lab.core.formula import Formula
from kernel_lab.core.loaders import Table
from kernel_lab.core.params import ParamSpec, resolve_params


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

    def _sqrt_apply(self, Z: np.ndarray) -> np.ndarray:
        if self.cov_eigvecs is None:
            return Z * np.sqrt(self.cov_eigvals)
        return Z @ self._cov_sqrt  # rows z_iᵀ Σ^{1/2} (Σ^{1/2} is symmetric)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw n inputs, shape (n, p)."""
        p = self.p
        if self.kind == "gaussian":
            return self._sqrt_apply(rng.standard_normal((n, p)))
        if self.kind == "bernoulli":
            return self._sqrt_apply(rng.choice(np.array([-1.0, 1.0]), size=(n, p)))
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

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if self.kind == "sin":
            return np.sin(X @ self.a)
        if self.kind == "linear":
            return X @ self.a
        if self.kind == "quadratic":
            return (X @ self.a) ** 2
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
        f = self.truth(X)
        if not np.isfinite(f).all():
            raise ParameterError(
                f"the target function {self.truth.text} gives non-finite values on the generated "
                "inputs (e.g. log or sqrt of a negative number)")
        y = f + math.sqrt(self.noise) * rng.standard_normal(n)
        return X, f, y


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

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable description (sizes, target range, notes)."""
        y = np.concatenate([self.y_train, self.y_test])
        return {
            "name": self.name,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "p": self.p,
            "target": self.target_name,
            "target_min": float(y.min()),
            "target_max": float(y.max()),
            "task": self.task,
            "classes": None if self.classes is None else list(self.classes),
            "synthetic": self.source is not None,
            "truth": None if self.source is None else self.source.truth.text,
            "notes": list(self.notes),
        }

    def standardized(self, *, inplace: bool = False) -> Dataset:
        """Features scaled to zero mean and unit variance using the training statistics.

        Constant features keep scale 1. The generating process (if any) is dropped,
        since its law no longer describes the scaled inputs. ``inplace``: scale this
        data set's arrays themselves (no copy: for arrays no one else holds, as those of
        a fresh split).
        """
        mean, scale = _column_stats(self.X_train)
        scale[scale < 1e-12] = 1.0
        if inplace:
            X_train, X_test = self.X_train, self.X_test
            for A in (X_train, X_test):
                A -= mean
                A /= scale
        else:
            X_train, X_test = (self.X_train - mean) / scale, (self.X_test - mean) / scale
        return replace(
            self,
            X_train=X_train,
            X_test=X_test,
            source=None,
            notes=[*self.notes, "features standardised with the training mean and std"],
        )


def _column_stats(X: np.ndarray, rows: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations, over blocks of rows (no temporary the size
    of X); the two-pass formula, as ``X.std``."""
    n = X.shape[0]
    mean = np.zeros(X.shape[1])
    for start in range(0, n, rows):
        mean += X[start:start + rows].sum(axis=0)
    mean /= max(n, 1)
    var = np.zeros(X.shape[1])
    for start in range(0, n, rows):
        block = X[start:start + rows] - mean
        var += np.einsum("ij,ij->j", block, block)
    return mean, np.sqrt(var / max(n, 1))


def train_test_split(
    X: np.ndarray, y: np.ndarray, test_fraction: float, rng: np.random.Generator,
    source: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Seeded random split; returns ``X_train, y_train, X_test, y_test``.

    At least two training points and (for a positive fraction) one test point are kept;
    ``source`` (the file or data set) is named in the error otherwise.
    """
    n = X.shape[0]
    if not 0.0 <= test_fraction < 1.0:
        raise ParameterError(f"test fraction must be in [0, 1), got {test_fraction}")
    n_test = round(test_fraction * n)
    if test_fraction > 0:
        n_test = max(n_test, 1)
    if n - n_test < 2:
        rows = "row" if n == 1 else "rows"
        held = f" with {n_test} held out for testing" if n_test else ""
        raise DataError(f"only {n} {rows}{held}: too few to keep at least two for training",
                        "use a larger data set or a smaller test fraction", path=source)
    perm = rng.permutation(n)
    test, train = perm[:n_test], perm[n_test:]
    return X[train], y[train], X[test], y[test]


def subsample_table(table: Table, n: int, seed: int) -> Table:
    """At most ``n`` rows of the table, a seeded random subset in file order (a note says
    so); the table itself when it is not larger. A class target is sampled class by class
    (each class keeps its share, and at least one row), so no class disappears."""
    total = len(table.y)
    if n <= 0:
        return table
    if total <= n:
        return replace(table, notes=[*table.notes, f"subsample={n}: all {total:,} rows "
                                                   "used (no more in the table)"])
    rng = np.random.default_rng([seed, 0x5AB5])
    values, codes = np.unique(table.y, return_inverse=True)
    if table.classes is not None or values.size == 2:  # classes: stratified
        if values.size > n:
            raise DataError(f"subsample={n} rows cannot hold the {values.size} classes of "
                            "the target", f"use at least {values.size} rows")
        counts = np.bincount(codes)
        share = np.maximum(1, np.floor(counts * n / total)).astype(int)
        for k in np.argsort(-(counts * n / total - share))[: max(0, n - share.sum())]:
            share[k] += 1  # the remainder to the largest fractions
        while share.sum() > n:  # minimum-one shares pushed over: trim the largest
            share[np.argmax(share)] -= 1
        keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(codes == k), s,
                                                  replace=False)
                                       for k, s in enumerate(share)]))
    else:
        keep = np.sort(rng.choice(total, n, replace=False))
    return replace(table, X=table.X[keep], y=table.y[keep],
                   lines=None if table.lines is None else table.lines[keep],
                   notes=[*table.notes, f"used a random {n:,} of {total:,} rows "
                                        f"(subsample={n}, seed {seed})"])


def dataset_from_table(table: Table, *, name: str, test_fraction: float,
                       rng: np.random.Generator, standardize: bool) -> Dataset:
    """Split (and optionally standardise) a loaded table."""
    Xtr, ytr, Xte, yte = train_test_split(table.X, table.y, test_fraction, rng, name)
    ds = Dataset(Xtr, ytr, Xte, yte, list(table.feature_names), table.target_name,
                 name=name, notes=list(table.notes),
                 classes=None if table.classes is None else list(table.classes),
                 columns=None if table.columns is None else list(table.columns))
    # the split made fresh copies: standardised in place
    return ds.standardized(inplace=True) if standardize else ds


# ======================================================================================
# Generators
# ======================================================================================
def _toeplitz_eig(p: int, rho: float) -> tuple[np.ndarray, np.ndarray]:
    j = np.arange(p)
    S = rho ** np.abs(j[:, None] - j[None, :])
    vals, vecs = np.linalg.eigh(S)
    return np.clip(vals, 0.0, None), vecs


def _spectrum(text: str, p: int) -> np.ndarray:
    try:
        values = np.array([float(v) for v in str(text).replace(";", " ").split()])
    except ValueError:
        raise ParameterError(f"spectrum {text!r} must be numbers separated by spaces or ';', "
                             "e.g. '1;3'") from None
    if values.size == 0 or not np.isfinite(values).all() or (values <= 0).any():
        raise ParameterError(f"spectrum {text!r} must list positive eigenvalues, e.g. '1;3'")
    # k values fill p coordinates in k equal blocks: '1;3' gives half 1s, half 3s.
    return np.sort(values[(np.arange(p) * values.size) // p])


_N = ParamSpec("n", "int", 200, label="n (training points)", low=2, high=10_000_000,
               help="number of training points")
_N_TEST = ParamSpec("n_test", "int", 1000, label="test points", low=1, high=10_000_000,
                    help="number of test points, drawn fresh from the same law")
_P = ParamSpec("p", "int", 100, label="p (dimension)", low=1, high=100_000,
               help="number of features")
_F = ParamSpec("f", "str", "sin", label="target f",
               help="sin = sin(1ᵀx/√p) (the CKRR paper's), linear, quadratic, or a formula over "
                    "x1…xp such as 'sin(x1) + x2^2'")
_COV = ParamSpec("cov", "choice", "identity", label="covariance Σ",
                 choices=("identity", "toeplitz", "spectrum"),
                 help="identity; Toeplitz Σ_ij = ρ^|i−j|; or diagonal with the given spectrum")
_RHO = ParamSpec("rho", "float", 0.4, label="ρ", low=-0.999, high=0.999,
                 help="Toeplitz correlation", when={"cov": ("toeplitz",)})
_SPEC = ParamSpec("spectrum", "str", "1;3", label="spectrum",
                  help="eigenvalues of Σ, e.g. '1;3' (half 1, half 3)",
                  when={"cov": ("spectrum",)})


def _noise(default: float) -> ParamSpec:
    return ParamSpec("noise", "float", default, label="noise variance σ²", low=0.0, high=1e6,
                     help="variance of the Gaussian noise added to f")


def _covariance_law(kind: str, params: Mapping[str, Any]) -> InputLaw:
    p = params["p"]
    if params["cov"] == "toeplitz":
        vals, vecs = _toeplitz_eig(p, params["rho"])
        return InputLaw(kind, p, cov_eigvals=vals, cov_eigvecs=vecs)
    if params["cov"] == "spectrum":
        return InputLaw(kind, p, cov_eigvals=_spectrum(params["spectrum"], p))
    return InputLaw(kind, p, cov_eigvals=np.ones(p))


def _gaussian(params: Mapping[str, Any], rng: np.random.Generator) -> SyntheticSource:
    return SyntheticSource(_covariance_law("gaussian", params),
                           make_target(params["f"], params["p"]), params["noise"])


def _bernoulli(params: Mapping[str, Any], rng: np.random.Generator) -> SyntheticSource:
    return SyntheticSource(_covariance_law("bernoulli", params),
                           make_target(params["f"], params["p"]), params["noise"])


def _clusters(params: Mapping[str, Any], rng: np.random.Generator) -> SyntheticSource:
    k, p = params["k"], params["p"]
    weights = params["imbalance"] ** -np.arange(k, dtype=float)
    centers = rng.uniform(-params["separation"], params["separation"], size=(k, p))
    law = InputLaw("clusters", p, centers=centers, weights=weights / weights.sum(),
                   scale=params["spread"])
    return SyntheticSource(law, make_target(params["f"], p), params["noise"])


def _friedman(params: Mapping[str, Any], rng: np.random.Generator) -> SyntheticSource:
    return SyntheticSource(InputLaw("uniform", 10), TargetFunction("friedman", 10),
                           params["noise"])


def _breiman(params: Mapping[str, Any], rng: np.random.Generator) -> SyntheticSource:
    return SyntheticSource(InputLaw("breiman", 10), TargetFunction("breiman", 10),
                           params["noise"])


@dataclass(frozen=True)
class Generator:
    """A named synthetic data generator with declared parameters."""

    name: str
    title: str
    description: str
    params: tuple[ParamSpec, ...]
    build: Callable[[Mapping[str, Any], np.random.Generator], SyntheticSource]


GENERATORS: dict[str, Generator] = {
    g.name: g
    for g in (
        Generator("gaussian", "Gaussian", "x ~ N(0, Σ); y = f(x) + noise (the CKRR paper's model)",
                  (_N, _N_TEST, _P, _COV, _RHO, _SPEC, _F, _noise(0.5)), _gaussian),
        Generator("bernoulli", "Bernoulli", "x = Σ^{1/2} z with z_j = ±1; y = f(x) + noise",
                  (_N, _N_TEST, _P, _COV, _RHO, _SPEC, _F, _noise(0.5)), _bernoulli),
        Generator("clusters", "Imbalanced clusters",
                  "Gaussian clusters whose sizes fall off geometrically: the case where "
                  "leverage-score sampling beats uniform sampling",
                  (replace(_N, default=1000), _N_TEST, replace(_P, default=2),
                   ParamSpec("k", "int", 5, label="clusters", low=1, high=1000),
                   ParamSpec("imbalance", "float", 3.0, low=1.0, high=1e6,
                             help="size ratio of consecutive clusters"),
                   ParamSpec("separation", "float", 5.0, low=0.0, high=1e6,
                             help="centres uniform in [−separation, separation]^p"),
                   ParamSpec("spread", "float", 0.5, low=1e-9, high=1e6,
                             help="standard deviation within a cluster"),
                   replace(_F, default="sin(sum(x))"),
                   _noise(0.01)), _clusters),
        Generator("friedman", "Friedman #1",
                  "x ~ U[0,1]^10; y = 10 sin(π x1 x2) + 20 (x3 − 0.5)² + 10 x4 + 5 x5 + N(0, 1)",
                  (replace(_N, default=2000), _N_TEST, _noise(1.0)), _friedman),
        Generator("breiman", "Breiman (2-D planes)",
                  "x1 = ±1, x2..x10 ∈ {−1, 0, 1}; two linear planes selected by x1, N(0, 2) noise",
                  (replace(_N, default=2000), _N_TEST, _noise(2.0)), _breiman),
    )
}


def generate(name: str, params: Mapping[str, Any] | None = None, *, seed: int = 0) -> Dataset:
    """Draw a synthetic data set.

    Parameters
    ----------
    name : str
        A key of :data:`GENERATORS`.
    params : mapping
        Generator parameters (strings are converted), e.g. ``{"n": 200, "p": 100}``.
    seed : int
        Drives every random choice (structure, training and test draws).
    """
    gen = GENERATORS[name]
    values = resolve_params(gen.params, params, owner=f"the {name} generator")
    rng_structure, rng_train, rng_test = (np.random.default_rng(s)
                                          for s in np.random.SeedSequence(seed).spawn(3))
    source = gen.build(values, rng_structure)
    Xtr, ftr, ytr = source.sample(values["n"], rng_train)
    Xte, fte, yte = source.sample(values["n_test"], rng_test)
    args = ",".join(f"{k}={v}" for k, v in (params or {}).items())
    return Dataset(Xtr, ytr, Xte, yte, [f"x{j + 1}" for j in range(source.law.p)], "y",
                   name=f"{name}:{args}" if args else name, f_train=ftr, f_test=fte,
                   source=source)


# ======================================================================================
# Bundled examples (scikit-learn's data sets ship inside its wheel: no download)
# ======================================================================================
def _sklearn_example(loader_name: str, target: str) -> Callable[[], Table]:
    """``target``: ``"value"`` (regression), ``"pm1"`` (two classes as ±1) or ``"classes"``
    (class codes 0 … K−1 with their names)."""
    def load() -> Table:
        from sklearn import datasets

        bunch = getattr(datasets, loader_name)()
        y = np.asarray(bunch.target, dtype=np.float64)
        if target == "pm1":
            y = 2.0 * y - 1.0
        classes = [str(c) for c in bunch.target_names] if target == "classes" else None
        names = [str(n) for n in bunch.feature_names]
        return Table(np.asarray(bunch.data, dtype=np.float64), y, names, "target",
                     classes=classes)

    return load


def _bundled_example(filename: str) -> Callable[[], Table]:
    """A table shipped in ``kernel_lab/resources/data/``: gzip-compressed CSV, a header
    row of names, the target in the last column (provenance and licence in the README
    there)."""
    def load() -> Table:
        import gzip
        import io
        from importlib import resources

        raw = resources.files("kernel_lab").joinpath("resources", "data", filename).read_bytes()
        header, _, body = gzip.decompress(raw).decode("ascii").partition("\n")
        names = header.strip().split(",")
        M = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.float64, ndmin=2)
        return Table(M[:, :-1], M[:, -1].copy(), names[:-1], names[-1])

    return load


EXAMPLES: dict[str, tuple[str, Callable[[], Table]]] = {
    "diabetes": ("Diabetes progression (442 × 10, regression; scikit-learn)",
                 _sklearn_example("load_diabetes", "value")),
    "breast-cancer": ("Breast cancer Wisconsin (569 × 30, classes ±1; scikit-learn)",
                      _sklearn_example("load_breast_cancer", "pm1")),
    "digits": ("Handwritten digits 8 × 8 (1797 × 64, 10 classes; scikit-learn)",
               _sklearn_example("load_digits", "classes")),
    "communities": ("Communities and crime (1994 × 99, violent crime rate in [0, 1]; "
                    "UCI, CC BY 4.0)", _bundled_example("communities.csv.gz")),
}


# ======================================================================================
# Specifications
# ======================================================================================
FILE_OPTIONS = (
    ParamSpec("target", "str", "", help="target column: header name or 0-based index "
                                        "(default: the last column)"),
    ParamSpec("test_fraction", "float", 0.25, low=0.0, high=0.95,
              help="fraction of rows held out for testing"),
    ParamSpec("standardize", "bool", True, help="scale features to zero mean, unit variance"),
    ParamSpec("drop_nan", "bool", False, help="drop rows with missing or non-finite values "
                                              "instead of stopping with an error"),
    ParamSpec("format", "choice", "auto",
              choices=("auto", "csv", "xlsx", "npy", "npz", "svmlight", "arff", "mat"),
              help="file format (default: from the extension)"),
    ParamSpec("text_features", "choice", "onehot", choices=("onehot", "drop"),
              help="text (category) columns: one 0/1 column per value, or dropped; text "
                   "with more than 50 values or one per row is dropped either way"),
    ParamSpec("keep_index", "bool", False,
              help="keep a first column that is a row index (R's row names, pandas' "
                   "'Unnamed: 0', an id of 1 … n); dropped by default"),
    ParamSpec("sheet", "str", "", help="worksheet of an .xlsx file: name or number "
                                       "(default: the first)"),
    ParamSpec("subsample", "int", 0, low=0,
              help="use this many random rows (seeded; 0: all) — a way to run the exact "
                   "methods on a table too large for them"),
)


def load_data(
    spec: str,
    *,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
) -> Dataset:
    """Build a :class:`Dataset` from a specification (see the module docstring).

    Parameters
    ----------
    spec : str
        File path, bundled example name, or generator, each optionally with
        ``:key=value,…`` options (see :class:`~kernel_lab.core.source.DataSource`).
    seed : int
        Seed of the generator draws or of the train/test split.
    overrides : mapping, optional
        Options that take precedence over those in ``spec`` (e.g. ``target`` from a
        command-line flag).

    Raises
    ------
    DataError
        Unknown source, unreadable or invalid file.
    ParameterError
        Invalid generator or file option.
    """
    from kernel_lab.core.source import DataSource

    return DataSource.from_spec(spec, overrides).load(seed)


def data_sources() -> dict[str, Any]:
    """Examples, generators and file options, for ``kernel-lab list`` and the window."""
    return {
        "examples": {k: v[0] for k, v in EXAMPLES.items()},
        "generators": {g.name: {"title": g.title, "description": g.description,
                                "params": [s.to_dict() for s in g.params]}
                       for g in GENERATORS.values()},
        "file_options": [s.to_dict() for s in FILE_OPTIONS],
    }


__all__ = [
    "EXAMPLES",
    "GENERATORS",
    "DataError",
    "Dataset",
    "InputLaw",
    "KernelLabError",
    "SyntheticSource",
    "TargetFunction",
    "data_sources",
    "generate",
    "load_data",
    "make_target",
    "train_test_split",
]
