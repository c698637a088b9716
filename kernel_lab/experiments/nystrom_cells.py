"""The cells of the ``nystrom`` experiment: one (sampler, s, trial) — or (Algorithm 2, λ,
trial) — draw of landmarks or random features, the ridge on the features of every
training row and the errors measured on them (:func:`run_cell`), on any data set (its
``parts`` and ``plan``).

A cell's landmarks come from :func:`~kernel_lab.core.nystrom.landmarks.choose_landmarks`
(keyed draws), its sums from one map-reduce over the canonical row blocks
(:func:`~kernel_lab.core.ridge.fit.fit_ridge`; a second one for λ by leave-one-out under
the paper protocol): the same bits however the rows are stored. Each cell has its own seed
(:func:`cell_seed`), so the cells may run in any order, one after the other or at once —
or together, every pass over the partitions shared by all of them (:class:`FusedRun`)."""

from __future__ import annotations

import contextvars
import itertools
import operator
import queue
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.models import CenteredKernelRidge
from kernel_lab.core.models.feature_ridge import feature_ridge, ridge_loo
from kernel_lab.core.models.nystrom import nystrom_factor
from kernel_lab.core.models.rff import RFF_KERNELS
from kernel_lab.core.progress import Progress
from kernel_lab.core.ridge.fit import (
    RANDOM_FEATURES,
    FeatureMap,
    fit_ridge,
    make_features,
    spectral_error,
    test_rmse,
)
from kernel_lab.core.rows.mapreduce import Part, PartMap, RowPlan, Rows, keyed_subset, take_rows

#: Algorithm 2 of Musco & Musco (fixed λ, sample size set by d_eff(λ)) as a sampler choice;
#: its runs are placed at the number of landmarks they actually sampled.
FIXED_LAMBDA = "recursive-rls-lambda"

#: The samplers and features whose draws nest: with one seed, the draw at a smaller s is
#: (up to the accelerated RP-Cholesky's rounds) the start of the draw at a larger one, so
#: their cells of one trial share a seed across the sizes (see :func:`cell_seed`).
NESTED = ("uniform", "rp-cholesky", *RANDOM_FEATURES)

#: Up to this many evaluation points ‖K − FFᵀ‖₂ comes from a full eigendecomposition; above,
#: from Lanczos (the same value to about 1e-10 relative, 20–60 times faster at 2000 points).
EXACT_MAX = 500


#: How many cells of a fused run compute at the same time between its passes
#: (:class:`FusedRun`'s ``at_once``). One: two at once (the partitions wait while the client
#: works) did not shorten the client's phases on a loaded two-core machine (1M rows in 8
#: files, 2 workers: 10.6 and 11.8 s of them against 10.3 and 8.7 s one at a time).
FUSED_AT_ONCE = 1


#: The clock of a cell run in a fused run (``lane_clock.now``, set while the cell runs
#: there, :class:`FusedRun`): its client time and its shares of the passes; elsewhere
#: :func:`time.perf_counter`. Per thread: cells may run in an executor's threads.
lane_clock = threading.local()


def clock() -> float:
    """Seconds for a cell's time (see :data:`lane_clock`)."""
    now = getattr(lane_clock, "now", None)
    return time.perf_counter() if now is None else now()


def trace_error(diag: float | None, squared_norm: float) -> float | None:
    """``Σ k(x, x) − ‖F‖_F²``; None while the diagonal's sum is not known yet (a fused run
    takes it in its first pass, and fills it in with :func:`fill_trace`)."""
    return None if diag is None else float(diag - squared_norm)


def fill_trace(result: dict[str, Any], diag: float | None) -> dict[str, Any]:
    """A cell's result with its trace error from ``diag`` (see :func:`trace_error`), and
    without the ``squared_norm`` it was computed from."""
    squared_norm = result.pop("squared_norm", None)
    if result["trace"] is None and diag is not None:
        result["trace"] = float(diag - squared_norm)
    return result


def cell_seed(seed: int, sampler: str, trial: int, s: int | None = None,
              lam: float | None = None) -> np.random.SeedSequence:
    """The seed of one cell: ``SeedSequence([seed, crc32(sampler), trial])``, plus s for a
    sampler whose draws do not nest (recursive RLS, exact RLS: their λ follows s) and
    the bits of λ for Algorithm 2. Adding a size, a λ or a sampler to a run therefore
    leaves every other cell's draws as they were."""
    entropy = [int(seed), zlib.crc32(sampler.encode()), int(trial)]
    if lam is not None:
        entropy.append(int(np.float64(lam).view(np.uint64)))
    elif sampler not in NESTED and s is not None:
        entropy.append(int(s))
    return np.random.SeedSequence(entropy)


#: The bandwidth's median heuristic looks at this many training rows (those with the
#: smallest keys of the evaluation stream: all of them up to this many).
BANDWIDTH_ROWS = 1000


def _subset_job(plan: RowPlan, stream: int, k: int, which: str, parts: PartMap,
                progress: Progress) -> tuple[np.ndarray, Rows]:
    index = keyed_subset(parts, plan, stream, k, which)
    return index, take_rows(parts, plan, index, which)


def gather_subsets(parts: PartMap, plan: RowPlan, wanted: Sequence[tuple[int, int, str]]
                   ) -> list[tuple[np.ndarray, Rows]]:
    """For each ``(stream, k, which)``: the keyed subset of k training (``which="train"``)
    or test rows (:func:`~kernel_lab.core.rows.mapreduce.keyed_subset`) and the rows
    themselves (:func:`~kernel_lab.core.rows.mapreduce.take_rows`) — all of them in two fused
    passes."""
    run = FusedRun(parts, [partial(_subset_job, plan, *w) for w in wanted])
    return [got for got, _ in run.results()]


@dataclass(frozen=True)
class CellInputs:
    """What every cell of a run shares: the data set (``parts``, ``plan``), the kernel,
    the downstream λ (None: by leave-one-out), ``Σ k(x, x)`` over the training rows (None:
    not known yet, see :func:`trace_error`), the
    evaluation rows and their kernel matrix, the test rows and the picture's rows."""

    data: Any = field(repr=False)
    kernel: Kernel
    lam: float | None
    diag: float | None
    X_eval: np.ndarray = field(repr=False)
    K_eval: np.ndarray = field(repr=False)
    X_test: np.ndarray = field(repr=False)
    y_test: np.ndarray = field(repr=False)
    view: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class CellTask:
    """One cell: the sampler, s (None for Algorithm 2), Algorithm 2's λ, the cell's seed
    and the shared inputs."""

    sampler: str
    s: int | None
    rls_lam: float | None
    seed: np.random.SeedSequence
    inputs: CellInputs = field(repr=False)


def run_cell(task: CellTask, progress: Progress | None = None) -> dict[str, Any]:
    """The measures of one cell: ‖K − FFᵀ‖₂ on the evaluation rows, the trace error
    ``Σ k(x, x) − ‖F‖_F²`` over every training row, the seconds to the fitted ridge,
    kernel evaluations, the number of landmarks (features), the downstream λ, the test
    RMSE, and the sampler's scores of the picture's rows and its landmark rows (None
    without). ``progress`` covers the cell (the landmarks its first half, the pass over the
    rows the rest)."""
    inputs = task.inputs
    data = inputs.data
    t0 = clock()
    features: FeatureMap = make_features(
        "recursive-rls" if task.sampler == FIXED_LAMBDA else task.sampler, data.parts,
        data.plan, inputs.kernel, task.s, task.seed, lam=task.rls_lam, view=inputs.view,
        progress=None if progress is None else progress.sub(0.0, 0.5))
    fit = fit_ridge(data.parts, data.plan, features, inputs.lam,
                    None if progress is None else progress.sub(0.5, 1.0))
    seconds = clock() - t0
    sample = features.sample
    size = features.width if sample is None else sample.index.size
    return {"spectral": spectral_error(inputs.K_eval, features, inputs.X_eval,
                                       exact_max=EXACT_MAX),
            "trace": trace_error(inputs.diag, fit.squared_norm),
            "squared_norm": fit.squared_norm, "time": seconds,
            "evals": 0 if sample is None else sample.evaluations + size * size,
            "rmse": test_rmse(fit, features, inputs.X_test, inputs.y_test),
            "landmarks": size, "ridge_lam": fit.lam,
            "scores": None if sample is None else sample.scores,
            "marks": None if sample is None else sample.X}


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


def exact_reference(X: np.ndarray, y: np.ndarray, Xt: np.ndarray, yt: np.ndarray,
                    kernel: Kernel, lam: float | None) -> dict[str, float]:
    """Test RMSE of exact kernel ridge on all n training points at ``lam`` — or, with
    ``lam=None``, at the λ the paper protocol's cross-validation picks, through the
    features ``F = K W^{-1/2}`` with every training point a landmark (``F Fᵀ = K``)."""
    out: dict[str, float] = {}
    if lam is not None:
        pred = CenteredKernelRidge(lam, kernel=kernel).fit(X, y).predict(Xt)
    else:
        K = kernel(X)
        N = nystrom_factor(K)
        coef, intercept, out["lam_exact"] = downstream_ridge(K @ N, y, None)
        pred = kernel(Xt, X) @ N @ coef + intercept
    out["rmse_exact"] = float(np.sqrt(np.mean((pred - yt) ** 2)))
    return out


# ---------------------------------------------------------------------------------------
# Fused passes: the cells of a run share every pass over the partitions
#
# Each cell is the same code as when it runs alone, written against a PartMap. In a fused
# run every cell is handed a stand-in PartMap (a lane) and runs in a thread of its own: a
# map or reduce over the partitions hands the request to the run and waits for its reply.
# The run hands each lane a baton and takes it back at the lane's next request or its end,
# with at most ``at_once`` batons out (:data:`FUSED_AT_ONCE`). Once every cell still
# running waits so, the run makes ONE
# pass: one task per partition that makes every cell's call on the partition in turn
# (:func:`fused_part`), the per-partition tuples combined in the backend's one fixed tree,
# each cell's values with its own combine (:class:`FusedCombine`). Then each cell, in
# lane order, takes its reply and goes on from where it waited, up to its next request;
# the next pass has the requests in lane order, whatever order they came in. So all
# trials and sizes of every sampler advance together — recursive RLS level by level with
# one task per partition per level for every cell, RP-Cholesky's rounds in lock-step,
# one pass of every cell's feature sums — and a run makes as many passes as its longest
# cell; each cell's client work (scores of the gathered levels, factorisations, solves,
# the measures) is done once. No backend changes: a fused pass is an ordinary ``map`` or
# ``reduce``, made from the thread that reads the results. The numbers do not change:
# every call is made with the same arguments on the same partition, every reduction
# combined at the same nodes of the same tree, and a cell's client work is its own (one
# BLAS thread, held by the caller: :meth:`~kernel_lab.experiments.nystrom.
# NystromExperiment._fused`).
# When the run stops — cancelled, a cell's error, its results no longer read — every
# waiting cell is unwound (:class:`_Stop`) and its thread joined.
#
# A cell's time (:func:`clock`) is its client wall time (while it holds the baton; with
# more than one at once, a share of it may be waiting for the interpreter's lock) plus its
# share of each pass it was answered from: the pass's wall time apportioned by the
# seconds its calls took on the partitions (measured there around each call).


@dataclass(frozen=True)
class Request:
    """A cell's map (``combine`` None) or reduce over the partitions."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    combine: Callable[[Any, Any], Any] | None = None
    message: str = ""


def fused_part(part: Part, calls: tuple[tuple[bool, Callable[..., Any], tuple[Any, ...]],
                                      ...]) -> tuple[tuple[Any, float], ...]:
    """One partition's task of a fused pass: each call ``fn(part, *args)`` in turn, with
    the seconds it took; a map's value in a list (lists of the partitions concatenate
    along the tree, in partition order)."""
    out = []
    for reduce, fn, args in calls:
        t0 = time.perf_counter()
        value = fn(part, *args)
        out.append((value if reduce else [value], time.perf_counter() - t0))
    return tuple(out)


@dataclass(frozen=True)
class FusedCombine:
    """Combines two partitions' (or subtrees') tuples elementwise: a reduce's values with
    its own combine, a map's lists by concatenation, the seconds by addition."""

    combines: tuple[Callable[[Any, Any], Any] | None, ...]

    def __call__(self, a: tuple[tuple[Any, float], ...], b: tuple[tuple[Any, float], ...]
                 ) -> tuple[tuple[Any, float], ...]:
        return tuple((operator.add(x, y) if c is None else c(x, y), s + t)
                     for (x, s), (y, t), c in zip(a, b, self.combines, strict=True))


class _Stop(BaseException):
    """Unwinds a cell waiting for a reply when the run stops (cancelled, another cell's
    error, its results no longer read)."""


#: What a lane waiting for a reply is handed when the run stops.
_STOP = object()


class _LaneParts:
    """The PartMap a cell sees: its maps and reduces wait for the run's fused pass."""

    def __init__(self, lane: Any, parts: Sequence[Part]) -> None:
        self._lane = lane
        self.parts = parts

    def map(self, fn: Callable[..., Any], *args: Any, progress: Progress | None = None,
            message: str = "") -> list[Any]:
        return self._lane.call(Request(fn, args, None, message), progress)

    def reduce(self, fn: Callable[..., Any], *args: Any,
               combine: Callable[[Any, Any], Any] = operator.add,
               progress: Progress | None = None, message: str = "") -> Any:
        return self._lane.call(Request(fn, args, combine, message), progress)


class _Lane:
    """One cell of a fused run (see :class:`FusedRun`), run in a thread of its own (a
    one-thread pool, shut down when the cell ends: the project starts no bare thread
    outside its worker primitive) that holds the baton from :meth:`resume` to its next
    request (:attr:`request`) or its end (:attr:`done`, :attr:`result`; :attr:`error` if
    it raised)."""

    def __init__(self, job: Callable[[PartMap, Progress], Any], parts: Sequence[Part],
                 back: queue.SimpleQueue[_Lane], name: str = "fused-cell") -> None:
        self.job = job
        self.name = name
        self.parts = _LaneParts(self, parts)
        self.progress = Progress(self._note)
        self.request: Request | None = None
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.said: str | None = None
        self._inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()  # replies, or _STOP
        self._back = back  # where the lane hands the baton back (itself)
        self._pool: ThreadPoolExecutor | None = None
        self._client = 0.0  # the cell's client seconds before its last resumption
        self._start = 0.0
        self._shared = 0.0

    def _note(self, fraction: float, message: str) -> None:
        self.said = message or self.said

    def now(self) -> float:
        """The cell's clock: its client time and the shares of the passes it was answered
        from."""
        return self._client + time.perf_counter() - self._start + self._shared

    def resume(self, answer: tuple[Any, float] | None = None) -> None:
        """Let the cell run — from its start, or from its request with ``answer`` (the
        reply and the cell's share of the pass's seconds) — up to its next request or its
        end, where it puts itself into the run's queue (``back``)."""
        self.request = None
        if self._pool is None:
            # the caller's context (numpy's error state and other context variables)
            context = contextvars.copy_context()
            self._pool = ThreadPoolExecutor(1, thread_name_prefix=self.name)
            self._pool.submit(context.run, self._run)
        else:
            self._inbox.put(answer)

    def stop(self) -> None:
        """Unwind the cell if it waits for a reply (or when it next asks for one)."""
        if self._pool is not None:
            self._inbox.put(_STOP)

    def join(self) -> None:
        """Wait for the cell's thread to end (after :meth:`stop`)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _run(self) -> None:
        lane_clock.now = self.now
        self._start = time.perf_counter()
        try:
            self.result = self.job(self.parts, self.progress)
            self.done = True
        except _Stop:
            return
        except BaseException as exc:  # handed to the run, which raises it
            self.error = exc
        finally:
            lane_clock.now = None
            self._pool.shutdown(wait=False)  # type: ignore[union-attr]  # its thread ends
        self._back.put(self)

    def call(self, request: Request, progress: Progress | None) -> Any:
        """The reply to ``request``, waited for with the baton handed back to the run."""
        self._client += time.perf_counter() - self._start
        self.request = request
        self._back.put(self)
        answer = self._inbox.get()
        if answer is _STOP:
            raise _Stop
        reply, share = answer
        self._shared += share
        self._start = time.perf_counter()
        if progress is not None:
            progress(1.0, request.message)
        return reply


class FusedRun:
    """Jobs (``job(parts, progress)``, each a cell's computation written against a
    PartMap) run together over ``parts``, every pass fused (see the comment above).

    ``weights``: each job's share of the work, for the progress (reported into
    ``progress``, checked for cancellation per partition of every pass). ``at_once``: how
    many jobs compute at the same time between passes (1: one after the other; more lets
    the client's cores work while the partitions wait for the next pass — each job's
    numbers are its own, so they do not change). ``passes`` counts the fused passes
    made."""

    def __init__(self, parts: PartMap, jobs: Sequence[Callable[[PartMap, Progress], Any]],
                 progress: Progress | None = None,
                 weights: Sequence[float] | None = None, at_once: int = 1) -> None:
        self.parts = parts
        self._back: queue.SimpleQueue[_Lane] = queue.SimpleQueue()
        self.lanes = [_Lane(job, parts.parts, self._back, f"fused-cell-{i}")
                      for i, job in enumerate(jobs)]
        self.at_once = max(1, int(at_once))
        self.progress = progress
        self.weights = [1.0] * len(jobs) if weights is None else [float(w) for w in weights]
        self.passes = 0
        self.shown = 0.0
        self.ahead = 0  # the jobs handed out

    def fraction(self, upto: int | None = None) -> float:
        """The run's progress: the weights of the jobs handed out so far (or of the first
        ``upto``), as when the jobs run one after the other, or what the passes since
        have shown (each moving half-way to the next job's end), never going back."""
        total = sum(self.weights) or 1.0
        done = sum(self.weights[:self.ahead if upto is None else upto]) / total
        return max(self.shown, min(done, 1.0))

    def results(self) -> Iterator[tuple[Any, float]]:
        """Each job's result in job order, as soon as it and those before it are done,
        with the run's progress fraction then; a job's error is raised (the others
        stopped). Every job's thread has ended when this generator ends, raises or is
        closed."""
        try:
            self._advance([(lane, None) for lane in self.lanes])
            while True:
                while self.ahead < len(self.lanes) and self.lanes[self.ahead].done:
                    lane = self.lanes[self.ahead]
                    self.ahead += 1
                    result, lane.result = lane.result, None
                    yield result, self.fraction()
                waiting = [lane for lane in self.lanes if not lane.done]
                if not waiting:
                    return
                if self.progress is not None:
                    self.progress.check()
                self._advance(list(zip(waiting, self._pass(waiting), strict=True)))
        finally:
            for lane in self.lanes:
                lane.stop()
            for lane in self.lanes:
                lane.join()

    def _advance(self, todo: list[tuple[_Lane, tuple[Any, float] | None]]) -> None:
        """Resume the lanes (each with its answer), at most :attr:`at_once` at a time, until
        each has made its next request or ended; then report what they said, in lane
        order, or raise the first lane's error (the others not resumed after it)."""
        pending = todo[::-1]
        running = 0
        failed = False
        while pending or running:
            while pending and running < self.at_once and not failed:
                lane, answer = pending.pop()
                lane.resume(answer)
                running += 1
            if not running:
                break
            failed = self._back.get().error is not None or failed
            running -= 1
        for lane, _ in todo:
            if lane.error is not None:
                error, lane.error = lane.error, None
                raise error
            if lane.said is not None and self.progress is not None:
                said, lane.said = lane.said, None
                self.progress(self.fraction(), said)

    def _pass(self, lanes: list[_Lane]) -> list[tuple[Any, float]]:
        """One fused pass for the lanes' requests: their replies, each with the lane's
        share of the pass's time."""
        requests = [lane.request for lane in lanes]
        assert all(r is not None for r in requests)
        calls = tuple((r.combine is not None, r.fn, r.args) for r in requests)  # type: ignore[union-attr]
        self.passes += 1
        start = self.fraction()
        width = 0.5 * max(self.fraction(self.ahead + 1) - start, 0.0)
        sub = None if self.progress is None else self.progress.sub(start, start + width)
        names = sorted({r.message for r in requests if r.message})  # type: ignore[union-attr]
        message = (f"pass {self.passes} over the partitions for {len(lanes)} cells"
                   + (f" ({', '.join(names)})" if names else ""))
        t0 = time.perf_counter()
        if any(r.combine is not None for r in requests):  # type: ignore[union-attr]
            combine = FusedCombine(tuple(r.combine for r in requests))  # type: ignore[union-attr]
            out = self.parts.reduce(fused_part, calls, combine=combine, progress=sub,
                                    message=message)
        else:
            per_part = self.parts.map(fused_part, calls, progress=sub, message=message)
            out = tuple((list(itertools.chain.from_iterable(p[j][0] for p in per_part)),
                         sum(p[j][1] for p in per_part)) for j in range(len(calls)))
        wall = time.perf_counter() - t0
        self.shown = max(self.shown, start + width)
        work = sum(s for _, s in out)
        return [(value, wall * (s / work if work > 0 else 1.0 / len(lanes)))
                for value, s in out]
