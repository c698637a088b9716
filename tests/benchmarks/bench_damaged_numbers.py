"""Benchmark: the checks against damaged numbers cost little next to reading the file.

Run: ``python tests/benchmarks/bench_damaged_numbers.py [--rows 1000000] [--repeat 3]``.

A table of ``rows`` × 20 features and a target (float64, standard normal, 1 % of the
feature cells missing) is checked for values beyond ±1e150
(:func:`~kernel_lab.data.table.refuse_huge_values`, what every load does) and, for
comparison, scanned as the missing-value check scans it
(:func:`~kernel_lab.data.table.apply_nan_policy`). The same table is read whole through
``load_table`` as ``.npy`` (memory-mapped, read by the checks themselves), and as Parquet
(written with page checksums and the footer's statistics, both checked by ``load_table``):
pyarrow's own read of the same file with and without verification gives the checksums'
cost, :func:`~kernel_lab.data.parquet.check_footer_range` on every column the
statistics'.

Target (a ratio measured in the same run, not scaled): the magnitude check at most 5 % of
the Parquet load. Page verification is a CRC-32 of every page read; its cost is recorded,
not judged: it is kept on, as the only way to tell a damaged page whose numbers look
plausible, and a file written without checksums (the writers' default) pays nothing.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import perfdoc  # this folder, first on the path of a script
import pyarrow as pa
import pyarrow.parquet as pq
from timing import best_of

from kernel_lab.data.parquet import check_footer_range
from kernel_lab.data.read import load_table
from kernel_lab.data.table import Table, apply_nan_policy, refuse_huge_values

#: The magnitude check's share of a Parquet load, at most.
CHECK_SHARE = 0.05


def main() -> None:
    rec = perfdoc.start(__file__, __doc__)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, p = args.rows, 20
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, p))
    X[rng.random((n, p)) < 0.01] = np.nan
    y = rng.normal(size=n)
    names = [f"x{j + 1}" for j in range(p)]

    check, _ = best_of(lambda: refuse_huge_values("t", X, y, names, "y"), args.repeat)
    scan, _ = best_of(lambda: apply_nan_policy(Table(X, y, names, "y"), "fill", Path("t")),
                      args.repeat)
    print(f"{n:,} × {p} features and a target ({X.nbytes / 2**20:,.0f} MiB):")
    print(f"  magnitude check:                 {1e3 * check:8.1f} ms")
    print(f"  the missing-value scan (fill):   {1e3 * scan:8.1f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        npy = Path(tmp) / "t.npy"
        np.save(npy, np.column_stack([X, y]))
        t_npy, table = best_of(lambda: load_table(npy, nan_policy="fill"), args.repeat)
        del table
        parquet = Path(tmp) / "t.parquet"
        pq.write_table(pa.table({**{name: X[:, j] for j, name in enumerate(names)}, "y": y}),
                       parquet, write_page_checksum=True)
        t_load, table = best_of(lambda: load_table(parquet, nan_policy="fill"), args.repeat)
        del table
        t_plain, _ = best_of(lambda: pq.ParquetFile(parquet).read(), args.repeat)
        meta = pq.ParquetFile(parquet).metadata
        columns = [np.ascontiguousarray(X[:, j]) for j in range(p)] + [y]

        def footer() -> None:
            for name, values in zip([*names, "y"], columns, strict=True):
                check_footer_range(parquet, meta, name, pa.float64(), values)

        t_footer, _ = best_of(footer, args.repeat)
        t_verified, _ = best_of(
            lambda: pq.ParquetFile(parquet, page_checksum_verification=True).read(),
            args.repeat)
    print(f"  load_table of the .npy:          {1e3 * t_npy:8.1f} ms "
          f"(the check: {check / t_npy:.1%} of it)")
    print(f"  load_table of the Parquet file:  {1e3 * t_load:8.1f} ms "
          f"(the check: {check / t_load:.1%} of it; target ≤ {CHECK_SHARE:.0%})")
    print(f"  pyarrow read, not verified:      {1e3 * t_plain:8.1f} ms")
    extra = t_verified - t_plain
    print(f"  pyarrow read, pages verified:    {1e3 * t_verified:8.1f} ms "
          f"(+{1e3 * extra:.1f} ms: {extra / t_load:.1%} of the Parquet load_table)")
    print(f"  footer statistics check:         {1e3 * t_footer:8.1f} ms "
          f"({t_footer / t_load:.1%} of the Parquet load_table)")
    rec.figure(f"magnitude check, {n:,} × {p}", 1e3 * check, "ms")
    rec.figure("missing-value scan, same table (for comparison)", 1e3 * scan, "ms")
    rec.figure("load_table of the .npy (memory-mapped)", 1e3 * t_npy, "ms")
    rec.figure("load_table of the Parquet file (pages verified)", 1e3 * t_load, "ms")
    rec.figure("magnitude check / Parquet load_table", check / t_load, "ratio", CHECK_SHARE)
    rec.figure("pyarrow read, not verified", 1e3 * t_plain, "ms")
    rec.figure("pyarrow read, pages verified", 1e3 * t_verified, "ms")
    rec.figure("footer statistics check, every column", 1e3 * t_footer, "ms")
    rec.save()


if __name__ == "__main__":
    main()
