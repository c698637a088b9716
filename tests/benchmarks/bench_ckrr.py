"""Benchmark: a ckrr-risk run against the eigendecompositions and kernel evaluations it
cannot avoid.

Run: ``python tests/benchmarks/bench_ckrr.py``.

One run of the experiment (20 trials, 50 λ values, n = 400, p = 200, 2000 test points,
exponential kernel, serial executor) on a loaded data set (as in the window, whose Data
panel loads the data once, and as the runner's own ``run_s`` timing counts it; the run
with the data specification parsed and drawn anew is printed too) against, in the same
process, the bare cost of its 20 trials: each draws its fresh training and test points
(issue 27: "the bare cost must include what the method cannot avoid, including the fresh
test points" — n × p and 2000 × p standard normals, the training points mapped by Σ^{1/2},
and the responses), evaluates the training and test kernel matrices and makes one
eigendecomposition of the centred kernel matrix; a second reference adds the 20
reductions of the p×p Gram matrix the Theorem 2 estimator needs
(``DataSpectrum.from_data``). Target: ≤ 1.3× (the λ grid, the estimators and the
bookkeeping are nearly free). (Until issue 27 the reference used points drawn before
the clock started, the same test points in every trial.) The bare cost uses
``numpy.linalg.eigh``, the routine the experiment uses (with numpy's and scipy's BLAS
pools alternating, ``scipy.linalg.eigh`` is slower here; it is printed too).

Reference and run are measured in alternating rounds and the best of each is kept, so
that a slow phase of the machine does not fall on one side only.

Both sides pay for page faults: with glibc's default (adaptive) thresholds the freed
n×n and test-kernel arrays go back to the system and are faulted in again next trial.
Started with ``MALLOC_TRIM_THRESHOLD_=268435456 MALLOC_MMAP_THRESHOLD_=33554432`` both
get about 0.1 s faster (reference 0.55 → 0.45 s, run 0.70 → 0.60 s here), so the same
absolute overhead becomes a larger ratio (1.33–1.35). The figures the target is judged
on are those of a default process, which is what the window's worker and the command
line run in.
"""

from __future__ import annotations

import time

import numpy as np
import perfdoc  # this folder, first on the path of a script
import scipy.linalg as sla
from threadpoolctl import threadpool_limits

from kernel_lab.core.kernels import ExponentialKernel
from kernel_lab.core.theory import DataSpectrum
from kernel_lab.data.source import load_data
from kernel_lab.engine import run_experiment

DATA = "gaussian:n=400,p=200,cov=toeplitz,rho=0.4,noise=0.5,f=sin"
TRIALS, LAMS, N_TEST = 20, 50, 2000
ROUNDS = 11


def reference(source, eigh, with_estimator: bool = False) -> float:
    kernel = ExponentialKernel(1.0, 0.0)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for _ in range(TRIALS):
        X = source.sample(400, rng)[0]  # the trial's training points and responses
        Xs = rng.standard_normal((N_TEST, X.shape[1]))  # its fresh test points
        K = kernel(X)
        kernel(Xs, X)
        m = K.mean(0)
        K -= m[None, :]
        K -= m[:, None]
        K += m.mean()
        eigh(K)
        if with_estimator:  # the p×p reduction behind m̂ and Theorem 2
            DataSpectrum.from_data(X, X[:, 0])
    return time.perf_counter() - t0


def experiment(workers: int, data: object = DATA) -> float:
    t0 = time.perf_counter()
    run_experiment("ckrr-risk", {"kernels": "exponential", "trials": TRIALS, "n_lams": LAMS,
                                 "n_test": N_TEST}, data=data, workers=workers)
    return time.perf_counter() - t0


def main() -> None:
    rec = perfdoc.start(__file__, __doc__)
    dataset = load_data(DATA)
    source = dataset.source
    experiment(1)  # warm-up (imports, first BLAS calls)
    # Single-threaded BLAS for the ratio: on a 2-core machine numpy's and scipy's BLAS
    # thread pools otherwise compete and the timings scatter by ±30 %.
    t_ref = t_all = t_run = t_loaded = np.inf
    with threadpool_limits(1):
        for _ in range(ROUNDS):
            t_ref = min(t_ref, reference(source, np.linalg.eigh))
            t_all = min(t_all, reference(source, np.linalg.eigh, True))
            t_run = min(t_run, experiment(1))
            t_loaded = min(t_loaded, experiment(1, dataset))
    t_sci = min(reference(source, lambda K: sla.eigh(K, driver="evd", overwrite_a=True,
                                                    check_finite=False)) for _ in range(3))
    t_default = min(experiment(1) for _ in range(3))
    t_par = min(experiment(2) for _ in range(3))
    print(f"ckrr-risk: {TRIALS} trials × {LAMS} λ, n = 400, p = 200, {N_TEST} test points")
    print("single-threaded BLAS:")
    print(f"draws + kernel evaluations + eigendecompositions: {t_ref:7.3f} s "
          "(numpy.linalg.eigh)")
    print(f"  plus the estimators' p×p reductions:          {t_all:7.3f} s")
    print(f"experiment run on the loaded data set, serial:  {t_loaded:7.3f} s")
    print(f"  including loading the data specification:     {t_run:7.3f} s")
    print(f"  (default BLAS threads: serial {t_default:.3f} s, 2 worker threads {t_par:.3f} s)")
    print(f"  (default BLAS threads, scipy.linalg.eigh:     {t_sci:7.3f} s)")
    print(f"ratio run / bare cost:                          {t_loaded / t_ref:7.3f}x "
          "(target ≤ 1.3)")
    print(f"  with loading the data specification:          {t_run / t_ref:7.3f}x")
    print(f"  against bare cost with the estimators:        {t_loaded / t_all:7.3f}x")
    rec.figure("bare cost: draws, kernels, eigendecompositions (1 BLAS thread)", t_ref, "s")
    rec.figure("ckrr-risk run on the loaded data set, serial (1 BLAS thread)", t_loaded, "s")
    rec.figure("ratio run / bare cost", t_loaded / t_ref, "×", 1.3)
    rec.figure("ratio run with loading the data specification / bare cost", t_run / t_ref, "×")
    rec.figure("run, default BLAS threads, 2 worker threads", t_par, "s")
    rec.save()

if __name__ == "__main__":
    main()
