"""
Export a fitted model and use it on new rows
============================================

A fitted model you keep carries the table's typing with it: the pipeline that
:func:`~kernel_lab.data.pipeline.model_pipeline` puts in front of an estimator takes rows
*of the original file* — the same column names, text as text, missing cells as they come —
types them as the lab did (the row-name column dropped, ``district`` one-hot with the
training levels, a missing ``age`` filled with the training mean, standardised with the
training statistics) and predicts. :func:`~kernel_lab.engine.model_file.save_model` writes
it with skops (no pickle is executed on loading) and the metadata — Kernel Lab's version,
the data source, the columns and their types, the parameters and the test error;
:func:`~kernel_lab.engine.model_file.load_model` reads it back, refusing a file that is not
a model, one from another version, or types outside scikit-learn, NumPy, SciPy and Kernel
Lab. The script fits kernel ridge regression on ``examples/data/houses.csv``, saves it,
loads it, checks that the loaded pipeline applied to the file's own test rows gives the
fitted model's predictions, and prices two new flats. A run exports the models it marks
best into the same kind of file: ``kernel-lab run … --save-model PATH``
(:func:`~kernel_lab.engine.export.export_run`). On the command line,
``kernel-lab predict MODEL --data new.csv --out pred.csv`` applies a model file to a table
(or a Parquet folder) and ``kernel-lab describe-model MODEL`` prints its metadata.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from kernel_lab.core.kernels import median_heuristic
from kernel_lab.core.models import KernelRidge
from kernel_lab.data.pipeline import model_pipeline
from kernel_lab.data.source import DataSource
from kernel_lab.engine.model_file import SavedModel, load_model, save_model

# this script's folder (without __file__, as in a notebook: the working folder)
here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
table = here / "data" / "houses.csv"

# %%
# Fit on the prepared rows
# ------------------------
source = DataSource.from_spec(f"{table}:target=price")
data = source.load(seed=0)
lam = 2.5e-5      # the best λ of krr_path_on_your_csv.py on this table
model = KernelRidge(lam, kernel="gaussian",
                    kernel_params={"sigma": median_heuristic(data.X_train)})
model.fit(data.X_train, data.y_train)
test_mse = float(np.mean((model.predict(data.X_test) - data.y_test) ** 2))
print(f"KRR on {data.n_train} rows of {table.name}: test MSE {test_mse:.4g}")

# %%
# Save it with its preprocessing, and load it back
# ------------------------------------------------
pipeline = model_pipeline(data, model)
saved = SavedModel({"krr": pipeline}, {
    "data": {"spec": source.to_spec(), "label": source.label()},
    "models": {"krr": {"params": {"lam": lam, "kernel": "gaussian"},
                       "test_error": test_mse, "error_name": "test MSE"}},
})
with tempfile.TemporaryDirectory() as folder:
    path = save_model(saved, Path(folder) / "houses.skops")
    print(f"saved {path.name} ({path.stat().st_size:,} bytes)")
    loaded = load_model(path)
meta = loaded.metadata
columns = ", ".join(f"{c['column']} ({c['kind']})" for c in meta["columns"])
print(f"loaded: Kernel Lab {meta['kernel_lab_version']}, models {list(loaded.models)}, "
      f"reading the columns {columns}")

# %%
# The file's own rows give the fitted model's predictions
# -------------------------------------------------------
# The rows as they are in the file (``data.i_test``: the test rows' positions in it).
raw = pd.read_csv(table)
again = loaded.model().predict(raw.iloc[data.i_test])
gap = np.max(np.abs(again - model.predict(data.X_test)))
print(f"the file's {data.n_test} test rows through the loaded pipeline: largest difference "
      f"from the fitted model's predictions {gap:.1e}")

# %%
# New rows
# --------
# Only the feature columns are needed; a missing ``age`` is filled as in training.
new = pd.DataFrame({"area": [64.0, 120.5], "rooms": [2.0, 4.0], "age": [12.0, np.nan],
                    "district": ["centre", "hills"]})
for row, price in zip(new.itertuples(index=False), loaded.model().predict(new), strict=True):
    age = "unknown" if np.isnan(row.age) else f"{row.age:.0f}"
    print(f"  {row.area:6.1f} m², {row.rooms:.0f} rooms, age {age:>7}, {row.district:<7}"
          f" -> price {price:7.2f}")
