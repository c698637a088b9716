"""Computations over partitions on a Dask cluster: :class:`DaskParts`.

:class:`DaskParts` is the :class:`~kernel_lab.core.rows.mapreduce.PartMap` of a distributed
``Client``: one task per partition (the partition travels to the worker, which reads its
rows there; the rows never come back), large arguments sent once to every worker, and
reductions combined *on the workers* in the fixed pairwise tree of
:func:`~kernel_lab.core.rows.blocks.tree_combine`, as
:class:`~kernel_lab.core.rows.mapreduce.LocalParts` does in one process. Sums over rows
(:func:`~kernel_lab.core.rows.mapreduce.reduce_blocks`) make each partition's task return its
:class:`~kernel_lab.core.rows.blocks.Frontier` of per-block values, and the pairwise
combines merge frontiers — merges are associative, so the root is the one tree over the
canonical row blocks whatever the partitions and the combine tree: the same bits as in
this process. Only the final result of a reduction travels to the client.

While tasks run, the client reports progress by partitions done; every wait goes through
:func:`~kernel_lab.engine.cluster_wait.wait_on` (Cancel, the workers, deadlines).
Partitions too large for any worker's memory are refused before a task is sent
(:meth:`DaskParts.check_fit`).

Needs the optional extra: ``pip install 'kernel-lab[dask]'``.
"""

from __future__ import annotations

import operator
import os
import queue
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from kernel_lab.core.errors import DataError, KernelLabError
from kernel_lab.core.executor import call_single_threaded
from kernel_lab.core.memory import format_bytes
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows.mapreduce import Part
from kernel_lab.engine.cluster import SHARE_BYTES, client_of, worker_memory_limit
from kernel_lab.engine.cluster_wait import (
    ASK_TIMEOUT,
    NO_WORKER_GRACE,
    POLL,
    RUN_DEADLINE,
    TICK,
    Watch,
    WorkerLost,
    cancel_futures,
    cancelled_by_dask,
    dask_cancellation,
    gather,
    pickled_nbytes,
    scatter_to_all,
    scheduler_gone,
    wait_on,
)

# ---------------------------------------------------------------------------------------
# Computations over partitions


#: glibc's ``mallopt`` parameters and the values a worker sets (:func:`_reuse_freed_memory`).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_TRIM_BYTES, _MMAP_BYTES = 64 << 20, 32 << 20
_malloc_tuned = False


def _reuse_freed_memory() -> None:
    """Lets this worker process reuse the memory it frees (once per process; glibc only).

    Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536`` so that freed memory
    goes back to the system. Setting it also freezes glibc's mmap threshold at 128 KiB:
    every array over 128 KiB (a block of kernel values, features, sums) is then mapped
    fresh and its pages faulted in again, for each block of each pass. Measured on
    ``nystrom`` over 1M × 20 rows in 8 Parquet files on 2 workers: 16.5 million page
    faults and 25 s of system time in a 46 s run; with these settings 0.25 million, 1.5 s
    and 31 s, and the workers' peaks 0.48–0.52 GB. Arrays up to 32 MiB come from the heap
    and are reused; the heap's free top is still returned beyond 64 MiB."""
    global _malloc_tuned
    if _malloc_tuned:
        return
    _malloc_tuned = True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_BYTES)
        libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES)
    except (OSError, AttributeError):  # not glibc: its allocator is left as it is
        pass


def _call_part(fn: Callable[..., Any], part: Part, *args: Any) -> Any:
    """A partition's task on a worker: ``fn(part, *args)`` with one BLAS thread. A task
    that fails on a partition whose file this worker cannot see raises
    :class:`PathNotShared` (the client then says whether it sees the file)."""
    _reuse_freed_memory()
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
    _reuse_freed_memory()
    return call_single_threaded(lambda pair: combine(*pair), (a, b))


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__name__", "task")).strip("_<>") or "task"


#: The share of a worker's memory limit it may fill with the partitions it has read (their
#: training and test rows as the computations see them). Sized for 4M × 20 rows in 16
#: Parquet files on 2 workers of 1 GB (953.7 MiB), each the home of 8 partitions
#: (:func:`home_workers`): their prepared rows are 8 × 250,000 rows × (20 + 1 + 1 index)
#: × 8 bytes = 336 MiB (training 269, test 67), which 0.4 × 953.7 = 381 MiB keeps whole —
#: each partition read once per run. 0.3 (286 MiB) left 6 of a worker's 8 partitions' test
#: rows out, read again in every pass over the test rows. Measured with 0.4 (``nystrom``
#: defaults on that folder, LocalCluster of 2 single-threaded 1 GB workers): the workers'
#: peak resident memory (VmHWM) 687–706 MiB in two runs — 0.3 gave 602–654 MiB — below
#: Dask's pause (80 %: 763 MiB), no worker paused; the rest is the worker's own ~150 MiB
#: (Python, numpy, scipy, pyarrow, Dask), a task's reads and blocks (:data:`PART_COPIES`)
#: and the last rows that did not fit. A larger share would pause workers.
KEEP_SHARE = 0.4


def _keep_partitions(dask_worker: Any = None) -> dict[str, float]:
    """On a worker: keep up to :data:`KEEP_SHARE` of its memory limit of partitions read;
    returns its memory limit (0: none), the fraction of it at which Dask pauses it, and the
    memory its process uses now (bytes)."""
    from kernel_lab.core.rows.mapreduce import set_read_cache

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


def home_workers(parts: Sequence[Part], workers: Sequence[str]) -> dict[int, str]:
    """Each partition's home worker: the rows cut into as many runs of neighbouring
    partitions as there are workers (by each partition's middle row), one run per worker
    in the workers' sorted order — rows shared out evenly (16 equal files on 2 workers:
    8 and 8; unequal files by their rows), the pairs the combining tree joins first
    mostly on one worker, and the same homes for the same partitions and workers (a
    later run on the same cluster finds its partitions kept)."""
    names = sorted(workers)
    total = sum(max(int(part.rows), 0) for part in parts)
    if not names or total <= 0:
        return {}
    homes: dict[int, str] = {}
    seen = 0
    for k, part in enumerate(parts):
        middle = seen + max(int(part.rows), 0) / 2
        homes[k] = names[min(int(middle * len(names) / total), len(names) - 1)]
        seen += max(int(part.rows), 0)
    return homes


def _release_stranded(keys: Sequence[str], dask_scheduler: Any = None) -> int:
    """On the scheduler: hand the tasks ``keys`` that wait in Dask's ``no-worker`` state
    with loose worker restrictions (``allow_other_workers``) to the workers running now;
    returns how many. Dask (2026.8) gives a task waiting there to a worker that joins
    only when the worker is among its restrictions, ignoring their looseness: a task
    whose home died when every worker died at once (their nannies restart them under
    new addresses) would wait for ever. Moved to ``processing`` here, the scheduler
    chooses among the running workers as it does for any loosely restricted task whose
    workers are gone. A task's key stays the same, so Dask's count of the workers it
    killed goes on (a partition that always kills its worker still ends in
    ``KilledWorker``)."""
    scheduler = dask_scheduler
    if not getattr(scheduler, "running", None):
        return 0
    stranded = {}
    for key in keys:
        ts = scheduler.tasks.get(key)
        if (ts is not None and ts.state == "no-worker" and ts.loose_restrictions
                and ts.worker_restrictions):
            stranded[key] = "processing"
    if stranded:
        scheduler.transitions(stranded, stimulus_id=f"kernel-lab-release-{uuid.uuid4().hex}")
    return len(stranded)


#: Copies of a partition's rows (as float64) a task that reads it holds at once: the rows
#: as read (one column at a time from a Parquet file, so little beside them) and its
#: training rows, standardised in place, with the masks that select and check them.
PART_COPIES = 2


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
    """On a worker, after a partition's task failed: a file of the partition (a part of
    whole row blocks may read the head of the next files too) that this machine cannot
    see (the cause, rather than the error it gave)."""
    paths = getattr(part, "paths", None) or (getattr(part, "path", None),)
    for path in paths:
        if isinstance(path, str) and not os.path.exists(path):
            return path
    return None


def _scheduler_can_release(dask_scheduler: Any = None) -> bool:
    """On the scheduler: whether it has what :func:`_release_stranded` uses."""
    return all(hasattr(dask_scheduler, name)
               for name in ("running", "tasks", "transitions", "unrunnable"))


def _running_workers(dask_scheduler: Any = None) -> list[str]:
    """On the scheduler: the addresses of its running workers (not paused, not closing)."""
    return [ws.address for ws in dask_scheduler.running]


class PathNotShared(KernelLabError):
    """A partition's file cannot be seen by the Dask worker that was to read it: the
    ``path``, the worker's ``host`` and the error the task gave (``detail``)."""

    def __init__(self, path: str, host: str, detail: str) -> None:
        self.path, self.host, self.detail = path, host, detail
        super().__init__(f"the Dask worker on {host} cannot see {path} ({detail})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.host, self.detail))


class DaskParts:
    """:class:`~kernel_lab.core.rows.mapreduce.PartMap` on a Dask cluster.

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
    :class:`~kernel_lab.core.rows.mapreduce.LocalParts` calls it; a
    :class:`~kernel_lab.core.progress.Progress` is also checked for cancellation every
    0.2 s while no partition finishes (another callable only when one does). On
    cancellation, or any error, the run's futures are cancelled on the cluster before the
    exception propagates: calls already running on a worker finish there, unused.
    """

    def __init__(self, parts: Sequence[Part], client: Any, retries: int = 0,
                 no_worker_grace: float = NO_WORKER_GRACE) -> None:
        self.parts = list(parts)
        self.client = client_of(client)
        self.retries = int(retries)
        self.no_worker_grace = float(no_worker_grace)
        self._memory: list[dict[str, float]] | None = None
        #: each partition's home worker (:func:`home_workers`), where its tasks go
        self.homes: dict[int, str] = {}
        #: whether tasks may be sent to their homes: only when the scheduler answers
        #: :func:`_release_stranded` (it can take no kernel_lab module, say), which keeps
        #: a task whose home is gone from waiting for ever
        self.pinning = False
        # each worker keeps a share of the partitions it reads (the later passes)
        memory, release = self._first_questions()
        if isinstance(memory, dict):
            self._memory = [m for m in memory.values() if isinstance(m, dict)]
        # (otherwise every pass reads the files, and nothing is checked)
        self.pinning = release is True

    def _first_questions(self) -> tuple[Any, Any]:
        """The workers' :func:`_keep_partitions` and the scheduler's
        :func:`_scheduler_can_release`, asked at once: each side imports this module to
        answer its first question (0.8–1.4 s in a fresh process of a loaded 2-core
        machine), and asked one after the other a run on a restarted cluster waited for
        the two imports in turn — 2.8 s of the 2-worker ``learning-curve`` run of
        ``bench_cluster.py`` (31 s) before its first task; asked together (and without
        scipy.stats in the engine's imports), 1.6 s. Each answer is its error when
        the question failed (the scheduler's after :data:`ASK_TIMEOUT` seconds), as
        before: then the passes read the files (no memory answer) or tasks go where Dask
        sends them (no scheduler answer)."""
        import asyncio

        client = self.client

        async def both() -> list[Any]:
            scheduler = asyncio.wait_for(
                client._run_on_scheduler(_scheduler_can_release, wait=True), ASK_TIMEOUT)
            return await asyncio.gather(client._run(_keep_partitions), scheduler,
                                        return_exceptions=True)

        try:
            got = wait_on(client, both, Watch(client, grace=self.no_worker_grace,
                                              deadline=RUN_DEADLINE))
        except Exception as exc:  # cancelled, no workers, the deadline: neither answer
            return exc, exc
        return got[0], got[1]

    def _ask_scheduler(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args, dask_scheduler=…)`` run on the scheduler, within
        :data:`ASK_TIMEOUT` seconds."""
        client = self.client
        return wait_on(client, lambda: client._run_on_scheduler(fn, *args, wait=True),
                       Watch(client, grace=self.no_worker_grace, deadline=ASK_TIMEOUT))

    def _place(self) -> None:
        """Check the partitions' homes against the workers running now (one question to
        the scheduler): while they are all there they stay; otherwise (a worker gone,
        restarted under a new address, or added) the partitions get new homes among
        them. With one worker, or no answer, tasks go where Dask sends them."""
        if not self.pinning:
            return
        try:
            running = set(self._ask_scheduler(_running_workers))
        except Exception:  # the waiting loop says what became of the scheduler
            running = set()
        if len(running) < 2:
            self.homes = {}
        elif set(self.homes.values()) != running:
            self.homes = home_workers(self.parts, sorted(running))

    def workers_see(self, path: str) -> bool:
        """Whether every worker of the cluster sees ``path`` (a file system they share
        with this machine): then they can read the partitions themselves. False when a
        worker does not, or cannot be asked."""
        try:
            got = wait_on(self.client, lambda: self.client._run(os.path.exists, path),
                          Watch(self.client, grace=self.no_worker_grace,
                                deadline=RUN_DEADLINE))
        except Exception:
            return False
        return bool(got) and all(v is True for v in got.values())

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
                  if pickled_nbytes(a) >= SHARE_BYTES else a for a in args]
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
        except dask_cancellation():
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
        self._place()
        for k, part in enumerate(self.parts):
            key = f"{name}-{token}-part-{k}"
            what[key] = k
            # to the worker that keeps the partition's rows, or another one when it is
            # gone or paused (loosely); a task left waiting for a home that died when all
            # workers did is handed on by _wait (_release_stranded)
            home = self.homes.get(k)
            level.append(client.submit(_call_part, fn, part, *args, key=key,
                                       retries=self.retries,
                                       workers=None if home is None else [home],
                                       allow_other_workers=home is not None))
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
        release = time.monotonic() + POLL
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
                if self.homes and time.monotonic() >= release:
                    release = time.monotonic() + POLL
                    self._release(pending)

    def _release(self, pending: dict[str, Any]) -> None:
        """Hand on the pending tasks stranded in Dask's ``no-worker`` state
        (:func:`_release_stranded`); a scheduler that does not answer is the
        :class:`Watch`'s to judge."""
        keys = [key for key in pending if key.rsplit("-", 2)[-2] == "part"]
        try:
            self._ask_scheduler(_release_stranded, keys)
        except Exception:
            pass

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


__all__ = ["KEEP_SHARE", "PART_COPIES", "DaskParts", "PathNotShared", "home_workers",
           "part_bytes"]
