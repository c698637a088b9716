"""Benchmark: does a Dask cluster pay for the scalable methods on partitioned data?

Run: ``python tests/benchmarks/bench_cluster.py [--rows 4000000] [--files 16]
[--only nystrom,curve,peer,keep,small]`` (the defaults are the targets' sizes; a small run,
e.g. ``--rows 200000 --keep-rows 100000``, checks that every section works).

Prints the machine probe first (``timing.Machine``), then each figure as ``figure …
target … MET/MISSED``. The data: ``rows`` × 20 (+ target) as ``files`` Parquet files (the
regression data of ``bench_scale.py``; each file written from its own seeded blocks, so the
writer never holds more than one file). Every ``kernel-lab run`` is a child process (the
client), with the experiment's defaults; a cluster is a LocalCluster of single-threaded
workers with a 1 GB memory limit each, restarted before each run so that each worker's peak
memory is that run's.

- ``nystrom`` and ``curve`` (``learning-curve``): (a) the folder kept in its partitions on 2
  workers against the same command in memory on ``reference-rows`` (default rows / 4) of the
  same data as one ``.npy`` on one worker (``--workers 1``: its cells one after another, one
  BLAS thread): time ≤ 2.6× (4× the rows on 2× the workers, 30 % overhead). The same command
  on every core is printed too, with its CPU seconds: in memory the cells already run on all
  the machine's cores, so on a 2-core machine the 2 workers have no more cores than it had,
  and 4× its rows cannot take less than about 4× its time;
  (b) 1 worker against 2: speed-up ≥ 1.7×; (d) peak memory: no process over 1.5 GB, the
  client under 500 MB.
- ``peer``: (e) the hand-written Dask uniform-Nyström ridge of ``cluster_peer.py``
  (what it computes is said there) against Kernel Lab's ``NystromRidge`` on the same folder
  and 2-worker cluster: time ≤ 1.0×, coefficients equal to 1e-8.
- ``keep``: (f) ``keep-rows`` × 12 rows in 8 Parquet files of unequal sizes,
  ``--partitions keep --backend dask`` on 2 workers, against the same rows as one ``.npy``
  in memory: every number of the ``nystrom`` table equal to 1e-8 relative, time ≤ 1.3×.
- ``small``: (g) 20,000 rows in 8 files, ``nystrom`` and ``learning-curve`` in memory (one
  ``.npy``, this process) and on the 2-worker cluster: every number within 1e-8 relative.
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

import cloudpickle
import cluster_peer
import numpy as np
from cluster_peer import peak_mb
from perfdoc import Recording, start  # this folder, first on the path of a script

HERE = Path(__file__).resolve().parent
# peak_mb travels to the workers by value (they need not import this folder)
cloudpickle.register_pickle_by_value(cluster_peer)
SECTIONS = ("nystrom", "curve", "peer", "keep", "small")
EXPERIMENTS = {"nystrom": "nystrom", "curve": "learning-curve"}
#: Targets of the issue (ratios measured in the same run: not scaled by the probe).
CLUSTER_RATIO, SPEED_UP, PEER_RATIO, KEEP_RATIO = 2.6, 1.7, 1.0, 1.3
PROCESS_MB, CLIENT_MB, EQUAL = 1536.0, 500.0, 1e-8
#: Widths: the main data, the ``keep`` data.
WIDE, NARROW = 20, 12
#: Rows per file of the ``keep`` folder, as shares of its rows (8 files, unequal).
KEEP_SHARES = (0.02, 0.21, 0.07, 0.16, 0.005, 0.245, 0.09, 0.2)

#: A child that runs ``kernel-lab run`` as its own child and reports that one's peak memory:
#: ``ru_maxrss`` survives fork and exec, so the run is started from this small process, not
#: from the benchmark's (hundreds of MB, which the run would report as its own).
RUN = r"""
import json, resource, subprocess, sys, time
cmd = [sys.executable, "-m", "kernel_lab", "run", *sys.argv[1:]]
t0 = time.perf_counter()
out = subprocess.run(cmd, capture_output=True, text=True, check=False)
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": time.perf_counter() - t0, "returncode": out.returncode,
                  "peak_kb": used.ru_maxrss, "cpu": used.ru_utime + used.ru_stime,
                  "tail": out.stderr[-1200:]}))
"""


def rows_of(start: int, stop: int, p: int = WIDE) -> tuple[np.ndarray, np.ndarray]:
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


def write_folder(folder: Path, bounds: np.ndarray, p: int = WIDE) -> None:
    """Files ``part-000.parquet`` … with rows ``bounds[k] … bounds[k + 1] − 1``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for k in range(len(bounds) - 1):
        X, y = rows_of(int(bounds[k]), int(bounds[k + 1]), p)
        columns = {f"x{j + 1}": X[:, j] for j in range(p)}
        columns["y"] = y
        pq.write_table(pa.table(columns), folder / f"part-{k:03d}.parquet")


def write_npy(path: Path, rows: int, p: int = WIDE) -> None:
    """The first ``rows`` rows as one ``.npy`` (features, then the target), written block by
    block into a memory-mapped file."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(rows, p + 1))
    step = 1 << 18
    for a in range(0, rows, step):
        X, y = rows_of(a, min(a + step, rows), p)
        out[a:a + X.shape[0], :p] = X
        out[a:a + X.shape[0], p] = y
    out.flush()
    del out


def run_child(*args: str, timeout: float = 4 * 3600) -> dict:
    """``kernel-lab run ARGS`` in a child process: its time, exit code and peak memory."""
    try:
        out = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True,
                             text=True, check=False, timeout=timeout)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError) as exc:
        return {"seconds": float("nan"), "returncode": -1, "peak_kb": 0, "cpu": float("nan"),
                "tail": f"{type(exc).__name__}: {exc}"}


def restart(client, workers: int) -> None:
    """Restart the workers (each run's own peak memory), waiting as long as a loaded machine
    needs for them to come back."""
    try:
        client.restart(timeout=600)
    except TimeoutError:
        client.wait_for_workers(workers, timeout=600)


def workers_peak_mb(client) -> dict[str, float]:
    """Each worker's peak resident memory since it started (MB)."""
    return dict(client.run(peak_mb))


class Judge:
    """Records every figure and prints it: ``figure … target … MET/MISSED``."""

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        self.processes: list[tuple[str, float]] = []  # (which, peak MB) for (d)
        self.clients: list[tuple[str, float]] = []

    def __call__(self, what: str, value: float, unit: str, target: float | None = None,
                 at_most: bool = True) -> float:
        fig = self.rec.figure(what, value, unit, target, at_most=at_most)
        shown = f"{value:.3g}" if abs(value) < 1e-2 or abs(value) >= 1e4 else f"{value:.2f}"
        line = f"{what}: {shown} {unit}".rstrip()
        if target is not None:
            line += (f"   target {'≤' if at_most else '≥'} {target:g} {unit}".rstrip()
                     + f"   {'MET' if fig.met else 'MISSED'}")
        print(line, flush=True)
        return value

    def run(self, name: str, run: dict, rows: int, workers: dict[str, float] | None
            ) -> float:
        """A child run's time (NaN when it failed: its error is printed). A run on a
        cluster (``workers`` given) counts for (d); one in memory is printed only."""
        if run["returncode"] != 0:
            print(f"{name}: FAILED ({run['returncode']}): {run['tail']}", flush=True)
            return self(f"{name} ({rows:,} rows): failed", float("nan"), "s")
        client = run["peak_kb"] / 1024
        if workers is not None:
            self.clients.append((name, client))
            self.processes.append((f"{name}, client", client))
        for k, mb in enumerate((workers or {}).values()):
            self.processes.append((f"{name}, worker {k + 1}", mb))
        peaks = "" if not workers else (
            "; workers' peaks " + ", ".join(f"{v:.0f}" for v in workers.values()) + " MB")
        print(f"  ({name}: client peak {client:.0f} MB{peaks}; the client's CPU "
              f"{run['cpu']:.1f} s)", flush=True)
        return self(f"{name} ({rows:,} rows)", run["seconds"], "s")


def cluster(workers: int):
    """A LocalCluster of ``workers`` single-threaded workers, 1 GB each, and its client."""
    import dask
    from distributed import Client, LocalCluster

    # as `dask worker --nthreads 1 --memory-limit 1GB` runs: no profiler
    dask.config.set({"distributed.worker.profile.enabled": False})
    local = LocalCluster(n_workers=workers, threads_per_worker=1, memory_limit="1GB",
                         host="127.0.0.1", dashboard_address=":0")
    print(f"LocalCluster: {workers} worker(s) × 1 thread, memory limit 1 GB each "
          f"({local.scheduler_address})", flush=True)
    return local, Client(local)


def on_cluster(judge: Judge, client, workers: int, folder: str, rows: int, out: Path,
               sections: list[str]) -> dict[str, float]:
    """Each chosen experiment on the kept folder on this cluster of ``workers``: its time."""
    address = client.scheduler.address
    label = f"{workers} worker{'s' if workers > 1 else ''}"
    times = {}
    for section in sections:
        name = EXPERIMENTS[section]
        restart(client, workers)
        run = run_child(name, "--data", folder, "--partitions", "keep", "--backend", "dask",
                        "--scheduler", address, "--out", str(out / f"{label}-{name}"),
                        "--no-plot", "--quiet")
        times[section] = judge.run(f"{name}, {label}", run, rows, workers_peak_mb(client))
    return times


def table_difference(a: Path, b: Path) -> tuple[float, int]:
    """The largest relative difference between two runs' tables (``result.json``) and the
    number of values compared; time columns and the partition count are left out."""
    ta = json.loads((a / "result.json").read_text())["table"]
    tb = json.loads((b / "result.json").read_text())["table"]
    worst, count = 0.0, 0
    for key, va in ta.items():
        if "time" in key or "partition" in key:
            continue
        x = np.asarray(va, dtype=float)
        y = np.asarray(tb.get(key, []), dtype=float)
        if x.shape != y.shape:
            return float("inf"), count
        same_nan = np.isnan(x) == np.isnan(y)
        if not same_nan.all():
            return float("inf"), count
        ok = np.isfinite(x)
        rel = np.abs(x[ok] - y[ok]) / np.maximum(np.abs(x[ok]), 1e-300)
        worst = max(worst, float(rel.max(initial=0.0)))
        count += int(x.size)
    return worst, count


def section_peer(judge: Judge, address: str, folder: str, args: argparse.Namespace) -> None:
    """(e): Kernel Lab's NystromRidge against the hand-written Dask peer."""
    cmd = [sys.executable, str(HERE / "cluster_peer.py"), address, folder,
           str(args.peer_landmarks), str(args.peer_lam)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        got = json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        print(f"peer: FAILED: {out.stderr[-1500:]}", flush=True)
        judge("Kernel Lab ÷ peer time, NystromRidge fit: failed", float("nan"), "×",
              PEER_RATIO)
        return
    print(f"peer problem: {got['n_train']:,} training rows (the peer counts "
          f"{got['peer_n_train']:,}), s = {got['s']} uniform landmarks (Kernel Lab's keyed "
          f"draw), Gaussian σ = √(2p) = {got['sigma']:.3f}, λ = {args.peer_lam:g} × n_train = "
          f"{got['lam']:.4g}: condition number of the solved system "
          f"{got['condition']:.3g} (well conditioned)", flush=True)
    for who in ("kernel_lab", "peer"):
        print(f"  {who.replace('_', ' ')}: " + ", ".join(
            f"{k} {v:.2f} s" for k, v in got[who].items()), flush=True)
    judge("peer: Kernel Lab open + fit", got["kernel_lab"]["total"], "s")
    judge("peer: hand-written Dask fit", got["peer"]["total"], "s")
    judge("Kernel Lab (open + fit) ÷ hand-written Dask peer, time",
          got["kernel_lab"]["total"] / got["peer"]["total"], "×", PEER_RATIO)
    judge("Kernel Lab's fit alone (the folder opened: split, column statistics, leakage "
          "check) ÷ the peer", got["kernel_lab"]["fit"] / got["peer"]["total"], "×")
    judge("coefficients β = W^{-1/2} w, largest relative difference to the peer",
          got["coef_difference"], "", EQUAL)
    judge("intercept, relative difference to the peer", got["intercept_difference"], "",
          EQUAL)
    client_mb = got["client_peak_mb"]
    judge.clients.append(("peer and NystromRidge client", client_mb))
    judge.processes.append(("peer and NystromRidge client", client_mb))
    for who in ("kernel_lab_workers_mb", "peer_workers_mb"):
        for k, mb in enumerate(got[who].values()):
            judge.processes.append((f"{who.split('_workers')[0]}, worker {k + 1}", mb))
    print(f"  (client peak {client_mb:.0f} MB; workers' peaks: Kernel Lab "
          + ", ".join(f"{v:.0f}" for v in got["kernel_lab_workers_mb"].values())
          + " MB, peer " + ", ".join(f"{v:.0f}" for v in got["peer_workers_mb"].values())
          + " MB)", flush=True)


def section_keep(judge: Judge, client, address: str, tmp: Path, rows: int) -> None:
    """(f): 8 unequal files kept on 2 workers against one ``.npy`` in memory."""
    shares = np.asarray(KEEP_SHARES) / sum(KEEP_SHARES)
    bounds = np.concatenate([[0], np.cumsum(shares * rows).round().astype(int)])
    bounds[-1] = rows
    folder, npy = tmp / "keep", tmp / "keep.npy"
    write_folder(folder, bounds, NARROW)
    write_npy(npy, rows, NARROW)
    print(f"keep: {rows:,} × {NARROW} (+ target) in 8 Parquet files of "
          f"{', '.join(f'{b:,}' for b in np.diff(bounds))} rows, and as one .npy", flush=True)
    memory = run_child("nystrom", "--data", str(npy), "--out", str(tmp / "keep-npy"),
                       "--no-plot", "--quiet")
    t_npy = judge.run("keep: nystrom, one .npy in memory", memory, rows, None)
    restart(client, 2)
    kept = run_child("nystrom", "--data", str(folder), "--partitions", "keep", "--backend",
                     "dask", "--scheduler", address, "--out", str(tmp / "keep-dask"),
                     "--no-plot", "--quiet")
    t_kept = judge.run("keep: nystrom, 8 files kept, 2 workers", kept, rows,
                       workers_peak_mb(client))
    if memory["returncode"] == 0 and kept["returncode"] == 0:
        worst, count = table_difference(tmp / "keep-npy", tmp / "keep-dask")
        judge(f"keep: largest relative difference of the {count:,} table values, "
              "8 files vs .npy", worst, "", EQUAL)
    judge("keep: 8 files on 2 workers ÷ .npy in memory, time", t_kept / t_npy, "×",
          KEEP_RATIO)


def section_small(judge: Judge, address: str, tmp: Path) -> None:
    """(g): 20,000 rows, in memory (this process) against 8 files on the cluster."""
    from kernel_lab.engine.runner import run_experiment

    rows = 20_000
    folder, npy = tmp / "small", tmp / "small.npy"
    write_folder(folder, np.linspace(0, rows, 9).round().astype(int))
    write_npy(npy, rows)
    for name, params in (("nystrom", {"samplers": ["uniform", "recursive-rls", "rp-cholesky",
                                                   "rff"], "trials": 1}),
                         ("learning-curve", {"loss": "squared"})):
        memory = run_experiment(name, params, data=str(npy))
        remote = run_experiment(name, params, data=f"{folder}:partitions=keep",
                                backend="dask", scheduler=address)
        worst = 0.0
        for key, a in memory.table.items():
            if "time" in key:
                continue
            b = remote.table.get(key)
            if b is None or np.shape(a) != np.shape(b) or not np.array_equal(
                    np.isnan(a), np.isnan(b)):
                worst = float("inf")
                break
            ok = np.isfinite(a)
            rel = np.abs(a[ok] - b[ok]) / np.maximum(np.abs(a[ok]), 1e-300)
            worst = max(worst, float(rel.max(initial=0.0)))
        judge(f"small: {name}, largest relative difference, .npy in memory vs 8 files on "
              "the cluster (20,000 rows)", worst, "", EQUAL)


def main() -> None:
    rec = start(__file__, __doc__)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--reference-rows", type=int, default=None,
                        help="rows of the in-memory reference (default: rows / 4)")
    parser.add_argument("--keep-rows", type=int, default=1_000_000)
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections among {', '.join(SECTIONS)}")
    parser.add_argument("--peer-landmarks", type=int, default=200)
    parser.add_argument("--peer-lam", type=float, default=1e-3,
                        help="the peer's λ per training row")
    args = parser.parse_args()
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        parser.error(f"--only: unknown section(s) {', '.join(unknown)}; choose among "
                     f"{', '.join(SECTIONS)}")
    experiments = [s for s in ("nystrom", "curve") if s in only]
    reference = args.reference_rows or args.rows // 4
    judge = Judge(rec)

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        folder = tmp / "rows"
        if experiments or "peer" in only:
            t0 = time.perf_counter()
            write_folder(folder, np.linspace(0, args.rows, args.files + 1).round().astype(int))
            size = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
            print(f"{args.rows:,} × {WIDE} (+ target) as {args.files} Parquet files: "
                  f"{size:.0f} MB, written in {time.perf_counter() - t0:.0f} s", flush=True)
        in_memory: dict[str, float] = {}
        all_cores: dict[str, float] = {}
        if experiments:
            npy = tmp / "reference.npy"
            write_npy(npy, reference)
            for section in experiments:
                name = EXPERIMENTS[section]
                for label, extra, into in (("in memory, one worker", ("--workers", "1"),
                                            in_memory),
                                           ("in memory, every core", (), all_cores)):
                    run = run_child(name, "--data", str(npy), *extra, "--out",
                                    str(tmp / f"ref-{name}-{len(extra)}"), "--no-plot",
                                    "--quiet")
                    into[section] = judge.run(f"{name}, {label}", run, reference, None)
                    print(f"  ({name}, {label}: {run['cpu']:.1f} CPU seconds)", flush=True)
            npy.unlink()
        two: dict[str, float] = {}
        if experiments or {"peer", "keep", "small"} & set(only):
            local, client = cluster(2)
            address = local.scheduler_address
            try:
                two = on_cluster(judge, client, 2, str(folder), args.rows, tmp, experiments)
                if "peer" in only:
                    restart(client, 2)
                    section_peer(judge, address, str(folder), args)
                if "keep" in only:
                    section_keep(judge, client, address, tmp, args.keep_rows)
                if "small" in only:
                    section_small(judge, address, tmp)
            finally:
                client.close()
                local.close()
        if experiments:
            local, client = cluster(1)
            try:
                one = on_cluster(judge, client, 1, str(folder), args.rows, tmp, experiments)
            finally:
                client.close()
                local.close()
            for section in experiments:
                name = EXPERIMENTS[section]
                judge(f"{name}: 2 workers on {args.rows:,} rows ÷ in memory on one worker, "
                      f"{reference:,} rows, time", two[section] / in_memory[section], "×",
                      CLUSTER_RATIO)
                judge(f"{name}: 2 workers on {args.rows:,} rows ÷ in memory on every core "
                      f"({os.cpu_count()}), {reference:,} rows, time",
                      two[section] / all_cores[section], "×")
                judge(f"{name}: speed-up of 2 workers over 1", one[section] / two[section],
                      "×", SPEED_UP, at_most=False)
        if judge.processes:
            worst = max(judge.processes, key=lambda w: w[1])
            judge(f"largest peak of any cluster process ({worst[0]})", worst[1], "MB",
                  PROCESS_MB)
        if judge.clients:
            worst = max(judge.clients, key=lambda w: w[1])
            judge(f"largest client peak ({worst[0]})", worst[1], "MB", CLIENT_MB)
        judge("this process's peak (the schedulers, the writer, the small check)",
              peak_mb(), "MB")
    rec.save()


if __name__ == "__main__":
    main()
