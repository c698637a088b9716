"""The learning curve on a Dask cluster: the baselines' sums and DSG's test sums overlap
DSG's training.

On a cluster the squared-loss baselines' normal-sums pass runs in a thread that waits for
the workers while the client trains DSG (``experiments/learning_curve_fits.py``,
``Baselines`` with ``later``), and so do DSG's test sums at the curve points
(``TestErrors``). The numbers are those of this process (checked bit for bit by
``tests/engine/test_same_numbers.py``); here: the baselines of every curve point are there
at the end, and a run cancelled while the pass runs stops it and leaves no thread behind.
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest

from kernel_lab.core.progress import Cancelled
from kernel_lab.engine.runner import run_experiment

pytest.importorskip("distributed")

PARAMS = {"loss": "squared", "n_iter": 60, "points": 6, "exact_max": 0}


@pytest.fixture(scope="module")
def cluster():
    from kernel_lab.engine.executors import DaskExecutor

    ex = DaskExecutor(workers=2)
    yield ex.client.scheduler.address
    ex.close()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(5)
    root = tmp_path_factory.mktemp("curve")
    for k in range(6):
        X = rng.normal(size=(700, 4))
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(4)])
        frame["y"] = np.sin(X[:, 0]) + 0.1 * rng.normal(size=700)
        frame.to_parquet(root / f"part-{k}.parquet")
    return str(root)


def _sum_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate()
            if t.name.startswith(("baseline-sums", "dsg-test-sums"))]


def test_the_overlapped_baselines_fill_every_curve_point(folder, cluster) -> None:
    here = run_experiment("learning-curve", PARAMS, data=f"{folder}:partitions=load")
    there = run_experiment("learning-curve", PARAMS, data=f"{folder}:partitions=keep",
                           backend="dask", scheduler=cluster)
    for key in ("rff_test_error", "nystrom_test_error", "dsg_test_error"):
        a, b = np.asarray(here.table[key]), np.asarray(there.table[key])
        assert np.isfinite(a).sum() >= 2, key  # the baselines are measured at a few points
        assert np.array_equal(a, b, equal_nan=True), key
    # DSG's test sums, evaluated on the workers while the client trains, fill every point
    assert np.isfinite(there.table["dsg_test_error"]).all()
    assert not _sum_threads()


def test_a_run_cancelled_during_the_sums_pass_stops_it(folder, cluster) -> None:
    seen: list[str] = []
    stop = threading.Event()

    def on_partial(partial) -> None:
        seen.append(partial.message)
        if partial.message == "training":  # the pass starts with DSG's first iterations
            stop.set()

    with pytest.raises(Cancelled):
        run_experiment("learning-curve", PARAMS, data=f"{folder}:partitions=keep",
                       backend="dask", scheduler=cluster, on_partial=on_partial,
                       is_cancelled=stop.is_set)
    assert seen[-1] == "training"  # cancelled before the first curve point
    assert not _sum_threads()
