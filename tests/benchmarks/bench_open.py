"""Benchmark: opening a million-row CSV, through the split and the standardisation.

Run: ``python tests/benchmarks/bench_open.py [--rows 1000000] [--repeat 5]``.

Writes a rows × 21 numeric CSV (20 inputs uniform on [0, 1], a Friedman-like target, a
header row: bench_scale.py's table) in a temporary folder, then times, in a fresh child
process each and taking turns (pandas, Kernel Lab, pandas, …, so that a shared machine's
drift falls on both):

- ``pandas.read_csv(path)`` — the reference;
- ``DataSource.from_spec(path).open(0)`` — what a run does with ``--data path``: the read,
  the checks for missing and infinite values, the keyed split, the training rows' column
  statistics, the filled and standardised training and test rows (the one in-memory
  part) and the leakage check on a keyed sample.

pandas is imported before the clock starts in both. Target (issue 43): the open costs at
most 1.5× the read, by the medians of the wall times (the minimum is printed too: the
least disturbed run of each).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_scale import write_data  # this folder, first on the path of a script
from perfdoc import start

CHILD = r"""
import json, resource, sys, time
import pandas as pd
from kernel_lab.data.source import DataSource
kind, path = sys.argv[1], sys.argv[2]
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
if kind == "pandas":
    out = pd.read_csv(path)
else:
    out = DataSource.from_spec(path).open(0)
seconds = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "user": r1.ru_utime - r0.ru_utime,
                  "sys": r1.ru_stime - r0.ru_stime}))
"""


def child(kind: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(path)], capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{kind} failed: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    rec = start(__file__, __doc__)  # the probe printed first, as every benchmark does
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        csv = write_data(Path(tmp), args.rows)[0]
        print(f"{args.rows:,} × 21 CSV, {csv.stat().st_size / 2**20:.0f} MB")
        runs: dict[str, list[dict]] = {"pandas": [], "open": []}
        for _ in range(args.repeat):
            for kind in runs:
                runs[kind].append(child(kind, csv))
        for kind, label in (("pandas", "pandas.read_csv"), ("open", "DataSource.open")):
            wall = [r["seconds"] for r in runs[kind]]
            cpu = [r["user"] + r["sys"] for r in runs[kind]]
            print(f"{label:16s} wall min {min(wall):6.2f} s, median {statistics.median(wall):6.2f}"
                  f" s; CPU (user + sys) min {min(cpu):6.2f} s, median "
                  f"{statistics.median(cpu):6.2f} s")
        ratio = statistics.median(r["seconds"] for r in runs["open"]) / statistics.median(
            r["seconds"] for r in runs["pandas"])
        best = min(r["seconds"] for r in runs["open"]) / min(r["seconds"] for r in runs["pandas"])
        print(f"open ÷ read_csv  {ratio:6.2f} × by the medians, {best:.2f} × by the minima "
              f"(target ≤ 1.5){'' if ratio <= 1.5 else '  ← MISSED'}")
        rec.figure(f"open the {args.rows:,}-row CSV through the split and the "
                   "standardisation ÷ pandas.read_csv (medians)", ratio, "×", 1.5)
    rec.save()


if __name__ == "__main__":
    main()
