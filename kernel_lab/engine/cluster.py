"""Dask clusters: starting a local one or reaching a scheduler (:func:`connect`), and the
memory figures of their processes.

The waiting loop every run on a cluster goes through is in
:mod:`kernel_lab.engine.cluster_wait`; computations over partitions in
:mod:`kernel_lab.engine.dask_parts`. Dask's own log goes to a file rather than the
terminal (:mod:`kernel_lab.engine.dask_log`).

Needs the optional extra: ``pip install 'kernel-lab[dask]'``.
"""

from __future__ import annotations

import os
import resource
import sys
from typing import Any

from kernel_lab.core.errors import ParameterError, missing_package
from kernel_lab.engine.cluster_wait import (
    ASK_TIMEOUT,
    WorkerLost,
    ask_workers,
    log_hint,
)
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
#: The environment variables a nanny sets in *this* process before it spawns a worker
#: (Dask's pre-spawn environment): put back as they were when the local cluster closes,
#: so processes started later (a run's process pool) do not take the workers' settings
#: for the user's.
NANNY_ENVIRONMENT = tuple(key.rsplit(".", 1)[1] for key in DASK_QUIET
                          if key.startswith("distributed.nanny.pre-spawn-environ."))

#: Arguments at least this large (pickled, arrays' buffers included) are sent to the
#: workers once per call and shared by the tasks, instead of travelling with every task.
SHARE_BYTES = 256 * 1024

#: Memory kept for this process (client, and a local cluster's scheduler) when a local
#: cluster's worker memory limit is derived from the machine's available memory.
CLIENT_RESERVE = 512 * 2**20

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

    def __init__(self, client: Any, local: Any = None,
                 environ: dict[str, str | None] | None = None) -> None:
        self.client = client
        self.local = local
        #: the nanny's variables as they were before the local cluster started
        self.environ = environ or {}

    @property
    def address(self) -> str:
        """The scheduler's address (``tcp://host:port``)."""
        return str(self.client.scheduler.address)

    def workers(self) -> int:
        """Number of workers connected now (the scheduler asked with a deadline)."""
        return len(ask_workers(self.client))

    def describe(self) -> str:
        """One line for logs and notes: where the cluster is, its workers, threads and
        memory limits."""
        info = ask_workers(self.client).values()
        threads = sorted({int(w.get("nthreads", 0)) for w in info})
        limits = sorted({int(w.get("memory_limit") or 0) for w in info})
        kind = "local Dask cluster" if self.local is not None else "Dask cluster"
        memory = ("no memory limit" if limits in ([], [0]) else
                  " / ".join(f"{m / 1e9:.2g} GB" for m in limits) + " each")
        return (f"{kind} at {self.address}: {len(info)} worker(s) × "
                f"{'/'.join(map(str, threads)) or '0'} thread(s), {memory}")

    def close(self) -> None:
        """Close the client, and the local cluster if this started one. A local cluster
        whose scheduler is gone is given :data:`ASK_TIMEOUT` seconds (Dask would wait
        30 s for the scheduler; its workers stop within that time anyway). The variables
        its nannies set in this process's environment (:data:`NANNY_ENVIRONMENT`) are put
        back as they were."""
        gone = self.client.status != "running"
        try:
            self.client.close()
        finally:
            if self.local is not None:
                try:
                    self.local.close(timeout=ASK_TIMEOUT if gone else None)
                except TimeoutError:
                    pass
                finally:
                    _restore_environment(self.environ)

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
    environ = {name: os.environ.get(name) for name in NANNY_ENVIRONMENT}
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
        _restore_environment(environ)
        raise WorkerLost(f"the local Dask cluster could not start its {n} worker(s) ("
                         f"{str(exc).rstrip('.')}"
                         "): they died while starting (killed, or out of memory); run it "
                         "again, with fewer workers (--workers) if memory is short"
                         + log_hint()) from None
    try:
        client = Client(local)
        client._kernel_lab_address = local.scheduler_address
        client._kernel_lab_local = True  # for messages: its nannies restart workers
        return Cluster(client, local, environ)
    except BaseException:
        local.close()
        _restore_environment(environ)
        raise


def _restore_environment(saved: dict[str, str | None]) -> None:
    """Put the variables of ``saved`` back as they were (None: not set)."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _route_dask_log() -> Any:
    """Dask's log in this process to its file (:mod:`kernel_lab.engine.dask_log`) rather
    than the terminal; returns the file (None if it cannot be written)."""
    from kernel_lab.engine.dask_log import route_dask_log

    return route_dask_log()


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


def client_of(cluster: Any) -> Any:
    return getattr(cluster, "client", cluster)


def peak_memory(cluster: Any) -> dict[str, Any]:
    """Peak resident memory (bytes) of this process (the client; with a local cluster also
    its scheduler) and of every worker, since each started or since
    :func:`reset_peak_memory`: ``{"client": int, "workers": {address: int}, "max_worker":
    int}``. A worker restarted by its nanny counts from its restart."""
    workers = {str(k): int(v) for k, v in client_of(cluster).run(_peak_rss).items()}
    return {"client": _peak_rss(), "workers": workers,
            "max_worker": max(workers.values(), default=0)}


def reset_peak_memory(cluster: Any) -> bool:
    """Restart the peak-memory counts of this process and the workers from their current
    use (Linux); False where the platform cannot (the counts then run from the start)."""
    here = _reset_peak()
    there = client_of(cluster).run(_reset_peak).values()
    return here and all(there)


__all__ = ["CLIENT_RESERVE", "DASK_QUIET", "SHARE_BYTES", "Cluster", "WorkerLost", "connect",
           "default_workers", "peak_memory", "reset_peak_memory", "worker_memory_limit"]
