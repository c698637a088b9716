"""The laws of the keyed random choices (``kernel_lab.core.rows.keys`` and what the
partitioned path builds on it), checked statistically against the laws of the papers and
of the in-memory samplers.

Every test here uses fixed seeds, so it is deterministic; each threshold is stated with its
*false-alarm rate*: the probability that a correct implementation, run with seeds drawn at
random, would fail it. The rates are 1e-4 or less per assertion (χ² and binomial tails from
``scipy.stats``), so the file as a whole fails a correct implementation with probability
below about 1e-2 for random seeds and never for these.

χ² tests of k-subsets use the null law of sampling *without* replacement: over N
independent draws of k of n rows, the count vector ``c`` of how often each row (or each
group of rows of share ``p_j``) was chosen has covariance ``N k (n − k)/(n − 1)
(diag p − p pᵀ)``, so Pearson's statistic divided by ``(n − k)/(n − 1)`` is χ² with
(groups − 1) degrees of freedom (multinomial counts would need no factor).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from kernel_lab.core.dsg import stream as parts_dsg
from kernel_lab.core.kernels import GaussianKernel
from kernel_lab.core.models.gfc import DescentSettings, descent_rows, greedy_descent
from kernel_lab.core.nystrom import RecursiveRLSSampler, landmark_rows
from kernel_lab.core.nystrom import landmarks as parts_landmarks
from kernel_lab.core.rows import keys
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.mapreduce import (
    LocalParts,
    RowPlan,
    array_parts,
    keyed_subset,
    keyed_subset_of,
)
from kernel_lab.experiments.ckrr_risk import trial_rows

#: Per-assertion false-alarm rate of the χ² and binomial tests below.
ALPHA = 1e-4


def pearson(counts: np.ndarray, expected: np.ndarray, factor: float = 1.0) -> float:
    """p-value of Pearson's χ² of ``counts`` against ``expected`` (all cells > 0), the
    statistic divided by ``factor`` (the without-replacement correction of the module
    docstring); degrees of freedom: cells − 1."""
    counts = np.asarray(counts, dtype=float).ravel()
    expected = np.asarray(expected, dtype=float).ravel()
    assert np.isclose(counts.sum(), expected.sum())
    statistic = float(np.sum((counts - expected) ** 2 / expected)) / factor
    return float(stats.chi2.sf(statistic, counts.size - 1))


def without_replacement(n: int, k: int) -> float:
    """The factor ``(n − k)/(n − 1)`` of k-subsets of n rows."""
    return (n - k) / (n - 1)


#: Row sets the keys must treat alike: consecutive small indices, indices beyond 2³², and
#: a stride of 2³² (a weak mix of ``row · constant`` would show there first).
ROW_SETS = {"0..n-1": lambda n: np.arange(n, dtype=np.int64),
            "10^12+": lambda n: 10**12 + np.arange(n, dtype=np.int64),
            "stride 2^32": lambda n: np.arange(n, dtype=np.int64) << 32}


# ---------------------------------------------------------------------------------------
# uniform keyed choices: the k smallest keys


@pytest.mark.parametrize("rows", list(ROW_SETS))
def test_the_k_smallest_keys_choose_each_row_with_probability_k_over_n(rows):
    """Over 3,000 seeds, the 5 smallest keys of 20 rows hit each row 750 times on
    average: χ² of the 20 counts (without-replacement null)."""
    n, k, seeds = 20, 5, 3000
    index = ROW_SETS[rows](n)
    counts = np.zeros(n)
    for seed in range(seeds):
        chosen = keyed_subset_of(index, seed, rowkeys.LANDMARKS, k)
        assert chosen.size == k and np.unique(chosen).size == k
        counts[np.searchsorted(index, chosen)] += 1
    assert pearson(counts, np.full(n, seeds * k / n), without_replacement(n, k)) > ALPHA


@pytest.mark.parametrize("rows", list(ROW_SETS))
def test_the_order_of_the_keys_is_a_uniform_permutation(rows):
    """The order of 5 rows' keys is each of the 120 permutations equally often (7,200
    seeds, 60 per permutation): exchangeability, hence every joint law of k-subsets,
    not only the marginal one."""
    n, seeds = 5, 7200
    index = ROW_SETS[rows](n)
    perms = {p: i for i, p in enumerate(itertools.permutations(range(n)))}
    counts = np.zeros(len(perms))
    for seed in range(seeds):
        counts[perms[tuple(np.argsort(rowkeys.keys(seed, rowkeys.SPLIT, index)))]] += 1
    assert pearson(counts, np.full(counts.size, seeds / counts.size)) > ALPHA


def test_the_two_smallest_keys_are_a_uniform_ordered_pair():
    """The (smallest, second smallest) of 30 rows over 8,700 seeds: each of the 870
    ordered pairs 10 times on average (χ², 869 degrees of freedom)."""
    n, seeds = 30, 8700
    index = np.arange(n)
    counts = np.zeros((n, n))
    for seed in range(seeds):
        first, second = rowkeys.smallest(rowkeys.keys(seed, rowkeys.EVAL_SUBSET, index),
                                         index, 2)
        counts[first, second] += 1
    off = ~np.eye(n, dtype=bool)
    assert counts[~off].sum() == 0
    assert pearson(counts[off], np.full(n * (n - 1), seeds / (n * (n - 1)))) > ALPHA


def keyed_parts(n: int, cuts: list[int]) -> LocalParts:
    """Rows 0 … n−1 (their values do not matter here) cut at the given sizes."""
    X = np.zeros((n, 1))
    return LocalParts(array_parts(X, np.zeros(n), cuts))


def test_a_keyed_subset_over_partitions_is_spread_over_the_index_range():
    """The 50 training rows of 10,000 with the smallest keys, over three unequal parts and
    400 seeds: how many fall in each tenth of the row indices (χ², 9 degrees of freedom,
    without-replacement null), and in the first and last hundred rows."""
    n, k, seeds = 10_000, 50, 400
    parts = keyed_parts(n, [1234, 6000, 2766])
    plan = RowPlan.split(3, n, 0.0)
    deciles = np.zeros(10)
    edges = np.zeros(2)
    for seed in range(seeds):
        index = keyed_subset(parts, plan, rowkeys.VIEW_SUBSET, k, seed=seed)
        assert index.size == k
        deciles += np.bincount(index * 10 // n, minlength=10)
        edges += [(index < 100).sum(), (index >= n - 100).sum()]
    factor = without_replacement(n, k)
    assert pearson(deciles, np.full(10, seeds * k / 10), factor) > ALPHA
    # the first and last hundred rows: 0.5 expected per seed each, Poisson-like
    for hits in edges:
        mean = seeds * k * 100 / n
        assert stats.poisson.sf(hits - 1, mean) > ALPHA and stats.poisson.cdf(hits, mean) > ALPHA


#: Pairs of (seed, stream) whose keys must be independent: neighbouring seeds, neighbouring
#: streams, a choice and the next round or epoch of the same choice.
STREAM_PAIRS = {
    "seed s, s+1": ((5, rowkeys.SPLIT), (6, rowkeys.SPLIT)),
    "split, test subset": ((5, rowkeys.SPLIT), (5, rowkeys.TEST_SUBSET)),
    "uniform landmarks, RLS levels": ((5, rowkeys.LANDMARKS + parts_landmarks.UNIFORM),
                                      (5, rowkeys.LANDMARKS + parts_landmarks.RLS_LEVELS)),
    "RPC round r, r+1": ((5, rowkeys.RPC_ROUND + 3), (5, rowkeys.RPC_ROUND + 4)),
    "RPC proposals, acceptance": ((5, rowkeys.RPC_ROUND + 3),
                                  (5, parts_landmarks.RPC_ACCEPT + 3)),
    "DSG epoch e, e+1": ((5, rowkeys.DSG_EPOCH), (5, rowkeys.DSG_EPOCH + 1)),
    "seed s and 2^32+s": ((5, rowkeys.SPLIT), (5 + 2**32, rowkeys.SPLIT)),
    "ckrr trial t, t+1": ((5, keys.TRIAL_SUBSET), (5, keys.TRIAL_SUBSET + 1)),
    "GFC descent rows, folds": ((5, keys.GFC_SUBSET), (5, keys.GFC_FOLDS)),
    "bandwidth rows, split": ((5, keys.BANDWIDTH), (5, keys.SPLIT)),
}


@pytest.mark.parametrize("pair", list(STREAM_PAIRS))
def test_streams_and_seeds_are_independent(pair):
    """The uniforms of two streams (or seeds) on 200,000 rows fall in the cells of a
    20 × 20 grid equally often (χ², 399 degrees of freedom: any dependence, not only a
    correlation), and two 20-subsets of 200 rows chosen by them overlap as two independent
    uniform subsets do (hypergeometric, over 2,000 row blocks)."""
    (seed_a, stream_a), (seed_b, stream_b) = STREAM_PAIRS[pair]
    rows = np.arange(200_000)
    ua = rowkeys.uniforms(seed_a, stream_a, rows)
    ub = rowkeys.uniforms(seed_b, stream_b, rows)
    grid = np.histogram2d(ua, ub, bins=20, range=[[0, 1], [0, 1]])[0]
    assert pearson(grid, np.full(400, rows.size / 400)) > ALPHA
    n, k, blocks = 200, 20, 2000
    overlaps = np.zeros(k + 1)
    for b in range(blocks):
        index = np.arange(b * n, (b + 1) * n)
        A = keyed_subset_of(index, seed_a, stream_a, k)
        B = keyed_subset_of(index, seed_b, stream_b, k)
        overlaps[np.intersect1d(A, B).size] += 1
    law = stats.hypergeom(n, k, k).pmf(np.arange(k + 1)) * blocks
    # cells of 5 and more expected; the tail pooled into the last
    last = int(np.flatnonzero(law >= 5)[-1])
    counts = np.append(overlaps[:last], overlaps[last:].sum())
    expected = np.append(law[:last], blocks - law[:last].sum())
    assert pearson(counts, expected) > ALPHA


# ---------------------------------------------------------------------------------------
# the row choices of the experiments that need every row at once (ckrr-risk, gfc)

#: Global indices of 40 rows as a split leaves them: not consecutive, some beyond 2³².
SCATTERED = np.sort(np.random.default_rng(0).choice(10**6, 40, replace=False)) + 2**33


def test_ckrr_trials_train_and_test_on_uniform_disjoint_subsets():
    """ckrr-risk on real data, 3,000 trials of one seed: each trial's 10 training rows and
    12 test rows of 40 are disjoint; each row is a training row (and a test row) equally
    often (χ², without-replacement null), so the trials' subsets are uniform."""
    n, n_test, trials = 10, 12, 3000
    N = SCATTERED.size
    train, test = np.zeros(N), np.zeros(N)
    for t in range(trials):
        tr, te = trial_rows(7, t, SCATTERED, n, n_test)
        assert tr.size == n and te.size == n_test and np.intersect1d(tr, te).size == 0
        train[tr] += 1
        test[te] += 1
    assert pearson(train, np.full(N, trials * n / N), without_replacement(N, n)) > ALPHA
    assert pearson(test, np.full(N, trials * n_test / N),
                   without_replacement(N, n_test)) > ALPHA


def test_a_ckrr_trial_is_the_same_rows_wherever_they_are_held():
    """The same rows listed in another order (as another file layout would hold them)
    give the same trial: the same global rows, in the same order."""
    order = np.random.default_rng(1).permutation(SCATTERED.size)
    for t in range(5):
        tr, te = trial_rows(3, t, SCATTERED, 10, 12)
        tr2, te2 = trial_rows(3, t, SCATTERED[order], 10, 12)
        assert np.array_equal(SCATTERED[tr], SCATTERED[order][tr2])
        assert np.array_equal(SCATTERED[te], SCATTERED[order][te2])


def test_gfc_descents_draw_uniform_subsets():
    """A GFC descent's 8 rows of 40, over 3,000 descent seeds: each row equally often
    (χ², without-replacement null)."""
    k, seeds = 8, 3000
    N = SCATTERED.size
    counts = np.zeros(N)
    for seed in range(seeds):
        S = descent_rows(seed, SCATTERED, k)
        assert S.size == k and np.all(np.diff(S) > 0)
        counts[S] += 1
    assert pearson(counts, np.full(N, seeds * k / N), without_replacement(N, k)) > ALPHA


def test_gfc_folds_put_each_row_in_each_fold_equally_often():
    """The folds of a descent on 20 rows (5 folds of 4, the runs of the rows' keyed
    order), over 2,000 seeds: within one seed the folds partition the rows; each row's
    fold is uniform — a χ² of its 5 counts (multinomial, 4 degrees of freedom) per row,
    at ALPHA / 20 each."""
    N, folds, seeds = 20, 5, 2000
    rows = SCATTERED[:N]
    table = np.zeros((N, folds))
    for seed in range(seeds):
        perm = keys.order(seed, keys.GFC_FOLDS, rows)
        assert np.array_equal(np.sort(perm), np.arange(N))
        for f, fold in enumerate(np.array_split(perm, folds)):
            table[fold, f] += 1
    for counts in table:
        assert pearson(counts, np.full(folds, seeds / folds)) > ALPHA / N


def test_a_gfc_descent_uses_the_keyed_folds():
    """greedy_descent's folds are the keyed order's runs: the same rows given in another
    order (with their global indices) make the same descent."""
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(60, 2))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=60)
    rows = np.arange(60) * 7 + 11
    order = rng.permutation(60)
    settings = DescentSettings(max_steps=3, candidates=16)
    a = greedy_descent(X, y, np.zeros(60), settings, np.random.default_rng(0), rows, 4)
    b = greedy_descent(X[order], y[order], np.zeros(60), settings, np.random.default_rng(0),
                       rows[order], 4)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------
# the keyed split


@pytest.mark.parametrize("dropped", [False, True])
def test_the_keyed_split_holds_out_its_fraction_uniformly(dropped):
    """``RowPlan.split``: exactly ``round(fraction · kept rows)`` test rows, none of them
    dropped; over 400 seeds, test membership does not depend on the row index (χ² over
    tenths of the index) and is not serially correlated (neighbouring rows both test as
    often as the hypergeometric law says)."""
    n, fraction, seeds = 1000, 0.25, 400
    gone = np.arange(3, n, 17) if dropped else None     # rows left out (drop_nan)
    kept = np.setdiff1d(np.arange(n), np.zeros(0) if gone is None else gone)
    m = kept.size
    n_test = round(fraction * m)
    rows = np.arange(n)
    deciles = np.zeros(10)
    pairs = []
    for seed in range(seeds):
        plan = RowPlan.split(seed, n, fraction, dropped=gone)
        test = plan.is_test(rows)
        assert plan.n_test == n_test and int(test.sum()) == n_test
        assert plan.n_train == m - n_test
        if gone is not None:
            assert not test[gone].any() and not plan.is_train(gone).any()
        # counted among the kept rows, in tenths of their positions
        where = np.flatnonzero(test[kept])
        deciles += np.bincount(where * 10 // m, minlength=10)
        pairs.append(int(np.sum(test[kept][1:] & test[kept][:-1])))
    share = np.bincount(np.arange(m) * 10 // m, minlength=10) / m
    assert pearson(deciles, seeds * n_test * share, without_replacement(m, n_test)) > ALPHA
    # neighbouring kept rows both test: (m − 1) · k(k − 1)/(m(m − 1)) per seed; a normal
    # test on the mean over the seeds (their counts are independent)
    pairs = np.asarray(pairs, dtype=float)
    mean = n_test * (n_test - 1) / m
    z = (pairs.mean() - mean) / (pairs.std(ddof=1) / math.sqrt(seeds))
    assert 2 * stats.norm.sf(abs(z)) > ALPHA


# ---------------------------------------------------------------------------------------
# weighted keys: Efraimidis & Spirakis


def successive_law(w: np.ndarray, order: tuple[int, ...]) -> float:
    """The probability that successive sampling ∝ w without replacement (numpy's
    ``choice(p=w/Σw, replace=False)``, the reference code's draw) draws ``order`` first."""
    left, prob = float(w.sum()), 1.0
    for i in order:
        prob *= w[i] / left
        left -= w[i]
    return prob


def test_weighted_keys_draw_in_the_successive_sampling_law():
    """The three smallest weighted keys of 5 rows, in order, over 24,000 seeds: each of
    the 60 ordered triples as often as successive sampling ∝ w draws it (exact law,
    χ² with 59 degrees of freedom); the first pick alone ∝ w."""
    w = np.array([0.5, 1.0, 2.0, 4.0, 8.0])
    index = np.arange(w.size) + 40_000
    triples = list(itertools.permutations(range(w.size), 3))
    at = {t: j for j, t in enumerate(triples)}
    counts = np.zeros(len(triples))
    seeds = 24_000
    stream = rowkeys.LANDMARKS + parts_landmarks.RLS_DRAW
    for seed in range(seeds):
        value = rowkeys.weighted_keys(seed, stream, index, w)
        counts[at[tuple(rowkeys.smallest(value, index, 3))]] += 1
    law = np.array([successive_law(w, t) for t in triples]) * seeds
    assert pearson(counts, law) > ALPHA
    first = np.array([counts[[at[t] for t in triples if t[0] == i]].sum()
                      for i in range(w.size)])
    assert pearson(first, w / w.sum() * seeds) > ALPHA


def test_zero_weights_come_last_in_uniform_order():
    """The landmarks' weighted draw (``_by_weight``): rows of weight 0 come after every
    row of positive weight, in a uniform order among themselves (χ² of which zero-weight
    row comes first), and the positive ones first ∝ w."""
    w = np.array([0.0, 3.0, 0.0, 1.0, 0.0, 0.0])
    index = np.arange(w.size) * 7 + 3
    zero = np.flatnonzero(w == 0)
    seeds = 6000
    first_zero = np.zeros(zero.size)
    first = np.zeros(2)
    for seed in range(seeds):
        value = landmark_rows.by_weight(seed, rowkeys.LANDMARKS, index, w)
        order = rowkeys.smallest(value, index, w.size)
        assert set(order[:2]) == {1, 3}
        first[0 if order[0] == 1 else 1] += 1
        first_zero[np.searchsorted(zero, order[2])] += 1
    assert pearson(first, np.array([0.75, 0.25]) * seeds) > ALPHA
    assert pearson(first_zero, np.full(zero.size, seeds / zero.size)) > ALPHA


# ---------------------------------------------------------------------------------------
# recursive RLS: sample size against d_eff(λ), and ‖K − K̃‖₂ ≤ λ


def leverage_data(n: int = 800, tiny: int = 8, size: int = 6, seed: int = 0
                  ) -> tuple[np.ndarray, np.ndarray]:
    """A broad cluster and ``tiny`` clusters of ``size`` tight points far from it, in
    shuffled row order: each tiny cluster carries an eigenvalue near ``size`` of the
    Gaussian kernel (σ = 1), which uniform sampling of a few percent of the rows misses
    and ridge-leverage sampling does not."""
    rng = np.random.default_rng(seed)
    angle = 2 * np.pi * np.arange(tiny) / tiny
    centres = 6.0 * np.c_[np.cos(angle), np.sin(angle)]
    X = np.concatenate([0.7 * rng.standard_normal((n - tiny * size, 2)),
                        np.repeat(centres, size, axis=0)
                        + 0.05 * rng.standard_normal((tiny * size, 2))])
    X = X[rng.permutation(n)]
    return X, X[:, 0].copy()


KERNEL = GaussianKernel(1.0)


@pytest.fixture(scope="module")
def spectrum():
    """The data, their kernel matrix and its eigenvalues (brute force, n = 800)."""
    X, y = leverage_data()
    K = KERNEL(X)
    return X, y, K, np.linalg.eigvalsh(K)


def d_eff(eigenvalues: np.ndarray, lam: float) -> float:
    return float(np.sum(eigenvalues / (eigenvalues + lam)))


def spectral_error(K: np.ndarray, S: np.ndarray) -> float:
    """‖K − K̃‖₂ for the Nyström approximation on the landmarks S (brute force)."""
    C = K[:, S]
    e, U = np.linalg.eigh(K[np.ix_(S, S)])
    keep = e > 1e-12 * e.max()
    F = C @ (U[:, keep] / np.sqrt(e[keep]))
    return float(np.linalg.eigvalsh(K - F @ F.T)[-1])


#: Algorithm 2's failure probability δ (the sampler's default); the papers' guarantees
#: hold with probability 1 − 3δ (Theorem 7 for a fixed λ, Theorem 10 with a budget).
DELTA = 0.1


def assert_failure_rate_at_most(failures: int, trials: int, rate: float) -> None:
    """A binomial test that ``failures`` of ``trials`` is consistent with a failure
    probability of at most ``rate`` (false alarm at most :data:`ALPHA`)."""
    assert stats.binom.sf(failures - 1, trials, rate) > ALPHA, (
        f"{failures} of {trials} draws failed; at most {rate:.0%} expected")


@pytest.mark.parametrize("where", ["memory", "partitions"])
def test_recursive_rls_with_a_budget_keeps_the_papers_law(spectrum, where):
    """Algorithm 3 with a budget s = 150 of n = 800, over 20 seeds, in memory
    (:class:`RecursiveRLSSampler`) and on four unequal partitions
    (``recursive_rls_landmarks``): λ is chosen so that ``s = Θ(d_eff(λ) log d_eff(λ))``
    — the rule ``λ = (tail beyond the k largest eigenvalues)/k``, ``k = ⌈s/(4 log s)⌉``,
    gives ``d_eff(λ) ≤ 2k`` on the matrix it is computed from, so here between k and
    2.5k on the true K — and ``‖K − K̃‖₂ ≤ λ`` fails with probability at most 3δ
    (binomial test). Uniform landmarks at the same s exceed λ on these data."""
    X, y, K, e = spectrum
    n, s, seeds = X.shape[0], 150, 20
    k = math.ceil(s / (4 * math.log(s)))
    parts = LocalParts(array_parts(X, y, [100, 300, 150, 250]))
    plan = RowPlan.split(1, n, 0.0)
    failures = 0
    ratios = []
    for seed in range(seeds):
        if where == "memory":
            got = RecursiveRLSSampler().sample(X, KERNEL, s, np.random.default_rng(seed))
            S, lam = got.indices, got.lam
        else:
            land = parts_landmarks.recursive_rls_landmarks(parts, plan, KERNEL, s, seed)
            S, lam = land.index, land.lam
        assert S.size == s and np.unique(S).size == s
        d = d_eff(e, lam)
        assert k <= d <= 2.5 * k, (seed, lam, d, k)
        ratios.append(s / (d * math.log(d / DELTA)))
        failures += spectral_error(K, S) > lam
    assert_failure_rate_at_most(failures, seeds, 3 * DELTA)
    # s against the paper's d_eff log(d_eff/δ): the same multiple on every seed
    assert max(ratios) / min(ratios) < 2.0


def test_recursive_rls_with_a_fixed_lambda_keeps_the_papers_law(spectrum):
    """Algorithm 2 (on the array as one part, :class:`RecursiveRLSSampler`) at λ = 3 over
    20 seeds: each point is kept with probability ``p_i ≥ l_i(λ)``, so the mean number of
    landmarks is at least d_eff(λ) (a t-test on the 20 counts), and Theorem 7's
    ``s ≤ 384 d_eff log(d_eff/δ)`` and ``‖K − K̃‖₂ ≤ λ`` fail together with probability at
    most 3δ (binomial test)."""
    X, _, K, e = spectrum
    lam, seeds = 3.0, 20
    d = d_eff(e, lam)
    sizes, failures = [], 0
    for seed in range(seeds):
        got = RecursiveRLSSampler(lam=lam, delta=DELTA).sample(X, KERNEL, None,
                                                                np.random.default_rng(seed))
        S = got.indices
        sizes.append(S.size)
        bad = S.size > 384 * d * math.log(d / DELTA) or spectral_error(K, S) > lam
        failures += bad
    assert_failure_rate_at_most(failures, seeds, 3 * DELTA)
    sizes = np.asarray(sizes, dtype=float)
    t = (sizes.mean() - d) / (sizes.std(ddof=1) / math.sqrt(seeds))
    assert stats.t.cdf(t, seeds - 1) > ALPHA, (sizes.mean(), d)


# ---------------------------------------------------------------------------------------
# RP-Cholesky on partitions: i.i.d. proposals accepted by rejection


def rp_cholesky_law(K: np.ndarray, s: int) -> np.ndarray:
    """RP-Cholesky's law of its first s pivots as a set (Chen et al., Algorithm 1: each
    pivot ∝ the residual diagonal the previous ones leave), by enumerating every ordered
    sequence; sets in ``itertools.combinations`` order."""
    law: dict[tuple[int, ...], float] = {}

    def walk(R: np.ndarray, chosen: list[int], prob: float) -> None:
        if len(chosen) == s:
            key = tuple(sorted(chosen))
            law[key] = law.get(key, 0.0) + prob
            return
        d = np.clip(np.diag(R).copy(), 0.0, None)
        d[chosen] = 0.0
        for i in np.flatnonzero(d > 0.0):
            walk(R - np.outer(R[:, i], R[:, i]) / R[i, i], [*chosen, int(i)],
                 prob * d[i] / d.sum())

    walk(K, [], 1.0)
    return np.array([law.get(c, 0.0) for c in itertools.combinations(range(K.shape[0]), s)])


@pytest.mark.parametrize(("blocked", "block", "s"),
                         [(False, None, 2), (True, None, 2), (True, 2, 2), (True, 2, 3)])
def test_rp_cholesky_on_partitions_draws_its_pivots_by_its_law(monkeypatch, blocked, block,
                                                               s):
    """Six points on a line (four close, two far), two partitions of 2 and 4 rows, 8,000
    seeds: the set of s pivots follows RP-Cholesky's exact law (χ² against the
    enumeration, C(6, s) − 1 degrees of freedom) — one proposal a round (the size rule
    here) and proposals in blocks (forced; the size rule takes them above
    RPC_STORED_MAX): b proposals i.i.d. ∝ the residual (duplicates possible) accepted by
    rejection keep the law exactly. Canonical blocks of the default size (one segment per
    part) and of 2 rows (three segments, one of them a whole part's). (Proposals drawn
    *without* replacement, as this sampler once drew them, gave for s = 2 a law 0.015
    from RP-Cholesky's in total variation.)"""
    if block is not None:
        monkeypatch.setattr("kernel_lab.core.rows.blocks.ROW_BLOCK", block)
    X = np.array([0.0, 0.1, 0.2, 0.3, 3.0, 3.2])[:, None]
    kernel = GaussianKernel(0.3)
    exact = rp_cholesky_law(kernel(X), s)
    parts = LocalParts(array_parts(X, X[:, 0].copy(), [2, 4]))
    plan = RowPlan.split(0, X.shape[0], 0.0)
    assert plan.block == (block or plan.block)
    at = {c: j for j, c in enumerate(itertools.combinations(range(X.shape[0]), s))}
    seeds = 8000
    counts = np.zeros(len(at))
    for seed in range(seeds):
        got = parts_landmarks.rp_cholesky_landmarks(
            parts, plan, kernel, s, seed, one_at_a_time=False if blocked else None)
        counts[at[tuple(got.index)]] += 1
    assert pearson(counts, seeds * exact) > ALPHA


# ---------------------------------------------------------------------------------------
# DSG: keyed epochs


@pytest.mark.parametrize("cuts", [[256], [37, 100, 1, 118], [128, 128]])
def test_a_dsg_epoch_is_a_permutation_of_the_training_rows(cuts):
    """The batches of one epoch (``BlockStream``, blocks of 64 rows, batches of 10 that
    cross the blocks' ends) visit every training row exactly once, in the same order
    whatever the partition cut (the order ``epoch_rows`` lists)."""
    n, block, B = 256, 64, 10
    X = np.arange(n, dtype=float)[:, None]
    parts = LocalParts(array_parts(X, X[:, 0].copy(), cuts))
    plan = RowPlan.split(4, n, 0.2)
    train = np.flatnonzero(plan.is_train(np.arange(n)))
    stream = parts_dsg.BlockStream(parts, plan, seed=9, batch_size=B, block=block, p=1)
    seen = []
    for batch in stream:
        seen.extend(batch.index.tolist())
        np.testing.assert_array_equal(batch.X[:, 0], batch.index)  # rows travel with X
        if len(seen) >= 2 * train.size:
            break
    first, second = np.asarray(seen[:train.size]), np.asarray(seen[train.size:2 * train.size])
    np.testing.assert_array_equal(np.sort(first), train)
    np.testing.assert_array_equal(np.sort(second), train)
    np.testing.assert_array_equal(first, parts_dsg.epoch_rows(plan, 9, 0, block))
    np.testing.assert_array_equal(second, parts_dsg.epoch_rows(plan, 9, 1, block))
    assert not np.array_equal(first, second)


def batch_of_position(n_train: int, B: int) -> np.ndarray:
    """Batch number of each position of an epoch of ``n_train`` rows (batches of B)."""
    return np.arange(n_train) // B


def position_law(m: np.ndarray) -> np.ndarray:
    """The exact law of a row's position in an epoch, per block: entry ``[b, t]`` is the
    probability that a given training row of block b comes t-th, when the blocks (holding
    ``m_b`` training rows) are visited in a uniform random order and the rows inside a
    block in a uniform random order — enumerated over the block orders."""
    total = int(m.sum())
    law = np.zeros((m.size, total))
    orders = list(itertools.permutations(range(m.size)))
    for order in orders:
        offset = 0
        for b in order:
            law[b, offset:offset + m[b]] += 1.0 / (m[b] * len(orders))
            offset += m[b]
    return law


def batch_counts(plan: RowPlan, block: int, B: int, seeds: int) -> np.ndarray:
    """``[row, batch]``: how often each row fell in each batch of epoch 0 over the seeds."""
    n_train = plan.n_train
    counts = np.zeros((plan.n, -(-n_train // B)))
    batch = batch_of_position(n_train, B)
    for seed in range(seeds):
        rows = parts_dsg.epoch_rows(plan, seed, 0, block)
        counts[rows, batch] += 1
    return counts


def test_each_dsg_batch_is_marginally_uniform():
    """With blocks holding equally many training rows (256 rows, blocks of 64, no test
    rows), every row falls in each batch of 10 of an epoch — batches 6, 12 and 19 cross a
    block's end — with probability 10/256 (the last, of 6 rows, 6/256): for every row,
    χ² of its batch over 2,560 seeds (exact multinomial null; Bonferroni over the rows)."""
    n, block, B, seeds = 256, 64, 10, 2560
    plan = RowPlan.split(0, n, 0.0)
    counts = batch_counts(plan, block, B, seeds)
    share = np.bincount(batch_of_position(n, B)) / n
    worst = min(pearson(counts[i], seeds * share) for i in range(n))
    assert worst > ALPHA / n


def test_dsg_batches_follow_the_block_law_with_unequal_blocks():
    """With a test split the blocks hold unequal numbers of training rows; a row's batch
    then follows the law of keyed blocks in random order and rows in random order within
    them (enumerated exactly, :func:`position_law`): χ² per row over 4,000 seeds,
    Bonferroni over the rows. That law is not uniform: it is checked to differ from
    ``B/n_train`` by more than the test's resolution for the rows of the smallest block."""
    n, block, B, seeds = 256, 64, 8, 4000
    plan = RowPlan.split(2, n, 0.3)
    train = np.flatnonzero(plan.is_train(np.arange(n)))
    m = np.bincount(train // block, minlength=n // block)
    assert m.min() < m.max()
    counts = batch_counts(plan, block, B, seeds)
    assert counts[plan.is_test(np.arange(n))].sum() == 0
    law = position_law(m)
    batch = batch_of_position(plan.n_train, B)
    per_batch = np.stack([np.bincount(batch, weights=law[b]) for b in range(m.size)])
    worst = min(pearson(counts[i], seeds * per_batch[i // block]) for i in train)
    assert worst > ALPHA / train.size
    # the first batch: (1/blocks) · B/m_b, against B/n_train for i.i.d. or a global shuffle
    np.testing.assert_allclose(per_batch[:, 0], B / (m.size * m), rtol=1e-12)
