"""Writing a run's files: ``result.json`` and ``curves.csv`` (``plot.png`` is drawn by
:mod:`kernel_lab.plotting.render`)."""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import numpy as np

from kernel_lab.engine.runner import RunResult


def write_curves_csv(result: RunResult, path: str | os.PathLike[str]) -> Path:
    """One column per curve, one row per grid point; missing values are empty cells."""
    path = Path(path)
    columns = list(result.table)
    arrays = [np.asarray(result.table[c], dtype=np.float64).ravel() for c in columns]
    rows = max((a.size for a in arrays), default=0)
    # each column as text at once (repr of Python floats: exact), padded with empty cells
    cells = [[repr(v) if math.isfinite(v) else "" for v in a.tolist()] + [""] * (rows - a.size)
             for a in arrays]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(zip(*cells, strict=True))
    return path


def write_result_json(result: RunResult, path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    path.write_text(result.to_json() + "\n", encoding="utf-8")
    return path


def write_run(result: RunResult, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``result.json`` and ``curves.csv`` into ``out_dir`` (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return {"result": write_result_json(result, out / "result.json"),
            "curves": write_curves_csv(result, out / "curves.csv")}
