"""Compute backends: threads, a local process pool and Dask give identical numbers; dead
workers are retried or reported."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from kernel_lab.cli import main
from kernel_lab.core.errors import ParameterError
from kernel_lab.engine import run_experiment
from kernel_lab.engine.executors import (
    SERIAL,
    ProcessExecutor,
    ThreadExecutor,
    WorkerLost,
    make_executor,
)

DATA = "gaussian:n=120,p=60,cov=toeplitz,rho=0.4,noise=0.5"
PARAMS = {"kernels": ["linear", "exponential"], "trials": 8, "n_lams": 10, "seed": 5}


@pytest.fixture(scope="module")
def reference():
    return run_experiment("ckrr-risk", PARAMS, data=DATA)


def assert_same(a, b):
    assert list(a.table) == list(b.table)
    for key, col in a.table.items():
        np.testing.assert_array_equal(b.table[key], col, err_msg=key)
    assert a.summaries == b.summaries


def test_process_pool_gives_the_in_process_numbers(reference):
    assert_same(reference, run_experiment("ckrr-risk", PARAMS, data=DATA, workers=2,
                                          backend="processes"))


def _die_once(task):
    """Kills its worker the first time task 2 runs (a crash), then succeeds."""
    marker, i = task
    if i == 2 and not Path(marker).exists():
        Path(marker).write_text("died")
        os._exit(1)
    return i * i


def _die_always(task):
    os._exit(1)


def test_process_pool_retries_a_dead_worker_then_reports(tmp_path):
    tasks = [(str(tmp_path / "marker"), i) for i in range(6)]
    assert list(ProcessExecutor(2).map(_die_once, tasks)) == [i * i for i in range(6)]
    with pytest.raises(WorkerLost, match="died twice"):
        list(ProcessExecutor(2).map(_die_always, [1, 2]))


def _blas_threads(_task):
    from threadpoolctl import threadpool_info

    return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"),
               default=1)


@pytest.mark.parametrize("executor,n_tasks", [(SERIAL, 3), (ThreadExecutor(1), 3),
                                              (ThreadExecutor(4), 1), (ThreadExecutor(4), 3)])
def test_tasks_run_with_one_blas_thread_on_every_path(executor, n_tasks):
    """One worker or one task included: multi-threaded BLAS sums in another order, and the
    numbers would differ from those of the other backends in the last bits."""
    assert list(executor.map(_blas_threads, range(n_tasks))) == [1] * n_tasks


def test_unknown_backend_and_missing_scheduler():
    with pytest.raises(ParameterError, match="unknown backend"):
        make_executor(2, "gpu")
    pytest.importorskip("distributed")
    with pytest.raises(ParameterError, match="cannot reach the Dask scheduler"):
        make_executor(2, "dask", "tcp://127.0.0.1:1")


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as c:
        yield c


def test_dask_cluster_gives_the_in_process_numbers(reference, cluster):
    result = run_experiment("ckrr-risk", PARAMS, data=DATA, backend="dask",
                            scheduler=cluster.scheduler_address)
    assert_same(reference, result)


def test_killing_a_dask_worker_mid_run_still_completes(reference, cluster):
    from distributed import Client

    partials = []
    out = {}

    def run():
        try:
            out["result"] = run_experiment(
                "ckrr-risk", {**PARAMS, "trials": 8}, data="gaussian:n=400,p=60,cov=toeplitz,"
                "rho=0.4,noise=0.5", backend="dask", scheduler=cluster.scheduler_address,
                on_partial=partials.append)
        except Exception as exc:  # reported, not swallowed: the test inspects it
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while len(partials) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    with Client(cluster.scheduler_address) as client:
        pids = client.run(os.getpid)
    os.kill(next(iter(pids.values())), signal.SIGKILL)
    thread.join(120)
    assert not thread.is_alive()
    if "error" in out:  # allowed, but only as a clear message
        assert isinstance(out["error"], WorkerLost), out["error"]
    else:
        local = run_experiment("ckrr-risk", {**PARAMS, "trials": 8},
                               data="gaussian:n=400,p=60,cov=toeplitz,rho=0.4,noise=0.5")
        assert_same(local, out["result"])


def test_cli_backend_flag(tmp_path, cluster):
    out = tmp_path / "o"
    assert main(["run", "ckrr-risk", "--data", DATA, "--set", "kernels=linear", "--set",
                 "trials=4", "--set", "n_lams=5", "--backend", "dask", "--scheduler",
                 cluster.scheduler_address, "--out", str(out), "--no-plot", "-q"]) == 0
    assert (out / "result.json").exists()


@pytest.mark.parametrize("limit", ["engine", "core"])
def test_overlapping_single_blas_thread_limits_restore_the_original(limit):
    """Also the core's one_blas_thread (samplers, Nyström), which the engine makes the
    same counted limit."""
    import threading

    from kernel_lab.core.executor import blas_controller, one_blas_thread
    from kernel_lab.engine.blas import single_blas_thread

    limiter = one_blas_thread if limit == "core" else single_blas_thread

    def counts():  # the BLAS libraries (OpenMP's count is per thread)
        return [lib["num_threads"] for lib in blas_controller().info()
                if lib["user_api"] == "blas"]

    original = counts()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with limiter():
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second():
        a_in.wait(10)
        with limiter():
            b_in.set()
            a_out.wait(10)
            threads[0].join(10)  # the first thread gone (not exiting while we restore)
            seen["inside after the first left"] = counts()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen["inside after the first left"] == [1] * len(original)
    assert counts() == original
