"""The killable worker process behind the window."""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
import pytest

from kernel_lab.data.source import DataSource
from kernel_lab.engine import heap, run_experiment
from kernel_lab.engine.process import ProcessRunner
from kernel_lab.engine.spec import RunSpec


@pytest.fixture(scope="module")
def runner():
    r = ProcessRunner()
    yield r
    r.close()


def collect(runner, rid, timeout=120.0):
    events = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        event = runner.poll(0.05)
        if event is None:
            continue
        assert event[1] == rid
        events.append(event)
        if event[0] in ("finished", "failed", "cancelled"):
            return events
    raise AssertionError(f"run {rid} did not end; got {[e[0] for e in events]}")


def job(name, params, data=None):
    return RunSpec(name, params, DataSource.from_spec(data) if data else None)


def test_run_streams_partials_and_equals_the_in_process_run(runner):
    params = {"kernels": ["linear", "exponential"], "trials": 3, "n_lams": 8}
    data = "gaussian:n=80,p=40,cov=toeplitz,rho=0.4,noise=0.5"
    runner.submit(1, job("ckrr-risk", params, data))
    events = collect(runner, 1)
    kinds = [e[0] for e in events]
    assert kinds[-1] == "finished" and kinds.count("partial") >= 4 and "progress" in kinds
    result = events[-1][2]
    local = run_experiment("ckrr-risk", params, data=data)
    assert list(result.table) == list(local.table)
    for key, col in local.table.items():
        np.testing.assert_array_equal(result.table[key], col)


def test_user_error_is_reported_and_the_worker_stays(runner):
    pid = runner.pid
    runner.submit(2, job("krr-path", {"lam_min": -1}))
    kind, _, message, user = collect(runner, 2)[-1]
    assert kind == "failed" and user and "lam_min" in message
    assert runner.pid == pid and runner.current is None


def test_cancel_inside_one_long_eigendecomposition_kills_the_worker(runner):
    """n = 3500: the path's single eigendecomposition takes seconds and has no checkpoint,
    so Cancel must terminate the process. How fast it does so (500 ms) is measured by
    tests/benchmarks/bench_cancel.py, not here, where a loaded machine would make a
    timing flaky."""
    runner.submit(3, job("krr-path", {"n_lams": 5}, "gaussian:n=3500,p=10"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until the run is past loading the data
        event = runner.poll(0.05)
        if event and event[0] == "progress" and event[2] > 0.02:
            break
    time.sleep(0.8)  # well inside the eigendecomposition now
    old = runner.pid
    assert runner.cancel()  # True: the process had to be terminated
    assert runner.pid != old
    with pytest.raises(ProcessLookupError):
        os.kill(old, 0)
    # the fresh worker takes a new run
    runner.submit(4, job("krr-path", {"n_lams": 4}, "gaussian:n=60,p=3"))
    assert collect(runner, 4)[-1][0] == "finished"


def test_cooperative_cancel_does_not_kill(runner):
    runner.submit(5, job("ckrr-risk", {"trials": 400, "n_lams": 5}, "gaussian:n=60,p=30"))
    while True:
        event = runner.poll(0.05)
        if event and event[0] == "partial":
            break
    pid = runner.pid
    assert runner.cancel(grace=2.0) is False  # stopped at its next report
    assert runner.pid == pid


def test_late_messages_of_a_superseded_run_are_dropped(runner):
    runner.submit(6, job("ckrr-risk", {"trials": 400, "n_lams": 5}, "gaussian:n=60,p=30"))
    runner.submit(7, job("krr-path", {"n_lams": 4}, "gaussian:n=60,p=3"))
    events = collect(runner, 7)  # asserts every message belongs to run 7
    assert events[-1][0] == "finished"


def test_a_killed_worker_is_reported_and_replaced(runner):
    runner.submit(8, job("krr-path", {"n_lams": 5}, "gaussian:n=3500,p=10"))
    time.sleep(1.5)
    os.kill(runner.pid, signal.SIGKILL)  # what the kernel's out-of-memory killer does
    kind, _, message, user = collect(runner, 8)[-1]
    assert kind == "failed" and not user and "memory" in message
    runner.submit(9, job("krr-path", {"n_lams": 4}, "gaussian:n=60,p=3"))
    assert collect(runner, 9)[-1][0] == "finished"


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="Linux thread niceness")
def test_every_thread_of_the_worker_runs_below_the_window(monkeypatch):
    """The BLAS threads numpy and SciPy start on import (before the worker's first line)
    run at the worker's niceness too, not the window's: os.nice alone set only the main
    thread's, and those threads took half a core from the window's thread. The test's
    worker gets two BLAS threads (the parallel test runs set one, which starts none)."""
    from kernel_lab.engine.process import WORKER_NICENESS

    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    worker = ProcessRunner()
    try:
        worker.submit(10, job("krr-path", {"n_lams": 4}, "gaussian:n=300,p=3"))
        assert collect(worker, 10)[-1][0] == "finished"  # imports done, BLAS used
        tasks = os.listdir(f"/proc/{worker.pid}/task")
        # the main thread, the queue's feeder and BLAS threads started on import
        assert len(tasks) >= 3
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        for tid in tasks:
            assert os.getpriority(os.PRIO_PROCESS, int(tid)) >= min(mine + WORKER_NICENESS,
                                                                   19)
    finally:
        worker.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/environ")
def test_the_worker_keeps_its_heap_during_a_run(runner):
    """The worker process starts with glibc's settings that keep freed blocks on its heap
    (``kernel_lab.engine.heap``; returned after each run)."""
    with open(f"/proc/{runner.pid}/environ", "rb") as fh:
        env = dict(item.split(b"=", 1) for item in fh.read().split(b"\0") if b"=" in item)
    for name, value in heap.HEAP_ENVIRONMENT.items():
        assert env[name.encode()] == os.environ.get(name, value).encode()
