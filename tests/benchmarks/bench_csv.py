"""Benchmark: reading a large numeric CSV — the fast path against pandas and the strict reader.

Run: ``python tests/benchmarks/bench_csv.py [--rows 1000000]``.

Writes a rows × 21 numeric table (20 features and a target, a header row, ~190 MB at a
million rows) in a temporary folder, then measures in the same run:

- ``load_table`` (numpy's C parser for numeric tables) against ``pandas.read_csv`` — target
  ≤ 2× (pandas is not a dependency: install it to compare);
- the strict reader (per-cell checks, used for tables with text, missing values or
  quotes) for reference, on a tenth of the rows.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from kernel_lab.core import loaders


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.csv"
        M = rng.normal(size=(args.rows, 21))
        header = ",".join([f"x{i + 1}" for i in range(20)] + ["y"])
        np.savetxt(path, M, delimiter=",", fmt="%.10g", header=header, comments="")
        size = path.stat().st_size / 2**20
        t_fast, table = timed(lambda: loaders.load_table(path))
        assert table.X.shape == (args.rows, 20)
        print(f"{args.rows:,} × 21 numeric CSV, {size:.0f} MB")
        print(f"load_table (fast path)          {t_fast:8.2f} s")
        try:
            import pandas as pd
        except ImportError:
            print("pandas.read_csv                 not installed (pip install pandas)")
        else:
            t_pd, frame = timed(lambda: pd.read_csv(path))
            assert np.array_equal(frame.to_numpy()[:, :20], table.X)
            print(f"pandas.read_csv                 {t_pd:8.2f} s")
            ratio = t_fast / t_pd
            print(f"load_table / pandas             {ratio:8.2f} ×  (target ≤ 2)"
                  + ("" if ratio <= 2 else "  ← MISSED"))
        small = Path(tmp) / "small.csv"
        k = max(args.rows // 10, 1)
        np.savetxt(small, M[:k], delimiter=",", fmt="%.10g", header=header, comments="")
        raw = small.read_bytes()
        t_strict, strict = timed(lambda: loaders._read_csv(small, raw, None, fast=False))
        t_fast_small, fast = timed(lambda: loaders._read_csv(small, raw, None))
        assert np.array_equal(strict.X, fast.X)
        print(f"strict reader, {k:,} rows        {t_strict:8.2f} s "
              f"({t_strict / t_fast_small:.1f}× the fast path on the same rows)")


if __name__ == "__main__":
    main()
