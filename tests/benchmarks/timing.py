"""The benchmarks' timer (the best of a few runs: the least disturbed by other work) and
the machine probe every benchmark prints first, with latency targets scaled to it.

Targets are stated for a reference machine on which the fastest ``eigh`` of a 1000 × 1000
symmetric matrix takes :data:`REFERENCE_EIGH_MS`. On a machine where it takes t ms a
latency target is multiplied by t / 187 — a faster machine gets a stricter target, but
never below :data:`FLOOR_MS` (8 ms for a stall, 16 ms for a gesture) — and a frame-rate
floor divided by it, never above a 60 Hz display's 60 frames per second."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

#: The reference machine's fastest eigh of 1000 × 1000, in ms.
REFERENCE_EIGH_MS = 187.0
#: The lowest a scaled latency target goes, by kind.
FLOOR_MS = {"stall": 8.0, "gesture": 16.0, "run": 0.0}
#: The highest a scaled frame-rate floor goes: a 60 Hz display shows no more frames.
RATE_CEILING = 60.0


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The shortest wall time of ``repeat`` calls of ``fn`` and the last call's result."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


class Machine:
    """The machine probe: matmul GFLOPS (2000 × 2000), exponentials per second (10⁷
    float64) and the fastest ``eigh`` of 1000 × 1000 — each the best of five."""

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        A = rng.normal(size=(2000, 2000))
        t, _ = best_of(lambda: A @ A, 5)
        self.gflops = 2 * 2000**3 / t / 1e9
        x = rng.normal(size=10_000_000)
        t, _ = best_of(lambda: np.exp(x), 5)
        self.exp_per_s = x.size / t
        S = rng.normal(size=(1000, 1000))
        S = S + S.T
        t, _ = best_of(lambda: np.linalg.eigh(S), 5)
        self.eigh_ms = 1e3 * t
        #: t / 187: latency targets are multiplied by it, rate floors divided by it
        self.scale = self.eigh_ms / REFERENCE_EIGH_MS

    def line(self) -> str:
        return (f"machine probe: matmul {self.gflops:.0f} GFLOPS, exp {self.exp_per_s / 1e6:.0f}"
                f" M/s, eigh 1000 × 1000 in {self.eigh_ms:.0f} ms (reference machine "
                f"{REFERENCE_EIGH_MS:.0f} ms: targets × {self.scale:.2f})")

    def latency(self, target_ms: float, kind: str = "gesture") -> float:
        """A latency target of the reference machine, scaled to this one."""
        return max(target_ms * self.scale, FLOOR_MS[kind])

    def rate(self, floor: float) -> float:
        """A frame-rate floor (per second) of the reference machine, scaled to this one
        (at most :data:`RATE_CEILING`)."""
        return min(floor / self.scale, RATE_CEILING)


def probe() -> Machine:
    """Probe the machine and print its line (call first, on a quiet machine)."""
    machine = Machine()
    print(machine.line(), flush=True)
    return machine


#: What Qt's offscreen platform prints at every window it shows (a no-op it cannot do):
#: hundreds of lines of a GUI benchmark's output, and nothing to act on.
OFFSCREEN_NOISE = "This plugin does not support propagateSizeHints()"


def quiet_offscreen_noise() -> None:
    """Drop :data:`OFFSCREEN_NOISE` from Qt's messages; every other message is printed to
    standard error as Qt would."""
    import sys

    from PySide6 import QtCore

    def handler(kind: Any, context: Any, message: str) -> None:
        if message != OFFSCREEN_NOISE:
            print(QtCore.qFormatLogMessage(kind, context, message), file=sys.stderr,
                  flush=True)

    QtCore.qInstallMessageHandler(handler)


def pump(seconds: float) -> None:
    """Run Qt's event loop for ``seconds`` (redraws, timers, queued answers)."""
    from PySide6 import QtCore

    loop = QtCore.QEventLoop()
    QtCore.QTimer.singleShot(max(0, int(seconds * 1000)), loop.quit)
    loop.exec()


def loop_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    """Run Qt's event loop, woken by events (no busy polling; at most 50 ms asleep), until
    ``cond()``; a :class:`TimeoutError` saying ``what`` did not happen after ``timeout``
    seconds."""
    from PySide6 import QtCore, QtWidgets

    app = QtWidgets.QApplication.instance()
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.WaitForMoreEvents, 50)
