"""Benchmark: the scalable methods on a Dask cluster over partitioned data.

Run: ``python tests/benchmarks/bench_cluster.py [--rows 4000000] [--files 16]
[--reference-rows 1000000]``.

- Prints the machine probe first (``timing.Machine``: matmul, exp, the fastest ``eigh``
  of 1000 × 1000; the reference machine's is 187 ms).
- Writes ``rows`` × 20 (+ target) as ``files`` Parquet files (the regression data of
  ``bench_scale.py``, each file written from its own seeded block of rows, so the writer
  never holds more than one file).
- Starts a LocalCluster of 2 single-threaded workers with a 1 GB memory limit each and
  runs ``kernel-lab run nystrom --data FOLDER --backend dask --scheduler ADDRESS`` in a
  child process (the client), then ``learning-curve`` the same way: prints the time, the
  time per million rows, the client's peak resident memory (target < 500 MB) and each
  worker's (target: no process over 1.5 GB).
- The in-memory streaming path on ``reference-rows`` rows of the same data (one ``.npz``,
  the same parameters, the default backend) for the time per million rows, and the ratio.
- The equality check: a 20,000-row folder of 8 files, nystrom and learning-curve run in
  memory (one piece, this process) and on the cluster; the largest relative difference of
  every reported number (target ≤ 1e-8).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from perfdoc import Recording, start  # this folder, first on the path of a script

NYSTROM: list[str] = []  # the defaults, as the in-memory figures
CURVE: list[str] = []

RUN = r"""
import json, resource, subprocess, sys, time
cmd = [sys.executable, "-m", "kernel_lab", "run", *sys.argv[1:]]
t0 = time.perf_counter()
out = subprocess.run(cmd, capture_output=True, text=True, check=False)
print(json.dumps({"seconds": time.perf_counter() - t0, "returncode": out.returncode,
                  "peak_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                  "tail": out.stderr[-800:]}))
"""


def rows_of(start: int, stop: int, p: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``start … stop − 1`` of the benchmark's data (blocks of 2¹⁶ rows, each drawn
    from its own seed, so any range is the same wherever it is cut)."""
    block = 1 << 16
    Xs, ys = [], []
    for b in range(start // block, (stop - 1) // block + 1):
        rng = np.random.default_rng([0, b])
        X = rng.uniform(size=(block, p))
        y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
             + 10 * X[:, 3] + 5 * X[:, 4] + rng.normal(size=block))
        lo, hi = max(start - b * block, 0), min(stop - b * block, block)
        Xs.append(X[lo:hi])
        ys.append(y[lo:hi])
    return np.concatenate(Xs), np.concatenate(ys)


def write_folder(folder: Path, rows: int, files: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, rows, files + 1).round().astype(int)
    for k in range(files):
        X, y = rows_of(int(bounds[k]), int(bounds[k + 1]))
        columns = {f"x{j + 1}": X[:, j] for j in range(X.shape[1])}
        columns["y"] = y
        pq.write_table(pa.table(columns), folder / f"part-{k:03d}.parquet")


def run_child(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True,
                         check=False)
    return json.loads(out.stdout.strip().splitlines()[-1])


def workers_peak_mb(client) -> dict[str, float]:
    return {addr: kb / 1024 for addr, kb in client.run(
        lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).items()}


def report(rec: Recording, name: str, run: dict, rows: int,
           workers: dict[str, float] | None) -> float:
    if run["returncode"] != 0:
        print(f"{name:28s} FAILED: {run['tail']}")
        rec.figure(f"{name}: failed", float("nan"), "s per million rows")
        return float("nan")
    per_m = run["seconds"] / (rows / 1e6)
    line = (f"{name:28s} {run['seconds']:8.1f} s  ({per_m:6.1f} s per million rows), "
            f"client peak {run['peak_kb'] / 1024:6.0f} MB")
    if workers:
        line += ", workers' peak " + ", ".join(f"{v:.0f}" for v in workers.values()) + " MB"
    print(line)
    rec.figure(f"{name}, {rows:,} rows", run["seconds"], "s")
    rec.figure(f"{name}: client peak", run["peak_kb"] / 1024, "MB", 500)
    if workers:
        rec.figure(f"{name}: largest worker peak", max(workers.values()), "MB", 1536)
    return per_m


def equality(rec: Recording, tmp: Path, client_address: str) -> None:
    from kernel_lab.core.parts import (
        LocalParts,
        PartitionedData,
        RowPlan,
        array_parts,
        standardize_plan,
    )
    from kernel_lab.engine.runner import run_experiment

    rows = 20_000
    folder = tmp / "small"
    write_folder(folder, rows, 8)
    X, y = rows_of(0, rows)
    names = [f"x{j + 1}" for j in range(20)]
    for name, params in (("nystrom", {"samplers": ["uniform", "recursive-rls", "rp-cholesky",
                                                   "rff"], "trials": 1}),
                         ("learning-curve", {"loss": "squared"})):
        parts = LocalParts(array_parts(X, y, 1))
        plan = standardize_plan(parts, RowPlan.split(0, rows, 0.25))
        memory = run_experiment(name, params, data=PartitionedData(parts, plan, names, "y"))
        remote = run_experiment(name, params, data=f"{folder}:partitions=keep", backend="dask",
                                scheduler=client_address)
        worst = 0.0
        for key, a in memory.table.items():
            if "time" in key or key not in remote.table:
                continue
            b = remote.table[key]
            ok = np.isfinite(a) & np.isfinite(b)
            if ok.any():
                rel = np.abs(a[ok] - b[ok]) / np.maximum(np.abs(a[ok]), 1e-300)
                worst = max(worst, float(rel.max()))
        print(f"equality {name:16s} largest relative difference in memory vs cluster: "
              f"{worst:.1e} (target ≤ 1e-8){'' if worst <= 1e-8 else '  ← MISSED'}")
        rec.figure(f"{name}: largest relative difference, in memory vs cluster (20,000 rows)",
                   worst, "", 1e-8)


def main() -> None:
    rec = start(__file__, __doc__)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--reference-rows", type=int, default=1_000_000)
    parser.add_argument("--skip-reference", action="store_true")
    args = parser.parse_args()

    import dask
    from distributed import Client, LocalCluster


    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        folder = tmp / "rows"
        t0 = time.perf_counter()
        write_folder(folder, args.rows, args.files)
        size = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
        print(f"{args.rows:,} × 20 (+ target) as {args.files} Parquet files: {size:.0f} MB, "
              f"written in {time.perf_counter() - t0:.0f} s")
        data = str(folder)
        # as `dask worker --memory-limit 1GB` runs: Dask's own allocator settings (memory
        # returned to the system after each task), no profiler
        with dask.config.set({"distributed.worker.profile.enabled": False}), LocalCluster(
                n_workers=2, threads_per_worker=1, memory_limit="1GB", host="127.0.0.1",
                dashboard_address=None) as cluster, Client(cluster) as client:
            address = cluster.scheduler_address
            print(f"LocalCluster: 2 workers × 1 thread, memory limit 1 GB each ({address})")
            per_m = {}
            for name, extra in (("nystrom", NYSTROM), ("learning-curve", CURVE)):
                client.restart()  # each run's own peak on the workers
                run = run_child(name, "--data", data, "--backend", "dask", "--scheduler",
                                address, "--out", str(tmp / f"out-{name}"), "--no-plot", *extra)
                per_m[name] = report(rec, f"{name} on the cluster", run, args.rows,
                                     workers_peak_mb(client))
            if not args.skip_reference:
                X, y = rows_of(0, args.reference_rows)
                npz = tmp / "reference.npz"
                np.savez(npz, X=X, y=y)
                del X, y
                for name, extra in (("nystrom", NYSTROM), ("learning-curve", CURVE)):
                    run = run_child(name, "--data", str(npz), "--out",
                                    str(tmp / f"ref-{name}"), "--no-plot", *extra)
                    ref = report(rec, f"{name} in memory", run, args.reference_rows, None)
                    print(f"{'':28s} cluster / in-memory time per million rows: "
                          f"{per_m[name] / ref:.2f}×")
                    rec.figure(f"{name}: cluster ÷ in-memory time per million rows",
                               per_m[name] / ref, "×")
            equality(rec, tmp, address)
    rec.save()


if __name__ == "__main__":
    main()
