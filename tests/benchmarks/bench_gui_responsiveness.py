"""Benchmark: does the window's event loop stay responsive while experiments run?

Run: ``QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_gui_responsiveness.py``
(or under ``xvfb-run`` for a real X server).

For every registered experiment with its default parameters and data (the heaviest is the
one that runs longest), a 5 ms timer probes the GUI thread while the run streams its
partial results into the live plots; a stall is the delay of a tick beyond its period.
Reported per experiment: run time, number of partial results, p50 / p99 / max stall. A
percentile needs ticks to stand on: a run shorter than :data:`MIN_TICKS_S` (krr-path takes
0.1–0.2 s, some 30 ticks, whose "p99" was simply the worst stall) is run again, with the
stalls of every run pooled, until the runs together last that long (at most
:data:`MAX_REPEATS` runs); the max stays the worst stall of them all. "run s" and
"partials" are the first run's; "runs" and "ticks" what the stalls were pooled over. An
experiment with no ticks (a run refused at once) fails the benchmark.
Target: p99 ≤ 16 ms (one frame at 60 Hz) and max ≤ 50 ms during every default run, on the
reference machine (eigh of 1000 × 1000 in 187 ms), scaled to the machine probe printed
first.

On a virtual machine the host may take the CPUs away (Linux counts it as *steal* time in
``/proc/stat``). Each tick also reads that counter, and the max stall among ticks during
which no steal was counted is printed beside the max of all — so a miss can be told apart
from the window's own work. The targets and the exit status use the max of all.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np
import perfdoc  # this folder, first on the path of a script
from timing import quiet_offscreen_noise

PERIOD_MS = 5
#: Short runs are repeated until the runs' ticks span this many seconds (at most
#: :data:`MAX_REPEATS` runs).
MIN_TICKS_S = 2.0
MAX_REPEATS = 20


def steal_ticks() -> int:
    """The machine's steal time so far in clock ticks (``/proc/stat``), 0 where unknown."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
        return int(fields[8])
    except (OSError, IndexError, ValueError):
        return 0


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    rec = perfdoc.start(__file__, __doc__)
    machine = rec.machine
    from PySide6 import QtCore, QtWidgets

    quiet_offscreen_noise()

    from kernel_lab.experiments import list_experiments
    from kernel_lab.gui.app import MainWindow

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    tmp = tempfile.mkdtemp()
    window = MainWindow(QtCore.QSettings(os.path.join(tmp, "s.ini"),
                                         QtCore.QSettings.Format.IniFormat))
    window.resize(1440, 900)
    window.show()
    ticks: list[float] = []
    stolen: list[int] = []

    def tick() -> None:
        ticks.append(time.perf_counter())
        stolen.append(steal_ticks())

    tick_timer = QtCore.QTimer(interval=PERIOD_MS, timeout=tick)
    rows = []
    for cls in list_experiments():
        window.experiment_box.setCurrentIndex(window.experiment_box.findData(cls.name))
        while window.data_panel.loading:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
        # let the worker process finish starting, then measure only the run
        t_wait = time.monotonic() + 3
        while time.monotonic() < t_wait:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
        partials: list[object] = []
        window.model.summaries_changed.connect(partials.append)
        stalls_all: list[np.ndarray] = []
        quiet_all: list[np.ndarray] = []
        first_seconds, runs, spanned, steal = 0.0, 0, 0.0, 0
        while runs == 0 or (spanned < MIN_TICKS_S and runs < MAX_REPEATS):
            if runs:  # the window settles between repeats, as before the first run
                t_wait = time.monotonic() + 0.5
                while time.monotonic() < t_wait:
                    app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
            ticks.clear()
            stolen.clear()
            tick_timer.start()
            t0 = time.perf_counter()
            window.start_run()
            while window.running:
                app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
            seconds = time.perf_counter() - t0
            tick_timer.stop()
            if runs == 0:
                first_seconds, first_partials = seconds, len(partials)
            runs += 1
            if len(ticks) < 2:
                continue
            spanned += ticks[-1] - ticks[0]
            stalls = np.maximum(np.diff(ticks) * 1e3 - PERIOD_MS, 0.0)
            stalls_all.append(stalls)
            quiet_all.append(stalls[np.diff(stolen) == 0])
            steal += int(stolen[-1] - stolen[0])
        window.model.summaries_changed.disconnect(partials.append)
        stalls = np.concatenate(stalls_all) if stalls_all else np.full(1, np.inf)
        quiet = np.concatenate(quiet_all) if quiet_all else np.zeros(0)
        rows.append((cls.name, first_seconds, first_partials, runs,
                     sum(part.size for part in stalls_all),
                     np.percentile(stalls, 50), np.percentile(stalls, 99), stalls.max(),
                     window.last_result is not None, quiet.max(initial=0.0), steal))
    window.close()
    print(f"{'experiment':<16}{'run s':>8}{'partials':>10}{'runs':>6}{'ticks':>7}"
          f"{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}  finished  {'max without steal':>17}"
          "  steal ticks")
    for name, sec, parts, runs, n_ticks, p50, p99, mx, ok, quiet_max, steal in rows:
        print(f"{name:<16}{sec:8.2f}{parts:10d}{runs:6d}{n_ticks:7d}{p50:9.2f}{p99:9.2f}"
              f"{mx:9.2f}  {ok!s:8}  {quiet_max:17.2f}  {steal:11d}")
    worst_p99 = max(rows, key=lambda r: r[6])
    worst_max = max(rows, key=lambda r: r[7])
    worst_quiet = max(rows, key=lambda r: r[9])
    p99_target, max_target = machine.latency(16, "stall"), machine.latency(50, "stall")
    print(f"worst p99 stall: {worst_p99[6]:.1f} ms ({worst_p99[0]}; target ≤ {p99_target:.1f}), "
          f"worst max stall: {worst_max[7]:.1f} ms ({worst_max[0]}; target ≤ {max_target:.1f})"
          " — targets scaled to the machine probe")
    print(f"worst max stall during which the host stole no CPU time: {worst_quiet[9]:.1f} ms "
          f"({worst_quiet[0]})")
    for name, sec, _parts, _runs, _ticks, _p50, p99, mx, _ok, _quiet, _steal in rows:
        rec.figure(f"{name}: run, default parameters and data", sec, "s")
        rec.figure(f"{name}: p99 stall", p99, "ms", p99_target, reference=16)
        rec.figure(f"{name}: max stall", mx, "ms", max_target, reference=50)
    rec.figure(f"worst max stall while the host stole no CPU time ({worst_quiet[0]})",
               worst_quiet[9], "ms")
    rec.save()
    return 0 if worst_p99[6] <= p99_target and worst_max[7] <= max_target else 1


if __name__ == "__main__":
    sys.exit(main())
