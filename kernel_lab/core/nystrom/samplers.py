"""The Nyström landmark samplers by name, for an array in memory: thin fronts of the one
implementation on rows (:mod:`kernel_lab.core.nystrom.landmarks`).

``sampler.sample(X, kernel, s, random_state)`` wraps X as one part whose rows are all
training rows, runs the keyed sampler on it and returns a
:class:`~kernel_lab.core.nystrom.common.Sample`: ``s`` distinct landmark indices, per-point
scores where the method has them (for display), and the number of kernel entries
evaluated. Every random choice about a row is keyed by ``(seed, stream, row index)``, so
the same rows give the same landmarks here and in partitions. ``random_state`` gives the
key seed: an int is the seed itself, anything else (a Generator, a SeedSequence, None)
gives one through :func:`~kernel_lab.core.validation.check_seed`.

The scalable samplers (uniform, recursive RLS and its accelerated variant, randomly
pivoted Cholesky) evaluate O(n s) kernel entries (RP-Cholesky on large data a few times
that) in row blocks of at most :data:`~kernel_lab.core.nystrom.common.BLOCK_ENTRIES`
entries, and never hold more than O(n + s²) beyond them; the exact ridge-leverage-score
sampler forms the n × n matrix and is a reference for small n. Recursive RLS at a fixed λ
(``RecursiveRLSSampler(lam=λ)``, Algorithm 2) is called with ``s=None`` and returns as
many landmarks as d_eff(λ) calls for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.nystrom import landmarks
from kernel_lab.core.nystrom.common import Sample, Sampler, check_rows
from kernel_lab.core.nystrom.scores import check_delta, check_exact_memory, check_fixed_lam
from kernel_lab.core.rows.mapreduce import one_part
from kernel_lab.core.validation import check_seed


def key_seed(random_state: Any) -> int:
    """The seed of the row keys: an int itself, else one drawn by
    :func:`~kernel_lab.core.validation.check_seed` (a Generator, RandomState,
    SeedSequence or None)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return check_seed(random_state)


def _sample(got: landmarks.Landmarks, scores: np.ndarray | None = None) -> Sample:
    return Sample(got.index, got.scores if scores is None else scores, got.evaluations,
                  got.lam, got.order, got.marks)


class UniformSampler(Sampler):
    """s distinct points uniformly at random (no kernel evaluations): the s smallest keys;
    ``order`` lists them by key, so every prefix is the draw of its size."""

    name = "uniform"
    title = "uniform"

    def sample(self, X: np.ndarray, kernel: Kernel, s: int | None,
               random_state: Any = None) -> Sample:
        check_rows(X, s)
        return _sample(landmarks.uniform_landmarks(*one_part(X), s, key_seed(random_state)))


class ExactRLSSampler(Sampler):
    """Exact ridge leverage scores ``l_i = (K (K + λI)⁻¹)_ii`` from one eigendecomposition of
    the n×n kernel matrix (reference for small n); s distinct points ∝ scores (weighted
    keys).

    Parameters
    ----------
    lam : float or None
        Ridge λ; None chooses it with
        :func:`~kernel_lab.core.nystrom.scores.lambda_for_budget` on the whole K.
    """

    name = "exact-rls"
    title = "exact RLS"
    scalable = False

    def __init__(self, lam: float | None = None) -> None:
        self.lam = lam

    def sample(self, X: np.ndarray, kernel: Kernel, s: int | None,
               random_state: Any = None) -> Sample:
        n = check_rows(X, s)
        check_exact_memory(n, f"Exact RLS forms the {n} × {n} kernel matrix of the rows: use "
                              f"fewer rows, or the recursive RLS sampler, which needs O(n s) "
                              f"memory.")
        return _sample(landmarks.exact_rls_landmarks(*one_part(X), kernel, s,
                                                     key_seed(random_state), lam=self.lam,
                                                     view=np.arange(n)))


class RecursiveRLSSampler(Sampler):
    """Recursive ridge-leverage-score sampling (Musco & Musco; see ``docs/papers.md``).

    With a budget s (``lam=None``): Algorithm 3 as in the authors' reference code — each
    level's λ is chosen so that about s points come out, and the top level draws exactly
    s distinct landmarks by their scores.

    With a fixed ``lam`` (Algorithm 2): every level estimates the λ-ridge leverage scores from
    the weighted sample of the level below and keeps each point independently with probability
    ``p_i = min(1, q l̃_i)``, the top level included, so the number of landmarks is random and
    set by the effective dimension: ``E s = Σ p_i ≥ d_eff(λ)``, and ``‖K − K̃‖₂ ≤ λ`` with
    probability about 1 − δ. The oversampling is the paper's ``16 log(Σ l̃ / δ)`` without the
    constant of its matrix-Bernstein proof, ``q = max(1, log(Σ l̃ / δ))`` (as the reference code
    drops it for Algorithm 3), and its base case ``m ≤ 192 log(1/δ)`` becomes: halve n until at
    most :data:`~kernel_lab.core.nystrom.common.FIXED_LAMBDA_BASE` points are left, all of them
    landmarks. (With ``log Σ l̃`` alone, a direction with eigenvalue a few times λ was missed in
    up to a fifth of the draws when d_eff < 10.) If the top level keeps no point (λ above ‖K‖₂,
    where any approximation meets the bound), one landmark is drawn by p so the features are not
    empty.

    With a budget, a level below the top keeps at most ``max(s_rec, ⌈LEVEL_CAP q s_rec⌉)``
    points, thinned uniformly: Kernel Lab's addition, in neither the paper nor the reference
    code (see :data:`~kernel_lab.core.nystrom.common.LEVEL_CAP`). Measured on the
    generator-driven form this sampler had before its draws were keyed (7 draws each on 1500
    clustered points, 3000 Gaussian points and the communities data, s = 20, 60, 180): it never
    acted in the plain variant (0 of 203 levels); in the accelerated one it acted at level sizes
    s_rec ≤ 8, in about a quarter of the levels at s_rec = 3 (s = 20), where without it the
    sampler evaluated 5.8–8.1 × n s kernel entries (with it 0.53–0.59 × n s) and its spectral
    error was not consistently lower (lower on one data set, equal and higher on the others).

    Parameters
    ----------
    accelerated : bool
        Use :func:`~kernel_lab.core.nystrom.rls.accelerated_level_size` landmarks,
        ``⌈√((n s + s³)/(4n))⌉``, on the recursive levels and s only at the top; budget
        mode only. Musco & Musco's Section 5.2.1 describes the idea with
        ``≈ √((n s + s³)/n)``; the formula here is that of their reference code. Measured
        on the same data (generator-driven form): the paper's (twice the level size)
        evaluated 1.2–2.4 × as many kernel entries, and its median spectral
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
        self.delta = check_delta(delta)
        if accelerated and lam is not None:
            raise ParameterError("the accelerated variant needs a budget s, not a fixed λ; "
                                 "use RecursiveRLSSampler(lam=...) without accelerated")

    def sample(self, X: np.ndarray, kernel: Kernel, s: int | None,
               random_state: Any = None) -> Sample:
        seed = key_seed(random_state)
        n = X.shape[0]
        if self.lam is not None:
            if s is not None:
                raise ParameterError("with a fixed λ (Algorithm 2) the number of landmarks "
                                     "follows from d_eff(λ); call sample with s=None")
            return _sample(landmarks.recursive_rls_fixed_landmarks(
                *one_part(X), kernel, self.lam, seed, delta=self.delta, view=np.arange(n)))
        check_rows(X, s)
        return _sample(landmarks.recursive_rls_landmarks(
            *one_part(X), kernel, s, seed, accelerated=self.accelerated, view=np.arange(n)))


class AcceleratedRLSSampler(RecursiveRLSSampler):
    """Recursive RLS with fewer landmarks on the recursive levels (Section 5.2.1)."""

    name = "recursive-rls-fast"
    title = "recursive RLS (accelerated)"

    def __init__(self) -> None:
        super().__init__(accelerated=True)


class RPCholeskySampler(Sampler):
    """Randomly pivoted Cholesky: pivot i with probability ∝ the residual diagonal, then
    update the residual by the new Cholesky column (one kernel column per landmark).

    Rounds over the rows (:func:`~kernel_lab.core.nystrom.landmarks.rp_cholesky_landmarks`):
    each recomputes the residual diagonal d from the pivots so far over row blocks as
    ``k(x, x) − ‖K(x, S) L⁻ᵀ‖²`` (L the Cholesky factor of K_SS), so only d and s × s
    matrices are kept. While n·s ≤ :data:`~kernel_lab.core.nystrom.common.RPC_STORED_MAX`
    a round proposes one pivot, drawn ∝ d: the exact sequential law of Chen et al. Above,
    the accelerated form of Epperly, Tropp & Webber proposes b points i.i.d. ∝ d (the
    earliest arrivals of per-row Poisson processes of rate d, repeats possible) and goes
    through them in order, accepting each with probability (its residual now) / d, which
    keeps the sequential law exactly — the candidates' residual matrix is updated by a
    Schur complement after each acceptance; each round costs n |S| kernel evaluations (a
    few rounds: a few n s in all, reported as evaluated). When the residual is exhausted
    the rest is drawn uniformly. ``scores`` are the first pivot's selection probabilities
    times s; ``order`` the pivots as accepted, ``marks`` when each was final.

    Parameters
    ----------
    accelerated : bool or None
        Force one form (True: proposals in blocks; False: one at a time); None chooses
        by n·s.
    """

    name = "rp-cholesky"
    title = "RP-Cholesky"

    def __init__(self, accelerated: bool | None = None) -> None:
        self.accelerated = accelerated

    def sample(self, X: np.ndarray, kernel: Kernel, s: int | None,
               random_state: Any = None) -> Sample:
        check_rows(X, s)
        one = None if self.accelerated is None else not self.accelerated
        got = landmarks.rp_cholesky_landmarks(*one_part(X), kernel, s, key_seed(random_state),
                                              one_at_a_time=one)
        first = np.asarray(kernel.diag(X), dtype=np.float64)
        return _sample(got, first / first.sum() * s)


SAMPLERS: dict[str, type[Sampler]] = {
    cls.name: cls for cls in (UniformSampler, ExactRLSSampler, RecursiveRLSSampler,
                              AcceleratedRLSSampler, RPCholeskySampler)
}


def make_sampler(name: str | Sampler, **params: Any) -> Sampler:
    """A sampler by name (see :data:`SAMPLERS`)."""
    if isinstance(name, Sampler):
        return name
    if name not in SAMPLERS:
        raise ParameterError(f"unknown sampler {name!r}; choose one of: {', '.join(SAMPLERS)}")
    return SAMPLERS[name](**params)
