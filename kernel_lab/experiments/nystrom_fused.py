"""Fused passes of the ``nystrom`` experiment: the cells of a run share every pass over the
partitions.

Each cell (and each nested trial) is the same code as when it runs alone
(:func:`~kernel_lab.experiments.nystrom_nested.run_task`), written against a
:class:`~kernel_lab.core.parts.base.PartMap`. Here every cell is handed a stand-in PartMap,
a *lane*: when the cell asks for a map or a reduce over the partitions, its lane stops it
there and hands the request to :class:`FusedRun`. Once every cell still running waits on a
request, the run sends **one** task per partition that reads the partition once and makes
every request's call on it, in turn (:func:`fused_part`), and combines the per-partition
tuples in the backend's one fixed tree, each request's results with that request's own
combine (:class:`FusedCombine`). Then each cell resumes with its own result, up to its
next request. So all trials and sizes of every sampler advance together: recursive RLS
level by level with one task per partition per level for every cell, RP-Cholesky's rounds
in lock-step, then one pass of the feature sums of every cell (and a leave-one-out pass
under the paper protocol) — a run makes as many passes as its longest cell, not the sum
over its 75 cells. No backend changes: a fused pass is an ordinary ``map`` or ``reduce``.

The numbers do not change: every call of every cell is made with the same arguments on
the same partition, and every reduction is combined at the same nodes of the same tree
(a tuple combines elementwise); fusing changes the scheduling only. The cells run in
threads used as coroutines: exactly one runs at a time (the run hands it the turn and
waits for it to stop at its next request or its end), so their client-side work is the
same serial work, in one BLAS thread, as when they run one after the other.

A cell's time is what it ran on the client plus its share of each fused pass it took
part in: the pass's wall time apportioned by the seconds its calls took on the
partitions (measured there, around each call), as if the pass had served it alone.
Progress: per partition done within a pass (cancellation checked there), and the
cells' own reports (recursion levels) forwarded between passes."""

from __future__ import annotations

import itertools
import operator
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from kernel_lab.core.kernels import Kernel
from kernel_lab.core.parts.base import Part, PartMap, RowPlan, Rows, keyed_subset, take_rows
from kernel_lab.core.parts.ridge import diag_sum
from kernel_lab.core.progress import Progress
from kernel_lab.experiments.nystrom_cells import CellTask, lane_clock
from kernel_lab.experiments.nystrom_nested import NestedTask, run_task


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


class _Abort(BaseException):
    """Ends a waiting cell whose run stopped (an error elsewhere, a cancellation)."""


class _LaneParts:
    """The PartMap a cell sees: its maps and reduces wait for the run's fused pass."""

    def __init__(self, lane: _Lane, parts: Sequence[Part]) -> None:
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
    """One cell run in its own thread, one step at a time (see the module docstring)."""

    def __init__(self, job: Callable[[PartMap, Progress], Any], parts: Sequence[Part]
                 ) -> None:
        self.job = job
        self.parts = _LaneParts(self, parts)
        self.progress = Progress(self._note)
        self._go = threading.Semaphore(0)
        self._back = threading.Semaphore(0)
        self._thread: threading.Thread | None = None
        self.request: Request | None = None
        self._reply: Any = None
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.seconds = 0.0
        self._since: float | None = None
        self.fraction = 0.0
        self.said: str | None = None

    def _note(self, fraction: float, message: str) -> None:
        self.fraction = max(self.fraction, fraction)
        self.said = message or self.said

    def now(self) -> float:
        """The cell's clock: its own running time and its shares of the passes."""
        running = 0.0 if self._since is None else time.perf_counter() - self._since
        return self.seconds + running

    # -- the cell's side -----------------------------------------------------------------

    def _main(self) -> None:
        self._go.acquire()
        lane_clock.now = self.now
        try:
            if isinstance(self._reply, _Abort):
                raise self._reply
            self.result = self.job(self.parts, self.progress)
        except _Abort:
            pass
        except BaseException as exc:  # handed to the run, which raises it
            self.error = exc
        finally:
            self.done = True
            self.request = None
            self._back.release()

    def call(self, request: Request, progress: Progress | None) -> Any:
        self.request = request
        self._back.release()
        self._go.acquire()
        reply, self._reply = self._reply, None
        if isinstance(reply, _Abort):
            raise reply
        if progress is not None:
            progress(1.0, request.message)
        return reply

    # -- the run's side ------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._thread is not None

    def resume(self, reply: Any = None) -> None:
        """Let the cell run (with ``reply`` to its request) until its next request or end."""
        self.request = None
        self._reply = reply
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, daemon=True,
                                            name="kernel-lab nystrom cell")
            self._thread.start()
        self._since = time.perf_counter()
        self._go.release()
        self._back.acquire()
        self.seconds += time.perf_counter() - self._since
        self._since = None

    def stop(self) -> None:
        """End a cell that waits on a request (or never started)."""
        if self._thread is not None and not self.done:
            self.resume(_Abort())
        if self._thread is not None:
            self._thread.join()


class FusedRun:
    """Jobs (``job(parts, progress)``, each a cell's computation written against a
    PartMap) run together over ``parts``, every pass fused (see the module docstring).

    ``weights``: each job's share of the work, for the progress (reported into
    ``progress``, checked for cancellation per partition of every pass). ``passes``
    counts the fused passes made."""

    def __init__(self, parts: PartMap, jobs: Sequence[Callable[[PartMap, Progress], Any]],
                 progress: Progress | None = None,
                 weights: Sequence[float] | None = None) -> None:
        self.parts = parts
        self.lanes = [_Lane(job, parts.parts) for job in jobs]
        self.progress = progress
        self.weights = [1.0] * len(jobs) if weights is None else [float(w) for w in weights]
        self.passes = 0
        self.shown = 0.0

    def fraction(self) -> float:
        """The jobs' progress, weighted, never going back."""
        total = sum(self.weights) or 1.0
        done = sum(w * (1.0 if lane.done else lane.fraction)
                   for w, lane in zip(self.weights, self.lanes, strict=True))
        self.shown = max(self.shown, min(done / total, 1.0))
        return self.shown

    def results(self) -> Iterator[tuple[Any, float]]:
        """Each job's result in job order, as soon as it and those before it are done,
        with the run's progress fraction then; a job's error is raised (the others
        stopped)."""
        ahead = 0
        try:
            for lane in self.lanes:
                self._step(lane)
            while True:
                while ahead < len(self.lanes) and self.lanes[ahead].done:
                    yield self.lanes[ahead].result, self.fraction()
                    ahead += 1
                waiting = [lane for lane in self.lanes if not lane.done]
                if not waiting:
                    return
                replies = self._pass(waiting)
                for lane, reply in zip(waiting, replies, strict=True):
                    self._step(lane, reply)
        finally:
            for lane in self.lanes:
                lane.stop()

    def seconds(self, k: int) -> float:
        """Job k's time so far (its clock)."""
        return self.lanes[k].now()

    def _step(self, lane: _Lane, reply: Any = None) -> None:
        lane.resume(reply)
        if lane.error is not None:
            raise lane.error
        if lane.said is not None and self.progress is not None:
            said, lane.said = lane.said, None
            self.progress(self.fraction(), said)

    def _pass(self, lanes: list[_Lane]) -> list[Any]:
        """One fused pass for the lanes' requests: their replies; each lane's clock gains
        its share of the pass's time."""
        requests = [lane.request for lane in lanes]
        assert all(r is not None for r in requests)
        calls = tuple((r.combine is not None, r.fn, r.args) for r in requests)  # type: ignore[union-attr]
        self.passes += 1
        start = self.fraction()
        width = 0.1 * (1.0 - start)
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
        for lane, (_, s) in zip(lanes, out, strict=True):
            lane.seconds += wall * (s / work if work > 0 else 1.0 / len(lanes))
        return [value for value, _ in out]


@dataclass(frozen=True)
class LaneData:
    """What a cell reads of its data set (``parts``, ``plan``), with a lane's parts."""

    parts: Any
    plan: RowPlan


def cell_job(task: CellTask | NestedTask, parts: PartMap, progress: Progress
             ) -> list[dict[str, Any]]:
    """A task (:func:`~kernel_lab.experiments.nystrom_nested.run_task`) on a lane's parts."""
    inputs = replace(task.inputs, data=LaneData(parts, task.inputs.data.plan))
    return run_task(replace(task, inputs=inputs), progress)


def diag_job(plan: RowPlan, kernel: Kernel, parts: PartMap, progress: Progress) -> float:
    """``Σ k(x, x)`` over the training rows (:func:`~kernel_lab.core.parts.ridge.diag_sum`)."""
    return diag_sum(parts, plan, kernel)


def _subset_job(plan: RowPlan, stream: int, k: int, which: str, parts: PartMap,
                progress: Progress) -> tuple[np.ndarray, Rows]:
    index = keyed_subset(parts, plan, stream, k, which)
    return index, take_rows(parts, plan, index, which)


def gather_subsets(parts: PartMap, plan: RowPlan, wanted: Sequence[tuple[int, int, str]]
                   ) -> list[tuple[np.ndarray, Rows]]:
    """For each ``(stream, k, which)``: the keyed subset of k training (``which="train"``)
    or test rows (:func:`~kernel_lab.core.parts.base.keyed_subset`) and the rows
    themselves (:func:`~kernel_lab.core.parts.base.take_rows`) — all of them in two fused
    passes."""
    run = FusedRun(parts, [partial(_subset_job, plan, *w) for w in wanted])
    return [got for got, _ in run.results()]
