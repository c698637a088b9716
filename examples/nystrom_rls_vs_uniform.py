"""
Nyström landmarks: recursive ridge leverage scores against uniform sampling
===========================================================================

Nyström ridge regression replaces the n × n kernel matrix by one built on s landmark points.
Which points matters when the data are uneven: here eight Gaussian clusters whose sizes fall
off geometrically (the smallest hold a handful of points) and a narrow Gaussian kernel, so a
cluster without a landmark is invisible to the model. Uniform sampling waits for its draws
to land in the small clusters; recursive ridge leverage score sampling (Musco & Musco, 2017)
finds them on purpose. The script fits :class:`~kernel_lab.core.models.NystromRidge` with
both samplers for growing s and prints the test error and the distance to exact kernel ridge
regression's predictions (the error of the approximation itself), each the mean over
several seeds.
"""

from __future__ import annotations

import os

import numpy as np

from kernel_lab.core.models import KernelRidge, NystromRidge
from kernel_lab.data.source import load_data

SMALL = os.environ.get("KERNEL_LAB_EXAMPLES_SMALL") == "1"   # the tests' quick size

n = 600 if SMALL else 3000
sizes = [10, 20, 40] if SMALL else [10, 20, 40, 80, 160]
seeds = range(2 if SMALL else 5)
sigma, lam = 0.23, 1e-3       # the Gaussian kernel's σ (the clusters' scale) and the ridge λ

data = load_data(f"clusters:n={n},n_test=1000,p=2,k=8,imbalance=3,separation=5,spread=0.05,"
                 "f=sin(sum(x)),noise=0.01", seed=0)
print(f"{data.name}: {data.n_train} training and {data.n_test} test points")

# %%
# The exact model to approximate
# ------------------------------
# ``centered=False`` makes Nyström ridge approximate plain kernel ridge regression with the
# same kernel and λ.
kernel = {"kernel": "gaussian", "kernel_params": {"sigma": sigma}}
exact = KernelRidge(lam, **kernel).fit(data.X_train, data.y_train).predict(data.X_test)
print(f"exact KRR: test MSE {np.mean((exact - data.y_test) ** 2):.3g}")

# %%
# Error against the number of landmarks
# -------------------------------------
print(f"\n{'s':>5}  {'sampler':<14}{'test MSE':>10}  {'distance to exact':>18}")
for s in sizes:
    for sampler in ("recursive-rls", "uniform"):
        mse, gap = [], []
        for seed in seeds:
            model = NystromRidge(lam, n_components=s, sampler=sampler, centered=False,
                                 random_state=seed, **kernel).fit(data.X_train, data.y_train)
            pred = model.predict(data.X_test)
            mse.append(np.mean((pred - data.y_test) ** 2))
            gap.append(np.mean((pred - exact) ** 2))
        print(f"{s:5d}  {sampler:<14}{np.mean(mse):10.3g}  {np.mean(gap):18.3g}")
