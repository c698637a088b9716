"""The nystrom experiment at scale: the error, test and picture subsets are keyed and
stated; the plan (estimate) follows the run; progress follows the cells' cost."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core.progress import Progress
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
from kernel_lab.engine import run_experiment
from kernel_lab.experiments import get_experiment
from kernel_lab.experiments import nystrom as ny
from kernel_lab.experiments.base import build_kernel
from kernel_lab.experiments.nystrom_cells import CellInputs, CellTask, cell_seed, run_cell
from kernel_lab.experiments.nystrom_cost import cell_cost
from kernel_lab.experiments.nystrom_picture import View, view_coordinates


def last(iterator):
    out = None
    for out in iterator:  # noqa: B007
        pass
    return out


def test_large_data_use_stated_keyed_subsets(monkeypatch):
    """Above TEST_MAX test points and VIEW_MAX training points (lowered here) the test RMSE
    and the picture use keyed subsets, said in the summaries; the same seed draws the
    same subsets, and the test RMSE is that of the subset."""
    monkeypatch.setattr(ny, "TEST_MAX", 150)
    monkeypatch.setattr(ny, "VIEW_MAX", 400)
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(1400, 5))
    y = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + X[:, 2] + rng.normal(size=1400)
    parts = LocalParts(array_parts(X, y, 3))
    data = PartitionedData(parts, standardize_plan(parts, RowPlan.split(4, 1400, 0.35)),
                           [f"x{j}" for j in range(5)], "y")
    n, n_test = data.n_train, data.n_test
    exp = get_experiment("nystrom")
    params = exp.resolve({"sizes": "10,20", "trials": 1, "eval_points": 200,
                          "samplers": ["uniform", "recursive-rls"], "seed": 4})
    r = last(exp.run(params, data, Progress()))
    s = r.summaries
    assert s["test_points"] == 150
    assert s["note_test"] == (f"test RMSE on a keyed random subset of 150 of the {n_test} "
                              "test points")
    assert s["note_view"].startswith(f"picture: a keyed random subset of 400 of the {n} ")
    assert f"subset of 200 of the {n}" in s["note"] and f"use all {n}" in s["note"]
    assert np.isfinite(r.table["view_x"]).sum() == 400
    assert np.isfinite(r.table["view_score"]).sum() == 400
    assert np.isfinite(r.table["landmark_x"]).sum() == 10
    again = last(exp.run(params, data, Progress()))
    np.testing.assert_array_equal(again.table["view_x"], r.table["view_x"])
    np.testing.assert_array_equal(again.table["rmse_median[recursive-rls]"],
                                  r.table["rmse_median[recursive-rls]"])
    # the test RMSE is that of the keyed test subset: recompute one cell on it
    plan = data.plan
    test = take_rows(parts, plan, keyed_subset(parts, plan, rowkeys.TEST_SUBSET, 150,
                                               "test"), "test")
    ev = take_rows(parts, plan, keyed_subset(parts, plan, rowkeys.EVAL_SUBSET, 200))
    train = take_rows(parts, plan, np.arange(1400))
    kernel = build_kernel(params, train.X)  # σ: every training row (fewer than 1000)
    inputs = CellInputs(data, kernel, 1.0, float(kernel.diag(train.X).sum()), ev.X,
                        kernel(ev.X), test.X, test.y, np.zeros(0, dtype=np.int64))
    cell = run_cell(CellTask("recursive-rls", 10, None,
                             cell_seed(4, "recursive-rls", 0, 10), inputs))
    assert r.table["rmse_median[recursive-rls]"][0] == pytest.approx(cell["rmse"], rel=1e-12)
    assert r.table["spectral_median[recursive-rls]"][0] == pytest.approx(cell["spectral"],
                                                                         rel=1e-12)


def test_the_picture_of_a_subset_uses_the_principal_axes_of_all_points():
    X = np.random.default_rng(0).normal(size=(3000, 4)) @ np.diag([5.0, 2.0, 1.0, 0.5]) + 7.0
    rows = np.arange(0, 3000, 7)
    view = View(X, "pca", rows)
    x, y = view_coordinates(X, "pca")
    for got, ref in ((view.x, x[rows]), (view.y, y[rows])):  # equal up to the axis sign
        assert min(np.abs(got - ref).max(), np.abs(got + ref).max()) < 1e-9
    lx, ly = view.coordinates(np.array([3, 5]))
    assert min(abs(lx[0] - x[3]), abs(lx[0] + x[3])) < 1e-9
    assert min(abs(ly[1] - y[5]), abs(ly[1] + y[5])) < 1e-9
    feats = View(X, "features", rows)
    np.testing.assert_array_equal(feats.x, X[rows, 0])
    whole = View(X, "pca", None)
    np.testing.assert_array_equal(whole.x, x)


def test_the_plan_of_a_million_rows():
    """1M × 20 with the defaults (750 000 training rows): a plan below 1.5 GB that counts
    the split data and the cells summing over row blocks, no n³ exact reference among the
    operations, and a note saying how the run is made; at 3000 rows the exact reference
    is planned."""
    exp = get_experiment("nystrom")
    params = exp.resolve({})
    big = exp.estimate(params, 750_000, 20)
    assert 8 * 2 * 1_000_000 * 21 < big["memory_bytes"] < 1.0 * 2**30
    assert 1e11 < big["flops"] < 1e13
    assert "summed over row blocks" in big["note"] and "20000 test points" in big["note"]
    small = exp.estimate(params, 3000, 2)
    assert small["memory_bytes"] > 4 * 8 * 3000**2 and small["flops"] > 9 * 3000**3 / 4
    assert "summed over row blocks" not in small["note"]


def test_progress_follows_the_cells_cost_not_their_count():
    """A cell of 200 landmarks moves the bar more than one of 10 (operation counts, a
    cell's fixed cost included; RP-Cholesky keeps a cell per size)."""
    partials = []
    run_experiment("nystrom", {"samplers": ["rp-cholesky"], "sizes": "10,200", "trials": 1,
                               "eval_points": 300}, data="clusters:n=600",
                   on_partial=lambda part: partials.append(part.fraction))
    steps = np.diff(partials[-3:])  # the two cells
    assert partials[-1] == pytest.approx(1.0) and steps[1] > 3 * steps[0]
    assert cell_cost(200, 450, 2, 300) > 3 * cell_cost(10, 450, 2, 300)
