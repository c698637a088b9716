"""
The CKRR risk limit against Monte Carlo
=======================================

Centered kernel ridge regression with an inner-product kernel ``k(x, x') = g(xᵀx'/p)`` on
Gaussian inputs has a deterministic test risk when n and p grow together (Elkhalil et al.,
2020, Theorem 1): :func:`~kernel_lab.core.theory.ckrr.limiting_risks` computes it on a λ grid
from the input covariance, the target's moments and the noise. The script draws fresh
training and test sets from the same model, fits
:class:`~kernel_lab.core.models.CenteredKernelRidge` along the grid in one
eigendecomposition per trial, and prints the mean empirical test risk (against the
noiseless target, as the theorem measures it) beside the limit.
"""

from __future__ import annotations

import os

import numpy as np

from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import CenteredKernelRidge
from kernel_lab.core.theory import LimitSetting, limiting_risks
from kernel_lab.data.source import load_data

SMALL = os.environ.get("KERNEL_LAB_EXAMPLES_SMALL") == "1"   # the tests' quick size

n, p = (100, 50) if SMALL else (400, 200)
trials = 5 if SMALL else 40
lams = np.logspace(-2, 2, 5 if SMALL else 9)
kernel = make_kernel("exponential")       # g(t) = exp(t): g'(0) = 1 > 0, as the theory needs

# %%
# The model and its limit
# -----------------------
# A generated data set carries its generating process (``source``): the input law
# x ~ N(0, Σ) with a Toeplitz Σ, the target f(x) = sin(1ᵀx/√p) and the noise variance.
data = load_data(f"gaussian:n={n},n_test=500,p={p},cov=toeplitz,rho=0.4,f=sin,noise=0.5",
                 seed=0)
source = data.source
setting = LimitSetting.from_law(source.law, source.truth, source.noise, n)
limit_train, limit_test = limiting_risks(setting, kernel, lams)

# %%
# Monte Carlo
# -----------
rng = np.random.default_rng(1)
risks = np.empty((trials, lams.size))
for t in range(trials):
    X, _, y = source.sample(n, rng)
    X_test, f_test, _ = source.sample(500, rng)
    path = CenteredKernelRidge(kernel=kernel).fit_path(X, y, lams, X_test)
    risks[t] = ((path.test - f_test) ** 2).mean(axis=1)

mean, err = risks.mean(axis=0), risks.std(axis=0, ddof=1) / np.sqrt(trials)
print(f"n = {n}, p = {p}, {trials} trials, kernel {kernel.spec()}")
print(f"{'λ':>8}  {'limit':>8}  {'Monte Carlo':>18}")
for lam, lim, m, e in zip(lams, limit_test, mean, err, strict=True):
    print(f"{lam:8.3g}  {lim:8.4f}  {m:8.4f} ± {e:7.4f}")
worst = np.max(np.abs(mean - limit_test) / limit_test)
print(f"largest relative gap between the limit and the Monte Carlo mean: {worst:.1%}")
