"""
Doubly stochastic gradients on a folder of Parquet files, on a local Dask cluster
=================================================================================

Rows that do not fit in memory are kept where they are: a folder of Parquet files opened
with the data layer stays in its partitions (``partitions=keep``; a large folder does so
by itself), and the computations on it run on the workers of a Dask cluster, each reading
its own files — the rows never travel to this process. The script writes a small folder
of Friedman's function (one file per chunk of rows), starts a
:class:`distributed.LocalCluster` of two workers, opens the folder so that its
computations run there, and fits :class:`~kernel_lab.core.models.DSGRegressor` on it.
Every random choice about a row (the split, DSG's batches) is keyed by the seed and the
row's index, so the same rows read into memory give the same model: the script fits that
too and prints how far the two models' predictions are apart.

Needs the dask extra: ``pip install -e ".[dask]"``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from distributed import Client, LocalCluster

from kernel_lab.core.models import DSGRegressor
from kernel_lab.data.source import DataSource
from kernel_lab.engine.dask_parts import DaskParts

SMALL = os.environ.get("KERNEL_LAB_EXAMPLES_SMALL") == "1"   # the tests' quick size

ROWS, FILES = (20_000, 4) if SMALL else (200_000, 8)
SETTINGS = dict(nu=1e-5, n_iter=300 if SMALL else 1000, batch_size=64,
                n_features_per_iter=16, random_state=0)


# %%
# Write a folder of Parquet files
# -------------------------------
# Friedman's function on ten uniform inputs (only x1 … x5 matter) plus N(0, 1) noise.
def write_folder(folder: Path) -> None:
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i, chunk in enumerate(np.array_split(np.arange(ROWS), FILES)):
        X = rng.uniform(size=(chunk.size, 10))
        y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
             + 10 * X[:, 3] + 5 * X[:, 4] + rng.standard_normal(chunk.size))
        table = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(10)]).assign(y=y)
        table.to_parquet(folder / f"part.{i}.parquet", index=False)
    print(f"wrote {ROWS:,} rows in {FILES} Parquet files to {folder}")


# %%
# Fit on the partitions, on the cluster
# -------------------------------------
# ``make_parts`` says where the data set's computations run: here on the client's workers.
# The test rows are read (gathered) only to measure the error.
def fit_on_cluster(folder: Path) -> tuple[DSGRegressor, np.ndarray, np.ndarray]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        spec = f"{folder}:target=y,partitions=keep"
        data = DataSource.from_spec(spec).open(
            seed=0, make_parts=lambda parts: DaskParts(parts, client))
        print(f"{data.n_train:,} training and {data.n_test:,} test rows, kept in their "
              f"partitions, on {len(client.scheduler_info()['workers'])} workers")
        model = DSGRegressor(**SETTINGS).fit(data)
        return model, data.X_test, data.y_test


# %%
# The same rows in memory
# -----------------------
# Read whole (``partitions=load``), the same rows give the same split and, fitted as the
# data set (each row keeps its index in the files, which keys DSG's batches), the same
# model. Fitted on the bare arrays ``memory.X_train, memory.y_train`` DSG would key the
# batches by the rows' positions in the array instead: another, equally good, model.
def fit_in_memory(folder: Path) -> tuple[DSGRegressor, np.ndarray]:
    memory = DataSource.from_spec(f"{folder}:target=y,partitions=load").load(seed=0)
    return DSGRegressor(**SETTINGS).fit(memory), memory.X_test


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kernel-lab-example-") as tmp:
        folder = Path(tmp) / "friedman"
        write_folder(folder)
        model, X_test, y_test = fit_on_cluster(folder)
        pred = model.predict(X_test)
        print(f"DSG, {model.n_iter_} iterations of {SETTINGS['batch_size']} rows: test MSE "
              f"{np.mean((pred - y_test) ** 2):.3f} (noise variance 1; the target's "
              f"variance {y_test.var():.3f})")
        same, X_memory = fit_in_memory(folder)
        gap = np.max(np.abs(same.predict(X_memory) - pred))
        print(f"the same rows in memory: the two models' predictions differ by at most "
              f"{gap:.2e}")


# Dask starts its workers as new processes, which import this file again: the work runs
# only in the process started as a script.
if __name__ == "__main__":
    main()
