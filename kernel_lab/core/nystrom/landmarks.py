"""Nyström landmarks among the training rows of partitioned data.

Every random choice about a row is keyed by ``(seed, stream, global row index)``
(:mod:`kernel_lab.core.rows.keys`), and each partition's work depends on its own rows only, so
the same rows in one part or in many give the same landmarks:

- **uniform**: the s training rows with the smallest keys;
- **recursive RLS** (Musco & Musco, Algorithm 3 with a budget s, and its accelerated
  variant): the nested uniform levels are defined by keys — level ℓ holds the rows whose
  uniform is below 2^-ℓ, together with the ``⌈n / 2^L⌉`` rows of smallest key that form the
  deepest level L — so they are nested, as the reference code's prefixes of one
  permutation are. Levels of at most :data:`GATHER_ROWS` rows are gathered once and run in
  memory; the larger ones, the top level with every training row included, are scored per
  partition. Each level's λ, scores (Lemma 6), oversampling and cap are those of
  :class:`~kernel_lab.core.nystrom.samplers.RecursiveRLSSampler` describes; the
  Bernoulli keeps are ``u_i < p_i`` and the top level's s landmarks are drawn without
  replacement ∝ the scores by weighted keys, each partition proposing its s smallest;
- **recursive RLS at a fixed λ** (Algorithm 2, O(n s)): the same levels, every level (the
  top one included) keeping each row with probability ``min(1, q l̃_i)`` by its keyed
  uniform; a partition returns the rows an upper bound of q could keep, and the client
  applies the level's q once the sum of the scores is known;
- **exact RLS**: the training rows are gathered in index order when their n × n kernel
  matrix fits memory (else refused, naming ``subsample=N``), and s rows are drawn ∝ the
  exact scores by weighted keys;
- **RP-Cholesky**, blocked and accelerated (Epperly, Tropp & Webber): each round every
  partition recomputes its residual diagonal d from the pivots so far and proposes the b
  earliest arrivals of its rows, each row a Poisson process of rate d_i with keyed
  exponential gaps (:func:`rpc_arrivals`); the client keeps the global b earliest, in
  time order — b proposals **i.i.d.** ∝ d, repeats possible — and accepts them by
  rejection against the candidates' exact residual
  (:func:`~kernel_lab.core.nystrom.rpcholesky.accept_pivots`), which keeps RP-Cholesky's
  law exactly. While n·s ≤ ``RPC_STORED_MAX`` a round proposes one pivot (b = 1).

An array in memory is one part of this same implementation
(:mod:`kernel_lab.core.nystrom.samplers`: ``sampler.sample(X, kernel, s, seed)``): the same
rows give the same landmarks in memory and in partitions.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.lapack import lower_inverse
from kernel_lab.core.memory import memory_budget_bytes
from kernel_lab.core.nystrom.common import (
    BLOCK_ENTRIES,
    FIXED_LAMBDA_BASE,
    LEVEL_CAP,
    RPC_EMPTY_ROUNDS,
    RPC_MAX_PROPOSALS,
    RPC_STORED_MAX,
    CountingKernel,
)
from kernel_lab.core.nystrom.landmark_rows import (
    EXACT_DRAW,
    FILL,
    RLS_DRAW,
    RLS_LEVEL,
    RLS_LEVELS,
    RPC_ACCEPT,
    UNIFORM,
    Landmarks,
    as_view,
    by_weight,
    check_landmark_budget,
    gather_landmarks,
    in_view,
    row_seed,
    sorted_rows,
    union_smallest,
)
from kernel_lab.core.nystrom.rls import accelerated_level_size
from kernel_lab.core.nystrom.rpcholesky import (
    accept_pivots,
    candidate_residual,
    residual_rows,
    stored_pivots,
)
from kernel_lab.core.nystrom.scores import (
    EXACT_BYTES_PER_ENTRY,
    FLOAT64,
    SINGLE,
    check_delta,
    check_exact_memory,
    check_fixed_lam,
    exact_ridge_scores,
    fixed_lambda_oversampling_bound,
    lambda_for_budget,
    level_scores,
    ridge_factor,
    score_precision,
)
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.blocks import (
    ROW_BLOCK,
    block_count,
    block_slices,
    join,
    sum_frontier,
    tree_combine,
)
from kernel_lab.core.rows.keys import key_uniforms
from kernel_lab.core.rows.mapreduce import (
    PartMap,
    RowPlan,
    Rows,
    keyed_subset,
    part_rows,
)

#: Recursion levels of recursive RLS with at most this many (expected) rows are gathered
#: to the client once and run in memory; larger levels are scored per partition.
GATHER_ROWS = 20_000

#: The samplers available on partitioned data.
PART_SAMPLERS = ("uniform", "exact-rls", "recursive-rls", "recursive-rls-fast",
                 "rp-cholesky")

# ---------------------------------------------------------------------------------------
# uniform


def uniform_landmarks(parts: PartMap, plan: RowPlan, s: int, seed: Any) -> Landmarks:
    """The s training rows with the smallest keys of stream ``LANDMARKS + UNIFORM``
    (``order``: in the order of their keys, so that every prefix is the draw of its size)."""
    check_landmark_budget(plan, s)
    seed = row_seed(seed)
    stream = rowkeys.LANDMARKS + UNIFORM
    index = keyed_subset(parts, plan, stream, s, seed=seed)
    rows = gather_landmarks(parts, plan, index)
    order = rows.index[rowkeys.smallest(rowkeys.keys(seed, stream, rows.index), rows.index,
                                        s)]
    return Landmarks(rows.index, rows.X, 0, order=order)


# ---------------------------------------------------------------------------------------
# recursive RLS


def rls_levels(n: int, s_rec: int) -> int:
    """Halvings of recursive RLS: ``⌈log2(n / s_rec)⌉``."""
    return math.ceil(math.log2(n / s_rec))


def _in_level(index: np.ndarray, seed: int, level: int, deep_cut: int) -> np.ndarray:
    """Whether each row is in recursion level ``level``: its uniform is below 2^-level or
    its key is among the deepest level's (``≤ deep_cut``)."""
    if level == 0:  # every uniform is below 1
        return np.ones(np.shape(index), dtype=bool)
    key = rowkeys.keys(seed, rowkeys.LANDMARKS + RLS_LEVELS, index)
    return (key_uniforms(key) < 0.5**level) | (key <= np.uint64(deep_cut))


def _level_rows(part: Any, plan: RowPlan, seed: int, level: int, deep_cut: int) -> Rows:
    rows = part_rows(part, plan)
    keep = _in_level(rows.index, seed, level, deep_cut)
    return Rows(rows.X[keep], rows.y[keep], rows.index[keep])


@dataclass(frozen=True)
class LevelScoring:
    """What scores the rows of one level of recursive RLS: the kernel, the weighted sample
    of the level below (its rows XS and ``Linv``, :func:`ridge_factor`), λ, the
    oversampling q, and the level by its keys (seed, number, the deepest level's cut)."""

    kernel: Kernel
    XS: np.ndarray
    Linv: np.ndarray
    lam: float
    q: float
    seed: int
    level: int
    deep_cut: int


@dataclass(frozen=True)
class LevelStep(LevelScoring):
    """One level of recursive RLS applied to some of its rows (a partition's, or the
    gathered ones): the Lemma 6 scores from the weighted sample below, then the Bernoulli
    keeps (``top=False``) or the s smallest weighted keys (``top=True``)."""

    top: bool
    s: int
    fallback: int
    view: np.ndarray | None
    #: At most this many kept rows return (those with the smallest thinning keys, which
    #: hold the level's ``cap`` smallest over all partitions): a level's keeps never travel
    #: whole to the client.
    cap: int = 0
    #: The precision of the scores (decided once per level by
    #: :func:`~kernel_lab.core.nystrom.scores.score_precision`).
    precision: str = FLOAT64
    #: Rows per canonical block (the plan's): scores are computed block by block, so a
    #: row's score has the same bits wherever its rows were read.
    block: int = ROW_BLOCK

    def stream(self, which: int) -> int:
        return _level_stream(self.level, which)

    def run(self, rows: Rows) -> dict[str, Any]:
        X, index, raw, evaluations = _level_raw(self, rows)
        scores = np.minimum(1.0, self.q * raw)
        out: dict[str, Any] = {"count": index.size, "evaluations": evaluations}
        if self.view is not None:
            seen = in_view(index, self.view)
            out["view"] = (index[seen], scores[seen])
        if self.top:
            value = by_weight(self.seed, rowkeys.LANDMARKS + RLS_DRAW, index, scores)
            pick = rowkeys.smallest(value, index, self.s)
            out["candidates"] = (value[pick], index[pick], X[pick])
            return out
        kept = np.flatnonzero(rowkeys.uniforms(self.seed, self.stream(0), index) < scores)
        out["kept_count"] = kept.size
        if self.cap and kept.size > self.cap:
            kept = kept[rowkeys.smallest(rowkeys.keys(self.seed, self.stream(1), index[kept]),
                                         index[kept], self.cap)]
        out["kept"] = (index[kept], X[kept], scores[kept])
        if kept.size == 0:  # (the client falls back only when no part keeps a row)
            key = rowkeys.keys(self.seed, self.stream(2), index)
            fall = rowkeys.smallest(key, index, self.fallback)
            out["fallback"] = (key[fall], index[fall], X[fall])
        return out


def _level_raw(step: LevelStep | FixedLevelStep, rows: Rows
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The rows of ``step``'s level among ``rows`` (their X and global indices), their
    Lemma 6 scores (before oversampling) from the step's weighted sample, in blocks of at
    most :data:`BLOCK_ENTRIES` kernel entries inside each canonical block (so a row's score
    has the same bits wherever its rows were read) and the step's precision, and the kernel
    entries evaluated."""
    counter = CountingKernel(step.kernel)
    X, index = rows.X, rows.index
    if step.level > 0:  # (the top level is every row: no copy)
        keep = _in_level(index, step.seed, step.level, step.deep_cut)
        X, index = X[keep], index[keep]
    raw = np.empty(index.size)
    size = max(1, BLOCK_ENTRIES // max(step.XS.shape[0], 1))
    Linv32 = step.Linv.astype(np.float32) if step.precision == SINGLE else None
    for at in block_slices(index, step.block, size):
        raw[at] = level_scores(counter, X[at], step.XS, step.Linv, step.lam, step.precision,
                               Linv32=Linv32)
    return X, index, raw, counter.evaluations


def _level_total(outs: list[dict[str, Any]]) -> float:
    """The sum of a level's scores from its parts' per-block totals, added in the blocks'
    tree in block order: the same bits whatever the parts (cut at block boundaries)."""
    blocks = np.concatenate([o["total"][0] for o in outs])
    totals = np.concatenate([o["total"][1] for o in outs])
    if totals.size == 0:
        return 0.0
    return float(tree_combine(list(totals[np.argsort(blocks, kind="stable")])))


def _level_stream(level: int, which: int) -> int:
    """The stream of a level's draws: ``which`` 0 the Bernoulli keeps, 1 the thinning to
    the cap, 2 the fallback."""
    return rowkeys.LANDMARKS + RLS_LEVEL + 4 * level + which


@dataclass(frozen=True)
class FixedLevelStep(LevelScoring):
    """One level of recursive RLS at a fixed λ (Algorithm 2) applied to some of its rows:
    the Lemma 6 scores from the weighted sample below, and the rows that a keep
    ``u_i < min(1, q l̃_i)`` could take with ``q`` an upper bound of the level's
    oversampling (which needs the sum of all its scores, known only after the pass). The
    client applies the level's own oversampling to these candidates."""

    precision: str
    view: np.ndarray | None
    #: Rows per canonical block (the plan's), as :attr:`LevelStep.block`.
    block: int = ROW_BLOCK

    def run(self, rows: Rows) -> dict[str, Any]:
        X, index, raw, evaluations = _level_raw(self, rows)
        u = rowkeys.uniforms(self.seed, _level_stream(self.level, 0), index)
        may = u < np.minimum(1.0, self.q * raw)
        # the one landmark of a top level that keeps none, ∝ the scores (all below 1 then)
        value = by_weight(self.seed, rowkeys.LANDMARKS + RLS_DRAW, index, raw)
        pick = rowkeys.smallest(value, index, 1)
        blocks, first = np.unique(index // self.block, return_index=True)
        totals = np.add.reduceat(raw, first) if raw.size else np.zeros(0)
        out: dict[str, Any] = {"total": (blocks, totals), "evaluations": evaluations,
                               "kept": (index[may], X[may], raw[may]),
                               "fallback": (value[pick], index[pick], X[pick])}
        if self.view is not None:
            seen = in_view(index, self.view)
            out["view"] = (index[seen], raw[seen])
        return out


def _level_part(part: Any, plan: RowPlan, step: LevelStep | FixedLevelStep
                ) -> dict[str, Any]:
    return step.run(part_rows(part, plan))


def _deepest_level(parts: PartMap, plan: RowPlan, seed: int, levels: int, gather_rows: int
                   ) -> tuple[Rows, int, int]:
    """The start of the recursion: the rows of the first level small enough to gather (the
    deepest one at least), read once; the key cut of the deepest level (its
    ``⌈n / 2^levels⌉`` smallest keys); and that first gathered level."""
    n = plan.n_train
    deep = keyed_subset(parts, plan, rowkeys.LANDMARKS + RLS_LEVELS,
                        math.ceil(n / 2**levels), seed=seed)
    deep_cut = int(rowkeys.keys(seed, rowkeys.LANDMARKS + RLS_LEVELS, deep).max())
    gathered = min(levels, max(1, math.ceil(math.log2(max(n / gather_rows, 1.0)))))
    got = [r for r in parts.map(_level_rows, plan, seed, gathered, deep_cut) if r.index.size]
    local = Rows(np.concatenate([r.X for r in got]), np.concatenate([r.y for r in got]),
                 np.concatenate([r.index for r in got]))
    return local, deep_cut, gathered


def _deepest_sample(local: Rows, seed: int, levels: int, deep_cut: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The deepest level taken whole: its global indices, rows and weights 1."""
    keep = _in_level(local.index, seed, levels, deep_cut)
    return local.index[keep], local.X[keep], np.ones(int(keep.sum()))


def recursive_rls_landmarks(parts: PartMap, plan: RowPlan, kernel: Kernel, s: int,
                            seed: Any, *, accelerated: bool = False,
                            view: np.ndarray | None = None,
                            gather_rows: int = GATHER_ROWS,
                            progress: Progress | None = None) -> Landmarks:
    """Recursive ridge-leverage-score landmarks with a budget s (Musco & Musco, Alg. 3 as
    :class:`~kernel_lab.core.nystrom.samplers.RecursiveRLSSampler` describes it), over
    partitions; see
    the module docstring. ``view``: global row indices whose top-level scores to return;
    ``progress`` is told before every level (and may cancel)."""
    n = check_landmark_budget(plan, s)
    seed = row_seed(seed)
    view = as_view(view)
    if s == n:
        index = keyed_subset(parts, plan, rowkeys.LANDMARKS + UNIFORM, n, seed=seed)
        rows = gather_landmarks(parts, plan, index)
        scores = None if view is None else np.where(plan.is_test(view), np.nan, 1.0)
        return Landmarks(rows.index, rows.X, 0, scores)
    s_rec = accelerated_level_size(n, s) if accelerated else s
    s_rec = max(1, min(s_rec, s))
    levels = rls_levels(n, s_rec)
    local, deep_cut, gathered = _deepest_level(parts, plan, seed, levels, gather_rows)
    sample, XS, w = _deepest_sample(local, seed, levels, deep_cut)
    evaluations = 0
    for level in range(levels - 1, -1, -1):
        top = level == 0
        if progress is not None:
            progress(1.0 - (level + 1) / (levels + 1),
                     f"recursive RLS: level {level} of {levels - 1}")
        SKS = kernel(XS)
        evaluations += SKS.size
        lam = lambda_for_budget(SKS, w, s_rec)
        q = 1.0 if top else math.log(max(s_rec, 2))
        cap = max(s_rec, math.ceil(LEVEL_CAP * q * s_rec))
        Linv = ridge_factor(SKS, w, lam)
        # the level's expected size (its keyed size is random)
        precision = score_precision(kernel, Linv, w, lam, math.ceil(n / 2**level), q)
        step = LevelStep(kernel, XS, Linv, lam, q, seed, level, deep_cut, top, s,
                         min(s_rec, n), view if top else None, cap, precision, plan.block)
        outs = ([step.run(local)] if level >= gathered
                else parts.map(_level_part, plan, step))
        evaluations += sum(o["evaluations"] for o in outs)
        if top:
            _, index, X = union_smallest([o["candidates"] for o in outs], s)
            index, X = sorted_rows(index, X)
            scores = None if view is None else _view_scores(view, outs)
            return Landmarks(index, X, evaluations, scores, lam, (sample, w))
        kept_index = np.concatenate([o["kept"][0] for o in outs])
        kept_X = np.concatenate([o["kept"][1] for o in outs])
        prob = np.concatenate([o["kept"][2] for o in outs])
        kept_total = sum(o["kept_count"] for o in outs)
        if kept_total > cap:
            # thinned uniformly to the cap, inclusion probabilities scaled alike (Kernel
            # Lab's own, see nystrom.common.LEVEL_CAP); each partition sent its cap smallest keys
            pick = rowkeys.smallest(rowkeys.keys(seed, step.stream(1), kept_index),
                                    kept_index, cap)
            prob = prob[pick] * (cap / kept_total)
            kept_index, kept_X = kept_index[pick], kept_X[pick]
        if not kept_index.size:
            count = sum(o["count"] for o in outs)
            _, kept_index, kept_X = union_smallest([o["fallback"] for o in outs if "fallback" in o],
                                           min(s_rec, count))
            prob = np.ones(kept_index.size)
        order = np.argsort(kept_index)
        sample, XS, w = kept_index[order], kept_X[order], 1.0 / np.sqrt(prob[order])
    raise AssertionError("unreachable: the recursion has at least one level")


def _view_scores(view: np.ndarray, outs: list[dict[str, Any]]) -> np.ndarray:
    """The scores the parts returned for the ``view`` rows (NaN for rows none returned)."""
    scores = np.full(view.size, np.nan)
    for o in outs:
        scores[np.searchsorted(view, o["view"][0])] = o["view"][1]
    return scores


def recursive_rls_fixed_landmarks(parts: PartMap, plan: RowPlan, kernel: Kernel, lam: float,
                                  seed: Any, *, delta: float = 0.1,
                                  view: np.ndarray | None = None,
                                  gather_rows: int = GATHER_ROWS,
                                  progress: Progress | None = None) -> Landmarks:
    """Recursive ridge-leverage-score landmarks at a fixed ridge λ (Musco & Musco,
    Algorithm 2, as :class:`~kernel_lab.core.nystrom.samplers.RecursiveRLSSampler` with
    ``lam`` describes it), over partitions: as many landmarks as d_eff(λ) calls for, O(n s) kernel
    entries. The levels are those of :func:`recursive_rls_landmarks` with
    ``⌈log2(n / FIXED_LAMBDA_BASE)⌉`` halvings (at least one); each level keeps a row
    with probability ``min(1, q l̃_i)``, ``q = max(1, log(Σ l̃ / δ))`` (the top level
    included: the number of landmarks is random), by the keyed uniforms ``u_i``; a top
    level that keeps no row takes one ∝ the scores. ``view`` and ``progress`` as
    :func:`recursive_rls_landmarks` takes them."""
    lam, delta = check_fixed_lam(lam), check_delta(delta)
    n = plan.n_train
    if n < 1:
        raise ParameterError("recursive RLS needs at least one training row")
    seed = row_seed(seed)
    view = as_view(view)
    levels = max(1, math.ceil(math.log2(n / FIXED_LAMBDA_BASE)))
    local, deep_cut, gathered = _deepest_level(parts, plan, seed, levels, gather_rows)
    sample, XS, w = _deepest_sample(local, seed, levels, deep_cut)
    # an upper bound of every level's oversampling: the parts return the rows it could keep
    bound = fixed_lambda_oversampling_bound(n, lam, delta)
    evaluations = 0
    for level in range(levels - 1, -1, -1):
        if progress is not None:
            progress(1.0 - (level + 1) / (levels + 1),
                     f"recursive RLS (λ = {lam:g}): level {level} of {levels - 1}")
        SKS = kernel(XS)
        evaluations += SKS.size
        Linv = ridge_factor(SKS, w, lam)
        rows = math.ceil(n / 2**level)  # the level's expected size
        precision = score_precision(kernel, Linv, w, lam, rows,
                                    fixed_lambda_oversampling_bound(rows, lam, delta))
        step = FixedLevelStep(kernel, XS, Linv, lam, bound, seed, level, deep_cut, precision,
                              view if level == 0 else None, plan.block)
        outs = _run_level(parts, plan, step, local, gathered)
        q = max(1.0, math.log(max(_level_total(outs), 1.0) / delta))
        if q > step.q:  # scores above 1/λ (a kernel beyond 1): ask again with this q
            step = replace(step, q=q)
            outs = _run_level(parts, plan, step, local, gathered)
        evaluations += sum(o["evaluations"] for o in outs)
        index = np.concatenate([o["kept"][0] for o in outs])
        X = np.concatenate([o["kept"][1] for o in outs])
        prob = np.minimum(1.0, q * np.concatenate([o["kept"][2] for o in outs]))
        kept = rowkeys.uniforms(seed, _level_stream(level, 0), index) < prob
        order = np.argsort(index[kept])
        index, X, prob = index[kept][order], X[kept][order], prob[kept][order]
        if level > 0:
            # a fixed λ keeps what it draws, even nothing: with no landmarks the next
            # level's scores K_ii / λ still over-estimate the true ones
            sample, XS, w = index, X, 1.0 / np.sqrt(prob)
            continue
        if not index.size:
            _, index, X = union_smallest([o["fallback"] for o in outs], 1)
        scores = None
        if view is not None:
            scores = np.minimum(1.0, q * _view_scores(view, outs))
        return Landmarks(index.astype(np.int64), X, evaluations, scores, lam, (sample, w))
    raise AssertionError("unreachable: the recursion has at least one level")


def _run_level(parts: PartMap, plan: RowPlan, step: LevelStep | FixedLevelStep, local: Rows,
               gathered: int) -> list[dict[str, Any]]:
    """A level's step on the gathered rows (a level deeper than the first gathered one) or
    on every partition."""
    return [step.run(local)] if step.level >= gathered else parts.map(_level_part, plan, step)


# ---------------------------------------------------------------------------------------
# exact RLS


def check_exact_rows(plan: RowPlan) -> None:
    """Refuse (MemoryBudgetError) exact leverage scores whose n × n work on the training
    rows does not fit memory, naming the ``subsample=N`` that would."""
    n = plan.n_train
    fits = int(math.sqrt(memory_budget_bytes() / EXACT_BYTES_PER_ENTRY))
    rows = max(1, int(fits * plan.n / max(n, 1)))
    check_exact_memory(n, f"Exact RLS gathers every training row of the partitions and "
                          f"forms their n × n kernel matrix: open a seeded sample with the "
                          f"data option subsample=N (N ≤ {rows} rows keeps its training "
                          f"rows within the budget), or use recursive-rls, which needs "
                          f"O(n s) memory.")


def _training_rows(parts: PartMap, plan: RowPlan) -> Rows:
    """Every training row, in the order of the global index."""
    got = [r for r in parts.map(part_rows, plan) if r.index.size]
    index = np.concatenate([r.index for r in got])
    order = np.argsort(index)
    return Rows(np.concatenate([r.X for r in got])[order],
                np.concatenate([r.y for r in got])[order], index[order])


def exact_rls_landmarks(parts: PartMap, plan: RowPlan, kernel: Kernel, s: int, seed: Any, *,
                        lam: float | None = None, view: np.ndarray | None = None
                        ) -> Landmarks:
    """s landmarks ∝ the exact ridge leverage scores of the training rows (as
    :class:`~kernel_lab.core.nystrom.samplers.ExactRLSSampler` describes): the rows are gathered in
    index order when their n × n kernel matrix fits memory (:func:`check_exact_rows`),
    λ from :func:`lambda_for_budget` unless given, and the s landmarks drawn without
    replacement ∝ the scores by the weighted keys of stream ``LANDMARKS + EXACT_DRAW``
    (rows of score 0 after the others, uniformly). ``view``: rows whose scores to return."""
    n = check_landmark_budget(plan, s)
    check_exact_rows(plan)
    seed = row_seed(seed)
    rows = _training_rows(parts, plan)
    K = kernel(rows.X)
    lam = lambda_for_budget(K, np.ones(n), s) if lam is None else float(lam)
    scores = exact_ridge_scores(K, lam)
    value = by_weight(seed, rowkeys.LANDMARKS + EXACT_DRAW, rows.index, scores)
    index, X = sorted_rows(*(c[rowkeys.smallest(value, rows.index, s)] for c in (rows.index,
                                                                              rows.X)))
    seen = None
    if view is not None:
        view = as_view(view)
        at = np.minimum(np.searchsorted(rows.index, view), n - 1)
        seen = np.where(rows.index[at] == view, scores[at], np.nan)
    return Landmarks(index, X, K.size, seen, lam)


# ---------------------------------------------------------------------------------------
# RP-Cholesky, blocked


def _rpc_part(part: Any, plan: RowPlan, kernel: Kernel, XS: np.ndarray, Linv: np.ndarray,
              chosen: np.ndarray, seed: int, stream: int, b: int) -> dict[str, Any]:
    """A partition's residual diagonal d after the pivots ``XS`` and its b earliest
    arrivals by it (:func:`rpc_arrivals`)."""
    rows = part_rows(part, plan)
    counter = CountingKernel(kernel)
    first = counter.diag(rows.X)
    d = first.copy()
    if XS.shape[0]:
        step = max(1, BLOCK_ENTRIES // XS.shape[0])
        for at in block_slices(rows.index, plan.block, step):  # canonical blocks
            d[at] = residual_rows(counter, rows.X[at], first[at], XS, Linv)
    d[np.isin(rows.index, chosen)] = 0.0
    value, pick = rpc_arrivals(seed, stream, rows.index, d, b)
    span = {"rows": (part.start, part.start + part.rows), "block": plan.block, "n": plan.n}
    return {"total": sum_frontier(rows.index, d, **span),
            "first": sum_frontier(rows.index, first, **span),
            "candidates": (value, rows.index[pick], rows.X[pick], d[pick]),
            "evaluations": counter.evaluations}


#: Arrival k of row i in RP-Cholesky's round r is keyed by the "row" ``i · RPC_ARRIVALS + k``
#: of stream ``RPC_ROUND + r``; a row never needs more arrivals than a round proposes
#: (at most RPC_MAX_PROPOSALS < RPC_ARRIVALS).
RPC_ARRIVALS = 1 << 11


def rpc_arrivals(seed: int, stream: int, index: np.ndarray, d: np.ndarray, b: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The b earliest arrivals of independent Poisson processes, one per row of rate d_i
    (rows with d_i = 0 never arrive): row i's k-th arrival is at ``Σ_{j<k} E_ij / d_i``,
    ``E_ij = −log(1 − U_ij)`` the keyed exponentials of ``(seed, stream, i · RPC_ARRIVALS
    + j)``. In the superposed process (rate Σd) the row of each arrival is independent of
    the others and of the arrival times, and is row i with probability ``d_i / Σd``: the
    earliest b arrivals, in time order, are b draws **i.i.d.** ∝ d (with repeats) —
    the with-replacement counterpart of the weighted keys (whose first arrivals alone
    are draws without replacement). Every arrival depends on its own row only, so the
    earliest b of several parts' candidates are those of all their rows together: the
    same bits however the rows are cut. Returns the arrival times (increasing, ties by
    row) and the positions in ``index`` of their rows (a row as often as it arrived)."""
    index = np.asarray(index, dtype=np.int64)
    times = rowkeys.weighted_keys(seed, stream, index * RPC_ARRIVALS, d)
    pick = rowkeys.smallest(times, index, b)
    pick = pick[np.isfinite(times[pick])]
    got_t, got_at = [times[pick]], [pick]
    active, last = pick, times[pick]
    for k in range(1, RPC_ARRIVALS):
        seen = np.concatenate(got_t)
        cut = np.partition(seen, b - 1)[b - 1] if seen.size >= b else np.inf
        keep = last < cut  # only these rows can arrive again before the b-th arrival
        active, last = active[keep], last[keep]
        if not active.size:
            break
        last = last + rowkeys.weighted_keys(seed, stream, index[active] * RPC_ARRIVALS + k,
                                            d[active])
        got_t.append(last)
        got_at.append(active)
    t, at = np.concatenate(got_t), np.concatenate(got_at)
    first = rowkeys.smallest(t, index[at], b)
    return t[first], at[first]


def _uniform_fill(parts: PartMap, plan: RowPlan, seed: int, chosen: np.ndarray, need: int
                  ) -> Rows:
    """``need`` training rows not in ``chosen``, the smallest keys of stream FILL."""
    stream = rowkeys.LANDMARKS + FILL
    index = keyed_subset(parts, plan, stream, need + chosen.size, seed=seed)
    index = index[~np.isin(index, chosen)]
    index = index[rowkeys.smallest(rowkeys.keys(seed, stream, index), index, need)]
    return gather_landmarks(parts, plan, index)


def _rpc_stored(rows: Rows, kernel: Kernel, s: int, seed: int, t0: float,
                progress: Progress | None) -> Landmarks:
    """RP-Cholesky one pivot at a time on gathered training rows (in index order), keeping
    their factor (:func:`~kernel_lab.core.nystrom.rpcholesky.stored_pivots`)."""
    order, marks, evaluations = stored_pivots(rows.X, rows.index, kernel, s, seed,
                                              rowkeys.LANDMARKS + FILL, t0, progress)
    at = np.sort(order)
    return Landmarks(rows.index[at], rows.X[at], evaluations, order=rows.index[order],
                     marks=marks)


def rp_cholesky_landmarks(parts: PartMap, plan: RowPlan, kernel: Kernel, s: int, seed: Any,
                          progress: Progress | None = None, *,
                          one_at_a_time: bool | None = None) -> Landmarks:
    """Blocked, accelerated RP-Cholesky over partitions (see the module docstring): one
    map over the partitions per round, memory on the client O(s² + parts · b);
    ``progress`` is told before every round (and may cancel). While ``n·s ≤
    RPC_STORED_MAX`` a round proposes one pivot (b = 1): the earliest arrival is a draw ∝
    the current residual, accepted unless rounding made its residual smaller, so the
    pivots follow the exact sequential law of Chen et al.'s Algorithm 1 (as the b i.i.d.
    proposals of a larger round do, accepted by rejection); and when, besides,
    at most :data:`GATHER_ROWS` training rows are there, they are gathered and their n × s
    factor kept (:func:`_rpc_stored`: one kernel column per pivot, not a pass over every
    pivot so far) — a size rule, the same wherever the rows live. ``one_at_a_time``
    forces either form (None: the size rule). ``order`` holds the pivots in the order
    accepted, ``marks`` when each was final."""
    t0 = time.perf_counter()
    n = check_landmark_budget(plan, s)
    if one_at_a_time is None:
        one_at_a_time = n * s <= RPC_STORED_MAX
    if one_at_a_time and n <= GATHER_ROWS:
        return _rpc_stored(_training_rows(parts, plan), kernel, s, row_seed(seed), t0,
                           progress)
    marks: list[tuple[float, int]] = []
    seed = row_seed(seed)
    counter = CountingKernel(kernel)
    index = np.zeros(0, dtype=np.int64)
    XS: np.ndarray | None = None
    L = np.zeros((s, s))
    rate, empty, evaluations = 1.0, 0, 0
    first_total = 0.0
    rnd = 0
    while index.size < s:
        k, need = index.size, s - index.size
        if progress is not None:
            progress(k / s, f"RP-Cholesky: round {rnd + 1}, {k} of {s} pivots")
        b = 1 if one_at_a_time else min(RPC_MAX_PROPOSALS,
                                         max(need, math.ceil(1.25 * need / rate)))
        Linv = lower_inverse(L[:k, :k]) if k else np.zeros((0, 0))
        p = 0 if XS is None else XS.shape[1]
        outs = parts.map(_rpc_part, plan, kernel, XS if k else np.zeros((0, p)), Linv,
                         index, seed, rowkeys.RPC_ROUND + rnd, b)
        evaluations += sum(o["evaluations"] for o in outs)
        blocks = block_count(plan.n, plan.block)  # sums per block, in the blocks' tree
        total = join([o["total"] for o in outs]).finish(n_blocks=blocks)
        if rnd == 0:
            first_total = join([o["first"] for o in outs]).finish(n_blocks=blocks)
        if total <= 1e-12 * first_total or empty == RPC_EMPTY_ROUNDS:
            fill = _uniform_fill(parts, plan, seed, index, need)
            index = np.concatenate([index, fill.index])
            XS = fill.X if XS is None else np.concatenate([XS, fill.X])
            marks += [(time.perf_counter() - t0, evaluations + counter.evaluations)] * need
            break
        _, T, XT, d_T = union_smallest([o["candidates"] for o in outs], b)
        u = rowkeys.uniforms(seed, RPC_ACCEPT + rnd, np.arange(T.size))
        H, FT = candidate_residual(counter, XT, XS[:k] if k else XT[:0], L[:k, :k])
        acc, cols, tried = accept_pivots(H, T, u, d_T, need)
        rnd += 1
        a = len(acc)
        rate = max(a / max(tried, 1), 1.0 / 16.0)
        if not a:
            empty += 1
            continue
        empty = 0
        L[k:k + a, :k] = FT[acc]
        L[k:k + a, k:k + a] = cols[acc, :a]
        index = np.concatenate([index, T[acc]])
        XS = XT[acc] if XS is None else np.concatenate([XS, XT[acc]])
        marks += [(time.perf_counter() - t0, evaluations + counter.evaluations)] * a
    assert XS is not None
    order = index.astype(np.int64)
    index, XS = sorted_rows(index, XS)
    return Landmarks(index, XS, evaluations + counter.evaluations, order=order,
                     marks=np.array(marks, dtype=float).reshape(-1, 2))


def choose_landmarks(name: str, parts: PartMap, plan: RowPlan, kernel: Kernel,
                     s: int | None, seed: Any, *, lam: float | None = None,
                     view: np.ndarray | None = None,
                     progress: Progress | None = None) -> Landmarks:
    """s landmarks by the named sampler (one of :data:`PART_SAMPLERS`); ``view`` and
    ``progress`` as :func:`recursive_rls_landmarks` takes them. ``recursive-rls`` with a
    fixed ``lam`` and ``s=None`` is Algorithm 2 (:func:`recursive_rls_fixed_landmarks`),
    as ``RecursiveRLSSampler(lam=...)`` in memory; ``exact-rls`` takes ``lam`` as its λ."""
    if name == "recursive-rls" and lam is not None:
        if s is not None:
            raise ParameterError("with a fixed λ (Algorithm 2) the number of landmarks "
                                 "follows from d_eff(λ); call with s=None")
        return recursive_rls_fixed_landmarks(parts, plan, kernel, lam, seed, view=view,
                                             progress=progress)
    if s is None:
        raise ParameterError(f"the sampler {name!r} needs a number of landmarks s")
    if name == "exact-rls":
        return exact_rls_landmarks(parts, plan, kernel, s, seed, lam=lam, view=view)
    if name == "uniform":
        return uniform_landmarks(parts, plan, s, seed)
    if name in ("recursive-rls", "recursive-rls-fast"):
        return recursive_rls_landmarks(parts, plan, kernel, s, seed, view=view,
                                       accelerated=name == "recursive-rls-fast",
                                       progress=progress)
    if name == "rp-cholesky":
        return rp_cholesky_landmarks(parts, plan, kernel, s, seed, progress)
    raise ParameterError(f"the sampler {name!r} does not run on partitioned data; "
                         f"choose one of: {', '.join(PART_SAMPLERS)}")
