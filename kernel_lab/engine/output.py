"""Writing a run's files: ``result.json`` and ``curves.csv`` (``plot.png`` is drawn by
:mod:`kernel_lab.plotting.render`)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from kernel_lab.engine.runner import RunResult


def write_curves_csv(result: RunResult, path: str | os.PathLike[str]) -> Path:
    """One column per curve, one row per grid point; missing values are empty cells."""
    path = Path(path)
    columns = list(result.table)
    arrays = [np.asarray(result.table[c], dtype=np.float64) for c in columns]
    rows = max((a.size for a in arrays), default=0)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for i in range(rows):
            writer.writerow(
                ["" if i >= a.size or not np.isfinite(a[i]) else repr(float(a[i]))
                 for a in arrays])
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
