"""Recursive ridge-leverage-score sampling in memory (Musco & Musco, "Recursive sampling
for the Nyström method", NIPS 2017): Algorithm 3 with a budget s, its accelerated variant
(Section 5.2.1) and Algorithm 2 at a fixed λ. The numerics of a level (λ, ridge factor,
Lemma 6 scores, precision) are :mod:`kernel_lab.core.nystrom.scores`'s, shared with the
partitioned sampler."""

from __future__ import annotations

import math
import numbers

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.nystrom.common import (
    BLOCK_ENTRIES,
    FIXED_LAMBDA_BASE,
    LEVEL_CAP,
    RUN_ROWS,
    CountingKernel,
    Sample,
    Sampler,
    check_rows,
    distinct_by_weight,
)
from kernel_lab.core.nystrom.scores import (
    SINGLE,
    check_fixed_lam,
    fixed_lambda_oversampling_bound,
    lambda_for_budget,
    level_scores,
    ridge_factor,
    score_precision,
    scores_of_rows,
)


def in_order(pts: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Scores of the points ``pts`` (a permutation of 0..n−1) put back in index order."""
    full = np.empty(pts.size)
    full[pts] = scores
    return full


def accelerated_level_size(n: int, s: int) -> int:
    """Landmarks per recursive level of the accelerated variant:
    ``ceil(sqrt((n s + s³)/(4n)))``, as in the authors' reference code (``sLevel`` of
    ``recursiveNystrom.m``); their paper's Section 5.2.1 says ``≈ sqrt((n s + s³)/n)``,
    twice as many (see :class:`RecursiveRLSSampler` for why the code's is kept)."""
    return math.ceil(math.sqrt((n * s + s**3) / (4.0 * n)))


def _level_scores(X: np.ndarray, pts: np.ndarray, inv: np.ndarray, sample: np.ndarray,
                  SKS: np.ndarray, w: np.ndarray, lam: float, counter: CountingKernel,
                  q: float = 1.0) -> np.ndarray:
    """Lemma 6 scores of the points ``pts`` (a prefix of the permutation whose inverse is
    ``inv``) from the weighted ``sample`` ⊂ pts, whose kernel matrix SKS is already
    evaluated: the sample's own rows from SKS, every other point's from its kernel row
    against the sample, in blocks of at most :data:`BLOCK_ENTRIES` entries taken in index
    order, evaluated into one buffer (the n × |S| matrix is never held; each of its entries
    is evaluated once) — in the precision :func:`score_precision` allows for the
    level's oversampling (or a bound on it) q."""
    Linv = ridge_factor(SKS, w, lam)
    precision = score_precision(counter.kernel, Linv, w, lam, pts.size, q)
    # rows gathered with np.take: numpy's fancy indexing of rows costs 2.5-4 times as much
    # (8000 of 750,000 rows of 20 columns: 0.55 against 0.13 ms)
    XS = np.take(X, sample, axis=0)
    raw = np.empty(pts.size)
    raw[inv[sample]] = scores_of_rows(counter.diag(XS), SKS, Linv, lam)
    others = np.zeros(X.shape[0], dtype=bool)
    others[pts] = True
    others[sample] = False
    others = np.flatnonzero(others)
    rows = max(1, BLOCK_ENTRIES // max(sample.size, 1))
    buffer = np.empty((min(rows, others.size), sample.size),
                      dtype=np.float32 if precision == SINGLE else np.float64)
    Linv32 = Linv.astype(np.float32) if precision == SINGLE else None
    cuts = np.flatnonzero(np.diff(others) != 1) + 1 if pts.size == X.shape[0] else None
    if cuts is not None and others.size >= RUN_ROWS * (cuts.size + 1):
        # the top level with long runs of consecutive rows of X between the sample's: read
        # in place (a gather of nearly all rows took a tenth of the level in two threads)
        for run in np.split(others, cuts):
            if run.size == 0:
                continue
            for lo in range(int(run[0]), int(run[-1]) + 1, rows):
                hi = min(lo + rows, int(run[-1]) + 1)
                raw[inv[lo:hi]] = level_scores(counter, X[lo:hi], XS, Linv, lam, precision,
                                               buffer[:hi - lo], Linv32)
        return raw
    for start in range(0, others.size, rows):
        idx = others[start:start + rows]
        raw[inv[idx]] = level_scores(counter, np.take(X, idx, axis=0), XS, Linv, lam,
                                     precision, buffer[:idx.size], Linv32)
    return raw


class RecursiveRLSSampler(Sampler):
    """Recursive ridge-leverage-score sampling (Musco & Musco; see ``docs/papers.md``).

    With a budget s (``lam=None``): Algorithm 3 as in the authors' reference code — each
    level's λ is chosen so that about s points come out, and the top level draws exactly
    s distinct landmarks by their scores.

    With a fixed ``lam`` (Algorithm 2): every level estimates the λ-ridge leverage scores
    from the weighted sample of the level below and keeps each point independently with
    probability ``p_i = min(1, q l̃_i)``, the top level included, so the number of landmarks
    is random and set by the effective dimension: ``E s = Σ p_i ≥ d_eff(λ)``, and
    ``‖K − K̃‖₂ ≤ λ`` with probability about 1 − δ. The oversampling is the paper's
    ``16 log(Σ l̃ / δ)`` without the constant of its matrix-Bernstein proof,
    ``q = max(1, log(Σ l̃ / δ))`` (as the reference code drops it for Algorithm 3), and its
    base case ``m ≤ 192 log(1/δ)`` becomes: halve n until at most
    :data:`FIXED_LAMBDA_BASE` points are left, all of them landmarks. (With ``log Σ l̃``
    alone, a direction with eigenvalue a few times λ was missed in up to a fifth of the
    draws when d_eff < 10.) If the top level keeps no point (λ above ‖K‖₂, where any
    approximation meets the bound), one landmark is drawn by p so the features are not
    empty.

    Parameters
    ----------
    With a budget, a level below the top keeps at most ``max(s_rec, ⌈LEVEL_CAP q s_rec⌉)``
    points, thinned uniformly: Kernel Lab's addition, in neither the paper nor the
    reference code (see :data:`LEVEL_CAP`). Measured (7 draws each on 1500 clustered
    points, 3000 Gaussian points and the communities data, s = 20, 60, 180): it never acted
    in the plain variant (0 of 203 levels); in the accelerated one it acted at level sizes
    s_rec ≤ 8, in about a quarter of the levels at s_rec = 3 (s = 20), where without it
    the sampler evaluated 5.8–8.1 × n s kernel entries (with it 0.53–0.59 × n s) and its
    spectral error was not consistently lower (lower on one data set, equal and higher on
    the others).

    Parameters
    ----------
    accelerated : bool
        Use :func:`accelerated_level_size` landmarks, ``⌈√((n s + s³)/(4n))⌉``, on the
        recursive levels and s only at the top; budget mode only. Musco & Musco's
        Section 5.2.1 describes the idea with ``≈ √((n s + s³)/n)``; the formula here is
        that of their reference code. Measured on the same data: the paper's (twice the
        level size) evaluated 1.2–2.4 × as many kernel entries, and its median spectral
        error was lower in 2 of the 9 settings, higher in 3, within 5 % in the others.
    lam : float or None
        The fixed ridge λ of Algorithm 2; :meth:`sample` is then called with ``s=None``.
    delta : float
        Algorithm 2's failure probability δ ∈ (0, 1) (fixed λ only).
    """

    name = "recursive-rls"
    title = "recursive RLS"

    def __init__(self, accelerated: bool = False, lam: float | None = None,
                 delta: float = 0.1) -> None:
        self.accelerated = accelerated
        self.lam = None if lam is None else check_fixed_lam(lam)
        if isinstance(delta, bool) or not isinstance(delta, numbers.Real) \
                or not 0.0 < delta < 1.0:
            raise ParameterError(f"the failure probability δ of recursive RLS sampling must "
                                 f"lie strictly between 0 and 1, got {delta!r}; e.g. 0.1")
        self.delta = float(delta)
        if accelerated and lam is not None:
            raise ParameterError("the accelerated variant needs a budget s, not a fixed λ; "
                                 "use RecursiveRLSSampler(lam=...) without accelerated")

    def sample(self, X: np.ndarray, kernel: Kernel, s: int | None,
               rng: np.random.Generator) -> Sample:
        counter = CountingKernel(kernel)
        if self.lam is not None:
            if s is not None:
                raise ParameterError("with a fixed λ (Algorithm 2) the number of landmarks "
                                     "follows from d_eff(λ); call sample with s=None")
            n = X.shape[0]
            levels = max(1, math.ceil(math.log2(n / FIXED_LAMBDA_BASE)))
            pts, scores, lam = self._top_scores(X, counter, rng, levels, None)
            keep = rng.random(n) < scores
            if not keep.any():
                keep[distinct_by_weight(scores, 1, rng)] = True
            return Sample(np.sort(pts[keep]), in_order(pts, scores), counter.evaluations,
                          lam)
        n = check_rows(X, s)
        if s == n:
            return Sample(np.arange(n), np.ones(n), 0)
        s_rec = accelerated_level_size(n, s) if self.accelerated else s
        s_rec = max(1, min(s_rec, s))
        levels = math.ceil(math.log2(n / s_rec))  # ≥ 1 since s_rec ≤ s < n
        pts, scores, lam = self._top_scores(X, counter, rng, levels, s_rec)
        chosen = distinct_by_weight(scores, s, rng)
        return Sample(np.sort(pts[chosen]), in_order(pts, scores), counter.evaluations, lam)

    def _top_scores(self, X: np.ndarray, counter: CountingKernel, rng: np.random.Generator,
                    levels: int, s_rec: int | None) -> tuple[np.ndarray, np.ndarray, float]:
        """The recursion shared by both modes: nested uniform halves of one random
        permutation (level l holds its first ``ceil(n / 2^l)`` points), the deepest level
        taken whole with weights 1, and each shallower level's scores estimated from the
        weighted sample of the level below (Lemma 6). Returns the permutation (the top
        level's points), their top-level scores — oversampled and capped at 1 with a fixed
        λ, plain with a budget (the caller draws s by them) — and the top level's λ.
        ``s_rec`` is the per-level budget, None for a fixed λ."""
        n = X.shape[0]
        sizes = [n]
        for _ in range(levels):
            sizes.append(math.ceil(sizes[-1] / 2))
        perm = rng.permutation(n)
        inv = np.empty(n, dtype=np.int64)
        inv[perm] = np.arange(n)
        sample = perm[: sizes[-1]]              # deepest level: all of its points
        w = np.ones(sample.size)
        for level in range(levels - 1, -1, -1):
            top = level == 0
            pts = perm[: sizes[level]]
            SKS = counter(np.take(X, sample, axis=0))           # sample ⊂ pts (a prefix)
            if s_rec is None:
                lam = self.lam
                raw = _level_scores(X, pts, inv, sample, SKS, w, lam, counter,
                                    fixed_lambda_oversampling_bound(pts.size, lam,
                                                                    self.delta))
                q = max(1.0, math.log(max(float(raw.sum()), 1.0) / self.delta))
            else:
                # λ (through k) and the oversampling come from the level size s_rec at
                # every level, the top included, as in the authors' reference code: the
                # top level then draws s points by scores at the λ its s_rec landmarks can
                # resolve (a λ aimed at s from only s_rec landmarks made the accelerated
                # variant erratic)
                lam = lambda_for_budget(SKS, w, s_rec)
                q = 1.0 if top else math.log(max(s_rec, 2))
                raw = _level_scores(X, pts, inv, sample, SKS, w, lam, counter, q)
            scores = np.minimum(1.0, q * raw)
            if top:
                return pts, scores, lam
            keep = rng.random(pts.size) < scores
            prob = scores.copy()
            if s_rec is not None:
                cap = max(s_rec, math.ceil(LEVEL_CAP * q * s_rec))
                if keep.sum() > cap:
                    # λ came out too small (few landmarks below): thin the sample uniformly
                    # so the next level still costs O(n s); inclusion probabilities scale
                    # alike. Kernel Lab's own (see LEVEL_CAP)
                    kept = np.flatnonzero(keep)
                    keep[:] = False
                    keep[rng.choice(kept, size=cap, replace=False)] = True
                    prob *= cap / kept.size
                if not keep.any():
                    keep[rng.choice(pts.size, size=min(s_rec, pts.size), replace=False)] = True
                    prob = np.ones(pts.size)
            # a fixed λ keeps what it draws, even nothing: with no landmarks the next
            # level's scores K_ii / λ still over-estimate the true ones
            w = 1.0 / np.sqrt(prob[keep])
            sample = pts[keep]
        raise AssertionError("unreachable: the recursion has at least one level")


class AcceleratedRLSSampler(RecursiveRLSSampler):
    """Recursive RLS with fewer landmarks on the recursive levels (Section 5.2.1)."""

    name = "recursive-rls-fast"
    title = "recursive RLS (accelerated)"

    def __init__(self) -> None:
        super().__init__(accelerated=True)


