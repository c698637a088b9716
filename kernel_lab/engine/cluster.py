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
out of memory), or a cluster left without workers, stops the run with
:class:`WorkerLost` — a message, never a hang.

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

from kernel_lab.core.errors import KernelLabError, ParameterError, missing_package
from kernel_lab.core.executor import call_single_threaded
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
        """Number of workers connected now."""
        return len(self.client.nthreads())

    def describe(self) -> str:
        """One line for logs and notes: where the cluster is, its workers, threads and
        memory limits."""
        info = self.client.scheduler_info(n_workers=-1)["workers"].values()
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
        """Close the client, and the local cluster if this started one."""
        try:
            self.client.close()
        finally:
            if self.local is not None:
                self.local.close()

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
    if scheduler:
        try:
            return Cluster(Client(scheduler, timeout=timeout))
        except (OSError, ValueError) as exc:
            raise ParameterError(f"cannot reach the Dask scheduler at {scheduler}: {exc}; "
                                 "check the address (tcp://host:8786) and that the "
                                 "scheduler is running") from None
    n = max(1, workers or default_workers())
    limit = worker_memory_limit(n) if memory_limit is None else memory_limit
    drop_heap_settings()  # the workers' malloc settings are DASK_QUIET's, not a run's
    with dask.config.set(DASK_QUIET):
        # no dashboard; the scheduler's small HTTP server (health checks) on any free port
        local = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                             host="127.0.0.1", dashboard_address=None, memory_limit=limit,
                             scheduler_kwargs={"dashboard": False,
                                               "dashboard_address": "127.0.0.1:0"})
    try:
        return Cluster(Client(local), local)
    except BaseException:
        local.close()
        raise


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


def check_workers(client: Any, since: float | None, grace: float) -> float | None:
    """Raise :class:`WorkerLost` when the connection to the scheduler is gone, or when the
    cluster has had no worker since ``since`` for longer than ``grace`` seconds (a nanny
    restarting a worker takes a second or two). Returns when the cluster was first seen
    without workers (``time.monotonic()``), or None while it has some."""
    if client.status not in ("running", "connecting"):
        raise WorkerLost("the connection to the Dask scheduler was lost; the run is "
                         "stopped — check that the scheduler is still running")
    try:
        workers = len(client.nthreads())
    except OSError as exc:
        raise WorkerLost(f"the Dask scheduler does not answer ({exc}); the run is "
                         "stopped — check that the scheduler is still running") from None
    if workers:
        return None
    now = time.monotonic()
    if since is None:
        return now
    if now - since > grace:
        raise WorkerLost(f"the Dask cluster has had no workers for {grace:g} s (they died "
                         "or were stopped) and the run cannot go on; the run is stopped — "
                         "start workers (dask worker ADDRESS) or use a local cluster")
    return since


def wait_result(future: Any, grace: float = 10.0) -> Any:
    """``future.result()``, but a cluster left without workers (or a lost scheduler) raises
    :class:`WorkerLost` instead of waiting for ever; so does a task that kept killing its
    workers (``distributed.KilledWorker``)."""
    from distributed import KilledWorker

    since = None
    while True:
        try:
            return future.result(timeout=1.0)
        except TimeoutError:
            since = check_workers(future.client, since, grace)
        except KilledWorker as exc:
            raise WorkerLost(f"Dask workers kept dying on a task ({exc}); the run is "
                             "stopped — check the workers' memory") from None


#: Seconds one attempt to send an argument to every worker may take before the workers are
#: checked and the sending is tried again, and seconds all attempts together may take.
SCATTER_TRY = 10.0
SCATTER_DEADLINE = 60.0


def scatter_to_all(client: Any, value: Any, grace: float = 10.0,
                   deadline: float = SCATTER_DEADLINE) -> Any:
    """``client.scatter(value, broadcast=True)`` that never waits for ever.

    Dask bounds only its wait for workers to appear, not the sending itself: a worker that
    dies (or is restarted by its nanny) while it receives the value leaves the call waiting
    with no end. Each attempt here is cut after :data:`SCATTER_TRY` seconds (its coroutine
    cancelled on the client's loop); then the workers are checked (:func:`check_workers`:
    a lost scheduler, or no worker for ``grace`` seconds, fails at once) and the value is
    sent again, until ``deadline`` seconds have passed in all, when :class:`WorkerLost` says
    so. Returns the value's future."""
    since = None
    stop = time.monotonic() + deadline
    while True:
        try:
            # Client.scatter's own timeout bounds only the wait for workers; sync's
            # callback_timeout bounds the whole call
            return client.sync(client._scatter, [value], broadcast=True, hash=False,
                               callback_timeout=SCATTER_TRY)[0]
        except (TimeoutError, OSError):  # (a closed connection is an OSError)
            since = check_workers(client, since, grace)
            if time.monotonic() >= stop:
                raise WorkerLost(
                    f"the Dask workers did not take an argument of "
                    f"{_nbytes(value) / 2**20:.1f} MiB within {deadline:g} s (they kept "
                    "dying or restarting, most often out of memory); the run is stopped — "
                    "give the workers more memory and run it again") from None


# ---------------------------------------------------------------------------------------
# Computations over partitions


def _call_part(fn: Callable[..., Any], part: Part, *args: Any) -> Any:
    """A partition's task on a worker: ``fn(part, *args)`` with one BLAS thread."""
    return call_single_threaded(lambda p: fn(p, *args), part)


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


def _keep_partitions(dask_worker: Any = None) -> None:
    """On a worker: keep up to :data:`KEEP_SHARE` of its memory limit of partitions read."""
    from kernel_lab.core.parts.base import set_read_cache

    limit = getattr(getattr(dask_worker, "memory_manager", None), "memory_limit", None)
    set_read_cache(int(KEEP_SHARE * (limit or worker_memory_limit(1))))


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
                 no_worker_grace: float = 10.0) -> None:
        self.parts = list(parts)
        self.client = _client_of(client)
        self.retries = int(retries)
        self.no_worker_grace = float(no_worker_grace)
        try:  # each worker keeps a share of the partitions it reads (the later passes)
            self.client.run(_keep_partitions)
        except Exception:  # an optimisation only: without it every pass reads the files
            pass

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
        client = self.client
        token = uuid.uuid4().hex[:8]
        # what each key computes, for messages: a partition's index, or None (a combine)
        what: dict[str, int | None] = {}
        pending: dict[str, Any] = {}
        done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        shared = [scatter_to_all(client, a, self.no_worker_grace)
                  if _nbytes(a) >= SHARE_BYTES else a for a in args]
        ok = False
        try:
            final = self._submit(fn, shared, combine, token, what, pending)
            for key in list(pending):
                pending[key].add_done_callback(done.put)
            results: dict[int, Any] = {}
            self._wait(pending, done, what, results, combine is None, total, progress,
                       message, [f for f in shared if hasattr(f, "key")])
            out = client.gather(final) if final is not None else [
                results[k] for k in range(total)]
            ok = True
            return out
        finally:
            if not ok:
                leftover = list(pending.values())
                leftover += [f for f in shared if hasattr(f, "key")]
                if leftover:
                    try:
                        client.cancel(leftover, reason="the run stopped")
                    except Exception:  # the cluster is gone: nothing left to cancel
                        pass
                del leftover
                while not done.empty():  # futures finished after the failure
                    done.get_nowait()
            pending.clear()

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
        """Wait for every pending future, reporting partitions done and checking for
        cancellation and for lost workers every :data:`TICK` seconds. ``keep``: collect the
        partitions' results into ``results``; ``inputs``: the futures of the arguments sent
        to every worker."""
        parts_done = 0
        check = getattr(progress, "check", None)
        next_poll = time.monotonic() + 1.0
        no_workers_since: float | None = None
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
                if pending.pop(fut.key, None) is None:
                    continue
                if fut.status != "finished":
                    error = self._error(fut, what, inputs)
                    break
                if what.get(fut.key) is not None:
                    finished.append(fut)
            new = len(finished)
            if new and keep:
                values = self.client.gather(finished)
                for fut, value in zip(finished, values, strict=True):
                    results[what[fut.key]] = value  # type: ignore[index]
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
            if not new and callable(check):
                check()
            now = time.monotonic()
            if pending and now >= next_poll:
                next_poll = now + 1.0
                no_workers_since = check_workers(self.client, no_workers_since,
                                                 self.no_worker_grace)

    def _inputs_lost(self, inputs: Sequence[Any]) -> bool:
        """Whether some argument sent to every worker is gone: by its future's status, or —
        the status reaches the client later than the cancelled task that needed it — by
        the scheduler, which then knows no worker holding it."""
        if any(f.status != "finished" for f in inputs):
            return True
        if not inputs:
            return False
        try:
            holders = self.client.who_has(list(inputs))
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
            tb = fut.traceback()
            return exc.with_traceback(tb) if tb is not None else exc  # the task's own error
        if self._inputs_lost(inputs):
            return WorkerLost(f"the Dask workers holding the inputs of {task} all died at "
                              "once (most often out of memory: a worker is killed past its "
                              "memory limit), and the inputs were lost with them. The run "
                              "is stopped — give the workers more memory, use fewer "
                              "workers per machine, or cut the data into smaller partitions")
        return WorkerLost(f"the Dask cluster dropped the task {task} (status "
                          f"{fut.status}: its workers were lost, or another client "
                          "cancelled it); the run is stopped — run it again")


__all__ = ["CLIENT_RESERVE", "DASK_QUIET", "SHARE_BYTES", "Cluster", "DaskParts",
           "WorkerLost", "check_workers", "connect", "default_workers", "peak_memory",
           "reset_peak_memory", "scatter_to_all", "wait_result", "worker_memory_limit"]
