"""Benchmark: recursive RLS Nyström against scikit-learn's Nystroem, and spectral error
against s for every sampler on three kinds of data, in one run.

Run: ``python tests/benchmarks/bench_nystrom.py``.

1. n = 50,000, d = 10, s = 500, Gaussian kernel (σ = √d on standardised inputs): time of
   ``NystromFeatures(sampler="recursive-rls").fit_transform`` against
   ``sklearn.kernel_approximation.Nystroem(...).fit_transform`` (uniform landmarks).
   Target ≤ 1.5×. Both are also timed for the accelerated variant and RP-Cholesky.
2. Median spectral error ‖K − K̃‖₂ (3 draws, exact on 2000 evaluation points) against s for
   all samplers on imbalanced clusters, a real bundled data set (breast cancer,
   standardised) and near-uniform data (a Gaussian cloud).
"""

from __future__ import annotations

import math
import time

import numpy as np
from perfdoc import Recording, start  # this folder, first on the path of a script
from sklearn.kernel_approximation import Nystroem

from kernel_lab.core.kernels import GaussianKernel, median_heuristic
from kernel_lab.data.source import load_data
from kernel_lab.engine import run_experiment


def timed(fn, repeat=2):
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def speed(rec: Recording) -> None:
    from kernel_lab.core.models.nystrom import NystromFeatures

    rng = np.random.default_rng(0)
    n, d, s = 50_000, 10, 500
    X = rng.normal(size=(n, d))
    sigma = math.sqrt(d)
    kernel = GaussianKernel(sigma)
    t_sk = timed(lambda: Nystroem(kernel="rbf", gamma=1 / (2 * sigma**2), n_components=s,
                                  random_state=0).fit_transform(X))
    print(f"n = {n}, d = {d}, s = {s}: fit + transform")
    print(f"  sklearn Nystroem (uniform):        {t_sk:7.2f} s")
    for name in ("recursive-rls", "recursive-rls-fast", "rp-cholesky", "uniform"):
        t = timed(lambda name=name: NystromFeatures(kernel, n_components=s, sampler=name,
                                                    random_state=0).fit_transform(X))
        extra = "   (target ≤ 1.5)" if name == "recursive-rls" else ""
        print(f"  {name:<20}              {t:7.2f} s   ratio {t / t_sk:5.2f}x{extra}")
        rec.figure(f"{name} fit + transform ÷ scikit-learn's Nystroem ({t_sk:.2f} s)",
                   t / t_sk, "×", 1.5 if name == "recursive-rls" else None)


def quality() -> None:
    sets = {
        "imbalanced clusters": "clusters:n=5000,k=8,imbalance=3,spread=0.05",
        "breast cancer (real)": "breast-cancer:test_fraction=0.01",
        "near-uniform (Gaussian cloud)": "gaussian:n=5000,p=3,n_test=100",
    }
    samplers = "uniform,recursive-rls,recursive-rls-fast,rp-cholesky,exact-rls"
    for title, spec in sets.items():
        data = load_data(spec, seed=0)
        sigma = median_heuristic(data.X_train)
        r = run_experiment("nystrom", {"samplers": samplers if data.n_train <= 3000 else
                                       samplers.replace(",exact-rls", ""),
                                       "sizes": "10,20,50,100,200", "trials": 3,
                                       "eval_points": 2000, "sigma": sigma}, data=data)
        print(f"\n{title}: n = {data.n_train}, p = {data.p}, σ = {sigma:.3g} (median "
              f"heuristic); median ‖K − K̃‖₂ over 3 draws")
        names = [c[len("spectral_median["):-1] for c in r.table if
                 c.startswith("spectral_median[")]
        print("  s     " + "".join(f"{n:>20}" for n in names))
        for i, s in enumerate(r.table["s"][:5]):
            row = "".join(f"{r.table[f'spectral_median[{n}]'][i]:>20.3g}" for n in names)
            print(f"  {int(s):<5} {row}")


if __name__ == "__main__":
    recording = start(__file__, __doc__)
    speed(recording)
    quality()
    recording.save()
