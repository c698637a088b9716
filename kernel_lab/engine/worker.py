"""One background worker for every "latest request wins" computation of the app.

A :class:`Worker` owns one thread and computes one request at a time. Each request gets
a :class:`Ticket` with a *generation id* (1, 2, 3, … per worker); a new request supersedes
the one before (its ticket is cancelled at once), and requests that were superseded
before the thread reached them are never computed. The computation is a plain function
``compute(job)`` that is handed a :class:`Job`; it asks ``job.superseded()`` between
chunks of work (cooperative cancel: it stops by returning, or by raising anything, e.g.
:class:`~kernel_lab.core.progress.Cancelled`) and sends what it has with
``job.emit(kind, *payload)``.

Every message crosses to the receiver through ``post`` (the caller's thread when none:
the message is delivered from the worker thread; the window passes
:func:`kernel_lab.engine.qt.gui_poster` to receive on the GUI thread) and is handed to
its ticket's :meth:`Ticket.deliver` there, **the one place where late messages are
dropped**: a ticket that was cancelled, superseded, or has ended (a ``finished`` or
``failed`` message) delivers nothing more, except the one ``cancelled`` notice a
computation may send after it stopped (e.g. "the process had to be killed"); once its
worker is closed a ticket delivers nothing at all, that notice included (even one
already posted before :meth:`Worker.close`). (A computation's own source may keep rules of
its protocol: the worker process's queue discards what a previous run left in it,
:meth:`kernel_lab.engine.process.ProcessRunner.poll`.)

The pattern follows superqt's thread workers (a worker with an abort flag its function
checks); no Qt here, so it is tested and used without a GUI. ``submit``, ``cancel`` and
``close`` are called from one thread, the requester's (the GUI thread in the window).

Users: the window's runs (:class:`kernel_lab.engine.handle.ProcessLauncher`: the compute
function drives the worker *process* and kills it when a run is cancelled inside a long
LAPACK call), the window's data loading (:mod:`kernel_lab.model.lab`), and the
Playground's fits.

API
---
``Worker(compute, *, name="worker", post=None, setup=None, teardown=None, inline=False)``
    ``setup()`` / ``teardown()`` run in the worker thread before the first and after the
    last request (e.g. start and stop a process). ``inline=True``: no thread; a request
    is computed in the caller's thread when it is started (scripts and tests).
``worker.submit(request, receive=None) -> Ticket``
    Start computing ``request`` (the previous request is superseded). ``receive(kind,
    *payload)`` gets the messages of this request that survive :meth:`Ticket.deliver`.
``worker.prepare(request, ticket=Ticket, **kw) -> Ticket``
    The same, not started yet: ``ticket.start()`` submits it (a subclass such as
    :class:`~kernel_lab.engine.handle.RunHandle` can be given as ``ticket``).
``worker.cancel()``
    Cancel the current request without starting another.
``worker.generation``, ``worker.current``, ``worker.closed``
    The latest generation id handed out, the ticket being computed (or None), and
    whether :meth:`Worker.close` was called.
``worker.wait_idle(timeout=None) -> bool``
    True once nothing is pending or being computed (for tests and screenshots).
``worker.close()``, ``worker.join(timeout=None)``
    Supersede everything and end the thread (after the computation in progress returns:
    a long numpy call finishes first; nothing it sends is delivered); join waits for it.

Inside ``compute(job)``: ``job.request``, ``job.generation``, ``job.superseded()`` (a
newer request, a cancel or close), ``job.emit(kind, *payload)``, and ``job.quiet(seconds)``
— wait up to ``seconds`` and say whether no newer request came meanwhile: a follow-up
computation after a pause (the Playground completes a quick answer this way once the user
has stopped dragging for 0.15 s). An exception raised once the job is superseded (a
computation's own way of giving up) ends it silently; any other becomes a ``failed``
message: ``(str(exc), True)`` for a
:class:`~kernel_lab.core.errors.KernelLabError` (the user's to fix), else
``("Type: message", False)``. An exception raised by the *receiver* (an observer)
while a message is delivered is not the computation's: when it reaches the worker (the
default ``post`` delivers at once) it is raised to the caller of ``submit``/``start`` in
inline mode, and handed to :func:`threading.excepthook` in the worker's thread (which
goes on with the next request); it never becomes a ``failed`` message nor is dropped.

Example — the Playground's worker (:func:`kernel_lab.model.playground.worker.fit_job`)::

    def compute(job):
        fit = engine.compute(job.request, cancelled=job.superseded)
        job.emit("fit", fit)                       # not terminal: a follow-up may come
        if fit.wants_followup and job.quiet(0.15):
            job.emit("fit", engine.compute(job.request, followup=True,
                                           cancelled=job.superseded))

    worker = Worker(compute, name="playground-fit", post=gui_poster(window))
    ticket = worker.submit(request, receive=lambda kind, *p: ...)  # ticket.generation
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.progress import Cancelled

#: Messages after which a ticket delivers nothing more.
TERMINAL = ("finished", "failed")
#: The one message a stopped (cancelled or superseded) computation may still deliver.
CANCELLED = "cancelled"

Post = Callable[[Callable[[], None]], None]
Receive = Callable[..., None]
T = TypeVar("T", bound="Ticket")


def _call_now(fn: Callable[[], None]) -> None:
    fn()


def _never() -> bool:
    return False


class Ticket:
    """One request: its generation id, its status, and :meth:`deliver`.

    Status: ``prepared`` → ``running`` (:meth:`start`) → ``finished`` | ``failed`` (a
    terminal message delivered) | ``cancelled`` (:meth:`cancel`, or superseded by a newer
    request). Made by :meth:`Worker.prepare`; a test can make one with its own ``submit``
    and ``cancel`` callables and deliver messages by hand.
    """

    def __init__(self, generation: int, request: Any, *,
                 submit: Callable[[Ticket], None], cancel: Callable[[Ticket], None],
                 receive: Receive | None = None) -> None:
        self.generation = generation
        self.request = request
        self._submit, self._cancel, self._receive_fn = submit, cancel, receive
        self.status = "prepared"
        self._cancel_told = False
        #: Whether the worker that made this ticket was closed (:meth:`Worker.prepare`).
        self._worker_closed: Callable[[], bool] = _never

    @property
    def active(self) -> bool:
        return self.status in ("prepared", "running")

    def superseded(self) -> bool:
        """True once this request should stop (any thread may ask)."""
        return self.status != "running"

    def start(self) -> None:
        if self.status == "prepared":
            self.status = "running"
            self._submit(self)

    def cancel(self) -> None:
        """Stop the request; from now on its messages are dropped."""
        if self.active:
            was_running = self.status == "running"
            self.status = "cancelled"
            if was_running:
                self._cancel(self)

    def deliver(self, kind: str, *payload: Any) -> None:
        """Hand a message to the receiver unless this request was cancelled, superseded
        or has ended, or its worker was closed: the one place where late messages are
        dropped."""
        if self._worker_closed():
            return  # the receiver may be gone: not even the ``cancelled`` notice
        if kind == CANCELLED:
            if not self._cancel_told:
                self._cancel_told = True
                self.status = "cancelled"
                self._receive(kind, *payload)
            return
        if self.status != "running":
            return
        if kind in TERMINAL:
            self.status = kind
        self._receive(kind, *payload)

    def _receive(self, kind: str, *payload: Any) -> None:
        if self._receive_fn is not None:
            self._receive_fn(kind, *payload)


class Job:
    """A request as the compute function sees it (see the module's docstring)."""

    def __init__(self, worker: Worker, ticket: Ticket) -> None:
        self._worker, self._ticket = worker, ticket
        self.request = ticket.request
        self.generation = ticket.generation
        #: What the receiver raised while a message was delivered (not a compute error).
        self._delivery_error: BaseException | None = None

    def superseded(self) -> bool:
        return self._worker._closed or self._ticket.superseded()

    @property
    def inline(self) -> bool:
        """Whether this request is computed in the requester's thread (no worker thread:
        nobody is waiting for a quick answer, and idle time is the requester's)."""
        return self._worker.inline

    def emit(self, kind: str, *payload: Any) -> None:
        """Send a message to the receiver (dropped there if this request is stale; after
        :meth:`Worker.close` nothing is sent at all: the receiver may be gone)."""
        if self._worker._closed:
            return
        ticket = self._ticket

        def deliver() -> None:
            try:
                ticket.deliver(kind, *payload)
            except Exception as exc:  # the receiver's: told apart in Worker._execute
                self._delivery_error = exc
                raise

        self._worker._post(deliver)

    def quiet(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True when no newer request (nor a cancel) came."""
        worker = self._worker
        if worker._thread is None:  # inline: nothing can arrive while we wait
            return not self.superseded()
        with worker._cond:
            worker._cond.wait_for(self.superseded, timeout=seconds)
        return not self.superseded()


#: The interpreter's thread switch interval (seconds), set by the first worker thread for
#: the rest of the process (Python's is process-wide; a shorter one costs the threads
#: nothing measurable and is harmless once they are gone).
SWITCH_INTERVAL_S = 0.0005


class Worker:
    """One thread computing the latest request only (see the module's docstring).

    Parameters
    ----------
    compute : callable
        ``compute(job)``, run in the worker thread for each request it reaches.
    name : str
        The thread's name.
    post : callable, optional
        ``post(fn)`` runs ``fn`` on the receiver's thread; default: call it at once.
    setup, teardown : callable, optional
        Run in the worker thread when it starts and before it ends.
    inline : bool
        Compute in the caller's thread when a request starts (no thread at all).
    """

    def __init__(self, compute: Callable[[Job], None], *, name: str = "worker",
                 post: Post | None = None, setup: Callable[[], None] | None = None,
                 teardown: Callable[[], None] | None = None, inline: bool = False) -> None:
        self._compute = compute
        self._post: Post = post or _call_now
        self._setup, self._teardown = setup, teardown
        self._cond = threading.Condition()
        self._pending: Ticket | None = None
        self._busy = False
        self._closed = False
        self._idle = threading.Event()
        self._idle.set()
        self.generation = 0
        self.current: Ticket | None = None
        self._thread: threading.Thread | None = None
        if not inline:
            # The thread shares the interpreter with the requester (the GUI thread in the
            # window): a thread waiting for the GIL gets it after at most this long
            # (Python's default, 5 ms, is a third of a frame; measured in the Playground,
            # the GUI's stalls during a σ drag waited for it).
            sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
            self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
            self._thread.start()

    # -- the requester's side ------------------------------------------------------------
    def prepare(self, request: Any, ticket: type[T] = Ticket,  # type: ignore[assignment]
                **kwargs: Any) -> T:
        """A ticket for ``request`` with the next generation id; ``start()`` submits it."""
        self.generation += 1
        t = ticket(self.generation, request, submit=self._start, cancel=self._stopped,
                   **kwargs)
        t._worker_closed = lambda: self._closed
        return t

    def submit(self, request: Any, receive: Receive | None = None) -> Ticket:
        """Compute ``request`` (the previous request is superseded)."""
        t = self.prepare(request, receive=receive)
        t.start()
        return t

    def cancel(self) -> None:
        """Cancel the current request, starting none."""
        if self.current is not None:
            self.current.cancel()

    def _start(self, ticket: Ticket) -> None:
        previous, self.current = self.current, ticket
        if previous is not None and previous is not ticket:
            previous.cancel()  # one request at a time: the newer one wins
        if self._closed:
            ticket.cancel()
            return
        if self._thread is None:
            self._execute(ticket)
            return
        with self._cond:
            self._pending = ticket
            self._idle.clear()
            self._cond.notify_all()

    def _stopped(self, ticket: Ticket) -> None:
        with self._cond:
            if self._pending is ticket:
                self._pending = None
                if not self._busy:
                    self._idle.set()
            self._cond.notify_all()  # wakes a compute function waiting in quiet()
        if self.current is ticket:
            self.current = None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def inline(self) -> bool:
        """Whether requests are computed at once in the caller's thread (no thread)."""
        return self._thread is None

    def wait_idle(self, timeout: float | None = None) -> bool:
        """True once nothing is pending or being computed (False after ``timeout``)."""
        return self._idle.wait(timeout)

    def close(self) -> None:
        """Supersede every request and let the thread end; nothing is delivered after
        this (call it from the requester's thread)."""
        self.cancel()
        with self._cond:
            self._closed = True
            self._pending = None
            self._cond.notify_all()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end after :meth:`close`; True when it has."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the worker thread ---------------------------------------------------------------
    def _loop(self) -> None:
        try:
            if self._setup is not None:
                self._setup()
            while True:
                with self._cond:
                    self._cond.wait_for(lambda: self._pending is not None or self._closed)
                    if self._closed:
                        return
                    ticket, self._pending = self._pending, None
                    self._busy = True
                assert ticket is not None
                self._execute(ticket)
                with self._cond:
                    self._busy = False
                    if self._pending is None:
                        self._idle.set()
        finally:
            try:
                if self._teardown is not None:
                    self._teardown()
            finally:
                self._idle.set()

    def _execute(self, ticket: Ticket) -> None:
        job = Job(self, ticket)
        if job.superseded():
            return  # superseded before the thread reached it: never computed
        try:
            try:
                self._compute(job)
            except Exception as exc:
                if exc is job._delivery_error or isinstance(exc, Cancelled) \
                        or job.superseded():  # e.g. a computation's own "superseded"
                    raise
                if isinstance(exc, KernelLabError):  # reported, never fatal to the thread
                    job.emit("failed", str(exc), True)
                else:
                    job.emit("failed", f"{type(exc).__name__}: {exc}", False)
        except Exception as exc:
            if exc is not job._delivery_error:
                return  # a computation that gave up: ends silently
            # the receiver's, not the computation's (also while "failed" is delivered)
            if self._thread is None:
                raise  # inline: to the caller of submit()/start()
            threading.excepthook(threading.ExceptHookArgs(  # type: ignore[call-arg]
                (type(exc), exc, exc.__traceback__, self._thread)))
