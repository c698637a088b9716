"""Synthetic data: named generators with declared parameters (``gaussian``,
``bernoulli``, ``clusters``, ``friedman``, ``breiman``), each a
:class:`~kernel_lab.core.synthetic.SyntheticSource` drawn with a seed.

References
----------
K. Elkhalil et al., "Risk convergence of centered kernel ridge regression with large
dimensional data" (Gaussian/Bernoulli models, target sin(1ᵀx/√p)).
J. H. Friedman, "Multivariate adaptive regression splines", 1991 (friedman).
L. Breiman et al., "Classification and regression trees", 1984 (breiman, 2-D planes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.params import ParamSpec, resolve_params
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.core.rows.mapreduce import RowPlan
from kernel_lab.core.synthetic import InputLaw, SyntheticSource, TargetFunction, make_target


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
    # a given split: the training and the test sample were drawn as such (no keys)
    return Dataset(Xtr, ytr, Xte, yte, [f"x{j + 1}" for j in range(source.law.p)], "y",
                   name=f"{name}:{args}" if args else name, f_train=ftr, f_test=fte,
                   source=source, plan=RowPlan.given(len(ytr) + len(yte), len(yte), seed))
