"""Partitioned data in a local process pool (PoolParts): the numbers of this process, bit
for bit; progress, Cancel, a task's error and a dead pool process reported."""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")

import pandas as pd

from kernel_lab.core.errors import DataError
from kernel_lab.core.progress import Cancelled, Progress
from kernel_lab.core.rows import (
    LocalParts,
    RowPlan,
    array_parts,
    blocks,
    column_stats,
    keyed_subset,
    standardize_plan,
    take_rows,
)
from kernel_lab.engine.executors import WorkerLost, kept_pool
from kernel_lab.engine.pool_parts import PoolParts, PoolRunner
from kernel_lab.engine.runner import parts_runner, run_experiment
from tests.engine.test_partitioned_runs import CURVE, NYSTROM, N, P, _rows

# the rows, and the parameters, of the runs on a cluster (six files here, one of one row)
CUTS = [0, 170, 171, 500, 800, 1234, N]
BLOCK = 128


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The rows as Parquet files of unequal sizes."""
    X, y = _rows()
    path = tmp_path_factory.mktemp("parquet") / "rows"
    path.mkdir()
    for k, (a, b) in enumerate(itertools.pairwise(CUTS)):
        frame = pd.DataFrame(X[a:b], columns=[f"x{j + 1}" for j in range(P)])
        frame["y"] = y[a:b]
        frame.to_parquet(path / f"part-{k:02d}.parquet")
    return str(path)


@pytest.fixture(scope="module")
def file_parts(folder: str) -> list:
    from kernel_lab.data.partitioned import open_partitioned

    return list(open_partitioned(folder, target="y").parts)


def _gram_and_count(part, plan: RowPlan, landmarks: np.ndarray):
    """A per-part sum as the methods take them: kernel columns' Gram matrix and counts."""
    from kernel_lab.core.rows import part_rows

    rows = part_rows(part, plan)
    K = np.exp(-((rows.X[:, None, :] - landmarks[None]) ** 2).sum(-1))
    return K.T @ K, rows.X.sum(axis=0), rows.index.size


def _add3(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def _same(a, b) -> None:
    """Equal, bit for bit, through nested tuples, lists, arrays and dataclasses."""
    import dataclasses

    if dataclasses.is_dataclass(a):
        a, b = dataclasses.astuple(a), dataclasses.astuple(b)
    if isinstance(a, tuple | list):
        assert type(a) is type(b) and len(a) == len(b)
        for x, z in zip(a, b, strict=True):
            _same(x, z)
    elif a is None or isinstance(a, str | int):
        assert type(a) is type(b) and a == b, (a, b)
    else:
        x, z = np.asarray(a), np.asarray(b)
        assert x.dtype == z.dtype and np.array_equal(x, z, equal_nan=x.dtype.kind == "f")


def _checks(parts) -> list:
    """The same computations on a PartMap: statistics, a keyed subset, rows gathered,
    a reduction of per-part sums, and a map."""
    plan = standardize_plan(parts, RowPlan.split(7, N, 0.25))
    index = keyed_subset(parts, plan, 9, 25)
    landmarks = take_rows(parts, plan, index)
    return [column_stats(parts, plan), plan.mean, plan.scale, index, landmarks.X,
            landmarks.y, landmarks.index,
            parts.reduce(_gram_and_count, plan, landmarks.X, combine=_add3),
            parts.map(_gram_and_count, plan, landmarks.X)]


@pytest.mark.parametrize("source", ["arrays", "files"])
def test_map_and_reduce_equal_local_parts_bit_for_bit(source, file_parts):
    X, y = _rows()
    parts = array_parts(X, y, np.diff(CUTS).tolist()) if source == "arrays" else file_parts
    with PoolParts(parts, 2) as pool:
        _same(_checks(LocalParts(parts)), _checks(pool))


def test_arrays_are_shared_once_and_removed_at_close():
    from multiprocessing import shared_memory

    X, y = _rows()
    pool = PoolParts(array_parts(X, y, 3), 2)
    pool.map(_gram_and_count, RowPlan.split(1, N, 0.25), X[:3])
    name = pool._arrays.memory.name
    block = pool._arrays.memory
    assert block.size >= X.nbytes + y.nbytes
    pool.map(_gram_and_count, RowPlan.split(1, N, 0.25), X[:3])
    assert pool._arrays.memory is block  # not shared a second time
    pool.close()
    with pytest.raises(FileNotFoundError):
        shared_memory.SharedMemory(name=name)


def _kept_bytes(_task):
    from kernel_lab.core.rows.mapreduce import READ_CACHE

    time.sleep(0.3)  # the two tasks sent together go to the two processes
    return os.getpid(), READ_CACHE.used


def _kept_by_each() -> dict[int, int]:
    pool = kept_pool(2)
    got = dict(f.result() for f in [pool.submit(_kept_bytes, k) for k in range(2)])
    assert len(got) == 2
    return got


def test_what_the_processes_kept_for_a_run_is_dropped_when_it_ends(file_parts):
    pool = PoolParts(file_parts, 2)
    column_stats(pool, RowPlan.split(7, N, 0.25))
    assert sum(_kept_by_each().values()) > 0  # the partitions read are kept for the run
    pool.close()
    time.sleep(0.5)
    assert set(_kept_by_each().values()) == {0}


def test_progress_is_reported_per_partition_as_in_this_process(file_parts):
    plan = RowPlan.split(7, N, 0.25)
    here: list = []
    there: list = []
    column_stats(LocalParts(file_parts), plan, Progress(lambda f, m: here.append((f, m))))
    with PoolParts(file_parts, 2) as pool:
        column_stats(pool, plan, Progress(lambda f, m: there.append((f, m))))
    assert there == here
    assert len(here) == len(file_parts) and here[-1][0] == 1.0


def _fails_on_part_3(part, message: str):
    if part.index == 3:
        raise ValueError(message)
    return part.index


def test_an_error_in_a_task_is_reported_with_its_message_and_partition(file_parts):
    with PoolParts(file_parts, 2) as pool:
        with pytest.raises(ValueError, match="no good value in column x2") as info:
            pool.map(_fails_on_part_3, "no good value in column x2")
        notes = " ".join(getattr(info.value, "__notes__", []))
        assert "partition 4 of 6" in notes and "part-03.parquet" in notes
        assert "_fails_on_part_3" in str(info.value.__cause__)  # the task's own traceback
        # the pool serves the next call
        assert PoolParts(file_parts[:3], 2).map(_fails_on_part_3, "x") == [0, 1, 2]


def test_a_missing_value_in_a_file_is_the_data_error_of_this_process(tmp_path, folder):
    frame = pd.read_parquet(Path(folder) / "part-04.parquet")
    frame.loc[frame.index[5], "y"] = np.nan
    bad = tmp_path / "rows"
    bad.mkdir()
    for name in sorted(os.listdir(folder)):
        (frame if name == "part-04.parquet" else pd.read_parquet(Path(folder) / name)
         ).to_parquet(bad / name)
    here = there = None
    try:
        run_experiment("nystrom", NYSTROM, data=str(bad), data_options={"partitions": "keep"})
    except DataError as exc:
        here = str(exc)
    try:
        run_experiment("nystrom", NYSTROM, data=str(bad), data_options={"partitions": "keep"},
                       workers=2, backend="processes")
    except DataError as exc:
        there = str(exc)
    assert here is not None and there == here and "part-04.parquet" in there


def _kill_own_process(part, marker: str):
    """Kills the pool process that runs part 2 (as the out-of-memory killer would): every
    time, or, when ``marker`` names a file, only until that file exists."""
    if part.index == 2 and not (marker and Path(marker).exists()):
        if marker:
            Path(marker).write_text("died")
        os.kill(os.getpid(), signal.SIGKILL)
    return part.index * 10


def test_a_killed_pool_process_is_run_again_then_reported(tmp_path, file_parts):
    reports: list = []
    with PoolParts(file_parts, 2) as pool:
        got = pool.map(_kill_own_process, str(tmp_path / "marker"),
                       progress=Progress(lambda f, m: reports.append(m)))
        assert got == [10 * k for k in range(len(file_parts))]
        assert any("died" in m and "computing them again" in m for m in reports)
        start = time.monotonic()
        with pytest.raises(WorkerLost, match="died twice") as info:
            pool.map(_kill_own_process, "")
        assert time.monotonic() - start < 60
        assert "use fewer workers" in str(info.value)
        assert PoolParts(file_parts[:2], 2).map(_fails_on_part_3, "x") == [0, 1]


def _sleep(part, seconds: float):
    time.sleep(seconds)
    return os.getpid()


def test_cancel_stops_at_once_and_kills_what_still_computes(file_parts):
    asked = time.monotonic() + 1.0
    progress = Progress(None, lambda: time.monotonic() > asked)
    with PoolParts(file_parts, 2) as pool:
        pool.map(_sleep, 0.0)  # the pool's processes started
        pids = {p.pid for p in kept_pool(2)._processes.values()}
        start = time.monotonic()
        with pytest.raises(Cancelled):
            pool.map(_sleep, 60.0, progress=progress)
        assert time.monotonic() - start < 10
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids)
    assert PoolParts(file_parts[:2], 2).map(_fails_on_part_3, "x") == [0, 1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (killed, not yet reaped) counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def test_the_processes_backend_gets_the_pool():
    from kernel_lab.engine.executors import make_executor

    runner = parts_runner(make_executor(2, "processes"))
    assert isinstance(runner, PoolRunner)
    X, y = _rows()
    made = runner(array_parts(X, y, 2))
    assert isinstance(made, PoolParts) and made.workers == 2
    runner.close()
    assert made._arrays.memory is None


def _tables_equal(a, b) -> None:
    """Every number of the tables and summaries equal, timings aside."""
    assert list(a.table) == list(b.table)
    for key, col in a.table.items():
        if key.startswith("time"):
            continue
        np.testing.assert_array_equal(b.table[key], col, err_msg=key)
    assert a.summaries == b.summaries


@pytest.mark.parametrize("name,params", [("nystrom", NYSTROM), ("learning-curve", CURVE)])
def test_experiments_on_a_folder_give_the_numbers_of_this_process(name, params, folder,
                                                                  monkeypatch):
    # canonical blocks of 128 rows: the six files are read as parts of whole blocks, one
    # per file in which a block starts (the default block would make them one part)
    monkeypatch.setattr(blocks, "ROW_BLOCK", BLOCK)
    parts = sum(any(a <= k * BLOCK < b for k in range(N // BLOCK + 1))
                for a, b in itertools.pairwise(CUTS))
    assert 1 < parts < len(CUTS) - 1
    keep = {"partitions": "keep"}
    here = run_experiment(name, params, data=folder, data_options=keep)
    reports: list = []
    pooled = run_experiment(name, params, data=folder, data_options=keep, workers=2,
                            backend="processes", on_progress=lambda f, m: reports.append(m))
    assert "kept in 6 partitions" in " ".join(pooled.data["notes"])
    _tables_equal(here, pooled)
    assert any(f"/{parts} partitions)" in m for m in reports)


def test_a_run_cancelled_on_the_pool_stops(folder):
    """Cancelled once a tenth of the work is reported done (not after a fixed time: a fast
    machine finishes the run first): the run stops with Cancelled, well before its end."""
    seen: list[float] = []
    start = time.monotonic()
    with pytest.raises(Cancelled):
        run_experiment("nystrom", {**NYSTROM, "trials": 50}, data=folder,
                       data_options={"partitions": "keep"}, workers=2, backend="processes",
                       on_progress=lambda f, m: seen.append(f),
                       is_cancelled=lambda: bool(seen) and seen[-1] >= 0.1)
    assert max(seen) < 0.9
    assert time.monotonic() - start < 30


CRASH = """
import os, sys
import numpy as np
from kernel_lab.core.rows import array_parts
from kernel_lab.engine.executors import kill_pools
from kernel_lab.engine.pool_parts import PoolParts
from tests.engine.test_pool_parts import _fails_on_part_3

if __name__ == "__main__":
    X, y = np.ones((1000, 3)), np.ones(1000)
    pool = PoolParts(array_parts(X, y, 3), 2)
    assert pool.map(_fails_on_part_3, "x") == [0, 1, 2]
    print(pool._arrays.memory.name, flush=True)
    kill_pools()
    os._exit(0)  # as the window's worker process does when it is terminated
"""


def test_the_shared_block_of_a_process_killed_outright_is_removed(tmp_path):
    """No close(), no finally: Python's resource tracker unlinks the block once the
    process that made it is gone."""
    import subprocess
    import sys

    if not os.path.isdir("/dev/shm"):
        pytest.skip("shared memory blocks are not files here")
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    name = done.stdout.split()[-1]
    deadline = time.monotonic() + 20
    while os.path.exists(f"/dev/shm/{name}"):
        if time.monotonic() > deadline:
            pytest.fail(f"the shared block {name} outlived its process by 20 s")
        time.sleep(0.2)


def test_a_stop_that_kills_the_pool_leaves_its_manager_thread_whole(monkeypatch):
    """A stopped run with a partition still computing kills the pool. Its manager thread
    then fails every pending future; if one had been cancelled from this thread first,
    Python 3.11's ``terminate_broken`` raised ``InvalidStateError`` and the thread died
    without closing the pool. The kill is slowed here (0.5 s before the shutdown) so that
    the manager sees the dead process first, the order that load made happen."""
    import multiprocessing as mp
    import threading
    from concurrent.futures import ProcessPoolExecutor, wait

    from kernel_lab.engine import executors

    died: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda a: died.append(a.exc_value))
    kill = executors._kill_processes

    def slow_kill(pool):
        kill(pool)
        time.sleep(0.5)

    monkeypatch.setattr(executors, "_kill_processes", slow_kill)
    pool = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))
    futures = {pool.submit(time.sleep, 30): k for k in range(20)}
    deadline = time.monotonic() + 60
    while not any(f.running() for f in futures) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # the manager thread settled, waiting on its process
    parts = PoolParts(array_parts(np.ones((10, 2)), np.ones(10), 1), 1)
    parts._stop(pool, futures)
    done, _ = wait(list(futures), timeout=30)
    time.sleep(0.5)  # the manager thread's last steps
    assert len(done) == len(futures) and died == []
