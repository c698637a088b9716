"""Runs through the one worker primitive: the window's ProcessLauncher (a worker thread
driving the killable worker process) and the InlineLauncher, with no Qt."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from kernel_lab.data.source import DataSource
from kernel_lab.engine import RunSpec
from kernel_lab.engine.handle import InlineLauncher, ProcessLauncher

WAIT = 120.0  # seconds before a test gives up on the worker process (never when green)


def spec(name, params, data):
    return RunSpec(name, params, DataSource.from_spec(data))


def watch(handle):
    seen = {"progress": [], "finished": [], "failed": [], "cancelled": []}
    done = threading.Event()
    handle.progressed.connect(lambda f, m: seen["progress"].append(f))
    for kind in ("finished", "failed", "cancelled"):
        getattr(handle, kind).connect(
            lambda *a, kind=kind: (seen[kind].append(a), done.set()))
    return seen, done


@pytest.fixture
def launcher():
    launch = ProcessLauncher()
    yield launch
    launch.close()
    assert launch.join(WAIT)


def test_a_run_in_the_worker_process_equals_the_inline_run(launcher):
    s = spec("krr-path", {"n_lams": 4}, "gaussian:n=60,p=3")
    handle = launcher(s)
    seen, done = watch(handle)
    handle.start()
    assert done.wait(WAIT) and handle.status == "finished", seen
    inline = InlineLauncher()(s)
    got = []
    inline.finished.connect(got.append)
    inline.start()
    (result,) = seen["finished"][0]
    assert list(result.table) == list(got[0].table)
    for key, col in got[0].table.items():
        np.testing.assert_array_equal(result.table[key], col)


def test_cancel_inside_a_long_eigendecomposition_kills_the_process(launcher):
    handle = launcher(spec("krr-path", {"n_lams": 5}, "gaussian:n=3500,p=10"))
    seen, done = watch(handle)
    inside = threading.Event()
    # past loading the data: inside the one long eigendecomposition, no checkpoint
    handle.progressed.connect(lambda f, m: f > 0.02 and inside.set())
    handle.start()
    assert inside.wait(WAIT)
    pid = launcher.worker_pid
    started = []
    launcher.worker_started.connect(started.append)
    handle.cancel()
    assert done.wait(WAIT)
    assert seen["cancelled"] == [(True,)] and not seen["finished"]  # killed, said once
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert started and started[0] != pid  # a fresh process took its place
    # the fresh worker takes the next run
    nxt = launcher(spec("krr-path", {"n_lams": 4}, "gaussian:n=60,p=3"))
    seen2, done2 = watch(nxt)
    nxt.start()
    assert done2.wait(WAIT) and seen2["finished"]
    assert not seen["finished"] and len(seen["cancelled"]) == 1


def test_a_new_run_supersedes_the_one_in_progress(launcher):
    first = launcher(spec("ckrr-risk", {"trials": 400, "n_lams": 5}, "gaussian:n=60,p=30"))
    seen1, _ = watch(first)
    going = threading.Event()
    first.partial_arrived.connect(lambda p: going.set())
    first.start()
    assert going.wait(WAIT)
    second = launcher(spec("krr-path", {"n_lams": 4}, "gaussian:n=60,p=3"))
    seen2, done2 = watch(second)
    second.start()
    assert first.status == "cancelled"
    assert done2.wait(WAIT) and seen2["finished"] and not seen2["failed"]
    assert not seen1["finished"] and not seen1["failed"]
    assert second.run_id == first.run_id + 1


def test_an_inline_observer_that_raises_after_finished_raises_from_start():
    """An observer's failure is the caller's to see (a test's assertion in an observer,
    say), not a run failure the worker drops once the run has ended."""
    handle = InlineLauncher()(RunSpec("krr-path", {"n_lams": 4},
                                      DataSource.from_spec("diabetes")))

    def observer(result):
        raise AssertionError("observer saw the result")

    handle.finished.connect(observer)
    with pytest.raises(AssertionError, match="observer saw the result"):
        handle.start()
