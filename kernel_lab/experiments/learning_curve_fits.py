"""The learning curve's fits besides DSG: the targets as DSG fits them, the RFF and
Nyström baselines fitted with DSG's loss from their normal sums or features, and the exact
floor with DSG's kernel twin (:mod:`kernel_lab.experiments.learning_curve` runs them); and
the squared-loss baselines as estimators to export (:func:`rff_baseline`,
:func:`nystrom_baseline`)."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.losses import MULTICLASS_LOSSES
from kernel_lab.core.models.dsg import Step
from kernel_lab.core.models.nystrom import nystrom_factor
from kernel_lab.core.models.regularised import (
    fit_regularised,
    kernel_feature_map,
    objective,
)
from kernel_lab.core.models.rff import RandomFourierFeatures, cos_features
from kernel_lab.core.progress import Progress
from kernel_lab.core.ridge.normal import (
    CosineFeatures,
    KernelColumns,
    fit_first_features,
    fit_first_landmarks,
    gather_features,
    normal_sums,
)
from kernel_lab.core.rows.mapreduce import (
    PartMap,
    RowPlan,
    Rows,
)
from kernel_lab.core.validation import check_seed
from kernel_lab.experiments.base import ModelChoice


class CurveTargets:
    """The data's targets as DSG fits them, and the test error of predicted scores.

    Two classes with the multinomial (softmax) loss get class codes, as DSG's classifier
    makes them from its sorted classes: 0 for the lower label (−1), 1 for the upper (+1);
    the floor and the baselines fit those codes (:meth:`codes`), and the error compares
    argmaxes. Built from what one pass over the training targets found (the upper label
    ``top``, the number of classes, the mean ``shift``)."""

    def __init__(self, task: str, loss: str, yt: np.ndarray, *, top: float | None = None,
                 n_classes: int | None = None, shift: float = 0.0) -> None:
        self.task = task
        self.top = top
        self.n_classes = 2 if task == "classification" and loss in MULTICLASS_LOSSES else (
            n_classes if task == "multiclass" else None)
        self.shift = shift if task == "regression" else 0.0
        self.test = yt if task in ("regression", "multiclass") else self.codes(yt)

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
        """DSG's scores on the scale of ``fit``, from its function f without the offset
        (:meth:`~kernel_lab.core.dsg.curve.CurvePredictions.raw`)."""
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


class Floor:
    """The exact minimiser of DSG's objective on the gathered training rows, and DSG's
    kernel twin following the same batches (global row indices mapped to the rows)."""

    def __init__(self, train: Rows, test: Rows, kernel: Any, targets: CurveTargets,
                 loss: str, nu: float) -> None:
        self.index = train.index
        self.y = targets.codes(train.y)
        self.K = kernel(train.X)
        self.fit = fit_gram(self.K, kernel(test.X, train.X), self.y, loss, nu,
                            targets.n_classes)
        self.twin = KernelTwin(train.index.size, targets.n_classes, nu)
        self.loss = loss

    def follow(self, batch: Rows, step: Step) -> None:
        self.twin.step(np.searchsorted(self.index, batch.index), step.grad, step.gamma)

    def excess(self) -> float:
        return self.twin.objective(self.K, self.y, self.loss) - self.fit.objective


class Baselines:
    """The RFF and Nyström baselines at D features (see the module docstring): from
    normal sums with the squared loss, from the gathered n × D features otherwise.

    ``later``: the normal sums' pass is not made here but by :meth:`start`, in a thread
    that only waits for the cluster (the pass runs on the workers) while this thread
    trains DSG on the client: DSG's iterations are sequential work of the client that
    does not grow with n, the sums are the work that does and that the workers share, so
    the two overlap instead of following each other. The same calls, so the same bits;
    the curve points' baselines are filled in once the sums are there (:meth:`ready`)."""

    def __init__(self, parts: PartMap, plan: RowPlan, kernel: Any,
                 rff: RandomFourierFeatures, test: Rows, marks: Rows, targets: CurveTargets,
                 loss: str, D_max: int, nu: float, progress: Progress,
                 later: bool = False) -> None:
        self.kernel, self.targets, self.loss, self.nu = kernel, targets, loss, nu
        cosines = CosineFeatures(rff.weights_[:, :D_max], rff.offsets_[:D_max])
        progress(0.0, f"Nyström baseline: {D_max} landmarks")
        self.marks = marks.X
        maps = [cosines, KernelColumns(kernel, self.marks)]
        self.later = loss == "squared" and later
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[Any] | None = None
        self._stop = threading.Event()
        self._work = (parts, plan, maps, targets.shift)
        self._message = f"ΦᵀΦ of {D_max} random features and landmarks"
        if loss == "squared" and not self.later:
            self.sums = normal_sums(*self._work, progress.sub(0.1, 1.0), self._message)
        self.rff_test, self.nys_test = cosines(test.X), kernel(test.X, self.marks)
        if loss != "squared":
            (self.rff_train, self.nys_train), y = gather_features(
                parts, plan, maps, progress.sub(0.1, 1.0),
                f"{D_max} random features and landmark columns of the training rows")
            self.y = targets.codes(y)

    def start(self) -> None:
        """Start the normal sums' pass in a thread of its own (``later``); cancelled by
        :meth:`close`."""
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="baseline-sums")
        self._pending = self._pool.submit(normal_sums, *self._work,
                                          Progress(None, self._stop.is_set), self._message)

    def ready(self) -> bool:
        """Whether the baselines can be fitted without waiting for the sums."""
        return self._pending is None or self._pending.done()

    def close(self) -> None:
        """Stop the sums' pass if it still runs (the run ended otherwise: cancelled, an
        error) and wait for its thread."""
        if self._pool is not None:
            self._stop.set()
            self._pool.shutdown(wait=True)
            self._pool = None

    def _wait(self) -> None:
        if self._pending is not None:
            self.sums = self._pending.result()
            self._pending = None
            self.close()

    def rff(self, D: int) -> CurveFit:
        if self.loss == "squared":
            self._wait()
            return CurveFit(*fit_first_features(self.sums[0], self.rff_test, D, self.nu))
        root = math.sqrt(2.0 / D)
        return fit_primal(self.rff_train[:, :D] * root, self.rff_test[:, :D] * root, self.y,
                          self.loss, self.nu, self.targets.n_classes)

    def nystrom(self, s: int) -> CurveFit:
        if self.loss == "squared":
            self._wait()
            return CurveFit(*fit_first_landmarks(self.sums[1], self.nys_test, self.kernel,
                                                 self.marks, s, self.nu))
        N = nystrom_factor(self.kernel(self.marks[:s]))
        return fit_primal(self.nys_train[:, :s] @ N, self.nys_test[:, :s] @ N, self.y,
                          self.loss, self.nu, self.targets.n_classes)


class TestErrors:
    """When DSG's test sums at the curve points (:class:`~kernel_lab.core.dsg.curve.
    CurvePredictions`) are evaluated, as :meth:`update` returns the points done.

    In this process (``later`` False) every point's tasks run at once, so the curve shows
    each point as it comes. With ``later`` (the tasks run on a cluster's workers) a thread
    of its own sends one round of tasks for all the points added since the last round and
    only waits for the cluster, while this thread trains DSG — the sums are work the
    workers share, DSG's iterations the sequential work of the client, and the two
    overlap; the last point waits for every round. The same tasks, so the same bits."""

    __test__ = False  # not a test class, whatever its name says to pytest

    def __init__(self, predict: Any, later: bool) -> None:
        self.predict = predict
        self._pool = (ThreadPoolExecutor(1, thread_name_prefix="dsg-test-sums") if later
                      else None)
        self._running: tuple[list[Any], Future[Any]] | None = None

    def update(self, last: bool = False) -> list[int]:
        """The curve points whose sums are now evaluated (the points added so far, when
        ``last``)."""
        if self._pool is None:
            return self.predict.flush()
        done: list[int] = []
        if self._running is not None and (last or self._running[1].done()):
            ranges, pending = self._running
            self._running = None
            done += self.predict.apply(ranges, pending.result())
        if last:
            done += self.predict.flush()
        elif self._running is None:
            ranges = self.predict.take()
            if ranges:
                self._running = (ranges, self._pool.submit(self.predict.evaluate, ranges))
        return done

    def close(self) -> None:
        """Wait for a round still running (a cancelled or failed run) and end the thread."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def rff_draw(kernel: str, sigma: float, cap: int, p: int, seed: int
             ) -> RandomFourierFeatures:
    """The one draw of random features the RFF baseline takes its first D from: ``cap``
    features for ``p`` columns, keyed by the run's seed (the first D of a draw of more
    are not a draw of D, so an exported baseline is given these frequencies)."""
    return RandomFourierFeatures(kernel, sigma=sigma, n_components=max(cap, 1),
                                 random_state=check_seed(np.random.SeedSequence(seed))
                                 ).fit(np.zeros((1, p)))


def rff_baseline(params: Mapping[str, Any], data: Any, table: Mapping[str, np.ndarray],
                 sigma: float, cap: int, shift: float, test: Rows) -> list[ModelChoice]:
    """The RFF baseline at the largest feature count D ≤ n the run fitted (the
    experiment's ``best_models``), or nothing: the run's draw of ``cap`` features made
    again from its seed (:func:`rff_draw`), and
    RFFRidge given its first D frequencies and phases, fitted on every training row
    where they are. Beyond n features the run fits from the n × n Gram matrix of the
    gathered rows; that model (D × D in the primal) is not exported, a note says so."""
    errors = np.asarray(table.get("rff_test_error", []), dtype=np.float64)
    counts = np.asarray(table["n_features"], dtype=np.float64)
    n, p = data.plan.n_train, data.p
    done = np.flatnonzero(np.isfinite(errors) & (counts <= n))
    if not done.size:
        return []
    from kernel_lab.core.models import RFFRidge

    j = int(done[-1])
    D = int(counts[j])
    nu = float(params["nu"])
    draw = rff_draw(params["kernel"], sigma, cap, p, int(params["seed"]))
    model = RFFRidge(n * nu, kernel=params["kernel"], sigma=sigma,
                     frequencies=draw.weights_[:, :D], phases=draw.offsets_[:D],
                     centered=False, target_mean=True).fit(data)
    notes = [f"the run's RFF baseline at {D} features: the first {D} of its one draw of "
             f"{cap} (seed {int(params['seed'])}), ridge at λ = nν = {n * nu:.6g} "
             f"without intercept on the targets less their training mean ({shift:.6g}) "
             f"— DSG's objective with the squared loss — fitted on all {n:,} training "
             "rows"]
    later = np.flatnonzero(np.isfinite(errors) & (counts > n))
    if later.size:
        notes.append(f"the run's RFF baseline beyond n = {n:,} features (up to "
                     f"{int(counts[later[-1]]):,}, fitted from the n × n Gram matrix of "
                     "the gathered rows) is not exported")
    notes += _difference_note(model, test, float(errors[j]), "the run sums the "
                              "unscaled cosines and scales them by 2/D after the pass")
    return [ModelChoice(
        f"RFF baseline D={D}", model, float(errors[j]), "test MSE",
        {"method": "rff-baseline", "kernel": params["kernel"], "sigma": sigma,
         "features": D, "draw": cap, "seed": int(params["seed"]), "lam": n * nu,
         "nu": nu}, notes)]


def nystrom_baseline(params: Mapping[str, Any], data: Any, table: Mapping[str, np.ndarray],
                     sigma: float, landmarks: Callable[[int], Rows], shift: float,
                     test: Rows) -> list[ModelChoice]:
    """The Nyström baseline at the largest landmark count s the run fitted (the
    experiment's ``best_models``), or nothing: NystromRidge given the run's landmarks
    (``landmarks(s)``, the first s keyed ones), fitted on every training row where they
    are (a data set in memory or in partitions)."""
    errors = np.asarray(table.get("nystrom_test_error", []), dtype=np.float64)
    done = np.flatnonzero(np.isfinite(errors))
    if not done.size:
        return []
    from kernel_lab.core.models import NystromRidge

    j = int(done[-1])
    s = int(table["n_features"][j])
    marks = landmarks(s)
    n, nu = data.plan.n_train, float(params["nu"])
    kernel = make_kernel(params["kernel"], {"sigma": sigma})
    model = NystromRidge(n * nu, kernel=kernel, landmarks=marks.X, centered=False,
                         target_mean=True, solver="direct").fit(data)
    notes = [f"the run's Nyström baseline at its largest landmark count ({s}): the "
             f"first {s} of a keyed uniform sample of the training rows, ridge at λ = nν "
             f"= {n * nu:.6g} without intercept on the targets less their training mean "
             f"({shift:.6g}) — DSG's objective with the squared loss — fitted on all "
             f"{n:,} training rows"]
    e = np.linalg.eigvalsh(kernel(marks.X))
    notes += _difference_note(model, test, float(errors[j]), "the run maps sums of the "
                              "kernel columns by W^(-1/2), and the landmarks' kernel "
                              f"matrix W is nearly singular (eigenvalues from "
                              f"{e[0]:.1e} to {e[-1]:.1e})")
    return [ModelChoice(
        f"Nyström baseline s={s}", model, float(errors[j]), "test MSE",
        {"method": "nystrom-baseline", "kernel": kernel.spec(), "landmarks": s,
         "lam": n * nu, "nu": nu}, notes)]


def _difference_note(model: Any, test: Rows, error: float, why: str) -> list[str]:
    """A note giving the model's test MSE on the run's ``test`` rows and the run's, when
    they differ by more than 1e-12 relative (rounding: the two sum in other orders)."""
    own = float(np.mean((model.predict(test.X) - test.y) ** 2))
    if abs(own - error) <= 1e-12 * abs(error):
        return []
    return [f"this model's test MSE is {own:.12g}, the run's {error:.12g} (relative "
            f"difference {abs(own / error - 1):.1e}): {why}"]
