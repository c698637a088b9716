"""The Playground's worker: one thread computing the latest request only."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.playground import Superseded
from kernel_lab.engine.playground.fit import Fit, FitEngine, Request

#: Seconds without a new request before a quick exact answer is completed.
FOLLOWUP_DELAY = 0.15


class FitWorker:
    """One background thread computing the latest :class:`Request` only (intermediate
    ones are dropped, a long DSG/GFC replay is given up when a newer request arrives);
    ``on_done(fit)`` / ``on_error(serial, message)`` are called from that thread. numpy
    releases the GIL, so the GUI thread stays free meanwhile."""

    def __init__(self, engine: FitEngine, on_done: Callable[[Fit], Any],
                 on_error: Callable[[int, str], Any]) -> None:
        self.engine = engine
        self.on_done, self.on_error = on_done, on_error
        self._pending: Request | None = None
        self._cond = threading.Condition()
        self._stop = False
        self._idle = threading.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._loop, name="playground-fit", daemon=True)
        self._thread.start()

    def submit(self, req: Request) -> None:
        with self._cond:
            self._pending = req
            self._idle.clear()
            self._cond.notify()

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self._idle.wait(timeout)

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread to end after :meth:`close` (a long numpy call finishes
        first)."""
        self._thread.join(timeout)

    def _superseded(self) -> bool:
        return self._stop or self._pending is not None

    def _report(self, serial: int, message: str) -> None:
        if not self._stop:  # after close the receiver may be gone
            self.on_error(serial, message)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._stop)
                if self._stop:
                    return
                req, self._pending = self._pending, None
            try:
                fit = self.engine.compute(req, cancelled=self._superseded)
                if self._stop:
                    return
                self.on_done(fit)
                quick = fit.primary.extra.get("followup") or (
                    fit.compare is not None and fit.compare.extra.get("followup"))
                if quick:
                    # complete the answer (eigendecomposition for the λ slider) once the
                    # user has paused: a σ drag keeps getting quick answers meanwhile
                    with self._cond:
                        self._cond.wait_for(self._superseded, timeout=FOLLOWUP_DELAY)
                        paused = not self._superseded()
                    if paused:
                        fit = self.engine.compute(req, followup=True,
                                                  cancelled=self._superseded)
                        if not self._stop:
                            self.on_done(fit)
            except Superseded:
                pass
            except KernelLabError as exc:
                self._report(req.serial, str(exc))
            except Exception as exc:
                self._report(req.serial, f"{type(exc).__name__}: {exc}")
            with self._cond:
                if self._pending is None:
                    self._idle.set()
