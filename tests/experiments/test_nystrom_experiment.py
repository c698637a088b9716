"""The nystrom experiment: samplers compared on generated and loaded data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kernel_lab.cli import main
from kernel_lab.core.errors import ParameterError
from kernel_lab.engine import run_experiment
from kernel_lab.experiments.nystrom import parse_sizes

SMALL = {"sizes": "10,20,40", "trials": 2, "eval_points": 400}


def test_results_per_sampler_and_s():
    partials = []
    r = run_experiment("nystrom", {**SMALL, "samplers": "uniform,recursive-rls,rp-cholesky"},
                       data="clusters:n=800,k=6,imbalance=3,spread=0.05",
                       on_partial=partials.append, workers=2)
    # a partial result after every cell, and after each trial of uniform sampling, whose
    # sizes nest (one draw and pass for all three)
    assert len(partials) == 1 + 2 * 3 * 2 + 2
    s = r.table["s"][np.isfinite(r.table["s"])]
    np.testing.assert_array_equal(s, [10, 20, 40])
    for name in ("uniform", "recursive-rls", "rp-cholesky"):
        med = r.table[f"spectral_median[{name}]"][:3]
        lo, hi = r.table[f"spectral_q25[{name}]"][:3], r.table[f"spectral_q75[{name}]"][:3]
        assert np.all(np.isfinite(med)) and np.all(lo <= med + 1e-12) and np.all(med <= hi + 1e-12)
        assert np.all(np.isfinite(r.table[f"rmse_median[{name}]"][:3]))
        assert np.all(r.table[f"time_median[{name}]"][:3] > 0)
    assert np.all(r.table["evals_median[uniform]"][:3] == np.array([10, 20, 40]) ** 2)
    # scalable samplers: O(n s) evaluations, far below n² = 640000
    assert np.all(r.table["evals_median[recursive-rls]"][:3] < 40 * 800 * np.array([10, 20, 40]))
    # leverage-type sampling wins on small isolated clusters at the larger s
    assert r.table["spectral_median[rp-cholesky]"][2] < r.table["spectral_median[uniform]"][2]
    assert r.summaries["eval_points"] == 400 and "subset" in r.summaries["note"]
    # the picture: every point, its score, the landmarks of one sampler
    vx = r.table["view_x"]
    assert np.isfinite(vx).sum() == 800 and np.isfinite(r.table["view_score"]).sum() == 800
    assert np.isfinite(r.table["landmark_x"]).sum() == 10


def test_same_seed_same_results():
    kw = {**SMALL, "samplers": "uniform,recursive-rls", "seed": 3}
    a = run_experiment("nystrom", kw, data="clusters:n=400", workers=1)
    b = run_experiment("nystrom", kw, data="clusters:n=400", workers=2)
    for key in ("spectral_median[uniform]", "spectral_median[recursive-rls]",
                "rmse_median[recursive-rls]"):
        np.testing.assert_allclose(a.table[key], b.table[key], rtol=1e-9)


def test_bad_sizes():
    assert list(parse_sizes("40, 10;20", 100)) == [10, 20, 40]
    with pytest.raises(ParameterError, match="more than the n = 100"):
        parse_sizes("10,200", 100)
    with pytest.raises(ParameterError, match="whole numbers"):
        parse_sizes("ten", 100)


@pytest.mark.parametrize("data", ["clusters:n=600", "diabetes"])
def test_cli_writes_the_contract_files(tmp_path, data):
    out = tmp_path / "ny"
    code = main(["run", "nystrom", "--data", data, "--set", "sizes=5,10,20", "--set",
                 "trials=1", "--set", "samplers=uniform,recursive-rls,exact-rls",
                 "--out", str(out), "-q"])
    assert code == 0
    doc = json.loads((out / "result.json").read_text())
    assert doc["experiment"] == "nystrom" and doc["data"]["name"] == data
    header = (out / "curves.csv").read_text().splitlines()[0].split(",")
    assert "spectral_median[exact-rls]" in header and "view_score" in header
    assert (out / "plot.png").stat().st_size > 20_000


def test_random_features_on_the_same_axes():
    """RFF and orthogonal RFF with s features beside the samplers: their error is that of
    the factor Z they form, and on clustered data far above leverage sampling."""
    from kernel_lab.core.approx_error import residual_norm
    from kernel_lab.core.kernels import GaussianKernel
    from kernel_lab.core.models.rff import RandomFourierFeatures
    from kernel_lab.core.rows.mapreduce import LocalParts, RowPlan, array_parts, take_rows
    from kernel_lab.core.rows.partitioned import PartitionedData
    from kernel_lab.experiments.nystrom_cells import CellInputs, CellTask, run_cell

    r = run_experiment("nystrom", {"sizes": "20,80", "trials": 1, "eval_points": 600,
                                   "samplers": ["recursive-rls", "rff", "rff-orthogonal"]},
                       data="clusters:n=600,k=6,imbalance=3,spread=0.05", workers=2)
    for name in ("rff", "rff-orthogonal"):
        err = r.table[f"spectral_median[{name}]"][:2]
        assert np.all(np.isfinite(err)) and np.all(np.isfinite(r.table[f"rmse_median[{name}]"][:2]))
        assert err[1] > 5 * r.table["spectral_median[recursive-rls]"][1], name
        assert r.table[f"evals_median[{name}]"][0] == 0  # no kernel evaluations
    # one cell against the literal computation
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(120, 3)), rng.normal(size=120)
    parts, plan = LocalParts(array_parts(X, y)), RowPlan.split(0, 120, 0.25)
    data = PartitionedData(parts, plan, ["a", "b", "c"], "y")
    train = take_rows(parts, plan, np.arange(120))
    kernel, seed = GaussianKernel(1.3), np.random.SeedSequence(4)
    rows = train.X[::2]
    inputs = CellInputs(data, kernel, 1.0, 0.0, rows, kernel(rows), train.X[:10],
                        train.y[:10], np.zeros(0, dtype=np.int64))
    Z = RandomFourierFeatures("gaussian", sigma=1.3, n_components=30, orthogonal=True,
                              random_state=seed).fit(X).transform(rows)
    assert run_cell(CellTask("rff-orthogonal", 30, None, seed, inputs))["spectral"] == (
        pytest.approx(residual_norm(kernel(rows), Z).value, rel=1e-12))

def test_orthogonal_features_need_a_rotation_invariant_kernel():
    with pytest.raises(ParameterError, match="rotation-invariant"):
        run_experiment("nystrom", {**SMALL, "kernel": "laplace",
                                   "samplers": ["uniform", "rff-orthogonal"]},
                       data="clusters:n=200")
