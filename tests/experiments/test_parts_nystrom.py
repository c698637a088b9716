"""Nyström over partitions: the same rows in one part or in five give the same landmarks
and the same errors (the row choices are keyed by the global row index, the sums are
tree-combined), and each piece equals an independent dense computation on the rows."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from kernel_lab.core import nystrom as samplers
from kernel_lab.core.errors import MemoryBudgetError
from kernel_lab.core.kernels import GaussianKernel
from kernel_lab.core.models.feature_ridge import feature_ridge
from kernel_lab.core.models.nystrom import nystrom_factor
from kernel_lab.core.nystrom import landmarks as parts_landmarks
from kernel_lab.core.nystrom import scores
from kernel_lab.core.progress import Cancelled, Progress
from kernel_lab.core.ridge import cg as parts_cg
from kernel_lab.core.ridge import fit as parts_ridge
from kernel_lab.core.rows import blocks
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.mapreduce import (
    LocalParts,
    RowPlan,
    array_parts,
    keyed_subset,
    take_rows,
)
from kernel_lab.core.rows.partitioned import PartitionedData
from kernel_lab.core.rows.prepare import standardize_plan
from kernel_lab.experiments.nystrom import NystromExperiment

SAMPLERS = ("uniform", "recursive-rls", "recursive-rls-fast", "rp-cholesky")


def clusters(n: int, p: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Imbalanced Gaussian clusters (leverage scores far from uniform) and a smooth target."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-3, 3, size=(6, p))
    sizes = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04])
    label = rng.choice(6, size=n, p=sizes)
    X = centres[label] + 0.3 * rng.standard_normal((n, p))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 / p + 0.1 * rng.standard_normal(n)
    return X, y


@pytest.fixture(scope="module")
def rows():
    X, y = clusters(1200)
    plan = RowPlan.split(7, X.shape[0], 0.25)
    one = LocalParts(array_parts(X, y, 1))
    five = LocalParts(array_parts(X, y, [100, 400, 150, 350, 200]))
    plan = standardize_plan(one, plan)
    # a partition holding one test row and no training row, and one of a single row
    i = int(np.flatnonzero(plan.is_test(np.arange(X.shape[0])))[3])
    ragged = LocalParts(array_parts(X, y, [i, 1, 1, X.shape[0] - i - 2]))
    return X, y, plan, one, five, ragged


KERNEL = GaussianKernel(1.2)


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


@pytest.mark.parametrize("name", SAMPLERS)
def test_landmarks_do_not_depend_on_the_partitioning(rows, name):
    _, _, plan, one, five, ragged = rows
    a = parts_landmarks.choose_landmarks(name, one, plan, KERNEL, 40, seed=11)
    b = parts_landmarks.choose_landmarks(name, five, plan, KERNEL, 40, seed=11)
    assert a.index.size == 40 and np.unique(a.index).size == 40
    np.testing.assert_array_equal(a.index, b.index)
    np.testing.assert_allclose(a.X, b.X, rtol=1e-12)
    c = parts_landmarks.choose_landmarks(name, ragged, plan, KERNEL, 40, seed=11)
    np.testing.assert_array_equal(a.index, c.index)
    assert not plan.is_test(a.index).any()           # landmarks are training rows
    # another seed gives other landmarks
    c = parts_landmarks.choose_landmarks(name, five, plan, KERNEL, 40, seed=12)
    assert not np.array_equal(a.index, c.index)


def test_uniform_landmarks_are_the_keyed_smallest(rows):
    X, _, plan, _, five, _ = rows
    got = parts_landmarks.choose_landmarks("uniform", five, plan, KERNEL, 30, seed=5)
    train = np.flatnonzero(~plan.is_test(np.arange(X.shape[0])))
    key = rowkeys.keys(5, rowkeys.LANDMARKS + parts_landmarks.UNIFORM, train)
    expected = np.sort(train[np.argsort(key)[:30]])
    np.testing.assert_array_equal(got.index, expected)
    np.testing.assert_allclose(got.X, plan.scaled(X[expected]), rtol=1e-14)
    assert got.evaluations == 0


@pytest.mark.parametrize("coarse", [False, True])
def test_recursive_rls_top_scores_are_the_ridge_leverage_formula(rows, monkeypatch, coarse):
    """The top level's scores are Lemma 6's formula: to rounding from float64 entries,
    within the bound that allows them from coarse ones."""
    monkeypatch.setattr(scores, "COARSE_CHANGES", math.inf if coarse else 0.0)
    X, _, plan, _, five, _ = rows
    train = np.flatnonzero(~plan.is_test(np.arange(X.shape[0])))
    got = parts_landmarks.choose_landmarks("recursive-rls", five, plan, KERNEL, 40, seed=3,
                                           view=train)
    sample, w = got.sample
    assert sample.size and w.shape == sample.shape
    Xs = plan.scaled(X)
    A = Xs[train]
    K_AS = KERNEL(A, Xs[sample])
    K_SS = KERNEL(Xs[sample])
    brute = (np.diag(KERNEL(A))
             - np.einsum("ij,ji->i", K_AS,
                         np.linalg.solve(K_SS + got.lam * np.diag(w ** -2.0), K_AS.T)))
    brute = np.minimum(1.0, np.maximum(brute, 0.0) / got.lam)   # top level: q = 1
    if coarse:  # the precision the sampler chose for the top level, and its bound
        Linv = samplers.ridge_factor(K_SS, w, got.lam)
        precision = samplers.score_precision(KERNEL, Linv, w, got.lam, train.size, 1.0)
        assert precision != samplers.FLOAT64
        bound = samplers.coarse_score_error(KERNEL.coarse_error, Linv, w, got.lam,
                                            precision == samplers.SINGLE)
        assert 0.0 < np.abs(got.scores - brute).max() <= bound
    else:
        np.testing.assert_allclose(got.scores, brute, rtol=1e-7, atol=1e-10)
    # the landmarks are drawn among the positive scores
    assert np.isin(got.index, train[brute > 0]).all()


def test_rp_cholesky_pivots_explain_the_kernel(rows):
    """The blocked RP-Cholesky's pivots: distinct training rows, with a trace error far
    below uniform landmarks' on clustered data (the residual steers the draws)."""
    X, _, plan, _, five, _ = rows
    train = np.flatnonzero(~plan.is_test(np.arange(X.shape[0])))
    Xs = plan.scaled(X)[train]
    diag = KERNEL.diag(Xs).sum()

    def trace_error(index):
        F = KERNEL(Xs, plan.scaled(X[index])) @ nystrom_factor(KERNEL(plan.scaled(X[index])))
        return diag - np.einsum("ij,ij->", F, F)

    rpc = [trace_error(parts_landmarks.choose_landmarks("rp-cholesky", five, plan, KERNEL, 30,
                                                        seed=t).index) for t in range(3)]
    uni = [trace_error(parts_landmarks.choose_landmarks("uniform", five, plan, KERNEL, 30,
                                                        seed=t).index) for t in range(3)]
    assert np.median(rpc) < 0.7 * np.median(uni)


def reordering_bounds(features, X, y, X_test, lam):
    """How far the ridge's sums over the training rows (X, y) can carry the trace error, the
    coefficients and the test RMSE when the rows are summed in another order (other parts,
    another tree, other BLAS kernels): a float64 sum of n terms is off by ≤ n u Σ|terms|.

    The sums are taken of blocks B: the features F, or (``columns``) k(X, S) ≥ 0, mapped
    by N afterwards. Their Gram moves by ΔG with ‖ΔG‖₂ ≤ γ ‖|B|ᵀ|B|‖₂, γ = 2 (n + s + r) u,
    so FᵀF by ‖NᵀΔG N‖₂ ≤ ‖ΔG‖₂ ‖N‖₂² and its trace by ‖ΔG‖₂ ‖N‖²_F (N = I for F); Fᵀy
    alike; Σ k(x, x) by n u Σ k(x, x). To first order ‖Δw‖ ≤ ‖A⁻¹‖ (‖ΔA‖ ‖w‖ + ‖Δb‖) for
    A = F_cᵀF_c + λI; the intercept c = ȳ − μᵀw moves by ≤ ‖μ‖ ‖Δw‖ + γ (|ȳ| + |μ|ᵀ|w|),
    the test RMSE by ≤ ‖F_t‖₂ ‖Δw‖ / √n_t + |Δc|."""
    u = np.finfo(np.float64).eps / 2
    F = features.transform(X)
    if getattr(features, "columns", False):
        B, N = np.abs(KERNEL(X, features.landmarks)), features.normalization
    else:
        B, N = np.abs(F), np.eye(F.shape[1])
    gamma = 2 * (X.shape[0] + B.shape[1] + F.shape[1]) * u
    dG = gamma * np.linalg.norm(B.T @ B, 2)
    mu = F.mean(axis=0)
    Fc = F - mu
    A = Fc.T @ Fc + lam * np.eye(F.shape[1])
    w = np.linalg.solve(A, Fc.T @ (y - y.mean()))
    dA = dG * np.linalg.norm(N, 2) ** 2
    db = gamma * np.linalg.norm(B.T @ (np.abs(y) + abs(y.mean()))) * np.linalg.norm(N, 2)
    dw = (dA * np.linalg.norm(w) + db) / np.linalg.eigvalsh(A)[0]
    dc = np.linalg.norm(mu) * dw + gamma * (abs(y.mean()) + np.abs(mu) @ np.abs(w))
    d_rmse = np.linalg.norm(features.transform(X_test), 2) * dw / math.sqrt(X_test.shape[0])
    d_trace = dG * np.linalg.norm(N) ** 2 + X.shape[0] * u * float(KERNEL.diag(X).sum())
    return d_trace, dw, d_rmse + dc


@pytest.mark.parametrize("name", (*SAMPLERS, "rff"))
def test_errors_do_not_depend_on_the_partitioning(rows, name):
    X, _, plan, one, five, ragged = rows
    out = []
    for parts in (one, five, ragged):
        features = parts_ridge.make_features(name, parts, plan, KERNEL, 30, seed=4)
        evalX = take_rows(parts, plan, keyed_subset(parts, plan, rowkeys.EVAL_SUBSET, 200)).X
        test = take_rows(parts, plan, keyed_subset(parts, plan, rowkeys.TEST_SUBSET, 250,
                                                   "test"), "test")
        fit = parts_ridge.fit_ridge(parts, plan, features, 0.5)
        spectral = parts_ridge.spectral_error(KERNEL(evalX), features, evalX)
        trace = parts_ridge.diag_sum(parts, plan, KERNEL) - fit.squared_norm
        rmse = parts_ridge.test_rmse(fit, features, test.X, test.y)
        out.append((features, spectral, trace, rmse, fit.coef))
    # the landmarks and the evaluation rows are the same rows: the same spectral error, bit for
    # bit; the sums over the training rows differ by their order only (rp-cholesky's trace
    # error, a difference of two sums of ~900, by 1.3e-9 relative and its coefficients by
    # 4e-9 elementwise with SkylakeX kernels), within the bounds of reordered sums (1.5e-5
    # relative at most here); a lost or doubled row would move them by ~1/n
    tr = take_rows(one, plan, np.arange(X.shape[0]))
    d_trace, d_coef, d_rmse = reordering_bounds(out[0][0], tr.X, tr.y, test.X, 0.5)
    for other in out[1:]:
        assert other[1] == out[0][1]
        assert abs(other[2] - out[0][2]) <= 2 * d_trace
        assert abs(other[3] - out[0][3]) <= 2 * d_rmse
        assert np.linalg.norm(other[4] - out[0][4]) <= 2 * d_coef


@pytest.mark.parametrize("name", ("uniform", "rff"))
def test_ridge_sums_equal_the_dense_features(rows, name):
    X, _, plan, _, five, _ = rows
    features = parts_ridge.make_features(name, five, plan, KERNEL, 25, seed=2)
    tr = take_rows(five, plan, np.arange(X.shape[0]))
    F = features.transform(tr.X)
    fit = parts_ridge.fit_ridge(five, plan, features, 0.3)
    coef, intercept = feature_ridge(F, tr.y, 0.3)
    assert rel(fit.coef, coef) < 1e-8 and abs(fit.intercept - intercept) < 1e-8
    assert fit.squared_norm == pytest.approx(np.einsum("ij,ij->", F, F), rel=1e-10)
    # λ by leave-one-out over the parts: the in-memory ridge_loo's choice
    from kernel_lab.experiments.nystrom_cells import downstream_ridge
    coef_loo, _, lam_loo = downstream_ridge(F, tr.y, None)
    loo = parts_ridge.fit_ridge(five, plan, features, None)
    assert loo.lam == pytest.approx(lam_loo, rel=1e-12)
    assert rel(loo.coef, coef_loo) < 1e-6


def test_cg_over_parts_equals_the_dense_solution(rows):
    X, y, plan, _, five, _ = rows
    marks = parts_landmarks.choose_landmarks("uniform", five, plan, KERNEL, 40, seed=1)
    N = nystrom_factor(KERNEL(marks.X))
    tr = take_rows(five, plan, np.arange(X.shape[0]))
    F = KERNEL(tr.X, marks.X) @ N
    coef, c = feature_ridge(F, tr.y, 0.05)
    got, got_c, info = parts_cg.nystrom_ridge_cg_parts(five, plan, KERNEL, marks.X, N, 0.05,
                                                        tol=1e-13, max_iter=300)
    assert info.converged
    # CG run to a residual of 1e-13 stops on rounding, not on the tolerance: every product
    # A v sums n rows in float64 (≤ n u |F_c|ᵀ|F_c| |v| off, whatever the parts and the BLAS
    # kernels), and κ(A) carries that into w: a floor of n u κ(A) ‖|F_c|ᵀ|F_c|‖ / ‖A‖ (8e-10
    # with the intercept, 1.1e-9 without). Measured 1e-10 to 1.1e-9 over OpenBLAS's Haswell,
    # SkylakeX and Sandybridge kernels; ten floors leave room for CG's iterations adding up.
    floor = 0.0
    for Fc in (F - F.mean(axis=0), F):                       # with and without intercept
        A = Fc.T @ Fc + 0.05 * np.eye(F.shape[1])
        floor = max(floor, F.shape[0] * np.finfo(float).eps / 2 * np.linalg.cond(A)
                    * np.linalg.norm(np.abs(Fc).T @ np.abs(Fc), 2) / np.linalg.norm(A, 2))
    assert floor < 2e-9                                      # the check stays sharp
    tol = 10 * floor
    assert rel(got, coef) < tol and got_c == pytest.approx(c, rel=tol)
    one = LocalParts(array_parts(X, y, 1))
    got1, _, info1 = parts_cg.nystrom_ridge_cg_parts(one, plan, KERNEL, marks.X, N, 0.05,
                                                      tol=1e-13, max_iter=300)
    assert info1.converged and rel(got1, got) < 2 * tol
    # without an intercept (plain Nyström KRR)
    coef0, c0 = feature_ridge(F, tr.y, 0.05, intercept=False)
    got0, got_c0, _ = parts_cg.nystrom_ridge_cg_parts(five, plan, KERNEL, marks.X, N, 0.05,
                                                       intercept=False, tol=1e-13,
                                                       max_iter=300)
    assert rel(got0, coef0) < tol and got_c0 == c0 == 0.0


PARAMS = {"kernel": "gaussian", "sigma": None, "samplers": ["uniform", "recursive-rls",
                                                            "rp-cholesky", "rff"],
          "sizes": "10,40,160", "rls_lams": "1", "protocol": "light", "trials": 3,
          "lam": 0.1, "eval_points": 400, "view": "pca", "seed": 0}


def partitioned(X, y, pieces):
    parts = LocalParts(array_parts(X, y, pieces))
    plan = standardize_plan(parts, RowPlan.split(0, X.shape[0], 0.25))
    return PartitionedData(parts, plan, [f"x{j}" for j in range(X.shape[1])], "y",
                           name="generated")


def last(iterator):
    result = None
    for item in iterator:
        result = item
    return result


def test_the_experiment_on_parts_measures_what_the_parts_hold(monkeypatch):
    # blocks of 250 rows: the four parts of 500 rows hold whole blocks
    monkeypatch.setattr(blocks, "ROW_BLOCK", 250)
    X, y = clusters(2000, p=5, seed=3)
    data = partitioned(X, y, 4)
    exp = NystromExperiment()
    params = dict(PARAMS)
    res = last(exp.run(params, data, Progress()))
    for name in PARAMS["samplers"]:
        spectral = res.table[f"spectral_median[{name}]"][:3]
        assert np.all(np.diff(spectral) < 0), (name, spectral)
    # n = 1500 training rows: their n × n matrix is formed, the exact-KRR line drawn
    # against the Nyström ridges, which approach it as s grows
    assert "note_exact" not in res.summaries
    exact = res.summaries["rmse_exact"]
    np.testing.assert_array_equal(res.table["rmse_exact"][:3], exact)
    for name in ("uniform", "recursive-rls", "rp-cholesky"):
        assert abs(res.table[f"rmse_median[{name}]"][2] / exact - 1) < 0.1, name
    assert np.isfinite(res.table["view_x"]).sum() == min(data.n_train, 5000)
    # the picture's landmarks: the smallest s of a leverage sampler
    assert np.isfinite(res.table["landmark_x"]).sum() == 10
    # the same data in one part: the same table, bit for bit
    res1 = last(exp.run(dict(params, trials=1), partitioned(X, y, 1), Progress()))
    res = last(exp.run(dict(params, trials=1), data, Progress()))
    assert res1.table.keys() == res.table.keys()
    for key in res.table:
        if not key.startswith("time"):
            np.testing.assert_array_equal(res1.table[key], res.table[key], err_msg=key)


def test_exact_rls_over_the_memory_budget_is_refused_naming_a_subsample(monkeypatch):
    """Exact RLS runs on partitions when the n × n work fits (tests/core/
    test_nystrom_parts_samplers.py); over the budget it is refused before any work, naming
    the data option subsample=N that fits."""
    X, y = clusters(300, p=2)
    data = partitioned(X, y, 2)
    params = dict(PARAMS, samplers=["uniform", "exact-rls"])
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", "1")
    with pytest.raises(MemoryBudgetError, match=r"subsample=N \(N ≤ \d+"):
        last(NystromExperiment().run(params, data, Progress()))


def test_recursion_depth_matches_the_in_memory_sampler():
    """Sanity of the level count: ⌈log2(n / s)⌉ halvings, as RecursiveRLSSampler makes."""
    assert parts_landmarks.rls_levels(900, 40) == math.ceil(math.log2(900 / 40))


@pytest.mark.parametrize("gather_rows", [50, 200])
def test_rls_levels_scored_per_part_equal_the_gathered_ones(rows, gather_rows):
    """Where a recursion level runs (gathered on the client, or per partition) does not
    change the landmarks: with few rows gathered, the middle levels run on the parts."""
    _, _, plan, one, five, _ = rows
    gathered = parts_landmarks.recursive_rls_landmarks(one, plan, KERNEL, 20, 9)
    on_parts = parts_landmarks.recursive_rls_landmarks(five, plan, KERNEL, 20, 9,
                                                       gather_rows=gather_rows)
    np.testing.assert_array_equal(gathered.index, on_parts.index)
    assert on_parts.lam == pytest.approx(gathered.lam, rel=1e-8)


class PickledParts(LocalParts):
    """LocalParts that sends every function, part and argument through pickle, as a Dask
    worker gets them (a closure or an unpicklable argument fails here)."""

    def map(self, fn, *args, progress=None, message=""):
        out = []
        for part in self.parts:
            f, p, a = pickle.loads(pickle.dumps((fn, part, args)))
            out.append(pickle.loads(pickle.dumps(f(p, *a))))
        return out


@pytest.mark.parametrize("name", (*SAMPLERS, "rff-orthogonal"))
def test_work_sent_to_workers_pickles(rows, name):
    X, y, plan, _, _, _ = rows
    pickled = PickledParts(array_parts(X, y, 3))
    one = LocalParts(array_parts(X, y, 3))          # the same arithmetic, in this process
    got = parts_ridge.make_features(name, pickled, plan, KERNEL, 20, seed=8)
    ref = parts_ridge.make_features(name, one, plan, KERNEL, 20, seed=8)
    if got.sample is not None:
        np.testing.assert_array_equal(got.sample.index, ref.sample.index)
    fit = parts_ridge.fit_ridge(pickled, plan, got, None)
    fit_ref = parts_ridge.fit_ridge(one, plan, ref, None)
    assert fit.lam == fit_ref.lam and rel(fit.coef, fit_ref.coef) < 1e-8
    if got.sample is not None:
        N = got.normalization
        coef, _, _ = parts_cg.nystrom_ridge_cg_parts(pickled, plan, KERNEL, got.landmarks, N,
                                                      0.1, tol=1e-12)
        coef_ref, _, _ = parts_cg.nystrom_ridge_cg_parts(one, plan, KERNEL, got.landmarks, N,
                                                          0.1, tol=1e-12)
        assert rel(coef, coef_ref) < 1e-8


def test_paper_protocol_on_parts_chooses_lambda_by_leave_one_out():
    X, y = clusters(900, p=3, seed=5)
    params = dict(PARAMS, protocol="paper", samplers=["uniform"], sizes="20,60")
    res = last(NystromExperiment().run(params, partitioned(X, y, 3), Progress()))
    lams = res.table["ridge_lam_median[uniform]"][:2]
    assert np.all(np.isfinite(lams)) and np.all(lams > 0)
    assert res.summaries["trials"] == 10 and res.summaries["statistic"] == "mean"


def test_cancel_stops_the_run_within_a_cell():
    """Cancel is checked inside a cell (before each recursion level and pass over the
    partitions), not only between cells."""
    X, y = clusters(900, p=3, seed=5)
    calls = []

    def report(fraction, message):
        calls.append((fraction, message))

    progress = Progress(report, is_cancelled=lambda: any("level" in m for _, m in calls))
    params = dict(PARAMS, samplers=["recursive-rls"], sizes="20", trials=1)
    with pytest.raises(Cancelled):
        last(NystromExperiment().run(params, partitioned(X, y, 3), progress))
    assert "level" in calls[-1][1]
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions)
