"""
A λ path on your own CSV file
=============================

Read a table the way the lab reads it — the row-name column dropped, the text column
``district`` one-hot encoded, the missing ``age`` cells filled with the training mean, the
features standardised — and fit kernel ridge regression along a whole grid of λ from one
eigendecomposition (:meth:`~kernel_lab.core.models.KernelRidge.fit_path`). The test error
of every λ comes out of the same call; the script prints the best λ and the curve around it.

``examples/data/houses.csv`` is made up from a formula: 300 flats with ``area``, ``rooms``,
``age`` and ``district``, and ``price = 60 log(area) + 6 rooms − 0.5 age + 12 sin(age/9) +
(40 centre, 15 river, 0 hills) − 150 + N(0, 6²)``. To run the script on your own table::

    python examples/krr_path_on_your_csv.py my_table.csv price

(the file, then the target column's name).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from kernel_lab.core.kernels import median_heuristic
from kernel_lab.core.models import KernelRidge
from kernel_lab.data.source import DataSource

SMALL = os.environ.get("KERNEL_LAB_EXAMPLES_SMALL") == "1"   # the tests' quick size

# this script's folder (without __file__, as in a notebook: the working folder)
here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
path, target = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else (
    str(here / "data" / "houses.csv"), "price")

# %%
# Read and prepare the table
# --------------------------
# The same text form as ``kernel-lab run --data``: ``FILE:target=NAME`` plus options such as
# ``test_fraction=0.3`` or ``drop_columns=a,b``. What was done to the table is in ``notes``, what to
# look at before trusting a result in ``warnings``.
data = DataSource.from_spec(f"{path}:target={target},test_fraction=0.25").load(seed=0)
print(f"{data.name}: {data.n_train} training and {data.n_test} test rows, "
      f"features {', '.join(data.feature_names)}")
for note in data.notes + data.warnings:
    print("  -", note)

# %%
# One eigendecomposition, every λ
# -------------------------------
# A Gaussian kernel with the median heuristic's bandwidth; the grid spans nine decades.
sigma = median_heuristic(data.X_train)
lams = np.logspace(-7, 2, 10 if SMALL else 46)
path_result = KernelRidge(kernel="gaussian", kernel_params={"sigma": sigma}).fit_path(
    data.X_train, data.y_train, lams, data.X_test)
test_mse = ((path_result.test - data.y_test) ** 2).mean(axis=1)
train_mse = ((path_result.train - data.y_train) ** 2).mean(axis=1)

best = int(np.argmin(test_mse))
print(f"\nσ = {sigma:.3g}; {lams.size} values of λ from {lams[0]:g} to {lams[-1]:g}")
print(f"{'λ':>10}  {'train MSE':>10}  {'test MSE':>10}")
for i in range(max(0, best - 3), min(lams.size, best + 4)):
    mark = "  <- best" if i == best else ""
    print(f"{lams[i]:10.3g}  {train_mse[i]:10.4g}  {test_mse[i]:10.4g}{mark}")
print(f"best λ = {lams[best]:.3g}: test MSE {test_mse[best]:.4g} "
      f"(the target's variance on the test rows: {data.y_test.var():.4g})")
