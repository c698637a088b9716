"""The processes that run experiments keep their heap during a run and return it after."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kernel_lab.engine import heap
from kernel_lab.engine.executors import ProcessExecutor, shutdown_pools

glibc_linux = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="glibc's malloc settings (Linux)")


def test_children_are_asked_to_keep_their_heap_unless_the_user_said_otherwise(monkeypatch):
    for name in heap.HEAP_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")
    heap.keep_heap_in_children()
    assert os.environ["MALLOC_MMAP_THRESHOLD_"] == str(heap.KEEP_BYTES)
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "12345"


def _environment(_task):
    return {name: os.environ.get(name) for name in heap.HEAP_ENVIRONMENT}


def test_pool_processes_start_with_the_heap_settings(monkeypatch):
    """A pool started under an environment without malloc settings gives its processes
    the heap settings. The environment is made clean and the pool started afresh: a local
    Dask cluster started earlier in this process (another test) leaves its nanny's
    settings in ``os.environ``, and a kept pool started before keeps the ones it had."""
    for name in (*heap.HEAP_ENVIRONMENT, heap.SET_HERE):
        monkeypatch.delenv(name, raising=False)
    shutdown_pools()
    try:
        got = list(ProcessExecutor(2).map(_environment, range(2)))
    finally:
        shutdown_pools()  # the next user of a pool starts one under its own environment
    assert got == [heap.HEAP_ENVIRONMENT] * 2


CHILD = r"""
import json, numpy as np
from kernel_lab.engine.heap import release_heap
def rss():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS:")) // 1024
base = rss()
a = np.ones(300 * 2**20 // 8)          # 300 MB, written
full = rss()
del a
freed = rss()
ok = release_heap()
print(json.dumps({"base": base, "full": full, "freed": freed, "released": rss(), "ok": ok}))
"""


@glibc_linux
@pytest.mark.parametrize("keep", [True, False])
def test_a_freed_block_stays_on_the_heap_until_released(keep):
    """With the settings a freed 300 MB block stays resident (the next one reuses its pages
    without faults) until :func:`heap.release_heap`; without them it goes back at once."""
    env = {k: v for k, v in os.environ.items() if k not in heap.HEAP_ENVIRONMENT}
    if keep:
        env.update(heap.HEAP_ENVIRONMENT)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, check=True, timeout=60)
    mb = json.loads(out.stdout)
    assert mb["ok"] is True
    assert mb["full"] - mb["base"] > 280
    if keep:
        assert mb["freed"] - mb["base"] > 280
    else:
        assert mb["freed"] - mb["base"] < 20
    assert mb["released"] - mb["base"] < 20


def test_a_local_dask_cluster_gets_its_own_settings_not_a_runs(monkeypatch):
    """The settings made here are taken out before a local Dask cluster starts (its nannies
    let the environment override their configuration); the user's own stay."""
    for name in (*heap.HEAP_ENVIRONMENT, heap.SET_HERE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")
    heap.keep_heap_in_children()
    assert os.environ[heap.SET_HERE] == "MALLOC_MMAP_THRESHOLD_"
    heap.drop_heap_settings()
    assert "MALLOC_MMAP_THRESHOLD_" not in os.environ and heap.SET_HERE not in os.environ
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "12345"


def test_a_setting_the_user_changed_since_it_was_made_here_stays(monkeypatch):
    """A process that made the settings earlier (a run's worker, a test in the same
    process) and whose user has since set one of them: dropping the settings before a
    local Dask cluster starts leaves the user's value (it once took it away: a KeyError in
    the cluster tests when an earlier test in the same process had made them)."""
    for name in (*heap.HEAP_ENVIRONMENT, heap.SET_HERE):
        monkeypatch.delenv(name, raising=False)
    heap.keep_heap_in_children()
    assert os.environ[heap.SET_HERE] == "MALLOC_MMAP_THRESHOLD_,MALLOC_TRIM_THRESHOLD_"
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")  # the user's, since
    heap.drop_heap_settings()
    assert "MALLOC_MMAP_THRESHOLD_" not in os.environ and heap.SET_HERE not in os.environ
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "12345"
