"""The one run of the ``nystrom`` experiment: the same bits whatever the layout of the rows
and however its cells run; every cell keeps its draws when sizes or samplers are added;
the n × n references (exact-KRR line, d_eff) by size rule, equal to brute force; the cost
model counts Algorithm 2 at the landmarks it draws."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core.errors import MemoryBudgetError
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import blocks
from kernel_lab.core.rows.mapreduce import (
    LocalParts,
    RowPlan,
    array_parts,
    keyed_subset,
    take_rows,
)
from kernel_lab.core.rows.partitioned import PartitionedData
from kernel_lab.core.rows.prepare import standardize_plan
from kernel_lab.engine.executors import ThreadExecutor
from kernel_lab.experiments import nystrom_cost
from kernel_lab.experiments.base import build_kernel
from kernel_lab.experiments.nystrom import BANDWIDTH_ROWS, NystromExperiment
from kernel_lab.experiments.nystrom_cells import FIXED_LAMBDA, cell_seed
from kernel_lab.experiments.nystrom_table import EXACT_CV_MAX_N, EXACT_MAX_N

BLOCK = 128
N = 1100


def rows(n: int = N, p: int = 3, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.arange(1, p + 1)
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def as_data(X: np.ndarray, y: np.ndarray, pieces=1) -> PartitionedData:
    parts = LocalParts(array_parts(X, y, pieces))
    plan = standardize_plan(parts, RowPlan.split(3, X.shape[0], 0.25))
    return PartitionedData(parts, plan, [f"x{j}" for j in range(X.shape[1])], "y")


def last(iterator):
    out = None
    for out in iterator:  # noqa: B007
        pass
    return out


def numbers(result) -> dict[str, np.ndarray]:
    out = {k: np.asarray(v, float) for k, v in result.table.items()
           if not k.startswith("time")}
    out.update({k: np.asarray(v, float) for k, v in result.summaries.items()
                if isinstance(v, float | int) and k != "partitions"})
    return out


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "ROW_BLOCK", BLOCK)


PARAMS = {"samplers": ["uniform", "exact-rls", "recursive-rls", "recursive-rls-fast",
                       FIXED_LAMBDA, "rp-cholesky", "rff"],
          "sizes": "8,30", "rls_lams": "3,0.3", "trials": 2, "eval_points": 300, "lam": 0.1,
          "seed": 5}


def test_the_same_bits_whatever_the_parts_and_the_executor(small_blocks):
    """One part run cell after cell, and the same rows in parts cut at block boundaries
    run on two threads: every table column and numeric summary identical."""
    X, y = rows()
    exp = NystromExperiment()
    params = exp.resolve(PARAMS)
    one = last(exp.run(params, as_data(X, y), Progress()))
    many = last(exp.run(params, as_data(X, y, [BLOCK, 3 * BLOCK, N - 4 * BLOCK]),
                        Progress(), ThreadExecutor(2)))
    threads = last(exp.run(params, as_data(X, y), Progress(), ThreadExecutor(2)))
    a = numbers(one)
    for other in (numbers(many), numbers(threads)):
        assert a.keys() == other.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], other[key], err_msg=key)


def test_adding_a_size_or_a_sampler_keeps_every_other_cell(small_blocks):
    """Seeds per cell (run seed, sampler, trial; s for samplers that do not nest): the
    cells of a smaller run are the same bits in a larger one."""
    X, y = rows()
    exp = NystromExperiment()
    small = last(exp.run(exp.resolve({**PARAMS, "samplers": ["uniform", "recursive-rls"],
                                      "sizes": "8,30"}), as_data(X, y), Progress()))
    big = last(exp.run(exp.resolve({**PARAMS, "samplers": ["rp-cholesky", "uniform",
                                                           "recursive-rls"],
                                    "sizes": "8,20,30"}), as_data(X, y), Progress()))
    for name in ("uniform", "recursive-rls"):
        for col in ("spectral", "rmse", "trace", "evals"):
            got = big.table[f"{col}_median[{name}]"][[0, 2]]
            np.testing.assert_array_equal(got, small.table[f"{col}_median[{name}]"][:2])
    assert cell_seed(5, "uniform", 0, 8).entropy == cell_seed(5, "uniform", 0, 30).entropy
    assert cell_seed(5, "recursive-rls", 0, 8).entropy != cell_seed(5, "recursive-rls", 0,
                                                                     30).entropy
    assert cell_seed(5, "uniform", 1).entropy != cell_seed(5, "uniform", 0).entropy


def _brute_ridge(K: np.ndarray, K_test: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """Kernel ridge with an unpenalised intercept, by its normal equations:
    min ‖y − b − Kα‖² + λ αᵀKα ⇔ (HK + λI) α = H y, b = mean(y − Kα)."""
    n = y.size
    H = np.eye(n) - 1.0 / n
    alpha = np.linalg.solve(H @ K + lam * np.eye(n), H @ y)
    return K_test @ alpha + np.mean(y - K @ alpha)


def test_exact_line_and_d_eff_equal_brute_force_on_the_gathered_rows():
    X, y = rows(900)
    data = as_data(X, y, [300, 600])
    exp = NystromExperiment()
    params = exp.resolve({**PARAMS, "samplers": ["uniform", FIXED_LAMBDA]})
    res = last(exp.run(params, data, Progress()))
    n = data.n_train
    train = take_rows(data.parts, data.plan, keyed_subset(data.parts, data.plan, 0, n))
    test = take_rows(data.parts, data.plan, np.arange(X.shape[0]), "test")
    assert train.index.size == n and test.index.size == data.n_test
    # σ: the median heuristic on every training row (there are fewer than BANDWIDTH_ROWS)
    assert n <= BANDWIDTH_ROWS
    kernel = build_kernel(params, train.X)
    pred = _brute_ridge(kernel(train.X), kernel(test.X, train.X), train.y, 0.1)
    rmse = float(np.sqrt(np.mean((pred - test.y) ** 2)))
    assert res.summaries["rmse_exact"] == pytest.approx(rmse, rel=1e-7)
    e = np.clip(np.linalg.eigvalsh(kernel(train.X)), 0.0, None)
    for lam in (3.0, 0.3):
        assert res.summaries[f"d_eff[λ={lam:g}]"] == pytest.approx(np.sum(e / (e + lam)),
                                                                   rel=1e-8)


def test_the_n_by_n_references_follow_size_rules(monkeypatch):
    """Above EXACT_MAX_N training rows (lowered here) neither the line nor d_eff, and a
    note saying why; over the memory budget the gather is refused naming subsample=N."""
    from kernel_lab.experiments import nystrom as ny

    X, y = rows(600)
    exp = NystromExperiment()
    params = exp.resolve({**PARAMS, "samplers": ["uniform", FIXED_LAMBDA]})
    monkeypatch.setattr(ny, "EXACT_MAX_N", 400)
    res = last(exp.run(params, as_data(X, y), Progress()))
    assert "rmse_exact" not in res.summaries and "rmse_exact" not in res.table
    assert not any(k.startswith("d_eff") for k in res.summaries)
    assert "n × n kernel matrix" in res.summaries["note_exact"]
    assert "400" in res.summaries["note_exact"]
    monkeypatch.setattr(ny, "EXACT_MAX_N", EXACT_MAX_N)
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", "1")
    with pytest.raises(MemoryBudgetError, match="subsample=N"):
        last(exp.run(exp.resolve({**PARAMS, "samplers": ["uniform"]}), as_data(X, y),
                     Progress()))


def test_the_cost_model_counts_algorithm_2_at_its_estimated_landmarks():
    """Algorithm 2 at λ draws about d_eff(λ)·log landmarks, not max(sizes): the estimate
    grows as λ falls and with n, and a run of it at small λ is planned dearer than at
    large λ."""
    n, p = 269_000, 10
    assert nystrom_cost.fixed_lambda_size(n, 10.0) == pytest.approx(1950, rel=0.05)
    assert nystrom_cost.fixed_lambda_size(500, 1e-6) == 500
    base = {"samplers": [FIXED_LAMBDA], "sizes": "10", "trials": 1, "eval_points": 500}
    cheap = nystrom_cost.estimate({**base, "rls_lams": "100"}, n, p)["flops"]
    dear = nystrom_cost.estimate({**base, "rls_lams": "1"}, n, p)["flops"]
    assert dear > 10 * cheap
    assert "Algorithm 2" in nystrom_cost.estimate({**base, "rls_lams": "1"}, n, p)["note"]
    assert nystrom_cost.cell_cost(None, n, p, 500, 1.0) > nystrom_cost.cell_cost(
        None, n, p, 500, 100.0)
    assert EXACT_CV_MAX_N <= EXACT_MAX_N
