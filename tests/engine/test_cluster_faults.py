"""Faults on a Dask cluster never leave a run waiting (issue 42): all workers killed during
a gather, all workers paused by Dask's memory monitor, partitions too large for any worker,
a scheduler that stops, and data a cluster's workers cannot see. Each fails within a bound
that follows from the deadlines of kernel_lab.engine.cluster, with a message saying what
happened and what to do — or, for a relative data path, runs."""

from __future__ import annotations

import dataclasses
import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from kernel_lab.core.errors import DataError
from kernel_lab.core.rows.mapreduce import RowPlan, array_parts, part_rows

distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import test_cluster  # noqa: E402  (the same folder's helpers)
from test_cluster import _external, _in_thread, _wait_for  # noqa: E402

from kernel_lab.core.memory import format_bytes  # noqa: E402
from kernel_lab.data.lazy import open_run_data  # noqa: E402
from kernel_lab.engine import cluster_wait as module  # noqa: E402
from kernel_lab.engine.cluster import WorkerLost, connect  # noqa: E402
from kernel_lab.engine.dask_parts import DaskParts  # noqa: E402
from kernel_lab.engine.executors import DaskExecutor  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

#: The fixture of test_cluster: a local cluster of 2 workers × 1 GB (one per module).
cluster = test_cluster.cluster


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((600, 4))
    return X, X @ np.arange(1.0, 5.0) + 0.1 * rng.standard_normal(600)


# module-level task functions: they run on the workers


def _row_sums(part):
    X, y = part.read()
    return X.sum(axis=0) + y.sum()


def _huge_sums(part):
    return part.read()[0].sum()


def _pause_fraction(fraction, dask_worker=None):
    """Set the fraction of its memory limit at which Dask's memory monitor pauses this
    worker (and resumes it, below); returns the previous one."""
    before = dask_worker.memory_manager.memory_pause_fraction
    dask_worker.memory_manager.memory_pause_fraction = fraction
    return before


def _statuses(client):
    return sorted(str(w.get("status")) for w in
                  client.scheduler_info(n_workers=-1)["workers"].values())


def _write_parquet(folder: Path, X, y, pieces: int = 3) -> None:
    folder.mkdir(parents=True)
    for k, part in enumerate(array_parts(X, y, pieces)):
        columns = {f"x{j}": part.X[:, j] for j in range(X.shape[1])}
        pq.write_table(pa.table({**columns, "y": part.y}), folder / f"part-{k}.parquet")


def _failure(call, bound):
    """Run ``call`` in a thread that must end with WorkerLost (the old code waited for
    ever); returns the error and the seconds it took."""
    t0 = time.monotonic()
    thread, out = _in_thread(call)
    thread.join(bound + 30)
    took = time.monotonic() - t0
    assert not thread.is_alive(), "the run still waits"
    assert isinstance(out.get("error"), WorkerLost), out
    return out["error"], took


# ---------------------------------------------------------------------------------------


def test_all_workers_killed_during_a_gather_fail_within_the_deadline(cluster, data,
                                                                     monkeypatch, capfd):
    """All workers SIGKILLed while the client gathers finished results, and Dask's gather
    then answering "Couldn't gather 1 keys, rescheduling" as it did for 560 s in issue 42
    (the scheduler's gather keeps failing while the nannies restart the workers): the run
    fails with WorkerLost. Bound: the gather's deadline (GATHER_DEADLINE, counted from the
    results' being finished) plus one TICK and one question to the scheduler (ASK_TIMEOUT),
    checked between ticks, plus 2 s for the workers' and test's own steps."""
    X, y = data
    client = cluster.client
    pids = list(client.run(os.getpid).values())
    killed = []

    async def stuck(direct, local_worker):
        if not killed:  # the workers die during the transfer
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            killed.extend(pids)
        keys = list(client._gather_keys or ())
        client._gather_keys = client._gather_future = None
        return {"status": "error", "keys": keys}

    monkeypatch.setattr(client, "_gather_remote", stuck)
    dask = DaskParts(array_parts(X, y, 3), cluster)
    bound = module.GATHER_DEADLINE + module.TICK + module.ASK_TIMEOUT + 2.0
    err, took = _failure(lambda: dask.map(_row_sums), bound)
    assert killed and "did not reach this process" in str(err) and "workers" in str(err)
    assert "more memory" in str(err)
    assert took <= bound, took
    monkeypatch.undo()
    assert _wait_for(lambda: cluster.workers() == 2, 60)  # the nannies restarted them
    gc.collect()  # the cut gather's inner tasks, whose errors asyncio reports when freed
    _, stderr = capfd.readouterr()
    assert "Traceback" not in stderr and "Couldn't gather" not in stderr, stderr


def test_all_workers_paused_fail_within_the_grace(cluster, data):
    """Dask's memory monitor pauses every worker (its pause threshold set below what the
    worker uses: the monitor itself pauses it, as at 83 % of a 400 MB limit in issue 42).
    Bound: paused workers are first seen at most POLL + ASK_TIMEOUT after the run starts
    waiting; the run fails at the first check more than NO_WORKER_GRACE later, which
    comes within POLL + ASK_TIMEOUT; plus 2 TICKs and 2 s for the test's own steps."""
    X, y = data
    client = cluster.client
    dask = DaskParts(array_parts(X, y, 3), cluster)  # the memory check passes: tiny parts
    before = client.run(_pause_fraction, 1e-6)
    try:
        assert _wait_for(lambda: _statuses(client) == ["paused", "paused"], 10)
        bound = (module.NO_WORKER_GRACE + 2 * (module.POLL + module.ASK_TIMEOUT)
                 + 2 * module.TICK + 2.0)
        err, took = _failure(lambda: dask.map(_row_sums), bound)
        text = str(err)
        assert "paused by Dask's memory monitor" in text and "953.7 MiB each" in text
        assert "largest of the 3 partitions" in text and "rows 0–199 (in memory)" in text
        assert "more memory" in text and "smaller files" in text
        assert took <= bound, took
        # the Monte Carlo executor's tasks on the same paused cluster: the same bound
        executor = DaskExecutor(cluster.address)
        try:
            err, took = _failure(lambda: list(executor.map(test_cluster._square, [1, 2])),
                                 bound)
            assert "paused by Dask's memory monitor" in str(err), err
            assert took <= bound, took
        finally:
            executor.close()
    finally:
        for address, fraction in before.items():
            client.run(_pause_fraction, fraction, workers=[address])
    assert _wait_for(lambda: _statuses(client) == ["running", "running"], 10)
    assert len(dask.map(_row_sums)) == 3  # resumed: the cluster works again


@dataclasses.dataclass(frozen=True)
class _HugePart:
    """A partition whose footer says 50 million rows of 10 features (4.1 GiB as float64);
    its task marks a file if it ever runs."""

    index: int
    marker: str
    start: int = 0
    rows: int = 50_000_000
    features: tuple[str, ...] = tuple(f"x{j}" for j in range(10))

    def read(self):
        Path(self.marker).write_text("read")
        raise AssertionError("a partition refused before sending was read")

    def describe(self):
        return f"huge-{self.index}.parquet (rows 0–49,999,999)"


def test_partitions_too_large_for_any_worker_are_refused_before_sending(cluster, tmp_path):
    marker = tmp_path / "read"
    dask = DaskParts([_HugePart(0, str(marker)), _HugePart(1, str(marker))], cluster)
    with pytest.raises(DataError) as err:
        dask.map(_huge_sums)
    text = str(err.value)
    want = format_bytes(50_000_000 * 11 * 8)
    assert want == "4.1 GiB"  # the independent figure: rows × (columns + 1) × 8 bytes
    assert "huge-0.parquet (rows 0–49,999,999)" in text and want in text
    assert "953.7 MiB" in text and "80%" in text  # the workers' limit and Dask's pause
    assert "more memory" in text and "smaller files" in text
    assert not marker.exists()
    assert not [k for k in cluster.client.run_on_scheduler(
        lambda dask_scheduler: [str(k) for k in dask_scheduler.tasks])
        if k.startswith("huge_sums")]


def test_a_closed_scheduler_is_one_line_and_dask_log_stays_off_stderr(data, tmp_path,
                                                                     monkeypatch, capfd):
    """A local cluster's scheduler closed while partitions are being computed: WorkerLost
    saying the scheduler is gone, and none of Dask's records on standard error (they go to
    the log file)."""
    X, y = data
    log = tmp_path / "dask.log"
    monkeypatch.setenv("KERNEL_LAB_DASK_LOG", str(log))
    stop = tmp_path / "stop"
    from test_cluster import _slow

    with connect(workers=1, memory_limit="1GB") as c:
        capfd.readouterr()
        dask = DaskParts(array_parts(X, y, 3), c)
        thread, out = _in_thread(lambda: dask.map(_slow, str(stop)))
        assert _wait_for(lambda: sum(map(len, c.client.processing().values())) >= 1)
        t0 = time.monotonic()
        c.client.sync(c.local.scheduler.close)
        thread.join(module.NO_WORKER_GRACE + 2 * (module.POLL + module.ASK_TIMEOUT) + 30)
        took = time.monotonic() - t0
        stop.write_text("stop")
        assert not thread.is_alive()
        err = out.get("error")
        assert isinstance(err, WorkerLost), out
        assert f"the Dask scheduler at {c.local.scheduler_address} is gone" in str(err)
        assert str(log) in str(err)
        # bound: a POLL's check, or the futures' cancellation, one ASK_TIMEOUT, 2 s slack
        assert took <= module.POLL + module.ASK_TIMEOUT + module.TICK + 2.0, took
    _, stderr = capfd.readouterr()
    assert "Traceback" not in stderr and "distributed." not in stderr, stderr
    assert "distributed." in log.read_text()


_LOUD = """
import asyncio, gc, logging, sys
import distributed  # sets up its loggers with handlers on standard error
from kernel_lab.engine.dask_log import route_dask_log
route_dask_log(sys.argv[1])
logging.getLogger("distributed.client").error("a client error")
async def fail():
    raise RuntimeError("a task nobody awaited")
async def main():
    asyncio.ensure_future(fail())
    await asyncio.sleep(0.05)
asyncio.run(main())
gc.collect()
"""


def test_dask_records_go_to_the_log_file_not_the_terminal(tmp_path):
    """Dask's records (its loggers have their own stderr handlers) and asyncio's reports of
    tasks on Dask's loop ("Task exception was never retrieved") go to the file."""
    log = tmp_path / "dask.log"
    done = subprocess.run([sys.executable, "-c", _LOUD, str(log)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    text = log.read_text()
    assert "distributed.client - ERROR - a client error" in text
    assert "Task exception was never retrieved" in text and "a task nobody awaited" in text


def _parts_folder(tmp_path, data) -> Path:
    X, y = data
    folder = tmp_path / "rel" / "data"
    _write_parquet(folder, X, y)
    return folder


@pytest.mark.slow
def test_a_relative_data_path_runs_on_an_external_cluster(tmp_path, data, monkeypatch):
    """The workers' working folder is not the client's: a relative path (made absolute
    before the partitions travel) gives the numbers of this process."""
    _parts_folder(tmp_path, data)
    options = {"target": "y", "test_fraction": 0.25, "standardize": True,
               "partitions": "keep"}
    with _external(1) as (c, _):  # started in this process's working folder …
        monkeypatch.chdir(tmp_path)  # … which then changes: the worker's stays
        here = open_run_data("rel/data", options, seed=3, name="rel")
        there = open_run_data("rel/data", options, seed=3, name="rel",
                              make_parts=lambda parts: DaskParts(parts, c))
        assert all(os.path.isabs(p.path) for p in there.parts.parts)
        np.testing.assert_array_equal(there.plan.mean, here.plan.mean)
        np.testing.assert_array_equal(there.plan.scale, here.plan.scale)
        np.testing.assert_array_equal(
            np.concatenate(there.parts.map(_rows_y, there.plan)),
            np.concatenate(here.parts.map(_rows_y, here.plan)))


def _rows_y(part, plan):
    return part_rows(part, plan).y


@pytest.mark.slow
def test_files_the_workers_cannot_see_are_named(tmp_path, data, monkeypatch):
    """Partitions whose paths this process reads and a worker does not see (here a
    relative path, from the worker's own working folder): the message names the path and
    says that the workers need a shared file system."""
    from kernel_lab.data.partitioned import open_partitioned

    _parts_folder(tmp_path, data)
    with _external(1) as (c, _):  # the worker's working folder is not tmp_path
        monkeypatch.chdir(tmp_path)
        source = open_partitioned("rel/data", target="y")
        assert not os.path.isabs(source.parts[0].path)
        with pytest.raises(DataError) as err:
            DaskParts(source.parts, c).map(part_rows, RowPlan(3, source.n, 0, None))
    text = str(err.value)
    assert "cannot see rel/data/part-" in text and "which this machine reads" in text
    assert "shared file system" in text


@pytest.mark.slow
def test_the_cli_says_the_external_scheduler_is_gone_in_one_line(tmp_path, data):
    """`kernel-lab run … --backend dask --scheduler ADDRESS` with the scheduler stopped
    (SIGTERM) mid-run: exit 2, one line naming the scheduler, no Dask traceback."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((24_000, 6))
    y = X.sum(axis=1) + 0.1 * rng.standard_normal(X.shape[0])
    _write_parquet(tmp_path / "big", X, y, 4)
    log = tmp_path / "dask.log"
    with _external(1) as (c, procs):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "KERNEL_LAB_DASK_LOG": str(log)}
        run = subprocess.Popen(
            [sys.executable, "-m", "kernel_lab", "run", "nystrom", "--data",
             str(tmp_path / "big"), "--partitions", "keep", "--backend", "dask",
             "--scheduler", c.address, "--out", str(tmp_path / "out"), "--no-plot"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            cwd=tmp_path)
        try:
            # once the run computes on the cluster (its tasks on the scheduler)
            assert _wait_for(lambda: c.client.run_on_scheduler(
                lambda dask_scheduler: len(dask_scheduler.tasks)) > 0 or
                run.poll() is not None, 120)
            assert run.poll() is None, run.communicate()
            address = c.address
            os.killpg(procs[0].pid, signal.SIGTERM)
            _, stderr = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
    assert run.returncode == 2, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("kernel-lab: error:")]
    assert len(lines) == 1, stderr
    assert f"the Dask scheduler at {address} is gone" in lines[0]
    assert "Traceback" not in stderr and "distributed." not in stderr, stderr
