"""
Greedy feature construction against random Fourier features
===========================================================

Random Fourier features draw the frequencies of their cosine waves from the kernel's
spectral density, blind to the data; greedy feature construction (GFC, Oglic & Gärtner,
2016) learns each frequency by a descent on the residual of the features so far. On
Friedman's function, where only five of the ten inputs matter, the learned features
reach a lower test error with fewer of them. The script fits
:class:`~kernel_lab.core.models.GreedyFeatureRegressor`, then
:class:`~kernel_lab.core.models.RFFRidge` with as many features and with more, for three
kernels, each RFF model's λ chosen on a validation split of the training rows.
"""

from __future__ import annotations

import os

import numpy as np

from kernel_lab.core.models import GreedyFeatureRegressor, RFFRidge
from kernel_lab.data.source import load_data

SMALL = os.environ.get("KERNEL_LAB_EXAMPLES_SMALL") == "1"   # the tests' quick size

n = 500 if SMALL else 4000
data = load_data(f"friedman:n={n},n_test=2000,noise=1", seed=0)
X, y, X_test, y_test = data.X_train, data.y_train, data.X_test, data.y_test


def mse(model: object) -> float:
    return float(np.mean((model.predict(X_test) - y_test) ** 2))


# %%
# Learned features
# ----------------
gfc = GreedyFeatureRegressor(n_features=20 if SMALL else 100, n_passes=3 if SMALL else 10,
                             random_state=0).fit(X, y)
k = gfc.n_features_out_
print(f"{data.name}: noise variance 1 (the floor of the test MSE)")
print(f"GFC: {k} learned features, test MSE {mse(gfc):.3f}")

# %%
# Random features, λ chosen on a validation split
# -----------------------------------------------
fit, val = np.arange(n) < 0.8 * n, np.arange(n) >= 0.8 * n
lams = np.logspace(-4, 1, 6)


def rff(kernel: str, D: int) -> RFFRidge:
    def val_mse(lam: float) -> float:
        m = RFFRidge(lam, kernel=kernel, n_components=D, random_state=0).fit(X[fit], y[fit])
        return float(np.mean((m.predict(X[val]) - y[val]) ** 2))
    lam = min(lams, key=val_mse)
    return RFFRidge(lam, kernel=kernel, n_components=D, random_state=0).fit(X, y)


print(f"\n{'random features':<16}{'D':>5}  {'test MSE':>9}")
for D in sorted({k, 100 if SMALL else 500}):
    for kernel in ("gaussian", "laplace", "cauchy"):
        print(f"{kernel:<16}{D:5d}  {mse(rff(kernel, D)):9.3f}")
