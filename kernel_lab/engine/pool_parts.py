"""Computations over partitions in a local process pool: :class:`PoolParts`.

:class:`PoolParts` is :class:`~kernel_lab.core.rows.mapreduce.LocalParts` with one step moved:
the calls ``fn(part, *args)`` run in the engine's kept pool of spawned processes
(:func:`~kernel_lab.engine.executors.kept_pool`, the pool of the ``processes`` backend),
each with one BLAS thread, several partitions at once. Everything else is inherited —
the results in part order, one progress report per partition done, and the combining of
the per-partition results (``reduce``, the sums over canonical row blocks), which runs in
this process with the very code ``LocalParts`` runs. The same functions on the same rows
with one BLAS thread each, combined by the same code: the numbers are those of a run in
this process, bit for bit.

What travels to the pool processes:

- a partition read from a file (Parquet, Zarr) travels as what it is, a path and a range
  of rows; the pool process reads the rows itself and keeps a share of what it read for
  the run's later passes (the same share of the memory budget as a run in this process,
  divided among the processes). When the run ends (:meth:`PoolParts.close`) each process
  drops what it kept and returns its free heap — once per run, not after each task;
- a partition held in memory (arrays) has its arrays copied once per :class:`PoolParts`
  into one block of shared memory (:mod:`multiprocessing.shared_memory`); the tasks
  carry only the block's name and each array's place in it, and read the arrays there
  without a copy. :meth:`PoolParts.close` (the runner calls it when the run ends, also
  on failure or Cancel) unlinks the block; a process killed outright leaves it to
  Python's resource tracker, which unlinks it when the process is gone;
- the other arguments of a call are pickled with each task (landmarks, a row plan: small
  next to the rows).

Cancel is checked every :data:`TICK` seconds while no partition finishes. A cancelled run
(or any stop while partitions are still computing) kills the pool's processes, so nothing
of it keeps running; the next run starts a fresh pool. A task that raises gives its own
error, with a note naming the partition; a pool process that dies (killed, out of memory)
has the unfinished partitions computed once more in a fresh pool, and a second death
stops the run with :class:`~kernel_lab.engine.cluster_wait.WorkerLost`.
"""

from __future__ import annotations

import dataclasses
import pickle
import time
import traceback
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from functools import partial
from typing import Any

import numpy as np

from kernel_lab.core.executor import call_single_threaded
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows.mapreduce import LocalParts, Part, run_cache_bytes, set_read_cache
from kernel_lab.engine.cluster_wait import TICK, WorkerLost
from kernel_lab.engine.executors import drop_pool, kept_pool, submit_to_pool
from kernel_lab.engine.heap import release_heap

#: Bytes between the starts of two arrays in the shared block (cache-line aligned).
ALIGN = 64


# ---------------------------------------------------------------------------------------
# Arrays of in-memory partitions, shared once


@dataclasses.dataclass(frozen=True)
class SharedArray:
    """Where an array sits in the run's shared block: offset, shape and dtype."""

    offset: int
    shape: tuple[int, ...]
    dtype: str

    def view(self, buffer: Any) -> np.ndarray:
        """The array in ``buffer`` (the attached block), read-only, without a copy."""
        dtype = np.dtype(self.dtype)
        count = int(np.prod(self.shape, dtype=np.int64))
        if count == 0:
            return np.empty(self.shape, dtype=dtype)
        out = np.frombuffer(buffer, dtype=dtype, count=count, offset=self.offset)
        out = out.reshape(self.shape)
        out.flags.writeable = False
        return out


@dataclasses.dataclass(frozen=True)
class SharedPart:
    """A partition held in memory, as it travels to a pool process: the partition with
    its array fields blanked (``template``), the shared block's name, and where each of
    those arrays sits in the block."""

    template: Any
    block: str
    arrays: tuple[tuple[str, SharedArray], ...]

    def open(self, buffer: Any) -> Any:
        """The partition again, its arrays read from ``buffer`` (the attached block)."""
        return dataclasses.replace(self.template,
                                   **{name: a.view(buffer) for name, a in self.arrays})


def _array_fields(part: Any) -> list[str]:
    """The fields of a dataclass partition that hold arrays (none for other parts)."""
    if not dataclasses.is_dataclass(part) or isinstance(part, type):
        return []
    return [f.name for f in dataclasses.fields(part)
            if isinstance(getattr(part, f.name), np.ndarray)]


class SharedArrays:
    """The arrays of the in-memory partitions of one run, copied into one block of shared
    memory (:meth:`share`), and that block's removal (:meth:`close`, idempotent; also
    when the object is collected or this process exits)."""

    def __init__(self) -> None:
        self.memory: Any = None
        self._finalizer: Any = None

    def share(self, parts: Sequence[Part]) -> list[Any]:
        """The partitions as they travel: those holding arrays as :class:`SharedPart`
        (their arrays copied into the block), the others as they are."""
        fields = [_array_fields(p) for p in parts]
        if not any(fields):
            return list(parts)
        layout: list[list[tuple[str, SharedArray, np.ndarray]]] = []
        size = 0
        for part, names in zip(parts, fields, strict=True):
            placed = []
            for name in names:
                arr = getattr(part, name)
                placed.append((name, SharedArray(size, tuple(arr.shape), arr.dtype.str), arr))
                size += -(-max(arr.nbytes, 1) // ALIGN) * ALIGN
            layout.append(placed)
        from multiprocessing import shared_memory

        self.close()
        self.memory = shared_memory.SharedMemory(create=True, size=size)
        self._finalizer = weakref.finalize(self, _unlink, self.memory)
        sent: list[Any] = []
        for part, placed in zip(parts, layout, strict=True):
            for _, where, arr in placed:
                if arr.size:
                    target = np.frombuffer(self.memory.buf, dtype=arr.dtype, count=arr.size,
                                           offset=where.offset).reshape(arr.shape)
                    np.copyto(target, arr)
                    del target
            if not placed:
                sent.append(part)
                continue
            blank = dataclasses.replace(part, **{name: None for name, _, _ in placed})
            sent.append(SharedPart(blank, self.memory.name,
                                   tuple((name, where) for name, where, _ in placed)))
        return sent

    def close(self) -> None:
        """Unlink the block (the pool processes have closed theirs after each task)."""
        if self._finalizer is not None:
            self._finalizer()
        self._finalizer = None
        self.memory = None


def _unlink(memory: Any) -> None:
    try:
        memory.close()
    except BufferError:  # a view of it is still alive here: the mapping goes with it
        pass
    try:
        memory.unlink()
    except FileNotFoundError:
        pass


def _attach(name: str) -> Any:
    """The shared block ``name``, opened in a pool process without registering it with
    the resource tracker: the tracker is this run's client's too, and the block is the
    client's to unlink (a second registration could outlive the client's unlink and have
    the tracker report a leak that is none)."""
    from multiprocessing import resource_tracker, shared_memory

    register = resource_tracker.register
    resource_tracker.register = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        return shared_memory.SharedMemory(name=name)
    finally:
        resource_tracker.register = register  # type: ignore[assignment]


# ---------------------------------------------------------------------------------------
# What runs in a pool process


#: The run whose partitions this pool process keeps (:func:`_keep_for`).
_KEEPING = {"run": ""}
#: Shared blocks a task could not close (a view of them outlived it); closed later.
_OPEN: list[Any] = []


def _keep_for(run: str, limit: int) -> None:
    """Keep up to ``limit`` bytes of the partitions read for the run ``run``: those kept
    for an earlier run are dropped first."""
    if _KEEPING["run"] != run:
        set_read_cache(0)
        _KEEPING["run"] = run
    set_read_cache(limit)


class PartTraceback(Exception):
    """The traceback of a partition's task in a pool process, as text (the cause of the
    task's error in this process)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _close_open() -> None:
    for memory in list(_OPEN):
        try:
            memory.close()
            _OPEN.remove(memory)
        except BufferError:
            pass


#: Seconds a pool process holds on to :func:`_release`'s task, so that each idle process of
#: the pool takes one of those sent together.
RELEASE_PAUSE = 0.05


def _release(run: str) -> None:
    """In a pool process after the run ``run``: drop the partitions kept for it and give
    the heap's free memory back (:func:`~kernel_lab.engine.heap.release_heap`), once for
    the run rather than after each partition's task — trimming after every task had each
    task fault its working memory in again, and doubled the time of a pass over small
    partitions (measured: 6.7 s against 3.5 s in the passes of a ``nystrom`` run on 200,000
    rows in 8 files)."""
    if _KEEPING["run"] == run:
        set_read_cache(0)
        _KEEPING["run"] = ""
    _close_open()
    release_heap()
    time.sleep(RELEASE_PAUSE)


def _run_part(job: tuple[Callable[..., Any], Any, tuple[Any, ...], str, int]) -> bytes:
    """A partition's task in a pool process: ``fn(part, *args)``, its result pickled here
    (so nothing sent back refers to the shared block, which is closed before the task
    returns). A task's error is raised again without the frames that refer to the block,
    its traceback kept as text (``part_traceback``; the cause of the error in the
    client)."""
    fn, sent, args, run, limit = job
    _keep_for(run, limit)
    _close_open()
    memory = _attach(sent.block) if isinstance(sent, SharedPart) else None
    error: BaseException | None = None
    try:
        part = sent.open(memory.buf) if memory is not None else sent
        data = pickle.dumps(fn(part, *args), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as exc:  # raised again below, without its frames
        error = exc
        text = "".join(traceback.format_exception(exc))
        seen: set[int] = set()
        link: BaseException | None = exc
        while link is not None and id(link) not in seen:
            seen.add(id(link))
            link.__traceback__ = None
            link = link.__cause__ or link.__context__
        try:  # travels with the error (its __dict__ is pickled; its cause is not)
            error.part_traceback = text  # type: ignore[attr-defined]
        except AttributeError:  # an error without a __dict__
            pass
    part = None
    if memory is not None:
        try:
            memory.close()
        except BufferError:  # a view outlived the task (kept by fn): close it later
            _OPEN.append(memory)
    if error is not None:
        raise error
    return data


# ---------------------------------------------------------------------------------------
# The map over the partitions


class PoolParts(LocalParts):
    """:class:`~kernel_lab.core.rows.mapreduce.PartMap` in a local pool of processes (see the
    module docstring).

    Parameters
    ----------
    parts : sequence of Part
        The partitions (picklable; arrays held in memory are shared, not pickled).
    workers : int
        Processes of the pool (the ``processes`` backend's kept pool of that size).
    cache : int, optional
        Bytes of the partitions read that the pool processes may keep between the passes
        of a run, all processes together (default: :func:`run_cache_bytes`).
    """

    def __init__(self, parts: Sequence[Part], workers: int, cache: int | None = None
                 ) -> None:
        super().__init__(parts)
        self.workers = max(1, int(workers))
        total = run_cache_bytes() if cache is None else int(cache)
        self.keep_bytes = max(total, 0) // self.workers
        self.run = uuid.uuid4().hex
        self._arrays = SharedArrays()
        self._sent: list[Any] | None = None

    def close(self) -> None:
        """The run is over: remove the shared block of the in-memory partitions (shared
        again if the object is used afterwards) and have each pool process drop what it
        kept for the run and return its free heap (sent, not awaited)."""
        self._arrays.close()
        if self._sent is not None:
            pool = kept_pool(self.workers, start=False)
            if pool is not None:
                try:
                    for _ in range(self.workers):
                        pool.submit(_release, self.run)
                except RuntimeError:  # a broken or shut-down pool: nothing is kept
                    pass
        self._sent = None

    def __enter__(self) -> PoolParts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def calls(self, fn: Callable[..., Any], args: tuple[Any, ...],
              progress: Progress | None = None) -> Iterator[tuple[int, Any]]:
        """``(k, fn(parts[k], *args))`` as the pool's processes finish them (see the
        module docstring for errors, Cancel and a process that dies)."""
        from concurrent.futures.process import BrokenProcessPool

        if self._sent is None:
            self._sent = self._arrays.share(self.parts)
        sent = self._sent
        call = partial(call_single_threaded, _run_part)
        unfinished = list(range(len(self.parts)))
        for attempt in (1, 2):
            pool, futures = submit_to_pool(
                self.workers, call,
                [(fn, sent[k], args, self.run, self.keep_bytes) for k in unfinished])
            which = dict(zip(futures, unfinished, strict=True))
            stopped = True  # until every future is done or this attempt gives up
            try:
                broken = False
                while which and not broken:
                    done, _ = wait(list(which), timeout=TICK, return_when=FIRST_COMPLETED)
                    if not done:
                        if progress is not None:
                            progress.check()
                        continue
                    for fut in sorted(done, key=which.__getitem__):
                        k = which[fut]
                        try:
                            data = fut.result()
                        except BrokenProcessPool:
                            broken = True
                            break
                        except BaseException as exc:
                            cause = PartTraceback(getattr(exc, "part_traceback", ""))
                            raise self._noted(exc, k) from cause
                        del which[fut]
                        unfinished.remove(k)
                        yield k, pickle.loads(data)  # our own pool's result
                stopped = False
                if not broken:
                    return
            finally:
                if stopped:
                    self._stop(pool, which)
            drop_pool(self.workers, pool)
            if attempt == 2:
                raise WorkerLost(self._lost(unfinished, twice=True))
            if progress is not None:
                progress(1 - len(unfinished) / len(self.parts), self._lost(unfinished))

    def _stop(self, pool: Any, futures: dict[Future[Any], int]) -> None:
        """The run stopped before its partitions were done (Cancel, an error): cancel the
        partitions not started and, if some are still computing, kill the pool.

        A pool that is killed is not asked to cancel futures from this thread: its manager
        thread fails every pending future when it finds the processes dead, and Python 3.11's
        ``terminate_broken`` raises ``InvalidStateError`` on a future already cancelled
        (the manager thread then dies without closing the pool's queues). The pool's own
        ``shutdown(cancel_futures=True)`` cancels them in the manager thread instead."""
        if any(f.running() for f in futures):
            drop_pool(self.workers, pool, kill=True)
            return
        running = [f for f in futures if not f.cancel() and not f.done()]
        if running:  # started between the two looks
            drop_pool(self.workers, pool, kill=True)

    def _noted(self, exc: BaseException, k: int) -> BaseException:
        """The task's own error, with a note naming its partition."""
        exc.add_note(f"while computing partition {k + 1} of {len(self.parts)} "
                     f"({self.parts[k].describe()}) in a process of the process pool")
        return exc

    def _lost(self, unfinished: list[int], twice: bool = False) -> str:
        count = len(unfinished)
        first = self.parts[unfinished[0]].describe() if unfinished else ""
        what = (f"{count} of {len(self.parts)} partitions were not computed (the first: "
                f"{first})")
        if twice:
            return (f"a process of the process pool died twice (crashed or killed, often "
                    f"for lack of memory); {what}. The run is stopped — use fewer workers "
                    "(--workers), cut the data into smaller partitions, or run in this "
                    "process (--backend threads)")
        return (f"a process of the process pool died (crashed or killed, often for lack "
                f"of memory); {what}: computing them again in a new pool")


class PoolRunner:
    """What a run on the ``processes`` backend makes its partitions' map with: a
    :class:`PoolParts` on the kept pool of ``workers`` processes for every set of parts
    it is given, all closed by :meth:`close` when the run ends."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.made: list[PoolParts] = []

    def __call__(self, parts: Sequence[Part]) -> PoolParts:
        made = PoolParts(parts, self.workers)
        self.made.append(made)
        return made

    def close(self) -> None:
        for made in self.made:
            made.close()


__all__ = ["PartTraceback", "PoolParts", "PoolRunner", "SharedArray", "SharedArrays",
           "SharedPart"]
