"""The nystrom experiment at scale: features streamed over row blocks give the numbers of
the features held whole; the error, test and picture subsets are seeded and stated; the
plan (estimate) follows the streamed run."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core.kernels import GaussianKernel
from kernel_lab.core.models.streaming import StreamedRidge
from kernel_lab.data.generators import generate
from kernel_lab.engine import run_experiment
from kernel_lab.experiments import get_experiment
from kernel_lab.experiments import nystrom as ny
from kernel_lab.experiments import nystrom_cells as cells
from kernel_lab.experiments.base import build_kernel
from kernel_lab.experiments.nystrom_cells import FIXED_LAMBDA, run_cell
from kernel_lab.experiments.nystrom_cost import cell_cost
from kernel_lab.experiments.nystrom_nested import NESTED, CellTask, run_nested
from kernel_lab.experiments.nystrom_picture import View, view_coordinates

CELL_KEYS = ("spectral", "trace", "evals", "rmse", "landmarks", "ridge_lam")


def _task(sampler, X, y, Xt, yt, kernel, lam, s=20, seed=3, **kw):
    rows = np.arange(0, X.shape[0], 3)
    return CellTask(sampler, s, np.random.SeedSequence(seed), X, y, Xt, yt, rows,
                    kernel(X[rows]), kernel, lam, **kw)


@pytest.mark.parametrize("sampler", ["uniform", "recursive-rls", "rp-cholesky", "rff",
                                     FIXED_LAMBDA])
@pytest.mark.parametrize("lam", [1.0, None])
@pytest.mark.parametrize("data", ["friedman", "clusters"])
def test_a_cell_streamed_over_row_blocks_equals_the_cell_held_whole(sampler, lam, data):
    """Blocks of 37 rows against one block: the same landmarks, errors and downstream fit
    (fixed λ and the paper protocol's leave-one-out) to rounding — on friedman data W is
    well conditioned (the sums are taken of k(X, S)), on tight clusters it is not (the
    features themselves are summed)."""
    if data == "friedman":
        d = generate("friedman", {"n": 600, "n_test": 150}, seed=1)
        kernel = GaussianKernel(2.0)
    else:
        d = generate("clusters", {"n": 600, "n_test": 150, "k": 5, "spread": 0.05}, seed=1)
        kernel = GaussianKernel(1.0)
    rls = 0.1 if sampler == FIXED_LAMBDA else None
    s = None if sampler == FIXED_LAMBDA else 20
    args = (sampler, d.X_train, d.y_train, d.X_test, d.y_test, kernel, lam)
    whole = run_cell(_task(*args, s=s, rls_lam=rls))
    streamed = run_cell(_task(*args, s=s, rls_lam=rls, block_rows=37))
    # leave-one-out on blocks comes from the eigendecomposition of F_cᵀF_c, not from an SVD
    # of F: a direction with singular value σ is known to about ε (σ_max/σ)², so a fit at a
    # small λ agrees to 1e-6 rather than to rounding (the λ chosen is the same)
    rel = 1e-6 if lam is None else 1e-8
    for key in CELL_KEYS:
        assert streamed[key] == pytest.approx(whole[key], rel=rel, abs=1e-9), key
    if whole["indices"] is not None:
        np.testing.assert_array_equal(streamed["indices"], whole["indices"])


def test_a_run_in_blocks_equals_the_run_held_whole(monkeypatch):
    """The whole experiment with tiny feature blocks: every table column but the times as
    with one block per cell for the samplers that keep a draw per size; the nested ones
    (one draw per trial once their sizes stream) as with other blocks that stream too."""
    params = {"sizes": "10,40", "trials": 2, "eval_points": 300,
              "samplers": ["uniform", "recursive-rls", "recursive-rls-fast", "rp-cholesky",
                           "rff"]}
    data = "friedman:n=1200,n_test=300"
    whole = run_experiment("nystrom", params, data=data, workers=2)
    runs = {}
    for entries in (2000, 4000):
        streamed = []
        monkeypatch.setattr(cells, "FEATURE_BLOCK_ENTRIES", entries)
        monkeypatch.setattr(cells, "STREAM_BLOCK_ENTRIES", entries // 2)
        monkeypatch.setattr(cells, "StreamedRidge",
                            lambda *a, _s=streamed: _s.append(a[3]) or StreamedRidge(*a))
        nested = []
        monkeypatch.setattr(cells, "run_nested", lambda t, _n=nested: _n.append(t.block_rows)
                            or run_nested(t))
        runs[entries] = run_experiment("nystrom", params, data=data, workers=2)
        # the cells of the two recursive-RLS samplers (2 sizes, 2 trials), streamed in
        # blocks of STREAM_BLOCK_ENTRIES; one nested trial per trial of the others, in
        # blocks of FEATURE_BLOCK_ENTRIES for the largest s
        assert sorted(set(streamed)) == [entries // 80, entries // 20]
        assert len(streamed) == 2 * 2 * 2
        assert nested == [entries // 40] * 3 * 2
    blocks = runs[2000]
    for key in whole.table:
        if key.startswith("time"):
            continue
        reference = (runs[4000] if any(f"[{n}]" in key for n in NESTED) else whole)
        np.testing.assert_allclose(blocks.table[key], reference.table[key], rtol=1e-8,
                                   atol=1e-10, err_msg=key)
    assert blocks.summaries == whole.summaries


def test_only_streamed_sizes_nest():
    """Small data: a cell per size and trial for every sampler, as before nesting."""
    partials = []
    run_experiment("nystrom", {"samplers": ["uniform", "rff"], "sizes": "10,40",
                               "trials": 2, "eval_points": 200},
                   data="friedman:n=800", on_partial=partials.append)
    assert len(partials) == 1 + 2 * 2 * 2


def test_large_data_use_stated_seeded_subsets(monkeypatch):
    """Above TEST_MAX test points and VIEW_MAX training points (lowered here) the test RMSE
    and the picture use seeded subsets, said in the summaries; the error subset is the
    one every earlier version drew, and the same seed draws the same subsets."""
    monkeypatch.setattr(ny, "TEST_MAX", 150)
    monkeypatch.setattr(ny, "VIEW_MAX", 400)
    params = {"sizes": "10,20", "trials": 1, "eval_points": 200,
              "samplers": ["uniform", "recursive-rls"], "seed": 4}
    data = "friedman:n=900,n_test=500"
    r = run_experiment("nystrom", params, data=data)
    s = r.summaries
    assert s["test_points"] == 150
    assert s["note_test"] == "test RMSE on a random subset of 150 of the 500 test points"
    assert s["note_view"] == "picture: a random subset of 400 of the 900 training points"
    assert "subset of 200 of the 900" in s["note"] and "use all 900" in s["note"]
    assert np.isfinite(r.table["view_x"]).sum() == 400
    assert np.isfinite(r.table["view_score"]).sum() == 400
    assert np.isfinite(r.table["landmark_x"]).sum() == 10
    again = run_experiment("nystrom", params, data=data)
    np.testing.assert_array_equal(again.table["view_x"], r.table["view_x"])
    np.testing.assert_array_equal(again.table["rmse_median[uniform]"],
                                  r.table["rmse_median[uniform]"])
    # the test RMSE is that of the subset: recompute one cell on it
    d = generate("friedman", {"n": 900, "n_test": 500}, seed=4)
    rng = np.random.default_rng(np.random.SeedSequence(4).spawn(1)[0])
    eval_rows = np.sort(rng.choice(900, size=200, replace=False))
    test_rows = np.sort(rng.choice(500, size=150, replace=False))
    kernel = build_kernel(get_experiment("nystrom").resolve(params), d.X_train)
    seed = np.random.SeedSequence(4).spawn(2 * 2 + 1)[1]
    cell = run_cell(CellTask("uniform", 10, seed, d.X_train, d.y_train, d.X_test[test_rows],
                             d.y_test[test_rows], eval_rows, kernel(d.X_train[eval_rows]),
                             kernel, 1.0))
    assert r.table["rmse_median[uniform]"][0] == pytest.approx(cell["rmse"], rel=1e-12)
    assert r.table["spectral_median[uniform]"][0] == pytest.approx(cell["spectral"],
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
    the split data and the streamed cells, no n³ exact reference among the operations, and
    a note saying how the run is made; at 3000 rows the exact reference is planned."""
    exp = get_experiment("nystrom")
    params = exp.resolve({})
    big = exp.estimate(params, 750_000, 20)
    assert 8 * 2 * 1_000_000 * 21 < big["memory_bytes"] < 1.0 * 2**30
    assert 1e11 < big["flops"] < 1e13
    assert "streamed" in big["note"] and "20000 test points" in big["note"]
    small = exp.estimate(params, 3000, 2)
    assert small["memory_bytes"] > 4 * 8 * 3000**2 and small["flops"] > 9 * 3000**3 / 4
    assert "streamed" not in small["note"]


def test_progress_follows_the_cells_cost_not_their_count():
    """A cell of 200 landmarks moves the bar more than one of 10 (operation counts, a
    cell's fixed cost included: here the whole runs took 35 and 28 ms, the cells about
    10 and 3 ms)."""
    partials = []
    run_experiment("nystrom", {"samplers": ["uniform"], "sizes": "10,200", "trials": 1,
                               "eval_points": 300}, data="clusters:n=600",
                   on_partial=lambda part: partials.append(part.fraction))
    steps = np.diff(partials[-3:])  # the two cells
    assert partials[-1] == pytest.approx(1.0) and steps[1] > 3 * steps[0]
    assert cell_cost(200, 450, 2, 300) > 3 * cell_cost(10, 450, 2, 300)
