"""Nyström landmark samplers behind one interface.

``sampler.sample(X, kernel, s, rng)`` returns a :class:`Sample`: ``s`` distinct landmark
indices, per-point scores where the method has them (for display), and the number of
kernel entries evaluated. The scalable samplers (uniform, recursive RLS and its
accelerated variant, randomly pivoted Cholesky) evaluate O(n s) entries (RP-Cholesky on
large data a few times that, see :class:`RPCholeskySampler`) in row blocks of at most
:data:`BLOCK_ENTRIES` kernel entries, and never hold more than O(n + s²) beyond them (RP-
Cholesky on small data keeps its n × s factor); the exact ridge-leverage-score sampler forms
the n×n matrix and is a reference for small n.
Recursive RLS at a fixed λ (``RecursiveRLSSampler(lam=λ)``, Algorithm 2) is called with
``s=None`` and returns as many landmarks as d_eff(λ) calls for.

References
----------
C. Musco and C. Musco, "Recursive sampling for the Nyström method", NIPS 2017
(Algorithms 2 and 3; accelerated variant of Section 5.2.1).
Y. Chen, E. Epperly, J. Tropp, R. Webber, "Randomly pivoted Cholesky", 2022.
E. Epperly, J. Tropp, R. Webber, "Embrace rejection: kernel matrix approximation by
accelerated randomly pivoted Cholesky", 2024 (the same law, pivots proposed in blocks).
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.executor import one_blas_thread
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.lapack import lower_inverse, times_lower_transposed
from kernel_lab.core.memory import check_allocation

#: Algorithm 2 (fixed λ) halves n until a level has at most this many points, all of which
#: are its landmarks (the paper's base case, without the constants of its proof).
FIXED_LAMBDA_BASE = 64

#: Kernel entries of one row block (8 MiB of float64) that the scalable samplers evaluate at
#: a time: the rows of n × |S| kernel matrices are streamed, never held whole.
BLOCK_ENTRIES = 2**20

#: RP-Cholesky keeps its n × s factor and pivots one point at a time (Chen et al.,
#: Algorithm 1) while that factor fits in one block (n·s ≤ this); above, it proposes pivots
#: in blocks and accepts them by rejection (Epperly, Tropp & Webber: the same law of the
#: pivots), keeping only the residual diagonal, recomputed over row blocks after each block.
RPC_STORED_MAX = BLOCK_ENTRIES

#: Budget mode of recursive RLS: a level below the top keeps at most
#: ``max(s_rec, ceil(LEVEL_CAP · q · s_rec))`` points (q = log s_rec, its oversampling), thinned
#: uniformly (inclusion probabilities scaled alike). Kernel Lab's own: in neither Musco &
#: Musco's paper nor their reference code. It acts when the λ of a small level size comes out
#: too small (s_rec = 3 takes λ from k = 1 eigenvalue); see :class:`RecursiveRLSSampler`.
LEVEL_CAP = 2.0

#: Recursive RLS scores a level's rows from coarse kernel entries (float32 exponentials,
#: :attr:`~kernel_lab.core.kernels.Kernel.coarse_error`) when that provably changes little:
#: each row's score then moves by at most E (:func:`coarse_score_error`), and coarse
#: entries are used only if ``q · rows · E`` — a bound on the expected number of the
#: level's keep decisions (``u_i < q l̃_i``) that differ from those of exact entries, and at
#: the top level on the total change of the scores the s landmarks are drawn by — is at
#: most this. Where the bound holds even with the product ``L⁻¹ k`` and its squared norm in
#: float32 too, they are (:data:`SINGLE`: BLAS ``strmm``, 2.5 times the speed of ``dtrmm``).
#: Otherwise (a λ so small that the scores amplify rounding, e.g. a wide kernel on
#: one-dimensional data) the level is scored with float64 entries.
COARSE_CHANGES = 0.05

#: The precisions of a level's scores (:func:`score_precision`): float64 entries and
#: products; coarse entries (float32 exponentials) and float64 products; coarse entries
#: and float32 products.
FLOAT64, COARSE, SINGLE = "float64", "coarse", "single"

#: The top level of recursive RLS reads the rows between the sample's in place when they
#: run this long on average; shorter runs (a large sample among few rows: 500 of 50,000)
#: made blocks too small to pay, and are gathered.
RUN_ROWS = 2048

#: The unit roundoff of float32.
_U32 = 2.0**-24

#: At most this many pivots are proposed in one block of accelerated RP-Cholesky.
RPC_MAX_PROPOSALS = 1024

#: After this many blocks in a row without an accepted pivot (only rounding left in the
#: residual), accelerated RP-Cholesky takes the residual as explained.
RPC_EMPTY_ROUNDS = 32


class CountingKernel:
    """Wraps a kernel and counts the entries it evaluates (matrix entries and diagonals)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.evaluations = 0

    def __call__(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        K = self.kernel(X, Y)
        self.evaluations += K.size
        return K

    def diag(self, X: np.ndarray) -> np.ndarray:
        d = self.kernel.diag(X)
        self.evaluations += d.size
        return d

    def block(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray | None = None, *,
              coarse: bool = False) -> np.ndarray:
        """One block of rows without a memory check (:meth:`Kernel.block`)."""
        K = self.kernel.block(X, Y, out, coarse=coarse)
        self.evaluations += K.size
        return K


@dataclass(frozen=True)
class Sample:
    """Landmarks chosen by a sampler.

    Attributes
    ----------
    indices : ndarray of int, shape (s,)
        Distinct row indices of X.
    scores : ndarray, shape (n,) or None
        Per-point sampling scores (approximate or exact ridge leverage scores, or
        selection probabilities), for display.
    kernel_evaluations : int
    lam : float or None
        The ridge λ the scores refer to (leverage-score samplers).
    order : ndarray of int or None
        For samplers whose draws nest (uniform, RP-Cholesky): the indices in the order
        drawn, each prefix of which is a draw of the sampler at that size.
    marks : ndarray, shape (s, 2), or None
        RP-Cholesky: for each k, the seconds from the start of :meth:`Sampler.sample` and
        the kernel entries evaluated when the first k + 1 pivots of ``order`` were final.
    """

    indices: np.ndarray
    scores: np.ndarray | None
    kernel_evaluations: int
    lam: float | None = None
    order: np.ndarray | None = None
    marks: np.ndarray | None = None


def _check(X: np.ndarray, s: int) -> int:
    return check_budget(X.shape[0], s)


def check_budget(n: int, s: int, what: str = "points") -> int:
    """n, after checking that s is a whole number of landmarks from 1 to n (else a
    ParameterError naming ``what`` the n are)."""
    if isinstance(s, bool) or int(s) != s or s < 1:
        raise ParameterError(f"the number of landmarks s must be a positive integer, got {s!r}")
    if s > n:
        raise ParameterError(f"cannot choose s = {s} landmarks from n = {n} {what}; "
                             f"use s ≤ {n}")
    return n


def _distinct_by_weight(weights: np.ndarray, s: int, rng: np.random.Generator) -> np.ndarray:
    """s distinct indices drawn with probabilities proportional to ``weights`` (without
    replacement); if fewer than s weights are positive, the rest are drawn uniformly."""
    w = np.clip(np.nan_to_num(weights, nan=0.0), 0.0, None)
    positive = np.flatnonzero(w > 0)
    take = min(s, positive.size)
    chosen = (rng.choice(positive, size=take, replace=False, p=w[positive] / w[positive].sum())
              if take else np.zeros(0, dtype=int))
    if take < s:
        rest = np.setdiff1d(np.arange(w.size), chosen)
        chosen = np.concatenate([chosen, rng.choice(rest, size=s - take, replace=False)])
    return np.sort(chosen.astype(np.int64))


def _in_order(pts: np.ndarray, scores: np.ndarray) -> np.ndarray:
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


def check_fixed_lam(lam: Any) -> float:
    """A fixed ridge λ: positive and finite, else a ParameterError saying so."""
    if (isinstance(lam, bool) or not isinstance(lam, numbers.Real)
            or not (math.isfinite(lam) and lam > 0)):
        raise ParameterError(f"the ridge λ of recursive RLS sampling (Algorithm 2) must be "
                             f"positive and finite, got {lam!r}; e.g. 1e-2 (the "
                             f"approximation then meets ‖K − K̃‖₂ ≲ λ)")
    return float(lam)


def lambda_for_budget(SKS: np.ndarray, w: np.ndarray, s: int) -> float:
    """The ridge λ of Musco & Musco's reference code, chosen so that about s samples come out:
    ``(Σ_i SKS_ii w_i² − sum of the k largest eigenvalues of diag(w) SKS diag(w)) / k`` with
    ``k = ceil(s / (4 log s))``; a tiny positive value when there are at most k landmarks."""
    m = SKS.shape[0]
    k = max(1, math.ceil(s / (4.0 * math.log(max(s, 2)))))
    if m <= k:
        return 1e-6
    M = (w[:, None] * SKS) * w[None, :]
    with one_blas_thread():  # small: a second thread costs more than it saves
        top = np.linalg.eigvalsh(M)[m - k:]  # numpy's LAPACK, like the products around it
    lam = (float(np.trace(M)) - float(top.sum())) / k
    return max(lam, 1e-6)


def ridge_scores(Kii: np.ndarray, KS: np.ndarray, SKS: np.ndarray, w: np.ndarray,
                 lam: float) -> np.ndarray:
    """Lemma 6: ``(K_ii − K_{i,S} (K_{S,S} + λ diag(w⁻²))⁻¹ K_{S,i}) / λ`` for every row i,
    by a Cholesky solve (jittered if needed) — never an explicit inverse."""
    return _scores_of_rows(Kii, KS, _ridge_factor(SKS, w, lam), lam)


def _scores_of_rows(Kii: np.ndarray, KS: np.ndarray, Linv: np.ndarray, lam: float,
                    overwrite: bool = False) -> np.ndarray:
    """The scores of :func:`ridge_scores` for a block of rows, given ``L⁻¹`` of the
    ridge-shifted sample matrix (:func:`_ridge_factor`). ``K_{i,S} L⁻ᵀ`` is one triangular
    product (BLAS trmm in numpy's OpenBLAS: half a general product's work; measured on
    50,000 × 347 rows, 77 ms against 120 ms for ``@``, and 143 ms for the products of
    column panels that skipped the zero triangle before). With ``overwrite`` it is written
    over KS (a scratch block)."""
    B = times_lower_transposed(KS, Linv, overwrite=overwrite)
    quad = np.einsum("ij,ij->i", B, B)
    return np.maximum(0.0, Kii - quad) / lam


def _ridge_factor(SKS: np.ndarray, w: np.ndarray, lam: float) -> np.ndarray:
    """``L⁻¹`` for the Cholesky factor L of ``K_{S,S} + λ diag(w⁻²)`` (jittered if needed);
    the scores of any rows are then ``(K_ii − ‖L⁻¹ K_{S,i}‖²) / λ``."""
    A = SKS + lam * np.diag(1.0 / w**2)
    with one_blas_thread():  # small: a second thread costs more than it saves
        try:
            L = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:  # numerically indefinite: a small jitter
            L = np.linalg.cholesky(A + 1e-10 * np.trace(A) / A.shape[0] * np.eye(A.shape[0]))
    # K_{i,S} A⁻¹ K_{S,i} = ‖L⁻¹ K_{S,i}‖². L⁻¹ is formed from the small triangular factor
    # (A carries the ridge λ diag(w⁻²), so L is well conditioned) and applied to all rows
    # with a few matrix products in numpy's BLAS, the library the kernel blocks use.
    # Nothing here calls scipy: its wheel bundles a second OpenBLAS whose threads keep
    # spinning after a call, and the large product right after it then ran at half speed
    # (forming L⁻¹ with scipy's solve_triangular made the whole sampler 1.3–1.4× slower).
    return lower_inverse(L)


def coarse_score_error(entry_error: float, Linv: np.ndarray, w: np.ndarray, lam: float,
                       single: bool = False) -> float:
    """How far one row's Lemma 6 score ``(k(x, x) − ‖L⁻¹k‖²) / λ`` can move when each of
    the m entries of its kernel row k against the sample is off by at most ``entry_error``
    ε, for a kernel with ``0 ≤ k ≤ 1``: as ``‖L⁻¹k‖² ≤ k(x, x) ≤ 1``, the quadratic form
    moves by at most ``2d + d²`` with d a bound on ``‖L⁻¹δ‖`` (δ the entries' errors): the
    lesser of ``ε √m ‖L⁻¹‖₂`` and ``ε ‖ |L⁻¹| 𝟙 ‖₂`` (as ``|δ| ≤ ε𝟙``). ‖L⁻¹‖₂ is bounded by
    the least of ``max w / √λ`` (the ridge ``λ diag(w⁻²)`` bounds the shifted matrix's
    eigenvalues below), the Frobenius norm of L⁻¹ and ``√(‖L⁻¹‖₁ ‖L⁻¹‖_∞)``.

    ``single``: the product ``L⁻¹k`` and its squared norm in float32 as well, from float32
    entries and L⁻¹ rounded to float32 (unit roundoff u = 2⁻²⁴). Any order of the m
    multiply-adds of an entry of ``L̂ k`` errs by at most ``γ_m (|L̂| |k|)`` with
    ``γ_m = m u / (1 − m u)`` and ``|L̂| ≤ (1 + u)|L⁻¹|``, and rounding L⁻¹ adds
    ``u |L⁻¹| |k|``; with ``|k| ≤ 𝟙``, d grows by ``(u + γ_m (1 + u)) ‖ |L⁻¹| 𝟙 ‖₂`` and by
    ``m √m 2⁻¹⁴⁹`` for underflow, and the float32 sum of squares adds ``γ_{m+1} (1 + d)²``."""
    m = Linv.shape[0]
    A = np.abs(Linv)
    rows = float(np.linalg.norm(A.sum(axis=1)))  # ‖ |L⁻¹| 𝟙 ‖₂
    spectral = min(float(w.max()) / math.sqrt(lam), float(np.sqrt(np.sum(A * A))),
                   math.sqrt(float(A.sum(axis=0).max()) * float(A.sum(axis=1).max())))
    d = entry_error * min(math.sqrt(m) * spectral, rows)
    if single:
        if (m + 1) * _U32 >= 0.5 or not rows < 1e30:
            return math.inf  # beyond float32's range or the bound's
        gamma = m * _U32 / (1.0 - m * _U32)
        d += (_U32 + gamma * (1.0 + _U32)) * rows + m * math.sqrt(m) * 2.0**-149
        squares = (m + 1) * _U32 / (1.0 - (m + 1) * _U32) * (1.0 + d) ** 2
        return (2.0 * d + d * d + squares) / lam
    return (2.0 * d + d * d) / lam


def score_precision(kernel: Kernel, Linv: np.ndarray, w: np.ndarray, lam: float, rows: int,
                    q: float) -> str:
    """The precision a level of ``rows`` rows, oversampled by q, is scored in
    (:data:`SINGLE`, :data:`COARSE` or :data:`FLOAT64`; see :data:`COARSE_CHANGES`)."""
    entry_error = kernel.coarse_error
    if entry_error is None or Linv.shape[0] == 0:
        return FLOAT64
    for precision in (SINGLE, COARSE):
        error = coarse_score_error(entry_error, Linv, w, lam, precision == SINGLE)
        if q * rows * error <= COARSE_CHANGES:
            return precision
    return FLOAT64


def level_scores(counter: CountingKernel, Xb: np.ndarray, XS: np.ndarray,
                 Linv: np.ndarray, lam: float, precision: str,
                 buffer: np.ndarray | None = None, Linv32: np.ndarray | None = None
                 ) -> np.ndarray:
    """Lemma 6 scores of the rows Xb against the sample XS in ``precision``
    (:func:`score_precision`): their kernel block (into ``buffer`` if given: float32 for
    :data:`SINGLE`, else float64) and the triangular product with L⁻¹ (``Linv32``, L⁻¹
    rounded to float32, for :data:`SINGLE`)."""
    single = precision == SINGLE
    if single and buffer is None:
        buffer = np.empty((Xb.shape[0], XS.shape[0]), dtype=np.float32)
    KS = counter.block(Xb, XS, buffer, coarse=precision != FLOAT64)
    factor = (Linv.astype(np.float32) if Linv32 is None else Linv32) if single else Linv
    return _scores_of_rows(counter.diag(Xb), KS, factor, lam, overwrite=True)


def fixed_lambda_oversampling_bound(rows: int, lam: float, delta: float) -> float:
    """An upper bound, known before scoring, on Algorithm 2's oversampling
    ``max(1, log(Σ l̃ / δ))`` of a level: each score is at most ``k(x, x) / λ ≤ 1 / λ``
    for the kernels that have coarse entries."""
    return max(1.0, math.log(max(rows / (lam * delta), 1.0)))


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
    Linv = _ridge_factor(SKS, w, lam)
    precision = score_precision(counter.kernel, Linv, w, lam, pts.size, q)
    # rows gathered with np.take: numpy's fancy indexing of rows costs 2.5-4 times as much
    # (8000 of 750,000 rows of 20 columns: 0.55 against 0.13 ms)
    XS = np.take(X, sample, axis=0)
    raw = np.empty(pts.size)
    raw[inv[sample]] = _scores_of_rows(counter.diag(XS), SKS, Linv, lam)
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


class Sampler:
    """Base class; subclasses implement :meth:`sample`."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    scalable: ClassVar[bool] = True

    def sample(self, X: np.ndarray, kernel: Kernel, s: int, rng: np.random.Generator) -> Sample:
        raise NotImplementedError


class UniformSampler(Sampler):
    """s distinct points uniformly at random (no kernel evaluations)."""

    name = "uniform"
    title = "uniform"

    def sample(self, X: np.ndarray, kernel: Kernel, s: int, rng: np.random.Generator) -> Sample:
        n = _check(X, s)
        order = rng.choice(n, size=s, replace=False)  # in random order: prefixes nest
        return Sample(np.sort(order), None, 0, order=order)


class ExactRLSSampler(Sampler):
    """Exact ridge leverage scores ``l_i = (K (K + λI)⁻¹)_ii`` from one eigendecomposition of
    the n×n kernel matrix (reference for small n); s distinct points ∝ scores.

    Parameters
    ----------
    lam : float or None
        Ridge λ; None chooses it with :func:`lambda_for_budget` on the whole K.
    """

    name = "exact-rls"
    title = "exact RLS"
    scalable = False

    def __init__(self, lam: float | None = None) -> None:
        self.lam = lam

    def sample(self, X: np.ndarray, kernel: Kernel, s: int, rng: np.random.Generator) -> Sample:
        n = _check(X, s)
        check_allocation(3 * 8.0 * n * n, f"exact leverage scores on {n} points",
                         "Use the recursive RLS sampler, which needs O(n s) memory.")
        counter = CountingKernel(kernel)
        K = counter(X)
        lam = lambda_for_budget(K, np.ones(n), s) if self.lam is None else float(self.lam)
        e, U = np.linalg.eigh(K)
        scores = (U**2) @ (np.clip(e, 0.0, None) / (np.clip(e, 0.0, None) + lam))
        return Sample(_distinct_by_weight(scores, s, rng), scores, counter.evaluations, lam)


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
                keep[_distinct_by_weight(scores, 1, rng)] = True
            return Sample(np.sort(pts[keep]), _in_order(pts, scores), counter.evaluations,
                          lam)
        n = _check(X, s)
        if s == n:
            return Sample(np.arange(n), np.ones(n), 0)
        s_rec = accelerated_level_size(n, s) if self.accelerated else s
        s_rec = max(1, min(s_rec, s))
        levels = math.ceil(math.log2(n / s_rec))  # ≥ 1 since s_rec ≤ s < n
        pts, scores, lam = self._top_scores(X, counter, rng, levels, s_rec)
        chosen = _distinct_by_weight(scores, s, rng)
        return Sample(np.sort(pts[chosen]), _in_order(pts, scores), counter.evaluations, lam)

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


class RPCholeskySampler(Sampler):
    """Randomly pivoted Cholesky: pivot i with probability ∝ the residual diagonal, then
    update the residual by the new Cholesky column (one kernel column per landmark).

    While n·s ≤ :data:`RPC_STORED_MAX` the n × s factor is kept and pivots are drawn one at
    a time. Above, the accelerated form of Epperly, Tropp & Webber draws pivots with the
    same law in bounded memory: each round proposes b points i.i.d. ∝ the residual diagonal
    d at its start and goes through them in order, accepting each with probability (its
    residual now) / d — the candidates' residual matrix is updated by a Schur complement
    after each acceptance, and residuals only fall, so every accepted pivot is distributed
    ∝ the current residual, as one drawn alone. After a round d is recomputed over row
    blocks as ``k(x, x) − ‖K(x, S) L⁻ᵀ‖²`` (L the Cholesky factor of K_SS), so only d and
    s × s matrices are kept; each round costs n |S| kernel evaluations (a few rounds: a
    few n s in all, reported as evaluated). The two forms draw different pivots from one
    seed; the check that the residual is exhausted (the rest then drawn uniformly) is made
    per pivot in the first, per round in the second.

    Parameters
    ----------
    accelerated : bool or None
        Force one form; None chooses by n·s.
    """

    name = "rp-cholesky"
    title = "RP-Cholesky"

    def __init__(self, accelerated: bool | None = None) -> None:
        self.accelerated = accelerated

    def sample(self, X: np.ndarray, kernel: Kernel, s: int, rng: np.random.Generator) -> Sample:
        t0 = time.perf_counter()
        n = _check(X, s)
        counter = CountingKernel(kernel)
        first = counter.diag(X).astype(np.float64)
        accelerated = n * s > RPC_STORED_MAX if self.accelerated is None else self.accelerated
        marks: list[tuple[float, int]] = []
        chosen = (_rpc_rounds if accelerated else _rpc_stored)(X, counter, first, s, rng,
                                                               marks)
        order = np.asarray(chosen, dtype=np.int64)
        at = np.array([(t - t0, e) for t, e in marks], dtype=float).reshape(-1, 2)
        return Sample(np.sort(order), first / first.sum() * s, counter.evaluations,
                      order=order, marks=at)


def _mark(marks: list[tuple[float, int]] | None, counter: CountingKernel, k: int) -> None:
    """Note that k more pivots are final now (time and kernel entries so far)."""
    if marks is not None:
        marks.extend([(time.perf_counter(), counter.evaluations)] * k)


def _rpc_stored(X: np.ndarray, counter: CountingKernel, first: np.ndarray, s: int,
                rng: np.random.Generator, marks: list[tuple[float, int]] | None = None
                ) -> list[int]:
    """RP-Cholesky one pivot at a time on the stored n × s factor (Chen et al., Alg. 1)."""
    n = X.shape[0]
    d = first
    F = np.zeros((n, s))
    chosen: list[int] = []
    for i in range(s):
        total = d.sum()
        if total <= 1e-12 * first.sum():  # the rest is (numerically) explained
            rest = np.setdiff1d(np.arange(n), chosen)
            chosen += list(rng.choice(rest, size=s - i, replace=False))
            _mark(marks, counter, s - i)
            break
        piv = int(rng.choice(n, p=d / total))
        col = counter(X, X[piv: piv + 1])[:, 0]
        g = col - F[:, :i] @ F[piv, :i]
        F[:, i] = g / math.sqrt(max(g[piv], 1e-300))
        d = np.clip(d - F[:, i] ** 2, 0.0, None)
        d[piv] = 0.0
        chosen.append(piv)
        _mark(marks, counter, 1)
    return chosen


def _rpc_rounds(X: np.ndarray, counter: CountingKernel, first: np.ndarray, s: int,
                rng: np.random.Generator, marks: list[tuple[float, int]] | None = None
                ) -> list[int]:
    """Accelerated RP-Cholesky (proposals in blocks, accepted by rejection) keeping only
    the residual diagonal and the s × s Cholesky factor of K_SS."""
    n = X.shape[0]
    d = first.copy()
    L = np.zeros((s, s))  # Cholesky factor of K_SS, pivots in the order accepted
    chosen: list[int] = []
    rate, empty = 1.0, 0
    while len(chosen) < s:
        k, need = len(chosen), s - len(chosen)
        total = float(d.sum())
        if total <= 1e-12 * float(first.sum()):  # the rest is (numerically) explained
            rest = np.setdiff1d(np.arange(n), chosen)
            chosen += [int(i) for i in rng.choice(rest, size=need, replace=False)]
            _mark(marks, counter, need)
            break
        b = min(RPC_MAX_PROPOSALS, max(need, math.ceil(1.25 * need / rate)))
        T = rng.choice(n, size=b, p=d / total)
        u = rng.random(b)
        H, FT = candidate_residual(counter, X[T], X[chosen], L[:k, :k])
        acc, cols, tried = accept_pivots(H, T, u, d[T], need)
        a = len(acc)
        rate = max(a / tried, 1.0 / 16.0)
        if not a:
            empty += 1
            if empty == RPC_EMPTY_ROUNDS:
                d[:] = 0.0
            continue
        empty = 0
        L[k:k + a, :k] = FT[acc]
        L[k:k + a, k:k + a] = cols[acc, :a]
        chosen += [int(T[j]) for j in acc]
        _mark(marks, counter, a)
        if len(chosen) < s:
            d = _rpc_residual(X, counter, first, chosen, L[:k + a, :k + a])
    return chosen


def candidate_residual(counter: CountingKernel, XT: np.ndarray, XS: np.ndarray,
                       L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The residual kernel matrix ``H = K_TT − F_T F_Tᵀ`` on proposed pivots T after the
    pivots S (``L`` the Cholesky factor of K_SS), and ``F_T = K_TS L⁻ᵀ``."""
    H = counter(XT)
    FT = np.zeros((XT.shape[0], 0))
    if XS.shape[0]:
        FT = times_lower_transposed(counter(XT, XS), lower_inverse(L), overwrite=True)
        H -= FT @ FT.T
    return H, FT


def accept_pivots(H: np.ndarray, T: np.ndarray, u: np.ndarray, d_T: np.ndarray, need: int
                  ) -> tuple[list[int], np.ndarray, int]:
    """The rejection step of accelerated RP-Cholesky on one block of proposals: going
    through the candidates ``T`` in order, accept candidate j when its current residual
    ``H_jj`` exceeds ``u_j · d_T[j]`` (``d_T`` the residual diagonal the proposals were drawn
    by), then update the candidates' residual ``H`` (b × b, changed in place) by a Schur
    complement. Returns the accepted positions, the new Cholesky columns on the candidates
    (b × need, column a for the a-th acceptance) and the candidates tried."""
    b = T.size
    cols = np.zeros((b, need))
    acc: list[int] = []
    taken: set[int] = set()
    tried = 0
    for j in range(b):
        if len(acc) == need:
            break
        tried += 1
        h = H[j, j]
        if int(T[j]) in taken or not h > u[j] * d_T[j]:
            continue
        col = H[j:, j] / math.sqrt(h)
        H[j:, j:] -= np.outer(col, col)
        cols[j:, len(acc)] = col
        acc.append(j)
        taken.add(int(T[j]))
    return acc, cols, tried


def residual_rows(counter: CountingKernel, X: np.ndarray, first: np.ndarray, XS: np.ndarray,
                  Linv: np.ndarray) -> np.ndarray:
    """``k(x, x) − ‖k(x, S) L⁻ᵀ‖²`` for the rows of X (``first`` their k(x, x); ``Linv``
    the lower-triangular L⁻¹), clipped at 0: RP-Cholesky's residual diagonal on one block
    of rows."""
    F = times_lower_transposed(counter(X, XS), Linv, overwrite=True)
    return np.clip(first - np.einsum("ij,ij->i", F, F), 0.0, None)


def _rpc_residual(X: np.ndarray, counter: CountingKernel, first: np.ndarray,
                  chosen: list[int], L: np.ndarray) -> np.ndarray:
    """The residual diagonal ``k(x, x) − ‖K(x, S) L⁻ᵀ‖²`` over row blocks of at most
    :data:`BLOCK_ENTRIES` kernel entries, clipped at 0 and 0 on the pivots."""
    n = X.shape[0]
    XS = X[chosen]
    Linv = lower_inverse(L)
    d = np.empty(n)
    rows = max(1, BLOCK_ENTRIES // len(chosen))
    for start in range(0, n, rows):
        d[start:start + rows] = residual_rows(counter, X[start:start + rows],
                                              first[start:start + rows], XS, Linv)
    d[chosen] = 0.0
    return d


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
