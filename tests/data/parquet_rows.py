"""Test data: a smooth regression table written as a folder of Parquet files of given
(unequal) sizes, for the tests that fit the same rows in memory and kept in partitions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


def regression_rows(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of ``p`` features on scales 1 … p and a smooth noisy target."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p)) * np.arange(1, p + 1)
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=n)
    return X, y


def write_parquet_parts(root: Path, X: np.ndarray, y: np.ndarray, sizes: Sequence[int]
                        ) -> str:
    """Write the rows in order as ``part-00.parquet`` … with ``sizes`` rows each (columns
    ``x1 … xp`` and ``y``); return the folder."""
    import pandas as pd

    assert sum(sizes) == len(y)
    start = 0
    for k, size in enumerate(sizes):
        frame = pd.DataFrame(X[start:start + size],
                             columns=[f"x{j + 1}" for j in range(X.shape[1])])
        frame["y"] = y[start:start + size]
        frame.to_parquet(root / f"part-{k:02d}.parquet")
        start += size
    return str(root)
