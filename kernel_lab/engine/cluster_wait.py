"""Waiting on a Dask cluster that never waits for ever.

Every wait of a run on the cluster — its tasks' futures, a gather of their results, an
argument scattered to every worker — goes through one loop, :func:`wait_on` with a
:class:`Watch`: it checks Cancel every :data:`TICK` seconds, asks the scheduler about its
workers every :data:`POLL` seconds (a worker paused by Dask's memory monitor counts as not
available), and keeps a deadline where one applies. A cluster left without an available
worker for :data:`NO_WORKER_GRACE` seconds, results that do not arrive within
:data:`GATHER_DEADLINE` seconds of being finished, or a scheduler that is gone, stops the
run with :class:`WorkerLost` — a message, never a hang.

Needs the optional extra: ``pip install 'kernel-lab[dask]'``.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.memory import format_bytes

#: How often (seconds) a waiting run checks for cancellation.
TICK = 0.2


class WorkerLost(KernelLabError):
    """A compute worker died and its task could not be completed."""


#: Seconds between two looks at the cluster's workers while a run waits on it.
POLL = 1.0
#: Seconds a run waits for a worker to be available again — none connected, or all of them
#: paused by Dask's memory monitor, or a scheduler that does not answer — before it fails
#: (a nanny restarting a worker takes a second or two; a paused worker that spills to disk
#: resumes within seconds).
NO_WORKER_GRACE = 8.0
#: Seconds a question to the scheduler (its workers) may take before it counts as no answer.
ASK_TIMEOUT = 2.0
#: Seconds the workers may take to run a small function each (their memory, the share of
#: it kept for partitions read), on a machine that may be loaded.
RUN_DEADLINE = 10.0
#: Seconds results the cluster holds (their tasks finished) may take to reach this process.
#: Dask's own gather retries for ever when the workers holding them die during the transfer
#: ("Couldn't gather 1 keys, rescheduling"); the results of partitions are small
#: (statistics, a few rows), the largest a matrix of landmarks × landmarks.
GATHER_DEADLINE = 8.0


def scheduler_address(client: Any) -> str:
    """The scheduler's address as the client knows it, for messages."""
    for address in (getattr(getattr(client, "scheduler", None), "address", None),
                    getattr(client, "_kernel_lab_address", None)):
        if address:
            return str(address)
    return "(unknown address)"


def log_hint() -> str:
    """Where Dask's own log went (:mod:`kernel_lab.engine.dask_log`), for messages."""
    from kernel_lab.engine.dask_log import routed_file

    where = routed_file()
    return f" (Dask's own log: {where})" if where else ""


def scheduler_gone(client: Any) -> WorkerLost:
    """The error of a run whose scheduler stopped or cannot be reached any more."""
    return WorkerLost(f"the Dask scheduler at {scheduler_address(client)} is gone (stopped, "
                      "or the connection to it was lost); the run is stopped — start the "
                      "scheduler and its workers again and run it again, or run on a local "
                      "cluster (no scheduler address)" + log_hint())


def ask_workers(client: Any) -> dict[str, Any]:
    """The scheduler's view of its workers (address → info with ``status`` and
    ``memory_limit``), asked with a deadline of :data:`ASK_TIMEOUT`. Raises
    :class:`WorkerLost` when the scheduler is gone, TimeoutError when it does not answer."""
    if client.status not in ("running", "connecting") or client.scheduler is None:
        raise scheduler_gone(client)
    try:
        info = client.sync(client.scheduler.identity, n_workers=-1,
                           callback_timeout=ASK_TIMEOUT)
    except TimeoutError:  # no answer in time — not a closed connection, though an OSError
        raise
    except OSError:  # the connection is closed
        raise scheduler_gone(client) from None
    return dict(info.get("workers", {}))


def check_workers(client: Any, since: float | None, grace: float,
                  paused: Callable[[], str] | None = None) -> float | None:
    """Raise :class:`WorkerLost` when the scheduler is gone, or when the cluster has had no
    worker available — none connected, all paused by Dask's memory monitor, or no answer
    from the scheduler — since ``since`` for longer than ``grace`` seconds. Returns when
    the cluster was first seen without an available worker (``time.monotonic()``), or None
    while it has one. ``paused()`` says why the workers' memory fills (the partitions'
    sizes), for the message when they were all paused."""
    if client.status not in ("running", "connecting"):
        raise scheduler_gone(client)
    try:
        workers = ask_workers(client)
    except TimeoutError:
        workers, silent = {}, True
    else:
        silent = False
    states = [str(w.get("status", "running")) for w in workers.values()]
    if "running" in states:
        return None
    now = time.monotonic()
    if since is None:
        return now
    if now - since <= grace:
        return since
    if silent:
        raise WorkerLost(f"the Dask scheduler at {scheduler_address(client)} has not answered "
                         f"for {grace:g} s; the run is stopped — check that the scheduler is "
                         "running and reachable" + log_hint())
    if states and all(s == "paused" for s in states):
        limits = sorted({int(w.get("memory_limit") or 0) for w in workers.values()})
        limit = " / ".join(format_bytes(m) for m in limits if m) or "none"
        raise WorkerLost(
            f"all {len(states)} Dask worker(s) have been paused by Dask's memory monitor for "
            f"{grace:g} s (their memory limit: {limit} each), so nothing can run"
            + (f"; {paused()}" if paused is not None else "")
            + "; the run is stopped — give each worker more memory (dask worker "
            "--memory-limit, or fewer workers per machine) or cut the data into smaller "
            "files (more partitions)" + log_hint())
    if getattr(client, "_kernel_lab_local", False):
        raise WorkerLost(f"the local Dask cluster has had no workers for {grace:g} s (they "
                         "kept dying — killed, or out of memory — faster than they were "
                         "restarted); the run is stopped — run it again, with fewer workers "
                         "(--workers) if memory is short" + log_hint())
    raise WorkerLost(f"the Dask cluster has had no workers for {grace:g} s (they died or "
                     "were stopped) and the run cannot go on; the run is stopped — start "
                     "workers (dask worker ADDRESS) or use a local cluster" + log_hint())


class Watch:
    """The checks every wait on the cluster makes, called every :data:`TICK` seconds by
    :func:`wait_on` (and by :class:`DaskParts` while its tasks run): Cancel
    (``progress.check()``), the workers every :data:`POLL` seconds (:func:`check_workers`),
    and an optional deadline.

    Parameters
    ----------
    client : distributed.Client
    progress : Progress, optional
        Its ``check()`` raises :class:`~kernel_lab.core.progress.Cancelled` once cancelled.
    grace : float
        Seconds without an available worker before :class:`WorkerLost`.
    deadline : float, optional
        Seconds the wait may take — counted from the first check at which ``counting()``
        is true (default: from the start) — before ``expired()`` is raised.
    counting, expired : callable, optional
    paused : callable, optional
        Says why the workers' memory fills, for the message when all are paused.
    """

    def __init__(self, client: Any, progress: Any = None, *, grace: float = NO_WORKER_GRACE,
                 deadline: float | None = None, counting: Callable[[], bool] | None = None,
                 expired: Callable[[], BaseException] | None = None,
                 paused: Callable[[], str] | None = None) -> None:
        self.client = client
        self.check = getattr(progress, "check", None)
        self.grace = float(grace)
        self.deadline = deadline
        self.counting = counting
        self.expired = expired
        self.paused = paused
        self.spent = 0.0
        self.started = counting is None or counting()
        self.last = time.monotonic()
        self.next_poll = self.last + POLL
        self.since: float | None = None

    def __call__(self) -> None:
        if callable(self.check):
            self.check()
        now = time.monotonic()
        if self.started:
            self.spent += now - self.last
        elif self.counting is not None and self.counting():
            self.started = True  # from now on (Dask may reset a future it reschedules)
        self.last = now
        if now >= self.next_poll:
            self.next_poll = now + POLL
            self.since = check_workers(self.client, self.since, self.grace, self.paused)
        if self.deadline is not None and self.spent >= self.deadline:
            raise (self.expired() if self.expired is not None else
                   WorkerLost(f"a wait on the Dask cluster took more than {self.deadline:g} s"
                              "; the run is stopped" + log_hint()))


def wait_on(client: Any, start: Callable[[], Any], watch: Watch) -> Any:
    """Run the coroutine ``start()`` (one operation of the client: a gather, a scatter, …)
    on the client's event loop and wait for it, calling ``watch()`` every :data:`TICK`
    seconds; when ``watch`` raises (Cancel, the workers, the deadline) the operation is
    cancelled on the loop and the error propagates. The one loop every wait on the cluster
    goes through. A Dask cancellation of what the operation waited for (the future of a
    task the cluster dropped) comes out as :class:`distributed.client.FutureCancelledError`
    or :class:`concurrent.futures.CancelledError`."""
    import asyncio
    import concurrent.futures

    job = asyncio.run_coroutine_threadsafe(start(), client.loop.asyncio_loop)
    try:
        while True:
            try:
                return job.result(timeout=TICK)
            except concurrent.futures.TimeoutError:
                if job.done():  # the operation's own TimeoutError
                    raise
                watch()
    finally:
        if not job.done():
            job.cancel()
            _forget_gather(client)


def _forget_gather(client: Any) -> None:
    """A gather cancelled while it queued for the client's gather semaphore leaves its
    request as the one later gathers attach to (``Client._gather_future``); drop it."""
    pending = getattr(client, "_gather_future", None)
    if pending is not None and pending.done():
        client._gather_future = None


def gather(client: Any, futures: Sequence[Any], progress: Any = None, *,
           grace: float = NO_WORKER_GRACE, deadline: float = GATHER_DEADLINE,
           paused: Callable[[], str] | None = None) -> list[Any]:
    """``client.gather(futures)`` through :func:`wait_on`: while a task still runs, the
    wait is bounded by the :class:`Watch`'s checks (Cancel, the workers); from the moment
    all are finished, their results must arrive within ``deadline`` seconds, else
    :class:`WorkerLost` (Dask's gather retries for ever when the workers holding them died
    during the transfer). A task's error, or the cluster's dropping of a task, propagates
    as Dask raises it."""
    futures = list(futures)

    def finished() -> bool:
        return all(f.status == "finished" for f in futures)

    def expired() -> BaseException:
        return WorkerLost(
            f"the results of {len(futures)} finished Dask task(s) did not reach this "
            f"process within {deadline:g} s (the workers holding them died or were "
            "restarted while sending them — most often out of memory); the run is stopped "
            "— give the workers more memory and run it again" + log_hint())

    watch = Watch(client, progress, grace=grace, deadline=deadline, counting=finished,
                  expired=expired, paused=paused)
    try:
        return list(wait_on(client, lambda: client._gather(futures), watch))
    except OSError as exc:  # a connection closed under the transfer (CommClosedError)
        lost = cancelled_by_dask(client, f"the results of {len(futures)} task(s) "
                                 f"({type(exc).__name__}: {exc})")
        raise lost from None


def cancel_futures(client: Any, futures: Sequence[Any], reason: str = "the run stopped"
                   ) -> None:
    """Cancel ``futures`` on the cluster, waiting at most :data:`ASK_TIMEOUT` seconds; a
    scheduler that is gone has nothing left to cancel."""
    if not futures or client.status != "running":
        return
    try:
        client.sync(client._cancel, list(futures), reason=reason,
                    callback_timeout=ASK_TIMEOUT)
    except Exception:  # the cluster is gone or does not answer: nothing more to do
        pass


def cancelled_by_dask(client: Any, task: str) -> WorkerLost:
    """The error of a wait whose task the cluster dropped (its future cancelled by Dask,
    not by this run): the scheduler is gone, or the task's workers were lost."""
    if client.status != "running":
        return scheduler_gone(client)
    try:
        ask_workers(client)
    except (WorkerLost, TimeoutError):
        return scheduler_gone(client)
    return WorkerLost(f"the Dask cluster dropped {task} (its workers were lost, or another "
                      "client cancelled it); the run is stopped — run it again"
                      + log_hint())


def dask_cancellation() -> tuple[type[BaseException], ...]:
    import asyncio
    import concurrent.futures

    return (asyncio.CancelledError, concurrent.futures.CancelledError)


def wait_result(future: Any, grace: float = NO_WORKER_GRACE, progress: Any = None) -> Any:
    """``future.result()`` through :func:`gather`: a cluster left without an available
    worker (or a lost scheduler), or a result that does not arrive, raises
    :class:`WorkerLost` instead of waiting for ever; so does a task that kept killing its
    workers (``distributed.KilledWorker``)."""
    from distributed import KilledWorker

    try:
        return gather(future.client, [future], progress, grace=grace)[0]
    except KilledWorker as exc:
        raise WorkerLost(f"Dask workers kept dying on a task ({exc}); the run is "
                         "stopped — check the workers' memory" + log_hint()) from None
    except dask_cancellation():
        raise cancelled_by_dask(future.client, "a task") from None


#: Seconds one attempt to send an argument to every worker may take before the workers are
#: checked and the sending is tried again, and seconds all attempts together may take.
SCATTER_TRY = 10.0
SCATTER_DEADLINE = 60.0


class _TryOver(Exception):
    """An attempt of :func:`scatter_to_all` ran out of its time."""


def scatter_to_all(client: Any, value: Any, grace: float = NO_WORKER_GRACE,
                   deadline: float = SCATTER_DEADLINE, progress: Any = None) -> Any:
    """``client.scatter(value, broadcast=True)`` that never waits for ever.

    Dask bounds only its wait for workers to appear, not the sending itself: a worker that
    dies (or is restarted by its nanny) while it receives the value leaves the call waiting
    with no end. Each attempt here goes through :func:`wait_on` (Cancel and the workers
    checked while it runs: a lost scheduler, or no available worker for ``grace`` seconds,
    fails at once) and is cut after :data:`SCATTER_TRY` seconds; the value is then sent
    again, until ``deadline`` seconds have passed in all, when :class:`WorkerLost` says
    so. Returns the value's future."""
    stop = time.monotonic() + deadline
    since = None
    while True:
        watch = Watch(client, progress, grace=grace,
                      deadline=min(SCATTER_TRY, max(stop - time.monotonic(), TICK)),
                      expired=_TryOver)
        watch.since = since  # a cluster without workers counts across attempts
        try:
            return wait_on(client, lambda: client._scatter([value], broadcast=True,
                                                           hash=False), watch)[0]
        except (_TryOver, TimeoutError, OSError):  # (a closed connection is an OSError)
            since = check_workers(client, watch.since, grace)
            if time.monotonic() >= stop:
                raise WorkerLost(
                    f"the Dask workers did not take an argument of "
                    f"{pickled_nbytes(value) / 2**20:.1f} MiB within {deadline:g} s (they kept "
                    "dying or restarting, most often out of memory); the run is stopped — "
                    "give the workers more memory and run it again" + log_hint()) from None


def pickled_nbytes(value: Any) -> int:
    """Bytes ``value`` takes pickled (arrays' buffers counted without copying them)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return 0
    buffers: list[pickle.PickleBuffer] = []
    try:
        head = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    except Exception:  # not plainly picklable: let Dask (cloudpickle) send it with each task
        return 0
    return len(head) + sum(memoryview(b).nbytes for b in buffers)


__all__ = ["ASK_TIMEOUT", "GATHER_DEADLINE", "NO_WORKER_GRACE", "POLL", "RUN_DEADLINE",
           "SCATTER_DEADLINE", "SCATTER_TRY", "TICK", "Watch", "WorkerLost", "cancel_futures",
           "cancelled_by_dask", "check_workers", "gather", "scatter_to_all",
           "scheduler_address", "scheduler_gone", "wait_on", "wait_result"]
