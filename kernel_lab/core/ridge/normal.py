"""Normal sums of feature maps over partitioned rows: squared-loss ridge without the rows.

The squared-loss fits of :mod:`kernel_lab.core.ridge.sums` need only
``ΦᵀΦ``, ``Φᵀy``, ``yᵀy`` and ``n`` (:class:`~kernel_lab.core.ridge.sums.NormalSums`).
Over partitions they are accumulated on the training rows of each canonical block
(:func:`~kernel_lab.core.ridge.sums.accumulate`), and the blocks' sums are added in
the one tree over the blocks (:func:`~kernel_lab.core.rows.mapreduce.reduce_blocks`) — the same
additions, to the bit, whether the rows are one file or sixteen on a cluster.

The feature maps travel to the workers, so they are small picklable objects:
:class:`CosineFeatures` (unscaled random Fourier features ``cos(XW + b)``; the first d of D
are restricted and scaled afterwards) and :class:`KernelColumns` (``k(X, S)`` for landmarks
S; Nyström features ``k(X, S) N`` are mapped by N afterwards). Landmarks for the Nyström
baseline are a keyed uniform subset of the training rows (:func:`uniform_landmarks`).
:func:`fit_first_features` and :func:`fit_first_landmarks` fit the squared loss on the
first D features or s landmarks from such sums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from kernel_lab.core.fastcos import cos_features
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.nystrom.factor import nystrom_factor
from kernel_lab.core.progress import Progress
from kernel_lab.core.ridge.sums import NormalSums, accumulate, solve_squared
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.mapreduce import (
    Part,
    PartMap,
    RowPlan,
    Rows,
    keyed_subset,
    part_rows,
    reduce_blocks,
    take_rows,
)


class FeatureMap(Protocol):
    """Rows (standardised) to ``width`` features; picklable."""

    @property
    def width(self) -> int: ...

    def __call__(self, X: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class CosineFeatures:
    """``cos(X W + b)`` for frequencies W (p × D) and phases b (D,), unscaled."""

    W: np.ndarray = field(repr=False)
    b: np.ndarray = field(repr=False)

    @property
    def width(self) -> int:
        return int(self.W.shape[1])

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return cos_features(X, self.W, self.b, 1.0)


@dataclass(frozen=True)
class KernelColumns:
    """``k(X, S)`` for landmarks S (s × p)."""

    kernel: Kernel
    landmarks: np.ndarray = field(repr=False)

    @property
    def width(self) -> int:
        return int(self.landmarks.shape[0])

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return self.kernel(X, self.landmarks)


def add_sums(a: NormalSums, b: NormalSums) -> NormalSums:
    """The sums over the rows of both."""
    return NormalSums(a.G + b.G, a.b + b.b, a.yy + b.yy, a.n + b.n)


def fit_first_features(sums: NormalSums, test: np.ndarray, D: int, nu: float
                       ) -> tuple[np.ndarray, float]:
    """Squared-loss ridge on the first ``D`` random Fourier features ``√(2/D) cos(xW + b)``
    from the sums of the unscaled cosines: the predictions on the test rows (``test``:
    their unscaled cosines, at least D columns) and J."""
    scale = 2.0 / D
    w, value = solve_squared(sums.restrict(D, scale=scale), nu)
    return test[:, :D] @ (w * np.sqrt(scale)), value


def fit_first_landmarks(sums: NormalSums, test: np.ndarray, kernel: Callable[..., np.ndarray],
                        landmarks: np.ndarray, s: int, nu: float) -> tuple[np.ndarray, float]:
    """Squared-loss ridge on the Nyström features ``k(x, S_s) N_s`` of the first ``s``
    landmarks, from the sums of the kernel columns ``k(x, S)``: the predictions on the test
    rows (``test``: their kernel columns) and J."""
    s = min(s, landmarks.shape[0])
    N = nystrom_factor(kernel(landmarks[:s]))
    w, value = solve_squared(sums.restrict(s, N), nu)
    return test[:, :s] @ (N @ w), value


def _add_each(a: list[NormalSums], b: list[NormalSums]) -> list[NormalSums]:
    return [add_sums(x, y) for x, y in zip(a, b, strict=True)]


def _block_sums(rows: Rows, maps: Sequence[Any], shift: float) -> list[NormalSums]:
    y = rows.y - shift
    return [accumulate(f, rows.X, y, f.width) for f in maps]


def normal_sums(parts: PartMap, plan: RowPlan, maps: Sequence[FeatureMap], shift: float = 0.0,
                progress: Progress | None = None, message: str = "normal sums"
                ) -> list[NormalSums]:
    """:class:`NormalSums` of each feature map over the training rows, with targets
    ``y − shift``; every part is read once for all the maps."""
    return reduce_blocks(parts, _block_sums, plan, list(maps), float(shift),
                         combine=_add_each, progress=progress, message=message)


def uniform_landmarks(parts: PartMap, plan: RowPlan, k: int,
                      stream: int = rowkeys.LANDMARKS) -> Rows:
    """``k`` training rows, a uniform subset keyed by ``(plan.seed, stream)``, in the order
    of their keys — so the first ``s`` are the keyed uniform subset of ``s`` rows — gathered
    to the client (:func:`keyed_subset` and :func:`take_rows`)."""
    return in_key_order(take_rows(parts, plan, keyed_subset(parts, plan, stream, k), "train"),
                        plan.seed, stream)


def in_key_order(rows: Rows, seed: int, stream: int = rowkeys.LANDMARKS) -> Rows:
    """``rows`` in the order of their keys for ``(seed, stream)``: the order of
    :func:`uniform_landmarks`, whose first ``s`` are the keyed uniform subset of s rows."""
    order = np.argsort(rowkeys.keys(seed, stream, rows.index), kind="stable")
    return Rows(rows.X[order], rows.y[order], rows.index[order])


def _part_features(part: Part, plan: RowPlan, maps: Sequence[Any]
                   ) -> tuple[list[np.ndarray], np.ndarray]:
    rows = part_rows(part, plan, "train")
    return [f(rows.X) for f in maps], rows.y


def gather_features(parts: PartMap, plan: RowPlan, maps: Sequence[FeatureMap],
                    progress: Progress | None = None, message: str = "features"
                    ) -> tuple[list[np.ndarray], np.ndarray]:
    """The n × width features of each map over the training rows, computed where the rows
    live and gathered to the client in global row order, with the raw targets: for the
    fits that need the features themselves (losses other than the squared). The caller
    bounds n × width (the learning curve's ``DENSE_BYTES`` size rule)."""
    got = [g for g in parts.map(_part_features, plan, list(maps), progress=progress,
                                message=message) if g[1].size]
    if not got:
        return [np.zeros((0, f.width)) for f in maps], np.zeros(0)
    return ([np.concatenate([g[0][j] for g in got]) for j in range(len(maps))],
            np.concatenate([g[1] for g in got]))
