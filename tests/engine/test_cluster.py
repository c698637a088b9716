"""Partitions on a Dask cluster (kernel_lab.engine.cluster): the numbers of LocalParts (a
reduction bit for bit), progress per partition, Cancel cancels the futures, a dead worker is
retried or reported within seconds, and an external scheduler gives the same numbers."""

from __future__ import annotations

import contextlib
import dataclasses
import operator
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from kernel_lab.core.errors import DataError, ParameterError
from kernel_lab.core.progress import Cancelled, Progress
from kernel_lab.core.rows import align_parts
from kernel_lab.core.rows.mapreduce import (
    LocalParts,
    RowPlan,
    array_parts,
    keyed_subset,
    part_rows,
    reduce_blocks,
)
from kernel_lab.core.rows.prepare import standardize_plan

distributed = pytest.importorskip("distributed")

from kernel_lab.engine.cluster import (  # noqa: E402  (after the importorskip)
    SHARE_BYTES,
    WorkerLost,
    connect,
    peak_memory,
    reset_peak_memory,
    worker_memory_limit,
)
from kernel_lab.engine.dask_parts import DaskParts  # noqa: E402
from kernel_lab.engine.executors import DaskExecutor  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with connect(workers=2, memory_limit="1GB") as c:
        yield c


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((997, 6)) * np.arange(1, 7)
    y = X @ rng.standard_normal(6) + 0.1 * rng.standard_normal(997)
    return X, y


# module-level task functions: they run on the workers


def _gram(part, plan, W):
    rows = part_rows(part, plan)
    Z = np.cos(rows.X @ W[:, :40])
    return np.stack([Z.T @ Z, np.outer(Z.T @ rows.y, np.ones(Z.shape[1]))])


def _rows_of(part):
    return part.index, part.start, part.rows


def _slow(part, stop_file):
    deadline = time.monotonic() + 60
    while not Path(stop_file).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return part.index


def _die_once(part, marker):
    if part.index == 1 and not Path(marker).exists():
        Path(marker).write_text("died")
        os.kill(os.getpid(), signal.SIGKILL)
    X, y = part.read()
    return X.sum(axis=0) + y.sum()


def _touch_200mb():
    a = np.ones(25 * 2**20)  # 200 MiB, touched, then freed
    return float(a[-1])


def _square(task):
    return task * task


def _die_always(part, *args):
    os.kill(os.getpid(), signal.SIGKILL)


def _plan_and_W(X, y):
    local = LocalParts(array_parts(X, y, 1))
    plan = standardize_plan(local, RowPlan.split(7, X.shape[0], 0.2))
    W = np.random.default_rng(1).standard_normal((X.shape[1], 40))
    return plan, W


def _in_thread(fn):
    """Run fn in a thread; returns (thread, out) with out["value"] or out["error"]."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed to the test, which inspects it
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def _scheduler_keys(client):
    return client.run_on_scheduler(lambda dask_scheduler: sorted(map(str,
                                                                     dask_scheduler.tasks)))


def _wait_for(condition, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


# ---------------------------------------------------------------------------------------


def _gram_of_block(rows, W):
    Z = np.cos(rows.X @ W)
    return np.concatenate([(Z.T @ Z).ravel(), Z.T @ rows.y])


def test_block_reductions_on_the_cluster_are_those_of_one_part_here(cluster, data):
    """Sums per canonical row block, merged as frontiers in the cluster's pairwise tree:
    7 unequal parts on 2 workers give the bits of one part in this process."""
    X, y = data
    plan, W = _plan_and_W(X, y)
    plan = dataclasses.replace(plan, block=64)
    sizes = [1, 200, 3, 64, 129, 500, 100]
    assert sum(sizes) == X.shape[0]
    here = reduce_blocks(LocalParts(array_parts(X, y, 1)), _gram_of_block, plan, W)
    parts = align_parts(array_parts(X, y, sizes), X.shape[0], plan.block)
    assert len(parts) == 6  # no block starts in the 3-row piece
    there = reduce_blocks(DaskParts(parts, cluster.client), _gram_of_block, plan, W)
    np.testing.assert_array_equal(there, here)


def test_map_and_reduce_equal_local_parts(cluster, data, monkeypatch):
    X, y = data
    plan, W = _plan_and_W(X, y)
    big = np.random.default_rng(2).standard_normal((X.shape[1], 6000))
    big[:, :40] = W
    local = LocalParts(array_parts(X, y, 7))
    dask = DaskParts(array_parts(X, y, 7), cluster.client)
    scattered = []

    async def scatter(data, **kw):  # what scatter_to_all sends (through Client._scatter)
        scattered.append((data, kw))
        return await type(cluster.client)._scatter(cluster.client, data, **kw)

    monkeypatch.setattr(cluster.client, "_scatter", scatter)
    assert dask.map(_rows_of) == local.map(_rows_of)
    want = local.reduce(_gram, plan, W)
    for Wk in (W, big):  # 1.9 KB, sent with each task; 288 KB, sent once to every worker
        scattered.clear()
        got = dask.reduce(_gram, plan, Wk)
        np.testing.assert_array_equal(got, want)  # the same tree: bit for bit
        assert [d[0] is Wk for d, _ in scattered] == ([True] if Wk is big else [])
        assert all(kw["broadcast"] for _, kw in scattered)
        for a, b in zip(dask.map(_gram, plan, Wk), local.map(_gram, plan, W), strict=True):
            np.testing.assert_array_equal(a, b)
    # a non-default combine, and a standardisation plan computed on the cluster
    split = RowPlan.split(7, X.shape[0], 0.2)
    got, want = standardize_plan(dask, split), standardize_plan(local, split)
    np.testing.assert_array_equal(got.mean, want.mean)
    np.testing.assert_array_equal(got.scale, want.scale)
    np.testing.assert_array_equal(keyed_subset(dask, plan, 99, 50),
                                  keyed_subset(local, plan, 99, 50))
    assert dask.reduce(_rows_of, combine=operator.add) == \
        local.reduce(_rows_of, combine=operator.add)


def test_one_part_and_no_parts(cluster, data):
    X, y = data
    plan, W = _plan_and_W(X, y)
    one = DaskParts(array_parts(X, y, 1), cluster)
    np.testing.assert_array_equal(one.reduce(_gram, plan, W),
                                  LocalParts(array_parts(X, y, 1)).reduce(_gram, plan, W))
    none = DaskParts([], cluster)
    assert none.map(_rows_of) == []
    with pytest.raises(ValueError, match="nothing to combine"):
        none.reduce(_rows_of)


def test_progress_reports_every_partition(cluster, data):
    X, y = data
    reports = []
    dask = DaskParts(array_parts(X, y, 5), cluster.client)
    dask.reduce(_rows_of, progress=Progress(lambda f, m: reports.append((f, m))),
                message="sums")
    assert [f for f, _ in reports] == pytest.approx([k / 5 for k in range(1, 6)])
    assert [m for _, m in reports] == [f"sums ({k}/5 partitions)" for k in range(1, 6)]


def test_a_task_error_reaches_the_caller_with_its_message(cluster, data):
    X, y = data
    X = X.copy()
    X[600, 1] = np.nan
    parts = array_parts(X, y, 5)
    assert parts[3].start <= 600 < parts[3].start + parts[3].rows
    plan = RowPlan.split(7, X.shape[0], 0.0)
    with pytest.raises(DataError) as err:
        DaskParts(parts, cluster.client).map(part_rows, plan)
    assert parts[3].describe() in str(err.value) and "row 600 " in str(err.value)
    assert _wait_for(lambda: not _scheduler_keys(cluster.client)), \
        _scheduler_keys(cluster.client)


def test_cancel_stops_the_futures(cluster, data, tmp_path):
    X, y = data
    stop = tmp_path / "stop"
    cancel = threading.Event()
    dask = DaskParts(array_parts(X, y, 6), cluster.client)
    try:
        thread, out = _in_thread(lambda: dask.map(
            _slow, str(stop), progress=Progress(is_cancelled=cancel.is_set)))
        # both workers busy with a partition that would take a minute
        assert _wait_for(lambda: sum(map(len, cluster.client.processing().values())) >= 2)
        assert "value" not in out and "error" not in out
        cancel.set()
        thread.join(5)  # not a partition's minute: at most a few ticks of 0.2 s
        assert not thread.is_alive()
        assert isinstance(out.get("error"), Cancelled), out
        # the run's tasks are gone from the scheduler
        assert _wait_for(lambda: not _scheduler_keys(cluster.client)), \
            _scheduler_keys(cluster.client)
    finally:
        stop.write_text("stop")  # lets the workers' running calls return


def test_a_worker_killed_once_is_retried(cluster, data, tmp_path):
    X, y = data
    marker = tmp_path / "died"
    dask = DaskParts(array_parts(X, y, 4), cluster.client)
    got = dask.map(_die_once, str(marker))
    assert marker.exists()  # a worker did die
    want = LocalParts(array_parts(X, y, 4)).map(_die_once, str(marker))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    # and in a reduction: the tree waits for the retry (the reference run: marker present)
    again = tmp_path / "died again"
    np.testing.assert_array_equal(
        dask.reduce(_die_once, str(again)),
        LocalParts(array_parts(X, y, 4)).reduce(_die_once, str(marker)))
    assert again.exists()
    # the nanny brings the killed worker back: the module's later tests need both (under
    # load that took longer than the next test took to start, which then saw one worker)
    assert _wait_for(lambda: cluster.workers() == 2, 60)


def test_a_partition_that_always_kills_its_worker_is_reported(cluster, data):
    X, y = data
    dask = DaskParts(array_parts(X, y, 2), cluster.client)
    thread, out = _in_thread(lambda: dask.map(_die_always))
    thread.join(120)  # bounded: a hang would fail here
    assert not thread.is_alive()
    err = out.get("error")
    assert isinstance(err, WorkerLost), out
    assert "kept dying" in str(err) and "partition" in str(err) and "memory" in str(err)
    # the cluster recovers its workers for later runs
    assert _wait_for(lambda: cluster.workers() == 2, 60)
    # with an argument sent to every worker, which may die with the workers holding it
    big = np.ones(SHARE_BYTES // 8)
    thread, out = _in_thread(lambda: dask.map(_die_always, big))
    thread.join(120)
    assert not thread.is_alive()
    err = out.get("error")
    assert isinstance(err, WorkerLost), out
    assert "died" in str(err) and "partition" in str(err) and "memory" in str(err)
    assert _wait_for(lambda: cluster.workers() == 2, 60)


def test_a_scatter_that_never_completes_fails_by_its_deadline(cluster, monkeypatch):
    """Dask bounds only a scatter's wait for workers, not the sending: a worker dying while
    it receives the value left the run waiting for ever. A sending that never completes
    is retried while the workers are checked, and fails with WorkerLost at the deadline."""
    import asyncio

    from kernel_lab.engine import cluster_wait as module

    attempts = []

    async def never(data, **kw):
        attempts.append(kw)
        await asyncio.sleep(3600)

    monkeypatch.setattr(cluster.client, "_scatter", never)
    monkeypatch.setattr(module, "SCATTER_TRY", 0.3)
    t0 = time.monotonic()
    with pytest.raises(WorkerLost, match=r"did not take an argument of 0\.5 MiB within 1\.5 s"):
        module.scatter_to_all(cluster.client, np.zeros(2**16), deadline=1.5)
    took = time.monotonic() - t0
    assert len(attempts) >= 2 and all(kw["broadcast"] for kw in attempts)
    assert took < 1.5 + 0.3 + 5.0  # the deadline, one attempt past it, the workers' check


def test_connect_refuses_an_unreachable_scheduler():
    with pytest.raises(ParameterError, match="cannot reach the Dask scheduler"):
        connect(scheduler=f"tcp://127.0.0.1:{_free_port()}", timeout=1)


def test_local_cluster_settings_and_peak_memory(cluster):
    assert _wait_for(lambda: cluster.workers() == 2, 60)  # a worker an earlier test killed
    info = cluster.client.scheduler_info(n_workers=-1)["workers"]
    assert len(info) == 2
    assert {w["nthreads"] for w in info.values()} == {1}
    assert {w["memory_limit"] for w in info.values()} == {10**9}
    assert all(w["host"] == "127.0.0.1" for w in info.values())
    assert 256 * 2**20 <= worker_memory_limit(2)
    assert cluster.describe().endswith("2 worker(s) × 1 thread(s), 1 GB each")
    peaks = peak_memory(cluster)
    assert set(peaks["workers"]) == set(info)
    assert peaks["max_worker"] == max(peaks["workers"].values()) > 10 * 2**20
    assert peaks["client"] > 10 * 2**20
    # the peaks count from a reset: a worker's 200 MiB shows, then is forgotten
    if reset_peak_memory(cluster):
        before = peak_memory(cluster)["max_worker"]
        cluster.client.run(_touch_200mb)
        high = peak_memory(cluster)["max_worker"]
        assert high >= before + 190 * 2**20
        assert reset_peak_memory(cluster)
        assert peak_memory(cluster)["max_worker"] < high - 150 * 2**20


def test_cancel_during_a_reduction_cancels_the_tree(cluster, data):
    X, y = data
    plan, W = _plan_and_W(X, y)
    reports = []

    def report(fraction, message):
        reports.append(fraction)
        if len(reports) == 2:
            raise Cancelled("cancelled")

    dask = DaskParts(array_parts(X, y, 8), cluster.client)
    with pytest.raises(Cancelled):
        dask.reduce(_gram, plan, W, progress=report)
    assert len(reports) == 2
    assert _wait_for(lambda: not _scheduler_keys(cluster.client)), \
        _scheduler_keys(cluster.client)


# ---------------------------------------------------------------------------------------
# an external scheduler and workers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _external(workers: int, nanny: bool = True):
    """`dask scheduler` and `dask worker --nthreads 1 --memory-limit 1GB` processes; every
    one is killed at the end (with its children: a nanny's worker)."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = []
    try:
        # scheduler and workers unpickle this module's functions by its name: its folder on
        # their path
        here = os.path.dirname(os.path.abspath(__file__))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (here, os.environ.get("PYTHONPATH", "")) if p)}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", str(port), "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            env=env))
        for _ in range(workers):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads",
                 "1", "--memory-limit", "1GB", "--host", "127.0.0.1", "--no-dashboard",
                 "--nanny" if nanny else "--no-nanny"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, env=env))
        with connect(scheduler=address, timeout=30) as c:
            assert _wait_for(lambda: c.workers() == workers, 60)
            yield c, procs
    finally:
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.mark.slow
def test_an_external_scheduler_gives_the_local_numbers(data):
    X, y = data
    plan, W = _plan_and_W(X, y)
    big = np.random.default_rng(2).standard_normal((X.shape[1], 6000))
    local = LocalParts(array_parts(X, y, 7))
    with _external(2) as (c, _):
        assert repr(c).startswith("Cluster(external")
        dask = DaskParts(array_parts(X, y, 7), c.client)
        for Wk in (W, big):
            np.testing.assert_array_equal(dask.reduce(_gram, plan, Wk),
                                          local.reduce(_gram, plan, Wk))
        assert dask.map(_rows_of) == local.map(_rows_of)


@pytest.mark.slow
def test_a_cluster_left_without_workers_fails_clearly(data, tmp_path):
    X, y = data
    stop = tmp_path / "stop"
    with _external(1, nanny=False) as (c, procs):
        dask = DaskParts(array_parts(X, y, 3), c.client, no_worker_grace=2.0)
        thread, out = _in_thread(lambda: dask.map(_slow, str(stop)))
        assert _wait_for(lambda: sum(map(len, c.client.processing().values())) >= 1)
        os.killpg(procs[1].pid, signal.SIGKILL)  # the only worker, and no nanny to restart it
        thread.join(60)  # bounded: a hang would fail here
        assert not thread.is_alive()
        err = out.get("error")
        assert isinstance(err, WorkerLost), out
        assert "no workers" in str(err)
        # the Monte Carlo executor on the same cluster, still without workers: no hang
        executor = DaskExecutor(c.address)
        try:
            thread, out = _in_thread(lambda: list(executor.map(_square, [1, 2, 3])))
            thread.join(90)
            assert not thread.is_alive()
            assert isinstance(out.get("error"), WorkerLost), out
            assert "no workers" in str(out["error"])
        finally:
            executor.close()


def _malloc_settings():
    return {name: os.environ.get(name)
            for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")}


def test_a_cluster_started_by_a_run_keeps_the_dask_malloc_settings(monkeypatch):
    """A run's process (the window's worker) carries settings that keep its heap
    (``engine.heap``); the Dask workers it starts get DASK_QUIET's instead, which the
    environment would otherwise override."""
    from kernel_lab.engine import heap

    for name in (*heap.HEAP_ENVIRONMENT, heap.SET_HERE):
        monkeypatch.delenv(name, raising=False)
    heap.keep_heap_in_children()
    with connect(workers=1, memory_limit="1GB") as c:
        got = list(c.client.run(_malloc_settings).values())
    assert got == [{"MALLOC_MMAP_THRESHOLD_": str(2**26), "MALLOC_TRIM_THRESHOLD_": str(2**30)}]


def test_a_closed_local_cluster_leaves_this_process_environment_as_it_was(monkeypatch):
    """A nanny sets its pre-spawn malloc variables in the environment of the process that
    starts the cluster; once the cluster is closed they are as before (unset, or the user's
    value), so processes this one starts later do not take them for the user's."""
    from kernel_lab.engine.cluster import DASK_QUIET, NANNY_ENVIRONMENT

    assert set(NANNY_ENVIRONMENT) == {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"}
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")
    with connect(workers=1, memory_limit="512MB") as cluster:
        assert cluster.workers() == 1
        # while it runs, the nanny's own settings (what its restarted workers get)
        assert os.environ["MALLOC_MMAP_THRESHOLD_"] == DASK_QUIET[
            "distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_"]
    assert "MALLOC_MMAP_THRESHOLD_" not in os.environ
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "12345"
