"""Ridge leverage scores of Nyström landmark sampling (Musco & Musco): the λ of a budget,
the ridge factor of a weighted sample and Lemma 6's scores of any rows from it, the
precision a level is scored in, Algorithm 2's oversampling bound and the exact scores of
the n × n kernel matrix. Shared by the samplers in memory and on partitioned rows."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.executor import one_blas_thread
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.lapack import lower_inverse, times_lower_transposed
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.nystrom.common import CountingKernel

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

#: The unit roundoff of float32.
_U32 = 2.0**-24


def check_fixed_lam(lam: Any) -> float:
    """A fixed ridge λ: positive and finite, else a ParameterError saying so."""
    if (isinstance(lam, bool) or not isinstance(lam, numbers.Real)
            or not (math.isfinite(lam) and lam > 0)):
        raise ParameterError(f"the ridge λ of recursive RLS sampling (Algorithm 2) must be "
                             f"positive and finite, got {lam!r}; e.g. 1e-2 (the "
                             f"approximation then meets ‖K − K̃‖₂ ≲ λ)")
    return float(lam)


def check_delta(delta: Any) -> float:
    """Algorithm 2's failure probability δ: strictly between 0 and 1, else a ParameterError
    saying so."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) \
            or not 0.0 < delta < 1.0:
        raise ParameterError(f"the failure probability δ of recursive RLS sampling must "
                             f"lie strictly between 0 and 1, got {delta!r}; e.g. 0.1")
    return float(delta)


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
    return scores_of_rows(Kii, KS, ridge_factor(SKS, w, lam), lam)


def scores_of_rows(Kii: np.ndarray, KS: np.ndarray, Linv: np.ndarray, lam: float,
                    overwrite: bool = False) -> np.ndarray:
    """The scores of :func:`ridge_scores` for a block of rows, given ``L⁻¹`` of the
    ridge-shifted sample matrix (:func:`ridge_factor`). ``K_{i,S} L⁻ᵀ`` is one triangular
    product (BLAS trmm in numpy's OpenBLAS: half a general product's work; measured on
    50,000 × 347 rows, 77 ms against 120 ms for ``@``, and 143 ms for the products of
    column panels that skipped the zero triangle before). With ``overwrite`` it is written
    over KS (a scratch block)."""
    B = times_lower_transposed(KS, Linv, overwrite=overwrite)
    quad = np.einsum("ij,ij->i", B, B)
    return np.maximum(0.0, Kii - quad) / lam


def ridge_factor(SKS: np.ndarray, w: np.ndarray, lam: float) -> np.ndarray:
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
    return scores_of_rows(counter.diag(Xb), KS, factor, lam, overwrite=True)


def fixed_lambda_oversampling_bound(rows: int, lam: float, delta: float) -> float:
    """An upper bound, known before scoring, on Algorithm 2's oversampling
    ``max(1, log(Σ l̃ / δ))`` of a level: each score is at most ``k(x, x) / λ ≤ 1 / λ``
    for the kernels that have coarse entries."""
    return max(1.0, math.log(max(rows / (lam * delta), 1.0)))


#: Bytes the exact leverage scores of n points take per entry of the n × n kernel matrix:
#: the matrix, its eigenvectors and LAPACK's work space.
EXACT_BYTES_PER_ENTRY = 3 * 8.0


def check_exact_memory(n: int, fix: str) -> None:
    """Refuse (MemoryBudgetError, saying ``fix``) exact leverage scores on n points whose
    n × n work does not fit the memory budget."""
    check_allocation(EXACT_BYTES_PER_ENTRY * n * n, f"exact leverage scores on {n} points",
                     fix)


def exact_ridge_scores(K: np.ndarray, lam: float) -> np.ndarray:
    """The exact ridge leverage scores ``l_i = (K (K + λI)⁻¹)_ii`` of a kernel matrix K, from
    one eigendecomposition (eigenvalues clipped at 0)."""
    e, U = np.linalg.eigh(K)
    return (U**2) @ (np.clip(e, 0.0, None) / (np.clip(e, 0.0, None) + lam))
