"""Dask clusters: computations over partitions (:class:`DaskParts`) and starting or reaching
a cluster (:func:`connect`).

:class:`DaskParts` is the :class:`~kernel_lab.core.parts.base.PartMap` of a distributed
``Client``: one task per partition (the partition travels to the worker, which reads its
rows there; the rows never come back), large arguments sent once to every worker, and
reductions combined *on the workers* in the fixed pairwise tree of
:func:`~kernel_lab.core.parts.base.tree_combine` — the same additions, in the same order,
as :class:`~kernel_lab.core.parts.base.LocalParts` does in one process, so the numbers
agree bit for bit. Only the final result of a reduction travels to the client.

While tasks run, the client reports progress by partitions done and checks for
cancellation at least every 0.2 s; a cancelled run cancels its futures on the cluster. A
worker that dies is replaced (a local cluster's nanny restarts it) and its tasks run
elsewhere; a partition that keeps killing workers (``distributed.KilledWorker``: typically
out of memory), a cluster left without an available worker (none, or all paused by Dask's
memory monitor) for :data:`NO_WORKER_GRACE` seconds, results that do not arrive within
:data:`GATHER_DEADLINE` seconds of being finished, or a scheduler that is gone, stops the
run with :class:`WorkerLost` — a message, never a hang. Every such wait goes through one
loop, :func:`wait_on` with a :class:`Watch`. Partitions too large for any worker's memory
are refused before a task is sent (:meth:`DaskParts.check_fit`), and Dask's own log goes to
a file rather than the terminal (:mod:`kernel_lab.engine.dask_log`).

Needs the optional extra: ``pip install 'kernel-lab[dask]'``.
"""

from __future__ import annotations

import operator
import os
import pickle
import queue
import resource
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError, KernelLabError, ParameterError, missing_package
from kernel_lab.core.executor import call_single_threaded
from kernel_lab.core.memory import format_bytes
from kernel_lab.core.parts.base import Part
from kernel_lab.core.progress import Progress
from kernel_lab.engine.heap import drop_heap_settings

#: Dask settings for the local clusters Kernel Lab starts (and advice for other clusters):
#: - the statistical profiler samples every worker thread 100 times a second (~6 % here);
#: - the nanny starts workers with MALLOC_TRIM_THRESHOLD_=64 KiB, which switches off glibc's
#:   adaptive mmap threshold: every array above 128 KiB is then a fresh mmap, paid in page
#:   faults on first touch — 15–20 % of a Monte Carlo trial's time. A large trim threshold
#:   with a 64 MiB mmap threshold lets workers reuse their heap, as a plain process does.
DASK_QUIET = {
    "distributed.worker.profile.enabled": False,
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": str(2**30),
    "distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": str(2**26),
}

#: Arguments at least this large (pickled, arrays' buffers included) are sent to the
#: workers once per call and shared by the tasks, instead of travelling with every task.
SHARE_BYTES = 256 * 1024

#: Memory kept for this process (client, and a local cluster's scheduler) when a local
#: cluster's worker memory limit is derived from the machine's available memory.
CLIENT_RESERVE = 512 * 2**20

#: How often (seconds) a waiting run checks for cancellation.
TICK = 0.2


class WorkerLost(KernelLabError):
    """A compute worker died and its task could not be completed."""


# ---------------------------------------------------------------------------------------
# Reaching a cluster


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def worker_memory_limit(workers: int) -> int:
    """The memory limit (bytes) of each of ``workers`` local workers: the machine's
    available memory less :data:`CLIENT_RESERVE` for this process, times 0.8 (headroom for
    the nannies and the page cache), shared equally — at least 256 MiB each."""
    import psutil

    free = psutil.virtual_memory().available - CLIENT_RESERVE
    return max(256 * 2**20, int(0.8 * free / max(1, workers)))


class Cluster:
    """A connection to a Dask cluster: the ``client`` and, when Kernel Lab started the
    cluster on this machine, the ``local`` ``LocalCluster`` (closed with it).

    Use as a context manager, or call :meth:`close`."""

    def __init__(self, client: Any, local: Any = None) -> None:
        self.client = client
        self.local = local

    @property
    def address(self) -> str:
        """The scheduler's address (``tcp://host:port``)."""
        return str(self.client.scheduler.address)

    def workers(self) -> int:
        """Number of workers connected now (the scheduler asked with a deadline)."""
        return len(_ask_workers(self.client))

    def describe(self) -> str:
        """One line for logs and notes: where the cluster is, its workers, threads and
        memory limits."""
        info = _ask_workers(self.client).values()
        threads = sorted({int(w.get("nthreads", 0)) for w in info})
        limits = sorted({int(w.get("memory_limit") or 0) for w in info})
        kind = "local Dask cluster" if self.local is not None else "Dask cluster"
        memory = ("no memory limit" if limits in ([], [0]) else
                  " / ".join(f"{m / 1e9:.2g} GB" for m in limits) + " each")
        return (f"{kind} at {self.address}: {len(info)} worker(s) × "
                f"{'/'.join(map(str, threads)) or '0'} thread(s), {memory}")

    def parts(self, parts: Sequence[Part], retries: int = 0) -> DaskParts:
        """A :class:`DaskParts` over ``parts`` on this cluster."""
        return DaskParts(parts, self.client, retries=retries)

    def close(self) -> None:
        """Close the client, and the local cluster if this started one. A local cluster
        whose scheduler is gone is given :data:`ASK_TIMEOUT` seconds (Dask would wait
        30 s for the scheduler; its workers stop within that time anyway)."""
        gone = self.client.status != "running"
        try:
            self.client.close()
        finally:
            if self.local is not None:
                try:
                    self.local.close(timeout=ASK_TIMEOUT if gone else None)
                except TimeoutError:
                    pass

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        kind = "local" if self.local is not None else "external"
        return f"Cluster({kind}, {self.address})"


def connect(scheduler: str | None = None, workers: int | None = None,
            memory_limit: int | str | None = None, timeout: float = 10.0) -> Cluster:
    """Reach a Dask cluster, or start one on this machine.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``). An unreachable address is a
        :class:`ParameterError` after ``timeout`` seconds.
    workers : int, optional
        Without a scheduler: the number of worker processes of the local cluster (default:
        one per core). Each worker runs one thread; the cluster listens on 127.0.0.1 only
        and has no dashboard (settings :data:`DASK_QUIET`).
    memory_limit : int or str, optional
        Without a scheduler: each local worker's memory limit (bytes, or a Dask string such
        as ``"1GB"``); default :func:`worker_memory_limit` — the machine's available memory
        less 512 MiB for this process, times 0.8, shared equally among the workers.
    timeout : float
        Seconds to wait for an external scheduler.
    """
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise ParameterError(missing_package(
            "the dask backend", "Dask",
            "it runs on threads or a local process pool (--backend threads or processes, "
            "or Run → Compute backend in the window); for a Dask cluster use Kernel Lab "
            "installed in Python (with its dask extra)")) from None
    log = _route_dask_log()
    if scheduler:
        try:
            client = Client(scheduler, timeout=timeout)
            client._kernel_lab_address = scheduler  # for messages once it is gone
            return Cluster(client)
        except (OSError, ValueError) as exc:
            raise ParameterError(f"cannot reach the Dask scheduler at {scheduler}: {exc}; "
                                 "check the address (tcp://host:8786) and that the "
                                 "scheduler is running") from None
    n = max(1, workers or default_workers())
    limit = worker_memory_limit(n) if memory_limit is None else memory_limit
    drop_heap_settings()  # the workers' malloc settings are DASK_QUIET's, not a run's
    # the workers' log records go to the same file from their start (a local cluster's
    # workers share this file system), restarted workers included
    plugins = ()
    if log is not None:
        from kernel_lab.engine.dask_plugin import LogToFile

        plugins = (LogToFile(str(log)),)
    try:
        with dask.config.set(DASK_QUIET):
            # no dashboard; the scheduler's small HTTP server (health checks) on a free port
            local = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                 host="127.0.0.1", dashboard_address=None,
                                 memory_limit=limit, plugins=plugins,
                                 scheduler_kwargs={"dashboard": False,
                                                   "dashboard_address": "127.0.0.1:0"})
    except (RuntimeError, OSError, TimeoutError) as exc:  # "Nanny failed to start", …
        raise WorkerLost(f"the local Dask cluster could not start its {n} worker(s) ("
                         f"{str(exc).rstrip('.')}"
                         "): they died while starting (killed, or out of memory); run it "
                         "again, with fewer workers (--workers) if memory is short"
                         + _log_hint()) from None
    try:
        client = Client(local)
        client._kernel_lab_address = local.scheduler_address
        client._kernel_lab_local = True  # for messages: its nannies restart workers
        return Cluster(client, local)
    except BaseException:
        local.close()
        raise


def _route_dask_log() -> Any:
    """Dask's log in this process to its file (:mod:`kernel_lab.engine.dask_log`) rather
    than the terminal; returns the file (None if it cannot be written)."""
    from kernel_lab.engine.dask_log import route_dask_log

    global _dask_log_file
    _dask_log_file = route_dask_log()
    return _dask_log_file


def _peak_rss() -> int:
    """This process's peak resident memory (bytes) since it started or since
    :func:`_reset_peak` (Linux: VmHWM; elsewhere the rusage maximum)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _reset_peak() -> bool:
    """Restart this process's peak-memory count from its current use (Linux only)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _client_of(cluster: Any) -> Any:
    return getattr(cluster, "client", cluster)


def peak_memory(cluster: Any) -> dict[str, Any]:
    """Peak resident memory (bytes) of this process (the client; with a local cluster also
    its scheduler) and of every worker, since each started or since
    :func:`reset_peak_memory`: ``{"client": int, "workers": {address: int}, "max_worker":
    int}``. A worker restarted by its nanny counts from its restart."""
    workers = {str(k): int(v) for k, v in _client_of(cluster).run(_peak_rss).items()}
    return {"client": _peak_rss(), "workers": workers,
            "max_worker": max(workers.values(), default=0)}


def reset_peak_memory(cluster: Any) -> bool:
    """Restart the peak-memory counts of this process and the workers from their current
    use (Linux); False where the platform cannot (the counts then run from the start)."""
    here = _reset_peak()
    there = _client_of(cluster).run(_reset_peak).values()
    return here and all(there)


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


#: The file Dask's own log goes to in this process (set by :func:`connect`), for messages.
_dask_log_file: Any = None


def _log_hint() -> str:
    """Where Dask's own log went (:mod:`kernel_lab.engine.dask_log`), for messages."""
    return f" (Dask's own log: {_dask_log_file})" if _dask_log_file else ""


def scheduler_gone(client: Any) -> WorkerLost:
    """The error of a run whose scheduler stopped or cannot be reached any more."""
    return WorkerLost(f"the Dask scheduler at {scheduler_address(client)} is gone (stopped, "
                      "or the connection to it was lost); the run is stopped — start the "
                      "scheduler and its workers again and run it again, or run on a local "
                      "cluster (no scheduler address)" + _log_hint())


def _ask_workers(client: Any) -> dict[str, Any]:
    """The scheduler's view of its workers (address → info with ``status`` and
    ``memory_limit``), asked with a deadline of :data:`ASK_TIMEOUT`. Raises
    :class:`WorkerLost` when the scheduler is gone, TimeoutError when it does not answer."""
    if client.status not in ("running", "connecting") or client.scheduler is None:
        raise scheduler_gone(client)
    try:
        info = client.sync(client.scheduler.identity, n_workers=-1,
                           callback_timeout=ASK_TIMEOUT)
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
        workers = _ask_workers(client)
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
                         "running and reachable" + _log_hint())
    if states and all(s == "paused" for s in states):
        limits = sorted({int(w.get("memory_limit") or 0) for w in workers.values()})
        limit = " / ".join(format_bytes(m) for m in limits if m) or "none"
        raise WorkerLost(
            f"all {len(states)} Dask worker(s) have been paused by Dask's memory monitor for "
            f"{grace:g} s (their memory limit: {limit} each), so nothing can run"
            + (f"; {paused()}" if paused is not None else "")
            + "; the run is stopped — give each worker more memory (dask worker "
            "--memory-limit, or fewer workers per machine) or cut the data into smaller "
            "files (more partitions)" + _log_hint())
    if getattr(client, "_kernel_lab_local", False):
        raise WorkerLost(f"the local Dask cluster has had no workers for {grace:g} s (they "
                         "kept dying — killed, or out of memory — faster than they were "
                         "restarted); the run is stopped — run it again, with fewer workers "
                         "(--workers) if memory is short" + _log_hint())
    raise WorkerLost(f"the Dask cluster has had no workers for {grace:g} s (they died or "
                     "were stopped) and the run cannot go on; the run is stopped — start "
                     "workers (dask worker ADDRESS) or use a local cluster" + _log_hint())


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
                              "; the run is stopped" + _log_hint()))


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
            "— give the workers more memory and run it again" + _log_hint())

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
        _ask_workers(client)
    except (WorkerLost, TimeoutError):
        return scheduler_gone(client)
    return WorkerLost(f"the Dask cluster dropped {task} (its workers were lost, or another "
                      "client cancelled it); the run is stopped — run it again"
                      + _log_hint())


def _dask_cancellation() -> tuple[type[BaseException], ...]:
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
                         "stopped — check the workers' memory" + _log_hint()) from None
    except _dask_cancellation():
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
                    f"{_nbytes(value) / 2**20:.1f} MiB within {deadline:g} s (they kept "
                    "dying or restarting, most often out of memory); the run is stopped — "
                    "give the workers more memory and run it again" + _log_hint()) from None


# ---------------------------------------------------------------------------------------
# Computations over partitions


def _call_part(fn: Callable[..., Any], part: Part, *args: Any) -> Any:
    """A partition's task on a worker: ``fn(part, *args)`` with one BLAS thread. A task
    that fails on a partition whose file this worker cannot see raises
    :class:`PathNotShared` (the client then says whether it sees the file)."""
    try:
        return call_single_threaded(lambda p: fn(p, *args), part)
    except Exception as exc:
        missing = _path_missing_here(part)
        if missing is None:
            raise
        import socket

        raise PathNotShared(missing, socket.gethostname(),
                            f"{type(exc).__name__}: {exc}") from None


def _call_combine(combine: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    return call_single_threaded(lambda pair: combine(*pair), (a, b))


def _nbytes(value: Any) -> int:
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


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__name__", "task")).strip("_<>") or "task"


#: The share of a worker's memory limit it may fill with the partitions it has read.
KEEP_SHARE = 0.15


def _keep_partitions(dask_worker: Any = None) -> dict[str, float]:
    """On a worker: keep up to :data:`KEEP_SHARE` of its memory limit of partitions read;
    returns its memory limit (0: none), the fraction of it at which Dask pauses it, and the
    memory its process uses now (bytes)."""
    from kernel_lab.core.parts.base import set_read_cache

    manager = getattr(dask_worker, "memory_manager", None)
    limit = getattr(manager, "memory_limit", None)
    set_read_cache(int(KEEP_SHARE * (limit or worker_memory_limit(1))))
    pause = getattr(manager, "memory_pause_fraction", None)
    try:
        import psutil

        used = float(psutil.Process().memory_info().rss)
    except Exception:  # pragma: no cover - psutil comes with distributed
        used = 0.0
    return {"limit": float(limit or 0), "pause": float(pause or 1.0), "used": used}


#: Copies of a partition's rows (as float64) a task holds at once: the columns as read from
#: the file, the rows as float64, and the standardised rows or a block computed from them.
PART_COPIES = 3


def part_bytes(part: Part) -> int | None:
    """A partition's rows × (columns + 1) × 8 bytes (float64 features and target), from
    what the partition knows without reading it (a Parquet footer's row count); None
    when it does not know its columns."""
    columns = getattr(part, "features", None) or getattr(part, "columns", None)
    if columns is not None:
        p = len(columns)
    elif getattr(part, "X", None) is not None:
        p = int(part.X.shape[1])  # type: ignore[attr-defined]
    else:
        return None
    return int(part.rows) * (p + 1) * 8


def _path_missing_here(part: Part) -> str | None:
    """On a worker, after a partition's task failed: the partition's file when this
    machine cannot see it (the cause, rather than the error it gave)."""
    path = getattr(part, "path", None)
    if isinstance(path, str) and not os.path.exists(path):
        return path
    return None


class PathNotShared(KernelLabError):
    """A partition's file cannot be seen by the Dask worker that was to read it: the
    ``path``, the worker's ``host`` and the error the task gave (``detail``)."""

    def __init__(self, path: str, host: str, detail: str) -> None:
        self.path, self.host, self.detail = path, host, detail
        super().__init__(f"the Dask worker on {host} cannot see {path} ({detail})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.host, self.detail))


class DaskParts:
    """:class:`~kernel_lab.core.parts.base.PartMap` on a Dask cluster.

    Parameters
    ----------
    parts : sequence of Part
        The partitions (small, picklable: each travels with its task to a worker).
    client : distributed.Client or Cluster
        The cluster to run on.
    retries : int
        Times a task that raised is run again (default 0: a task's own error — a file that
        cannot be read, a missing value — is the same every time and is reported at once,
        not after reading the partition three times); a task whose worker died is
        rescheduled by Dask regardless, up to the scheduler's ``allowed-failures``.
    no_worker_grace : float
        Seconds a run waits for workers to come back when the cluster has none (a nanny
        restarting a worker takes a second or two) before it fails with :class:`WorkerLost`.

    Notes
    -----
    ``progress`` (of :meth:`map` and :meth:`reduce`) is called once per partition done, as
    :class:`~kernel_lab.core.parts.base.LocalParts` calls it; a
    :class:`~kernel_lab.core.progress.Progress` is also checked for cancellation every
    0.2 s while no partition finishes (another callable only when one does). On
    cancellation, or any error, the run's futures are cancelled on the cluster before the
    exception propagates: calls already running on a worker finish there, unused.
    """

    def __init__(self, parts: Sequence[Part], client: Any, retries: int = 0,
                 no_worker_grace: float = NO_WORKER_GRACE) -> None:
        self.parts = list(parts)
        self.client = _client_of(client)
        self.retries = int(retries)
        self.no_worker_grace = float(no_worker_grace)
        self._memory: list[dict[str, float]] | None = None
        try:  # each worker keeps a share of the partitions it reads (the later passes)
            got = wait_on(self.client, lambda: self.client._run(_keep_partitions),
                          Watch(self.client, grace=self.no_worker_grace,
                                deadline=RUN_DEADLINE))
            self._memory = [m for m in got.values() if isinstance(m, dict)]
        except Exception:  # then every pass reads the files, and nothing is checked
            pass

    def largest_part(self) -> tuple[Part, int] | None:
        """The partition with the most bytes (:func:`part_bytes`) and its bytes."""
        sized = [(part, part_bytes(part)) for part in self.parts]
        known = [(part, b) for part, b in sized if b is not None]
        return max(known, key=lambda pb: pb[1]) if known else None

    def sizes_note(self) -> str:
        """The largest partition's size, for messages about the workers' memory."""
        largest = self.largest_part()
        if largest is None:
            return f"the data are in {len(self.parts)} partitions"
        part, nbytes = largest
        return (f"the largest of the {len(self.parts)} partitions, {part.describe()}, holds "
                f"{format_bytes(nbytes)} as float64 rows, and a task holds about "
                f"{PART_COPIES} copies of its partition")

    def check_fit(self) -> None:
        """Refuse, before any task is sent, partitions that cannot fit any worker: a task
        holds :data:`PART_COPIES` copies of its partition's rows (:func:`part_bytes`, from
        the files' row counts), and Dask pauses a worker once its process uses the
        fraction ``distributed.worker.memory.pause`` of its memory limit (less what the
        worker's process already uses)."""
        largest = self.largest_part()
        limited = [m for m in self._memory or () if m.get("limit")]
        if largest is None or not limited or len(limited) < len(self._memory or ()):
            return  # a worker without a limit takes anything
        part, nbytes = largest
        room = max(m["pause"] * m["limit"] - m["used"] for m in limited)
        if PART_COPIES * nbytes <= room:
            return
        best = max(limited, key=lambda m: m["pause"] * m["limit"] - m["used"])
        raise DataError(
            f"partition {part.describe()} holds {format_bytes(nbytes)} as float64 rows "
            f"(rows × (columns + 1) × 8 bytes) and a task holds about {PART_COPIES} copies "
            f"of it ({format_bytes(PART_COPIES * nbytes)}), but no Dask worker has that "
            f"room: the largest memory limit is {format_bytes(best['limit'])}, Dask pauses "
            f"a worker at {best['pause']:.0%} of it, and the worker itself already uses "
            f"{format_bytes(best['used'])}", "give each worker more memory (dask worker "
            "--memory-limit, or fewer workers per machine) or cut the data into smaller "
            "files (more partitions)")

    def map(self, fn: Callable[..., Any], *args: Any, progress: Progress | None = None,
            message: str = "") -> list[Any]:
        """``[fn(part, *args) for part in parts]``, one task per partition, in part order.

        ``fn`` must be a module-level function and ``args`` picklable."""
        return self._run(fn, args, None, progress, message)

    def reduce(self, fn: Callable[..., Any], *args: Any,
               combine: Callable[[Any, Any], Any] = operator.add,
               progress: Progress | None = None, message: str = "") -> Any:
        """The per-partition results combined on the workers in the fixed pairwise tree
        ((0, 1), (2, 3), … then again); only the final value comes to the client."""
        return self._run(fn, args, combine, progress, message)

    # -- the run -------------------------------------------------------------------------

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...],
             combine: Callable[[Any, Any], Any] | None, progress: Progress | None,
             message: str) -> Any:
        total = len(self.parts)
        if total == 0:
            if combine is not None:
                raise ValueError("nothing to combine")
            return []
        self.check_fit()
        client = self.client
        token = uuid.uuid4().hex[:8]
        # what each key computes, for messages: a partition's index, or None (a combine)
        what: dict[str, int | None] = {}
        pending: dict[str, Any] = {}
        done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        shared = [scatter_to_all(client, a, self.no_worker_grace, progress=progress)
                  if _nbytes(a) >= SHARE_BYTES else a for a in args]
        ok = False
        try:
            final = self._submit(fn, shared, combine, token, what, pending)
            for key in list(pending):
                pending[key].add_done_callback(done.put)
            results: dict[int, Any] = {}
            inputs = [f for f in shared if hasattr(f, "key")]
            self._wait(pending, done, what, results, combine is None, total, progress,
                       message, inputs)
            out = (self._gather([final], what, progress, inputs)[0] if final is not None
                   else [results[k] for k in range(total)])
            ok = True
            return out
        finally:
            if not ok:
                leftover = list(pending.values())
                leftover += [f for f in shared if hasattr(f, "key")]
                cancel_futures(client, leftover)
                del leftover
                while not done.empty():  # futures finished after the failure
                    done.get_nowait()
            pending.clear()

    def _gather(self, futures: list[Any], what: dict[str, int | None],
                progress: Progress | None, inputs: Sequence[Any]) -> list[Any]:
        """The results of finished futures (:func:`gather`), a lost result or a dropped
        task raised as :meth:`_error` words it."""
        try:
            return gather(self.client, futures, progress, grace=self.no_worker_grace,
                          paused=self.sizes_note)
        except _dask_cancellation():
            lost = next((f for f in futures if f.status != "finished"), futures[0])
            raise self._error(lost, what, inputs) from None

    def _submit(self, fn: Callable[..., Any], args: list[Any],
                combine: Callable[[Any, Any], Any] | None, token: str,
                what: dict[str, int | None], pending: dict[str, Any]) -> Any:
        """Submit a task per partition and, with ``combine``, the tree combining their
        results; every future goes into ``pending`` and its key into ``what``. Returns
        the tree's root future (None without ``combine``)."""
        client = self.client
        name = _name(fn)
        level = []
        for k, part in enumerate(self.parts):
            key = f"{name}-{token}-part-{k}"
            what[key] = k
            level.append(client.submit(_call_part, fn, part, *args, key=key,
                                       retries=self.retries))
        pending.update((f.key, f) for f in level)
        if combine is None:
            return None
        depth = 0
        while len(level) > 1:
            nxt = []
            for i in range(0, len(level) - 1, 2):
                key = f"{_name(combine)}-{token}-tree-{depth}-{i // 2}"
                what[key] = None
                nxt.append(client.submit(_call_combine, combine, level[i], level[i + 1],
                                         key=key, retries=self.retries))
            pending.update((f.key, f) for f in nxt)
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
            depth += 1
        return level[0]

    def _wait(self, pending: dict[str, Any], done: queue.SimpleQueue[Any],
              what: dict[str, int | None], results: dict[int, Any], keep: bool,
              total: int, progress: Progress | None, message: str, inputs: list[Any]
              ) -> None:
        """Wait for every pending future, reporting partitions done; every :data:`TICK`
        seconds a :class:`Watch` checks for cancellation, for workers lost or all paused
        and for a lost scheduler. ``keep``: collect the partitions' results into
        ``results`` (:meth:`_gather`); ``inputs``: the futures of the arguments sent to
        every worker."""
        parts_done = 0
        watch = Watch(self.client, progress, grace=self.no_worker_grace,
                      paused=self.sizes_note)
        while pending:
            batch = []
            try:
                batch.append(done.get(timeout=TICK))
                while True:
                    batch.append(done.get_nowait())
            except queue.Empty:
                pass
            finished, error = [], None
            for fut in batch:
                if fut.key not in pending:
                    continue
                if fut.status != "finished":
                    pending.pop(fut.key)
                    error = self._error(fut, what, inputs)
                    break
                if what.get(fut.key) is not None:
                    finished.append(fut)
                else:
                    pending.pop(fut.key)
            new = len(finished)
            if new and keep and error is None:  # (a failed gather leaves them pending)
                values = self._gather(finished, what, progress, inputs)
                for fut, value in zip(finished, values, strict=True):
                    results[what[fut.key]] = value  # type: ignore[index]
            for fut in finished:
                pending.pop(fut.key, None)
            # no future stays referenced from this frame: an exception raised below keeps
            # the frame (in its traceback), and a referenced future keeps its task alive
            batch.clear()
            finished.clear()
            fut = None
            if error is not None:
                raise error
            for _ in range(new):  # one report per partition, as LocalParts gives
                parts_done += 1
                if progress is not None:
                    progress(parts_done / total,
                             f"{message} ({parts_done}/{total} partitions)")
            if pending and not new:
                watch()

    def _inputs_lost(self, inputs: Sequence[Any]) -> bool:
        """Whether some argument sent to every worker is gone: by its future's status, or —
        the status reaches the client later than the cancelled task that needed it — by
        the scheduler, which then knows no worker holding it."""
        if any(f.status != "finished" for f in inputs):
            return True
        if not inputs:
            return False
        try:
            holders = self.client.sync(self.client.scheduler.who_has,
                                       keys=[f.key for f in inputs],
                                       callback_timeout=ASK_TIMEOUT)
        except Exception:  # the scheduler unreachable: the statuses are all there is
            return False
        return any(not holders.get(f.key) for f in inputs)

    def _error(self, fut: Any, what: dict[str, int | None], inputs: Sequence[Any] = ()
               ) -> BaseException:
        """The error to raise for a future that did not finish (``inputs``: the futures of
        the arguments sent to every worker)."""
        from distributed import KilledWorker

        k = what.get(fut.key)
        task = ("combining the partitions' results" if k is None else
                f"partition {k + 1} of {len(self.parts)} ({self.parts[k].describe()})")
        if fut.status == "error":
            exc = fut.exception()
            if isinstance(exc, KilledWorker):
                lost = WorkerLost(
                    f"Dask workers kept dying while computing {task}: every worker that "
                    "ran it died (most often out of memory: a worker is killed past its "
                    "memory limit). The run is stopped — give the workers more memory, "
                    "use fewer workers per machine, or cut the data into smaller "
                    "partitions")
                lost.__suppress_context__ = True
                return lost
            if isinstance(exc, PathNotShared):
                return self._not_shared(exc)
            tb = fut.traceback()
            return exc.with_traceback(tb) if tb is not None else exc  # the task's own error
        if self.client.status != "running":
            return scheduler_gone(self.client)
        if self._inputs_lost(inputs):
            return WorkerLost(f"the Dask workers holding the inputs of {task} all died at "
                              "once (most often out of memory: a worker is killed past its "
                              "memory limit), and the inputs were lost with them. The run "
                              "is stopped — give the workers more memory, use fewer "
                              "workers per machine, or cut the data into smaller partitions")
        return cancelled_by_dask(self.client, f"the task {task}")

    def _not_shared(self, exc: PathNotShared) -> BaseException:
        """The error of a task whose worker could not see its partition's file."""
        if not os.path.exists(exc.path):  # gone here too: the worker's own error says so
            return DataError(f"the file cannot be read on the Dask worker ({exc.detail})",
                             "check that the folder was not changed while in use",
                             path=exc.path)
        return DataError(
            f"the Dask worker on {exc.host} cannot see {exc.path}, which this machine "
            f"reads ({exc.detail})", "the workers of a Dask cluster read the files "
            "themselves, so they need the same files at the same path: put the data on a "
            "shared file system mounted at that path on every worker machine, or run on a "
            "local cluster (no scheduler address)", path=exc.path)


__all__ = ["ASK_TIMEOUT", "CLIENT_RESERVE", "DASK_QUIET", "GATHER_DEADLINE", "NO_WORKER_GRACE",
           "PART_COPIES", "SHARE_BYTES", "Cluster", "DaskParts", "PathNotShared", "Watch",
           "WorkerLost", "cancel_futures", "check_workers", "connect", "default_workers",
           "gather", "part_bytes", "peak_memory", "reset_peak_memory", "scatter_to_all",
           "scheduler_gone", "wait_on", "wait_result", "worker_memory_limit"]
