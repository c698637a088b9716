"""Nested runs of the ``nystrom`` experiment: every streamed landmark count s of one trial
from one draw of the largest.

Uniform sampling, RP-Cholesky and random features draw their landmarks (features) one
after another, and every prefix of a draw is itself a draw of the method at that size:
the first s points of a uniformly random order are a uniform sample of s; RP-Cholesky's
k-th pivot is drawn ∝ the residual left by the pivots before it, so its first s pivots are
RP-Cholesky's law at s (its accelerated form keeps that law, see
:class:`~kernel_lab.core.samplers.RPCholeskySampler`); the first s of D i.i.d. random
features (orthogonal ones: whole blocks of p, then the first columns of the next, as a
draw of s makes them) are a draw of s. So one trial of these methods draws the largest s
once and measures every s on its prefix, and one pass over the training rows serves all
of them: the kernel columns (features) of each group of landmarks between consecutive
sizes are evaluated once, and the Gram blocks of the groups add up to the centred sums of
every prefix (:meth:`CentredSums.leading`). With sizes 10, 20, …, 160 that is the work of
the largest alone, about half the work of five separate draws.

Only the sizes whose features stream over row blocks (n above one block of rows; there
the pass is the cost) are nested: smaller sizes, and every size of small data, stay cells
of their own with the draws and times they always had. At those sizes n·s is above
RP-Cholesky's stored limit, so a draw of s alone would take the accelerated form too.

Time at s: what the trial spent until its features at s were complete — the draw until
its s-th landmark was final (RP-Cholesky: the end of the round that accepted it, whose
proposals were sized for the largest s), the factorisation of the s × s W, and the pass's
work on the groups up to s (their kernel columns, each timed, and their share of the Gram
product) plus its bookkeeping: the work of a streamed cell at s (the landmarks, the
features' sums), as :func:`kernel_lab.experiments.nystrom_cells.run_cell` times it. The Gram
matrix of all groups is one product per block of rows (split by groups it cost two fifths
more); each group is charged its share of that product's multiply-adds,
``(hi² − lo²) / s_max²`` for the group of columns lo..hi — a measured time divided by
operation counts, not a time measured per group.

The samples of one trial are therefore not independent across sizes (the medians over
trials are); the recursive-RLS samplers, whose samples do not nest (their λ follows s),
keep one draw per size and trial (:func:`kernel_lab.experiments.nystrom_cells.run_cell`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core.approx_error import residual_norm
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.models.nystrom import nystrom_features, nystrom_normalization
from kernel_lab.core.models.rff import cos_features, sample_features
from kernel_lab.core.models.streaming import (
    CentredSums,
    StreamedRidge,
    column_means,
    columns_well_conditioned,
)
from kernel_lab.core.samplers import SAMPLERS, CountingKernel
from kernel_lab.core.validation import check_generator

#: Random Fourier features beside the landmark samplers, on the same axes (s features):
#: name → orthogonal.
RANDOM_FEATURES = {"rff": False, "rff-orthogonal": True}

#: The samplers and features whose draws nest (see the module docstring).
NESTED = ("uniform", "rp-cholesky", *RANDOM_FEATURES)

#: Up to this many evaluation points ‖K − FFᵀ‖₂ comes from a full eigendecomposition; above,
#: from Lanczos (the same value to about 1e-10 relative, 20–60 times faster at 2000 points).
EXACT_MAX = 500


def cell_measures(features: Any, ridge: StreamedRidge | None, F: np.ndarray | None,
                  coef: np.ndarray, intercept: float, kernel_diag_sum: float,
                  X_eval: np.ndarray, K_eval: np.ndarray, X_test: np.ndarray,
                  y_test: np.ndarray, rows: int) -> dict[str, float]:
    """The measures of one fitted feature map: ‖K − FFᵀ‖₂ on the evaluation rows, the
    trace error ``Σ k(x, x) − ‖F‖_F²`` (F held whole, or its streamed sums), and the test
    RMSE of the downstream ridge (predicted in blocks of ``rows``)."""
    squared = ridge.squared_norm if F is None else float(np.einsum("ij,ij->", F, F))
    spectral = residual_norm(K_eval, features.transform(X_eval), exact_max=EXACT_MAX).value
    pred = np.concatenate([features.transform(X_test[i:i + rows]) @ coef + intercept
                           for i in range(0, X_test.shape[0], rows)])
    return {"spectral": spectral, "trace": float(kernel_diag_sum - squared),
            "rmse": float(np.sqrt(np.mean((pred - y_test) ** 2)))}


@dataclass(frozen=True)
class CellTask:
    """One (sampler, s, trial) cell, or (Algorithm 2, λ, trial) with ``s=None`` and
    ``rls_lam`` set, or a nested trial (:data:`NESTED`) at every s of ``sizes`` (ascending)
    with ``s=None``; ``lam=None`` chooses the downstream λ by cross-validation. Picklable.

    ``view_rows``: the training rows whose scores the picture shows (None: all);
    ``block_rows``: rows of features per block (None: ``FEATURE_BLOCK_ENTRIES`` / s of
    :mod:`~kernel_lab.experiments.nystrom_cells`; a nested trial needs it)."""

    sampler: str
    s: int | None
    seed: np.random.SeedSequence
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    eval_rows: np.ndarray
    K_eval: np.ndarray
    kernel: Kernel
    lam: float | None
    rls_lam: float | None = None
    view_rows: np.ndarray | None = None
    block_rows: int | None = None
    sizes: tuple[int, ...] = ()


class PrefixLandmarks:
    """Nyström features on the first s landmarks of a nested draw (the attributes of
    :class:`~kernel_lab.core.models.nystrom.NystromFeatures` that the experiment reads)."""

    def __init__(self, kernel: Kernel, landmarks: np.ndarray, W: np.ndarray) -> None:
        self.kernel_, self.landmarks_ = kernel, landmarks
        self.normalization_, self.lower_inverse_ = nystrom_normalization(W)

    @property
    def sums_of_columns(self) -> bool:
        """Whether the sums of k(X, S) may be mapped to those of F (see
        :func:`~kernel_lab.core.models.streaming.kernel_columns`)."""
        return (self.lower_inverse_ is not None
                or columns_well_conditioned(self.normalization_))

    def transform(self, X: np.ndarray) -> np.ndarray:
        return nystrom_features(self.kernel_, X, self.landmarks_, self.normalization_,
                                self.lower_inverse_)


class PrefixFeatures:
    """The first s of a draw of random Fourier features, ``√(2/s) cos(Xw + b)``."""

    def __init__(self, W: np.ndarray, b: np.ndarray) -> None:
        self.W, self.b = W, b
        self.scale = math.sqrt(2.0 / W.shape[1])
        self.sums_of_columns = True
        self.normalization_ = self.scale * np.eye(W.shape[1])

    def transform(self, X: np.ndarray) -> np.ndarray:
        return cos_features(X, self.W, self.b, self.scale)


@dataclass
class _Draw:
    """A nested draw: per size its features, the seconds and kernel entries the draw had
    spent when they were complete, and (landmark samplers) the sample."""

    columns: Any                      # (rows, lo, hi) → columns lo..hi of k(X, S) or cos
    features: list[Any]
    seconds: list[float]
    evaluations: list[int]
    order: np.ndarray | None = None
    scores: np.ndarray | None = None


def _draw(task: CellTask, t0: float) -> _Draw:
    sizes, s_max, kernel = task.sizes, task.sizes[-1], task.kernel
    rng = check_generator(task.seed)
    if task.sampler in RANDOM_FEATURES:
        W, b = sample_features(kernel, task.X.shape[1], s_max, rng,
                               orthogonal=RANDOM_FEATURES[task.sampler])
        drawn = time.perf_counter() - t0
        features, seconds = [], []
        for s in sizes:
            t = time.perf_counter()
            features.append(PrefixFeatures(W[:, :s], b[:s]))
            seconds.append(drawn + time.perf_counter() - t)
        return _Draw(lambda A, lo, hi: cos_features(A, W[:, lo:hi], b[lo:hi], 1.0),
                     features, seconds, [0] * len(sizes))
    sample = SAMPLERS[task.sampler]().sample(task.X, kernel, s_max, rng)
    assert sample.order is not None, f"{task.sampler} does not nest"
    order = sample.order
    if sample.marks is None:  # uniform: the whole draw at once
        marks = np.tile([time.perf_counter() - t0, sample.kernel_evaluations], (s_max, 1))
    else:
        marks = sample.marks
    landmarks = task.X[order]
    counter = CountingKernel(kernel)
    t = time.perf_counter()
    K_SS = counter(landmarks)
    spent = (time.perf_counter() - t) / s_max**2  # per entry of W
    features, seconds, evaluations = [], [], []
    for s in sizes:
        t = time.perf_counter()
        features.append(PrefixLandmarks(kernel, landmarks[:s], K_SS[:s, :s]))
        seconds.append(float(marks[s - 1, 0]) + spent * s * s + time.perf_counter() - t)
        evaluations.append(int(marks[s - 1, 1]) + s * s)
    return _Draw(lambda A, lo, hi: kernel(A, landmarks[lo:hi]), features, seconds,
                 evaluations, order, sample.scores)


def _pass(task: CellTask, columns: Any, sizes: tuple[int, ...]
          ) -> tuple[CentredSums, np.ndarray, float]:
    """One pass over the rows: the centred sums of the columns of every group of landmarks
    (between consecutive ``sizes``) and of their Gram blocks, added over row blocks.
    Returns the sums of the first ``sizes[-1]`` columns, the seconds spent per group and
    the bookkeeping's."""
    groups = list(zip((0, *sizes[:-1]), sizes, strict=True))
    s_max = sizes[-1]
    spent = np.zeros(len(groups))
    shared = 0.0
    total: CentredSums | None = None
    rows = task.block_rows
    assert rows is not None, "a nested trial needs its block of rows"
    # the Gram matrix of all groups is one product per block (split by groups, into each
    # group's own block and its products with every earlier group, it cost 6.1 against
    # 4.4 ns per entry for 160 columns in groups of 10, 10, 20, 40, 80); a group is charged
    # the share of its multiply-adds, ``(hi² − lo²) / s_max²``, of that product's time
    share = np.array([(hi * hi - lo * lo) / (s_max * s_max) for lo, hi in groups])
    centred = np.empty((min(rows, task.X.shape[0]), s_max))
    scratch = np.empty((s_max, s_max))
    for start in range(0, task.X.shape[0], rows):
        t = time.perf_counter()
        Xb, yb = task.X[start:start + rows], task.y[start:start + rows]
        y_mean = float(yb.mean())
        yc = yb - y_mean
        mean, rhs = np.empty(s_max), np.empty(s_max)
        Cb = centred[:Xb.shape[0]]
        shared += time.perf_counter() - t
        for j, (lo, hi) in enumerate(groups):
            t = time.perf_counter()
            C = columns(Xb, lo, hi)
            mean[lo:hi] = column_means(C)
            C -= mean[lo:hi]
            rhs[lo:hi] = C.T @ yc
            Cb[:, lo:hi] = C
            spent[j] += time.perf_counter() - t
        t = time.perf_counter()
        gram = Cb.T @ Cb
        spent += (time.perf_counter() - t) * share
        t = time.perf_counter()
        part = CentredSums(Xb.shape[0], mean, y_mean, gram, rhs)
        total = part if total is None else total.absorb(part, scratch)
        shared += time.perf_counter() - t
    assert total is not None, "no rows"
    return total, spent, shared


def run_nested(task: CellTask) -> list[dict[str, Any]]:
    """Every size of one trial (see the module docstring): per size the dictionary of
    :func:`kernel_lab.experiments.nystrom_cells.run_cell`."""
    t0 = time.perf_counter()
    draw = _draw(task, t0)
    # the shared pass goes up to the largest size whose sums of k(X, S) are accurate; a
    # size whose W is too ill-conditioned for them (rare; then mostly the largest ones, as
    # W's condition grows with s) sums its own features in a pass of its own
    ok = [j for j, f in enumerate(draw.features) if f.sums_of_columns]
    if ok:
        sums, spent, shared = _pass(task, draw.columns, task.sizes[:ok[-1] + 1])
        pass_seconds = np.cumsum(spent) + shared
    X, y = task.X, task.y
    diag = float(task.kernel.diag(X).sum())
    X_eval = X[task.eval_rows]
    out = []
    for j, (s, features) in enumerate(zip(task.sizes, draw.features, strict=True)):
        rows = max(1, (task.block_rows or 1) * task.sizes[-1] // s)
        if features.sums_of_columns:
            ridge = StreamedRidge.of_sums(sums.leading(s).mapped(features.normalization_),
                                          features.transform, X, y, rows)
            seconds = draw.seconds[j] + float(pass_seconds[j])
        else:  # an ill-conditioned W: its own pass over the features themselves
            t = time.perf_counter()
            ridge = StreamedRidge(features.transform, X, y, rows)
            seconds = draw.seconds[j] + time.perf_counter() - t
        coef, intercept, ridge_lam = ridge.solve(task.lam)
        res: dict[str, Any] = cell_measures(features, ridge, None, coef, intercept, diag,
                                            X_eval, task.K_eval, task.X_test, task.y_test,
                                            rows)
        indices = scores = None
        if draw.order is not None:
            indices = np.sort(draw.order[:s])
        if draw.scores is not None:  # RP-Cholesky: k(x, x) / Σ k · s, scaled to this s
            scores = draw.scores * (s / task.sizes[-1])
            if task.view_rows is not None:
                scores = scores[task.view_rows]
        res.update({"time": seconds, "evals": draw.evaluations[j], "landmarks": s,
                    "ridge_lam": ridge_lam, "indices": indices, "scores": scores})
        out.append(res)
    return out
