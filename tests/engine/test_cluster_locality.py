"""A worker's read cache keeps the prepared rows of the partitions it read for the later
passes (kernel_lab.core.rows.mapreduce._ReadCache): the same bits as rows read afresh, and
raw rows or rows of another plan give way to the plan in use. Each partition's tasks go to
its home worker (kernel_lab.engine.dask_parts.home_workers), which reads and prepares it
once; a pass whose homes all died at once still ends."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from kernel_lab.core.rows import align_parts, blocks
from kernel_lab.core.rows import mapreduce as base
from kernel_lab.core.rows.mapreduce import (
    LocalParts,
    RowPlan,
    array_parts,
    part_rows,
    read_counts,
    reduce_blocks,
    set_read_cache,
)
from kernel_lab.core.rows.prepare import column_stats, prepared_plan

distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from kernel_lab.engine.cluster import connect  # noqa: E402  (after the importorskip)
from kernel_lab.engine.dask_parts import DaskParts, home_workers  # noqa: E402

ROWS = (700, 1300, 900, 1100, 800, 1200, 1000, 1000)


@pytest.fixture(scope="module")
def cluster():
    with connect(workers=2, memory_limit="1GB") as c:
        yield c


def _write(path, seed):
    rng = np.random.default_rng(seed)
    for k, n in enumerate(ROWS):
        X = rng.standard_normal((n, 5)) * np.arange(1, 6) + 3.0
        y = X @ np.arange(1.0, 6.0) + rng.standard_normal(n)
        columns = {f"x{j + 1}": X[:, j] for j in range(5)}
        columns["y"] = y
        pq.write_table(pa.table(columns), path / f"part-{k}.parquet")
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Eight Parquet files of unequal sizes (8,000 rows × 5 features and a target)."""
    return _write(tmp_path_factory.mktemp("rows"), 11)


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


# ---------------------------------------------------------------------------------------
# Locality: each partition's tasks on its home worker


class _Rows:
    def __init__(self, rows):
        self.rows = rows


def test_homes_share_the_rows_out_evenly_in_runs_of_neighbours():
    """16 equal partitions on 2 workers: the first 8 on the first worker by name, the
    last 8 on the other; unequal partitions by their rows; the same homes whatever the
    order the workers are named in."""
    equal = [_Rows(250) for _ in range(16)]
    homes = home_workers(equal, ["tcp://b", "tcp://a"])
    assert [homes[k] for k in range(16)] == ["tcp://a"] * 8 + ["tcp://b"] * 8
    assert home_workers(equal, ["tcp://a", "tcp://b"]) == homes
    unequal = [_Rows(n) for n in (100, 100, 100, 100, 400, 200)]
    homes = home_workers(unequal, ["w1", "w2"])
    rows = {w: sum(p.rows for k, p in enumerate(unequal) if homes[k] == w) for w in ("w1", "w2")}
    assert rows == {"w1": 400, "w2": 600}  # (the middle of the 400 rows lies past half)
    assert home_workers(unequal, []) == {} and home_workers([_Rows(0)], ["w"]) == {}


def _counts(dask_worker=None):
    return read_counts(clear=True)


def test_each_partition_is_read_and_prepared_once_on_its_home(cluster, tmp_path, monkeypatch):
    """Statistics, sums over the training rows three times and over the test rows twice
    on a 2-worker cluster whose caches hold every partition: each partition is read
    once, by its home worker, and its training and test rows prepared once each — and
    the sums are the bits of the run in this process."""
    monkeypatch.setattr(blocks, "ROW_BLOCK", 512)
    parts, n = _parts(_write(tmp_path, 12))  # files no earlier test has read
    dask = DaskParts(parts, cluster.client)
    assert dask.pinning
    cluster.client.run(_counts)  # from zero
    plan, _ = prepared_plan(RowPlan.split(5, n, 0.2), column_stats(dask, RowPlan.split(5, n, 0.2)))
    train = [reduce_blocks(dask, _block_sums, plan) for _ in range(3)]
    test = [reduce_blocks(dask, _block_sums, plan, which="test") for _ in range(2)]
    counts = cluster.client.run(_counts)
    homes = dict(dask.homes)
    assert sorted(set(homes.values())) == sorted(counts) and len(counts) == 2
    for k, part in enumerate(parts):
        where = {w: c[repr(part)] for w, c in counts.items() if repr(part) in c}
        assert where == {homes[k]: (1, 2)}, (k, where)
    set_read_cache(0)
    try:
        here = LocalParts(parts)
        for got in train:
            np.testing.assert_array_equal(got, reduce_blocks(here, _block_sums, plan))
        for got in test:
            np.testing.assert_array_equal(got, reduce_blocks(here, _block_sums, plan,
                                                             which="test"))
    finally:
        set_read_cache(0)


def _no_answer(dask_scheduler=None):
    raise RuntimeError("this scheduler cannot answer")


def test_the_workers_and_the_scheduler_answer_the_first_questions_together(
        cluster, folder, monkeypatch):
    """A DaskParts asks the workers (the share of memory they keep for partitions) and the
    scheduler (whether tasks may be pinned to their homes) at once: both answers are
    there; a scheduler that cannot answer leaves tasks unpinned but the workers' answer
    kept, as when the two were asked one after the other."""
    from kernel_lab.engine import dask_parts

    parts, _ = _parts(folder)
    both = DaskParts(parts, cluster.client)
    assert both.pinning
    assert both._memory and all(m["limit"] > 0 for m in both._memory)
    assert len(both._memory) == 2
    monkeypatch.setattr(dask_parts, "_scheduler_can_release", _no_answer)
    workers_only = DaskParts(parts, cluster.client)
    assert not workers_only.pinning
    assert len(workers_only._memory) == 2


def _die_together(part, marks):
    """Each of two partitions' first task waits for the other's, then both kill their
    workers at once (their nannies restart them under new addresses); later tasks
    compute."""
    marks = Path(marks)
    (marks / f"ran-{part.index}").write_text("ran")
    dead = marks / f"died-{part.index}"
    if not dead.exists():
        deadline = time.monotonic() + 20
        while (not all((marks / f"ran-{k}").exists() for k in (0, 1))
               and time.monotonic() < deadline):
            time.sleep(0.01)
        dead.write_text("died")
        os.kill(os.getpid(), signal.SIGKILL)
    X, y = part.read()
    return X.sum(axis=0) + y.sum()


def test_a_pass_whose_home_workers_all_died_at_once_still_ends(cluster, tmp_path):
    """Both home workers die at once during a pass: their tasks wait in Dask's no-worker
    state restricted (loosely) to addresses that are gone, which Dask alone never hands
    to the restarted workers; the run hands them on and ends with the numbers of this
    process, and the next pass has new homes."""
    rng = np.random.default_rng(4)
    X, y = rng.standard_normal((600, 3)), rng.standard_normal(600)
    dask = DaskParts(array_parts(X, y, 2), cluster.client)
    assert dask.pinning
    out = {}

    def run():
        try:
            out["value"] = dask.map(_die_together, str(tmp_path))
        except BaseException as exc:  # handed to the test, which inspects it
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(120)  # bounded: a hang fails here
    assert not thread.is_alive()
    assert "error" not in out, out
    first = dict(dask.homes)  # the pass's homes, the workers that died
    assert len(set(first.values())) == 2
    assert (tmp_path / "died-0").exists() and (tmp_path / "died-1").exists()
    want = LocalParts(array_parts(X, y, 2)).map(_die_together, str(tmp_path))
    for a, b in zip(out["value"], want, strict=True):
        np.testing.assert_array_equal(a, b)
    deadline = time.monotonic() + 60
    while len(cluster.client.scheduler_info()["workers"]) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    dask.map(_die_together, str(tmp_path))
    assert len(set(dask.homes.values())) == 2
    assert set(dask.homes.values()).isdisjoint(first.values())


def test_rows_that_do_not_fit_are_read_once_per_task_not_once_per_call(folder):
    """A cache too small for any part still holds the last prepared rows of each kind
    until the next miss of that kind: the calls of one task (every cell's, in a fused
    pass) read the part once; the next part's rows take their place."""
    parts, n = _parts(folder)
    plan = RowPlan.split(3, n, 0.25)
    set_read_cache(1024)  # smaller than any part's rows
    read_counts(clear=True)
    try:
        first = part_rows(parts[0], plan)
        for _ in range(5):
            assert part_rows(parts[0], plan).X is first.X
        test = part_rows(parts[0], plan, "test")
        assert part_rows(parts[0], plan).X is first.X  # the kinds held side by side
        assert part_rows(parts[0], plan, "test").X is test.X
        assert not first.X.flags.writeable and not base.READ_CACHE.entries
        part_rows(parts[1], plan)
        again = part_rows(parts[0], plan)
        assert again.X is not first.X
        np.testing.assert_array_equal(again.X, first.X)
        assert read_counts() == {repr(parts[0]): (3, 3), repr(parts[1]): (1, 1)}
    finally:
        set_read_cache(0)
        read_counts(clear=True)
    assert not base.READ_CACHE.current  # a cache of size 0 holds nothing


def test_a_part_whose_rows_fit_is_read_once_for_both_kinds(folder):
    """Room for the prepared training and test rows of two parts but not for their raw
    rows beside them: the statistics pass's raw rows give way, and each part's test rows
    are prepared from the read its training rows came from — one read per part."""
    parts, n = _parts(folder)
    plan = RowPlan.split(6, n, 0.25)
    two = parts[:2]
    prepared = sum(p.rows * (5 + 2) * 8 for p in two)
    set_read_cache(prepared + 4096)
    read_counts(clear=True)
    try:
        for part in two:  # the statistics pass: raw rows, kept in free room
            base.READ_CACHE.read(part)
        train = [part_rows(part, plan) for part in two]
        test = [part_rows(part, plan, "test") for part in two]
        assert read_counts() == {repr(p): (1, 2) for p in two}
        assert all(k[1] != "raw" for k in base.READ_CACHE.entries)
        set_read_cache(0)
        for part, a, b in zip(two, train, test, strict=True):
            np.testing.assert_array_equal(part_rows(part, plan).X, a.X)
            np.testing.assert_array_equal(part_rows(part, plan, "test").X, b.X)
    finally:
        set_read_cache(0)
        read_counts(clear=True)
