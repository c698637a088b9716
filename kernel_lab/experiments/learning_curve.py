"""Experiment ``learning-curve``: doubly stochastic gradients against random features and
Nyström landmarks fitted with the same loss, and the exact minimiser of DSG's objective;
test error against the number of features, and the convergence to that minimiser."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg

from kernel_lab.core.dataset import Dataset
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel, resolve_bandwidth
from kernel_lab.core.losses import CLASSIFICATION_LOSSES, MULTICLASS_LOSSES, REGRESSION_LOSSES
from kernel_lab.core.models import DSGClassifier, DSGRegressor, NystromFeatures
from kernel_lab.core.models.dsg import PredictionSums as _TestSums
from kernel_lab.core.models.dsg import checkpoints
from kernel_lab.core.models.regularised import (
    SOLVABLE_LOSSES,
    fit_regularised,
    kernel_feature_map,
    objective,
)
from kernel_lab.core.models.rff import RandomFourierFeatures, cos_features
from kernel_lab.core.models.streaming import (
    BLOCK_BYTES,
    NormalSums,
    accumulate,
)
from kernel_lab.core.params import ParamSpec
from kernel_lab.core.parts.normal import fit_first_features, fit_first_landmarks
from kernel_lab.core.progress import Progress
from kernel_lab.core.validation import check_seed
from kernel_lab.experiments.base import SERIAL, Experiment, PartialResult, PlotSpec, TaskExecutor
from kernel_lab.experiments.learning_curve_summary import summarise
from kernel_lab.experiments.plotspec import Curve

#: Above this many multiply-adds (n² D) the RFF baseline stops short of DSG's final
#: feature count (about 10 s on two cores).
RFF_GRAM_BUDGET = 2e11
#: The same for the baselines' n × D features with D ≤ n (n D² for ΦᵀΦ): each of the two
#: baselines takes about 10 s at most.
PRIMAL_BUDGET = 2e11
#: Above this size of the n × D features, the squared-loss baselines are fitted from ΦᵀΦ
#: and Φᵀy accumulated over row blocks (never the n × D matrix), and the other losses
#: get fewer features, so that the n × D matrix stays within it.
DENSE_BYTES = 2**28
#: At most this many test points are predicted; a larger test set is subsampled (seeded,
#: and the results say so).
TEST_CAP = 20_000


#: ``n_iter`` = auto: this many passes over the training points (AUTO_EPOCHS · n / batch
#: size iterations), at least :data:`AUTO_ITER_MIN` and at most :data:`AUTO_ITER_MAX`. DSG's
#: cost grows as the square of the iterations (iteration t evaluates its batch on all t
#: blocks of features so far), so a small table gets a short run: 282 iterations on the
#: 225 training rows of a 300-row table, about 8 % of the work of the 1,000 a table of
#: 800 training rows or more gets.
AUTO_EPOCHS = 40
#: The fewest iterations ``auto`` gives: enough for two decades of curve points.
AUTO_ITER_MIN = 200
#: The most iterations ``auto`` gives (the default before it scaled with the data).
AUTO_ITER_MAX = 1000


def auto_iterations(n: int, batch_size: int) -> int:
    """DSG's iterations when ``n_iter`` is auto: :data:`AUTO_EPOCHS` passes over ``n``
    training points in batches of ``batch_size``, within [:data:`AUTO_ITER_MIN`,
    :data:`AUTO_ITER_MAX`]."""
    passes = math.ceil(AUTO_EPOCHS * max(int(n), 1) / max(int(batch_size), 1))
    return int(min(max(passes, AUTO_ITER_MIN), AUTO_ITER_MAX))


def _iterations(params: Mapping[str, Any], n: int) -> int:
    """The run's iterations: ``n_iter``, or :func:`auto_iterations` when it is auto."""
    given = params.get("n_iter")
    return int(given) if given is not None else auto_iterations(n, params.get("batch_size",
                                                                                32))


def _auto_note(n: int, batch_size: int, n_iter: int) -> str:
    """How ``n_iter`` = auto chose ``n_iter`` for ``n`` training points."""
    bound = (f" (at least {AUTO_ITER_MIN})" if n_iter == AUTO_ITER_MIN else
             f" (at most {AUTO_ITER_MAX})" if n_iter == AUTO_ITER_MAX else "")
    return (f"iterations auto: {AUTO_EPOCHS} passes over {n:,} training points in batches of "
            f"{batch_size} → {n_iter:,}{bound}; set iterations (n_iter) for a longer run")


def _loss_for(name: str, task: str) -> str:
    """The loss DSG uses: ``auto`` resolved, checked against the task."""
    if name == "auto":
        return {"regression": "squared", "classification": "logistic"}.get(task, "multinomial")
    if task == "multiclass" and name in ("logistic", "multinomial"):
        return "multinomial"
    fits = {"regression": REGRESSION_LOSSES,
            "classification": (*CLASSIFICATION_LOSSES, *MULTICLASS_LOSSES),
            "multiclass": MULTICLASS_LOSSES}[task]
    if name not in fits:
        raise ParameterError(f"the loss {name!r} does not fit these {task} data; "
                             "choose loss=auto")
    return name


def _rff_cap(requested: int | None, final: int, n: int, squared: bool = True) -> int:
    """Baseline features: as requested, or (auto) up to DSG's final count while the n × D
    features cost at most :data:`PRIMAL_BUDGET` (n D²), or, beyond n features, the n × n
    Gram accumulation at most :data:`RFF_GRAM_BUDGET`; for losses other than the squared,
    also while the n × D features fit in :data:`DENSE_BYTES`."""
    if requested is not None:
        return int(requested)
    n = max(n, 1)
    primal = min(n, math.sqrt(PRIMAL_BUDGET / n))
    if not squared:
        primal = min(primal, max(DENSE_BYTES / (8.0 * n), 1.0))
    return int(min(final, max(primal, RFF_GRAM_BUDGET / n**2)))


def _streams(n: int, D: int, loss: str) -> bool:
    """Whether the baselines with D features on n points are fitted from sums over row
    blocks (:mod:`kernel_lab.core.models.streaming`) rather than from the n × D matrix."""
    return loss == "squared" and 0 < D <= n and 8.0 * n * D > DENSE_BYTES


def _test_subset(Xt: np.ndarray, yt: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray,
                                                                      str | None]:
    """At most :data:`TEST_CAP` test points, a seeded random subset (with a note), so that
    predicting DSG's growing sum of cosines stays affordable on a huge test set."""
    m = Xt.shape[0]
    if m <= TEST_CAP:
        return Xt, yt, None
    keep = np.sort(np.random.default_rng([seed, 0x7E57]).choice(m, TEST_CAP, replace=False))
    return Xt[keep], yt[keep], (f"test error on a random {TEST_CAP:,} of the {m:,} test "
                                "points (seeded)")


class _Costs:
    """Multiply-adds of each stage of a run, so that the progress bar and the time
    estimate move with the real work: the floor, the streamed baselines, then per curve
    point DSG's iterations (iteration i evaluates B points on i·r features), its test
    predictions and the baselines at that point."""

    def __init__(self, params: Mapping[str, Any], n: int, p: int, m: int, pts: np.ndarray,
                 cap: int, loss: str, exact: bool) -> None:
        B, r = params.get("batch_size", 32), params.get("features_per_iter", 16)
        # a cosine or an exponential takes about as long as 200 multiply-adds of a matrix
        # product (measured on the baselines' stages: 3e8 cosines ≈ 1.2e11 in syrk)
        q = p + 200
        sizes = [int(t * r) for t in pts if t * r <= cap]
        self.D_max = min(max(sizes, default=0), n)
        self.exact = exact
        self.streamed = _streams(n, self.D_max, loss)
        self.floor = (2.0 * n**3 + n * n * q) if exact else 0.0
        D = self.D_max
        # streamed: the RFF sums, the landmarks' sampler, the Nyström sums (with the test
        # features of each)
        self.parts = ((n * D * (q + D) + m * D * q, n * D * (q + D), n * D * (q + D) + m * D * q)
                      if self.streamed else (0.0, 0.0, 0.0))
        self.start = self.floor + sum(self.parts)
        steps, prev_t, prev_D = [], 0, 0
        for t in pts:
            t, D = int(t), int(t * r)
            cost = (B * r * q * (t * t - prev_t * prev_t) / 2 + 5e6 * (t - prev_t)
                    + m * r * (t - prev_t) * q)  # DSG's new iterations, on the test points
            if self.streamed:
                cost += (2 * D**3 / 3 + 2 * m * D) if D <= self.D_max else 0.0
            elif D <= cap and loss in SOLVABLE_LOSSES:
                if D <= n:  # both baselines on n × D features (and the landmarks' sampler)
                    cost += 2 * (n * D * q + n * D * D + D**3 / 3) + n * D * D
                else:  # the RFF Gram matrix grows by D − D_prev features; one n × n solve
                    cost += n * n * (D - prev_D) + n**3 / 3
            steps.append(cost)
            prev_t, prev_D = t, D
        self.steps = np.cumsum(steps)
        self.total = self.start + float(self.steps[-1] if len(steps) else 0.0)

    def before(self, k: int) -> float:
        """The cost done when curve point k starts (k = number of points done)."""
        return self.start + (float(self.steps[k - 1]) if k > 0 else 0.0)

    def fraction(self, cost: float) -> float:
        return min(cost / self.total, 1.0) if self.total > 0 else 0.0


class CurveTargets:
    """The data's targets as DSG fits them, and the test error of predicted scores.

    Two classes with the multinomial (softmax) loss get class codes, as DSG's classifier
    makes them from its sorted classes: 0 for the lower label (−1), 1 for the upper (+1);
    the floor and the baselines fit those codes (:meth:`codes`), and the error compares
    argmaxes. Built from the targets in memory (:meth:`of`), or from what a pass over
    partitions found (the upper label ``top``, the number of classes, the mean ``shift``)."""

    #: In memory (:meth:`of`): the training targets the references fit, and DSG's.
    fit: np.ndarray
    dsg_fit: np.ndarray

    def __init__(self, task: str, loss: str, yt: np.ndarray, *, top: float | None = None,
                 n_classes: int | None = None, shift: float = 0.0) -> None:
        self.task = task
        self.top = top
        self.n_classes = 2 if task == "classification" and loss in MULTICLASS_LOSSES else (
            n_classes if task == "multiclass" else None)
        self.shift = shift if task == "regression" else 0.0
        self.test = yt if task in ("regression", "multiclass") else self.codes(yt)

    @classmethod
    def of(cls, task: str, y: np.ndarray, yt: np.ndarray, loss: str) -> CurveTargets:
        """The targets of training targets ``y`` and test targets ``yt`` in memory."""
        top, n_classes, shift = None, None, 0.0
        if task == "classification":
            top = float(np.unique(np.concatenate([y, yt]))[-1])
        elif task == "multiclass":
            n_classes = int(max(y.max(), yt.max())) + 1
            missing_class(np.unique(y), n_classes)
        else:
            shift = float(np.mean(y))
        targets = cls(task, loss, yt, top=top, n_classes=n_classes, shift=shift)
        targets.fit = targets.codes(y)
        targets.dsg_fit = y
        return targets

    def codes(self, y: np.ndarray) -> np.ndarray:
        """Training targets as the floor and the baselines fit them: ±1 (or codes 0, 1
        under the softmax loss) for two classes, codes 0 … K−1 for more, y − shift in
        regression."""
        if self.task == "classification":
            return np.where(y == self.top, 1.0, 0.0 if self.n_classes else -1.0)
        if self.task == "multiclass":
            return y
        return y - self.shift

    def scores(self, model: Any, raw: np.ndarray) -> np.ndarray:
        """DSG's scores on the scale of ``fit``, from its raw sum f (see
        :class:`_TestSums`)."""
        if self.task == "regression":
            return raw + model.offset_ - self.shift
        return raw

    def error(self, scores: np.ndarray) -> float:
        """Misclassification rate, or mean squared error of the predictions."""
        if self.n_classes:  # one score per class (the softmax loss), codes as targets
            return float(np.mean(np.argmax(scores, axis=1) != self.test))
        if self.task == "classification":
            return float(np.mean(np.where(scores >= 0, 1.0, -1.0) != self.test))
        return float(np.mean((scores + self.shift - self.test) ** 2))


def floor_words(task: str, loss: str, n: int, exact_max: int) -> dict[str, str]:
    """The summaries that say what the error is and why there is no exact floor, if none:
    the floor needs a solvable loss and n ≤ ``exact_max`` (an n × n kernel matrix)."""
    words = {"error_measure": ("test MSE" if task == "regression"  # the plots' y axis
                               else "misclassified (fraction of test points)")}
    solvable = loss in SOLVABLE_LOSSES
    if not solvable:
        words["floor_note"] = (f"no exact floor for the {loss} loss (solvable: "
                               f"{', '.join(SOLVABLE_LOSSES)})")
    if not (solvable and n <= exact_max):  # why the convergence plot is empty
        words["floor_missing"] = "No exact floor in this run, nothing to converge to: " + (
            words["floor_note"] if not solvable else
            f"n = {n:,} training rows is above exact_max = {exact_max:,} "
            "(raise it for the floor: an n × n kernel matrix and its solve).")
    return words


def missing_class(found: np.ndarray, n_classes: int) -> None:
    """Refuse training targets ``found`` (the codes seen) that miss one of the classes
    0 … n_classes − 1."""
    missing = np.setdiff1d(np.arange(n_classes), found)
    if missing.size:
        raise ParameterError(f"class {int(missing[0])} has no training point; use a "
                             "smaller test fraction or another seed")


@dataclass(frozen=True)
class CurveFit:
    test_scores: np.ndarray
    objective: float


def fit_primal(F: np.ndarray, Ft: np.ndarray, y: np.ndarray, loss: str, nu: float,
                n_classes: int | None) -> CurveFit:
    fit = fit_regularised(F, y, loss, nu, n_classes=n_classes)
    return CurveFit(Ft @ fit.w, fit.objective)


def fit_gram(G: np.ndarray, Gt: np.ndarray, y: np.ndarray, loss: str, nu: float,
              n_classes: int | None) -> CurveFit:
    """Minimiser over the RKHS of the kernel with Gram matrix G (test block Gt)."""
    n = G.shape[0]
    if loss == "squared":  # f = G a with (G + nν I) a = y: one Cholesky, no eigenvectors
        A = G.copy()
        A[np.diag_indices(n)] += n * nu
        a = linalg.cho_solve(linalg.cho_factor(A), y)
        f = G @ a
        return CurveFit(Gt @ a, objective(f, y, loss, nu, float(a @ f)))
    Phi, B = kernel_feature_map(G)
    fit = fit_regularised(Phi, y, loss, nu, n_classes=n_classes)
    return CurveFit(Gt @ (B @ fit.w), fit.objective)


class RFFBaseline:
    """Fits on the first D of one draw of random features, D growing over the curve. Up to
    n features the n × D matrix is used; beyond, the n × n Gram matrix is accumulated in
    feature blocks, continuing from the previous D (the n × D matrix is never formed)."""

    def __init__(self, rff: RandomFourierFeatures, X: np.ndarray, Xt: np.ndarray) -> None:
        self.W, self.b = rff.weights_, rff.offsets_
        self.X, self.Xt = X, Xt
        # Σ cos·cos (unscaled), made on the first fit beyond n features: at any n where
        # D ≤ n they are never needed (and at large n could not be held)
        self.G: np.ndarray | None = None
        self.Gt: np.ndarray | None = None
        self.done = 0

    def _features(self, X: np.ndarray, start: int, stop: int) -> np.ndarray:
        return cos_features(X, self.W[:, start:stop], self.b[start:stop], 1.0)

    def fit(self, D: int, y: np.ndarray, loss: str, nu: float, n_classes: int | None) -> CurveFit:
        n = self.X.shape[0]
        scale = 2.0 / D
        if D <= n:
            root = math.sqrt(scale)
            return fit_primal(self._features(self.X, 0, D) * root,
                               self._features(self.Xt, 0, D) * root, y, loss, nu, n_classes)
        if self.G is None or self.Gt is None:
            self.G, self.Gt = np.zeros((n, n)), np.zeros((self.Xt.shape[0], n))
        step = max(1, (1 << 22) // (n + self.Xt.shape[0]))
        for j in range(self.done, D, step):
            stop = min(j + step, D)
            Z = self._features(self.X, j, stop)
            self.G += Z @ Z.T
            self.Gt += self._features(self.Xt, j, stop) @ Z.T
        self.done = D
        return fit_gram(self.G * scale, self.Gt * scale, y, loss, nu, n_classes)


class _StreamedBaselines:
    """Both baselines with the squared loss on more points than their n × D features
    would fit in memory: the first D of one draw of D_max random features (a draw of D
    features), and the first s of one recursive-RLS draw of D_max landmarks in a seeded
    random order (a random s-subset of it: leverage-weighted at D_max's λ, not a fresh
    recursive-RLS sample of s), each from ΦᵀΦ and Φᵀy summed over row blocks once
    (see :mod:`kernel_lab.core.models.streaming`); the test features (at most
    :data:`TEST_CAP` rows) are kept."""

    def __init__(self, kernel_name: str, sigma: float, X: np.ndarray, y: np.ndarray,
                 Xt: np.ndarray, D_max: int, seed: Any, order_seed: int,
                 progress: Progress, splits: np.ndarray) -> None:
        at_sampler, at_sums = (float(v) for v in splits)  # where those stages start
        rff = RandomFourierFeatures(kernel_name, sigma=sigma, n_components=D_max,
                                    random_state=seed).fit(X[:1])
        W, b = rff.weights_, rff.offsets_

        def cosines(A: np.ndarray) -> np.ndarray:
            return cos_features(A, W, b, 1.0)

        n = X.shape[0]
        self.rff: NormalSums = accumulate(
            cosines, X, y, D_max, progress.sub(0.0, at_sampler),
            f"RFF baseline: ΦᵀΦ over {n:,} rows, {D_max} features")
        self.rff_test = cosines(Xt)
        progress.sub(at_sampler, at_sums)(0.0, f"Nyström baseline: choosing {D_max} "
                                          "landmarks")
        nys = NystromFeatures(kernel_name, kernel_params={"sigma": sigma},
                              n_components=D_max, random_state=seed).fit(X)
        order = np.random.default_rng([order_seed, 0x1A4D]).permutation(
            nys.landmark_indices_.size)
        self.landmarks = nys.landmarks_[order]
        self.kernel = nys.kernel_
        width = self.landmarks.shape[0]
        self.nys: NormalSums = accumulate(
            lambda A: self.kernel(A, self.landmarks), X, y, width,
            progress.sub(at_sums, 1.0),
            f"Nyström baseline: ΦᵀΦ over {n:,} rows, {width} landmarks")
        self.nys_test = self.kernel(Xt, self.landmarks)

    def rff_fit(self, D: int, nu: float) -> CurveFit:
        return CurveFit(*fit_first_features(self.rff, self.rff_test, D, nu))

    def nystrom_fit(self, s: int, nu: float) -> CurveFit:
        return CurveFit(*fit_first_landmarks(self.nys, self.nys_test, self.kernel, self.landmarks,
                                         s, nu))


class KernelTwin:
    """DSG's kernel twin h_t, the function Dai et al.'s analysis follows: the same sampled
    points and loss gradients l'(f_t(x), y), with the exact kernel in place of the random
    features, h ← (1 − γν) h − γ (1/B) Σ_b l'(f_t(x_b), y_b) k(x_b, ·). It lies in the
    RKHS, so its objective J(h_t) is defined (DSG's own f_t, a sum of cosines, has no
    RKHS norm); E‖h_t − f*‖² = O(1/t), and J(h_t) − J(f*) with it for a loss whose
    derivative is Lipschitz (J(h) − J(f*) ≤ ½ (Lκ + ν) ‖h − f*‖²; see docs/papers.md)."""

    def __init__(self, n: int, n_classes: int | None, nu: float) -> None:
        self.a = np.zeros((n, n_classes) if n_classes else n)
        self.scale = 1.0
        self.nu = nu

    def step(self, index: np.ndarray, grad: np.ndarray, gamma: float) -> None:
        self.scale *= 1.0 - gamma * self.nu
        np.add.at(self.a, index, (-gamma / len(index)) * grad / self.scale)
        if self.scale < 1e-150:
            self.a *= self.scale
            self.scale = 1.0

    def objective(self, K: np.ndarray, y: np.ndarray, loss: str) -> float:
        a = self.a * self.scale
        f = K @ a
        return objective(f, y, loss, self.nu, float(np.sum(a * f)))


class LearningCurveExperiment(Experiment):
    name = "learning-curve"
    title = "Doubly stochastic gradients: learning curve"
    description = (
        "Doubly stochastic functional gradients (Dai et al.) train a kernel machine by SGD in "
        "which two things are random at every step: the data points (a mini-batch) and the "
        "random Fourier features that stand in for the kernel (a fresh block per iteration). "
        "Both randomisations keep the gradient unbiased. The "
        "model is only the coefficients and a seed: the features are regenerated from "
        "(seed, iteration) when predicting, so memory grows as O(t), not O(n²). For "
        "comparison, all minimising DSG's own objective mean l(f(x), y) + ν/2 ‖f‖² with "
        "DSG's loss: the same number of random features drawn once (RFF), as many Nyström "
        "landmarks chosen by recursive leverage scores, and the exact minimiser over the "
        "whole RKHS as the floor (the limit DSG converges to; with the squared loss it is "
        "plain kernel ridge on y − ȳ with λ = nν, since DSG subtracts the mean of the "
        "training targets and fits the rest without an intercept; with the logistic, hinge "
        "or multinomial loss it is the kernel logistic regression or SVM of the same ν, "
        "solved to machine precision). On two-class data the error is the "
        "misclassification rate (with the softmax loss DSG keeps two scores there, for "
        "the labels −1 and +1); on data with more classes (digits) DSG uses the "
        "multinomial (softmax) loss with one score per class. What the paper proves, "
        "and what the results measure (log–log slopes over the last two decades of "
        "iterations): with steps θ/(t + t0), DSG's function converges to the floor's at "
        "O(1/t) — the mean squared distance between the two on the test points, slope −1 "
        "(second plot, beside a slope −1 guide). The excess objective J(h_t) − J(f*) of "
        "DSG's kernel twin h_t (the same steps with the exact kernel in place of the "
        "random features — the function the paper's analysis follows; DSG's own sum of "
        "cosines has no RKHS norm, so J(f_t) is undefined) is bounded by a multiple of "
        "‖h_t − f*‖², which the analysis bounds by O(1/t) too. The test error itself does "
        "not fall at −1: it levels off at the floor's, and the paper bounds the part above "
        "the floor only by O(1/√t) — a slope of −½ (first plot); it may fall faster, and "
        "it can cross the floor (DSG can do better on the test set than the exact "
        "minimiser of the training objective), and then no slope is measured. These rates "
        "are upper bounds and asymptotic: they show once t is well past t0 (t0 = θ = 1/ν "
        "by default, 1000 at ν = 10⁻³; before that the steps are nearly constant and the "
        "slopes flatter, the twin's excess objective may even rise), and they are proved "
        "for losses with a Lipschitz derivative, which the hinge is not. The iterations "
        f"(auto by default) scale with the data: {AUTO_EPOCHS} passes over the training "
        f"points in batches ({AUTO_EPOCHS} n / batch size iterations), at least "
        f"{AUTO_ITER_MIN} and at most {AUTO_ITER_MAX} — DSG's work grows as the square of "
        "the iterations, so a table of a few hundred rows answers in seconds "
        f"({auto_iterations(225, 32)} iterations for 225 training rows in batches of 32), "
        f"and from {AUTO_ITER_MAX * 32 // AUTO_EPOCHS} training rows on a run gets "
        f"{AUTO_ITER_MAX}; the curve points are log-spaced up to the last iteration. A "
        "short run stops before t0, so its slopes are the flatter ones above: set the "
        "iterations for a longer run."
    )
    tasks = ("regression", "classification", "multiclass")
    params = (
        ParamSpec("kernel", "choice", "gaussian", choices=("gaussian", "laplace", "cauchy"),
                  help="shift-invariant kernel (its spectral density drives the features)"),
        ParamSpec("sigma", "float", None, label="bandwidth σ", low=1e-12, high=1e12, log=True,
                  allow_auto=True, help="auto = median pairwise distance of the inputs"),
        ParamSpec("loss", "choice", "auto",
                  choices=("auto", *REGRESSION_LOSSES, *CLASSIFICATION_LOSSES,
                           *MULTICLASS_LOSSES),
                  help="auto = squared for regression, logistic for two classes, "
                       "multinomial (softmax) for more"),
        ParamSpec("nu", "float", 1e-3, label="ν", low=1e-12, high=1.0, log=True,
                  help="regulariser ν; exact KRR uses λ = n ν"),
        ParamSpec("theta", "float", None, label="θ", low=1e-9, high=1e12, log=True,
                  allow_auto=True, help="step θ/(t + t0); auto = 1/ν"),
        ParamSpec("t0", "float", None, low=0.0, high=1e12, allow_auto=True,
                  help="step offset; auto = θ"),
        ParamSpec("n_iter", "int", None, label="iterations", low=2, high=10_000_000,
                  allow_auto=True,
                  help=f"DSG's iterations; auto = {AUTO_EPOCHS} passes over the training "
                       f"points ({AUTO_EPOCHS} n / batch size), at least {AUTO_ITER_MIN} and "
                       f"at most {AUTO_ITER_MAX}: a small table gets a short run"),
        ParamSpec("batch_size", "int", 32, label="batch size", low=1, high=100_000),
        ParamSpec("features_per_iter", "int", 16, label="features per iteration", low=1,
                  high=100_000),
        ParamSpec("points", "int", 16, label="curve points", low=2, high=200,
                  help="log-spaced iterations at which the test error is measured"),
        ParamSpec("rff_max", "int", None, label="RFF features max", low=0, high=10_000_000,
                  allow_auto=True,
                  help="the RFF and Nyström baselines are fitted at the curve points with at "
                       "most this many features (0: none); auto = DSG's final count, or "
                       "fewer when the n × n accumulation would take more than ~10 s"),
        ParamSpec("exact_max", "int", 4000, label="exact floor up to n", low=0,
                  high=1_000_000, help="exact minimiser (the floor) only for n up to this"),
    )
    plots = (
        PlotSpec("Test error against the number of features", "n_features",
                 (Curve("dsg_test_error", "measured", "DSG", color="DSG"),
                  Curve("rff_test_error", "baseline", "RFF, same loss", color="RFF"),
                  Curve("nystrom_test_error", "baseline", "Nyström, same loss",
                        color="Nyström"),
                  Curve("krr_test_error", "baseline", "exact (the floor)")),
                 xlabel="features or landmarks (DSG: iterations × features per iteration)",
                 ylabel="{error_measure|test error}", logx=True, logy=True, positive=True),
        PlotSpec("Convergence to the floor (DSG's objective)", "n_features",
                 (Curve("dsg_floor_distance", "measured",
                        "DSG: mean |f_t − f*|² (test)", color="DSG"),
                  Curve("dsg_twin_excess_objective", "estimate",
                        "kernel twin: J(h_t) − J*", color="DSG"),
                  Curve("nystrom_excess_objective", "baseline",
                        "Nyström: J − J*", color="Nyström"),
                  Curve("rate_guide", "reference", "slope −1 (O(1/t))")),
                 xlabel="features or landmarks (DSG: iterations × features per iteration)",
                 ylabel="distance / excess objective", logx=True, logy=True,
                 empty="{floor_missing|No exact floor in this run: nothing to converge to.}"),
        PlotSpec("Training loss (progressive, before each update)", "iteration",
                 (Curve("dsg_train_loss", "measured", "DSG", color="DSG"),), xlabel="iterations",
                 ylabel="loss", logx=True, logy=True),
    )
    default_data = "friedman:n=3000,n_test=1000"
    #: The columns measured at the curve points (NaN until measured), beside iteration,
    #: samples_seen and n_features.
    columns = ("dsg_test_error", "dsg_train_loss", "rff_test_error", "nystrom_test_error",
               "krr_test_error", "dsg_floor_distance", "dsg_twin_excess_objective",
               "nystrom_excess_objective", "rate_guide")

    # The run on partitioned data (kernel_lab.experiments.learning_curve_parts) is given the
    # experiment and reaches the rules it shares with run() through it: experiment modules
    # do not import one another.
    loss_for = staticmethod(_loss_for)
    rff_cap = staticmethod(_rff_cap)
    iterations = staticmethod(_iterations)
    auto_note = staticmethod(_auto_note)

    @staticmethod
    def test_cap() -> int:
        """At most this many test points are predicted (:data:`TEST_CAP`)."""
        return TEST_CAP

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        loss = params.get("loss", "auto")
        squared = loss in ("auto", "squared")  # auto is squared on regression data
        exact = n <= params.get("exact_max", 4000) and (loss == "auto"
                                                         or loss in SOLVABLE_LOSSES)
        T, r = _iterations(params, n), params.get("features_per_iter", 16)
        pts = checkpoints(T, params.get("points", 16))
        m = min(max(n // 3, 1), TEST_CAP)  # test points (a quarter of the rows, capped)
        cap = _rff_cap(params.get("rff_max"), int(pts[-1] * r), n, squared)
        costs = _Costs(params, n, p, m, pts, cap, "squared" if squared else loss, exact)
        D = costs.D_max
        # the split data (train, test and the table they came from), DSG's coefficients
        # and features, the floor's n × n matrices, and the baselines: sums (D × D) and test
        # features when streamed, else the n × D features (a few copies)
        memory = 8.0 * (2 * (n + n // 3) * p + 4 * T * r * (p + 2))
        memory += 8.0 * 4 * n * n if exact else 0.0
        if costs.streamed:
            memory += 8.0 * (6 * D * D + 2 * m * D) + 4 * BLOCK_BYTES
        elif D <= n:
            memory += 8.0 * 3 * (n + m) * D
        else:
            memory += 8.0 * 2 * (n + m) * n
        note = "exact floor included" if exact else "no exact floor (n too large)"
        if costs.streamed:
            note += (f"; with the squared loss (regression) the baselines are streamed over "
                     f"row blocks ({D} features)")
        return {"memory_bytes": memory, "flops": costs.total, "note": note}

    def run(self, params: Mapping[str, Any], data: Dataset, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        X, y, Xt, yt = data.X_train, data.y_train, data.X_test, data.y_test
        if data.n_test < 1:
            raise ParameterError("the learning curve needs a test set (test fraction > 0)")
        Xt, yt, test_note = _test_subset(Xt, yt, params["seed"])
        task = data.task
        loss = _loss_for(params["loss"], task)
        n = data.n_train
        sigma = resolve_bandwidth(params["sigma"], X)
        nu = params["nu"]
        theta = params["theta"] or 1.0 / nu
        t0 = theta if params["t0"] is None else params["t0"]
        r = params["features_per_iter"]
        targets = CurveTargets.of(task, y, yt, loss)
        n_classes = targets.n_classes

        n_iter = _iterations(params, n)
        pts = checkpoints(n_iter, params["points"])
        L = pts.size
        table = {"iteration": pts.astype(float), "samples_seen": pts * float(params[
            "batch_size"]), "n_features": pts * float(r)}
        for key in self.columns:
            table[key] = np.full(L, np.nan)
        summaries: dict[str, Any] = {"task": task, "loss": loss, "sigma": sigma,
                                     "lam_exact": n * nu, "theta": theta, "t0": t0,
                                     "n_iter": n_iter}
        if params["n_iter"] is None:
            summaries["n_iter_note"] = _auto_note(n, params["batch_size"], n_iter)
        if n_classes:
            summaries["classes"] = n_classes
        if test_note:
            summaries["test_note"] = test_note
        rff_cap = _rff_cap(params["rff_max"], int(pts[-1] * r), n, loss == "squared")
        summaries["rff_max_features"] = rff_cap
        solvable = loss in SOLVABLE_LOSSES
        costs = _Costs(params, n, X.shape[1], Xt.shape[0], pts, rff_cap, loss,
                       solvable and n <= params["exact_max"])

        # Every reference minimises DSG's own objective J(f) = mean l(f(x), y) + ν/2 ‖f‖²
        # with DSG's loss and targets: ±1 labels or class codes, and in regression y − ȳ
        # with ȳ fixed (DSG fits f without intercept), so in regression with the squared
        # loss the floor is plain KRR on y − ȳ with λ = nν, not centred KRR.
        summaries.update(floor_words(task, loss, n, params["exact_max"]))
        kernel = make_kernel(params["kernel"], {"sigma": sigma})
        floor: CurveFit | None = None
        K = None
        if costs.exact:
            progress(0.0, f"exact kernel machine on {n} points (the floor)")
            K = kernel(X)
            floor = fit_gram(K, kernel(Xt, X), targets.fit, loss, nu, n_classes)
            value = targets.error(floor.test_scores)
            table["krr_test_error"] = np.full(L, value)
            summaries["krr_test_error"] = value
            summaries["objective_floor"] = floor.objective
        streamed = None
        if solvable and costs.streamed:
            summaries["baseline_note"] = (
                f"RFF and Nyström baselines from ΦᵀΦ summed over blocks of rows (the "
                f"{n:,} × {costs.D_max} features never held): the first D of one draw of "
                f"{costs.D_max} random features, and a random D of one recursive-RLS draw of "
                f"{costs.D_max} landmarks")
            summaries["rff_max_features"] = costs.D_max  # at most n, the largest point
            streamed = _StreamedBaselines(
                params["kernel"], sigma, X, targets.fit, Xt, costs.D_max,
                check_seed(np.random.SeedSequence(params["seed"])), params["seed"],
                progress.sub(costs.fraction(costs.floor), costs.fraction(costs.start)),
                np.cumsum(costs.parts)[:2] / sum(costs.parts))
        yield PartialResult(costs.fraction(costs.start), "training", dict(table),
                            dict(summaries))

        cls = DSGClassifier if task != "regression" else DSGRegressor
        seed = check_seed(np.random.SeedSequence(params["seed"]))
        recent: list[float] = []
        twin = KernelTwin(n, n_classes, nu) if K is not None else None

        def callback(info: dict[str, Any]) -> None:
            recent.append(info["train_loss"])
            if twin is not None:
                twin.step(info["batch_index"], info["batch_grad"], info["step"])

        model = cls(loss, kernel=params["kernel"], sigma=sigma, nu=nu, theta=theta, t0=t0,
                    n_iter=1, batch_size=params["batch_size"], n_features_per_iter=r,
                    cache_features=True, warm_start=True, callback=callback,
                    callback_every=1, random_state=seed)
        rff = RFFBaseline(RandomFourierFeatures(
            params["kernel"], sigma=sigma, n_components=max(rff_cap, 1),
            random_state=seed).fit(X), X, Xt) if (rff_cap and streamed is None
                                                  and solvable) else None
        done = 0
        test_sums = _TestSums(Xt)
        for k, t in enumerate(pts):
            progress(costs.fraction(costs.before(k)), f"iteration {done} of {pts[-1]}")
            recent.clear()
            model.set_params(n_iter=int(t - done))
            model.fit(X, targets.dsg_fit)
            done = int(t)
            scores = targets.scores(model, test_sums(model))
            table["dsg_test_error"][k] = targets.error(scores)
            table["dsg_train_loss"][k] = float(np.mean(recent))
            if floor is not None:
                table["dsg_floor_distance"][k] = float(np.mean(np.sum(
                    np.reshape((scores - floor.test_scores) ** 2, (len(Xt), -1)), axis=1)))
            if twin is not None and floor is not None:
                table["dsg_twin_excess_objective"][k] = (
                    twin.objective(K, targets.fit, loss) - floor.objective)
            D = int(t * r)
            if streamed is not None and D <= costs.D_max:
                fit = streamed.rff_fit(D, nu)
                table["rff_test_error"][k] = targets.error(fit.test_scores)
                fit = streamed.nystrom_fit(D, nu)
                table["nystrom_test_error"][k] = targets.error(fit.test_scores)
                if floor is not None:
                    table["nystrom_excess_objective"][k] = fit.objective - floor.objective
            elif rff is not None and D <= rff_cap and solvable:
                fit = rff.fit(D, targets.fit, loss, nu, n_classes)
                table["rff_test_error"][k] = targets.error(fit.test_scores)
                if D <= n:
                    nys = NystromFeatures(params["kernel"], kernel_params={"sigma": sigma},
                                          n_components=D, random_state=seed).fit(X)
                    fit = fit_primal(nys.transform(X), nys.transform(Xt), targets.fit, loss,
                                      nu, n_classes)
                    table["nystrom_test_error"][k] = targets.error(fit.test_scores)
                    if floor is not None:
                        table["nystrom_excess_objective"][k] = fit.objective - floor.objective
            frac = costs.fraction(costs.before(k + 1))
            if k == L - 1:
                summarise(table, summaries)
            yield PartialResult(frac, f"iteration {t} of {pts[-1]}", dict(table),
                                dict(summaries))
