"""Doubly stochastic functional gradients (Dai et al., 2014): kernel machines trained by
SGD in which both the data point and the random feature are sampled at every step.

Algorithm 1 (train), with a mini-batch of B points and a block of r random features
per iteration i, step ``γ_i = θ/(i + t0)`` and regulariser ν::

    f(x_b)  = Σ_{j<i} α_jᵀ φ_j(x_b)                           (prediction, Algorithm 2)
    α_i     = −γ_i · (1/B) Σ_b l'(f(x_b), y_b) φ_i(x_b) / r
    α_j     ← (1 − γ_i ν) α_j  for j < i                       (kept as one running scale)

with ``φ_j(x) = √2 cos(W_jᵀx + b_j)`` and ``(W_j, b_j)`` drawn from the kernel's
spectral density with a seed derived from ``(random_state, j)``, so prediction can
regenerate them: the model is the coefficients and a seed, O(t r) numbers. With K > 2
classes and the multinomial (softmax) loss, f has K outputs and each α_j is r × K.

References
----------
B. Dai, B. Xie, N. He, Y. Liang, A. Raj, M.-F. Balcan, L. Song, "Scalable kernel methods via
doubly stochastic gradients", NIPS 2014.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from kernel_lab.core.dsg.stream import BlockStream, target_median, target_summary
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.executor import one_blas_thread
from kernel_lab.core.fastcos import cos_scaled
from kernel_lab.core.kernels import ShiftInvariantKernel, make_kernel, resolve_bandwidth
from kernel_lab.core.losses import (
    CLASSIFICATION_LOSSES,
    MULTICLASS_LOSSES,
    REGRESSION_LOSSES,
    Loss,
    make_loss,
)
from kernel_lab.core.models.inputs import (
    DaskFront,
    row_set,
    rows_bandwidth,
    rows_input,
    rows_width,
)
from kernel_lab.core.models.rff import RFF_KERNELS
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows.mapreduce import PartMap, RowPlan, Rows, one_part
from kernel_lab.core.validation import Integer, OneOf, Real, check_params, check_seed

#: Iterations whose features are regenerated and applied together in prediction.
PREDICT_BLOCK = 64
#: :meth:`_DSGBase.train` reports progress (a cancellation point) this often.
REPORT_EVERY = 64


@dataclass(frozen=True)
class Step:
    """What one iteration of :meth:`DSGRegressor.step` / :meth:`DSGClassifier.step` did.

    Attributes
    ----------
    loss : float
        The batch's mean loss before the update (DSG's progressive training loss).
    grad : ndarray
        The loss gradients ``l'(f(x_b), y_b)`` of the batch, shape (B,) or (B, K).
    gamma : float
        The step ``γ_i = θ/(i + t0)`` taken.
    """

    loss: float
    grad: np.ndarray = field(repr=False)
    gamma: float


def iteration_features(kernel: ShiftInvariantKernel, p: int, r: int, seed: int,
                       iteration: int) -> tuple[np.ndarray, np.ndarray]:
    """The r random features of iteration ``iteration`` (1-based): W (p, r), b (r,),
    regenerated identically from ``(seed, iteration)``."""
    rng = np.random.default_rng([seed, iteration])
    W = kernel.sample_frequencies(p, r, rng)
    b = rng.uniform(0.0, 2.0 * math.pi, r)
    return W, b


class _DSGBase(BaseEstimator):
    _parameter_checks: ClassVar = {
        "kernel": OneOf(RFF_KERNELS),
        "sigma": Real(optional=True, label="the bandwidth σ (sigma)"),
        "nu": Real(label="the regulariser ν (nu)"),
        "theta": Real(optional=True),
        "t0": Real(strict=False, optional=True),
        **dict.fromkeys(("n_iter", "batch_size", "n_features_per_iter", "callback_every"),
                        Integer()),
    }

    def __init__(self, *, loss: str, kernel: str = "gaussian", sigma: float | None = None,
                 nu: float = 1e-4, theta: float | None = None, t0: float | None = None,
                 n_iter: int = 500, batch_size: int = 32, n_features_per_iter: int = 8,
                 epsilon: float = 0.1, quantile: float = 0.5, cache_features: bool = False,
                 callback: Callable[[dict[str, Any]], Any] | None = None,
                 callback_every: int = 50, warm_start: bool = False,
                 random_state: Any = None) -> None:
        self.loss = loss
        self.kernel = kernel
        self.sigma = sigma
        self.nu = nu
        self.theta = theta
        self.t0 = t0
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.n_features_per_iter = n_features_per_iter
        self.epsilon = epsilon
        self.quantile = quantile
        self.cache_features = cache_features
        self.callback = callback
        self.callback_every = callback_every
        self.warm_start = warm_start
        self.random_state = random_state

    # -- set-up ------------------------------------------------------------------------
    #: Outputs of f: 1, or the number of classes under the multinomial loss.
    _n_outputs: int = 1

    def _loss_name(self) -> str:
        return str(self.loss)

    def _check_params(self) -> tuple[Loss, float, float]:
        p = check_params(self)
        nu = p["nu"]
        theta = 1.0 / nu if p["theta"] is None else p["theta"]
        t0 = theta if p["t0"] is None else p["t0"]
        if theta * nu / (1.0 + t0) >= 1.0:
            raise ParameterError(
                f"the first step decays the model to zero or below (θν/(1 + t0) = "
                f"{theta * nu / (1 + t0):.3g} ≥ 1); increase t0 or decrease theta")
        return (make_loss(self._loss_name(), epsilon=self.epsilon, quantile=self.quantile),
                theta, t0)

    def _initialise(self, X: np.ndarray, sigma: float | None = None) -> None:
        """A new model for the columns of X; its bandwidth ``sigma``, else the
        estimator's, else the median heuristic on X."""
        if sigma is None:
            sigma = resolve_bandwidth(self.sigma, X)
        kernel = make_kernel(self.kernel, {"sigma": sigma})
        assert isinstance(kernel, ShiftInvariantKernel)
        self.kernel_ = kernel
        self.seed_ = check_seed(self.random_state)
        self.stream_position_ = 0
        r = int(self.n_features_per_iter)
        self.scale_ = 1.0
        self.n_rescales_ = 0
        self.n_iter_ = 0
        self.n_samples_seen_ = 0
        # Growable buffers (capacity doubles): coefficients a_j (α_j = scale_ · a_j) and a
        # working cache of the features W_j, b_j of the iterations so far.
        self._coef_buf = np.zeros((64, r, self._n_outputs))
        self._W_buf = np.zeros((X.shape[1], 64 * r))
        self._b_buf = np.zeros(64 * r)
        self._n_cached = 0  # iterations whose features are in the cache
        self.coef_ = self._coef_view()

    def _coef_view(self) -> np.ndarray:
        coef = self._coef_buf[: getattr(self, "n_iter_", 0)]
        return coef if self._multi() else coef[:, :, 0]

    def _grow(self, iterations: int) -> None:
        cap = self._coef_buf.shape[0]
        if iterations <= cap:
            return
        new = max(iterations, 2 * cap)
        coef = np.zeros((new, *self._coef_buf.shape[1:]))
        r = self._coef_buf.shape[1]
        coef[:cap] = self._coef_buf
        W = np.zeros((self._W_buf.shape[0], new * r))
        W[:, : cap * r] = self._W_buf
        b = np.zeros(new * r)
        b[: cap * r] = self._b_buf
        self._coef_buf, self._W_buf, self._b_buf = coef, W, b

    # -- Algorithm 2 ---------------------------------------------------------------------
    def _features(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Features of iterations start+1 … stop, from the cache or regenerated."""
        r = self._coef_buf.shape[1]
        if self._n_cached >= stop:
            return self._W_buf[:, start * r: stop * r], self._b_buf[start * r: stop * r]
        blocks = [iteration_features(self.kernel_, self.n_features_in_, r, self.seed_, j)
                  for j in range(start + 1, stop + 1)]
        return (np.concatenate([w for w, _ in blocks], axis=1),
                np.concatenate([b for _, b in blocks]))

    def _raw_predict(self, X: np.ndarray, upto: int | None = None) -> np.ndarray:
        """``f(X) = Σ_j α_jᵀ φ_j(X)`` over iterations 1…upto, blockwise: shape (m,), or
        (m, K) under the multinomial loss."""
        upto = self.n_iter_ if upto is None else upto
        return self.from_partial_sum(self.partial_sum(X, 0, upto))

    def from_partial_sum(self, total: np.ndarray) -> np.ndarray:
        """f (shape (m,), or (m, K) under the multinomial loss; without the regression
        offset) from ``partial_sum(X, 0, n_iter_)``, however that sum was assembled."""
        out = total * (math.sqrt(2.0) * self.scale_)
        return out if self._multi() else out[:, 0]

    def partial_sum(self, X: np.ndarray, start: int, stop: int) -> np.ndarray:
        """``Σ_j a_j cos(W_jᵀx + b_j)`` over iterations start+1 … stop, shape (m, K), with
        the stored coefficients a_j (``α_j = scale_ · a_j``, so f = √2 · scale_ · the sum
        over all iterations). Sums of consecutive ranges add up, which lets a viewer
        extend f by the new iterations only (``n_rescales_`` counts the times a_j were
        rescaled, after which earlier sums are stale)."""
        K = self._coef_buf.shape[2]
        out = np.zeros((X.shape[0], K))
        r = self._coef_buf.shape[1]
        # iterations per block: all cached ones that fit in about 2²⁰ entries of X W, or
        # PREDICT_BLOCK at a time when the features have to be regenerated
        per_block = max(1, (1 << 20) // max(1, X.shape[0] * r))
        if self._n_cached < stop:
            per_block = min(per_block, PREDICT_BLOCK)
        for first in range(start, stop, per_block):
            last = min(first + per_block, stop)
            W, b = self._features(first, last)
            Z = X @ W
            Z += b
            cos_scaled(Z)
            out += Z @ self._coef_buf[first:last].reshape(-1, K)
        return out

    def terms(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The terms of :meth:`partial_sum` over iterations start+1 … stop: frequencies W
        (p, m), phases b (m,) and the stored coefficients (m, K), so that
        ``partial_sum(X, start, stop) = cos(X W + b) @ coefficients`` — for a caller that
        evaluates the cosines its own way (the Playground's grid, by rows and columns)."""
        K = self._coef_buf.shape[2]
        W, b = self._features(start, stop)
        return W, b, self._coef_buf[start:stop].reshape(-1, K)

    def _multi(self) -> bool:
        return self._loss_name() in MULTICLASS_LOSSES

    # -- the training protocol: batches chosen by the caller ------------------------------
    # fit() and partial_fit() choose their batches among the rows of an array; a caller
    # that reads its rows elsewhere (blocks of partitioned data) drives the same iterations
    # through prepare(), labels(), step() and finish().
    def prepare(self, X: np.ndarray, *, classes: Iterable[Any] | None = None,
                offset: float = 0.0) -> None:
        """Start a new model, to be trained batch by batch with :meth:`step`.

        Parameters
        ----------
        X : ndarray, shape (m, p)
            Rows that give the number of features p and, when ``sigma`` is None, the
            bandwidth (the median heuristic on these rows).
        classes : array_like, optional
            The classifier's class labels, all of them (two, or more for the multinomial
            loss), as :meth:`DSGClassifier.partial_fit` takes them.
        offset : float
            The regressor's offset, added to its predictions: the value subtracted from
            the targets by :meth:`labels` (``fit`` uses the mean of y; the median under the
            quantile loss).
        """
        self._rule = self._check_params()
        self._prepare_targets(classes, offset)
        X = np.asarray(X, dtype=np.float64)
        self._initialise(X)
        self.n_features_in_ = int(X.shape[1])

    def _prepare_targets(self, classes: Iterable[Any] | None, offset: float) -> None:
        raise NotImplementedError

    def labels(self, y: np.ndarray) -> np.ndarray:
        """The targets of :meth:`step` for the raw targets ``y``."""
        raise NotImplementedError

    def step(self, Xb: np.ndarray, targets: np.ndarray) -> Step:
        """One iteration (Algorithm 1) on the batch ``Xb`` with targets ``targets`` (from
        :meth:`labels`); the features of the iteration come from the model's seed. The
        model must be prepared (:meth:`prepare`, or a previous fit)."""
        if not hasattr(self, "_coef_buf"):
            raise ParameterError("the model is not prepared for training: call prepare() "
                                 "or fit() first")
        if getattr(self, "_rule", None) is None:  # unpickled: the rule is not pickled
            self._rule = self._check_params()
        if self._n_cached < self.n_iter_:
            self._restore_cache()
        loss, theta, t0 = self._rule
        value, grad, gamma = self._step(Xb, targets, loss, theta, t0)
        return Step(value, grad, gamma)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_rule", None)  # the loss holds functions; step() makes it again
        return state

    def finish(self) -> None:
        """End a series of :meth:`step` calls: ``coef_`` shows every iteration so far, and
        without ``cache_features`` the working cache of features is released (the model
        is the coefficients and the seed; :meth:`step` regenerates the cache to go on)."""
        self.coef_ = self._coef_view()
        if not self.cache_features:
            self._W_buf = np.zeros((self.n_features_in_, 0))
            self._b_buf = np.zeros(0)
            self._n_cached = 0

    # -- Algorithm 1 ---------------------------------------------------------------------
    def _step(self, Xb: np.ndarray, yb: np.ndarray, loss: Loss, theta: float, t0: float
              ) -> tuple[float, np.ndarray, float]:
        """One iteration; returns the batch's mean loss before the update, the loss
        gradients l'(f(x_b), y_b) and the step γ."""
        i = self.n_iter_ + 1
        r = self._coef_buf.shape[1]
        gamma = theta / (i + t0)
        f = self._raw_predict(Xb)
        if not np.isfinite(f).all() or np.abs(f).max() > 1e6 * (1.0 + np.abs(yb).max()):
            raise ParameterError(
                f"training diverged at iteration {i} (predictions of size "
                f"{np.abs(f).max():.3g}); use smaller steps (decrease theta or increase t0), a "
                "larger batch or more features per iteration")
        g = loss.deriv(f, yb)
        W, b = iteration_features(self.kernel_, self.n_features_in_, r, self.seed_, i)
        phi = Xb @ W
        phi += b
        cos_scaled(phi)
        alpha = (-gamma * math.sqrt(2.0) / (len(yb) * r)) * (phi.T @ g)
        self.scale_ *= 1.0 - gamma * float(self.nu)
        self._grow(i)
        self._coef_buf[i - 1] = alpha.reshape(r, -1) / self.scale_
        self._W_buf[:, (i - 1) * r: i * r] = W
        self._b_buf[(i - 1) * r: i * r] = b
        self._n_cached = i
        if self.scale_ < 1e-150:  # fold the scale into the coefficients
            self._coef_buf[:i] *= self.scale_
            self.scale_ = 1.0
            self.n_rescales_ += 1
        self.n_iter_ = i
        self.n_samples_seen_ += len(yb)
        return float(np.mean(loss.value(f, yb))), g, gamma

    def train(self, batches: Iterator[Rows], iterations: int | None = None, *,
              progress: Progress | None = None, message: str = "",
              on_step: Callable[[Rows, Step], Any] | None = None,
              eval_set: tuple[np.ndarray, np.ndarray] | None = None) -> list[float]:
        """Run one iteration per batch of ``batches`` (:class:`Rows`: rows, targets as
        :meth:`labels` makes them, and the rows' indices), ``iterations`` of them at most
        (default: until the batches end), then :meth:`finish`; the mean loss of each
        batch before its update (DSG's progressive training loss).

        The one training loop of :meth:`fit` (keyed epochs of the rows,
        :class:`~kernel_lab.core.dsg.stream.BlockStream`), :meth:`partial_fit` (the rows
        in order) and the learning curve (the same keyed epochs over a data set's parts).
        ``progress`` is told every :data:`REPORT_EVERY` iterations (and may cancel);
        ``on_step(batch, step)`` is called after each iteration with the batch and what
        the step did (a kernel twin follows them); the model's ``callback`` is called as
        its parameters say, ``eval_set`` (targets as :meth:`labels` makes them) adding
        ``test_loss`` to the callback's info."""
        self._rule = self._check_params()
        loss = self._rule[0]
        out: list[float] = []
        # islice: a batch past the last iteration is not taken from a shared stream
        chosen = batches if iterations is None else itertools.islice(batches, iterations)
        with one_blas_thread():
            self._train_loop(chosen, iterations, progress, message, on_step, eval_set, loss,
                             out)
        self.finish()
        if progress is not None:
            progress(1.0, message)
        return out

    def _train_loop(self, chosen: Iterator[Rows], iterations: int | None,
                    progress: Progress | None, message: str,
                    on_step: Callable[[Rows, Step], Any] | None,
                    eval_set: tuple[np.ndarray, np.ndarray] | None, loss: Loss,
                    out: list[float]) -> None:
        """:meth:`train`'s iterations, with one BLAS thread: an iteration's products are
        small (a batch of B rows against p columns of t r features), a second thread costs
        more than it saves and, on a machine whose cores are busy (a cluster's workers
        beside the client), its spinning made an iteration several times slower —
        measured: the product of 32 × 20 rows by 20 × 16,000 features took 10 ns a value
        on two threads of a loaded 2-core machine, 1 ns on one. Each value of the product
        is summed over the p columns by one thread either way: the same bits."""
        recent: list[float] = []
        for i, batch in enumerate(chosen):
            if progress is not None and i % REPORT_EVERY == 0:
                progress(i / iterations if iterations else 0.0, message)
            step = self.step(batch.X, batch.y)
            out.append(step.loss)
            if on_step is not None:
                on_step(batch, step)
            if self.callback is None:
                continue
            recent.append(step.loss)
            if self.n_iter_ % self.callback_every == 0:
                info = {"iteration": self.n_iter_, "samples_seen": self.n_samples_seen_,
                        "train_loss": float(np.mean(recent)), "model": self,
                        "batch_index": batch.index, "batch_grad": step.grad,
                        "step": step.gamma}
                if eval_set is not None:
                    Xv, yv = eval_set
                    info["test_loss"] = float(np.mean(loss.value(self._raw_predict(Xv), yv)))
                recent = []
                if self.callback(info) is False:
                    break

    def _fit_xy(self, X: np.ndarray, y: np.ndarray,
                eval_set: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """``n_iter`` iterations on the rows of X (targets y from :meth:`labels`) in DSG's
        keyed epochs, the array taken as one part of training rows
        (:func:`~kernel_lab.core.rows.mapreduce.one_part`): a warm start continues the stream
        where the last fit left it."""
        self._fit_parts(*one_part(X, y), X, eval_set)

    def _fit_parts(self, parts: PartMap, plan: RowPlan, X: np.ndarray,
                   eval_set: tuple[np.ndarray, np.ndarray] | None = None,
                   sigma: float | None = None, raw: bool = False) -> None:
        """:meth:`_fit_xy` on the training rows of a data set's parts: ``X`` gives the
        columns (and the bandwidth when ``sigma`` is None); ``raw``: the parts hold the
        raw targets, made into :meth:`labels` batch by batch."""
        self._check_params()
        if not (self.warm_start and getattr(self, "n_iter_", 0) > 0):
            self._initialise(X, sigma)
        elif self._n_cached < self.n_iter_:
            self._restore_cache()
        stream = BlockStream(parts, plan, self.seed_, int(self.batch_size), p=X.shape[1],
                             start=self.stream_position_)
        batches = (iter(stream) if not raw else
                   (Rows(b.X, self.labels(b.y), b.index) for b in stream))
        seen = self.n_samples_seen_
        self.train(batches, int(self.n_iter), eval_set=eval_set)
        self.stream_position_ += self.n_samples_seen_ - seen

    def _fit_row_set(self, parts: PartMap, plan: RowPlan,
                     eval_set: tuple[Any, Any] | None) -> None:
        """``fit`` on a data set of the row layer or a Dask array's chunks
        (:func:`~kernel_lab.core.models.inputs.row_set`): the targets' summary (offset or
        classes) and the bandwidth from keyed rows, then the keyed epochs over the parts —
        the batches, and so the model, of the same rows as an array."""
        warm = self.warm_start and getattr(self, "n_iter_", 0) > 0
        width = rows_width(parts, plan)
        if warm and width != self.n_features_in_:
            raise ValueError(f"X has {width} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        sigma = None
        if not warm:
            self._check_params()
            self._row_targets(parts, plan)
            sigma = rows_bandwidth(parts, plan) if self.sigma is None else float(self.sigma)
            self.n_features_in_ = width
        ev = None
        if eval_set is not None:
            Xv = validate_data(self, eval_set[0], reset=False, dtype=np.float64)
            ev = (Xv, self.labels(np.asarray(eval_set[1])))
        self._fit_parts(parts, plan, np.zeros((0, width)), ev, sigma, raw=True)

    def _row_targets(self, parts: PartMap, plan: RowPlan) -> None:
        """Set what :meth:`labels` needs from the training targets of a data set."""
        raise NotImplementedError

    def _partial_xy(self, X: np.ndarray, y: np.ndarray) -> None:
        if not hasattr(self, "coef_"):
            self._check_params()
            self._initialise(X)
        elif self._n_cached < self.n_iter_:
            self._restore_cache()
        B, n = int(self.batch_size), X.shape[0]
        index = np.arange(n)
        self.train(Rows(X[s:s + B], y[s:s + B], index[s:s + B]) for s in range(0, n, B))

    def _restore_cache(self) -> None:
        """Regenerate the working cache of features to continue training."""
        W, b = self._features(0, self.n_iter_)
        r = self._coef_buf.shape[1]
        self._W_buf = np.zeros((W.shape[0], self._coef_buf.shape[0] * r))
        self._b_buf = np.zeros(self._coef_buf.shape[0] * r)
        self._W_buf[:, : W.shape[1]] = W
        self._b_buf[: b.size] = b
        self._n_cached = self.n_iter_

    @property
    def n_random_features_(self) -> int:
        """Random features generated so far (iterations × features per iteration)."""
        return int(self.n_iter_ * self._coef_buf.shape[1])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


class DSGRegressor(DaskFront, RegressorMixin, _DSGBase):
    """Kernel regression by doubly stochastic gradients.

    Parameters
    ----------
    loss : {"squared", "epsilon_insensitive", "quantile"}
    kernel : {"gaussian", "laplace", "cauchy", "matern32", "matern52"}
    sigma : float or None
        Bandwidth; None = median pairwise distance of the training inputs.
    nu : float
        Regulariser ν of ``E l(f(x), y) + (ν/2)‖f‖²``; matches kernel ridge with λ = n ν.
    theta, t0 : float or None
        Step size ``γ_i = θ/(i + t0)``; defaults θ = 1/ν (the O(1/t) rate needs θ of order
        1/ν) and t0 = θ (first step about 1).
    n_iter : int
        Iterations of :meth:`fit`.
    batch_size : int
        Points per iteration. :meth:`fit` takes its batches as consecutive rows of keyed
        epochs over the rows (random reshuffling by blocks of rows, keyed by the row index
        and the seed: :class:`~kernel_lab.core.dsg.stream.BlockStream`), the batches the
        learning curve takes from the same rows wherever they live; :meth:`partial_fit`
        takes the rows in order.
    n_features_per_iter : int
        Random features generated per iteration.
    epsilon, quantile : float
        Parameters of the ε-insensitive and quantile losses.
    cache_features : bool
        Keep the features after fitting (faster prediction, O(t r p) memory) instead of
        regenerating them from the seeds.
    callback : callable, optional
        Called every ``callback_every`` iterations with a dict (iteration, samples_seen,
        train_loss — the mean loss of the recent batches before their updates — and the
        model); returning False stops training.
    callback_every : int
    warm_start : bool
        A further :meth:`fit` continues training for ``n_iter`` more iterations.
    random_state : int, RandomState, Generator or None

    Attributes
    ----------
    coef_ : ndarray, shape (n_iter_, n_features_per_iter)
        Coefficients up to the running ``scale_``: ``α_j = scale_ · coef_[j]``.
    scale_ : float
    n_iter_, n_samples_seen_ : int
    offset_ : float
        Mean of the training targets, added to predictions (an unpenalised intercept).
    kernel_ : ShiftInvariantKernel
    seed_ : int
        Seed from which every iteration's features are regenerated, and of the keyed
        epochs of :meth:`fit`.
    stream_position_ : int
        Rows of :meth:`fit`'s stream of epochs used so far (a warm start goes on from
        there).
    """

    _parameter_checks: ClassVar = {**_DSGBase._parameter_checks, "loss": OneOf(REGRESSION_LOSSES)}

    def _prepare_targets(self, classes: Iterable[Any] | None, offset: float) -> None:
        if classes is not None:
            raise ParameterError("a regressor has no classes; give the targets' offset")
        self.offset_ = float(offset)

    def labels(self, y: np.ndarray) -> np.ndarray:
        """The targets DSG fits: ``y − offset_``."""
        return np.asarray(y, dtype=np.float64) - self.offset_

    def __init__(self, loss: str = "squared", *, kernel: str = "gaussian",
                 sigma: float | None = None, nu: float = 1e-4, theta: float | None = None,
                 t0: float | None = None, n_iter: int = 500, batch_size: int = 32,
                 n_features_per_iter: int = 8, epsilon: float = 0.1, quantile: float = 0.5,
                 cache_features: bool = False, callback: Any = None, callback_every: int = 50,
                 warm_start: bool = False, random_state: Any = None) -> None:
        super().__init__(loss=loss, kernel=kernel, sigma=sigma, nu=nu, theta=theta, t0=t0,
                         n_iter=n_iter, batch_size=batch_size,
                         n_features_per_iter=n_features_per_iter, epsilon=epsilon,
                         quantile=quantile, cache_features=cache_features, callback=callback,
                         callback_every=callback_every, warm_start=warm_start,
                         random_state=random_state)

    def _row_targets(self, parts: PartMap, plan: RowPlan) -> None:
        self.offset_ = (target_median(parts, plan) if self.loss == "quantile" else
                        target_summary(parts, plan).mean)

    def fit(self, X: Any, y: Any = None, eval_set: tuple[Any, Any] | None = None
            ) -> DSGRegressor:
        """Train for ``n_iter`` iterations (continuing a previous fit if ``warm_start``).

        ``eval_set=(X_test, y_test)`` adds its loss as ``test_loss`` to the callback's info.
        X may also be a data set of the row layer (given alone) or a Dask array or
        dataframe with its targets y: trained on the rows where they are, in the same
        keyed epochs — the same rows give the same model
        (:mod:`~kernel_lab.core.models.inputs`).
        """
        X, y = rows_input(X, y)
        rows = row_set(X)
        if rows is not None:
            self._fit_row_set(*rows, eval_set)
            return self
        warm = self.warm_start and getattr(self, "n_iter_", 0) > 0
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, reset=not warm)
        if not warm:  # the mean as the learning curve takes it: summed per row block
            self.offset_ = (float(np.median(y)) if self.loss == "quantile" else
                            target_summary(*one_part(X, y)).mean)
        ev = None
        if eval_set is not None:
            Xv = validate_data(self, eval_set[0], reset=False, dtype=np.float64)
            ev = (Xv, np.asarray(eval_set[1], dtype=np.float64) - self.offset_)
        self._fit_xy(X, self.labels(y), ev)
        return self

    def partial_fit(self, X: Any, y: Any) -> DSGRegressor:
        """Continue training on a stream: the rows of X are used as consecutive batches."""
        first = not hasattr(self, "coef_")
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, reset=first)
        if first:
            self.offset_ = float(y.mean())
        self._partial_xy(X, self.labels(y))
        return self

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._raw_predict(X) + self.offset_


class DSGClassifier(DaskFront, ClassifierMixin, _DSGBase):
    """Kernel classification by doubly stochastic gradients.

    Parameters as :class:`DSGRegressor`, with ``loss`` one of ``"hinge"``,
    ``"squared_hinge"``, ``"logistic"``, ``"multinomial"``. With two classes the labels are
    mapped to ±1 (``classes_[1]`` is +1) and f is one score. With more than two classes —
    or with ``loss="multinomial"`` — f has one score per class and the loss is the
    multinomial (softmax) one; ``"logistic"`` is taken to mean it there, as in
    scikit-learn's logistic regression. ``multinomial_`` says which was used.
    """

    _parameter_checks: ClassVar = {**_DSGBase._parameter_checks,
                                   "loss": OneOf(CLASSIFICATION_LOSSES + MULTICLASS_LOSSES)}

    def _loss_name(self) -> str:
        return "multinomial" if getattr(self, "multinomial_", False) else str(self.loss)

    def _set_classes(self, classes: np.ndarray) -> None:
        self.classes_ = classes
        k = classes.size
        if k > 2 and self.loss not in ("logistic", "multinomial"):
            raise ValueError(f"the {self.loss} loss separates two classes and the target has "
                             f"{k}; use loss='logistic' (multinomial softmax) for more")
        self.multinomial_ = k > 2 or self.loss == "multinomial"
        self._n_outputs = k if self.multinomial_ else 1

    def __init__(self, loss: str = "logistic", *, kernel: str = "gaussian",
                 sigma: float | None = None, nu: float = 1e-4, theta: float | None = None,
                 t0: float | None = None, n_iter: int = 500, batch_size: int = 32,
                 n_features_per_iter: int = 8, epsilon: float = 0.1, quantile: float = 0.5,
                 cache_features: bool = False, callback: Any = None, callback_every: int = 50,
                 warm_start: bool = False, random_state: Any = None) -> None:
        super().__init__(loss=loss, kernel=kernel, sigma=sigma, nu=nu, theta=theta, t0=t0,
                         n_iter=n_iter, batch_size=batch_size,
                         n_features_per_iter=n_features_per_iter, epsilon=epsilon,
                         quantile=quantile, cache_features=cache_features, callback=callback,
                         callback_every=callback_every, warm_start=warm_start,
                         random_state=random_state)

    def _prepare_targets(self, classes: Iterable[Any] | None, offset: float) -> None:
        found = np.unique(np.asarray([] if classes is None else list(classes)))
        if found.size < 2:
            raise ValueError(f"DSGClassifier needs every class label to prepare training "
                             f"(at least two; got {found.size})")
        self._set_classes(found)

    def labels(self, y: np.ndarray) -> np.ndarray:
        """±1 labels, or class codes 0 … K−1 under the multinomial loss."""
        if self.multinomial_:
            codes = np.searchsorted(self.classes_, y)
            if np.any(codes >= self.classes_.size) or np.any(self.classes_[
                    np.minimum(codes, self.classes_.size - 1)] != y):
                raise ValueError("y holds labels not seen in the classes of the first fit")
            return codes.astype(np.float64)
        return np.where(y == self.classes_[1], 1.0, -1.0)

    def _row_targets(self, parts: PartMap, plan: RowPlan) -> None:
        classes = target_summary(parts, plan, values=True).values
        if classes.size < 2:
            raise ValueError("DSGClassifier needs two classes; only one class is present")
        self._set_classes(classes)

    def fit(self, X: Any, y: Any = None, eval_set: tuple[Any, Any] | None = None
            ) -> DSGClassifier:
        """Train for ``n_iter`` iterations; ``eval_set`` as in :meth:`DSGRegressor.fit`.
        X may also be a data set of the row layer or a Dask array or dataframe with its
        class labels y (numbers), as in :meth:`DSGRegressor.fit`."""
        X, y = rows_input(X, y)
        rows = row_set(X)
        if rows is not None:
            self._fit_row_set(*rows, eval_set)
            return self
        warm = self.warm_start and getattr(self, "n_iter_", 0) > 0
        X, y = validate_data(self, X, y, dtype=np.float64, reset=not warm)
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind not in ("binary", "multiclass"):
            raise ValueError(f"DSGClassifier needs class labels; got a {kind} target")
        if not warm:
            classes = np.unique(y)
            if classes.size < 2:
                raise ValueError("DSGClassifier needs two classes; only one class is present")
            self._set_classes(classes)
        ev = None
        if eval_set is not None:
            Xv = validate_data(self, eval_set[0], reset=False, dtype=np.float64)
            ev = (Xv, self.labels(np.asarray(eval_set[1])))
        self._fit_xy(X, self.labels(y), ev)
        return self

    def partial_fit(self, X: Any, y: Any, classes: Any = None) -> DSGClassifier:
        first = not hasattr(self, "coef_")
        X, y = validate_data(self, X, y, dtype=np.float64, reset=first)
        if first:
            found = np.unique(y if classes is None else classes)
            if found.size < 2:
                raise ValueError("partial_fit needs every class on the first call "
                                 "(pass classes=[a, b, …])")
            self._set_classes(found)
        self._partial_xy(X, self.labels(y))
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._raw_predict(X)

    def predict(self, X: Any) -> np.ndarray:
        score = self.decision_function(X)
        if self.multinomial_:
            return self.classes_[np.argmax(score, axis=1)]
        return np.where(score >= 0, self.classes_[1], self.classes_[0])

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities under the logistic or multinomial loss."""
        if self._loss_name() not in ("logistic", "multinomial"):
            raise AttributeError(f"predict_proba needs the logistic loss, not {self.loss!r}")
        score = self.decision_function(X)
        if not self.multinomial_:
            score = np.column_stack([np.zeros_like(score), score])
        score = score - score.max(axis=1, keepdims=True)
        e = np.exp(score)
        return e / e.sum(axis=1, keepdims=True)


def checkpoints(n_iter: int, count: int) -> np.ndarray:
    """About ``count`` log-spaced iteration numbers from 1 to ``n_iter`` (distinct): where a
    learning curve measures the model."""
    pts = np.unique(np.round(np.logspace(0, math.log10(n_iter), count)).astype(int))
    return pts[(pts >= 1) & (pts <= n_iter)]

