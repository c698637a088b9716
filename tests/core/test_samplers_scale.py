"""The samplers at scale: kernel rows in bounded blocks, never an n × s (let alone n × n)
matrix; RP-Cholesky draws its pivots one at a time with the exact law, whether it keeps
its factor (a few rows) or recomputes the residual each round."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from kernel_lab.core import lapack
from kernel_lab.core import nystrom as samplers
from kernel_lab.core.kernels import GaussianKernel, median_heuristic
from kernel_lab.core.nystrom import (
    BLOCK_ENTRIES,
    RPC_STORED_MAX,
    CountingKernel,
    RecursiveRLSSampler,
    RPCholeskySampler,
    landmarks,
    make_sampler,
    ridge_scores,
    scores,
)
from kernel_lab.core.rows.mapreduce import Rows


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


@pytest.mark.parametrize("stored", [True, False])
def test_rp_cholesky_both_one_at_a_time_forms_draw_the_exact_law(monkeypatch, stored):
    """Five points, three pivots, one proposal a round: with the factor kept (a few rows
    gathered) and with the residual recomputed from the pivots each round (no rows
    gathered), the frequency of each pivot set over 3000 seeds against the law enumerated
    over all pivot orders (a chi-square with 9 degrees of freedom stays below 27.9, its
    0.1 % quantile). (Proposals in blocks follow a nearby law: ``test_keyed_laws``.)"""
    if not stored:
        monkeypatch.setattr(landmarks, "GATHER_ROWS", 0)
    X = np.random.default_rng(1).normal(size=(5, 2))
    kernel = GaussianKernel(1.0)
    law = _rpc_law(kernel(X), 3)
    draws = 3000
    counts: dict[tuple[int, ...], int] = {}
    for seed in range(draws):
        key = tuple(int(i) for i in RPCholeskySampler().sample(X, kernel, 3, seed).indices)
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
    # the form follows n·s unless forced: one proposal a round up to RPC_STORED_MAX (the
    # factor kept on a few rows), proposals in blocks above
    n = RPC_STORED_MAX // 50 + 1
    proposals: list[int] = []
    stored: list[int] = []
    real, real_stored = landmarks.accept_pivots, landmarks._rpc_stored
    monkeypatch.setattr(landmarks, "accept_pivots",
                        lambda H, T, *a: proposals.append(T.size) or real(H, T, *a))
    monkeypatch.setattr(landmarks, "_rpc_stored",
                        lambda rows, k, s, *a: stored.append(s) or real_stored(rows, k, s, *a))
    Xn = np.random.default_rng(3).normal(size=(n, 2))
    RPCholeskySampler().sample(Xn, kernel, 50, 0)
    assert proposals[0] >= 50 and not stored
    proposals.clear()
    RPCholeskySampler().sample(Xn, kernel, 49, 0)
    assert set(proposals) == {1} and not stored  # more rows than GATHER_ROWS
    monkeypatch.setattr(landmarks, "GATHER_ROWS", n)
    proposals.clear()
    RPCholeskySampler().sample(Xn, kernel, 49, 0)
    assert stored == [49] and not proposals


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


@pytest.mark.parametrize("block", [landmarks.ROW_BLOCK, 64])
@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("precision", [samplers.FLOAT64, samplers.COARSE, samplers.SINGLE])
def test_level_scores_in_blocks_equal_the_dense_formula(monkeypatch, precision, level, block):
    """Lemma 6 scores of a level's rows from blocks of kernel rows (at most 7 rows each,
    inside canonical blocks of ``block`` rows) equal those of the dense n × |S| matrix,
    and count each entry once — for an inner level (about half the rows, by their keys)
    and the top one; from coarse entries (float32 exponentials), and from those with
    float32 products, they lie within the bound that allows each, and that bound is not
    vacuous."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(700, 3))
    kernel = GaussianKernel(1.2)
    index = np.arange(700)
    pts = index[landmarks._in_level(index, 5, level, 0)]
    assert (pts.size == 700) if level == 0 else (250 < pts.size < 450)
    sample = np.sort(pts[rng.random(pts.size) < 0.1])
    w = 1.0 / np.sqrt(rng.uniform(0.2, 1.0, size=sample.size))
    KS = kernel(X[pts], X[sample])
    dense = ridge_scores(kernel.diag(X[pts]), KS, kernel(X[sample]), w, 0.3)
    monkeypatch.setattr(landmarks, "BLOCK_ENTRIES", 7 * sample.size)  # blocks of 7 rows
    Linv = scores.ridge_factor(kernel(X[sample]), w, 0.3)
    step = landmarks.FixedLevelStep(kernel, X[sample], Linv, 0.3, 1.0, 5, level, 0,
                                    precision, None, block)
    _, got_index, blocks, evaluations = landmarks._level_raw(step, Rows(X, X[:, 0], index))
    np.testing.assert_array_equal(got_index, pts)
    assert evaluations == pts.size * sample.size + pts.size
    if precision == samplers.FLOAT64:
        np.testing.assert_allclose(blocks, dense, rtol=1e-10, atol=1e-13)
        return
    bound = samplers.coarse_score_error(kernel.coarse_error, Linv, w, 0.3,
                                        precision == samplers.SINGLE)
    error = np.abs(blocks - dense).max()
    assert 0.0 < error <= bound, (error, bound)
    if precision == samplers.COARSE:
        assert bound < 1e-3 * dense.mean()
    else:  # the products' rounding (about m u relative) on top of the entries'
        assert samplers.coarse_score_error(kernel.coarse_error, Linv, w, 0.3) < bound
        assert bound < 1e-2 * dense.mean()


def test_the_single_precision_bound_holds_where_it_is_tight():
    """A sample of 400 landmarks of a wide kernel (entries near 1, an L⁻¹ of mixed signs):
    the scores from float32 entries and products against float64 ones stay within the
    bound. The bound is the worst case (m roundings adding up in every entry, each entry
    at its largest): here about 5000 times the error seen, less than 10⁴."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(3000, 4))
    kernel = GaussianKernel(3.0)
    S = X[:400]
    w = np.ones(400)
    lam = 0.5
    SKS = kernel(S)
    Linv = scores.ridge_factor(SKS, w, lam)
    counter = CountingKernel(kernel)
    exact = samplers.level_scores(counter, X, S, Linv, lam, samplers.FLOAT64)
    single = samplers.level_scores(counter, X, S, Linv, lam, samplers.SINGLE)
    bound = samplers.coarse_score_error(kernel.coarse_error, Linv, w, lam, single=True)
    error = np.abs(single - exact).max()
    assert 0.0 < error <= bound
    assert bound < 1e4 * error


_SCORE_PRECISION = samplers.score_precision


def _draw(monkeypatch, X, kernel, s, seed, changes, lam=None, accelerated=False):
    """Recursive RLS with ``COARSE_CHANGES = changes``: the sample and each level's
    precision."""
    decided: list[str] = []

    def recorded(*args):
        decided.append(_SCORE_PRECISION(*args))
        return decided[-1]

    monkeypatch.setattr(scores, "COARSE_CHANGES", changes)
    monkeypatch.setattr(landmarks, "score_precision", recorded)
    sampler = RecursiveRLSSampler(lam=lam, accelerated=accelerated)
    return sampler.sample(X, kernel, None if lam else s, seed), decided


@pytest.mark.parametrize(("lam", "accelerated"), [(None, False), (30.0, False), (None, True)])
def test_coarse_scores_draw_the_landmarks_of_exact_ones(monkeypatch, lam, accelerated):
    """Standardised 6-d data, median-heuristic σ: every level is scored from coarse
    entries (float32 exponentials), most with float32 products too, with a budget and with
    a fixed λ (in the accelerated variant, most levels); the landmarks of 8 seeds are those
    drawn from float64 entries, and the scores agree closely."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(6000, 6))
    kernel = GaussianKernel(median_heuristic(X))
    allowance = samplers.COARSE_CHANGES
    used = set()
    for seed in range(8):
        coarse, decided = _draw(monkeypatch, X, kernel, 80, seed, allowance, lam, accelerated)
        exact, none = _draw(monkeypatch, X, kernel, 80, seed, 0.0, lam, accelerated)
        # (the accelerated variant's λ from a few landmarks can come out tiny at a
        # level, which is then scored in float64)
        assert decided and (accelerated or samplers.FLOAT64 not in decided)
        assert set(none) == {samplers.FLOAT64}
        used.update(decided)
        np.testing.assert_array_equal(coarse.indices, exact.indices)
        diff = np.abs(coarse.scores - exact.scores).max()
        assert diff < 1e-5 * exact.scores.max()
        assert accelerated or diff > 0.0  # (its top λ can be so small that all scores are 1)
    assert samplers.SINGLE in used


def test_exact_entries_where_the_scores_would_amplify_their_error(monkeypatch):
    """A wide kernel on 1-D data: λ comes out tiny (a near-singular K), the bound on the
    scores' change exceeds the allowance at every level, and the sampler is exactly the
    float64 one."""
    X = np.random.default_rng(5).normal(size=(4000, 1))
    kernel = GaussianKernel(3.0)
    got, decided = _draw(monkeypatch, X, kernel, 40, 2, samplers.COARSE_CHANGES)
    exact, _ = _draw(monkeypatch, X, kernel, 40, 2, 0.0)
    assert decided and set(decided) == {samplers.FLOAT64}
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
        monkeypatch.setattr(lapack, "_TRMM", {np.dtype(np.float64): None,
                                              np.dtype(np.float32): None})
    else:
        lapack.times_lower_transposed(np.zeros((1, 1)), np.ones((1, 1)))  # looked up
        if lapack._TRMM[np.dtype(np.float64)] is None:
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
