"""A run's files: result.json and curves.csv against element-by-element references."""

from __future__ import annotations

import csv
import json
import math

import numpy as np

from kernel_lab.engine.jsonable import jsonable
from kernel_lab.engine.output import write_run
from kernel_lab.engine.runner import RunResult


def _reference(value):
    """The element-by-element sanitiser the fast paths must agree with."""
    if isinstance(value, dict):
        return {str(k): _reference(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_reference(v) for v in value]
    if hasattr(value, "tolist"):
        return _reference(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def test_jsonable_arrays_equal_the_element_by_element_version():
    rng = np.random.default_rng(0)
    values = {
        "finite": rng.normal(size=7),
        "holes": np.array([1.5, np.nan, -np.inf, 2.0, np.inf]),
        "matrix": np.array([[0.1, np.nan], [np.inf, 3.0]]),
        "ints": np.arange(4, dtype=np.int32),
        "flags": np.array([True, False]),
        "single": np.array([np.nan, 0.25], dtype=np.float32),
        "scalar": np.float64(np.nan),
        "nested": [np.array([1.0, np.nan]), (np.int64(3), "text")],
    }
    got = jsonable(values)
    assert got == _reference(values)
    assert json.loads(json.dumps(got, allow_nan=False)) == got


def test_curves_csv_cells_are_exact_and_ragged_columns_padded(tmp_path):
    table = {"x": np.array([0.1, 1 / 3, 2e-300, 7.0]), "y": np.array([np.nan, 5.5]),
             "z": np.array([np.inf, -0.0, 1e308])}
    result = RunResult("nystrom", {}, 0, {}, table=table)
    paths = write_run(result, tmp_path)
    with open(paths["curves"], newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["x", "y", "z"]
    assert len(rows) == 5
    for i, row in enumerate(rows[1:]):
        for name, cell in zip(rows[0], row, strict=True):
            a = table[name]
            if i >= a.size or not np.isfinite(a[i]):
                assert cell == ""
            else:
                assert float(cell) == a[i] and cell == repr(float(a[i]))
    saved = json.loads(paths["result"].read_text(encoding="utf-8"))
    assert saved["table"]["y"] == [None, 5.5]
