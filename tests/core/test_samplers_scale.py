"""The samplers at scale: kernel rows in bounded blocks, never an n × s (let alone n × n)
matrix; accelerated RP-Cholesky draws its pivots with the law of the one-at-a-time form."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from kernel_lab.core import lapack, samplers
from kernel_lab.core.kernels import GaussianKernel, median_heuristic
from kernel_lab.core.samplers import (
    BLOCK_ENTRIES,
    RPC_STORED_MAX,
    CountingKernel,
    RecursiveRLSSampler,
    RPCholeskySampler,
    make_sampler,
    ridge_scores,
)


def _rpc_law(K: np.ndarray, s: int) -> dict[tuple[int, ...], float]:
    """The exact law of RP-Cholesky's set of s pivots, by enumerating every pivot order."""
    law: dict[tuple[int, ...], float] = {}

    def walk(R: np.ndarray, chosen: tuple[int, ...], prob: float) -> None:
        if len(chosen) == s:
            key = tuple(sorted(chosen))
            law[key] = law.get(key, 0.0) + prob
            return
        d = np.clip(np.diag(R), 0.0, None)
        d[list(chosen)] = 0.0
        for i in np.flatnonzero(d > 0):
            walk(R - np.outer(R[:, i], R[:, i]) / R[i, i], (*chosen, int(i)),
                 prob * d[i] / d.sum())

    walk(K.copy(), (), 1.0)
    return law


@pytest.mark.parametrize("accelerated", [False, True])
def test_rp_cholesky_both_forms_draw_the_exact_law(accelerated):
    """Five points, three pivots: the frequency of each pivot set over 3000 seeds against
    the law enumerated over all pivot orders (a chi-square with 9 degrees of freedom stays
    below 27.9, its 0.1 % quantile)."""
    X = np.random.default_rng(1).normal(size=(5, 2))
    kernel = GaussianKernel(1.0)
    law = _rpc_law(kernel(X), 3)
    draws = 3000
    counts: dict[tuple[int, ...], int] = {}
    for seed in range(draws):
        key = tuple(int(i) for i in RPCholeskySampler(accelerated=accelerated).sample(
            X, kernel, 3, np.random.default_rng(seed)).indices)
        counts[key] = counts.get(key, 0) + 1
    assert set(counts) <= set(law)
    chi2 = sum((counts.get(k, 0) - draws * p) ** 2 / (draws * p) for k, p in law.items())
    assert chi2 < 27.9, (chi2, counts, law)


def test_accelerated_rp_cholesky_is_chosen_by_size_and_exhausts_the_residual(monkeypatch):
    X = np.random.default_rng(0).normal(size=(150, 3))
    kernel = GaussianKernel(1.5)
    # every point: distinct pivots, all of them
    every = RPCholeskySampler(accelerated=True).sample(X, kernel, 150, np.random.default_rng(0))
    np.testing.assert_array_equal(every.indices, np.arange(150))
    # duplicates: 40 distinct points, each 5 times; the residual runs out at 40 pivots and
    # the rest are drawn uniformly, as in the one-at-a-time form
    dup = np.repeat(X[:40], 5, axis=0)
    smp = RPCholeskySampler(accelerated=True).sample(dup, kernel, 60, np.random.default_rng(2))
    assert np.unique(smp.indices).size == 60
    assert np.unique(dup[smp.indices], axis=0).shape[0] == 40
    # the form follows n·s unless forced
    n = RPC_STORED_MAX // 50 + 1
    calls = []
    real = samplers._rpc_rounds
    monkeypatch.setattr(samplers, "_rpc_rounds", lambda *a: calls.append(a[3]) or real(*a))
    Xn = np.random.default_rng(3).normal(size=(n, 2))
    RPCholeskySampler().sample(Xn, kernel, 50, np.random.default_rng(0))
    RPCholeskySampler().sample(Xn, kernel, 49, np.random.default_rng(0))
    assert calls == [50]


def test_accelerated_rp_cholesky_approximates_like_the_stored_form():
    """Same law, so on clusters the mean error of the two forms agrees (20 draws each)."""
    from kernel_lab.core.approx_error import residual_norm
    from kernel_lab.core.models.nystrom import nystrom_factor
    from kernel_lab.data.generators import generate

    X = generate("clusters", {"n": 1500, "p": 2, "k": 6, "imbalance": 3.0, "spread": 0.05},
                 seed=0).X_train
    kernel = GaussianKernel(0.5)
    K = kernel(X)

    def error(accelerated: bool, seed: int) -> float:
        idx = RPCholeskySampler(accelerated=accelerated).sample(
            X, kernel, 30, np.random.default_rng(seed)).indices
        F = kernel(X, X[idx]) @ nystrom_factor(kernel(X[idx]))
        return residual_norm(K, F, exact_max=500).value

    stored = np.mean([error(False, t) for t in range(20)])
    rounds = np.mean([error(True, t) for t in range(20)])
    assert 0.7 < rounds / stored < 1.4, (rounds, stored)


@pytest.mark.parametrize("coarse", [False, True])
def test_level_scores_in_blocks_equal_the_dense_formula(monkeypatch, coarse):
    """Lemma 6 scores of a level from blocks of kernel rows (the sample's own rows from
    K_SS) equal those of the dense n × |S| matrix, and count each entry once; from coarse
    entries (float32 exponentials) they lie within the bound that allows them, and that
    bound is not vacuous."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(700, 3))
    kernel = GaussianKernel(1.2)
    perm = rng.permutation(700)
    inv = np.empty(700, dtype=np.int64)
    inv[perm] = np.arange(700)
    pts = perm[:500]
    sample = np.sort(pts[rng.random(500) < 0.1])
    w = 1.0 / np.sqrt(rng.uniform(0.2, 1.0, size=sample.size))
    KS = kernel(X[pts], X[sample])
    dense = ridge_scores(kernel.diag(X[pts]), KS, KS[inv[sample]], w, 0.3)
    monkeypatch.setattr(samplers, "BLOCK_ENTRIES", 7 * sample.size)  # blocks of 7 rows
    monkeypatch.setattr(samplers, "COARSE_CHANGES", math.inf if coarse else 0.0)
    counter = CountingKernel(kernel)
    SKS = counter(X[sample])
    blocks = samplers._level_scores(X, pts, inv, sample, SKS, w, 0.3, counter)
    assert counter.evaluations == 500 * sample.size + 500
    if not coarse:
        np.testing.assert_allclose(blocks, dense, rtol=1e-10, atol=1e-13)
        return
    bound = samplers.coarse_score_error(kernel.coarse_error,
                                        samplers._ridge_factor(SKS, w, 0.3), w, 0.3)
    error = np.abs(blocks - dense).max()
    assert 0.0 < error <= bound, (error, bound)
    assert bound < 1e-3 * dense.mean()


_COARSE_LEVEL = samplers.coarse_level


def _draw(monkeypatch, X, kernel, s, seed, changes, lam=None):
    """Recursive RLS with ``COARSE_CHANGES = changes``: the sample and each level's
    decision whether to score from coarse entries."""
    decided: list[bool] = []

    def recorded(*args):
        decided.append(_COARSE_LEVEL(*args))
        return decided[-1]

    monkeypatch.setattr(samplers, "COARSE_CHANGES", changes)
    monkeypatch.setattr(samplers, "coarse_level", recorded)
    sampler = RecursiveRLSSampler(lam=lam)
    return sampler.sample(X, kernel, None if lam else s, np.random.default_rng(seed)), decided


@pytest.mark.parametrize("lam", [None, 30.0])
def test_coarse_scores_draw_the_landmarks_of_exact_ones(monkeypatch, lam):
    """Standardised 6-d data, median-heuristic σ: every level is scored from coarse
    entries (float32 exponentials), with a budget and with a fixed λ, and the landmarks
    of 8 seeds are those drawn from float64 entries; the scores agree to the bound."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(6000, 6))
    kernel = GaussianKernel(median_heuristic(X))
    allowance = samplers.COARSE_CHANGES
    for seed in range(8):
        coarse, decided = _draw(monkeypatch, X, kernel, 80, seed, allowance, lam)
        exact, none = _draw(monkeypatch, X, kernel, 80, seed, 0.0, lam)
        assert decided and all(decided) and not any(none)
        np.testing.assert_array_equal(coarse.indices, exact.indices)
        assert 0.0 < np.abs(coarse.scores - exact.scores).max() < 1e-6 * exact.scores.max()


def test_exact_entries_where_the_scores_would_amplify_their_error(monkeypatch):
    """A wide kernel on 1-D data: λ comes out tiny (a near-singular K), the bound on the
    scores' change exceeds the allowance at every level, and the sampler is exactly the
    float64 one."""
    X = np.random.default_rng(5).normal(size=(4000, 1))
    kernel = GaussianKernel(3.0)
    got, decided = _draw(monkeypatch, X, kernel, 40, 2, samplers.COARSE_CHANGES)
    exact, _ = _draw(monkeypatch, X, kernel, 40, 2, 0.0)
    assert decided and not any(decided)
    np.testing.assert_array_equal(got.scores, exact.scores)
    np.testing.assert_array_equal(got.indices, exact.indices)


@pytest.mark.parametrize("m", [0, 1, 5, 64, 65, 129, 410])
def test_lower_inverse_by_halves_equals_a_dense_solve(m):
    """L⁻¹ by halves (trtri's blocks) against numpy's general solve with the identity and
    against the identity itself, for sizes around the directly solved base."""
    rng = np.random.default_rng(m)
    G = rng.normal(size=(m, m + 3))
    L = np.linalg.cholesky(G @ G.T + m * np.eye(m)) if m else np.zeros((0, 0))
    inv = lapack.lower_inverse(L)
    assert inv.shape == (m, m)
    if m:
        np.testing.assert_allclose(inv, np.linalg.solve(L, np.eye(m)), rtol=0, atol=1e-14)
        np.testing.assert_allclose(inv @ L, np.eye(m), rtol=0, atol=1e-13)
        assert not np.triu(inv, 1).any()


@pytest.mark.parametrize("trmm", [True, False])
def test_ridge_scores_by_a_triangular_product_equal_a_dense_solve(monkeypatch, trmm):
    """``(K_ii − K_{i,S} A⁻¹ K_{S,i}) / λ`` with ``A = K_SS + λ diag(w⁻²)``: the triangular
    product with L⁻ᵀ (numpy's BLAS trmm, or the general product where it is missing) gives
    the scores of one dense solve with A, and leaves its inputs alone."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3))
    kernel = GaussianKernel(0.8)
    S = X[rng.choice(400, size=300, replace=False)]
    w = 1.0 / np.sqrt(rng.uniform(0.1, 1.0, size=300))
    lam = 0.05
    KS, SKS = kernel(X, S), kernel(S)
    A = SKS + lam * np.diag(1.0 / w**2)
    quad = np.einsum("ij,ji->i", KS, np.linalg.solve(A, KS.T))
    dense = np.maximum(0.0, 1.0 - quad) / lam
    if not trmm:
        monkeypatch.setattr(lapack, "_TRMM", None)
        monkeypatch.setattr(lapack, "_TRMM_LOOKED", True)
    else:
        lapack.times_lower_transposed(np.zeros((1, 1)), np.ones((1, 1)))  # looked up
        if lapack._TRMM is None:
            pytest.skip("numpy's BLAS has no cblas_dtrmm here (the fallback case runs)")
    before = KS.copy()
    np.testing.assert_allclose(ridge_scores(np.ones(400), KS, SKS, w, lam), dense,
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(KS, before)


@pytest.mark.parametrize("name", ["recursive-rls", "recursive-rls-fast", "rp-cholesky"])
def test_samplers_never_hold_an_n_by_s_matrix(name):
    """n = 100 000, s = 200: an n × s matrix is 160 MB; the sampler's peak allocation stays
    at its n-long vectors and a few kernel blocks."""
    n, s = 100_000, 200
    X = np.random.default_rng(0).uniform(size=(n, 5))
    kernel = GaussianKernel(0.8)
    tracemalloc.start()
    try:
        smp = make_sampler(name).sample(X, kernel, s, np.random.default_rng(1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert smp.indices.size == s and np.unique(smp.indices).size == s
    # traced (numpy reports to tracemalloc): at least an n-long vector, far below n × s
    assert 8 * n < peak < 12 * 8 * n + 6 * 8 * BLOCK_ENTRIES, peak / 2**20  # < 57 MiB
    assert smp.kernel_evaluations < 10 * n * s


def test_fixed_lambda_in_blocks_still_keeps_the_bound():
    """Algorithm 2 on 20 000 points (several blocks per level): the bound holds on a
    subset and the size follows d_eff."""
    from kernel_lab.core.approx_error import spectral_error
    from kernel_lab.core.models.nystrom import nystrom_factor

    X = np.random.default_rng(5).uniform(size=(20_000, 2))
    kernel = GaussianKernel(0.3)
    smp = RecursiveRLSSampler(lam=1.0).sample(X, kernel, None, np.random.default_rng(0))
    F = kernel(X, X[smp.indices]) @ nystrom_factor(kernel(X[smp.indices]))
    err = spectral_error(X, kernel, F, max_points=2000, rng=np.random.default_rng(1))
    assert err.value <= 1.0
    assert 10 < smp.indices.size < 2000
    assert math.isclose(smp.lam, 1.0)


def test_accelerated_rp_cholesky_ends_when_nothing_can_be_accepted():
    """A residual diagonal the candidates' own residuals never confirm (here a kernel whose
    matrix has zeros where its diagonal says 1): after RPC_EMPTY_ROUNDS empty blocks the
    residual counts as explained and the rest is drawn uniformly — no endless loop."""

    class Inconsistent(GaussianKernel):
        def __call__(self, X, Y=None, **kw):
            return np.zeros((np.atleast_2d(X).shape[0], np.atleast_2d(X if Y is None else Y)
                             .shape[0]))

    X = np.random.default_rng(0).normal(size=(300, 2))
    smp = RPCholeskySampler(accelerated=True).sample(X, Inconsistent(1.0), 12,
                                                     np.random.default_rng(0))
    assert np.unique(smp.indices).size == 12
