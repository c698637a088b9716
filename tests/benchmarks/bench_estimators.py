"""Benchmark: an estimator fitted on Dask arrays read from a Parquet folder stays small on
the client.

Run: ``python tests/benchmarks/bench_estimators.py [--rows 4000000] [--files 16]
[--landmarks 100]`` (the defaults are the target's size; ``--rows 1000000`` on a machine
whose cores others use).

The data: ``rows`` × 20 (+ target) as ``files`` Parquet files (``bench_cluster.py``'s
regression data, each file written from its own seeded blocks). A LocalCluster of 2
single-threaded workers with a 1 GB memory limit each (``bench_cluster.py``'s), its
scheduler in this process. The client is a child process, as a user's script: it opens the
folder with ``dask.dataframe.read_parquet``, takes the features and the target as Dask
arrays (``to_dask_array()``, chunk sizes unknown), fits ``NystromRidge(n_components=
landmarks)`` on them (the active client: the rows are fitted on the workers, chunk by
chunk), then computes the mean squared error of ``predict`` (a Dask array, computed
blockwise on the workers: only the error comes back). Figures: the client's peak resident
memory (``VmHWM``, the high-water mark of its own address space) — target under 500 MB —
and how much it grew from the moment it was connected (its imports: Dask, distributed,
pandas, pyarrow, scikit-learn) to the end, against the size of the rows (a gather alone
would add them all); the fit's and the prediction's times, and each worker's peak.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_cluster import WIDE, Judge, cluster, restart, workers_peak_mb, write_folder
from cluster_peer import peak_mb
from perfdoc import start  # this folder, first on the path of a script

#: The issue's target for the client process (MB).
CLIENT_MB = 500.0

#: The client: a user's script, run as its own process so that its peak is its own.
CLIENT = r"""
import json, sys, time
import dask.dataframe as dd
from distributed import Client
from kernel_lab.core.models import NystromRidge

address, folder, landmarks = sys.argv[1], sys.argv[2], int(sys.argv[3])


def peak_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


with Client(address) as client:
    ready = peak_mb()
    frame = dd.read_parquet(folder)
    features = [c for c in frame.columns if c != "y"]
    X, y = frame[features].to_dask_array(), frame["y"].to_dask_array()
    t0 = time.perf_counter()
    model = NystromRidge(n_components=landmarks, random_state=0).fit(X, y)
    fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    predictions = model.predict(X)
    mse = float(((predictions - y) ** 2).mean().compute())
    predict = time.perf_counter() - t0
    print(json.dumps({"fit": fit, "predict": predict, "mse": mse, "peak": peak_mb(),
                      "ready": ready, "chunks": len(X.chunks[0]),
                      "predicted_type": type(predictions).__module__ + "."
                      + type(predictions).__name__, "solver": model.solver_,
                      "landmarks": int(model.features_.landmarks_.shape[0])}))
"""


def main() -> None:
    rec = start(__file__, __doc__)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--landmarks", type=int, default=100)
    args = parser.parse_args()
    judge = Judge(rec)
    with tempfile.TemporaryDirectory() as tmp_name:
        folder = Path(tmp_name) / "rows"
        t0 = time.perf_counter()
        write_folder(folder, np.linspace(0, args.rows, args.files + 1).round().astype(int))
        size = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
        held = args.rows * (WIDE + 1) * 8 / 2**20
        print(f"{args.rows:,} × {WIDE} (+ target) as {args.files} Parquet files: {size:.0f} MB "
              f"on disk, {held:.0f} MB as float64 in memory; written in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        local, client = cluster(2)
        try:
            restart(client, 2)
            run = subprocess.run([sys.executable, "-c", CLIENT, local.scheduler_address,
                                  str(folder), str(args.landmarks)],
                                 capture_output=True, text=True, check=False,
                                 env={**os.environ, "PYTHONWARNINGS": "ignore"})
            if run.returncode != 0:
                print(run.stderr[-3000:], flush=True)
                raise SystemExit(f"the client failed (exit {run.returncode})")
            got = json.loads(run.stdout.strip().splitlines()[-1])
            workers = workers_peak_mb(client)
        finally:
            client.close()
            local.close()
    print(f"client: {got['chunks']} chunks, solver {got['solver']}, {got['landmarks']} "
          f"landmarks; predict gave a {got['predicted_type']}; training MSE "
          f"{got['mse']:.4f}; peak {got['ready']:.0f} MB once connected, before the data",
          flush=True)
    judge(f"client peak resident memory, NystromRidge().fit on {args.rows:,} rows as Dask "
          "arrays, 2 workers", got["peak"], "MB", CLIENT_MB)
    grown = got["peak"] - got["ready"]
    judge("client growth from connected to the end (peak − peak once connected)", grown,
          "MB")
    judge("client growth ÷ the rows as float64 (a gather alone would be ≥ 1)", grown / held,
          "×")
    judge(f"fit time ({args.rows:,} rows, {args.landmarks} landmarks, 2 workers)",
          got["fit"], "s")
    judge("predict of the Dask array and its mean squared error (blockwise) time",
          got["predict"], "s")
    for name, mb in sorted(workers.items()):
        judge(f"worker peak resident memory ({name})", mb, "MB")
    judge("this process's peak (the scheduler, the writer)", peak_mb(), "MB")
    rec.save()


if __name__ == "__main__":
    main()
