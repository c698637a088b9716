"""Benchmark: a million points on one machine — what is measured so far.

Run: ``python tests/benchmarks/bench_scale.py [--rows 1000000]``.

Writes a rows × 21 numeric table (20 features and a target) as CSV (~260 MB at a million
rows, a header row) and as a float64 ``.npy`` (168 MB) in a temporary folder. Each load
runs in a child process, so its peak memory (``resource.getrusage``) is its own:

- CSV: ``load_table`` (numpy's C parser for numeric tables) against ``pandas.read_csv``
  — target ≤ 2× (the fast path is pandas' own parser when pandas is installed); and the strict
  reader (tables with text, missing values or quotes) on a tenth of the rows;
- ``.npy``: ``load_table`` memory-maps the array — target: peak memory above the
  interpreter's baseline ≤ 1.2× the array's size.

The other targets of the scale work (streaming baselines, the CG Nyström solver, runs on
the 1M data) are not implemented yet.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = r"""
import json, resource, sys, time
import numpy as np
from kernel_lab.core import loaders
kind, path = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
try:  # imported before the clock starts for both readers (once per process: reported apart)
    import pandas as pd
except ImportError:
    pd = None
import_seconds = time.perf_counter() - t0
def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
base = status("VmHWM")
t0 = time.perf_counter()
if kind == "pandas":
    out = pd.read_csv(path)
elif kind == "strict":
    from pathlib import Path
    p = Path(path)
    out = loaders._read_csv(p, p.read_bytes(), None, fast=False)
else:
    out = loaders.load_table(path)
seconds = time.perf_counter() - t0
# measured while the result is alive: the high-water mark of the resident set, and the
# anonymous (not file-backed) part of it now
print(json.dumps({"seconds": seconds, "import_seconds": import_seconds, "base_kb": base, "peak_kb": status("VmHWM"),
                  "anon_kb": status("RssAnon"), "file_kb": status("RssFile")}))
"""


def child(kind: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(path)], capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        M = rng.normal(size=(args.rows, 21))
        csv, npy, small = Path(tmp) / "big.csv", Path(tmp) / "big.npy", Path(tmp) / "s.csv"
        header = ",".join([f"x{i + 1}" for i in range(20)] + ["y"])
        np.savetxt(csv, M, delimiter=",", fmt="%.10g", header=header, comments="")
        np.savetxt(small, M[: max(args.rows // 10, 1)], delimiter=",", fmt="%.10g",
                   header=header, comments="")
        np.save(npy, M)
        del M
        print(f"{args.rows:,} × 21: CSV {csv.stat().st_size / 2**20:.0f} MB, "
              f".npy {npy.stat().st_size / 2**20:.0f} MB")
        fast, pandas = child("fast", csv), child("pandas", csv)
        print(f"CSV  load_table                {fast['seconds']:8.2f} s  (+ "
              f"{fast['import_seconds']:.2f} s to import pandas, once per process)")
        if "error" in pandas:
            print(f"CSV  pandas.read_csv           not available ({pandas['error']})")
        else:
            ratio = fast["seconds"] / pandas["seconds"]
            print(f"CSV  pandas.read_csv           {pandas['seconds']:8.2f} s")
            print(f"CSV  load_table / pandas       {ratio:8.2f} ×  (target ≤ 2)"
                  + ("" if ratio <= 2 else "  ← MISSED"))
        strict, fast_small = child("strict", small), child("fast", small)
        print(f"CSV  strict reader, a tenth    {strict['seconds']:8.2f} s "
              f"({strict['seconds'] / fast_small['seconds']:.1f}× the fast path)")
        mapped = child("fast", npy)
        size_kb = npy.stat().st_size / 1024
        over = (mapped["peak_kb"] - mapped["base_kb"]) / size_kb
        print(f".npy load_table                {mapped['seconds']:8.2f} s, peak resident "
              f"memory {over:.2f}× the array  (target ≤ 1.2)"
              + ("" if over <= 1.2 else "  ← MISSED"))
        print(f"     of it now: {mapped['file_kb'] / size_kb:.2f}× file pages (the mapped "
              f"array), {mapped['anon_kb'] / 1024:.0f} MB anonymous in all")


if __name__ == "__main__":
    main()
