"""A worker's read cache keeps the prepared rows of the partitions it read for the later
passes (kernel_lab.core.rows.mapreduce._ReadCache): the same bits as rows read afresh, and
raw rows or rows of another plan give way to the plan in use."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core.rows import align_parts
from kernel_lab.core.rows import mapreduce as base
from kernel_lab.core.rows.mapreduce import (
    LocalParts,
    RowPlan,
    part_rows,
    reduce_blocks,
    set_read_cache,
)
from kernel_lab.core.rows.prepare import column_stats, prepared_plan

distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from kernel_lab.engine.cluster import connect  # noqa: E402  (after the importorskip)
from kernel_lab.engine.dask_parts import DaskParts  # noqa: E402

ROWS = (700, 1300, 900, 1100, 800, 1200, 1000, 1000)


@pytest.fixture(scope="module")
def cluster():
    with connect(workers=2, memory_limit="1GB") as c:
        yield c


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Eight Parquet files of unequal sizes (8,000 rows × 5 features and a target)."""
    path = tmp_path_factory.mktemp("rows")
    rng = np.random.default_rng(11)
    for k, n in enumerate(ROWS):
        X = rng.standard_normal((n, 5)) * np.arange(1, 6) + 3.0
        y = X @ np.arange(1.0, 6.0) + rng.standard_normal(n)
        columns = {f"x{j + 1}": X[:, j] for j in range(5)}
        columns["y"] = y
        pq.write_table(pa.table(columns), path / f"part-{k}.parquet")
    return path


def _parts(folder):
    from kernel_lab.data.partitioned import open_partitioned

    source = open_partitioned(folder)
    return align_parts(source.parts, source.n, 512), source.n


# module-level task functions: they run on the workers


def _where_and_kept(part, plan):
    """The worker running the task, and whether its cache held the part's prepared
    training rows before the task read them."""
    from distributed import get_worker

    key = (base._cache_key(part), f"{base._plan_key(plan)}:train")
    kept = key in base.READ_CACHE.entries
    rows = part_rows(part, plan)
    return get_worker().address, kept, float(rows.X.sum())


def _block_sums(rows):
    return np.concatenate([rows.X.sum(axis=0), [rows.y @ rows.y]])


# ---------------------------------------------------------------------------------------


def test_kept_prepared_rows_give_the_bits_of_rows_read_afresh(cluster, folder):
    """Statistics, then sums over the standardised training rows, three times on the
    cluster (the later passes from the workers' caches) and once in this process without
    any cache: the same bits; the kept arrays are read-only."""
    parts, n = _parts(folder)
    dask = DaskParts(parts, cluster.client)
    plan, _ = prepared_plan(RowPlan.split(9, n, 0.2), column_stats(dask, RowPlan.split(9, n, 0.2)))
    runs = [reduce_blocks(dask, _block_sums, plan) for _ in range(3)]
    set_read_cache(0)
    try:
        here = LocalParts(parts)
        plan_here, _ = prepared_plan(RowPlan.split(9, n, 0.2),
                                     column_stats(here, RowPlan.split(9, n, 0.2)))
        fresh = reduce_blocks(here, _block_sums, plan_here)
    finally:
        set_read_cache(0)
    np.testing.assert_array_equal(plan.mean, plan_here.mean)
    for got in runs:
        np.testing.assert_array_equal(got, fresh)
    # in this process: the kept rows are read-only, and equal to rows read without a cache
    set_read_cache(64 * 2**20)
    try:
        kept = part_rows(parts[3], plan)
        again = part_rows(parts[3], plan)
        assert again.X is kept.X and not kept.X.flags.writeable
        set_read_cache(0)
        np.testing.assert_array_equal(part_rows(parts[3], plan).X, kept.X)
    finally:
        set_read_cache(0)


def test_raw_rows_and_rows_of_another_plan_give_way_to_the_plan_in_use(folder):
    """The raw rows of the statistics pass are kept only in free room and give way to
    prepared rows; prepared rows of an earlier plan give way to the plan in use; rows of
    the plan in use never push each other out (a scan keeps its first partitions)."""
    parts, n = _parts(folder)
    cache = base.READ_CACHE
    one = parts[0].rows * 6 * 8  # a part's raw rows, about
    set_read_cache(3 * one)
    try:
        for part in parts[:3]:
            cache.read(part)
        assert sum(k[1] == "raw" for k in cache.entries) >= 2
        plan = RowPlan.split(1, n, 0.25)
        for part in parts[:4]:
            part_rows(part, plan)
        kinds = [k[1] for k in cache.entries]
        assert "raw" not in kinds or kinds.count("raw") < 2
        kept_first = [k for k in cache.entries if k[1] != "raw"]
        assert kept_first  # the plan's rows are kept
        other = RowPlan.split(2, n, 0.25)
        for part in parts[:4]:
            part_rows(part, other)
        assert all(k[1].startswith(base._plan_key(other)) for k in cache.entries)
        assert cache.used <= cache.limit
        before = list(cache.entries)
        for part in parts[4:]:  # no room left for them: the first ones stay
            part_rows(part, other)
        assert list(cache.entries)[:len(before)] == before
    finally:
        set_read_cache(0)
