"""Benchmark: vectorised DSG against the literal per-sample Algorithm 1, and our random
Fourier features against scikit-learn's RBFSampler, measured in one run.

Run: ``python tests/benchmarks/bench_dsg.py``.

- DSG: 2000 iterations of Algorithm 1 with one point and one random feature per
  iteration (the algorithm as the paper states it), squared loss, n = 2000, d = 5; the
  literal implementation (the test oracle's loops) against ``DSGRegressor``; the
  iterates are compared too. Target: vectorised ≥ 20× faster.
- RFF: transform of 5000 × 20 inputs to 2000 features, ``RandomFourierFeatures`` against
  ``sklearn.kernel_approximation.RBFSampler`` of the same size. Target ≤ 0.8× its time
  (issue 27).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import RBFSampler

from kernel_lab.core.losses import make_loss
from kernel_lab.core.models.dsg import DSGRegressor
from kernel_lab.core.models.rff import RandomFourierFeatures

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import perfdoc  # this folder, first on the path of a script
from timing import best_of

from tests.core.test_dsg import literal_dsg


def main() -> None:
    rec = perfdoc.start(__file__, __doc__)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=2000)
    kw = {"sigma": 1.5, "nu": 1e-2, "theta": 20.0, "t0": 100.0, "n_iter": 2000,
          "batch_size": 1, "n_features_per_iter": 1, "random_state": 0}

    def vectorised():
        return DSGRegressor(**kw).fit(X, y)

    t_vec, model = best_of(vectorised, 3)

    def literal():
        return literal_dsg(X, y - model.offset_, kernel=model.kernel_, loss=make_loss("squared"),
                           nu=kw["nu"], theta=kw["theta"], t0=kw["t0"], n_iter=kw["n_iter"],
                           batch=1, r=1, seed=model.seed_)

    t_lit, alphas = best_of(literal, 1)
    agree = np.abs(model.coef_ * model.scale_ - alphas).max()

    Xr = rng.normal(size=(5000, 20))
    ours = RandomFourierFeatures("gaussian", sigma=math.sqrt(10), n_components=2000,
                                 random_state=0).fit(Xr)
    theirs = RBFSampler(gamma=1 / 20, n_components=2000, random_state=0).fit(Xr)
    t_ours, _ = best_of(lambda: ours.transform(Xr), 7)
    t_sk, _ = best_of(lambda: theirs.transform(Xr), 7)

    print("DSG, 2000 iterations, 1 point and 1 feature per iteration, n = 2000, d = 5")
    print(f"  literal Algorithm 1:    {t_lit:8.3f} s")
    print(f"  DSGRegressor:           {t_vec:8.3f} s")
    print(f"  max |iterate difference|: {agree:.1e} (largest |α|: "
          f"{np.abs(alphas).max():.2f})")
    print(f"  speed-up:               {t_lit / t_vec:8.1f}x   (target ≥ 20)")
    print("RFF transform, 5000 × 20 → 2000 features")
    print(f"  RandomFourierFeatures:  {t_ours:8.4f} s")
    print(f"  sklearn RBFSampler:     {t_sk:8.4f} s")
    print(f"  ratio ours / sklearn:   {t_ours / t_sk:8.2f}x   (target ≤ 0.8)")
    rec.figure("DSG, 2000 iterations: DSGRegressor", t_vec, "s")
    rec.figure("DSG speed-up over the literal Algorithm 1", t_lit / t_vec, "×", 20,
               at_most=False)
    rec.figure("RFF transform 5000 × 20 → 2000: RandomFourierFeatures", t_ours, "s")
    rec.figure("RFF transform ratio ours / scikit-learn's RBFSampler", t_ours / t_sk, "×", 0.8)
    rec.save()


if __name__ == "__main__":
    main()
