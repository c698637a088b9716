"""Benchmark: the compute backends on independent Monte Carlo trials, in one run.

Run: ``python tests/benchmarks/bench_backends.py`` (needs ``kernel-lab[dask]``).

``ckrr-risk`` with 16 trials at n = 1000 (p = 500, exponential kernel, 50 λ, 1000 test
points): in-process serial (one task after the other), in-process on two threads, a local
process pool of two workers, and a local Dask cluster of two single-threaded worker
processes on 127.0.0.1 (start-up of the pool and the cluster excluded: both are kept
for later runs, like a running cluster), configured as Kernel Lab configures the local
clusters it starts (``executors.DASK_QUIET``: no statistical profiler, glibc's heap reuse
restored in the workers). Every task runs
with one BLAS thread on every backend, so all four give identical numbers (checked).
Target: speed-up ≥ 1.6× over in-process serial on 2 cores.
"""

from __future__ import annotations

import time

import numpy as np
import perfdoc  # this folder, first on the path of a script

from kernel_lab.engine import run_experiment
from kernel_lab.engine.executors import DASK_QUIET

DATA = "gaussian:n=1000,p=500,cov=toeplitz,rho=0.4,noise=0.5,f=sin"
PARAMS = {"kernels": ["exponential"], "trials": 16, "n_lams": 50, "n_test": 1000}


def timed(**kw):
    t0 = time.perf_counter()
    result = run_experiment("ckrr-risk", PARAMS, data=DATA, **kw)
    return time.perf_counter() - t0, result


def main() -> None:
    rec = perfdoc.start(__file__, __doc__)
    import dask
    from distributed import LocalCluster

    dask.config.set(DASK_QUIET)
    timed(workers=1)  # warm-up
    t_serial, ref = timed(workers=1)
    t_threads, r_threads = timed(workers=2)
    timed(workers=2, backend="processes")  # starts the pool, kept for later runs
    t_proc, r_proc = timed(workers=2, backend="processes")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        timed(backend="dask", scheduler=cluster.scheduler_address)  # workers import once
        t_dask, r_dask = timed(backend="dask", scheduler=cluster.scheduler_address)
    same = all(np.array_equal(ref.table[k], r.table[k], equal_nan=True)
               for r in (r_threads, r_proc, r_dask) for k in ref.table)
    print("ckrr-risk, 16 trials, n = 1000, p = 500, 50 λ, 1000 test points")
    print(f"  in-process serial:        {t_serial:7.2f} s")
    print(f"  in-process, 2 threads:    {t_threads:7.2f} s   speed-up {t_serial / t_threads:5.2f}x")
    print(f"  process pool, 2 workers:  {t_proc:7.2f} s   speed-up {t_serial / t_proc:5.2f}x")
    print(f"  Dask, 2 local workers:    {t_dask:7.2f} s   speed-up {t_serial / t_dask:5.2f}x"
          "   (target ≥ 1.6)")
    print(f"  identical numbers on every backend: {same}")
    rec.figure("in-process serial", t_serial, "s")
    rec.figure("speed-up, in-process on 2 threads", t_serial / t_threads, "×")
    rec.figure("speed-up, process pool of 2 workers", t_serial / t_proc, "×")
    rec.figure("speed-up, Dask with 2 local workers", t_serial / t_dask, "×", 1.6,
               at_most=False)
    rec.figure("backends whose numbers differ from serial", float(not same), "", 0)
    rec.save()


if __name__ == "__main__":
    main()
