"""Greedy feature construction (Oglic & Gärtner): cosine-wave features learned from the
labels by greedy functional descent, then a linear ridge model on them.

Algorithm 1 (greedy descent) adds, one at a time, a feature ``φ(x) = cos(wᵀx + b)`` that
best corrects the current estimate f: for fixed θ = (w, b) the amplitudes
``c = (c′, c₀, c″)`` of ``c′ f + c₀ + c″ φ`` solve a 3 × 3 ridge problem on a *training fold*, and θ
minimises the resulting error on the *validation folds* (a profiled, hyper-parameter-style
objective with an analytic gradient, minimised by L-BFGS from the best of a set of random
starting frequencies). Algorithm 2 (GFC) runs M descents on random subsets in parallel,
fits a ridge model on all features built so far (ν by exact leave-one-out), drops
features with negligible amplitude, and repeats for T passes.

Two protocols (``protocol``) decide how a descent uses its folds and when it stops:

``"paper"``
    The paper's: each step fits c on a single fold and tunes θ on all the other folds;
    the step's feature is added, *then* the descent stops if the training error of the
    sample changed by less than the fraction ε,
    ``|E(f_k) − E(f_{k−1})| / max(E(f_k), E(f_{k−1})) < ε``. Once the signal is fitted
    the steps still lower the training error by fitting noise, so in practice the model
    reaches its feature budget — what the paper's comparisons at 100 and 500 features
    need.
``"held-out"`` (the default)
    An addition to the paper: one fold plays no part in choosing θ, and a step is
    accepted only if it also lowers the error on that held-out fold (by more than the
    fraction ε); the descent stops at the first step that does not, or that would raise
    the sample's training error. θ has d + 1 parameters tuned on the validation folds,
    so without this check the later steps construct high-frequency features that fit
    the noise (on Breiman's data: ~90 features of negligible amplitude and a test error
    10 % above the noise floor; with the check: ~10 features, at the floor). The model
    then usually stops short of its budget (on Friedman's data with n = 2000: 27 of 40
    features, 25 of 100), so equal-budget comparisons cannot be made.

In both, the feature budget left by a stopped descent passes to the next pass.

Targets are centred and scaled to unit variance inside :meth:`GreedyFeatureRegressor.fit`,
so λ (descent) and η (pruning) are relative to the spread of y. The paper's bias feature
``w = 0`` appears twice: as the constant c₀ of every descent step (the paper starts from
f₀ = mean(y), which gives the first step an intercept through c′; an explicit constant keeps
that freedom at every step — without it a low-frequency wave, whose mean is not zero, is
found at a distorted frequency) and as the unpenalised intercept of the final ridge.

Reference
---------
D. Oglic and T. Gärtner, "Greedy feature construction", NIPS 2016 (Algorithms 1 and 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from kernel_lab.core.executor import SERIAL
from kernel_lab.core.kernels import median_heuristic
from kernel_lab.core.models.feature_ridge import feature_ridge, ridge_loo
from kernel_lab.core.models.inputs import DaskFront, gathered
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.validation import LAM, Integer, OneOf, Real, check_params, check_seed

#: How a descent uses its folds and when it stops (see the module docstring).
PROTOCOLS = ("held-out", "paper")


def _augment(X: np.ndarray) -> np.ndarray:
    """Inputs with a trailing column of ones, so that θ = (w, b) acts as ``Xa @ θ``."""
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _design(f: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """The step's columns ``[f, 1, φ]``: the current estimate, a constant, the new wave."""
    return np.column_stack([f, np.ones_like(f), phi])


def amplitudes(f: np.ndarray, phi: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """``c = argmin (1/n)‖c′ f + c₀ + c″ φ − y‖² + λ‖c‖²`` (the small ridge of
    Algorithm 1), returned as ``(c′, c₀, c″)``."""
    A = _design(f, phi)
    n = A.shape[0]
    M = A.T @ A / n + lam * np.eye(3)
    return np.linalg.solve(M, A.T @ y / n)


def profiled_objective(theta: np.ndarray, train: tuple[np.ndarray, np.ndarray, np.ndarray],
                       valid: tuple[np.ndarray, np.ndarray, np.ndarray], lam: float
                       ) -> tuple[float, np.ndarray]:
    """Validation error of the step ``c′ f + c₀ + c″ cos(wᵀx + b)`` with c fitted on the
    training fold, and its gradient in θ = (w, b).

    ``train`` and ``valid`` are ``(Xa, f, y)`` with augmented inputs. With
    ``A = [f, 1, φ]``, ``M = AᵀA/n_t + λI`` and ``c = M⁻¹Aᵀy/n_t``, implicit
    differentiation gives ``dc = M⁻¹(dAᵀρ − AᵀdA c)/n_t`` (ρ the training residual); only
    the φ column of A depends on θ, with ``dφ = −sin(Xa θ) ⊙ (Xa dθ)``.
    """
    Xt, ft, yt = train
    Xv, fv, yv = valid
    nt, nv = Xt.shape[0], Xv.shape[0]
    zt, zv = Xt @ theta, Xv @ theta
    At = _design(ft, np.cos(zt))
    Av = _design(fv, np.cos(zv))
    M = At.T @ At / nt + lam * np.eye(3)
    c = np.linalg.solve(M, At.T @ yt / nt)
    rho = yt - At @ c
    ev = Av @ c - yv
    value = float(ev @ ev / nv)
    u = np.linalg.solve(M, 2.0 / nv * (Av.T @ ev))
    vt = (u[2] * rho - c[2] * (At @ u)) / nt
    grad = -(Xt.T @ (np.sin(zt) * vt)) - Xv.T @ (np.sin(zv) * (2.0 * c[2] / nv * ev))
    return value, grad


def profiled_objective_batch(Theta: np.ndarray, train: tuple[np.ndarray, np.ndarray, np.ndarray],
                             valid: tuple[np.ndarray, np.ndarray, np.ndarray], lam: float
                             ) -> np.ndarray:
    """:func:`profiled_objective` (values only) for the K columns of ``Theta``, vectorised:
    K stacked 3 × 3 systems."""
    Xt, ft, yt = train
    Xv, fv, yv = valid
    nt, K = Xt.shape[0], Theta.shape[1]
    Pt = np.cos(Xt @ Theta)
    M = np.empty((K, 3, 3))
    M[:, 0, 0] = ft @ ft / nt + lam
    M[:, 0, 1] = M[:, 1, 0] = ft.mean()
    M[:, 1, 1] = 1.0 + lam
    M[:, 0, 2] = M[:, 2, 0] = ft @ Pt / nt
    M[:, 1, 2] = M[:, 2, 1] = Pt.mean(axis=0)
    M[:, 2, 2] = np.einsum("ij,ij->j", Pt, Pt) / nt + lam
    r = np.empty((K, 3))
    r[:, 0] = ft @ yt / nt
    r[:, 1] = yt.mean()
    r[:, 2] = yt @ Pt / nt
    c = np.linalg.solve(M, r[:, :, None])[:, :, 0]
    E = np.cos(Xv @ Theta) * c[:, 2] + np.outer(fv, c[:, 0]) + c[:, 1] - yv[:, None]
    return np.einsum("ij,ij->j", E, E) / Xv.shape[0]


@dataclass(frozen=True)
class DescentSettings:
    """Parameters of one greedy descent (Algorithm 1).

    Attributes
    ----------
    max_steps : int
        Features to add at most (p).
    lam : float
        Ridge λ on the amplitudes c (relative to unit-variance targets).
    eps : float
        Precision ε. ``"paper"``: stop after the step that changes the training error by
        less than the fraction ε (see :func:`relative_change`). ``"held-out"``: stop when
        a step improves the error on the held-out fold by less than the fraction ε
        (without a held-out fold: the paper's rule).
    n_folds : int
        The sample is split into this many folds; each step fits c on one fold (the
        paper's "single fold as the training sample") and tunes θ on the others (the
        paper's "batch of folds as the validation sample") — ``"held-out"``: on all but
        one of the others, and accepts the step only if it also helps on that last,
        held-out fold. The roles rotate from step to step.
    restarts : int
        L-BFGS runs per step, started from the best random candidates.
    candidates : int
        Random starting frequencies screened per step.
    max_iter : int
        L-BFGS iterations per restart.
    sigma : float
        Reference bandwidth: starting frequencies are ``N(0, I) · κ/σ`` with κ
        log-uniform in [1/10, 10], a broad spectral measure; phases ``U[0, 2π)``.
    protocol : {"held-out", "paper"}
        How the folds are used and when the descent stops (see the module docstring).
    """

    max_steps: int
    lam: float = 1e-3
    eps: float = 1e-4
    n_folds: int = 5
    restarts: int = 3
    candidates: int = 256
    max_iter: int = 50
    sigma: float = 1.0
    protocol: str = "held-out"


def relative_change(old: float, new: float) -> float:
    """``|new − old| / max(new, old)`` (0 when both are 0): the quantity the paper's
    stopping rule compares with ε."""
    top = max(old, new)
    return abs(new - old) / top if top > 0 else 0.0


def _starts(d: int, settings: DescentSettings, rng: np.random.Generator) -> np.ndarray:
    K = settings.candidates
    kappa = np.exp(rng.uniform(math.log(0.1), math.log(10.0), K))
    W = rng.standard_normal((d, K)) * (kappa / settings.sigma)
    return np.vstack([W, rng.uniform(0.0, 2.0 * math.pi, K)])


def greedy_descent(X: np.ndarray, y: np.ndarray, f0: np.ndarray, settings: DescentSettings,
                   rng: np.random.Generator, rows: np.ndarray | None = None,
                   seed: int | None = None) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Algorithm 1 on the sample (X, y) with initial estimates ``f0``.

    The folds are a keyed choice of rows (:mod:`kernel_lab.core.rows.keys`, stream
    ``GFC_FOLDS``): the sample's rows in the order of their keys for ``seed`` (default: a
    draw from ``rng``) and their global indices ``rows`` (default: positions), cut into
    ``settings.n_folds`` folds — the same folds for the same rows wherever they are held.
    ``rng`` draws the random starting frequencies.

    Each step refits the amplitudes on the whole sample. ``"paper"``: every step is added,
    then the relative-ε rule may stop the descent. ``"held-out"``: a step that does not
    help on the held-out fold, or would increase the sample's training error, is rejected
    and ends the descent.

    Returns
    -------
    thetas : ndarray, shape (k, d + 1)
        The k ≤ max_steps constructed features ``(w, b)``.
    f : ndarray, shape (n,)
        The final estimates on the sample.
    errors : list of float
        Training mean squared error before the first step and after each added step.
    """
    n, d = X.shape
    Xa = _augment(X)
    paper = settings.protocol == "paper"
    f = np.asarray(f0, dtype=np.float64).copy()
    errors = [float(np.mean((y - f) ** 2))]
    thetas: list[np.ndarray] = []
    index = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)
    perm = rowkeys.order(int(rng.integers(2**31)) if seed is None else seed,
                         rowkeys.GFC_FOLDS, index)  # the folds: consecutive runs of it
    folds = (np.array_split(perm, settings.n_folds) if n >= 2 * settings.n_folds
             else [perm])
    for step in range(settings.max_steps):
        tr, va, ho = _split(folds, step, perm, held_out=not paper)
        best_theta = step_search((Xa[tr], f[tr], y[tr]), (Xa[va], f[va], y[va]),
                                 settings, rng)
        if best_theta is None:
            break
        phi = np.cos(Xa @ best_theta)
        if ho is not None:
            # Held-out check: θ was tuned on the training and validation folds, so only
            # the held-out fold can tell a real improvement from a fit to noise.
            fit = np.setdiff1d(perm, ho, assume_unique=True)
            c = amplitudes(f[fit], phi[fit], y[fit], settings.lam)
            before = float(np.mean((y[ho] - f[ho]) ** 2))
            after = float(np.mean((y[ho] - _design(f[ho], phi[ho]) @ c) ** 2))
            if not before - after > settings.eps * before:
                break
        c = amplitudes(f, phi, y, settings.lam)
        f_new = _design(f, phi) @ c
        e_new = float(np.mean((y - f_new) ** 2))
        e_old = errors[-1]
        if not paper and not e_new <= e_old:
            break  # the step would not improve the fit of the sample: stop here
        thetas.append(best_theta)
        errors.append(e_new)
        f = f_new
        if ho is None and relative_change(e_old, e_new) < settings.eps:
            break  # the paper's rule, checked after the step's feature was added
    T = np.array(thetas).reshape(len(thetas), d + 1)
    return T, f, errors


def step_search(train: tuple[np.ndarray, np.ndarray, np.ndarray],
                valid: tuple[np.ndarray, np.ndarray, np.ndarray], settings: DescentSettings,
                rng: np.random.Generator) -> np.ndarray | None:
    """θ = (w, b) of one descent step: the profiled objective is screened at
    ``settings.candidates`` random starts and L-BFGS runs from the ``restarts`` best;
    the lowest finite optimum is returned (None if there is none)."""
    d = train[0].shape[1] - 1
    starts = _starts(d, settings, rng)
    scores = profiled_objective_batch(starts, train, valid, settings.lam)
    best_theta, best_value = None, math.inf
    for j in np.argsort(scores)[: settings.restarts]:
        res = minimize(profiled_objective, starts[:, j], args=(train, valid, settings.lam),
                       jac=True, method="L-BFGS-B", options={"maxiter": settings.max_iter})
        value = float(res.fun) if np.isfinite(res.fun) else math.inf
        if value < best_value and np.all(np.isfinite(res.x)):
            best_theta, best_value = res.x, value
    return best_theta


def _split(folds: list[np.ndarray], step: int, perm: np.ndarray, held_out: bool = True
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Training fold, validation folds and held-out fold of a step (rotating with the
    step). Without ``held_out`` (the paper's protocol) every fold but the training fold
    validates. When there are too few folds for the roles (three with a held-out fold,
    two without) all roles fall on the whole sample and there is no held-out fold."""
    k = len(folds)
    if k < (3 if held_out else 2):
        return perm, perm, None
    t = step % k
    h = (step + 1) % k if held_out else -1
    va = np.concatenate([folds[j] for j in range(k) if j not in (t, h)])
    return folds[t], va, (folds[h] if held_out else None)


def descent_rows(seed: int, rows: np.ndarray, size: int) -> np.ndarray:
    """Positions (sorted) of a descent's ``size`` rows among ``rows`` (global indices):
    those with the smallest keys of stream ``GFC_SUBSET`` for the descent's ``seed``."""
    return np.sort(rowkeys.smallest(rowkeys.keys(seed, rowkeys.GFC_SUBSET, rows), rows, size))


@dataclass(frozen=True)
class DescentTask:
    """One greedy descent of a GFC pass; picklable, with its own seed (its starting
    frequencies) and the keys of its rows (their global indices ``rows`` and the seed
    ``key_seed`` of its folds)."""

    X: np.ndarray
    y: np.ndarray
    f: np.ndarray
    settings: DescentSettings
    seed: np.random.SeedSequence
    rows: np.ndarray | None = None
    key_seed: int | None = None


def run_descent(task: DescentTask) -> np.ndarray:
    """The features (rows ``(w, b)``) that one descent constructs."""
    thetas, _, _ = greedy_descent(task.X, task.y, task.f, task.settings,
                                  np.random.default_rng(task.seed), task.rows, task.key_seed)
    return thetas


class GreedyFeatureRegressor(DaskFront, RegressorMixin, BaseEstimator):
    """Greedy feature construction (GFC) with cosine waves, then ridge regression.

    Parameters
    ----------
    n_features : int
        Features to construct at most (the bias is the intercept and not counted).
    n_passes : int
        Passes T over the data; each ends with a ridge fit and pruning.
    n_descents : int
        Greedy descents M per pass, on independent random subsets (run through
        ``executor``).
    max_steps : int or None
        Steps p per descent; None spreads the remaining budget over the remaining passes.
    subset_size : int or None
        Points per descent; None = min(n, 5000).
    lam : float
        Descent ridge λ on the amplitudes (targets scaled to unit variance).
    nu : float or None
        Final ridge ν; None = chosen by exact leave-one-out after every pass.
    eps : float
        Precision ε of a descent's stopping rule (see ``protocol``).
    eta : float
        Features with |amplitude| < η (in units of the target's standard deviation) are
        removed after each pass.
    n_folds, restarts, candidates, max_iter
        See :class:`DescentSettings`.
    protocol : {"held-out", "paper"}
        ``"paper"``: the paper's use of the folds and its relative-ε stopping rule on the
        training error (the model reaches ``n_features`` unless the rule fires or the
        cut-off η prunes); ``"held-out"``: every step must also help on a held-out fold
        (stops early once the residual is noise). See the module docstring.
    bandwidth : float or None
        Reference length scale of the random starting frequencies; None = median
        pairwise distance of the inputs.
    callback : callable or None
        ``callback(info)`` after each pass; ``info`` has ``pass``, ``n_features``,
        ``train_rmse``, ``nu``, ``loo_rmse`` (target units), ``short_descents`` (descents
        of the pass that stopped before their quota of steps), ``pruned`` (features the
        cut-off η removed) and ``model`` (self, usable for ``predict``).
    executor : object with ``map(fn, tasks)`` or None
        Runs the descents of a pass (None: one after the other, with one BLAS thread, as
        on every executor). Each descent has its own seed, so the model does not depend
        on the executor.
    random_state : int, RandomState, Generator or None

    Attributes
    ----------
    frequencies_ : ndarray, shape (k, p)
        The learned w (one row per feature).
    phases_ : ndarray, shape (k,)
    coef_ : ndarray, shape (k,)
        Amplitudes a (target units).
    intercept_ : float
    nu_ : float
    n_features_out_ : int
    n_iter_ : int
        Passes run.
    history_ : list of dict
        The callback information of every pass (without ``model``).
    """

    _parameter_checks: ClassVar = {
        "n_features": Integer(), "n_passes": Integer(), "n_descents": Integer(),
        "max_steps": Integer(optional=True), "subset_size": Integer(2, optional=True),
        "lam": LAM, "nu": Real(optional=True, label="the ridge ν (nu)"),
        "eps": Real(strict=False), "eta": Real(strict=False), "n_folds": Integer(2),
        "restarts": Integer(), "candidates": Integer(), "max_iter": Integer(),
        "bandwidth": Real(optional=True), "protocol": OneOf(PROTOCOLS),
    }

    def __init__(self, n_features: int = 100, *, n_passes: int = 10, n_descents: int = 4,
                 max_steps: int | None = None, subset_size: int | None = None,
                 lam: float = 1e-3, nu: float | None = None, eps: float = 1e-4,
                 eta: float = 1e-4, n_folds: int = 5, restarts: int = 3,
                 candidates: int = 256, max_iter: int = 50, bandwidth: float | None = None,
                 protocol: str = "held-out",
                 callback: Callable[[dict[str, Any]], Any] | None = None,
                 executor: Any = None, random_state: Any = None) -> None:
        self.n_features = n_features
        self.n_passes = n_passes
        self.n_descents = n_descents
        self.max_steps = max_steps
        self.subset_size = subset_size
        self.lam = lam
        self.nu = nu
        self.eps = eps
        self.eta = eta
        self.n_folds = n_folds
        self.restarts = restarts
        self.candidates = candidates
        self.max_iter = max_iter
        self.bandwidth = bandwidth
        self.protocol = protocol
        self.callback = callback
        self.executor = executor
        self.random_state = random_state

    @staticmethod
    def _settings(p: dict[str, Any], X: np.ndarray, rows: np.ndarray) -> DescentSettings:
        """The descent settings from the checked parameters ``p``; the reference
        bandwidth is the median heuristic (keyed on the rows' global indices ``rows``, seed
        0) unless given (1 when all inputs are equal)."""
        sigma = p["bandwidth"] if p["bandwidth"] is not None else median_heuristic(X, rows=rows)
        return DescentSettings(
            max_steps=1, lam=p["lam"], eps=p["eps"], n_folds=p["n_folds"],
            restarts=p["restarts"], candidates=max(p["candidates"], p["restarts"]),
            max_iter=p["max_iter"], sigma=float(sigma), protocol=p["protocol"])

    def fit(self, X: Any, y: Any, rows: Any = None) -> GreedyFeatureRegressor:
        """Fit all passes (see :meth:`fit_passes` for ``rows``)."""
        for _ in self.fit_passes(X, y, rows):
            pass
        return self

    def fit_passes(self, X: Any, y: Any, rows: Any = None) -> Iterator[dict[str, Any]]:
        """Fit pass by pass: yields the pass information (as given to ``callback``) after
        every pass, with the model usable for ``predict`` at that point. Stopping the
        iteration early leaves the model of the last finished pass.

        ``rows``: the global indices of X's rows in the data set they come from (default:
        their positions). Every random choice of rows — each descent's subset, its folds,
        the bandwidth's sample — is keyed on them (:mod:`kernel_lab.core.rows.keys`), so
        the same rows give the same model wherever they are held.

        The passes read every row many times: a Dask array or dataframe is gathered into
        this process when it fits in the memory budget, and refused by name
        (:class:`~kernel_lab.core.errors.MemoryBudgetError`) when it does not
        (:mod:`~kernel_lab.core.models.inputs`)."""
        X, y = gathered(self, X, y)
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        m, p = X.shape
        index = np.arange(m) if rows is None else np.asarray(rows, dtype=np.int64)
        if index.shape != (m,):
            raise ValueError(f"rows has shape {index.shape}; X has {m} rows")
        checked = check_params(self)
        budget, passes = checked["n_features"], checked["n_passes"]
        M, max_steps, eta = checked["n_descents"], checked["max_steps"], checked["eta"]
        subset = min(m, 5000 if checked["subset_size"] is None else checked["subset_size"])
        base = self._settings(checked, X, index)
        run = (self.executor or SERIAL).map

        self.y_mean_ = float(y.mean())
        scale = float(y.std())
        self.y_scale_ = scale if scale > 0 else 1.0
        ys = (y - self.y_mean_) / self.y_scale_
        Xa = _augment(X)
        pass_seeds = np.random.SeedSequence(check_seed(self.random_state)).spawn(passes)

        thetas = np.empty((0, p + 1))
        coef, intercept, nu = np.empty(0), 0.0, float(self.nu or 1.0)
        f = np.zeros(m)
        self.history_: list[dict[str, Any]] = []
        self.n_iter_ = 0
        for t in range(passes):
            self.n_iter_ = t + 1
            remaining = budget - thetas.shape[0]
            steps = self._pass_steps(remaining, passes - t, M, max_steps)
            seeds = pass_seeds[t].spawn(M + 1)
            tasks = []
            for j, k in enumerate(steps):
                if k == 0:
                    continue
                key_seed = check_seed(seeds[j + 1])
                S = descent_rows(key_seed, index, subset)
                tasks.append(DescentTask(X[S], ys[S], f[S], replace(base, max_steps=k),
                                         seeds[j + 1], index[S], key_seed))
            built = list(run(run_descent, tasks))
            short = sum(T.shape[0] < task.settings.max_steps
                        for T, task in zip(built, tasks, strict=True))
            new = [T for T in built if T.shape[0]]
            if new:
                thetas = np.vstack([thetas, *new])[:budget]
            if thetas.shape[0] == 0:
                break  # nothing could be constructed (e.g. constant targets)
            Phi = np.cos(Xa @ thetas.T)
            coef, intercept, nu, loo = self._ridge(Phi, ys)
            keep = np.abs(coef) >= eta
            pruned = int(keep.size - keep.sum())
            if pruned:
                thetas, Phi = thetas[keep], Phi[:, keep]
                if thetas.shape[0] == 0:
                    coef, intercept = np.empty(0), 0.0
                    m_ = len(ys)  # leave-one-out of the mean alone: residuals grow by m/(m − 1)
                    loo = float(np.mean((ys - ys.mean()) ** 2)) * (m_ / max(m_ - 1, 1)) ** 2
                elif loo is not None:  # refit at the same ν; the LOO error of the kept model
                    coef, intercept, nu, loo = ridge_loo(Phi, ys, np.array([nu]), refine=False)
                else:
                    coef, intercept = feature_ridge(Phi, ys, nu)
            f = Phi @ coef + intercept
            self._store(thetas, coef, intercept, nu, p)
            info = {"pass": t + 1, "n_features": int(thetas.shape[0]),
                    "train_rmse": float(np.sqrt(np.mean((ys - f) ** 2))) * self.y_scale_,
                    "nu": nu, "loo_rmse": math.sqrt(loo) * self.y_scale_
                    if loo is not None else float("nan"), "short_descents": int(short),
                    "pruned": pruned}
            self.history_.append(info)
            if self.callback is not None:
                self.callback({**info, "model": self})
            yield {**info, "model": self}
        self._store(thetas, coef, intercept, nu, p)

    @staticmethod
    def _pass_steps(remaining: int, passes_left: int, M: int,
                    max_steps: int | None) -> list[int]:
        """Steps per descent in this pass: the remaining budget spread over the passes
        left (so that features lost to early stopping or pruning are made up later)."""
        if remaining <= 0:
            return [0] * M
        quota = math.ceil(remaining / passes_left)
        per = math.ceil(quota / M)
        if max_steps is not None:
            per = min(per, max_steps)
        return [max(0, min(per, quota - j * per)) for j in range(M)]

    def _ridge(self, Phi: np.ndarray, ys: np.ndarray
               ) -> tuple[np.ndarray, float, float, float | None]:
        if self.nu is None:
            return ridge_loo(Phi, ys)
        coef, intercept = feature_ridge(Phi, ys, float(self.nu))
        return coef, intercept, float(self.nu), None

    def _store(self, thetas: np.ndarray, coef: np.ndarray, intercept: float, nu: float,
               p: int) -> None:
        self.frequencies_ = thetas[:, :p].copy()
        self.phases_ = thetas[:, p].copy()
        self.coef_ = coef * self.y_scale_
        self.intercept_ = intercept * self.y_scale_ + self.y_mean_
        self.nu_ = nu
        self.n_features_out_ = int(thetas.shape[0])

    def features(self, X: Any) -> np.ndarray:
        """The learned features ``cos(X wᵀ + b)``, shape (n, k) (a method of its own, not
        ``transform``, so that scikit-learn treats the model as a pure regressor)."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        Z = X @ self.frequencies_.T
        Z += self.phases_
        return np.cos(Z, out=Z)

    def predict(self, X: Any) -> np.ndarray:
        return self.features(X) @ self.coef_ + self.intercept_
