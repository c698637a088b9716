"""Recursive RLS at a fixed λ (Musco & Musco, Algorithm 2): the number of landmarks follows
the effective dimension, and the approximation meets ‖K − K̃‖₂ ≤ λ."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import GaussianKernel
from kernel_lab.core.nystrom import FIXED_LAMBDA_BASE, RecursiveRLSSampler, landmarks
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.data.generators import generate

DELTA = 0.1  # the sampler's default failure probability

#: λ values per data set, from d_eff ≈ 10 to a sample of about a third of the points.
LAMS = {"clusters": (10.0, 1.0, 0.1), "broad": (30.0, 10.0, 3.0)}


@pytest.fixture(scope="module")
def cases():
    """Data, kernel, K and its eigendecomposition (the brute-force reference): imbalanced
    clusters (uneven scores) and a broad Gaussian cloud (even scores)."""
    clusters = generate("clusters", {"n": 800, "p": 2, "k": 5, "imbalance": 3.0},
                        seed=0).X_train
    broad = np.random.default_rng(1).normal(size=(700, 5))
    out = {}
    for name, X, kernel in (("clusters", clusters, GaussianKernel(1.0)),
                            ("broad", broad, GaussianKernel(2.0))):
        K = kernel(X)
        e, U = np.linalg.eigh(K)
        out[name] = (X, kernel, K, np.clip(e, 0.0, None), U)
    return out


def _samples(X, kernel, lam, seeds=range(6)):
    return [RecursiveRLSSampler(lam=lam).sample(X, kernel, None, np.random.default_rng(seed))
            for seed in seeds]


def _nystrom(K, S):
    """K̃ = C W⁺ Cᵀ literally; the pseudo-inverse drops eigenvalues of W below 1e-10 of the
    largest (a projection onto fewer directions: K̃ only shrinks, the bound gets harder)."""
    C = K[:, S]
    return C @ np.linalg.pinv(K[np.ix_(S, S)], rcond=1e-10, hermitian=True) @ C.T


@pytest.mark.parametrize("name", ["clusters", "broad"])
def test_sample_size_tracks_the_effective_dimension(cases, name):
    """Lemma 11: ½ Σ p_i ≤ s ≤ 2 Σ p_i, and the p_i over-estimate the scores, so
    s ≥ d_eff / 2; Theorem 7: s ≤ 384 d_eff log(d_eff / δ). With the oversampling
    log(Σ l̃ / δ) (the paper's without its constant 16), s lies between d_eff and
    3 d_eff ln(d_eff / δ), and grows as λ falls."""
    X, kernel, _, e, _ = cases[name]
    medians = []
    for lam in LAMS[name]:
        d_eff = float(np.sum(e / (e + lam)))  # brute force from eigh
        sizes = np.array([smp.indices.size for smp in _samples(X, kernel, lam)])
        assert np.all(sizes >= d_eff / 2), (lam, d_eff, sizes)
        assert np.all(sizes <= 384 * d_eff * math.log(d_eff / DELTA)), (lam, d_eff, sizes)
        assert d_eff <= np.median(sizes) <= 3 * d_eff * math.log(d_eff / DELTA), (
            lam, d_eff, sizes)
        assert np.median(sizes) < X.shape[0] / 2  # not saturated: the size is λ's doing
        medians.append(np.median(sizes))
    assert np.all(np.diff(medians) > 0), medians


@pytest.mark.parametrize("name", ["clusters", "broad"])
def test_spectral_guarantee_holds_with_high_probability(cases, name):
    """Theorems 3 and 7: K̃ ⪯ K ⪯ K̃ + λI with probability 1 − δ, i.e. eig(K − K̃) ≥ 0
    always and ≤ λ (c = 1) in at least 1 − δ = 90 % of the draws; on these data it holds
    in every one of ten draws per λ, and within 2λ in all."""
    X, kernel, K, _, _ = cases[name]
    scale = float(np.linalg.norm(K, 2))
    for lam in LAMS[name]:
        top = []
        for smp in _samples(X, kernel, lam, range(10)):
            ev = np.linalg.eigvalsh(K - _nystrom(K, smp.indices))
            # K̃ ⪯ K up to the rounding that 1/λ_min(W) amplifies
            assert ev[0] >= -1e-6 * scale, (lam, ev[0])
            top.append(ev[-1])
        assert np.mean(np.array(top) <= lam) >= 1 - DELTA and max(top) <= 2 * lam, (lam, top)
        assert max(top) <= lam, (lam, top)


def test_probabilities_over_estimate_the_exact_scores(cases):
    """Every point is kept with probability at least its exact λ-ridge leverage score
    (U² e/(e + λ) from eigh), and they sum to at least d_eff."""
    X, kernel, _, e, U = cases["clusters"]
    for lam in LAMS["clusters"]:
        exact = (U**2) @ (e / (e + lam))
        for smp in _samples(X, kernel, lam, range(3)):
            assert smp.lam == lam and np.all(smp.scores <= 1.0)
            assert np.all(smp.scores >= exact - 1e-10)
            assert smp.scores.sum() >= exact.sum()


def _literal(X, kernel, lam, seed):
    """Algorithm 2 written out point by point on the keyed draws: level ℓ holds the rows
    whose level uniform is below 2^-ℓ and the ⌈n / 2^L⌉ rows of smallest level key (the
    deepest level L, taken whole); per level the Lemma 6 score of every point by its own
    solve, p_i = min(1, q l̃_i) with q = max(1, log(Σ l̃ / δ)), the row kept when its
    uniform of the level's keep stream is below p_i, weights 1/√p."""
    n = X.shape[0]
    K = kernel(X)
    rows = np.arange(n)
    levels = max(1, math.ceil(math.log2(n / FIXED_LAMBDA_BASE)))
    stream = rowkeys.LANDMARKS + landmarks.RLS_LEVELS
    key, u = rowkeys.keys(seed, stream, rows), rowkeys.uniforms(seed, stream, rows)
    deep = np.sort(key)[math.ceil(n / 2**levels) - 1]

    def level_rows(level):
        return rows[(u < 0.5**level) | (key <= deep)]

    S = level_rows(levels)
    w = np.ones(S.size)
    for level in range(levels - 1, -1, -1):
        pts = level_rows(level)
        A = K[np.ix_(S, S)] + lam * np.diag(1.0 / w**2)
        raw = np.array([max(0.0, K[i, i] - K[i, S] @ np.linalg.solve(A, K[S, i])) / lam
                        for i in pts])
        p = np.minimum(1.0, max(1.0, math.log(max(raw.sum(), 1.0) / DELTA)) * raw)
        keep = rowkeys.uniforms(seed, rowkeys.LANDMARKS + landmarks.RLS_LEVEL + 4 * level,
                                pts) < p
        if level == 0:
            return np.sort(pts[keep])
        S, w = pts[keep], 1.0 / np.sqrt(p[keep])


def test_matches_a_literal_implementation():
    X = np.random.default_rng(7).normal(size=(600, 3))
    kernel = GaussianKernel(1.5)
    for lam, seed in ((3.0, 0), (0.3, 1), (0.03, 2)):
        fast = RecursiveRLSSampler(lam=lam).sample(X, kernel, None, seed)
        np.testing.assert_array_equal(fast.indices, _literal(X, kernel, lam, seed))


def test_same_seed_same_landmarks(cases):
    X, kernel, *_ = cases["broad"]
    a, b, c = (RecursiveRLSSampler(lam=1.0).sample(X, kernel, None, np.random.default_rng(s))
               for s in (4, 4, 5))
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert a.kernel_evaluations == b.kernel_evaluations
    assert not np.array_equal(a.indices, c.indices)
    assert np.unique(a.indices).size == a.indices.size


def test_huge_lambda_still_gives_a_landmark():
    """λ far above ‖K‖₂: the bound holds for any K̃, the expected size is below one, and
    one landmark is kept so the features are not empty."""
    X = np.random.default_rng(0).normal(size=(300, 2))
    smp = RecursiveRLSSampler(lam=1e6).sample(X, GaussianKernel(1.0), None,
                                             np.random.default_rng(0))
    assert 1 <= smp.indices.size <= 3


@pytest.mark.parametrize("lam", [0.0, -1.0, float("nan"), float("inf"), "1", True])
def test_bad_lambda_is_refused_with_a_clear_message(lam):
    with pytest.raises(ParameterError, match=r"λ of recursive RLS .* must be positive and "
                                             r"finite, got"):
        RecursiveRLSSampler(lam=lam)


def test_fixed_lambda_and_budget_do_not_mix():
    X = np.zeros((50, 2))
    with pytest.raises(ParameterError, match="call sample with s=None"):
        RecursiveRLSSampler(lam=1.0).sample(X, GaussianKernel(1.0), 10,
                                            np.random.default_rng(0))
    with pytest.raises(ParameterError, match="accelerated variant needs a budget"):
        RecursiveRLSSampler(accelerated=True, lam=1.0)
    for delta in (0.0, 1.0, -0.5, float("nan")):
        with pytest.raises(ParameterError, match=r"δ .* strictly between 0 and 1"):
            RecursiveRLSSampler(lam=1.0, delta=delta)
