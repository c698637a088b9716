"""Experiment ``nystrom``: landmark samplers compared on approximation error, time, kernel
evaluations and downstream ridge regression — fixed-size samplers at the given s, recursive
RLS at a fixed λ (Musco & Musco, Algorithm 2) at the number of landmarks it draws, under the
light protocol or the paper's (Section 5; see ``docs/papers.md``).

At scale the n × s features are never held whole: one pass over row blocks of at most
:data:`FEATURE_BLOCK_ENTRIES` entries accumulates what the trace error and the downstream
ridge need (FᵀF, Fᵀy and column sums); the spectral error is measured on a seeded subset of
eval_points training rows, the test RMSE on at most :data:`TEST_MAX` test points and the
picture shows at most :data:`VIEW_MAX` points — each subset is stated in the summaries."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from kernel_lab.core.approx_error import effective_dimension
from kernel_lab.core.dataset import Dataset
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import KERNELS, Kernel
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.models import CenteredKernelRidge
from kernel_lab.core.models.feature_ridge import feature_ridge, ridge_loo
from kernel_lab.core.models.nystrom import NystromFeatures, nystrom_factor
from kernel_lab.core.models.rff import RFF_KERNELS, RandomFourierFeatures
from kernel_lab.core.models.streaming import StreamedRidge, kernel_columns
from kernel_lab.core.params import ParamSpec
from kernel_lab.core.progress import Progress
from kernel_lab.core.samplers import (
    BLOCK_ENTRIES,
    RPC_STORED_MAX,
    SAMPLERS,
    CountingKernel,
    RecursiveRLSSampler,
    Sample,
    check_fixed_lam,
)
from kernel_lab.core.validation import check_generator
from kernel_lab.experiments.base import (
    SERIAL,
    Experiment,
    PartialResult,
    PlotSpec,
    TaskExecutor,
    build_kernel,
    kernel_param_specs,
    pad_columns,
)
from kernel_lab.experiments.nystrom_nested import (
    NESTED,
    RANDOM_FEATURES,
    CellTask,
    cell_measures,
    run_nested,
)
from kernel_lab.experiments.nystrom_words import (
    landmark_summaries,
    picture_summaries,
    spectral_summaries,
)
from kernel_lab.experiments.plotspec import Curve


def parse_sizes(text: str, n: int) -> np.ndarray:
    """``'25, 50, 100'`` → sorted distinct landmark counts, each checked against n."""
    try:
        sizes = sorted({int(float(v)) for v in str(text).replace(";", ",").split(",")
                        if v.strip()})
    except ValueError:
        raise ParameterError(f"landmark counts {text!r} must be whole numbers separated by "
                             "commas, e.g. 25,50,100") from None
    if not sizes or sizes[0] < 1:
        raise ParameterError("landmark counts must be positive, e.g. 25,50,100")
    if sizes[-1] > n:
        raise ParameterError(f"s = {sizes[-1]} landmarks is more than the n = {n} training "
                             f"points; use counts up to {n}")
    return np.asarray(sizes)


def parse_lams(text: str) -> np.ndarray:
    """``'1, 0.1, 0.01'`` → the distinct λ values of Algorithm 2, largest first (so the
    realised sample sizes grow along the table)."""
    try:
        values = {float(v) for v in str(text).replace(";", ",").split(",") if v.strip()}
    except ValueError:
        raise ParameterError(f"the λ values of Algorithm 2 {text!r} must be numbers "
                             "separated by commas, e.g. 1,0.1,0.01") from None
    if not values:
        raise ParameterError("give at least one λ for Algorithm 2, e.g. 1,0.1,0.01")
    return np.asarray(sorted((check_fixed_lam(v) for v in values), reverse=True))


#: Algorithm 2 of Musco & Musco (fixed λ, sample size set by d_eff(λ)) as a sampler choice;
#: its runs are placed at the number of landmarks they actually sampled.
FIXED_LAMBDA = "recursive-rls-lambda"

#: The paper's protocol (Musco & Musco, Section 5): the spectral error on at most 20 000
#: points, the mean of 10 trials, the downstream ridge λ by cross-validation.
PAPER_EVAL_POINTS = 20_000
PAPER_TRIALS = 10
#: The downstream λ of the paper protocol, in words (``ridge_loo``'s grid, no refinement).
CV_TEXT = ("λ by leave-one-out cross-validation (n folds of one point, exact) over 61 values "
           "log-spaced from 1e-10 to 10 × the largest eigenvalue of the centred K̃")

#: The exact-KRR line is drawn up to this many training points (light protocol), and up to
#: EXACT_CV_MAX_N under the paper protocol, whose cross-validation needs an SVD of an n × n
#: factor of K.
EXACT_MAX_N = 5000
EXACT_CV_MAX_N = 2000

#: Entries of one row block of the n × s features (8 MiB of float64): up to one block of
#: rows the features are formed whole, as they always were.
FEATURE_BLOCK_ENTRIES = BLOCK_ENTRIES

#: Above that, a cell streams its kernel columns and their Gram in blocks of at most this
#: many entries (2 MiB): the block's Gram product then runs in cache, 7 % less time per
#: cell than blocks of FEATURE_BLOCK_ENTRIES (recursive-rls-fast on 750,000 rows, s = 40
#: and 160, medians of 4). The nested pass keeps its blocks (no difference measured).
STREAM_BLOCK_ENTRIES = BLOCK_ENTRIES // 4

#: The downstream test RMSE is measured on at most this many test points (a seeded subset).
TEST_MAX = 20_000

#: The picture shows at most this many training points (a seeded subset) with their scores.
VIEW_MAX = 5_000

#: What a cell costs whatever its size (Python, small factorisations, the measures' set-up),
#: in the operations the estimate counts: about 5 ms measured per cell (n = 150, s = 10,
#: 5–25 cells; machine probe eigh 1000² in 100 ms), at the 9 GFLOPS an uncalibrated plan
#: assumes there. Small runs are mostly this (75 cells at the defaults), so without it a
#: plan calibrated on one small run over-estimated a larger one up to 3×.
CELL_OVERHEAD = 4.5e7

#: Operations the estimate counts per multiply-add of a large matrix product (Grams,
#: triangular products): those run near the probe's peak, several times the rate the
#: estimate's operations are counted at (16 % of it). Measured on 750,000 rows: 0.24 for
#: the features' Gram of 160 columns, 0.41 for Lemma 6's triangular products.
PRODUCT = 0.35


def downstream_ridge(F: np.ndarray, y: np.ndarray, lam: float | None
                     ) -> tuple[np.ndarray, float, float]:
    """Ridge on the features with an unpenalised intercept (Nyström CKRR) at ``lam``, or,
    with ``lam=None``, at the candidate λ with the least leave-one-out error
    (exact, n folds of one point, from one SVD of the centred F; the grid is
    ``ridge_loo``'s: 61 values log-spaced over ``[1e-10, 10] · λ_max(F_cᵀ F_c)``, without
    refinement). Returns the coefficients, the intercept and the λ used."""
    if lam is not None:
        coef, intercept = feature_ridge(F, y, lam)
        return coef, intercept, float(lam)
    coef, intercept, chosen, _ = ridge_loo(F, y, refine=False)
    return coef, intercept, chosen


class SampledFeatures:
    """Nyström features ``x ↦ W^{-1/2} k(S, x)`` on the landmarks of a sampler whose size is
    its own (Algorithm 2 at a fixed λ), with the attributes :class:`NystromFeatures` has."""

    def __init__(self, kernel: Kernel, sampler: RecursiveRLSSampler, X: np.ndarray,
                 seed: Any) -> None:
        sample: Sample = sampler.sample(X, kernel, None, check_generator(seed))
        counter = CountingKernel(kernel)
        self.kernel_ = kernel
        self.landmark_indices_ = sample.indices
        self.landmarks_ = X[sample.indices]
        self.normalization_ = nystrom_factor(counter(self.landmarks_))
        self.lower_inverse_ = None  # the eigenbasis (see NystromFeatures)
        self.scores_ = sample.scores
        self.kernel_evaluations_ = sample.kernel_evaluations + counter.evaluations

    def transform(self, X: np.ndarray) -> np.ndarray:
        return self.kernel_(X, self.landmarks_) @ self.normalization_


def run_cell(task: CellTask) -> dict[str, Any]:
    """Fit s Nyström features (landmark sampling and factorisation), the landmarks of
    Algorithm 2 at λ, or s random Fourier features, and measure the n × s factor F:
    ‖K − FFᵀ‖₂ on the evaluation rows, tr(K − FFᵀ), the time to F, kernel evaluations,
    the number of landmarks (features), the downstream λ and test RMSE. Up to one block of
    rows F is formed whole; above, it is streamed over row blocks (:class:`StreamedRidge`)
    and never held, and the time includes that pass."""
    t0 = time.perf_counter()
    if task.sampler in RANDOM_FEATURES:
        kernel = task.kernel
        features: Any = RandomFourierFeatures(
            kernel.name, sigma=kernel.params()["sigma"], n_components=task.s,
            orthogonal=RANDOM_FEATURES[task.sampler], random_state=task.seed).fit(task.X)
        width = int(task.s)
    elif task.sampler == FIXED_LAMBDA:
        features = SampledFeatures(task.kernel, RecursiveRLSSampler(lam=task.rls_lam), task.X,
                                   task.seed)
        width = features.landmarks_.shape[0]
    else:
        features = NystromFeatures(task.kernel, n_components=task.s, sampler=task.sampler,
                                   random_state=task.seed).fit(task.X)
        width = features.landmarks_.shape[0]
    whole = task.block_rows or max(1, FEATURE_BLOCK_ENTRIES // max(width, 1))
    rows = task.block_rows or max(1, STREAM_BLOCK_ENTRIES // max(width, 1))
    F = ridge = None
    if task.X.shape[0] <= whole:  # one block: F in memory
        F = features.transform(task.X)
        seconds = time.perf_counter() - t0
        coef, intercept, ridge_lam = downstream_ridge(F, task.y, task.lam)
    else:
        ridge = StreamedRidge(features.transform, task.X, task.y, rows,
                              kernel_columns(features))
        seconds = time.perf_counter() - t0
        coef, intercept, ridge_lam = ridge.solve(task.lam)
    out: dict[str, Any] = cell_measures(
        features, ridge, F, coef, intercept, float(task.kernel.diag(task.X).sum()),
        task.X[task.eval_rows], task.K_eval, task.X_test, task.y_test, rows)
    del F
    indices = getattr(features, "landmark_indices_", None)
    scores = getattr(features, "scores_", None)
    if scores is not None and task.view_rows is not None:
        scores = scores[task.view_rows]
    out.update({"time": seconds, "evals": getattr(features, "kernel_evaluations_", 0),
                "landmarks": task.s if indices is None else indices.size,
                "ridge_lam": ridge_lam, "indices": indices, "scores": scores})
    return out


def run_task(task: CellTask) -> list[dict[str, Any]]:
    """A cell's result, or a nested trial's (one per size; see
    :mod:`~kernel_lab.experiments.nystrom_nested`)."""
    return run_nested(task) if task.sizes else [run_cell(task)]


def view_coordinates(X: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """2-D coordinates for the picture: the first two features or principal components."""
    if X.shape[1] == 1:
        return X[:, 0], np.zeros(X.shape[0])
    if how == "features" or X.shape[1] == 2:
        return X[:, 0], X[:, 1]
    Xc = X - X.mean(axis=0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    P = Xc @ Vt[:2].T
    return P[:, 0], P[:, 1]


class View:
    """The picture's points: every training point (``rows=None``, coordinates by
    :func:`view_coordinates`), or the seeded subset ``rows`` — then the principal axes come
    from the covariance of all of X accumulated over row blocks (no centred copy of X),
    each axis signed so that its largest component is positive."""

    def __init__(self, X: np.ndarray, how: str, rows: np.ndarray | None) -> None:
        self.X, self.rows = X, rows
        self.axes: np.ndarray | None = None
        if rows is None:
            self.x, self.y = view_coordinates(X, how)
            return
        p = X.shape[1]
        if p > 2 and how != "features":
            self.mean, self.axes = _principal_axes(X)
        self.x, self.y = self.coordinates(rows)

    def coordinates(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates of the training points ``idx`` (the landmarks, say)."""
        if self.rows is None:
            return self.x[idx], self.y[idx]
        return self.project(self.X[idx])

    def project(self, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates of any rows A (on the principal axes when the view has them)."""
        if A.shape[1] == 1:
            return A[:, 0], np.zeros(A.shape[0])
        if self.axes is None:
            return A[:, 0], A[:, 1]
        P = (A - self.mean) @ self.axes
        return P[:, 0], P[:, 1]


def _principal_axes(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean of X and its first two principal axes (p × 2), from ``X_cᵀX_c`` summed over
    row blocks with every column shifted by its mean over the first block."""
    n, p = X.shape
    rows = max(1, FEATURE_BLOCK_ENTRIES // p)
    shift = X[:rows].mean(axis=0)
    C, f = np.zeros((p, p)), np.zeros(p)
    for start in range(0, n, rows):
        B = X[start:start + rows] - shift
        C += B.T @ B
        f += B.sum(axis=0)
    delta = f / n
    _, V = np.linalg.eigh(C - n * np.outer(delta, delta))
    axes = V[:, ::-1][:, :2]
    axes = axes * np.sign(axes[np.argmax(np.abs(axes), axis=0), [0, 1]])
    return shift + delta, axes


#: Per-cell results aggregated into table columns ``{key}_{statistic}[sampler]``.
CELL_KEYS = ("spectral", "trace", "time", "evals", "rmse")


class NystromExperiment(Experiment):
    name = "nystrom"
    title = "Nyström landmark samplers"
    description = (
        "The Nyström method approximates the n×n kernel matrix K from s landmark columns: "
        "K̃ = C W⁺ Cᵀ. Which landmarks matters. Uniform sampling treats every point alike. "
        "Ridge leverage scores l_i(λ) = (K(K + λI)⁻¹)_ii measure how unique a point is for "
        "the kernel: points in small isolated clusters, or anywhere when the kernel is "
        "narrow, have high scores. Recursive RLS (Musco & Musco) estimates them with O(ns) "
        "kernel evaluations and samples by them; its accelerated variant uses fewer "
        "landmarks on the recursive levels; randomly pivoted Cholesky picks each landmark "
        "with probability proportional to what the previous ones leave unexplained. "
        "Random Fourier features (plain and orthogonal), the data-independent alternative, "
        "are drawn on the same axes with as many features as landmarks: their error "
        "‖K − ZZᵀ‖₂ falls only like 1/√s, which is why the recursive-RLS paper compares "
        "against them. "
        "Recursive RLS at a fixed λ (recursive-rls-lambda, the paper's Algorithm 2) is the "
        "other way round: you give λ, not s; it keeps each point with probability about "
        "log(d_eff)·l_i(λ), so the number of landmarks is random and set by the effective "
        "dimension d_eff(λ) = Σ_i l_i(λ), and the paper guarantees ‖K − K̃‖₂ ≤ λ. Each λ of "
        "'λ values (Algorithm 2)' is run once per trial and its point is drawn at the number "
        "of landmarks it actually sampled (the trials' median, or mean under the paper "
        "protocol) with that statistic of its error, next to a dotted line at λ itself — the "
        "bound, drawn at the same s. "
        "Plots: the spectral error ‖K − K̃‖₂ against the number of landmarks and against "
        "time, the downstream test RMSE of ridge regression on the features, and the data "
        "coloured by leverage score with the chosen landmarks marked. When does leverage "
        "sampling help? When the scores are far from uniform — small, tight clusters "
        "(spread well below σ), or a narrow kernel — uniform sampling misses whole regions "
        "and its error stalls, while RLS and RP-Cholesky keep improving. When the scores are "
        "nearly uniform (broad data, wide kernel) all samplers perform alike and uniform is "
        "cheapest. Downstream accuracy differs less than the spectral error does. The "
        "accelerated variant estimates the scores from only about √((ns + s³)/4n) landmarks "
        "per level (20 for n = 3000, s = 160), as the authors' code does: on imbalanced "
        "clusters it now and then misses a small cluster, so its error is heavy-tailed — "
        "a median of three trials can rise with s by chance; take ten or more. "
        "Protocol: 'light' (the default) measures the error on eval_points points, takes "
        "the median of 'trials' draws and fits the downstream ridge at the λ you set; "
        "'paper' follows Musco & Musco's Section 5 — the error on 20 000 points (all of them "
        "when there are fewer), the mean of 10 trials, and the downstream " + CV_TEXT[0].lower()
        + CV_TEXT[1:] + ", chosen per trial and sampler (the exact-KRR line alike). The "
        "summaries name the protocol that produced the figure. "
        "Large data: the n × s features are streamed in row blocks (the trace error and the "
        f"downstream ridge still use every training point); the test RMSE uses at most "
        f"{TEST_MAX:,} test points and the picture at most {VIEW_MAX:,} training points, "
        "seeded subsets that the summaries state. Where the features stream, uniform, "
        "RP-Cholesky and random features draw once per trial at the largest s and measure "
        "every streamed s on a prefix of that draw (each prefix is a draw of the method at "
        "its size), with one pass over the rows for all of them; the time at s is what the "
        "trial spent until its features at s were complete."
    )
    params = (
        *kernel_param_specs("gaussian", ("gaussian", "laplace", "cauchy", "matern32",
                                         "matern52")),
        ParamSpec("samplers", "choices", ["uniform", "recursive-rls", "recursive-rls-fast",
                                          "rp-cholesky", "rff"],
                  choices=(*SAMPLERS, FIXED_LAMBDA, *RANDOM_FEATURES),
                  label="samplers / features",
                  help="landmark samplers and random features to compare at s features each; "
                       "exact-rls forms the n×n matrix (small n only); rff-orthogonal needs "
                       "a rotation-invariant kernel (gaussian, matern); recursive-rls-lambda "
                       "runs at the λ values below and sets its own number of landmarks"),
        ParamSpec("sizes", "str", "10,20,40,80,160", label="landmark counts s",
                  help="comma-separated numbers of landmarks"),
        ParamSpec("rls_lams", "str", "1,0.1,0.01", label="λ values (Algorithm 2)",
                  help="comma-separated ridge λ for recursive-rls-lambda; each gives as many "
                       "landmarks as d_eff(λ) calls for (more as λ falls)",
                  when={"samplers": (FIXED_LAMBDA,)}),
        ParamSpec("protocol", "choice", "light", choices=("light", "paper"),
                  help="light: the settings below; paper: Musco & Musco's protocol — error "
                       "on 20 000 points (or all), mean of 10 trials, downstream λ by "
                       "leave-one-out cross-validation"),
        ParamSpec("trials", "int", 3, low=1, high=1000,
                  help="independent draws per (sampler, s); medians and quartiles reported",
                  when={"protocol": ("light",)}),
        ParamSpec("lam", "float", 1.0, label="λ (downstream ridge)", low=1e-12, high=1e12,
                  log=True, help="regularisation of the ridge regression on the features",
                  when={"protocol": ("light",)}),
        ParamSpec("eval_points", "int", 2000, label="error evaluation points", low=50,
                  high=PAPER_EVAL_POINTS,
                  help="the spectral error is measured on a random subset of at most this "
                       "many training points (the paper uses 20k)",
                  when={"protocol": ("light",)}),
        ParamSpec("view", "choice", "pca", choices=("pca", "features"),
                  help="2-D picture: first two principal components or first two features"),
    )
    # x columns: s[sampler] is the number of landmarks (features) actually used — s itself
    # for the fixed-size samplers, the realised size for Algorithm 2 — and time[sampler]
    # the seconds, both the protocol's statistic over trials; y columns end in _median
    # (light protocol) or _mean (paper protocol), whichever the run produced is drawn
    # texts in braces are the run's summaries (see spectral_summaries, picture_summaries):
    # the spectral error of a subset of the rows is labelled as that subset's
    plots = (
        PlotSpec("Spectral error ‖K − K̃‖₂ against the number of landmarks", "s[*]",
                 (Curve("spectral_median", "measured",
                        "spectral error (median){spectral_where|}"),
                  Curve("spectral_mean", "measured", "spectral error (mean){spectral_where|}"),
                  Curve("lam_bound", "reference", "bound λ (Algorithm 2)",
                        dash="dot")),
                 xlabel="{landmarks_axis|landmarks s}",
                 ylabel="{spectral_axis|‖K − K̃‖₂}",
                 logx=True, logy=True, positive=True, legend_kinds=True),
        PlotSpec("Spectral error against time", "time[*]",
                 (Curve("spectral_median", "measured",
                        "spectral error (median){spectral_where|}"),
                  Curve("spectral_mean", "measured", "spectral error (mean){spectral_where|}")),
                 xlabel="seconds (sampling, factorisation and the n × s features)",
                 ylabel="{spectral_axis|‖K − K̃‖₂}",
                 logx=True, logy=True, positive=True, legend_kinds=True),
        PlotSpec("Downstream test RMSE against the number of landmarks", "s[*]",
                 (Curve("rmse_median", "measured", "test RMSE (median)"),
                  Curve("rmse_mean", "measured", "test RMSE (mean)"),
                  Curve("rmse_exact", "baseline", "exact KRR")),
                 xlabel="{landmarks_axis|landmarks s}", ylabel="test RMSE",
                 positive=True,
                 logx=True),
        PlotSpec("Data coloured by leverage score, landmarks marked", "view_x",
                 (Curve("view_y", "measured", "training points"),),
                 xlabel="{picture_x|first coordinate}",
                 ylabel="{picture_y|second coordinate}", kind="scatter", color="view_score",
                 overlay=("landmark_x", "landmark_y"),
                 overlay_label="{landmarks_label|landmarks}",
                 color_label="{score_label|leverage score}",
                 total="view_total",
                 empty="No points to draw: the training set is empty."),
    )
    default_data = "clusters:n=3000,k=8,imbalance=3,spread=0.05"

    def fit_to_data(self, params: Mapping[str, Any], data: Dataset
                    ) -> tuple[dict[str, Any], list[str]]:
        out = dict(params)
        default = next(p.default for p in self.params if p.name == "sizes")
        n = data.n_train
        if out["sizes"] != default:
            return out, []
        sizes = [int(v) for v in default.split(",")]
        if max(sizes) <= n:
            return out, []
        out["sizes"] = ",".join(str(v) for v in sorted({min(v, n) for v in sizes}))
        return out, [f"landmark counts {default} clamped to the n = {n} training points: "
                     f"{out['sizes']}"]

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        paper = params.get("protocol", "light") == "paper"
        m = min(n, PAPER_EVAL_POINTS if paper else params.get("eval_points", 2000))
        samplers = list(params.get("samplers", [])) or ["uniform"]
        try:
            sizes = [min(int(float(v)), n) for v in str(params.get("sizes", "100")).split(",")
                     if v.strip()]
        except ValueError:
            sizes = [100]
        sizes = sizes or [100]
        trials = PAPER_TRIALS if paper else int(params.get("trials", 3))
        n_test = min(max(n // 3, 1), TEST_MAX)  # a quarter of the rows, capped
        exact_ref = n <= (EXACT_CV_MAX_N if paper else EXACT_MAX_N)
        # multiply-adds: a kernel entry ≈ p + 15 (distance and exponential), a cosine
        # feature p + 30; per cell the sampler, one pass over the n rows (the entries and
        # their s × s Gram, twice under the paper protocol), the m-point error (~25
        # products with the m × m matrix) and the test points
        entry, cosine = p + 15.0, p + 30.0
        # recursive RLS scores from coarse entries (float32 exponentials) where their
        # kernel has them: a block of them took 0.45 of the time of float64 ones (p = 10)
        kind = KERNELS.get(str(params.get("kernel", "gaussian")))
        scored = 0.45 * entry if kind is not None and kind.coarse_error else entry
        mul = PRODUCT  # per multiply-add of a large product
        passes = 2.0 if paper else 1.0
        shared = [s for s in sizes if n > max(1, FEATURE_BLOCK_ENTRIES // s)]
        shared = shared if len(shared) > 1 else []
        flops = 0.0
        for name in samplers:
            cell_sizes = ([max(sizes)] * len(str(params.get("rls_lams", "1")).split(","))
                          if name == FIXED_LAMBDA else sizes)
            for s in cell_sizes:
                measures = (m * s * (entry + mul * s) + 25.0 * m * m + n_test * s * entry
                            + mul * s**3 + CELL_OVERHEAD)
                if name in NESTED and s in shared and s != max(sizes):
                    # one draw and pass serve the streamed sizes; leave-one-out per size
                    flops += trials * (measures + (passes - 1.0) * n * s * (entry + mul * s))
                    continue
                if name in RANDOM_FEATURES:
                    sampling, per_entry = 0.0, cosine
                elif name == "uniform":
                    sampling, per_entry = 0.0, entry
                elif name in ("recursive-rls", FIXED_LAMBDA):
                    # about 1.5 n s entries over the levels, and their Lemma 6 products
                    sampling, per_entry = 1.5 * n * s * scored + mul * n * s * s, entry
                elif name == "recursive-rls-fast":
                    s_rec = math.sqrt((n * s + s**3) / (4.0 * n))
                    sampling, per_entry = (6.0 * n * s_rec * (scored + mul * s_rec) + 30.0 * n,
                                           entry)
                elif name == "rp-cholesky":
                    stored = n * s <= RPC_STORED_MAX
                    sampling = (n * s * (entry + mul * s / 2.0) if stored
                                else 0.3 * n * s * (entry + mul * 0.3 * s) + 10.0 * n)
                    per_entry = entry
                else:  # exact-rls
                    sampling, per_entry = 9.0 * n**3 + n * n * entry, entry
                flops += trials * (sampling + passes * n * s * (per_entry + mul * s)
                                   + measures)
        flops += m * m * entry + (9.0 * n**3 / 4 if exact_ref else 0.0)
        # memory: the split data (train, test and the table they came from), the m × m
        # evaluation kernel, and per cell running at once (one per core) its n-long vectors
        # (permutation, scores, residual diagonal, …), a few blocks of the features and
        # the m × s features of the evaluation rows; exact references are n × n
        s_max = max(sizes)
        workers = max(1, min(os.cpu_count() or 1, trials * len(samplers) * len(sizes)))
        cell = 8.0 * (8 * n + 4 * FEATURE_BLOCK_ENTRIES + m * s_max + n_test)
        memory = (8.0 * 2 * (n + n // 3) * (p + 1) + 8.0 * m * m + workers * cell
                  + (8.0 * 4 * n * n if exact_ref else 0.0)
                  + (8.0 * 3 * n * n if "exact-rls" in samplers else 0.0))
        note = f"spectral error on {m} of {n} points"
        if n > FEATURE_BLOCK_ENTRIES // s_max:
            note += "; features streamed over row blocks"
        if n // 3 > TEST_MAX:
            note += f"; test RMSE on {TEST_MAX} test points"
        return {"memory_bytes": memory, "flops": flops, "note": note}

    def run(self, params: Mapping[str, Any], data: Dataset, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        X, y, Xt, yt = data.X_train, data.y_train, data.X_test, data.y_test
        n = data.n_train
        if data.n_test < 1:
            raise ParameterError("the downstream error needs a test set (test fraction > 0)")
        samplers = list(params["samplers"])
        budget = [s for s in samplers if s != FIXED_LAMBDA]
        sizes = parse_sizes(params["sizes"], n) if budget else np.zeros(0, dtype=int)
        lams = parse_lams(params["rls_lams"]) if FIXED_LAMBDA in samplers else np.zeros(0)
        if "exact-rls" in samplers:
            check_allocation(3 * 8.0 * n * n, f"exact leverage scores on {n} points",
                             "Leave out the exact-rls sampler (use recursive-rls).")
        kernel = build_kernel(params, X)
        check_random_features(samplers, kernel)
        paper, trials, stat, ridge_lam, m = protocol_settings(params, n)
        rng = np.random.default_rng(np.random.SeedSequence(params["seed"]).spawn(1)[0])
        eval_rows = np.sort(rng.choice(n, size=m, replace=False)) if m < n else np.arange(n)
        where = (f"a random subset of {m} of the {n} training points" if m < n
                 else f"all {n} training points")
        summaries = protocol_summaries(params, kernel, n, m, where)
        if m < n:
            summaries["note"] = (f"spectral error measured on {where} (a lower bound of "
                                 f"the full norm); the trace error and the downstream "
                                 f"ridge use all {n}")
        # further seeded subsets from the same generator, drawn only when the data are
        # large (the draws above stay those of every earlier version)
        if data.n_test > TEST_MAX:
            test_rows = np.sort(rng.choice(data.n_test, size=TEST_MAX, replace=False))
            Xt, yt = Xt[test_rows], yt[test_rows]
            summaries["note_test"] = (f"test RMSE on a random subset of {TEST_MAX} of the "
                                      f"{data.n_test} test points")
        summaries["test_points"] = Xt.shape[0]
        view_rows = (np.sort(rng.choice(n, size=VIEW_MAX, replace=False)) if n > VIEW_MAX
                     else None)
        if view_rows is not None:
            summaries["note_view"] = (f"picture: a random subset of {VIEW_MAX} of the {n} "
                                      "training points")
        progress(0.01, f"kernel matrix of the {m} evaluation points")
        check_allocation(8.0 * m * m, f"the {m}×{m} evaluation kernel matrix",
                         "Lower eval_points." if not paper else
                         "Use the light protocol with fewer evaluation points.")
        K_eval = kernel(X[eval_rows])
        table = empty_table(samplers, sizes, lams, stat, paper)
        if lams.size:
            table[f"lam_bound[{FIXED_LAMBDA}]"] = lams.copy()
        if n <= (EXACT_CV_MAX_N if paper else EXACT_MAX_N):
            progress(0.02, "exact kernel ridge (downstream reference)")
            summaries.update(_exact_reference(X, y, Xt, yt, kernel, ridge_lam))
            table["rmse_exact"] = np.full(max(sizes.size, lams.size), summaries["rmse_exact"])
        elif paper:
            summaries["note_exact"] = (f"no exact-KRR line: its cross-validation costs "
                                       f"O(n³), done up to n = {EXACT_CV_MAX_N}")
        if lams.size and n <= EXACT_MAX_N:
            progress(0.025, "effective dimensions d_eff(λ) of K (for comparison)")
            check_allocation(8.0 * n * n, "the kernel matrix for d_eff(λ)",
                             "Leave out recursive-rls-lambda or use fewer points.")
            eigvals = np.linalg.eigvalsh(kernel(X))
            for lam_j in lams:
                summaries[f"d_eff[λ={lam_j:g}]"] = effective_dimension(eigvals, float(lam_j))
        view = View(X, params["view"], view_rows)
        summaries.update(spectral_summaries(FIXED_LAMBDA in samplers, n, m))
        summaries.update(picture_summaries(list(data.feature_names), X.shape[1],
                                           params["view"]))
        yield PartialResult(0.03, "sampling", _with_view(table, view, None, None),
                            dict(summaries))

        spawned = iter(np.random.SeedSequence(params["seed"]).spawn(
            (sizes.size * len(budget) + lams.size) * trials + 1)[1:])
        # every cell keeps the seed it always had (in the order size, sampler, trial);
        # a nested trial (one draw for all sizes) takes the seed of its smallest size
        order = [(i, name) for i in range(sizes.size) for name in budget]
        order += [(j, FIXED_LAMBDA) for j in range(lams.size)]
        seeds = {(i, name, t): next(spawned) for i, name in order for t in range(trials)}
        # the sizes whose features stream over row blocks (n above one block of rows, a
        # suffix of the sizes) share one draw and one pass per trial for the samplers
        # whose draws nest; sizes held whole stay cells of their own (see nystrom_nested)
        streamed = [i for i in range(sizes.size)
                    if n > max(1, FEATURE_BLOCK_ENTRIES // int(sizes[i]))]
        nested = tuple(int(sizes[i]) for i in streamed) if len(streamed) > 1 else ()
        tasks: list[CellTask] = []
        for i, name in order:
            if name in NESTED and nested and i >= streamed[0]:
                if i == streamed[0]:
                    tasks += [CellTask(name, None, seeds[(i, name, t)], X, y, Xt, yt,
                                       eval_rows, K_eval, kernel, ridge_lam, None, view_rows,
                                       max(1, FEATURE_BLOCK_ENTRIES // nested[-1]), nested)
                              for t in range(trials)]
                continue
            s_i = None if name == FIXED_LAMBDA else int(sizes[i])
            tasks += [CellTask(name, s_i, seeds[(i, name, t)], X, y, Xt, yt, eval_rows,
                               K_eval, kernel, ridge_lam,
                               float(lams[i]) if name == FIXED_LAMBDA else None,
                               view_rows) for t in range(trials)]
        # progress by the tasks' operation counts (a cell of 160 landmarks costs hundreds
        # of times one of 10), not by their number
        done_cost = np.cumsum([_task_cost(t, n, X.shape[1], m) for t in tasks])
        results: dict[tuple[int, str], list[dict[str, Any]]] = {}
        view_scores = view_marks = None
        for done, (task, out) in enumerate(zip(tasks, executor.map(run_task, tasks),
                                               strict=True), start=1):
            if task.sizes:
                rows = list(streamed)
                at = f"s = {task.sizes[0]}…{task.sizes[-1]}"
            else:
                rows = [_row_of(task, sizes, lams)]
                at = (f"λ = {task.rls_lam:g}" if task.sampler == FIXED_LAMBDA
                      else f"s = {task.s}")
            for i, res in zip(rows, out, strict=True):
                scores, marks = res.pop("scores"), res.pop("indices")  # one cell's only
                results.setdefault((i, task.sampler), []).append(res)
                self._fill(table, results, i, task.sampler, stat, paper)
                if view_scores is None and scores is not None \
                        and task.sampler != "rp-cholesky":
                    # the picture: leverage-type scores and landmarks of the first
                    # (smallest) landmark set of a leverage sampler, where individual
                    # landmarks stay visible
                    view_scores, view_marks = scores, marks
                    if marks is not None:
                        summaries.update(landmark_summaries(task.sampler, len(marks)))
                summaries[f"evals_per_point_max_s[{task.sampler}]"] = (
                    table[f"evals_{stat}[{task.sampler}]"][i] / n)
            if task.sampler == FIXED_LAMBDA:
                summaries.update(_fixed_lambda_summaries(table, results, lams))
            yield PartialResult(0.03 + 0.97 * float(done_cost[done - 1] / done_cost[-1]),
                                f"{task.sampler}, {at} ({done}/{len(tasks)})",
                                _with_view(table, view, view_scores, view_marks),
                                dict(summaries))

    @staticmethod
    def _fill(table: dict[str, np.ndarray], results: dict[tuple[int, str], list[dict]],
              i: int, name: str, stat: str, paper: bool) -> None:
        cell = results[(i, name)]
        average = np.mean if stat == "mean" else np.median
        spectral = np.array([r["spectral"] for r in cell])
        table[f"spectral_q25[{name}]"][i] = np.quantile(spectral, 0.25)
        table[f"spectral_q75[{name}]"][i] = np.quantile(spectral, 0.75)
        for key in CELL_KEYS:
            table[f"{key}_{stat}[{name}]"][i] = average([r[key] for r in cell])
        table[f"time[{name}]"][i] = table[f"time_{stat}[{name}]"][i]
        table[f"s[{name}]"][i] = average([r["landmarks"] for r in cell])
        if paper:
            table[f"ridge_lam_median[{name}]"][i] = np.median([r["ridge_lam"] for r in cell])


def check_random_features(samplers: list[str], kernel: Kernel) -> None:
    """Random features need a shift-invariant kernel, orthogonal ones a rotation-invariant
    one: a ParameterError saying so otherwise."""
    if "rff-orthogonal" in samplers and kernel.name not in ("gaussian", "matern32",
                                                            "matern52"):
        raise ParameterError(f"orthogonal random features need a rotation-invariant "
                             f"kernel (gaussian, matern32, matern52), not {kernel.name}; "
                             "leave rff-orthogonal out")
    if any(s in RANDOM_FEATURES for s in samplers) and kernel.name not in RFF_KERNELS:
        raise ParameterError(f"random features need a shift-invariant kernel, not "
                             f"{kernel.name}")


def protocol_settings(params: Mapping[str, Any], n: int
                      ) -> tuple[bool, int, str, float | None, int]:
    """Of the protocol: whether it is the paper's, the trials, the statistic over them,
    the downstream λ (None: by leave-one-out) and the number of evaluation points."""
    paper = params["protocol"] == "paper"
    trials = PAPER_TRIALS if paper else params["trials"]
    m = min(n, PAPER_EVAL_POINTS if paper else params["eval_points"])
    return (paper, trials, "mean" if paper else "median", None if paper else params["lam"],
            m)


def protocol_summaries(params: Mapping[str, Any], kernel: Kernel, n: int, m: int,
                       where: str) -> dict[str, Any]:
    """The summaries every run starts with (kernel, sizes, the protocol in words)."""
    paper, trials, stat, _, _ = protocol_settings(params, n)
    return {"kernel": kernel.spec(), "n": n, "eval_points": m, "protocol": params["protocol"],
            "trials": trials, "statistic": stat,
            "protocol_note": (
                f"{params['protocol']} protocol: ‖K − K̃‖₂ on {where}, {stat} of {trials} "
                f"trial{'s' if trials > 1 else ''}, downstream "
                + (CV_TEXT + ", chosen per trial and sampler" if paper
                   else f"λ = {params['lam']:g} (fixed)"))}


def empty_table(samplers: list[str], sizes: np.ndarray, lams: np.ndarray, stat: str,
                paper: bool) -> dict[str, np.ndarray]:
    """The result table before any cell ran: NaN per sampler and size (or λ)."""
    table: dict[str, np.ndarray] = {"s": sizes.astype(float)}
    for name in samplers:
        rows = lams.size if name == FIXED_LAMBDA else sizes.size
        for key in (*(f"{k}_{stat}" for k in CELL_KEYS), "spectral_q25", "spectral_q75",
                    "s", "time", *(("ridge_lam_median",) if paper else ())):
            table[f"{key}[{name}]"] = np.full(rows, np.nan)
        if name != FIXED_LAMBDA:
            table[f"s[{name}]"] = sizes.astype(float)
    return table


def _row_of(task: CellTask, sizes: np.ndarray, lams: np.ndarray) -> int:
    """The table row of a cell: its s among the sizes, or its λ among Algorithm 2's."""
    if task.sampler == FIXED_LAMBDA:
        return int(np.flatnonzero(lams == task.rls_lam)[0])
    return int(np.flatnonzero(sizes == task.s)[0])


def _task_cost(task: CellTask, n: int, p: int, m: int) -> float:
    """:func:`_cell_cost` of a cell, or of a nested trial: one pass at its largest s and
    the measures at every s."""
    if not task.sizes:
        return _cell_cost(task.s, n, p, m)
    *smaller, largest = task.sizes
    return _cell_cost(largest, n, p, m) + sum(2.0 * m * m * s + 60.0 * m * m + s**3
                                               + CELL_OVERHEAD for s in smaller)


def _cell_cost(s: int | None, n: int, p: int, m: int) -> float:
    """Multiply-adds of one cell, as :meth:`NystromExperiment.estimate` counts them: the
    sampler and the sums over the rows (n s², n s kernel entries at about 200 each), the
    spectral error on the m evaluation points and the s × s solves. Algorithm 2's cells
    (s unknown before they run) count as 100 landmarks."""
    s = 100 if s is None else int(s)
    return (4.0 * n * s * s + 2.0 * n * s * (p + 200) + 2.0 * m * m * s + 60.0 * m * m + s**3
            + CELL_OVERHEAD)


def _exact_reference(X: np.ndarray, y: np.ndarray, Xt: np.ndarray, yt: np.ndarray,
                     kernel: Kernel, lam: float | None) -> dict[str, float]:
    """Test RMSE of exact kernel ridge on all n training points at ``lam`` — or, with
    ``lam=None``, at the λ the paper protocol's cross-validation picks, through Nyström
    features with every training point a landmark (``F Fᵀ = K``)."""
    out: dict[str, float] = {}
    if lam is not None:
        pred = CenteredKernelRidge(lam, kernel=kernel).fit(X, y).predict(Xt)
    else:
        features = NystromFeatures(kernel, n_components=X.shape[0], sampler="uniform",
                                   random_state=0).fit(X)
        coef, intercept, out["lam_exact"] = downstream_ridge(features.transform(X), y, None)
        pred = features.transform(Xt) @ coef + intercept
    out["rmse_exact"] = float(np.sqrt(np.mean((pred - yt) ** 2)))
    return out


def _fixed_lambda_summaries(table: dict[str, np.ndarray],
                            results: dict[tuple[int, str], list[dict]],
                            lams: np.ndarray) -> dict[str, Any]:
    """Algorithm 2's realised sizes per λ and how often ‖K − K̃‖₂ ≤ λ held on the
    evaluation rows (a principal submatrix: its norm is at most the full one's)."""
    out: dict[str, Any] = {}
    held = total = 0
    for j, lam_j in enumerate(lams):
        cell = results.get((j, FIXED_LAMBDA), [])
        if cell:
            out[f"landmarks[λ={lam_j:g}]"] = float(table[f"s[{FIXED_LAMBDA}]"][j])
            held += sum(r["spectral"] <= lam_j for r in cell)
            total += len(cell)
    out[f"bound_held[{FIXED_LAMBDA}]"] = held / total
    return out


def _with_view(table: dict[str, np.ndarray], view: View, scores: np.ndarray | None,
               marks: np.ndarray | None, total: int | None = None,
               mark_rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The result table plus the 2-D picture's columns (its points' coordinates and scores,
    the landmarks' coordinates — of the training points ``marks``, or of the rows
    ``mark_rows``), padded to one length; ``total``: the points the drawn ones are of
    (default all of the view's X)."""
    columns = dict(table)
    columns["view_x"], columns["view_y"] = view.x, view.y
    columns["view_total"] = np.array([float(view.X.shape[0] if total is None else total)])
    columns["view_score"] = np.full(view.x.size, np.nan) if scores is None else scores
    lx, ly = (view.coordinates(marks) if marks is not None
              else view.project(mark_rows) if mark_rows is not None
              else (np.zeros(0), np.zeros(0)))
    columns["landmark_x"], columns["landmark_y"] = lx, ly
    return pad_columns(columns)
