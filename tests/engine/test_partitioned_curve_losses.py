"""The learning curve on a folder of Parquet files kept in partitions, for every DSG loss:
six files of unequal sizes give the numbers of the same rows as one file, and the run goes
end to end through ``learning-curve`` (DSG, the baselines of its loss, the exact floor)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("pyarrow")

import pandas as pd

from kernel_lab.core.losses import CLASSIFICATION_LOSSES, MULTICLASS_LOSSES, REGRESSION_LOSSES
from kernel_lab.core.models.regularised import SOLVABLE_LOSSES
from kernel_lab.core.rows import blocks
from kernel_lab.engine.runner import run_experiment

N, P = 800, 4
CUTS = [0, 1, 260, 277, 530, 799, N]  # six files, one of a single row
CURVE = {"n_iter": 60, "batch_size": 16, "features_per_iter": 4, "points": 5, "seed": 3,
         "rff_max": 160}


def _rows(kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, size=(N, P))
    f = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 - 0.4
    if kind == "regression":
        return X, f + 0.1 * rng.normal(size=N)
    return X, np.where(f + 0.2 * rng.normal(size=N) > 0, 2.0, -3.0)  # two class labels


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], str]:
    """The rows of each kind as six Parquet files and as one."""
    out = {}
    for kind in ("regression", "classification"):
        X, y = _rows(kind)
        frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(P)]).assign(y=y)
        for files, cuts in ((6, CUTS), (1, [0, N])):
            path = tmp_path_factory.mktemp(f"{kind}{files}") / "rows"
            path.mkdir()
            for k, (a, b) in enumerate(itertools.pairwise(cuts)):
                frame.iloc[a:b].to_parquet(path / f"part-{k:02d}.parquet", index=False)
            out[kind, files] = str(path)
    return out


@pytest.mark.parametrize("loss", [*REGRESSION_LOSSES, *CLASSIFICATION_LOSSES,
                                  *MULTICLASS_LOSSES])
def test_every_loss_on_six_files_gives_the_numbers_of_one_file(folders, loss):
    kind = "regression" if loss in REGRESSION_LOSSES else "classification"
    params = dict(CURVE, loss=loss)
    with pytest.MonkeyPatch.context() as mp:
        # canonical blocks of 64 rows: the six files are read as 4 parts of whole blocks
        # (one per file in which a block starts), and every sum is taken per block
        mp.setattr(blocks, "ROW_BLOCK", 64)
        six = run_experiment("learning-curve", params,
                             data=f"{folders[kind, 6]}:partitions=keep")
        one = run_experiment("learning-curve", params,
                             data=f"{folders[kind, 1]}:partitions=keep")
    assert six.summaries["partitions"] == 4 and one.summaries["partitions"] == 1
    assert six.summaries["loss"] == loss and six.summaries["task"] == kind
    assert set(six.table) == set(one.table)
    # the same bits: canonical blocks, and the hinge's exact solver seeded
    for key in six.table:
        np.testing.assert_array_equal(six.table[key], one.table[key], err_msg=key)
    for key, value in six.summaries.items():
        if isinstance(value, float) and key != "partitions":
            other = one.summaries[key]
            assert value == other or (np.isnan(value) and np.isnan(other)), key
    t = six.table
    assert np.isfinite(t["dsg_test_error"]).all() and np.isfinite(t["dsg_train_loss"]).all()
    has = t["n_features"] <= 160
    solvable = loss in SOLVABLE_LOSSES
    # the baselines of DSG's own loss where the loss can be solved, and the exact floor
    # (n = 600 ≤ exact_max) with DSG's distance to it and its twin's excess objective
    for key in ("rff_test_error", "nystrom_test_error"):
        assert np.isfinite(t[key][has]).all() == solvable, key
        assert np.isnan(t[key][~has]).all(), key
    for key in ("krr_test_error", "dsg_floor_distance", "dsg_twin_excess_objective"):
        assert np.isfinite(t[key]).all() == solvable, key
    if solvable:
        assert "krr_test_error" in six.summaries
        assert np.all(t["dsg_floor_distance"] > 0)
    else:
        assert f"no exact floor for the {loss} loss" in six.summaries["floor_note"]
    if kind == "classification":  # a misclassification rate, and better than chance
        err = t["dsg_test_error"]
        assert np.all((err >= 0) & (err <= 1)) and err[-1] < 0.4
        assert six.summaries["error_measure"].startswith("misclassified")
    else:
        assert t["dsg_test_error"][-1] < np.var(_rows(kind)[1])


def test_a_classification_loss_on_a_dask_cluster_gives_the_numbers_of_this_process(folders):
    """The per-part functions of the classification run (the targets' pass, the gathered
    features, the floor's rows) travel to the workers: a two-worker cluster gives the
    numbers of the run in this process."""
    pytest.importorskip("distributed")
    from kernel_lab.engine.executors import DaskExecutor

    data = f"{folders['classification', 6]}:partitions=keep"
    params = dict(CURVE, loss="squared_hinge")
    local = run_experiment("learning-curve", params, data=data)
    ex = DaskExecutor(workers=2)
    try:
        remote = run_experiment("learning-curve", params, data=data, backend="dask",
                                scheduler=ex.client.scheduler.address)
    finally:
        ex.close()
    for key in local.table:
        np.testing.assert_allclose(remote.table[key], local.table[key], rtol=1e-8,
                                   atol=1e-12, equal_nan=True, err_msg=key)
    assert np.isfinite(remote.table["rff_test_error"][:2]).all()
