"""Nested trials: one draw at the largest s and one pass give, at every s, the measures of
the features of the draw's prefix — which is the sampler's own draw at s — computed
densely here from the gathered rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernel_lab.core.approx_error import residual_norm
from kernel_lab.core.kernels import GaussianKernel
from kernel_lab.core.models.nystrom import nystrom_factor
from kernel_lab.core.models.rff import RandomFourierFeatures
from kernel_lab.core.nystrom.landmarks import uniform_landmarks
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows.mapreduce import LocalParts, RowPlan, array_parts, take_rows
from kernel_lab.core.rows.partitioned import PartitionedData
from kernel_lab.core.rows.prepare import standardize_plan
from kernel_lab.experiments.nystrom import NystromExperiment
from kernel_lab.experiments.nystrom_cells import CellInputs, downstream_ridge
from kernel_lab.experiments.nystrom_nested import NestedTask, run_nested

SIZES = (5, 12, 30)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(700, 3))
    y = np.cos(X[:, 0]) + X[:, 2] + 0.1 * rng.normal(size=700)
    parts = LocalParts(array_parts(X, y, [200, 500]))
    plan = standardize_plan(parts, RowPlan.split(1, 700, 0.25))
    d = PartitionedData(parts, plan, ["a", "b", "c"], "y")
    train = take_rows(parts, plan, np.arange(700))
    test = take_rows(parts, plan, np.arange(700), "test")
    return d, train, test


def _inputs(d, train, test, lam):
    kernel = GaussianKernel(1.5)
    X_eval = train.X[::3]
    return CellInputs(d, kernel, lam, float(kernel.diag(train.X).sum()), X_eval,
                      kernel(X_eval), test.X, test.y, np.zeros(0, dtype=np.int64))


def _dense(F, F_eval, F_test, inputs, train, test, lam):
    coef, intercept, chosen = downstream_ridge(F, train.y, lam)
    return {"spectral": residual_norm(inputs.K_eval, F_eval).value,
            "trace": inputs.diag - float(np.sum(F * F)),
            "rmse": float(np.sqrt(np.mean((F_test @ coef + intercept - test.y) ** 2))),
            "ridge_lam": chosen}


@pytest.mark.parametrize("sampler", ["uniform", "rff", "rff-orthogonal"])
@pytest.mark.parametrize("lam", [0.5, None])
def test_every_size_equals_a_dense_fit_on_its_own_draw(data, sampler, lam):
    d, train, test = data
    inputs = _inputs(d, train, test, lam)
    seed = np.random.SeedSequence(9)
    got = run_nested(NestedTask(sampler, SIZES, seed, inputs))
    kernel = inputs.kernel
    for s, res in zip(SIZES, got, strict=True):
        if sampler == "uniform":
            # the uniform draw of s with the same seed: its features span the same space
            # (F Fᵀ and the ridge's fit do not depend on the order or basis of the columns)
            marks = uniform_landmarks(d.parts, d.plan, s, seed).X
            N = nystrom_factor(kernel(marks))
            maps = [kernel(Z, marks) @ N for Z in (train.X, inputs.X_eval, test.X)]
            assert res["evals"] == s * s
        else:
            rff = RandomFourierFeatures("gaussian", sigma=1.5, n_components=SIZES[-1],
                                        orthogonal=sampler == "rff-orthogonal",
                                        random_state=seed).fit(train.X)
            scale = math.sqrt(SIZES[-1] / s)
            maps = [scale * rff.transform(Z)[:, :s] for Z in (train.X, inputs.X_eval,
                                                              test.X)]
            assert res["evals"] == 0
        ref = _dense(*maps, inputs, train, test, lam)
        tol = 1e-6 if lam is None else 1e-8  # LOO from F_cᵀF_c's eigenvectors vs an SVD
        for key, value in ref.items():
            assert res[key] == pytest.approx(value, rel=tol, abs=1e-9), (s, key)
        assert res["landmarks"] == s and res["time"] > 0


def test_a_run_nests_uniform_and_features_only_with_several_sizes(data):
    d, _, _ = data
    exp = NystromExperiment()
    base = {"samplers": ["uniform", "recursive-rls", "rff"], "trials": 2,
            "eval_points": 100, "seed": 3}
    many = list(exp.run(exp.resolve({**base, "sizes": "5,12,30"}), d, Progress()))
    # one nested trial per trial of uniform and rff, a cell per (s, trial) of RLS
    assert len(many) == 1 + 2 * 2 + 3 * 2
    one = list(exp.run(exp.resolve({**base, "sizes": "12"}), d, Progress()))
    assert len(one) == 1 + 3 * 2
    for name in ("uniform", "rff"):
        assert np.all(np.isfinite(many[-1].table[f"spectral_median[{name}]"][:3]))


@pytest.mark.parametrize("seed", range(4))
def test_an_ill_conditioned_prefix_gets_a_pass_of_its_own(seed):
    """40 points, each with a twin 1e-4 σ away (80 training rows): a prefix holding a point
    and its twin has a W whose kept eigenvalues span far more than 10⁶, so its features
    are summed themselves in the pass, not mapped from k(X, S). Which prefixes hold a pair
    depends on the draw, but 1 landmark never does and 45 always do (45 > 40 points): the
    test asks the draw, and every size equals the dense fit of its own draw."""
    from kernel_lab.experiments.nystrom_nested import _prefixes

    rng = np.random.default_rng(5)
    base, X_test = rng.normal(size=(40, 3)), rng.normal(size=(40, 3))
    X = np.vstack([base, base + 1e-4 * 1.5 / math.sqrt(3), X_test])  # rows i and 40 + i
    y = np.sin(X[:, 0]) + X[:, 1]
    parts = LocalParts(array_parts(X, y))
    d = PartitionedData(parts, RowPlan.given(120, 40), ["a", "b", "c"], "y")
    train = take_rows(parts, d.plan, np.arange(120))
    test = take_rows(parts, d.plan, np.arange(120), "test")
    sizes = (1, 12, 45)
    inputs = _inputs(d, train, test, 0.5)
    task = NestedTask("uniform", sizes, np.random.SeedSequence(seed), inputs)
    _, maps = _prefixes(task)
    paired = []
    for s, features in zip(sizes, maps, strict=True):
        drawn = uniform_landmarks(d.parts, d.plan, s, task.seed).index
        paired.append(np.unique(drawn % 40).size < s)  # a point and its twin
        assert not features.columns == paired[-1], s  # summed alone exactly when paired
    assert paired[0] is False and paired[-1] is True
    kernel = inputs.kernel
    scale = {"spectral": np.linalg.norm(inputs.K_eval, 2), "trace": inputs.diag,
             "rmse": np.sqrt(np.mean(test.y**2)), "ridge_lam": 0.5}
    for s, res, pair in zip(sizes, run_nested(task), paired, strict=True):
        marks = uniform_landmarks(d.parts, d.plan, s, task.seed).X
        N = nystrom_factor(kernel(marks))
        ref = _dense(*[kernel(Z, marks) @ N for Z in (train.X, inputs.X_eval, test.X)],
                     inputs, train, test, 0.5)
        # with a twin pair W's smallest kept eigenvalue is about 1e-9 of its largest, so
        # both computations are good to about cond · eps ≈ 3e-7 of the scale, not to 1e-14
        tol = 2e-6 if pair else 1e-9
        for key, value in ref.items():
            assert abs(res[key] - value) <= tol * scale[key], (s, key)
