"""The samplers that used to run in memory only, on data kept in partitions: recursive RLS at
a fixed λ (Musco & Musco, Algorithm 2) on a folder of Parquet files — its number of
landmarks against d_eff(λ) and its spectral guarantee over several seeds, as the paper
states them —, exact RLS (the in-memory scores on the same rows, the law of its draw, the
refusal over the memory budget) and RP-Cholesky on both sides of its size rule."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from kernel_lab.core.errors import MemoryBudgetError
from kernel_lab.core.kernels import GaussianKernel
from kernel_lab.core.nystrom import landmarks as parts_landmarks
from kernel_lab.core.nystrom.common import RPC_STORED_MAX
from kernel_lab.core.nystrom.samplers import ExactRLSSampler
from kernel_lab.core.rows import blocks
from kernel_lab.core.rows.mapreduce import LocalParts, RowPlan, array_parts, take_rows
from kernel_lab.data.generators import generate

pytest.importorskip("pyarrow")

DELTA = 0.1  # Algorithm 2's default failure probability
KERNEL = GaussianKernel(1.0)
#: From d_eff ≈ 8 to a sample of about a third of the 600 training rows.
LAMS = (10.0, 1.0, 0.1)
#: Rows per Parquet file (unequal; 800 in all).
FILES = (90, 250, 13, 200, 160, 87)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Imbalanced clusters (uneven leverage scores) as 6 Parquet files kept in partitions,
    their 600 training rows gathered in index order, and K of those rows with its
    eigenvalues (the brute-force reference)."""
    from kernel_lab.data.lazy import open_run_data

    X = generate("clusters", {"n": 800, "p": 2, "k": 5, "imbalance": 3.0}, seed=0).X_train
    y = np.sin(X[:, 0])
    path = tmp_path_factory.mktemp("parquet") / "clusters"
    path.mkdir()
    cuts = np.cumsum((0, *FILES))
    for k, (a, b) in enumerate(itertools.pairwise(cuts)):
        frame = pd.DataFrame(X[a:b], columns=["x1", "x2"])
        frame["y"] = y[a:b]
        frame.to_parquet(path / f"part-{k}.parquet")
    # canonical blocks of 64 rows (the default, 16,384, would make the 800 rows one part):
    # read as 5 parts of whole blocks, one per file in which a block starts
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blocks, "ROW_BLOCK", 64)
        data = open_run_data(str(path), {"partitions": "keep", "test_fraction": 0.25,
                                         "standardize": False}, seed=4, name="clusters")
    assert data.plan.block == 64
    assert len(data.parts.parts) == 5 and data.n_train == 600
    rows = take_rows(data.parts, data.plan, np.arange(800))
    K = KERNEL(rows.X)
    return data, rows, K, np.clip(np.linalg.eigvalsh(K), 0.0, None)


def _fixed(data, lam, seed, **kw):
    return parts_landmarks.recursive_rls_fixed_landmarks(data.parts, data.plan, KERNEL, lam,
                                                         seed, **kw)


def _nystrom(K, S):
    """K̃ = C W⁺ Cᵀ literally (pseudo-inverse to 1e-10 of the largest eigenvalue of W)."""
    C = K[:, S]
    return C @ np.linalg.pinv(K[np.ix_(S, S)], rcond=1e-10, hermitian=True) @ C.T


def test_algorithm2_on_parquet_samples_as_many_landmarks_as_d_eff_calls_for(folder):
    """Lemma 11 and Theorem 7 as the in-memory sampler meets them: every draw has
    s ≥ d_eff / 2, the median lies between d_eff and 3 d_eff ln(d_eff / δ), and it grows as
    λ falls — over 6 seeds per λ, on the Parquet partitions."""
    data, _, _, e = folder
    medians = []
    for lam in LAMS:
        d_eff = float(np.sum(e / (e + lam)))
        sizes = np.array([_fixed(data, lam, seed).index.size for seed in range(6)])
        assert np.all(sizes >= d_eff / 2), (lam, d_eff, sizes)
        assert d_eff <= np.median(sizes) <= 3 * d_eff * math.log(d_eff / DELTA), (
            lam, d_eff, sizes)
        assert np.median(sizes) < data.n_train / 2, (lam, sizes)  # λ's doing, not saturation
        medians.append(np.median(sizes))
    assert np.all(np.diff(medians) > 0), medians


def test_algorithm2_on_parquet_meets_the_spectral_bound(folder):
    """Theorem 3: K̃ ⪯ K ⪯ K̃ + λI with probability 1 − δ: eig(K − K̃) ≥ 0 (to rounding)
    and its largest ≤ λ in at least 90 % of 10 draws per λ, within 2λ in all."""
    data, rows, K, _ = folder
    position = {int(g): i for i, g in enumerate(rows.index)}
    scale = float(np.linalg.norm(K, 2))
    for lam in LAMS:
        top = []
        for seed in range(10):
            S = [position[int(g)] for g in _fixed(data, lam, seed).index]
            ev = np.linalg.eigvalsh(K - _nystrom(K, S))
            assert ev[0] >= -1e-6 * scale, (lam, ev[0])
            top.append(ev[-1])
        assert np.mean(np.array(top) <= lam) >= 1 - DELTA and max(top) <= 2 * lam, (lam, top)


def test_algorithm2_probabilities_over_estimate_the_exact_scores(folder):
    """The top level keeps a row with probability ≥ its exact λ-ridge leverage score, so
    the probabilities sum to ≥ d_eff; the test rows have none (NaN)."""
    data, rows, K, _ = folder
    e, U = np.linalg.eigh(K)
    e = np.clip(e, 0.0, None)
    for lam in LAMS:
        exact = (U**2) @ (e / (e + lam))
        got = _fixed(data, lam, 3, view=np.arange(800))
        p = got.scores[rows.index]
        assert got.lam == lam and np.all(p <= 1.0) and np.all(p >= exact - 1e-10), lam
        assert p.sum() >= exact.sum()
        assert np.isnan(got.scores[data.plan.is_test(np.arange(800))]).all()


def test_algorithm2_landmarks_do_not_depend_on_where_the_rows_live(folder):
    """The same rows as one array part and as the 6 Parquet files (levels gathered, or
    scored per partition) give the same landmarks."""
    data, _, _, _ = folder
    X = generate("clusters", {"n": 800, "p": 2, "k": 5, "imbalance": 3.0}, seed=0).X_train
    one = LocalParts(array_parts(X, np.sin(X[:, 0]), 1))
    for lam in (1.0, 0.1):
        a = _fixed(data, lam, 7)
        b = parts_landmarks.recursive_rls_fixed_landmarks(one, data.plan, KERNEL, lam, 7)
        c = _fixed(data, lam, 7, gather_rows=40)
        np.testing.assert_array_equal(a.index, b.index)
        np.testing.assert_array_equal(a.index, c.index)
        np.testing.assert_array_equal(a.X, X[a.index])
        assert not np.array_equal(a.index, _fixed(data, lam, 8).index)


def test_exact_rls_on_parquet_has_the_in_memory_scores(folder):
    """Exact RLS gathers the training rows in index order: its λ and scores are the
    in-memory sampler's on the same rows (to 1e-10), and its landmarks are s distinct
    training rows."""
    data, rows, _, _ = folder
    got = parts_landmarks.exact_rls_landmarks(data.parts, data.plan, KERNEL, 30, 5,
                                              view=np.arange(800))
    mem = ExactRLSSampler().sample(rows.X, KERNEL, 30, np.random.default_rng(0))
    assert got.lam == pytest.approx(mem.lam, rel=1e-10)
    np.testing.assert_allclose(got.scores[rows.index], mem.scores, rtol=1e-10, atol=1e-10)
    assert np.isnan(got.scores[data.plan.is_test(np.arange(800))]).all()
    assert got.index.size == 30 and np.unique(got.index).size == 30
    assert not data.plan.is_test(got.index).any()
    fixed = parts_landmarks.exact_rls_landmarks(data.parts, data.plan, KERNEL, 30, 5, lam=0.5,
                                                view=rows.index)
    mem = ExactRLSSampler(lam=0.5).sample(rows.X, KERNEL, 30, np.random.default_rng(0))
    np.testing.assert_allclose(fixed.scores, mem.scores, rtol=1e-10, atol=1e-10)


def test_exact_rls_draws_in_proportion_to_the_scores():
    """The keyed draw has the in-memory law: one landmark among 12 rows over 3000 seeds
    is row i with probability l_i / Σ l (χ², 11 degrees of freedom, 0.1 % level 31.3)."""
    rng = np.random.default_rng(2)
    X = np.concatenate([rng.normal(0, 0.2, size=(9, 2)), rng.normal(3, 1.0, size=(3, 2))])
    n = X.shape[0]
    plan = RowPlan.split(1, n, 0.0)
    parts = LocalParts(array_parts(X, np.zeros(n), [5, 7]))
    scores = ExactRLSSampler(lam=0.3).sample(X, KERNEL, 1, rng).scores
    counts = np.zeros(n)
    for seed in range(3000):
        got = parts_landmarks.exact_rls_landmarks(parts, plan, KERNEL, 1, seed, lam=0.3)
        counts[got.index[0]] += 1
    expected = 3000 * scores / scores.sum()
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    assert chi2 < 31.3, (chi2, counts, expected)


def test_exact_rls_over_the_memory_budget_is_refused_naming_a_subsample(folder, monkeypatch):
    """24 n² bytes for n = 600 is 8.2 MiB; with a budget of 1 MiB the refusal names the
    data option subsample=N with the N that fits: 209 training rows, 278 rows in all at a
    test fraction of 1/4."""
    data, _, _, _ = folder
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", "1")
    fits = int(math.sqrt(2**20 / 24.0))
    with pytest.raises(MemoryBudgetError, match=(
            rf"exact leverage scores on 600 points needs .*subsample=N \(N ≤ "
            rf"{int(fits * 800 / 600)} rows")):
        parts_landmarks.exact_rls_landmarks(data.parts, data.plan, KERNEL, 30, 5)


def _proposals(monkeypatch):
    """Record the number of pivots each RP-Cholesky round proposes."""
    sizes: list[int] = []
    real = parts_landmarks.accept_pivots

    def spy(H, T, u, d_T, need):
        sizes.append(T.size)
        return real(H, T, u, d_T, need)

    monkeypatch.setattr(parts_landmarks, "accept_pivots", spy)
    return sizes


@pytest.mark.parametrize(("s", "offset"), [(25, -1), (16, 0), (17, 1)])
def test_rp_cholesky_pivots_one_at_a_time_up_to_the_stored_size(monkeypatch, s, offset):
    """n·s = RPC_STORED_MAX − 1 (s = 25, n = 41,943 training rows) and = RPC_STORED_MAX
    (s = 16, n = 65,536): one proposal per round, the sequential law; n·s =
    RPC_STORED_MAX + 1 (s = 17, n = 61,681): proposals in blocks. Either way s distinct
    training rows, the same on one part and on three unequal ones."""
    n = (RPC_STORED_MAX + offset) // s
    assert n * s == RPC_STORED_MAX + offset
    plan = RowPlan.split(3, n, 0.0)  # every row a training row
    X = np.random.default_rng(s).normal(size=(n, 3))
    sizes = _proposals(monkeypatch)
    one = parts_landmarks.rp_cholesky_landmarks(LocalParts(array_parts(X, X[:, 0], 1)), plan,
                                                GaussianKernel(2.0), s, 9)
    rounds = list(sizes)
    three = parts_landmarks.rp_cholesky_landmarks(
        LocalParts(array_parts(X, X[:, 0], [n // 2, 17, n - n // 2 - 17])), plan,
        GaussianKernel(2.0), s, 9)
    np.testing.assert_array_equal(one.index, three.index)
    assert one.index.size == s and np.unique(one.index).size == s
    if offset <= 0:
        assert set(rounds) == {1} and len(rounds) >= s
    else:
        assert rounds[0] >= s and len(rounds) < s


def test_rp_cholesky_one_at_a_time_has_the_sequential_law():
    """Below the size rule the keyed draws follow Chen et al.'s Algorithm 1: the pair of
    pivots among 6 rows over 2000 seeds, against the exact law (χ², 14 degrees of
    freedom, 0.1 % level 36.1)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 2)) * np.array([1.0, 0.3])
    K = KERNEL(X)
    law = {}
    d = np.diag(K).copy()
    for i in range(6):
        r = K - np.outer(K[:, i], K[:, i]) / K[i, i]
        di = np.clip(np.diag(r), 0.0, None)
        for j in range(6):
            if j != i:
                pair = (min(i, j), max(i, j))
                law[pair] = law.get(pair, 0.0) + d[i] / d.sum() * di[j] / di.sum()
    plan = RowPlan.split(1, 6, 0.0)
    parts = LocalParts(array_parts(X, np.zeros(6), [2, 4]))
    counts = dict.fromkeys(law, 0)
    for seed in range(2000):
        got = parts_landmarks.rp_cholesky_landmarks(parts, plan, KERNEL, 2, seed)
        counts[tuple(int(i) for i in got.index)] += 1
    chi2 = sum((counts[p] - 2000 * law[p]) ** 2 / (2000 * law[p]) for p in law)
    assert chi2 < 36.1, (chi2, counts, law)
