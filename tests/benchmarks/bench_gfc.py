"""Benchmark: greedy feature construction against cross-validated random Fourier features
on Friedman's data, n = 8192 training points, in one run.

Run: ``python tests/benchmarks/bench_gfc.py [seeds]``.

- GFC with 100 features (defaults: T = 10 passes, M = 4 descents, subset 5000), serial
  and with the descents on two threads.
- RFF with 100 features for each of the Gaussian, Laplace and Cauchy measures, bandwidth
  from 10 candidates and ν by exact leave-one-out (the experiment's baseline cell).
- Errors are the paper's metric: RMSE × 100 on targets scaled to range 1, on 4096 fresh
  test points; the noise floor (the noiseless target as prediction) is printed too.
Reported: errors, wall times, and the time ratio GFC ÷ (all three cross-validated RFF).
"""

from __future__ import annotations

import sys
import time

import numpy as np
import perfdoc  # this folder, first on the path of a script

from kernel_lab.core.kernels import median_heuristic
from kernel_lab.core.models.gfc import GreedyFeatureRegressor
from kernel_lab.data.source import load_data
from kernel_lab.engine.executors import ThreadExecutor
from kernel_lab.experiments.gfc import BaselineTask, percent_rmse, range_scaling, run_baseline

RFF = ("rff-gaussian", "rff-laplace", "rff-cauchy")


def main() -> None:
    rec = perfdoc.start(__file__, __doc__)
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rows = []
    for seed in range(seeds):
        ds = load_data("friedman:n=8192,n_test=4096", seed=seed)
        lo, scale = range_scaling(ds.y_train)
        X, Xt = ds.X_train, ds.X_test
        y, yt = (ds.y_train - lo) / scale, (ds.y_test - lo) / scale
        floor = percent_rmse((ds.f_test - lo) / scale, yt)

        t0 = time.perf_counter()
        gfc = GreedyFeatureRegressor(100, random_state=seed).fit(X, y)
        t_gfc = time.perf_counter() - t0
        e_gfc = percent_rmse(gfc.predict(Xt), yt)
        t0 = time.perf_counter()
        par = GreedyFeatureRegressor(100, random_state=seed, executor=ThreadExecutor(2)).fit(X, y)
        t_par = time.perf_counter() - t0
        same = np.array_equal(par.frequencies_, gfc.frequencies_)

        sigmas = median_heuristic(X) * 2.0 ** np.arange(-2, 8)
        rff = {}
        for k, m in enumerate(RFF):
            task = BaselineTask(m, 100, sigmas, np.random.SeedSequence([seed, k]), X, y, Xt, yt)
            rff[m] = run_baseline(task)
        t_rff = sum(r["time"] for r in rff.values())
        best = min(RFF, key=lambda m: rff[m]["error"])
        rows.append((e_gfc, rff[best]["error"], t_gfc / t_rff))

        print(f"seed {seed}: Friedman, n = 8192, d = 10, 4096 test points; "
              f"noise floor {floor:.2f}")
        print(f"  GFC (≤100 features, built {gfc.n_features_out_}): error {e_gfc:6.2f}   "
              f"{t_gfc:6.2f} s serial, {t_par:6.2f} s on 2 threads (same model: {same})")
        for m in RFF:
            r = rff[m]
            print(f"  RFF {m[4:]:<8} (100 features, LOO σ = {r['sigma']:.3g}): "
                  f"error {r['error']:6.2f}   {r['time']:6.2f} s")
        print(f"  GFC error ÷ best RFF ({best[4:]}): {e_gfc / rff[best]['error']:.3f}")
        print(f"  time GFC ÷ all three cross-validated RFF: {t_gfc / t_rff:.2f}x   "
              f"(÷ one measure: {t_gfc / rff[best]['time']:.2f}x)")
        rec.figure(f"seed {seed}: GFC error (RMSE × 100; noise floor {floor:.2f})", e_gfc, "")
        rec.figure(f"seed {seed}: best RFF error ({best[4:]})", rff[best]["error"], "")
        rec.figure(f"seed {seed}: GFC fit, serial", t_gfc, "s")
        rec.figure(f"seed {seed}: GFC fit, 2 threads", t_par, "s")
        rec.figure(f"seed {seed}: time GFC ÷ all three cross-validated RFF", t_gfc / t_rff, "×")
    if seeds > 1:
        e = np.array(rows)
        print(f"mean over {seeds} seeds: GFC {e[:, 0].mean():.2f}, best RFF "
              f"{e[:, 1].mean():.2f}, time ratio {e[:, 2].mean():.2f}x")
    rec.save()


if __name__ == "__main__":
    main()
