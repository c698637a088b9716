"""Benchmark: does the autosave leave the window's thread free?

Run: ``QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_autosave.py``

The window (on a temporary settings folder) with the Playground open on a painted canvas
of 50, then 5,000 points (the Playground's most), and — for information — with 200,000
pinned points on top (a pinned run of many λ values and curves). For each:

1. The snapshot taken on the GUI thread at each autosave (the lab's session, the
   Playground's state, the layout): the slowest of 20. Target ≤ 8 ms (a stall).
2. Serialising and writing on the autosave thread (JSON, ``fsync``, rename): the median of
   20 writes, and the file's size (information).
3. GUI-thread stall (a 5 ms timer's delay beyond its period) while 20 writes run one after
   another (more if they take less than a second), against the same timer with no write
   (the baseline): p99 and max. Target:
   p99 ≤ 16 ms, max ≤ 50 ms — as while experiments run (``bench_gui_responsiveness.py``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import perfdoc  # this folder, first on the path of a script
from timing import loop_until, pump, quiet_offscreen_noise

PERIOD_MS = 5
WRITES = 20
#: The writes go on until they span this many seconds (a 5 ms timer's 200 ticks).
MIN_TICKS_S = 1.0


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    rec = perfdoc.start(__file__, __doc__)
    from PySide6 import QtCore, QtWidgets

    quiet_offscreen_noise()
    from kernel_lab.gui import tear_down
    from kernel_lab.gui.app import MainWindow
    from kernel_lab.model import Pin
    from kernel_lab.model.autosave import Snapshot

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    tmp = Path(tempfile.mkdtemp(prefix="bench-autosave-"))
    window = MainWindow(QtCore.QSettings(str(tmp / "s.ini"), QtCore.QSettings.Format.IniFormat))
    window.show()
    saver = window.autosave
    pg = window.open_playground()
    pg.model.set_dataset("paint-2d")
    ticks: list[float] = []
    tick_timer = QtCore.QTimer(interval=PERIOD_MS,
                               timeout=lambda: ticks.append(time.perf_counter()))

    def stalls_while(action) -> np.ndarray:
        ticks.clear()
        tick_timer.start()
        action()
        tick_timer.stop()
        return np.maximum(np.diff(ticks) * 1e3 - PERIOD_MS, 0.0)

    def writes(a: Snapshot, b: Snapshot) -> list:
        """WRITES writes or more, until they span MIN_TICKS_S (a percentile needs ticks to
        stand on), alternating two states (b first: a is the one written last)."""
        done: list = []
        t0, k = time.perf_counter(), 0
        while k < WRITES or time.perf_counter() - t0 < MIN_TICKS_S:
            k += 1
            start = saver.writes
            saver.worker.submit((saver.writer, b if k % 2 else a), saver._written)
            loop_until(lambda s=start: saver.writes > s, 60.0, "the autosave did not write")
            done.append(saver.last)
        return done

    rng = np.random.default_rng(0)
    ok = True
    cases = (("50 points", 50, 0), ("5,000 points", 5000, 0),
             ("5,000 points + 200,000 pinned", 5000, 200_000))
    for label, n, pinned in cases:
        pg.model.clear()
        pg.paint([tuple(p) for p in rng.uniform(-2.5, 2.5, size=(n, 2))])
        window.model.pins = [Pin("bench", {"lam": rng.random(pinned // 4),
                                           **{f"c{i}": rng.random(pinned // 4)
                                              for i in range(3)}})] if pinned else []
        pg.worker.wait_idle(30)
        pump(0.3)
        saver.flush()  # the change's own autosave, before the measured ones
        capture = []
        for _ in range(20):
            t0 = time.perf_counter()
            a = saver.snapshot()
            capture.append(time.perf_counter() - t0)
        b = saver.snapshot()
        b.window = {**b.window, "log_y": not b.window["log_y"]}
        base = stalls_while(lambda: pump(1.0))
        done: list = []
        during = stalls_while(lambda d=done, a=a, b=b: d.extend(writes(a, b)))
        serialise = np.median([w.serialise_s for w in done]) * 1e3
        write = np.median([w.write_s for w in done]) * 1e3
        size = done[-1].size / 2**20
        print(f"{label}: snapshot max {max(capture) * 1e3:.2f} ms; serialise {serialise:.1f} "
              f"ms, write + fsync {write:.1f} ms, {size:.2f} MB; stall p99 / max: baseline "
              f"{np.percentile(base, 99):.1f} / {base.max():.1f} ms, during writes "
              f"{np.percentile(during, 99):.1f} / {during.max():.1f} ms")
        judged = not pinned
        for what, value, reference in (
                (f"snapshot on the GUI thread ({label}), max", max(capture) * 1e3, 8),
                (f"GUI stall during writes ({label}), p99", np.percentile(during, 99), 16),
                (f"GUI stall during writes ({label}), max", during.max(), 50)):
            if judged:
                ok &= bool(rec.latency(what, float(value), reference, "stall").met)
            else:
                rec.figure(what, float(value), "ms")
        rec.figure(f"serialise on the autosave thread ({label}), median", serialise, "ms")
        rec.figure(f"write + fsync + rename ({label}), median", write, "ms")
        rec.figure(f"autosave file ({label})", size, "MB")
    window.model.pins = []
    tear_down(window)
    app.processEvents()
    rec.save()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
