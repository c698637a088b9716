"""A scheduler slow to answer is not a scheduler gone: ``ask_workers`` lets the TimeoutError
of its deadline through (``TimeoutError`` is an ``OSError`` too, which meant a closed
connection), so ``check_workers`` gives the scheduler its grace period instead of stopping
the run at once — as a loaded machine's LocalCluster needed."""

from __future__ import annotations

import time

import pytest

from kernel_lab.engine.cluster_wait import WorkerLost, ask_workers, check_workers


class _Client:
    """A client whose scheduler raises ``error`` when asked who its workers are."""

    status = "running"

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.scheduler = self

    def identity(self, **kwargs):  # what sync is asked to call
        raise AssertionError("sync is replaced")

    def sync(self, *args, **kwargs):
        raise self.error


def test_a_scheduler_that_does_not_answer_in_time_gets_the_grace_period() -> None:
    client = _Client(TimeoutError("no answer"))
    with pytest.raises(TimeoutError):
        ask_workers(client)
    since = check_workers(client, None, grace=30.0)
    assert since is not None  # counted as no worker available, not a WorkerLost
    assert check_workers(client, since, grace=30.0) == since
    with pytest.raises(WorkerLost, match="has not answered"):
        check_workers(client, time.monotonic() - 60.0, grace=30.0)


def test_a_closed_connection_is_a_scheduler_gone() -> None:
    with pytest.raises(WorkerLost, match="is gone"):
        ask_workers(_Client(ConnectionResetError("closed")))
