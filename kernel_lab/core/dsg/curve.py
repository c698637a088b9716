"""A DSG model's function on fixed test rows at the points of a learning curve, as
independent tasks over canonical blocks of the rows.

The learning curve measures DSG's test error at log-spaced iterations t₁ < t₂ < … . The
function at t_k is ``f = √2 · scale · Σ_{j ≤ t_k} a_j cos(W_jᵀx + b_j)``
(:meth:`~kernel_lab.core.models.dsg._DSGBase.partial_sum`): sums over consecutive ranges
of iterations add up, so each point extends the previous one's sums by the iterations
since (:class:`CurvePredictions`), O(m t r) in all, and a rescale of the coefficients
(:attr:`n_rescales_`) starts them again from the first iteration.

The work is a sum over the test rows' features, not a step of DSG's sequential training,
so it runs as tasks on the run's executor (:class:`~kernel_lab.core.executor.TaskExecutor`:
this thread, a thread pool, processes or a cluster's workers): one task per block of
:data:`TEST_BLOCK_ROWS` consecutive test rows (in global index order, so the blocks do
not depend on where the rows live), each computing the block's sums for one or more
ranges of iterations, every range the same way wherever and however many ranges a task
carries — the same bits on every backend. The cosines are the vectorised
:func:`~kernel_lab.core.fastcos.cos_scaled` (within a few 10⁻¹⁶ of ``np.cos``, about
four times faster on features' arguments), as in DSG's training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.executor import SERIAL, TaskExecutor
from kernel_lab.core.fastcos import cos_features

#: Test rows per task (the last block may be shorter).
TEST_BLOCK_ROWS = 2048
#: Entries of a block's cosines evaluated at a time (8 MiB of float64).
CHUNK_ENTRIES = 2**20


@dataclass(frozen=True)
class RangeSums:
    """One block of test rows and the terms of one or more ranges of iterations.

    ``W`` (p × F), ``b`` (F,) and ``coef`` (F × K) hold the ranges' features and stored
    coefficients one after the other, range j in columns ``bounds[j] … bounds[j+1] − 1``
    (the same arrays in every block's task, so a cluster receives them once)."""

    X: np.ndarray = field(repr=False)
    W: np.ndarray = field(repr=False)
    b: np.ndarray = field(repr=False)
    coef: np.ndarray = field(repr=False)
    bounds: tuple[int, ...] = ()


def range_sums(task: RangeSums) -> list[np.ndarray]:
    """``cos(X W_j + b_j) @ coef_j`` for each range j of the task: a list of (rows, K)
    arrays. Each range is evaluated in chunks of features fixed by the block's rows and
    the range alone (copied to its own arrays first), so a range gives the same bits in
    any task."""
    X = task.X
    rows = max(X.shape[0], 1)
    K = task.coef.shape[1]
    chunk = max(1, CHUNK_ENTRIES // rows)
    out = []
    for lo, hi in zip(task.bounds[:-1], task.bounds[1:], strict=True):
        W = np.ascontiguousarray(task.W[:, lo:hi])
        b = np.ascontiguousarray(task.b[lo:hi])
        coef = np.ascontiguousarray(task.coef[lo:hi])
        total = np.zeros((X.shape[0], K))
        for start in range(0, hi - lo, chunk):
            stop = min(start + chunk, hi - lo)
            total += cos_features(X, W[:, start:stop], b[start:stop], 1.0) @ coef[start:stop]
        out.append(total)
    return out


@dataclass
class _Range:
    """The terms of iterations ``start + 1 … stop`` as the model held them at ``stop``."""

    W: np.ndarray
    b: np.ndarray
    coef: np.ndarray
    restart: bool  # the sums start again (the coefficients were rescaled)
    factor: float  # √2 · scale at ``stop``
    point: int  # the curve point


class CurvePredictions:
    """A DSG model's function on the test rows ``Xt`` at the curve's points.

    :meth:`add` takes the iterations since the last point (copies of their features and
    coefficients); :meth:`flush` evaluates every range added and not yet evaluated, one
    task per block of rows on ``executor`` (:meth:`take`, :meth:`evaluate` and
    :meth:`apply`, for a caller that evaluates in another thread), and :meth:`raw` gives
    f at a point (without the regression offset; shape (m,), or (m, K) under the
    multinomial loss) once it is evaluated. A caller that shows each point as it comes
    flushes after every :meth:`add`; one whose tasks run elsewhere may gather several
    points' ranges into one round of tasks — the same bits either way."""

    def __init__(self, Xt: np.ndarray, executor: TaskExecutor = SERIAL) -> None:
        self.Xt = np.asarray(Xt, dtype=np.float64)
        self.executor = executor
        m = self.Xt.shape[0]
        self.blocks = [self.Xt[a:a + TEST_BLOCK_ROWS] for a in range(0, m, TEST_BLOCK_ROWS)]
        self.totals: list[np.ndarray] | None = None
        self.pending: list[_Range] = []
        self.done = 0
        self.rescales = -1
        self.multi = False
        self.values: dict[int, np.ndarray] = {}

    def add(self, model: Any, point: int) -> None:
        """The iterations of ``model`` since the last :meth:`add`, for curve point
        ``point`` (an index the caller chooses)."""
        restart = model.n_rescales_ != self.rescales
        start = 0 if restart else self.done
        W, b, coef = model.terms(start, model.n_iter_)
        self.pending.append(_Range(np.array(W), np.array(b), np.array(coef), restart,
                                   math.sqrt(2.0) * model.scale_, point))
        self.done, self.rescales = model.n_iter_, model.n_rescales_
        self.multi = np.ndim(model.coef_) == 3  # one score per class (multinomial)

    def take(self) -> list[_Range]:
        """The ranges added since the last :meth:`take`, to :meth:`evaluate`."""
        pending, self.pending = self.pending, []
        return pending

    def evaluate(self, ranges: list[_Range]) -> list[list[np.ndarray]]:
        """The sums of ``ranges`` on every block (one round of tasks on the executor);
        safe to call from another thread while the model trains (it reads only the
        copies :meth:`add` made)."""
        if not ranges:
            return []
        bounds = np.cumsum([0] + [r.b.size for r in ranges]).tolist()
        W = np.concatenate([r.W for r in ranges], axis=1)
        b = np.concatenate([r.b for r in ranges])
        coef = np.concatenate([r.coef for r in ranges])
        tasks = [RangeSums(X, W, b, coef, tuple(bounds)) for X in self.blocks]
        return list(self.executor.map(range_sums, tasks))

    def apply(self, ranges: list[_Range], results: list[list[np.ndarray]]) -> list[int]:
        """Add the sums :meth:`evaluate` gave for ``ranges`` (in the order they were
        taken); returns the curve points now evaluated."""
        for j, rng in enumerate(ranges):
            parts = [res[j] for res in results]
            if rng.restart or self.totals is None:
                self.totals = parts
            else:
                for total, part in zip(self.totals, parts, strict=True):
                    total += part
            f = np.concatenate(self.totals) * rng.factor
            self.values[rng.point] = f if self.multi else f[:, 0]
        return [rng.point for rng in ranges]

    def flush(self) -> list[int]:
        """Evaluate and add every range added so far; returns the points evaluated."""
        ranges = self.take()
        return self.apply(ranges, self.evaluate(ranges))

    def raw(self, point: int) -> np.ndarray | None:
        """f at curve point ``point`` (None until evaluated)."""
        return self.values.get(point)
