"""The one worker primitive (engine/worker.py): the latest request wins, each message
carries its request's generation id, stale messages are dropped in one place, a
computation gives way between chunks, and a follow-up runs after a quiet pause."""

from __future__ import annotations

import threading

import pytest

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.progress import Cancelled
from kernel_lab.engine.worker import Ticket, Worker

WAIT = 10.0  # seconds a test waits for a thread before it fails (never reached when green)


class Superseded(Exception):
    """What a computation raises when it gives way (as the Playground's steppers do)."""


class FitLike:
    """Drives the primitive the way the Playground's fit worker does: requests are
    numbers, a fit is computed in chunks that ask ``superseded()`` between them, a quick
    answer is completed by a follow-up once no new request came for a pause, and the
    receiver keeps only what arrives (the ticket drops stale fits)."""

    def __init__(self, quick: bool = False) -> None:
        self.quick = quick
        self.started: list[int] = []     # requests the thread began to compute
        self.followups: list[int] = []
        self.fits: list[tuple[int, int, str]] = []  # (generation, request, stage)
        self.errors: list[tuple[int, str]] = []
        self.gate = threading.Event()  # the first chunk of request 1 waits for it
        self.gate.set()
        self.in_first = threading.Event()
        self.worker = Worker(self.compute, name="fit-like")
        self.on_fit = None

    def compute(self, job) -> None:
        req = job.request
        self.started.append(req)
        if req < 0:
            raise ParameterError(f"request {req} is invalid")
        for chunk in range(20):
            if chunk == 1 and req == 1:
                self.in_first.set()
                self.gate.wait(WAIT)
            if job.superseded():
                raise Superseded
        job.emit("fit", req, "quick" if self.quick else "full")
        if self.quick and job.quiet(0.15):
            self.followups.append(req)
            job.emit("fit", req, "complete")

    def submit(self, req: int) -> Ticket:
        def receive(kind, *payload, gen=self.worker.generation + 1):
            if kind == "fit":
                self.fits.append((gen, *payload))
                if self.on_fit is not None:
                    self.on_fit(payload)
            else:
                self.errors.append((gen, payload[0]))
        return self.worker.submit(req, receive)


@pytest.fixture
def fit_like():
    f = FitLike()
    yield f
    f.gate.set()
    f.worker.close()
    assert f.worker.join(WAIT)


def test_only_the_latest_request_is_computed_and_stale_fits_are_dropped(fit_like):
    fit_like.gate.clear()
    first = fit_like.submit(1)
    assert fit_like.in_first.wait(WAIT)  # request 1 is in its first chunks
    tickets = [fit_like.submit(r) for r in (2, 3, 4)]
    assert not first.active and all(not t.active for t in tickets[:2]) and tickets[2].active
    fit_like.gate.set()
    assert fit_like.worker.wait_idle(WAIT)
    # 1 gave way between chunks; 2 and 3 were superseded before the thread reached them
    assert fit_like.started == [1, 4]
    assert fit_like.fits == [(tickets[2].generation, 4, "full")]
    assert [t.generation for t in (first, *tickets)] == [1, 2, 3, 4]


def test_a_late_fit_of_a_superseded_request_is_dropped_where_it_is_delivered():
    """The compute side may still emit after it was superseded (it noticed too late): the
    ticket drops the message on the receiver's side."""
    got = []
    held = []
    worker = Worker(held.append, inline=True)  # keeps the job; the test emits by hand
    old = worker.submit("a", lambda kind, *p: got.append(("a", kind, p)))
    new = worker.submit("b", lambda kind, *p: got.append(("b", kind, p)))
    assert old.superseded() and not new.superseded()
    held[0].emit("fit", 1)                  # late: dropped
    held[1].emit("progress", 0.5)
    held[1].emit("finished", 2)
    held[1].emit("fit", 3)                  # after the end: dropped
    held[0].emit("cancelled", True)         # the one notice a stopped job may send
    held[0].emit("cancelled", True)         # ... once
    assert got == [("b", "progress", (0.5,)), ("b", "finished", (2,)),
                   ("a", "cancelled", (True,))]


def test_a_follow_up_runs_after_a_quiet_pause():
    f = FitLike(quick=True)
    try:
        ticket = f.submit(7)
        assert f.worker.wait_idle(WAIT)
        assert f.followups == [7]
        assert f.fits == [(ticket.generation, 7, "quick"), (ticket.generation, 7, "complete")]
    finally:
        f.worker.close()
        assert f.worker.join(WAIT)


def test_no_follow_up_when_a_new_request_comes_during_the_pause():
    f = FitLike(quick=True)
    sent = []

    def next_request(payload):  # called from the worker thread before its pause
        if payload[0] == 7 and not sent:
            sent.append(f.submit(8))

    f.on_fit = next_request
    try:
        f.submit(7)
        assert f.worker.wait_idle(WAIT)
        assert f.followups == [8]  # 7's pause was cut short by 8: no follow-up for 7
        assert (sent[0].generation, 8, "complete") in f.fits
        assert all(stage == "quick" for _, req, stage in f.fits if req == 7)
    finally:
        f.worker.close()
        assert f.worker.join(WAIT)


def test_errors_are_reported_with_their_generation_and_the_thread_stays(fit_like):
    bad = fit_like.submit(-1)
    assert fit_like.worker.wait_idle(WAIT)
    assert fit_like.errors == [(bad.generation, "request -1 is invalid")]
    assert bad.status == "failed"
    good = fit_like.submit(5)
    assert fit_like.worker.wait_idle(WAIT)
    assert fit_like.fits == [(good.generation, 5, "full")]


def test_cancel_stops_the_computation_and_close_ends_the_thread(fit_like):
    fit_like.gate.clear()
    first = fit_like.submit(1)
    assert fit_like.in_first.wait(WAIT)
    fit_like.worker.cancel()
    assert first.status == "cancelled" and fit_like.worker.current is None
    fit_like.gate.set()
    assert fit_like.worker.wait_idle(WAIT)
    assert fit_like.fits == []
    fit_like.worker.close()
    assert fit_like.worker.join(WAIT)
    late = fit_like.submit(2)  # after close: refused at once, never computed
    assert late.status == "cancelled" and fit_like.started == [1]


def test_setup_and_teardown_run_in_the_worker_thread_and_messages_are_posted():
    threads = {}
    posted = []

    def compute(job):
        threads["compute"] = threading.get_ident()
        job.emit("finished", job.request * 2)

    worker = Worker(compute, post=posted.append,
                    setup=lambda: threads.setdefault("setup", threading.get_ident()),
                    teardown=lambda: threads.setdefault("teardown", threading.get_ident()))
    got = []
    worker.submit(21, lambda kind, *p: got.append((kind, p)))
    assert worker.wait_idle(WAIT)
    assert got == []  # posted, not yet run on the receiver's side
    for fn in posted:
        fn()
    assert got == [("finished", (42,))]
    worker.close()
    assert worker.join(WAIT)
    assert threads["setup"] == threads["compute"] == threads["teardown"] != \
        threading.get_ident()


def test_a_cancelled_progress_check_is_silent():
    got = []

    def compute(job):
        job.emit("progress", 0.1)
        worker.cancel()          # the user cancels while it runs (inline: same thread)
        if job.superseded():
            raise Cancelled("stop")

    worker = Worker(compute, inline=True)
    worker.submit(1, lambda kind, *p: got.append(kind))
    assert got == ["progress"]



def test_nothing_is_delivered_after_close():
    """A computation that ends after the worker was closed (its receiver may be gone: the
    window closing) sends nothing, not even a result it computed without asking."""
    gate, inside, got = threading.Event(), threading.Event(), []

    def compute(job):  # one long step with no superseded() check, like one numpy call
        inside.set()
        gate.wait(WAIT)
        job.emit("fit", job.request)

    worker = Worker(compute)
    worker.submit(1, lambda kind, *p: got.append((kind, p)))
    assert inside.wait(WAIT)
    worker.close()
    gate.set()
    assert worker.join(WAIT)
    assert got == []


def test_an_inline_receiver_that_raises_after_finished_raises_to_the_caller():
    """A receiver's (observer's) exception is not the computation's: inline it reaches
    whoever started the request, even once the ticket has ended (``finished``)."""
    def compute(job):
        job.emit("finished", job.request)

    def receive(kind, *payload):
        raise AssertionError(f"observer of {kind}")

    worker = Worker(compute, inline=True)
    with pytest.raises(AssertionError, match="observer of finished"):
        worker.submit(1, receive)


def test_an_inline_computation_error_still_becomes_a_failed_message():
    got = []

    def compute(job):
        raise ValueError("bad step")

    Worker(compute, inline=True).submit(1, lambda kind, *p: got.append((kind, p)))
    assert got == [("failed", ("ValueError: bad step", False))]


def test_a_threaded_receiver_that_raises_goes_to_the_excepthook_and_the_thread_stays(
        monkeypatch):
    hooked, got = [], []
    monkeypatch.setattr(threading, "excepthook", hooked.append)

    def compute(job):
        job.emit("finished", job.request)

    def receive(kind, *payload):
        if payload[0] == 1:
            raise AssertionError("observer failed")
        got.append((kind, payload))

    worker = _two_requests_then_close(compute, receive)
    assert [(type(a.exc_value), str(a.exc_value), a.thread) for a in hooked] == \
        [(AssertionError, "observer failed", worker._thread)]
    assert got == [("finished", (2,))]  # not turned into a "failed" message; thread alive


def _two_requests_then_close(compute, receive) -> Worker:
    """A threaded worker given request 1, then (once idle) request 2, then closed."""
    worker = Worker(compute)
    for request in (1, 2):
        worker.submit(request, receive)
        assert worker.wait_idle(WAIT)
    worker.close()
    assert worker.join(WAIT)
    return worker

def test_a_cancelled_notice_already_posted_is_not_delivered_after_close():
    """The one ``cancelled`` notice a stopped computation may send is dropped too once the
    worker is closed, even when it was posted before ``close``."""
    posted, got = [], []
    gate, inside = threading.Event(), threading.Event()

    def compute(job):
        inside.set()
        gate.wait(WAIT)
        job.emit("cancelled", True)  # "the process had to be killed"

    worker = Worker(compute, post=posted.append)
    worker.submit(1, lambda kind, *p: got.append((kind, p)))
    assert inside.wait(WAIT)
    worker.cancel()
    gate.set()
    assert worker.wait_idle(WAIT)
    assert len(posted) == 1  # queued on the receiver's side, not yet run
    worker.close()
    assert worker.join(WAIT)
    for fn in posted:
        fn()
    assert got == []


def test_a_cancelled_notice_is_delivered_while_the_worker_is_open():
    posted, got = [], []

    def compute(job):
        worker.cancel()
        job.emit("cancelled", True)

    worker = Worker(compute, post=posted.append)
    worker.submit(1, lambda kind, *p: got.append((kind, p)))
    assert worker.wait_idle(WAIT)
    for fn in posted:
        fn()
    assert got == [("cancelled", (True,))]
    worker.close()
    assert worker.join(WAIT)


def test_a_threaded_receiver_that_raises_on_failed_goes_to_the_excepthook(monkeypatch):
    hooked, got = [], []
    monkeypatch.setattr(threading, "excepthook", hooked.append)

    def compute(job):
        if job.request == 1:
            raise ValueError("bad step")
        job.emit("finished", job.request)

    def receive(kind, *payload):
        if kind == "failed":
            raise AssertionError(f"observer of {payload[0]}")
        got.append((kind, payload))

    _two_requests_then_close(compute, receive)
    assert [str(a.exc_value) for a in hooked] == ["observer of ValueError: bad step"]
    assert got == [("finished", (2,))]  # the thread went on
