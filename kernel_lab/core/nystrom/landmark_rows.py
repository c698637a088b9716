"""What every landmark sampler on rows shares: the set of landmarks it returns
(:class:`Landmarks`), the key streams of its draws, and small helpers over global row
indices (gathering the chosen rows, weighted keys with rows of weight 0 last, the k smallest
candidates of several parts, the rows whose scores a view asks for). The samplers
themselves are :mod:`kernel_lab.core.nystrom.landmarks`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.nystrom.common import check_budget
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.mapreduce import PartMap, RowPlan, Rows, take_rows

#: Offsets of :data:`~kernel_lab.core.rows.keys.LANDMARKS`: the streams of the samplers' draws.
UNIFORM = 0        # uniform landmarks
RLS_LEVELS = 1     # recursive RLS: the nested uniform levels
RLS_DRAW = 2       # recursive RLS: the top level's s landmarks ∝ scores
FILL = 3           # a uniform fill when the scores or the residual are exhausted
EXACT_DRAW = 4     # exact RLS: the s landmarks ∝ the exact scores
RLS_LEVEL = 8      # + 4·level + {0: the Bernoulli keeps, 1: thinning to the cap, 2: fallback}

#: Acceptance uniforms of RP-Cholesky round r are stream ``RPC_ACCEPT + r``, keyed by the
#: proposal's number (proposals: ``RPC_ROUND + r``); rounds stay far below 2^19.
RPC_ACCEPT = rowkeys.RPC_ROUND + (1 << 19)

#: Stand-in weighted key of a row of weight 0 (its draw comes after every positive weight's,
#: in the uniform order of its own key).
_ZERO_WEIGHT = 1e300


@dataclass(frozen=True)
class Landmarks:
    """Landmarks chosen among the training rows.

    Attributes
    ----------
    index : ndarray of int, shape (s,)
        Global row indices, increasing.
    X : ndarray, shape (s, p)
        The landmark rows (standardised by the plan), in the order of ``index``.
    evaluations : int
        Kernel entries the sampler evaluated (on all partitions).
    scores : ndarray or None
        The sampler's scores of the ``view`` rows asked for (sorted distinct global
        indices; NaN for rows that are not training rows), None when it has none.
    lam : float or None
        The ridge λ of the top level's scores (recursive RLS).
    sample : (ndarray, ndarray) or None
        The weighted sample the top level's scores came from: global indices and weights
        (recursive RLS), for checks.
    order : ndarray of int or None
        For the samplers whose draws nest (uniform, RP-Cholesky): ``index`` in the order
        drawn (uniform: of the keys; RP-Cholesky: of acceptance), each prefix of which is
        the sampler's draw of that size (RP-Cholesky: while the size rule picks the same
        form, see :func:`rp_cholesky_landmarks`).
    marks : ndarray, shape (s, 2), or None
        RP-Cholesky: for each k, the seconds from the start and the kernel entries
        evaluated when the first k + 1 pivots of ``order`` were final.
    """

    index: np.ndarray
    X: np.ndarray
    evaluations: int
    scores: np.ndarray | None = None
    lam: float | None = None
    sample: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    order: np.ndarray | None = field(default=None, repr=False)
    marks: np.ndarray | None = field(default=None, repr=False)


def row_seed(seed: Any) -> int:
    """An integer seed for row keys: ``seed`` itself, or one drawn from a SeedSequence."""
    if isinstance(seed, np.random.SeedSequence):
        return int(seed.generate_state(1, np.uint64)[0])
    return int(seed)


def check_landmark_budget(plan: RowPlan, s: int) -> int:
    return check_budget(plan.n_train, s, "training rows")


def gather_landmarks(parts: PartMap, plan: RowPlan, index: np.ndarray) -> Rows:
    rows = take_rows(parts, plan, index)
    if rows.index.size != np.unique(index).size:
        raise AssertionError("landmark rows missing from the partitions")
    return rows


def by_weight(seed: int, stream: int, index: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted keys (:func:`rowkeys.weighted_keys`), rows of weight 0 after all others in
    the order of a uniform key."""
    value = rowkeys.weighted_keys(seed, stream, index, weights)
    zero = ~np.isfinite(value)
    value[zero] = _ZERO_WEIGHT * (1.0 + rowkeys.uniforms(seed, stream, index[zero]))
    return value


def union_smallest(got: list[tuple[np.ndarray, ...]], k: int) -> tuple[np.ndarray, ...]:
    """The k smallest (value, index) of the parts' candidates ``(value, index, X, …)``, in
    increasing order of value, with their other columns."""
    got = [g for g in got if g[1].size]
    columns = [np.concatenate([g[j] for g in got]) for j in range(len(got[0]))]
    pick = rowkeys.smallest(columns[0], columns[1], k)
    return tuple(c[pick] for c in columns)


def as_view(view: Any) -> np.ndarray | None:
    """Rows whose scores to return, as sorted distinct global indices (None: none)."""
    if view is None:
        return None
    view = np.asarray(view, dtype=np.int64)
    return view if view.size < 2 or bool((np.diff(view) > 0).all()) else np.unique(view)


def in_view(index: np.ndarray, view: np.ndarray) -> np.ndarray:
    """Whether each global row of ``index`` is among the sorted ``view`` rows."""
    if view.size == 0:
        return np.zeros(index.shape, dtype=bool)
    return view[np.minimum(np.searchsorted(view, index), view.size - 1)] == index


def sorted_rows(index: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(index)
    return index[order].astype(np.int64), X[order]
